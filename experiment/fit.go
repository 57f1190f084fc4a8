package experiment

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/dplearn/dplearn/fit"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/suffstat"
)

// fitSpec is one fit to run on a training set.
type fitSpec struct {
	mech  string
	kind  regress.Kind
	eps   float64
	delta float64
	// tau is the noise multiplier σ/Δ the paper's noisygd uses per step;
	// steps is its T. Used only by iterative mechanisms.
	tau   float64
	steps int
}

// available reports whether the regress package in this build knows a
// mechanism (objpert, noisygd and irls arrive separately).
func available(mech string) bool {
	_, err := regress.New(mech)
	return err == nil
}

// moments computes the sufficient statistics of a table on one goroutine
// (the worker pool already uses every core).
func moments(t *table) (*suffstat.Moments, error) {
	m := suffstat.New(t.K)
	m.SetWorkers(1)
	if err := m.AddRows(t.Rows); err != nil {
		return nil, fmt.Errorf("experiment: moments: %w", err)
	}
	return m, nil
}

// fitTable fits one mechanism through fit.Estimate (the library fit's
// refusals and configuration) and returns the coefficients and the wall
// time of the fit (statistics included when stats is nil).
func fitTable(ctx context.Context, f fitSpec, train *table, stats *suffstat.Moments, src noise.Source) ([]float64, time.Duration, error) {
	u, ok := regress.LookupMechanism(f.mech)
	if !ok {
		return nil, 0, fmt.Errorf("experiment: no mechanism %q", f.mech)
	}
	start := time.Now()
	if stats == nil {
		var err error
		if stats, err = moments(train); err != nil {
			return nil, 0, err
		}
	}
	// The privacy parameters the mechanism takes (the registry says
	// which): none for a reference fit, ε alone for a pure one.
	req := fit.Request{Kind: f.kind, Mechanism: f.mech, Options: map[string]any{"lambda": -1.0}, Source: src}
	if u.Reads("huber") && f.kind == regress.Linear {
		// The seeds' baselines (objective perturbation after Kifer et al.,
		// noisy gradient descent after Song et al.) fit the squared loss;
		// dplearn's Huber default is compared in huber-sweep and
		// utility-refs.
		req.Options["huber"] = -1.0
	}
	if u.Privacy.TakesEpsilon() {
		req.Epsilon = f.eps
	}
	if u.Privacy.TakesDelta() {
		req.Delta = f.delta
	}
	configureIterative(&req, f)
	res, err := fit.Estimate(ctx, req, regress.Data{Stats: stats, Rows: train.Rows})
	if err != nil {
		return nil, 0, fmt.Errorf("%s (ε=%g, δ=%g, N=%d): %w", f.mech, f.eps, f.delta, train.N(), err)
	}
	return res.Coef, time.Since(start), nil
}

// evaluate returns the papers' metrics on a test table: mse on the encoded
// [−1, 1] scale (linear), or accuracy (logistic).
func evaluate(kind regress.Kind, coef []float64, test *table) float64 {
	n := test.N()
	s := 0.0
	for i := 0; i < n; i++ {
		r := test.row(i)
		p := regress.Score(kind, coef, r)
		y := r[test.K-1]
		if kind == regress.Logistic {
			if (p >= 0.5) == (y == 1) {
				s++
			}
			continue
		}
		s += (p - y) * (p - y)
	}
	return s / float64(n)
}

// classicMultiplier is the Gaussian FM seed's noise multiplier
// τ/Δ = √(2 ln(1.25/δ))/ε (its x-axis "τ").
func classicMultiplier(eps, delta float64) float64 {
	return math.Sqrt(2*math.Log(1.25/delta)) / eps
}

// epsForMultiplier inverts classicMultiplier.
func epsForMultiplier(tau, delta float64) float64 {
	return math.Sqrt(2*math.Log(1.25/delta)) / tau
}
