package noise

import (
	"math"
	"math/big"
	"os"
	"sort"
	"testing"
)

// Statistical tests in this package use a per-assertion false-alarm rate of
// alpha = 1e-3 and fixed seeds (NewInsecureSeeded), so CI is deterministic.
// With DPLEARN_LONG_TESTS=1 they use fresh crypto/rand randomness and 5× the
// samples; then each assertion fails by chance with probability ≈ 1e-3.
const alpha = 1e-3

// zAlpha2 is the two-sided normal critical value for alpha = 1e-3.
const zAlpha2 = 3.2905

func longTests() bool { return os.Getenv("DPLEARN_LONG_TESTS") == "1" }

// testSource returns a seeded source, or a secure one in long mode.
func testSource(seed uint64) Source {
	if longTests() {
		return NewSecure()
	}
	return NewInsecureSeeded(seed)
}

// samples scales a sample count: ×5 in long mode, ½ under -short (the
// tests keep their false-alarm rate; only their power drops).
func samples(n int) int {
	switch {
	case longTests():
		return 5 * n
	case testing.Short():
		return n / 2
	}
	return n
}

// chiSquareCritical is the 1−alpha quantile of χ²(df) by the Wilson-Hilferty
// approximation (relative error < 1% for df ≥ 3 at alpha = 1e-3).
func chiSquareCritical(df int) float64 {
	const z = 3.0902 // one-sided normal quantile for 1e-3
	k := float64(df)
	c := 1 - 2/(9*k) + z*math.Sqrt(2/(9*k))
	return k * c * c * c
}

// chiSquareTest bins integer samples around the mode of pmf (normalised
// over [lo, hi]) with expected counts ≥ 5 per bin, merges each tail into its
// edge bin, and fails if the statistic exceeds the 1−alpha quantile.
func chiSquareTest(t reporter, name string, xs []int64, pmf func(int64) float64, lo, hi int64) {
	t.Helper()
	var z float64
	for k := lo; k <= hi; k++ {
		z += pmf(k)
	}
	n := float64(len(xs))
	// contiguous range of k with expected ≥ 5
	a, b := int64(math.MaxInt64), int64(math.MinInt64)
	for k := lo; k <= hi; k++ {
		if n*pmf(k)/z >= 5 {
			a = min(a, k)
			b = max(b, k)
		}
	}
	if a > b {
		t.Fatalf("%s: no bin with expected count ≥ 5", name)
	}
	exp := make([]float64, b-a+1)
	for k := lo; k <= hi; k++ {
		i := min(max(k, a), b) - a
		exp[i] += n * pmf(k) / z
	}
	obs := make([]float64, len(exp))
	for _, x := range xs {
		obs[min(max(x, a), b)-a]++
	}
	var stat float64
	for i := range exp {
		d := obs[i] - exp[i]
		stat += d * d / exp[i]
	}
	df := len(exp) - 1
	if df < 1 {
		t.Fatalf("%s: only one bin", name)
	}
	if crit := chiSquareCritical(max(df, 3)); stat > crit {
		t.Errorf("%s: χ² = %.1f > %.1f (df %d, alpha %g)", name, stat, crit, df, alpha)
	}
}

// ksTest fails if the Kolmogorov-Smirnov statistic of xs against cdf exceeds
// the asymptotic 1−alpha critical value √(−ln(alpha/2)/2)/√n.
func ksTest(t reporter, name string, xs []float64, cdf func(float64) float64) {
	t.Helper()
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := float64(len(s))
	var d float64
	for i, x := range s {
		f := cdf(x)
		d = math.Max(d, math.Max(f-float64(i)/n, float64(i+1)/n-f))
	}
	if crit := math.Sqrt(-math.Log(alpha/2)/2) / math.Sqrt(n); d > crit {
		t.Errorf("%s: KS D = %.5f > %.5f (n %d, alpha %g)", name, d, crit, len(s), alpha)
	}
}

