package dppp

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/noise"
)

// The noise of a sum of h shares (no votes) against its calibrated law,
// with a fixed seed. Each check is a two-sided z-test at |z| < 4.5 (false
// alarm 6.8e-6 per check under the null, four checks): mean and variance
// of binomial noise (Binomial(h·Coins, ½) − h·Coins/2: mean 0, variance
// h·Coins/4), variance of distributed discrete Gaussian noise (h·σ²; the
// variance of N_Z(0, σ²) is within 1e-12 of σ² for σ ≥ 2).
func TestNoiseDistribution(t *testing.T) {
	f := getFixture(t)
	for _, kind := range []NoiseKind{Binomial, DGauss} {
		p, err := Calibrate(f.config(kind), f.TPK)
		if err != nil {
			t.Fatal(err)
		}
		h := p.MinContributors
		src := noise.NewInsecureSeeded(7)
		const draws = 400 // sums of h shares, K classes each: 4000 values
		var xs []float64
		for range draws {
			sum := make([]int64, p.Classes)
			for range h {
				s, err := p.Share(src, []int{0})
				if err != nil {
					t.Fatal(err)
				}
				s[0]-- // remove the vote
				for k := range sum {
					sum[k] += s[k]
				}
			}
			hist, _, err := p.Tally(append(sum, make([]int64, (p.QPC-1)*p.Classes)...), h, 1)
			if err != nil {
				t.Fatal(err)
			}
			xs = append(xs, hist[0]...)
		}
		n := float64(len(xs))
		var m, v float64
		for _, x := range xs {
			m += x
		}
		m /= n
		for _, x := range xs {
			v += (x - m) * (x - m)
		}
		v /= n - 1
		var want float64
		var m4 float64 // fourth central moment, for the variance test
		if kind == Binomial {
			c := float64(int64(h) * p.Coins)
			want = c / 4
			m4 = 3*want*want - 2*c/16 // Binomial(c, ½): μ4 = c(3c − 2)/16 = 3σ⁴ − c/8
		} else {
			want = float64(h) * p.Sigma * p.Sigma
			m4 = 3 * want * want
		}
		zMean := m / math.Sqrt(want/n)
		zVar := (v - want) / math.Sqrt((m4-want*want)/n)
		t.Logf("%v: %d values, mean %.3f (z %.2f), variance %.2f want %.2f (z %.2f)", kind, len(xs), m, zMean, v, want, zVar)
		if math.Abs(zMean) > 4.5 || math.Abs(zVar) > 4.5 {
			t.Errorf("%v noise does not match its calibration", kind)
		}
	}
}

// The printed guarantee, recomputed from the printed numbers.
func TestPrintedGuarantee(t *testing.T) {
	f := getFixture(t)
	p, err := Calibrate(f.config(Binomial), f.TPK)
	if err != nil {
		t.Fatal(err)
	}
	report := strings.Join(p.Report(), "\n")
	t.Log(report)
	// n = 115 printed: the exact two-count profile (TestPerQueryCalibrationPLD
	// recomputes it by enumeration); the shares hold at least n.
	h := int64(p.Honest)
	if !strings.Contains(report, fmt.Sprintf("n = %d coins", p.HistogramCoins)) || p.HistogramCoins != 115 {
		t.Errorf("printed coins %d, want 115", p.HistogramCoins)
	}
	if h*p.Coins < p.HistogramCoins || (h)*(p.Coins-1) >= p.HistogramCoins {
		t.Errorf("shares %d × %d vs n = %d", h, p.Coins, p.HistogramCoins)
	}
	g, _ := p.Composed(p.MaxQueries)
	if g.Epsilon > p.BudgetEpsilon || g.Delta > p.BudgetDelta || !strings.Contains(report, g.String()) {
		t.Errorf("MaxQueries composes to %v", g)
	}
	q, err := Calibrate(f.config(DGauss), f.TPK)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(strings.Join(q.Report(), "\n"))
}
