package ledger

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"
)

// TestCheckAgreesWithCharge: before each step, State.CheckCharge (or
// CheckRaise) on the ledger's current state gives the verdict Charge (or
// Raise) then gives: accepted, over the budget (ErrOverBudget), or refused
// otherwise; on (ε, δ) and ρ-zCDP ledgers, with exact fills, one ulp over,
// one component over, a total going down and invalid amounts. The front
// ends' checks before a release (capeFM site, consortium node) are these.
func TestCheckAgreesWithCharge(t *testing.T) {
	type step struct {
		raise bool
		label string
		c     Charge
		want  string // "ok", "over" or "refused"
	}
	above := func(x float64) float64 { return math.Nextafter(x, math.Inf(1)) }
	tests := []struct {
		name   string
		budget Budget
		steps  []step
	}{
		{"epsilon-delta", Budget{Epsilon: 1, Delta: 1e-5}, []step{
			{false, "a", Charge{Epsilon: 0.5, Delta: 5e-6}, "ok"},
			{false, "b", Charge{Epsilon: above(0.5)}, "over"},       // one ulp over ε
			{false, "c", Charge{Epsilon: 0.1, Delta: 6e-6}, "over"}, // δ only
			{false, "d", Charge{Rho: 0.1}, "refused"},               // ρ on an (ε, δ) ledger
			{false, "e", Charge{Epsilon: math.NaN()}, "refused"},
			{false, "f", Charge{Delta: 1}, "refused"},
			{true, "run", Charge{Epsilon: 0.25, Delta: 2.5e-6}, "ok"},
			{true, "run", Charge{Epsilon: 0.5, Delta: 5e-6}, "ok"}, // fills both exactly
			{true, "run", Charge{Epsilon: 0.25, Delta: 5e-6}, "refused"},
			{true, "run", Charge{Epsilon: 0.5, Delta: above(5e-6)}, "over"},
			{true, "new", Charge{Epsilon: 1e-300}, "over"},
			{false, "g", Charge{}, "ok"},
		}},
		{"zcdp", Budget{Rho: 0.5}, []step{
			{false, "a", Charge{Epsilon: 0.6}, "ok"}, // ρ = 0.18
			{false, "b", Charge{Epsilon: 0.1, Delta: 1e-6}, "refused"},
			{false, "c", Charge{Rho: 0.32}, "ok"}, // fills ρ exactly
			{false, "d", Charge{Epsilon: 1e-3}, "over"},
			{true, "run", Charge{Rho: 0.1}, "over"},
			{true, "run", Charge{Epsilon: 0.1}, "refused"}, // not in the budget's units
		}},
	}
	ctx := context.Background()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, err := Create(ctx, filepath.Join(t.TempDir(), "b.json"), tc.name, tc.budget)
			if err != nil {
				t.Fatal(err)
			}
			verdict := func(err error) string {
				switch {
				case err == nil:
					return "ok"
				case errors.Is(err, ErrOverBudget):
					return "over"
				}
				return "refused"
			}
			for i, s := range tc.steps {
				st, err := l.State(ctx)
				if err != nil {
					t.Fatal(err)
				}
				var check, do error
				if s.raise {
					check = st.CheckRaise(s.label, s.c)
					_, do = l.Raise(ctx, s.label, s.c)
				} else {
					check = st.CheckCharge(s.c)
					_, do = l.Charge(ctx, s.label, s.c)
				}
				if verdict(check) != verdict(do) || verdict(do) != s.want {
					t.Errorf("step %d %+v: check %v, charge %v; want %s", i, s, check, do, s.want)
				}
			}
		})
	}
}
