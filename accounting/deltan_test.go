package accounting

import (
	"math"
	"strings"
	"testing"
)

// TestCheckDeltaN checks the rule for δ against N at its boundary: δ = 1/N
// (and above) is refused with a message naming δ and 1/N, the next float
// below 1/N passes, δ = 0 and an unknown N pass, and the suggested δ is
// below 1/(10N) and within a factor ten of it.
func TestCheckDeltaN(t *testing.T) {
	tests := []struct {
		name  string
		delta float64
		n     int64
		ok    bool
	}{
		{"delta is 1/N", 1.0 / 50, 50, false},
		{"delta above 1/N", 0.5, 50, false},
		{"delta just below 1/N", math.Nextafter(1.0/50, 0), 50, true},
		{"one row, delta below 1", 0.999, 1, true},
		{"one row, delta 1", 1, 1, false},
		{"delta zero", 0, 50, true},
		{"unknown N", 0.5, 0, true},
		{"large N", 1e-6, 1_000_000, false},
		{"large N, suggested delta", 1e-7, 1_000_000, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckDeltaN(tc.delta, tc.n)
			if (err == nil) != tc.ok {
				t.Fatalf("CheckDeltaN(%g, %d) = %v, want ok=%v", tc.delta, tc.n, err, tc.ok)
			}
			if err != nil && !strings.Contains(err.Error(), "is not below 1/N") {
				t.Errorf("error %q does not name the rule", err)
			}
		})
	}
	if err := CheckDeltaN(0.5, 50); err == nil || !strings.Contains(err.Error(), "--delta 0.5 is not below 1/N = 0.02 (N = 50 rows)") {
		t.Errorf("message: %v", err)
	}
	for _, n := range []int64{1, 7, 50, 1000, 123456, 1 << 40} {
		d := SuggestDelta(n)
		bound := 1 / (10 * float64(n))
		if d > bound || d <= bound/10 {
			t.Errorf("SuggestDelta(%d) = %g, want in (%g, %g]", n, d, bound/10, bound)
		}
		if err := CheckDeltaN(d, n); err != nil {
			t.Errorf("SuggestDelta(%d) = %g is refused: %v", n, d, err)
		}
	}
}
