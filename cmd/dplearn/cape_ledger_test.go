package main

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/dplearn/dplearn/ledger"
)

// TestCapeLedgerCanCharge: a capeFM site's check when an offer arrives
// (siteLedger.CanCharge) accepts exactly what its ledger's Charge will
// accept at the release: an exact fill passes, one ulp of ε or any δ over
// is refused with ErrOverBudget, and on a ρ-zCDP ledger a pure ε is
// converted (ρ = ε²/2) while a δ > 0 is refused. Nothing is charged.
func TestCapeLedgerCanCharge(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	ed, err := ledger.Create(ctx, filepath.Join(dir, "ed.json"), "site ed", ledger.Budget{Epsilon: 1, Delta: 1e-5})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ed.Charge(ctx, "earlier", ledger.Charge{Epsilon: 0.5, Delta: 5e-6}); err != nil {
		t.Fatal(err)
	}
	rho, err := ledger.Create(ctx, filepath.Join(dir, "rho.json"), "site rho", ledger.Budget{Rho: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		l          *ledger.Ledger
		eps, delta float64
		want       string // "ok", "over" or "refused"
	}{
		{"fills the budget", ed, 0.5, 5e-6, "ok"},
		{"one ulp over epsilon", ed, math.Nextafter(0.5, 1), 0, "over"},
		{"delta over", ed, 0.1, math.Nextafter(5e-6, 1), "over"},
		{"rho: pure epsilon fills", rho, 1, 0, "ok"},
		{"rho: epsilon over", rho, math.Nextafter(1, 2), 0, "over"},
		{"rho: delta refused", rho, 0.1, 1e-6, "refused"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := siteLedger{ctx: ctx, l: tc.l}.CanCharge(tc.eps, tc.delta)
			got := "refused"
			switch {
			case err == nil:
				got = "ok"
			case errors.Is(err, ledger.ErrOverBudget):
				got = "over"
			}
			if got != tc.want {
				t.Fatalf("CanCharge(%g, %g) = %v, want %s", tc.eps, tc.delta, err, tc.want)
			}
			st, err := tc.l.State(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if n := len(st.Charges); (tc.l == ed && n != 1) || (tc.l == rho && n != 0) {
				t.Fatalf("CanCharge charged: %v", st.Charges)
			}
		})
	}
}
