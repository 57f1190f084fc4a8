package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestFitPrivacyUnit runs fit with --privacy-unit on a panel (3 to 9 rows
// per person): the report states the unit, K and "differ in all rows of one
// person", the guarantee is the one asked for, and the fit refuses what has
// no unit-level derivation (irls-wishart; irls's intervals).
func TestFitPrivacyUnit(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(3, 3))
	var b strings.Builder
	b.WriteString("person,wage,education,ethnicity\n")
	for p := 0; p < 1500; p++ {
		n := 3 + rng.IntN(7)
		for i := 0; i < n; i++ {
			ed := rng.IntN(19)
			eth, afam := "cauc", 0.0
			if p%4 == 0 {
				eth, afam = "afam", 1
			}
			lw := 5 + 0.1*float64(ed) - 0.2*afam + 0.1*rng.NormFloat64()
			fmt.Fprintf(&b, "id%d,%.2f,%d,%s\n", p, math.Exp(lw), ed, eth)
		}
	}
	data := writeFile(t, dir, "panel.csv", b.String())
	schema := writeFile(t, dir, "s.json", wageSchema)
	args := []string{"fit", "--data", data, "--schema", schema, "--model", "linear", "--epsilon", "1", "--delta", "1e-6",
		"--privacy-unit", "person", "--max-rows-per-unit", "3", "--seed", "5"}
	out, err := runCLI(t, append(args, "--mechanism", "gaussian-fm", "--out", dir+"/m.json")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"differ in all rows of one person", `privacy unit "person"`, "K = 3", "N = 1500", "(1, 1e-06)-DP"} {
		if !strings.Contains(out, s) {
			t.Errorf("output lacks %q:\n%s", s, out)
		}
	}
	dout, err := runCLI(t, "describe", "--data", data, "--schema", schema, "--epsilon", "1", "--privacy-unit", "person", "--max-rows-per-unit", "3", "--seed", "2")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"differ in all rows of one person", "Units (person): 1500", "K = 3"} {
		if !strings.Contains(dout, s) {
			t.Errorf("describe output lacks %q:\n%s", s, dout)
		}
	}
	for _, c := range []struct{ extra []string }{
		{[]string{"--model", "robust", "--mechanism", "irls-wishart"}},              // not DP
		{[]string{"--model", "robust", "--mechanism", "irls", "--ci-share", "0.1"}}, // intervals derived for linear FM only
	} {
		if _, err := runCLI(t, append(append(args, c.extra...), "--out", dir+"/x.json")...); err == nil || !strings.Contains(err.Error(), "privacy") || !strings.Contains(err.Error(), "unit") {
			t.Errorf("%v: err %v, want a refusal naming the privacy unit", c.extra, err)
		}
	}
}
