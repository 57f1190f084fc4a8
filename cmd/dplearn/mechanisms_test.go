package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/exampledata"
	"github.com/dplearn/dplearn/regress"
)

// TestEveryMechanismThroughCLI runs every mechanism regress.New knows
// (regress.Mechanisms, so the list cannot drift) through `dplearn fit` on
// the embedded CPS 1988 data, and checks that the README's mechanism table
// lists exactly these mechanisms (the CLI derives its flags from the same
// registry): dpme and
// filter-priority were once refused by the CLI although regress and the
// README had them (issue 24).
func TestEveryMechanismThroughCLI(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	section, ok := strings.CutPrefix(string(readme)[strings.Index(string(readme), "\n## Mechanisms\n"):], "\n## Mechanisms\n")
	if !ok {
		t.Fatal("README has no ## Mechanisms section")
	}
	section, _, _ = strings.Cut(section, "\n\n`--model robust`") // the table ends with a blank line
	section, _, _ = strings.Cut(section, "\n## ")
	row := regexp.MustCompile("(?m)^\\| `([a-z0-9][a-z0-9-]*)`( \\(`--model [a-z]+`\\))? \\|")
	var table []string
	for _, m := range row.FindAllStringSubmatch(section, -1) {
		table = append(table, m[1])
	}
	slices.Sort(table)
	if !slices.Equal(table, regress.Mechanisms()) {
		t.Fatalf("README's mechanism table lists %v, regress.Mechanisms() %v", table, regress.Mechanisms())
	}
	ds, err := exampledata.Get("cps1988")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Every 7th row keeps the slow mechanisms quick (4,000 rows).
	lines := strings.SplitAfter(string(ds.CSV), "\n")
	var b strings.Builder
	b.WriteString(lines[0])
	for i := 1; i < len(lines); i += 7 {
		b.WriteString(lines[i])
	}
	data := writeFile(t, dir, "cps.csv", b.String())
	sch := writeFile(t, dir, "cps.json", string(ds.Schema))
	for _, mech := range regress.Mechanisms() {
		t.Run(mech, func(t *testing.T) {
			u, ok := regress.LookupMechanism(mech)
			if !ok {
				t.Fatalf("the registry does not know %s", mech)
			}
			kind := u.Kinds[0]
			out := filepath.Join(dir, mech+".json")
			args := []string{"fit", "--data", data, "--schema", sch, "--model", string(kind), "--mechanism", mech,
				"--out", out, "--format", "json", "--seed", "1"}
			if u.Privacy.TakesEpsilon() {
				args = append(args, "--epsilon", "1")
			}
			if u.Privacy.TakesDelta() {
				args = append(args, "--delta", "1e-6")
			}
			stdout, err := runCLI(t, args...)
			if err != nil {
				t.Fatalf("dplearn %s: %v", strings.Join(args, " "), err)
			}
			var res struct {
				Coef    []float64 `json:"coefficients"`
				Privacy struct {
					Private bool    `json:"private"`
					Epsilon float64 `json:"epsilon"`
				} `json:"privacy"`
			}
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatal(err)
			}
			if len(res.Coef) == 0 || (u.Privacy.TakesEpsilon() && mech != "irls-wishart") != res.Privacy.Private || (res.Privacy.Private && !(res.Privacy.Epsilon > 0)) {
				t.Fatalf("%s: %s", mech, stdout)
			}
			if _, err := loadModel(out, nil); err != nil {
				t.Fatal(err)
			}
		})
	}
}
