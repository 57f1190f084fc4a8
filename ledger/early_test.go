package ledger_test

import (
	"fmt"
	"math"
	"testing"

	"github.com/dplearn/dplearn/ledger"
)

// TestClearlyExceeds checks the early check at the budget's edge: a charge
// that fills an (ε, δ) or ρ budget exactly passes, one a relative 1e-9
// beyond (far outside the 1e-12 slack) is refused, on each component.
func TestClearlyExceeds(t *testing.T) {
	st := ledger.State{Name: "s", Budget: ledger.Budget{Epsilon: 1, Delta: 1e-5},
		Charges: []ledger.Charge{{Epsilon: 0.3, Delta: 4e-6}, {Epsilon: 0.1}}}
	zc := ledger.State{Name: "z", Budget: ledger.Budget{Rho: 0.5}, Charges: []ledger.Charge{{Rho: 0.2}}}
	for _, c := range []struct {
		st   ledger.State
		c    ledger.Charge
		want bool
	}{
		{st, ledger.Charge{Epsilon: 0.6, Delta: 6e-6}, false},
		{st, ledger.Charge{Epsilon: 0.6 * (1 + 1e-9), Delta: 6e-6}, true},
		{st, ledger.Charge{Epsilon: 0.6, Delta: 6e-6 * (1 + 1e-9)}, true},
		{st, ledger.Charge{Epsilon: 0.1}, false},
		{st, ledger.Charge{Epsilon: 2}, true},
		{zc, ledger.Charge{Rho: 0.3}, false},
		{zc, ledger.Charge{Rho: math.Nextafter(0.3, 1) * (1 + 1e-9)}, true},
	} {
		if got := c.st.ClearlyExceeds(c.c); got != c.want {
			t.Errorf("%s with %+v: ClearlyExceeds = %v, want %v", c.st.Budget, c.c, got, c.want)
		}
	}
}

func ExampleState_ClearlyExceeds() {
	st := ledger.State{Name: "hospital-A", Budget: ledger.Budget{Epsilon: 1, Delta: 1e-5},
		Charges: []ledger.Charge{{Label: "describe", Epsilon: 0.5}}}
	fmt.Println(st.ClearlyExceeds(ledger.Charge{Epsilon: 0.5, Delta: 1e-5}))
	fmt.Println(st.ClearlyExceeds(ledger.Charge{Epsilon: 0.6}))
	// Output:
	// false
	// true
}
