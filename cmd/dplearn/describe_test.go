package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/schema"
)

// TestDescribeCLI runs 'dplearn describe' on the wage table, as text and
// as JSON with a plot and a ledger, and checks the printed privacy report
// and the ledger's charge against the JSON's own accounting.
func TestDescribeCLI(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 400)
	sch := writeFile(t, dir, "s.json", wageSchema)
	out, err := runCLI(t, "describe", "--data", data, "--schema", sch, "--epsilon", "1", "--seed", "3")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"education", "mean", "q0.5", "histogram", "Privacy: ε = 1, δ = 0", "basic composition of 13", "INSECURE seeded"} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %q:\n%s", want, out)
		}
	}
	ledgerPath := filepath.Join(dir, "budget.ledger")
	if _, err := runCLI(t, "ledger", "create", ledgerPath, "--name", "test", "--epsilon", "2", "--delta", "1e-6"); err != nil {
		t.Fatal(err)
	}
	png := filepath.Join(dir, "d.png")
	out, err = runCLI(t, "describe", "--data", data, "--schema", sch, "--epsilon", "0.5", "--by", "ethnicity", "--format", "json", "--plot", png, "--ledger", ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Epsilon float64 `json:"epsilon"`
		Parts   []struct {
			Epsilon float64 `json:"epsilon"`
		} `json:"releases"`
		Groups []string `json:"groups"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatalf("json: %v\n%s", err, out)
	}
	sum := 0.0
	for _, p := range res.Parts {
		sum += p.Epsilon
	}
	if sum != res.Epsilon || sum > 0.5 || len(res.Groups) != 2 {
		t.Errorf("json: ε = %v, Σ parts = %v, groups %v", res.Epsilon, sum, res.Groups)
	}
	if b, err := os.ReadFile(png); err != nil || len(b) < 8 || string(b[1:4]) != "PNG" {
		t.Errorf("plot: %v, %d bytes", err, len(b))
	}
	l, _ := ledger.Open(ledgerPath)
	st, err := l.State(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Spent(); got.Epsilon < res.Epsilon || got.Epsilon > 0.5 || got.Delta != 0 {
		t.Errorf("ledger spent %+v, want ε = %v", got, res.Epsilon)
	}
	// Over budget: refused before reading, nothing charged.
	if _, err := runCLI(t, "describe", "--data", data, "--schema", sch, "--epsilon", "1.6", "--ledger", ledgerPath); err == nil || !strings.Contains(err.Error(), "refused before reading the data") {
		t.Errorf("over budget: %v", err)
	}
	// Seeded noise cannot be charged.
	if _, err := runCLI(t, "describe", "--data", data, "--schema", sch, "--epsilon", "0.1", "--ledger", ledgerPath, "--seed", "1"); err == nil || !strings.Contains(err.Error(), "--seed") {
		t.Errorf("seeded with ledger: %v", err)
	}
}

// TestDescribeBadInput: a column not in the schema, a NaN without a
// missing policy, an undeclared category each give a clear error.
func TestDescribeBadInput(t *testing.T) {
	dir := t.TempDir()
	sch := writeFile(t, dir, "s.json", wageSchema)
	good := "wage,education,ethnicity\n300,12,cauc\n400,16,afam\n"
	cases := []struct {
		name, data string
		args       []string
		want       string
	}{
		{"by not in schema", good, []string{"--by", "region"}, `--by "region" is not a column of the schema`},
		{"columns not in schema", good, []string{"--columns", "age"}, `column "age" is not in the schema`},
		{"schema column missing from data", "wage,education\n300,12\n", nil, "ethnicity"},
		{"NaN without policy", "wage,education,ethnicity\n300,NaN,cauc\n", nil, `"missing" policy is "error"`},
		{"unknown category", "wage,education,ethnicity\n300,12,hisp\n", nil, "hisp"},
		{"bad format", good, []string{"--format", "xml"}, "--format"},
	}
	for _, c := range cases {
		data := writeFile(t, dir, "d.csv", c.data)
		args := append([]string{"describe", "--data", data, "--schema", sch, "--epsilon", "1", "--seed", "1"}, c.args...)
		_, err := runCLI(t, args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to mention %q", c.name, err, c.want)
		}
	}
}

// TestSchemaSuggestCLI: 'schema suggest' writes a schema that parses,
// marks every bound as estimated, prints the spend per column, and
// charges the ledger what it printed.
func TestSchemaSuggestCLI(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 2000)
	ledgerPath := filepath.Join(dir, "budget.ledger")
	if _, err := runCLI(t, "ledger", "create", ledgerPath, "--name", "test", "--epsilon", "1", "--delta", "1e-5"); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "suggested.json")
	stdout, err := runCLI(t, "schema", "suggest", "--data", data, "--epsilon", "0.5", "--delta", "1e-6", "--target", "wage",
		"--transform", "wage=log", "--outer", "wage=1:100000", "--outer", "education=0:40",
		"--categorical", "ethnicity", "--ledger", ledgerPath, "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Privacy: (ε = 0.5, δ = 1e-06)-DP", "basic composition of 5 releases", "Spent per column", "ethnicity", "stability-based histogram"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
	s, err := schema.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if s.Target.Name != "wage" || s.Target.Range == nil || s.Target.Estimated == "" {
		t.Errorf("target %+v", s.Target)
	}
	for _, f := range s.Features {
		if f.Estimated == "" {
			t.Errorf("feature %q is not marked estimated", f.Name)
		}
	}
	l, _ := ledger.Open(ledgerPath)
	st, _ := l.State(t.Context())
	if sp := st.Spent(); sp.Epsilon > 0.5 || sp.Epsilon < 0.5*(1-1e-9) || sp.Delta > 1e-6 || sp.Delta < 1e-6*(1-1e-9) {
		t.Errorf("ledger spent %+v, want (0.5, 1e-6)", sp)
	}
	// The suggested schema fits.
	if _, err := runCLI(t, "fit", "--data", data, "--schema", out, "--model", "linear", "--mechanism", "gaussian-fm", "--epsilon", "1", "--delta", "1e-6", "--out", filepath.Join(dir, "m.json")); err != nil {
		t.Errorf("fit with the suggested schema: %v", err)
	}
	// Errors.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--categorical", "ethnicity"}, `categorical column "ethnicity" has no public list of levels`},
		{[]string{"--categorical", "race", "--delta", "1e-6"}, `"race", which is not a column`},
		{[]string{"--delta", "1e-6"}, `"cauc" is not a finite number; list the column with --categorical`},
		{[]string{"--categorical", "ethnicity", "--delta", "1e-6", "--outer", "education=5:1"}, "want LO:HI"},
	} {
		args := append([]string{"schema", "suggest", "--data", data, "--epsilon", "0.5", "--seed", "1"}, c.args...)
		if _, err := runCLI(t, args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: error %v, want %q", c.args, err, c.want)
		}
	}
}
