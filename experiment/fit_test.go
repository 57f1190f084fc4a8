package experiment

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
)

// TestFitTableEqualsDirectFit checks that fitTable, now through
// fit.Estimate, fits exactly what the experiments fitted before it: the
// estimator called directly with the harness's configuration (λ = −1,
// ε and δ only where the mechanism takes them, noisygd's T and σ, the
// squared loss for linear objpert and noisygd as the seeds ran them), same
// seed, same coefficients to the bit.
func TestFitTableEqualsDirectFit(t *testing.T) {
	for _, kind := range []regress.Kind{regress.Linear, regress.Logistic} {
		tab := synthetic(kind, 4, 2000, rand.New(rand.NewPCG(1, 2)))
		for _, f := range []fitSpec{
			{mech: "nonprivate"}, {mech: "truncated"}, {mech: "fm", eps: 1, delta: 1e-5},
			{mech: "gaussian-fm", eps: 1, delta: 1e-5}, {mech: "relaxed-fm", eps: 1, delta: 1e-5},
			{mech: "objpert", eps: 1, delta: 1e-5},
			{mech: "noisygd", eps: 1, delta: 1e-5, steps: 20}, {mech: "noisygd", eps: 1, delta: 1e-5, steps: 20, tau: 3},
		} {
			f.kind = kind
			got, _, err := fitTable(context.Background(), f, tab, nil, noise.NewInsecureSeeded(5))
			if err != nil {
				t.Fatalf("%s %s: %v", kind, f.mech, err)
			}
			// The harness's fit before package fit (ef46a52's fitTable).
			est, err := regress.New(f.mech)
			if err != nil {
				t.Fatal(err)
			}
			st, err := moments(tab)
			if err != nil {
				t.Fatal(err)
			}
			cfg := regress.Config{Kind: kind, Epsilon: f.eps, Delta: f.delta, Lambda: -1, Source: noise.NewInsecureSeeded(5)}
			if !est.Private() {
				cfg.Epsilon, cfg.Delta, cfg.Source = 0, 0, nil
			}
			if f.mech == "fm" {
				cfg.Delta = 0
			}
			if (f.mech == "objpert" || f.mech == "noisygd") && kind == regress.Linear {
				cfg.Huber = -1 // the seeds' squared-loss baselines
			}
			if f.mech == "noisygd" {
				cfg.NoisyGD = regress.NoisyGDOptions{Iterations: f.steps, Sigma: f.tau}
				if f.tau > 0 {
					cfg.Epsilon = 0
				}
			}
			res, err := est.Fit(context.Background(), regress.Data{Stats: st, Rows: tab.Rows}, cfg)
			if err != nil {
				t.Fatalf("%s %s direct: %v", kind, f.mech, err)
			}
			if !slices.Equal(got, res.Coef) {
				t.Errorf("%s %s (τ = %g): fitTable %v, direct fit %v", kind, f.mech, f.tau, got, res.Coef)
			}
		}
	}
}
