package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestFitPrivacyUnitNoIntervalRelease checks that a fit under a privacy
// unit, without --ci-share on the command line, spends nothing on
// confidence intervals: no Λ0 release, no composition with it, the whole ε
// on the fit, and no interval section (intervals are not derived per unit).
// On the starting commit the default --ci-share still reached the request
// (it was zeroed after fitRequest copied it): Λ0 was released at 5% of ε.
func TestFitPrivacyUnitNoIntervalRelease(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(8, 8))
	var b strings.Builder
	b.WriteString("person,x,y\n")
	for p := 0; p < 800; p++ {
		for i := 0; i < 1+rng.IntN(5); i++ {
			x := rng.Float64()
			fmt.Fprintf(&b, "p%d,%.4f,%.4f\n", p, x, 0.5*x+0.1*rng.NormFloat64())
		}
	}
	data := writeFile(t, dir, "panel.csv", b.String())
	schema := writeFile(t, dir, "s.json", `{"target": {"name": "y", "range": [-1, 2]}, "features": [{"name": "x", "range": [0, 1]}]}`)
	for _, mech := range []string{"gaussian-fm", "fm"} {
		args := []string{"fit", "--data", data, "--schema", schema, "--model", "linear", "--mechanism", mech, "--epsilon", "1",
			"--privacy-unit", "person", "--max-rows-per-unit", "2", "--seed", "3", "--out", dir + "/m.json"}
		if mech == "gaussian-fm" {
			args = append(args, "--delta", "1e-6")
		}
		out, err := runCLI(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "differ in all rows of one person") {
			t.Fatalf("%s: not a unit-level fit:\n%s", mech, out)
		}
		for _, bad := range []string{"Λ0 = (1/N)Σy²", "confidence intervals (ε =", "Intervals:"} {
			if strings.Contains(out, bad) {
				t.Errorf("%s: output has %q: an interval release under a privacy unit:\n%s", mech, bad, out)
			}
		}
	}
}
