package experiment

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/dppp"
)

// TestRunDPPPDigitsTinyDeterministic runs dppp-digits in quick mode twice
// with one seed: the CSVs are byte-identical and every series is present.
func TestRunDPPPDigitsTinyDeterministic(t *testing.T) {
	var csvs [][]byte
	for i := 0; i < 2; i++ {
		out := t.TempDir()
		res, err := Run(context.Background(), "dppp-digits", Options{Out: out, DataDir: out, Runs: 1, Quick: true, Seeded: true, Seed: 7, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || len(res[0].Claims) < 6 {
			t.Fatalf("results %+v", res)
		}
		seen := map[string]bool{}
		for _, r := range res[0].Rows {
			seen[r.Series] = true
			if r.Metric == "accuracy" && (r.Mean < 0 || r.Mean > 1) {
				t.Errorf("accuracy %v out of [0, 1]: %+v", r.Mean, r)
			}
		}
		for _, s := range dpppSeries {
			if !seen[s] {
				t.Errorf("series %q missing", s)
			}
		}
		b, err := os.ReadFile(filepath.Join(out, "dppp-digits.csv"))
		if err != nil {
			t.Fatal(err)
		}
		csvs = append(csvs, b)
	}
	if !bytes.Equal(csvs[0], csvs[1]) {
		t.Error("two seeded runs differ")
	}
}

// TestPATEGaussianSigmaPLD: the PATE baseline's σ is accepted by the PLD
// accountant DPPP uses, never below the exact analytic Gaussian σ (which
// the pessimistic accountant cannot beat), and within 1% of it.
func TestPATEGaussianSigmaPLD(t *testing.T) {
	for _, c := range []struct{ eps, delta float64 }{{0.01, 1e-3}, {0.1, 1e-3}, {0.5, 1e-5}, {1, 1e-3}, {2, 1e-2}} {
		s, err := pateGaussianSigma(c.eps, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		a, err := accounting.AnalyticGaussianSigma(c.eps, c.delta, dppp.SensitivityL2)
		if err != nil {
			t.Fatal(err)
		}
		p, err := accounting.GaussianPLD(s, dppp.SensitivityL2, accounting.PLDOptions{Grid: dppp.PLDGrid})
		if err != nil {
			t.Fatal(err)
		}
		e, err := p.Epsilon(c.delta)
		if err != nil || e > c.eps {
			t.Errorf("(%v, %v): σ = %v has PLD ε %v", c.eps, c.delta, s, e)
		}
		if s < a || s > 1.05*a {
			t.Errorf("(%v, %v): σ = %v, analytic %v", c.eps, c.delta, s, a)
		}
		t.Logf("(%v, %v): PLD σ %.5g, analytic %.5g (+%.3f%%)", c.eps, c.delta, s, a, 100*(s/a-1))
	}
}