// symmetryTest pools the pairs (k, −k), k > 0: under symmetry the count at
// +k given the pair total is Binomial(total, ½); the pooled z statistic
// must be below the two-sided critical value.
func symmetryTest(t reporter, name string, xs []int64) {
	t.Helper()
	var pos, tot float64
	for _, x := range xs {
		if x != 0 {
			tot++
			if x > 0 {
				pos++
			}
		}
	}
	if z := (pos - tot/2) / math.Sqrt(tot/4); math.Abs(z) > zAlpha2 {
		t.Errorf("%s: asymmetric, z = %.2f", name, z)
	}
	// And per |k| for the well-populated values.
	c := map[int64][2]float64{}
	for _, x := range xs {
		if x != 0 {
			v := c[abs64(x)]
			if x > 0 {
				v[0]++
			} else {
				v[1]++
			}
			c[abs64(x)] = v
		}
	}
	// Bonferroni over the tested k keeps the family-wise rate at alpha.
	var ks []int64
	for k, v := range c {
		if v[0]+v[1] >= 100 {
			ks = append(ks, k)
		}
	}
	zc := normQuantile(1 - alpha/float64(2*max(len(ks), 1)))
	for _, k := range ks {
		v := c[k]
		tt := v[0] + v[1]
		if z := (v[0] - tt/2) / math.Sqrt(tt/4); math.Abs(z) > zc {
			t.Errorf("%s: P(%d) ≠ P(−%d): %v vs %v (z = %.2f)", name, k, k, v[0], v[1], z)
		}
	}
}

// binomialZTest checks a count against Binomial(n, p) with a normal
// approximation (n p (1−p) ≥ 25 required).
func binomialZTest(t reporter, name string, k, n int, p float64) {
	t.Helper()
	v := float64(n) * p * (1 - p)
	if v < 25 {
		t.Fatalf("%s: variance %v too small for the z test", name, v)
	}
	if z := (float64(k) - float64(n)*p) / math.Sqrt(v); math.Abs(z) > zAlpha2 {
		t.Errorf("%s: %d of %d, expected p = %v (z = %.2f)", name, k, n, p, z)
	}
}

func abs64(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}

// normQuantile is the standard normal quantile by bisection on Erfc.
func normQuantile(p float64) float64 {
	lo, hi := -40.0, 40.0
	for i := 0; i < 200; i++ {
		m := (lo + hi) / 2
		if 0.5*math.Erfc(-m/math.Sqrt2) < p {
			lo = m
		} else {
			hi = m
		}
	}
	return (lo + hi) / 2
}

// reporter is the part of testing.T the statistical helpers use, so that
// TestStatisticalTestsHavePower can check that they do fail.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
}

// recorder counts failures instead of failing.
type recorder struct{ fails int }

func (r *recorder) Helper()               {}
func (r *recorder) Errorf(string, ...any) { r.fails++ }
func (r *recorder) Fatalf(string, ...any) { r.fails++ }

// The tests can fail: samples from a slightly wrong distribution are
// rejected by each statistical test.
func TestStatisticalTestsHavePower(t *testing.T) {
	src := NewInsecureSeeded(99)
	n := 40000
	xs := make([]int64, n)
	for i := range xs {
		v, err := DiscreteGaussian(src, big.NewRat(18, 1))
		if err != nil {
			t.Fatal(err)
		}
		xs[i] = v
	}
	r := &recorder{}
	chiSquareTest(r, "χ² σ²=18 vs 16", xs, discreteGaussianPMF(16), -200, 200)
	if r.fails == 0 {
		t.Error("χ² test accepts σ² = 18 as σ² = 16")
	}
	r = &recorder{}
	logRatioSlopeTest(r, "slope σ²=18 vs 16", xs, 16, discreteGaussianPMF(16))
	if r.fails == 0 {
		t.Error("slope test accepts σ² = 18 as σ² = 16")
	}
	g := make([]float64, 20000)
	if err := AddGaussian(src, g, 1.5); err != nil {
		t.Fatal(err)
	}
	r = &recorder{}
	ksTest(r, "KS", g, func(v float64) float64 { return 0.5 * math.Erfc(-v/(1.7*math.Sqrt2)) })
	if r.fails == 0 {
		t.Error("KS test accepts N(0, 1.5²) as N(0, 1.7²)")
	}
	shifted := make([]int64, n)
	for i, x := range xs {
		shifted[i] = x
		if x == 1 && i%10 == 0 {
			shifted[i] = -1 // 10% of the 1s moved to −1
		}
	}
	r = &recorder{}
	symmetryTest(r, "asymmetric", shifted)
	if r.fails == 0 {
		t.Error("symmetry test accepts P(1) ≠ P(−1)")
	}
}
