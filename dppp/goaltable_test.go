package dppp

import (
	"fmt"
	"os"
	"testing"
)

// unanimousForecast is the forecast's exact expected label accuracy of the
// goal's votes scaled to n teachers and two classes: 98 queries on which
// every teacher is right (margin n) and 2 on which 40% are (the plurality
// wrong by margin n − 2⌊0.4n⌋), the truth alternating between the classes
// (class 0 wins ties: Upper; class 1 loses them: Lower).
func unanimousForecast(f *Forecast, n int) float64 {
	s := 0.0
	for i := range 100 {
		truth := i % 2
		if i < 98 {
			if truth == 0 {
				s += f.Upper[n]
			} else {
				s += f.Lower[n]
			}
			continue
		}
		m := n - 2*(2*n/5) // wrong plurality's margin
		if 1-truth == 0 {
			s += 1 - f.Upper[m]
		} else {
			s += 1 - f.Lower[m]
		}
	}
	return s / 100
}

// TestGoalByColluders: issue 27's first goal under the trust model of issue
// 22, by the forecast (exact from the noise pmf; TestGoalLabelAccuracy and
// TestForecastMonteCarlo check it against the implemented noise). At
// N = 20, (10, 10⁻⁵) over 100 queries, binary, right pluralities unanimous:
// the expected accuracy falls with every colluder or absentee assumed (H =
// N − A − C shares carry the noise, all N present: the sums hold N/H times
// the needed variance), and reaches 0.95 (3 points below the plurality's
// 0.98) only with H = N − A − C ≥ 17 (C + A ≤ 3). The tables of
// docs/dppp.md ("accuracy by C", "teachers needed") are this test's log. At
// the default trust model the goal needs N = 30 teachers for 100 queries
// (H = 11) and N = 250 for 1000 (of N ∈ {20, 25, 30, 40, 50, 100, 250}).
func TestGoalByColluders(t *testing.T) {
	if testing.Short() || os.Getenv("DPLEARN_LONG_TESTS") != "1" {
		// ~30 calibrations (50 s): the tables of docs/dppp.md are
		// regenerated with DPLEARN_LONG_TESTS=1; TestGoalLabelAccuracy and
		// TestTeachersNeeded check the forecast it tabulates on every run.
		t.Skip("long: set DPLEARN_LONG_TESTS=1 (~30 calibrations)")
	}
	acc := func(n, c, a int, q int, eps float64) (float64, *Params) {
		cfg := Config{Teachers: rosterOf(n), Classes: 2, Features: 1, Noise: Binomial, Colluders: c, Absent: a,
			BudgetEpsilon: eps, BudgetDelta: 1e-5, Queries: q}
		p, err := CalibrateNoise(cfg)
		if err != nil {
			t.Fatal(err)
		}
		f, err := p.Forecast(0)
		if err != nil {
			t.Fatal(err)
		}
		return unanimousForecast(f, n), p
	}
	// Accuracy by C at N = 20, A = 0 and A = N − t.
	for _, a := range []int{NoneAssumed, 0} {
		prev := 2.0
		for _, c := range []int{NoneAssumed, 1, 2, 3, 4, 5, 0} {
			got, p := acc(20, c, a, 100, 10)
			cc, aa := p.Trust()
			t.Logf("| 20 | %d | %d | %d | %d | %.3f |", cc, aa, p.Honest, p.Coins, got)
			if got > prev+1e-12 {
				t.Errorf("C = %d, A = %d: accuracy %.4f above %.4f with fewer colluders", cc, aa, got, prev)
			}
			prev = got
			if want := p.Honest >= 17; (got >= 0.95) != want {
				t.Errorf("C = %d, A = %d, H = %d: accuracy %.4f; goal met = %v, want %v (H ≥ 17)", cc, aa, p.Honest, got, got >= 0.95, want)
			}
		}
	}
	// Teachers needed at the default trust model, and the table by N and
	// budget.
	for _, q := range []int{100, 1000} {
		for _, n := range []int{20, 25, 30, 40, 50, 100, 250} {
			d, p := acc(n, 0, 0, q, 10)
			z, _ := acc(n, NoneAssumed, NoneAssumed, q, 10)
			t.Logf("| %d | %d | %d | %s | %.3f | %.3f |", q, n, p.Honest, fmt.Sprint(p.Coins), z, d)
			// The fewest teachers meeting the goal at the defaults:
			// 30 for 100 queries, 250 for 1000 (of those tried).
			if meets, want := d >= 0.95, (q == 100 && n >= 30) || (q == 1000 && n >= 250); meets != want {
				t.Errorf("Q = %d, N = %d at the defaults: %.4f; goal met = %v, want %v", q, n, d, meets, want)
			}
		}
	}
}

// TestTeachersNeeded: the fewest teachers for which a unanimous vote is
// labelled as voted with worst-case probability ≥ 0.99 at (10, 10⁻⁵) over
// 100 binary queries, binomial: meets at the answer, not one below (an
// independent forecast at both), and C = A = 0 needs fewer than the
// defaults.
func TestTeachersNeeded(t *testing.T) {
	if testing.Short() {
		t.Skip("short: ~20 calibrations")
	}
	lower := func(cfg Config, n int) float64 {
		cfg.Teachers = rosterOf(n)
		p, err := CalibrateNoise(cfg)
		if err != nil {
			t.Fatal(err)
		}
		f, err := p.Forecast(0)
		if err != nil {
			t.Fatal(err)
		}
		return f.Lower[n]
	}
	// By default C = A = 0 only (the answer met, not one below); the
	// defaults and the comparison of the two with DPLEARN_LONG_TESTS=1
	// (issue 24: test time; the defaults need the most teachers, so the
	// most calibrations).
	long := os.Getenv("DPLEARN_LONG_TESTS") == "1"
	trusts := []int{NoneAssumed}
	if long {
		trusts = []int{NoneAssumed, 0}
	}
	need := map[int]int{}
	for _, trust := range trusts {
		cfg := Config{Teachers: rosterOf(10), Classes: 2, Features: 1, Noise: Binomial, Colluders: trust, Absent: trust,
			BudgetEpsilon: 10, BudgetDelta: 1e-5, Queries: 100}
		n, err := TeachersNeeded(cfg, 0.99, 200)
		if err != nil {
			t.Fatal(err)
		}
		need[trust] = n
		at, below := lower(cfg, n), lower(cfg, n-1)
		t.Logf("trust %d: N = %d (unanimous agreement %.4f; %.4f at N − 1)", trust, n, at, below)
		if at < 0.99 || below >= 0.99 {
			t.Errorf("trust %d: N = %d: agreement %.4f, at N − 1 %.4f", trust, n, at, below)
		}
	}
	if long && need[NoneAssumed] >= need[0] {
		t.Errorf("C = A = 0 needs %d teachers, the defaults %d", need[NoneAssumed], need[0])
	}
}
