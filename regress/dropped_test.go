package regress_test

import (
	"math"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
)

// TestReleaseDroppedShareCalibration: the dropped count's neighbours (N
// public, one record replaced) differ by at most 1, so the Laplace scale
// must be at least 1/(ε − GridSlackRatio) (accounting.LaplaceScale's
// derivation with L1 sensitivity 1, checked here from the ratio bound
// (1 + slack·b)/b ≤ ε). The report states sensitivity 1 and that scale, and
// the noise actually drawn has the Laplace standard deviation √2·b: over
// 4000 seeded releases of m = 500 from N = 10⁵ at ε = 0.05 (b ≈ 20) the
// sample SD of N·f̂ − m is within 10% of √2·b (its relative standard error
// is about 1.9% for Laplace draws: kurtosis 6). Bad inputs are refused.
func TestReleaseDroppedShareCalibration(t *testing.T) {
	const eps, n, m = 0.05, int64(100000), int64(500)
	src := noise.NewInsecureSeeded(7)
	_, rel, err := regress.ReleaseDroppedShare(m, n, eps, src)
	if err != nil {
		t.Fatal(err)
	}
	minScale := 1 / (eps - noise.GridSlackRatio)
	if rel.Sensitivity != 1 || rel.Scale < minScale || rel.Noise != "laplace" {
		t.Fatalf("release %+v: want sensitivity 1, Laplace scale ≥ %v", rel, minScale)
	}
	if want, _ := accounting.LaplaceScale(eps, 1); rel.Scale != want {
		t.Errorf("scale %v, accounting.LaplaceScale(ε, 1) = %v", rel.Scale, want)
	}
	const reps = 4000
	s, s2 := 0.0, 0.0
	for i := 0; i < reps; i++ {
		f, _, err := regress.ReleaseDroppedShare(m, n, eps, src)
		if err != nil {
			t.Fatal(err)
		}
		d := f*float64(n) - float64(m)
		s += d
		s2 += d * d
	}
	sd := math.Sqrt(s2/reps - (s/reps)*(s/reps))
	if want := math.Sqrt2 * rel.Scale; math.Abs(sd/want-1) > 0.1 {
		t.Errorf("noise SD %.3g, want √2·b = %.3g", sd, want)
	}
	for _, c := range [][2]int64{{-1, 10}, {11, 10}, {0, 0}} {
		if _, _, err := regress.ReleaseDroppedShare(c[0], c[1], eps, src); err == nil {
			t.Errorf("dropped %d of N = %d accepted", c[0], c[1])
		}
	}
}
