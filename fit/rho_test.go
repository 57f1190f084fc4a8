package fit_test

import (
	"context"
	"math/big"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/fit"
	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/regress"
)

// TestIntervalsComposeRho: the confidence intervals' extra release (irls's
// residual summary, gaussian-fm's Λ0: Laplace, ε_m-DP) must be in the ρ a
// zCDP ledger is charged, ρ = ρ_fit + ε_m²/2 (composeMoment). ρ_fit is
// measured by the same fit at ε_fit = ε(1 − share) without intervals, and
// ε_m²/2 recomputed here. Before this test a ρ ledger was charged the
// fit's ρ alone for irls with intervals (0.02547 instead of 0.02672 at
// ε = 1 on CPS1988).
func TestIntervalsComposeRho(t *testing.T) {
	data, s := load(t, "cps1988", 3000)
	const eps, share = 1.0, 0.05
	for _, c := range []struct {
		mech string
		kind regress.Kind
	}{{"irls", regress.Robust}, {"gaussian-fm", regress.Linear}} {
		req := fit.Request{Kind: c.kind, Mechanism: c.mech, Epsilon: eps, Delta: 1e-6, CIShare: share,
			Intervals: fit.IntervalsOn, Replicates: 200, Seeded: true, Seed: 1}
		with, err := fit.Run(context.Background(), req, data, s)
		if err != nil {
			t.Fatal(err)
		}
		alone := req
		alone.Epsilon, alone.CIShare = with.FitEpsilon, 0
		without, err := fit.Run(context.Background(), alone, data, s)
		if err != nil {
			t.Fatal(err)
		}
		em := eps - with.FitEpsilon
		if em < 0.9*eps*share {
			t.Fatalf("%s: the intervals' ε is %v, want about %v", c.mech, em, eps*share)
		}
		rhoFit, rho := without.Model.Privacy.Rho, with.Model.Privacy.Rho
		want := new(big.Rat).SetFloat64(rhoFit)
		sq := new(big.Rat).SetFloat64(em)
		want.Add(want, sq.Mul(sq, sq).Quo(sq, big.NewRat(2, 1)))
		w, _ := want.Float64()
		if rhoFit <= 0 || new(big.Rat).SetFloat64(rho).Cmp(want) < 0 || rho > w*(1+1e-12) {
			t.Errorf("%s: ρ with intervals %v, want ρ_fit + ε_m²/2 = %v + %v²/2 = %v rounded up", c.mech, rho, rhoFit, em, w)
		}
		// And a ρ ledger is charged that ρ, not the fit's.
		if ch := fit.LedgerCharge(with.Model.Privacy, ledger.Budget{Rho: 1}); ch.Rho != rho || ch.Epsilon != 0 || ch.Delta != 0 {
			t.Errorf("%s: a ρ ledger is charged %+v, want ρ = %v", c.mech, ch, rho)
		}
	}
}

// TestCheckBudgetRhoLedger: a ρ ledger takes, before any data is read,
// exactly the requests the registry says state a ρ (regress.Mechanism.
// StatesRho), and refuses the others naming what it takes.
func TestCheckBudgetRhoLedger(t *testing.T) {
	st := ledger.State{Name: "z", Budget: ledger.Budget{Rho: 0.5}}
	for _, c := range []struct {
		mech    string
		kind    regress.Kind
		options map[string]any
		ok      bool
	}{
		{"gaussian-fm", regress.Linear, nil, true},
		{"relaxed-fm", regress.Linear, nil, true},
		{"auto", regress.Linear, nil, true},
		{"irls", regress.Robust, nil, true},
		{"fm", regress.Linear, nil, true},
		{"noisygd", regress.Linear, nil, true},
		{"noisygd", regress.Logistic, map[string]any{"batch-rate": 1.0}, true},
		{"noisygd", regress.Logistic, map[string]any{"batch-rate": 0.1}, false},
		{"objpert", regress.Logistic, nil, false},
	} {
		req := fit.Request{Kind: c.kind, Mechanism: c.mech, Epsilon: 1, Delta: 1e-6, Options: c.options}
		err := fit.CheckBudget(req, st)
		if c.ok != (err == nil) {
			t.Errorf("%s %v: CheckBudget on a ρ ledger: %v, want ok = %v", c.mech, c.options, err, c.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "gaussian-fm, irls") {
			t.Errorf("%s: the refusal %q does not say which mechanisms a ρ ledger takes", c.mech, err)
		}
	}
}
