package dppp

import (
	"fmt"
	"math"
	"os"
	"testing"

	"github.com/dplearn/dplearn/noise"
)

// goalVotes are issue 27's first goal's synthetic teacher votes: 100 binary
// queries, 20 teachers, the plurality right on 98 of them and wrong on 2 (8
// correct votes). Unanimous: all 20 teachers right on the 98; otherwise
// 20, 19, 18, 17 or 16 correct votes in turn (margins 20 down to 12).
func goalVotes(unanimous bool) (correct []int) {
	for i := range 100 {
		if i < 98 {
			c := 20 - i%5
			if unanimous {
				c = 20
			}
			correct = append(correct, c)
		} else {
			correct = append(correct, 8)
		}
	}
	return correct
}

// goalForecast is the exact expected label accuracy of goalVotes from the
// forecast (K = 2): a plurality of margin M in class 0 wins ties
// (agreement Upper(M)), in class 1 loses them (Lower(M), exact for K = 2).
func goalForecast(f *Forecast, unanimous bool) float64 {
	s := 0.0
	for i, c := range goalVotes(unanimous) {
		truth, m := i%2, 2*c-20
		plural := truth
		if m < 0 {
			plural, m = 1-truth, -m
		}
		agree := f.Upper[m]
		if plural == 1 {
			agree = f.Lower[m]
		}
		if plural == truth {
			s += agree
		} else {
			s += 1 - agree
		}
	}
	return s / 100
}

// goalAccuracy labels the goal's votes `reps` times with the implemented
// noise of p (every teacher's Share, Tally's argmax rule, the truth
// alternating between class 0 and class 1) and returns the fraction of
// labels equal to the truth.
func goalAccuracy(t *testing.T, p *Params, unanimous bool, reps int, seed uint64) float64 {
	t.Helper()
	src := noise.NewInsecureSeeded(seed)
	ok, total := 0, 0
	for range reps {
		for i, c := range goalVotes(unanimous) {
			truth := i % 2
			row := make([]int64, 2)
			for j := range p.N() {
				vote := truth
				if j >= c {
					vote = 1 - truth
				}
				s, err := p.Share(src, []int{vote})
				if err != nil {
					t.Fatal(err)
				}
				row[0] += s[0]
				row[1] += s[1]
			}
			label := 0
			if row[1] > row[0] {
				label = 1
			}
			if label == truth {
				ok++
			}
			total++
		}
	}
	return float64(ok) / float64(total)
}

// TestGoalLabelAccuracy is issue 27's first goal on synthetic votes: 100
// queries, 20 teachers whose plurality is right 98% of the time, total
// budget (10, 10⁻⁵) by Queries = 100, binomial and discrete Gaussian. The
// labels come from the implemented noise (Share, Tally's argmax), 40
// repetitions (4000 labels, standard error ≤ 0.5 points), and must match
// the forecast's exact expected accuracy within 4.9 standard errors (false
// alarm below 10⁻⁶ per check). The goal (accuracy within 3 points of the
// plurality's 0.98) is required where it holds — C = A = 0 and unanimous
// teachers on the 98 — at 0.95 − 4 standard errors; the other settings are
// logged (the goal is not met there: see docs/dppp.md).
func TestGoalLabelAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	names := make([]string, 20)
	for i := range names {
		names[i] = fmt.Sprintf("t%02d", i+1)
	}
	const reps = 40
	// By default the setting where the goal is required (C = A = 0), both
	// noise kinds; the logged default-C, A settings with
	// DPLEARN_LONG_TESTS=1 (issue 24: test time). Same checks, same
	// false-alarm rate.
	type setting struct {
		name string
		c, a int
	}
	settings := []setting{{"C = A = 0", NoneAssumed, NoneAssumed}}
	if os.Getenv("DPLEARN_LONG_TESTS") == "1" {
		settings = append(settings, setting{"default C, A", 0, 0})
	}
	for _, kind := range []NoiseKind{Binomial, DGauss} {
		for _, trust := range settings {
			cfg := Config{Teachers: names, Classes: 2, Features: 1, Noise: kind, Colluders: trust.c, Absent: trust.a,
				BudgetEpsilon: 10, BudgetDelta: 1e-5, Queries: 100}
			p, err := CalibrateNoise(cfg)
			if err != nil {
				t.Fatal(err)
			}
			p.QPC = 1
			f, err := p.Forecast(0)
			if err != nil {
				t.Fatal(err)
			}
			for _, unanimous := range []bool{true, false} {
				acc := goalAccuracy(t, p, unanimous, reps, 5)
				want := goalForecast(f, unanimous)
				se := math.Sqrt(want * (1 - want) / (100 * reps))
				t.Logf("%v, %s, unanimous %v: H = %d, %d coins / σ %.3f per teacher, noise sd %.2f per count; label accuracy %.4f, forecast %.4f (plurality 0.98)",
					kind, trust.name, unanimous, p.Honest, p.Coins, p.Sigma, f.NoiseSD, acc, want)
				if math.Abs(acc-want) > 4.9*se {
					t.Errorf("%v, %s: label accuracy %.4f, forecast %.4f (%.1f standard errors)", kind, trust.name, acc, want, (acc-want)/se)
				}
				if trust.c == NoneAssumed && unanimous && acc < 0.95-4*se {
					t.Errorf("%v, %s: label accuracy %.4f, more than 3 points below the plurality's 0.98", kind, trust.name, acc)
				}
			}
		}
	}
}
