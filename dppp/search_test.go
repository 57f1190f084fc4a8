package dppp

import (
	"math"
	"testing"
)

// TestLastFit: the largest m with ok(m), for thresholds across the range
// and scores that guess well, badly (a constant: bisection-like), or
// wrongly (decreasing), checked against a linear scan.
func TestLastFit(t *testing.T) {
	scores := map[string]func(th int) func(int) float64{
		"sqrt": func(th int) func(int) float64 {
			return func(m int) float64 { return math.Sqrt(float64(m))/math.Sqrt(float64(th)+0.5) - 1 }
		},
		"constant": func(int) func(int) float64 { return func(int) float64 { return 0 } },
		"wrong":    func(th int) func(int) float64 { return func(m int) float64 { return float64(th - m) } },
	}
	for name, sc := range scores {
		for _, hi := range []int{0, 1, 2, 7, 100, 1893} {
			for th := 0; th <= hi+1; th += max(1, hi/37) {
				calls := 0
				ok := func(m int) bool { calls++; return m <= th }
				got := LastFit(0, hi, ok, sc(th))
				if want := min(th, hi); got != want {
					t.Fatalf("%s: hi %d threshold %d: got %d, want %d", name, hi, th, got, want)
				}
				if name == "sqrt" && calls > 12 {
					t.Errorf("%s: hi %d threshold %d: %d calls of ok", name, hi, th, calls)
				}
			}
		}
	}
}
