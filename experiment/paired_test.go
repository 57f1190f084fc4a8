package experiment

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
)

// TestIRLSBeatsGaussianFMOnDiabetesPaired is the paired version of issue
// 16's goal "DP-IRLS beats Gaussian FM in test MAE at ε ≥ 0.5" on the
// smallest example table, diabetes (N ≈ 350 training rows, d = 11), where
// the 20-split `utility` table cannot separate the two (its comparison
// treats the splits as independent, and split-to-split variation dwarfs
// the difference). Here both mechanisms (defaults, δ = 1e-5) are fitted on
// the same 300 random 80/20 splits and the per-split difference of their
// test MAE ÷ exact LAD's is tested one-sided: it fails when the mean
// difference is not below −3 standard errors (a false alarm rate of 0.13%
// per ε if the two were equal). Measured (seeded): ε = 0.5: irls 1.377,
// gaussian-fm 1.450, difference −0.074 ± 0.011; ε = 1: 1.261 against
// 1.382, −0.120 ± 0.009. About 2 minutes on 2 cores: DPLEARN_LONG_TESTS=1.
func TestIRLSBeatsGaussianFMOnDiabetesPaired(t *testing.T) {
	if os.Getenv("DPLEARN_LONG_TESTS") != "1" {
		t.Skip("300 splits × 2 budgets: set DPLEARN_LONG_TESTS=1")
	}
	tb, err := loadReal("", "diabetes", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const splits = 300
	for _, eps := range []float64{0.5, 1} {
		rng := rand.New(rand.NewPCG(77, uint64(eps*10)))
		src := noise.NewInsecureSeeded(99)
		var sum, sum2, irls, gfm float64
		for r := 0; r < splits; r++ {
			train, test := tb.split(rng, 0.2, 0)
			lad, err := fitWith(ctx, "nonprivate", train, regress.Config{Kind: regress.Robust})
			if err != nil {
				t.Fatal(err)
			}
			ref := meanAbsErr(lad, test)
			g, err := fitWith(ctx, "gaussian-fm", train, regress.Config{Kind: regress.Linear, Epsilon: eps, Delta: 1e-5, Lambda: -1, Source: src})
			if err != nil {
				t.Fatal(err)
			}
			w, err := fitWith(ctx, "irls", train, regress.Config{Kind: regress.Robust, Epsilon: eps, Delta: 1e-5, Lambda: -1, Source: src})
			if err != nil {
				t.Fatal(err)
			}
			a, b := meanAbsErr(w, test)/ref, meanAbsErr(g, test)/ref
			irls, gfm = irls+a, gfm+b
			sum, sum2 = sum+(a-b), sum2+(a-b)*(a-b)
		}
		m := sum / splits
		se := math.Sqrt((sum2/splits - m*m) / (splits - 1))
		t.Logf("diabetes ε = %v: MAE ÷ LAD irls %.4f, gaussian-fm %.4f; paired difference %.4f ± %.4f", eps, irls/splits, gfm/splits, m, se)
		if !(m < -3*se) {
			t.Errorf("diabetes ε = %v: DP-IRLS does not beat Gaussian FM: paired difference %.4f ± %.4f", eps, m, se)
		}
	}
}
