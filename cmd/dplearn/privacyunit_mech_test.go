package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// writePanel writes the synthetic panel of issue 30: persons × per rows, a
// person effect shared by a person's rows (correlated rows within a
// person), log wage = 5 + 0.1·education − 0.2·afam + effect + noise,
// clamped into the schema's range [4, 9].
func writePanel(t *testing.T, dir string, persons, per int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(30, 30))
	var b strings.Builder
	b.WriteString("person,wage,education,ethnicity\n")
	for p := 0; p < persons; p++ {
		eth, afam := "cauc", 0.0
		if p%4 == 0 {
			eth, afam = "afam", 1
		}
		eff := 0.2 * rng.NormFloat64()
		for i := 0; i < per; i++ {
			ed := rng.IntN(19)
			lw := 5 + 0.1*float64(ed) - 0.2*afam + eff + 0.1*rng.NormFloat64()
			fmt.Fprintf(&b, "id%d,%.4f,%d,%s\n", p, math.Exp(math.Max(4.1, math.Min(8.9, lw))), ed, eth)
		}
	}
	return writeFile(t, dir, "panel.csv", b.String())
}

// TestFitPrivacyUnitRowMechanisms runs fit with --privacy-unit person
// --max-rows-per-unit 7 on the panel (3,000 persons × 7 rows) with the
// mechanisms newly derived for a unit (irls for robust regression, noisygd
// and objpert for linear): each prints the guarantee asked for, per person
// (the unit, K and N = 3000 units), noisygd the sensitivity of its
// gradients at N = units (D/3000 with D = 4η, the Huber loss's), objpert
// its χ bound for K = 7 rows. Linear gaussian-fm with --ci-share gets
// intervals with the unit inflation; irls's intervals, irls-wishart, dpme,
// filter-priority and Poisson-batched noisygd are refused with an error
// naming the privacy unit.
func TestFitPrivacyUnitRowMechanisms(t *testing.T) {
	dir := t.TempDir()
	data := writePanel(t, dir, 3000, 7)
	schema := writeFile(t, dir, "s.json", wageSchema)
	base := []string{"fit", "--data", data, "--schema", schema, "--epsilon", "1",
		"--privacy-unit", "person", "--max-rows-per-unit", "7", "--seed", "5", "--format", "json"}
	for _, c := range []struct {
		model, mech string
	}{{"robust", "irls"}, {"linear", "noisygd"}, {"linear", "objpert"}} {
		out, err := runCLI(t, append(base, "--delta", "1e-6", "--model", c.model, "--mechanism", c.mech, "--out", dir+"/"+c.mech+".json")...)
		if err != nil {
			t.Fatalf("%s: %v", c.mech, err)
		}
		for _, s := range []string{"differ in all rows of one person", `privacy unit \"person\"`, "K = 7", "N = 3000", `"epsilon": 1`, `"delta": 0.000001`} {
			if !strings.Contains(out, s) {
				t.Errorf("%s: output lacks %q:\n%s", c.mech, s, out)
			}
		}
		if c.mech == "objpert" && !strings.Contains(out, "for K = 7 rows of one unit") {
			t.Errorf("objpert: the accountant does not state the unit bound:\n%s", out)
		}
		if c.mech == "noisygd" {
			// The default Huber loss with η = 0.5: D = 4η per unit.
			want := 4 * 0.5 / 3000
			var sens float64
			i := strings.Index(out, `"sensitivity": `)
			if i < 0 {
				t.Fatalf("no sensitivity in the output:\n%s", out)
			}
			fmt.Sscan(strings.TrimRight(strings.Fields(out[i+len(`"sensitivity": `):])[0], ","), &sens)
			if !(sens >= want && sens <= want*(1+1e-6)) {
				t.Errorf("noisygd: printed sensitivity %v, want D/units = %v", sens, want)
			}
		}
	}
	// Linear gaussian-fm with an explicit --ci-share: intervals whose
	// sampling part is inflated by (K + 1)²/4 = 16, the Λ0 release composed.
	out, err := runCLI(t, append(base, "--delta", "1e-6", "--model", "linear", "--mechanism", "gaussian-fm", "--ci-share", "0.1", "--out", dir+"/ci.json")...)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"(K + 1)²/4 = 16", "differ in all rows of one person", `"delta": 0.000001`, "target moment"} {
		if !strings.Contains(out, s) {
			t.Errorf("gaussian-fm --ci-share 0.1: output lacks %q:\n%s", s, out)
		}
	}
	for _, extra := range [][]string{
		{"--delta", "1e-6", "--model", "robust", "--mechanism", "irls", "--ci-share", "0.1"},
		{"--delta", "1e-6", "--model", "robust", "--mechanism", "irls-wishart"},
		{"--model", "linear", "--mechanism", "dpme"},
		{"--model", "linear", "--mechanism", "filter-priority"},
		{"--delta", "1e-6", "--model", "linear", "--mechanism", "noisygd", "--batch-rate", "0.1"},
	} {
		_, err := runCLI(t, append(append(base, extra...), "--out", dir+"/x.json")...)
		if err == nil || !strings.Contains(err.Error(), "privacy unit") && !strings.Contains(err.Error(), "privacy-unit") {
			t.Errorf("%v: err %v, want a refusal naming the privacy unit", extra, err)
		}
	}
}
