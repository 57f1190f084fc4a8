package dppp

import (
	"fmt"
	"math"
	"testing"

	"github.com/dplearn/dplearn/noise"
)

// TestForecastMonteCarlo checks the forecast against a Monte-Carlo of the
// implemented noise (Params.Share, each contributor's share, argmax with
// Tally's tie rule), the plurality leading every other class by M. With
// the plurality in the last class (every tie lost) the agreement is
// exactly the forecast's Lower; with it in class 0 and K = 2 (ties won),
// exactly Upper; with it in class 0 and K = 4 it lies in [Lower, Upper].
// Each check is a binomial z-test at 4.9 standard deviations (false alarm
// below 10⁻⁶ per check, 18 checks).
func TestForecastMonteCarlo(t *testing.T) {
	names := []string{"a", "b", "c", "d", "e"}
	const trials = 3000
	src := noise.NewInsecureSeeded(11)
	for _, tc := range []struct {
		kind    NoiseKind
		classes int
		margin  int
		last    bool
	}{
		{Binomial, 2, 2, false}, {Binomial, 4, 3, false}, {Binomial, 4, 5, true},
		{DGauss, 2, 2, false}, {DGauss, 4, 3, true}, {DGauss, 4, 5, false}, {DGauss, 2, 3, true},
	} {
		top := 0
		if tc.last {
			top = tc.classes - 1
		}
		p := &Params{Config: Config{Teachers: names, Classes: tc.classes, Noise: tc.kind}, QPC: 1, Coins: 8, Sigma: 1.5, NoiseBound: 30}
		f, err := p.Forecast(0)
		if err != nil {
			t.Fatal(err)
		}
		ok := 0
		for range trials {
			row := make([]int64, tc.classes)
			row[top] = int64(tc.margin)
			for range names {
				s, err := p.Share(src, []int{0})
				if err != nil {
					t.Fatal(err)
				}
				s[0]--
				for k := range row {
					row[k] += s[k]
				}
			}
			best := 0
			for k, v := range row {
				if v > row[best] {
					best = k
				}
			}
			if best == top {
				ok++
			}
		}
		rate := float64(ok) / trials
		lo, hi := f.Lower[tc.margin], f.Upper[tc.margin]
		z := func(q float64) float64 { return (rate - q) / math.Sqrt(math.Max(q*(1-q), 1e-9)/trials) }
		name := fmt.Sprintf("%v K=%d M=%d plurality in class %d", tc.kind, tc.classes, tc.margin, top)
		t.Logf("%s: Monte-Carlo %.4f, forecast [%.4f, %.4f], sd %.3f", name, rate, lo, hi, f.NoiseSD)
		if z(lo) < -4.9 {
			t.Errorf("%s: agreement %.4f below the forecast's lower bound %.4f (z = %.1f)", name, rate, lo, z(lo))
		}
		if z(hi) > 4.9 {
			t.Errorf("%s: agreement %.4f above the forecast's upper bound %.4f (z = %.1f)", name, rate, hi, z(hi))
		}
		if tc.classes == 2 && !tc.last && z(hi) < -4.9 {
			t.Errorf("%s: agreement %.4f below the exact two-class value %.4f (z = %.1f)", name, rate, hi, z(hi))
		}
		if tc.last && z(lo) > 4.9 {
			t.Errorf("%s: agreement %.4f above the exact worst case %.4f (z = %.1f)", name, rate, lo, z(lo))
		}
	}
}

// TestForecastMargins: the printed margins are the smallest that reach 90%
// and 99% by the lower bound, and a deployment whose noise swamps the
// votes is warned about.
func TestForecastMargins(t *testing.T) {
	names := make([]string, 20)
	for i := range names {
		names[i] = fmt.Sprintf("t%02d", i)
	}
	p := &Params{Config: Config{Teachers: names, Classes: 10, Noise: Binomial}, QPC: 1, Coins: 2}
	f, err := p.Forecast(0)
	if err != nil {
		t.Fatal(err)
	}
	if m := f.Margin90; m == 0 || f.Lower[m] < 0.9 || (m > 1 && f.Lower[m-1] >= 0.9) {
		t.Errorf("Margin90 %d: lower %v", m, f.Lower)
	}
	if m := f.Margin99; m == 0 || f.Lower[m] < 0.99 || f.Lower[m-1] >= 0.99 {
		t.Errorf("Margin99 %d", m)
	}
	t.Log(f.Lines(p))
	loud := &Params{Config: Config{Teachers: names, Classes: 10, Noise: Binomial}, QPC: 1, Coins: 3000}
	g, err := loud.Forecast(0)
	if err != nil {
		t.Fatal(err)
	}
	if g.Margin90 != 0 || g.Warning(loud) == "" {
		t.Errorf("no warning for noise sd %.1f with 20 teachers", g.NoiseSD)
	}
	t.Log(g.Lines(loud))
}
