package noise

import (
	"bytes"
	"errors"
	"math"
	"math/big"
	"strings"
	"testing"
)

func TestSources(t *testing.T) {
	a, b, c := NewInsecureSeeded(1), NewInsecureSeeded(1), NewInsecureSeeded(2)
	ba, bb, bc := make([]byte, 64), make([]byte, 64), make([]byte, 64)
	a.Read(ba)
	b.Read(bb)
	c.Read(bc)
	if !bytes.Equal(ba, bb) || bytes.Equal(ba, bc) {
		t.Fatal("seeded source not deterministic per seed")
	}
	if a.Secure() || !strings.Contains(a.String(), "INSECURE seeded") {
		t.Fatalf("seeded source mislabelled: %v %q", a.Secure(), a.String())
	}
	s := NewSecure()
	if !s.Secure() || strings.Contains(s.String(), "INSECURE") {
		t.Fatal("secure source mislabelled")
	}
	bs := make([]byte, 64)
	if n, err := s.Read(bs); n != 64 || err != nil || bytes.Equal(bs, make([]byte, 64)) {
		t.Fatalf("secure read %d %v", n, err)
	}
}

type failingSource struct{}

func (failingSource) Read([]byte) (int, error) { return 0, errors.New("boom") }
func (failingSource) Secure() bool             { return true }
func (failingSource) String() string           { return "failing" }

type constSource byte

func (c constSource) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(c)
	}
	return len(p), nil
}
func (constSource) Secure() bool     { return false }
func (c constSource) String() string { return "constant" }

func TestSourceErrorsPropagate(t *testing.T) {
	x := []float64{1, 2}
	if err := AddGaussian(failingSource{}, x, 1); err == nil || x[0] != 1 {
		t.Fatalf("error not propagated or x modified: %v %v", err, x)
	}
	if _, err := Binomial(failingSource{}, 100); err == nil {
		t.Fatal("binomial ignored read error")
	}
	if _, err := DiscreteGaussian(nil, big.NewRat(1, 1)); err == nil {
		t.Fatal("nil source accepted")
	}
}

func TestBernoulli(t *testing.T) {
	src := testSource(10)
	n := samples(30000)
	for _, p := range []*big.Rat{big.NewRat(1, 3), big.NewRat(999, 1000), new(big.Rat).SetFrac(big.NewInt(1), new(big.Int).Lsh(big.NewInt(1), 70))} {
		k := 0
		for i := 0; i < n; i++ {
			b, err := Bernoulli(src, p)
			if err != nil {
				t.Fatal(err)
			}
			if b {
				k++
			}
		}
		pf, _ := p.Float64()
		if pf*(1-pf)*float64(n) >= 25 {
			binomialZTest(t, "Bernoulli("+p.RatString()+")", k, n, pf)
		} else if pf < 1e-10 && k != 0 {
			t.Errorf("Bernoulli(2^-70) fired %d times", k)
		}
	}
	for _, bad := range []*big.Rat{big.NewRat(-1, 2), big.NewRat(3, 2), nil} {
		if _, err := Bernoulli(src, bad); err == nil {
			t.Errorf("p = %v accepted", bad)
		}
	}
}

func TestBernoulliExpNeg(t *testing.T) {
	src := testSource(11)
	n := samples(40000)
	for _, g := range []*big.Rat{big.NewRat(0, 1), big.NewRat(1, 2), big.NewRat(1, 1), big.NewRat(5, 2), big.NewRat(4, 1), big.NewRat(123456789, 1000000007)} {
		k := 0
		for i := 0; i < n; i++ {
			b, err := BernoulliExpNeg(src, g)
			if err != nil {
				t.Fatal(err)
			}
			if b {
				k++
			}
		}
		gf, _ := g.Float64()
		p := math.Exp(-gf)
		if p == 1 {
			if k != n {
				t.Errorf("exp(-0): %d of %d", k, n)
			}
			continue
		}
		binomialZTest(t, "Bernoulli(exp(-"+g.RatString()+"))", k, n, p)
	}
	if _, err := BernoulliExpNeg(src, big.NewRat(-1, 3)); err == nil {
		t.Error("negative γ accepted")
	}
}

func TestGeometric(t *testing.T) {
	src := testSource(12)
	n := samples(30000)
	g := big.NewRat(1, 3)
	xs := make([]int64, n)
	for i := range xs {
		v, err := Geometric(src, g)
		if err != nil {
			t.Fatal(err)
		}
		xs[i] = v
	}
	q := math.Exp(-1.0 / 3)
	chiSquareTest(t, "Geometric(1/3)", xs, func(k int64) float64 { return (1 - q) * math.Pow(q, float64(k)) }, 0, 400)
}

func discreteLaplacePMF(scale float64) func(int64) float64 {
	return func(k int64) float64 { return math.Exp(-math.Abs(float64(k)) / scale) }
}

func discreteGaussianPMF(sigma2 float64) func(int64) float64 {
	return func(k int64) float64 { return math.Exp(-float64(k*k) / (2 * sigma2)) }
}

func TestDiscreteLaplace(t *testing.T) {
	src := testSource(13)
	n := samples(40000)
	// The last scale, (2^41+1)/2^38 ≈ 8, has a numerator above 2^40 and
	// exercises the big-integer path of the sampler.
	huge := new(big.Rat).SetFrac(new(big.Int).Add(new(big.Int).Lsh(big.NewInt(1), 41), big.NewInt(1)), new(big.Int).Lsh(big.NewInt(1), 38))
	for _, sc := range []*big.Rat{big.NewRat(3, 2), big.NewRat(7, 1), big.NewRat(1, 5), huge} {
		xs := make([]int64, n)
		for i := range xs {
			v, err := DiscreteLaplace(src, sc)
			if err != nil {
				t.Fatal(err)
			}
			xs[i] = v
		}
		f, _ := sc.Float64()
		name := "DiscreteLaplace(" + sc.RatString() + ")"
		chiSquareTest(t, name, xs, discreteLaplacePMF(f), -2000, 2000)
		symmetryTest(t, name, xs)
		// Tail: P(|Y| ≥ k) = 2 e^{−k/s}/(1 + e^{−1/s}) for k ≥ 1.
		k := int64(math.Ceil(3 * f))
		var c int
		for _, x := range xs {
			if abs64(x) >= k {
				c++
			}
		}
		p := 2 * math.Exp(-float64(k)/f) / (1 + math.Exp(-1/f))
		binomialZTest(t, name+" tail", c, n, p)
	}
}

func TestDiscreteGaussian(t *testing.T) {
	src := testSource(14)
	n := samples(40000)
	for _, s2 := range []*big.Rat{big.NewRat(9, 4), big.NewRat(16, 1), big.NewRat(1, 4), big.NewRat(1000003, 7)} {
		xs := make([]int64, n)
		for i := range xs {
			v, err := DiscreteGaussian(src, s2)
			if err != nil {
				t.Fatal(err)
			}
			xs[i] = v
		}
		f, _ := s2.Float64()
		name := "DiscreteGaussian(σ²=" + s2.RatString() + ")"
		chiSquareTest(t, name, xs, discreteGaussianPMF(f), -int64(40*math.Sqrt(f))-5, int64(40*math.Sqrt(f))+5)
		symmetryTest(t, name, xs)
		logRatioSlopeTest(t, name, xs, f, discreteGaussianPMF(f))
		// Tail beyond 2σ.
		k := int64(math.Ceil(2 * math.Sqrt(f)))
		var c int
		var z, tail float64
		for j := int64(-40*math.Sqrt(f)) - 5; j <= int64(40*math.Sqrt(f))+5; j++ {
			p := discreteGaussianPMF(f)(j)
			z += p
			if abs64(j) >= k {
				tail += p
			}
		}
		for _, x := range xs {
			if abs64(x) >= k {
				c++
			}
		}
		if tail/z*float64(n) > 25 {
			binomialZTest(t, name+" tail", c, n, tail/z)
		}
	}
}

// logRatioSlopeTest regresses log(count_k) on k² with weights count_k
// (Var log c ≈ 1/c): the slope must be −1/(2σ²) within the two-sided
// 1−alpha band of its standard error. Only values k whose expected count is
// ≥ 50 enter (chosen from the model, not the data, to avoid selection bias).
func logRatioSlopeTest(t reporter, name string, xs []int64, sigma2 float64, pmf func(int64) float64) {
	t.Helper()
	var z float64
	lim := int64(40*math.Sqrt(sigma2)) + 5
	for k := -lim; k <= lim; k++ {
		z += pmf(k)
	}
	c := map[int64]float64{}
	for k := -lim; k <= lim; k++ {
		if float64(len(xs))*pmf(k)/z >= 50 {
			c[k] = 0
		}
	}
	for _, x := range xs {
		if _, ok := c[x]; ok {
			c[x]++
		}
	}
	var sw, sx, sy float64
	type pt struct{ x, y, w float64 }
	var pts []pt
	for k, v := range c {
		if v > 0 {
			p := pt{float64(k * k), math.Log(v), v}
			pts = append(pts, p)
			sw += p.w
			sx += p.w * p.x
			sy += p.w * p.y
		}
	}
	if len(pts) < 3 {
		return // σ too small for a slope: the χ² test covers it
	}
	mx, my := sx/sw, sy/sw
	var sxx, sxy float64
	for _, p := range pts {
		sxx += p.w * (p.x - mx) * (p.x - mx)
		sxy += p.w * (p.x - mx) * (p.y - my)
	}
	slope, se := sxy/sxx, math.Sqrt(1/sxx)
	if want := -1 / (2 * sigma2); math.Abs(slope-want) > zAlpha2*se {
		t.Errorf("%s: log-ratio slope %.5g, want %.5g ± %.2g", name, slope, want, zAlpha2*se)
	}
}

func TestAddGaussianAndLaplaceKS(t *testing.T) {
	src := testSource(15)
	n := samples(20000)
	for _, sigma := range []float64{1.5, 1e-3, 1234.5} {
		x := make([]float64, n)
		if err := AddGaussian(src, x, sigma); err != nil {
			t.Fatal(err)
		}
		ksTest(t, "AddGaussian", x, func(v float64) float64 { return 0.5 * math.Erfc(-v/(sigma*math.Sqrt2)) })
	}
	for _, b := range []float64{0.7, 50} {
		x := make([]float64, n)
		if err := AddLaplace(src, x, b); err != nil {
			t.Fatal(err)
		}
		ksTest(t, "AddLaplace", x, func(v float64) float64 {
			if v < 0 {
				return 0.5 * math.Exp(v/b)
			}
			return 1 - 0.5*math.Exp(-v/b)
		})
	}
	// Scalars (one grid per draw) also match.
	ys := make([]float64, samples(5000))
	for i := range ys {
		v, err := Gaussian(src, 2)
		if err != nil {
			t.Fatal(err)
		}
		ys[i] = v
	}
	ksTest(t, "Gaussian", ys, func(v float64) float64 { return 0.5 * math.Erfc(-v/(2*math.Sqrt2)) })
	for i := range ys {
		v, err := Laplace(src, 3)
		if err != nil {
			t.Fatal(err)
		}
		ys[i] = v
	}
	ksTest(t, "Laplace", ys, func(v float64) float64 {
		if v < 0 {
			return 0.5 * math.Exp(v/3)
		}
		return 1 - 0.5*math.Exp(-v/3)
	})
	// Tails of the scalar Gaussian: P(|X| > 3σ) = erfc(3/√2).
	var c int
	m := samples(40000)
	for i := 0; i < m; i++ {
		v, err := Gaussian(src, 2)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(v) > 6 {
			c++
		}
	}
	binomialZTest(t, "Gaussian tail", c, m, math.Erfc(3/math.Sqrt2))
}

func TestGridOutputAndSlack(t *testing.T) {
	src := testSource(16)
	x := []float64{0.1, -3.7, 1e6, 0}
	orig := append([]float64(nil), x...)
	sigma := 0.25
	if err := AddGaussian(src, x, sigma); err != nil {
		t.Fatal(err)
	}
	g, _ := GaussianGrid(sigma, len(x))
	for i, v := range x {
		if q := v / g; q != math.Trunc(q) {
			t.Errorf("output %v is not on the grid %v", v, g)
		}
		if math.Abs(v-orig[i]) > 10*sigma {
			t.Errorf("noise %v implausibly large", v-orig[i])
		}
	}
	for _, n := range []int{1, 2, 3, 4, 10, 1000, 12345, 1 << 24, 1<<24 + 1} {
		for _, s := range []float64{1e-6, 0.3, 1, 2, 7, 1e6, math.Nextafter(1, 2), math.Nextafter(1, 0)} {
			sl := GaussianGridSlack(s, n)
			if sl > GridSlackRatio*s/2 || sl < GridSlackRatio*s/8 {
				t.Errorf("Gaussian slack(σ=%v, n=%d) = %v outside [r/8, r/2]·σ", s, n, sl)
			}
			ll := LaplaceGridSlack(s, n)
			if ll > GridSlackRatio*s/2 || ll < GridSlackRatio*s/8 {
				t.Errorf("Laplace slack(b=%v, n=%d) = %v outside [r/8, r/2]·b", s, n, ll)
			}
		}
	}
	if !math.IsInf(GaussianGridSlack(-1, 3), 1) || !math.IsInf(LaplaceGridSlack(1, 0), 1) {
		t.Error("invalid slack input not +Inf")
	}
}

func TestAddNoiseRejectsBadInput(t *testing.T) {
	src := testSource(17)
	for _, c := range []struct {
		x     []float64
		scale float64
	}{
		{[]float64{1, math.NaN()}, 1},
		{[]float64{math.Inf(1)}, 1},
		{[]float64{1e300}, 1}, // too large for the grid
		{[]float64{1}, 0},
		{[]float64{1}, -2},
		{[]float64{1}, math.NaN()},
		{[]float64{1}, math.Inf(1)},
	} {
		orig := append([]float64(nil), c.x...)
		if err := AddGaussian(src, c.x, c.scale); err == nil {
			t.Errorf("AddGaussian(%v, %v) accepted", c.x, c.scale)
		}
		if err := AddLaplace(src, c.x, c.scale); err == nil {
			t.Errorf("AddLaplace(%v, %v) accepted", c.x, c.scale)
		}
		for i := range orig {
			if math.Float64bits(orig[i]) != math.Float64bits(c.x[i]) {
				t.Errorf("input modified on error: %v", c.x)
			}
		}
	}
	if err := AddGaussian(src, nil, 1); err != nil {
		t.Errorf("empty vector: %v", err)
	}
	for _, bad := range []*big.Rat{nil, big.NewRat(0, 1), big.NewRat(-1, 2)} {
		if _, err := DiscreteGaussian(src, bad); err == nil {
			t.Errorf("DiscreteGaussian(%v) accepted", bad)
		}
		if _, err := DiscreteLaplace(src, bad); err == nil {
			t.Errorf("DiscreteLaplace(%v) accepted", bad)
		}
	}
}

func TestAddGaussianMeanShift(t *testing.T) {
	src := testSource(18)
	n := samples(10000)
	x := make([]float64, n)
	for i := range x {
		x[i] = 42.125
	}
	if err := AddGaussian(src, x, 3); err != nil {
		t.Fatal(err)
	}
	var m float64
	for _, v := range x {
		m += v
	}
	m /= float64(n)
	if z := (m - 42.125) / (3 / math.Sqrt(float64(n))); math.Abs(z) > zAlpha2 {
		t.Errorf("mean %v (z = %.2f)", m, z)
	}
}

func TestBinomial(t *testing.T) {
	// Up to 2^12 flips the bits are read from src directly: a constant
	// source checks the masking of partial bytes and words.
	for _, n := range []int64{0, 1, 7, 8, 63, 64, 65, 1000, 4095, 4096} {
		if h, _ := Binomial(constSource(0xff), n); h != n {
			t.Errorf("all-ones source: %d heads of %d", h, n)
		}
		if h, _ := Binomial(constSource(0), n); h != 0 {
			t.Errorf("all-zeros source: %d heads of %d", h, n)
		}
		if h, _ := Binomial(constSource(0x55), n); h != (n+1)/2 {
			t.Errorf("0x55 source: %d heads of %d, want %d", h, n, (n+1)/2)
		}
	}
	src := testSource(19)
	m := samples(20000)
	xs := make([]int64, m)
	for i := range xs {
		h, err := Binomial(src, 20)
		if err != nil {
			t.Fatal(err)
		}
		xs[i] = h
	}
	chiSquareTest(t, "Binomial(20)", xs, func(k int64) float64 {
		if k < 0 || k > 20 {
			return 0
		}
		return math.Exp(logChoose(20, k) - 20*math.Ln2)
	}, 0, 20)
	if _, err := Binomial(src, -1); err == nil {
		t.Error("n = -1 accepted")
	}
	// Above 2^12 flips the bits come from AES-256-CTR keyed by src: check the
	// mean of draws that cross the 2^18-bit chunk boundary, and determinism.
	const nb = 262145
	k := samples(200)
	var sum float64
	for i := 0; i < k; i++ {
		h, err := Binomial(src, nb)
		if err != nil {
			t.Fatal(err)
		}
		sum += float64(h)
	}
	if z := (sum/float64(k) - nb/2.0) / (math.Sqrt(nb) / 2 / math.Sqrt(float64(k))); math.Abs(z) > zAlpha2 {
		t.Errorf("Binomial(%d): mean %v, z = %.2f", nb, sum/float64(k), z)
	}
	h1, _ := Binomial(NewInsecureSeeded(5), nb)
	h2, _ := Binomial(NewInsecureSeeded(5), nb)
	if h1 != h2 {
		t.Error("seeded Binomial not reproducible")
	}
	if !testing.Short() {
		const big = 1_000_000_000
		h, err := Binomial(src, big)
		if err != nil {
			t.Fatal(err)
		}
		if z := (float64(h) - big/2) / (math.Sqrt(big) / 2); math.Abs(z) > zAlpha2 {
			t.Errorf("Binomial(1e9) = %d, z = %.2f", h, z)
		}
	}
}

func logChoose(n, k int64) float64 {
	a, _ := math.Lgamma(float64(n + 1))
	b, _ := math.Lgamma(float64(k + 1))
	c, _ := math.Lgamma(float64(n - k + 1))
	return a - b - c
}

func TestSymmetricNoise(t *testing.T) {
	src := testSource(20)
	d := 4
	m := make([]float64, d*d)
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			m[i*d+j] = float64(i + j)
		}
	}
	if err := AddGaussianSymmetric(src, m, d, 1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			if m[i*d+j] != m[j*d+i] {
				t.Fatalf("not symmetric at (%d,%d)", i, j)
			}
		}
	}
	if m[1] == 1 {
		t.Error("no noise added")
	}
	if err := AddLaplaceSymmetric(src, m, d, 1); err != nil {
		t.Fatal(err)
	}
	asym := []float64{1, 2, 3, 4}
	if err := AddGaussianSymmetric(src, asym, 2, 1); err == nil || asym[1] != 2 {
		t.Error("asymmetric matrix accepted or modified")
	}
	if err := AddGaussianSymmetric(src, make([]float64, 5), 2, 1); err == nil {
		t.Error("wrong length accepted")
	}
	// The diagonal and off-diagonal noises have the same variance σ².
	n := samples(4000)
	var dg, off []float64
	for k := 0; k < n; k++ {
		z := make([]float64, 4)
		AddGaussianSymmetric(src, z, 2, 2)
		dg = append(dg, z[0])
		off = append(off, z[1])
	}
	cdf := func(v float64) float64 { return 0.5 * math.Erfc(-v/(2*math.Sqrt2)) }
	ksTest(t, "symmetric diagonal", dg, cdf)
	ksTest(t, "symmetric off-diagonal", off, cdf)
}

// The norm of ObjPert's vector is Gamma(d, 1/β): CDF 1 − e^{−βr} Σ_{k<d} (βr)^k/k!.
func TestObjPert(t *testing.T) {
	src := testSource(21)
	d, beta := 3, 2.0
	n := samples(5000)
	norms := make([]float64, n)
	u1 := make([]float64, n)
	var first float64
	for i := range norms {
		b, err := ObjPert(src, d, beta)
		if err != nil {
			t.Fatal(err)
		}
		var s float64
		for _, v := range b {
			s += v * v
		}
		norms[i] = math.Sqrt(s)
		first += b[0] / norms[i]
		u1[i] = b[0] / norms[i]
	}
	ksTest(t, "ObjPert norm", norms, func(r float64) float64 {
		x := beta * r
		var s, term float64 = 0, 1
		for k := 0; k < d; k++ {
			if k > 0 {
				term *= x / float64(k)
			}
			s += term
		}
		return 1 - math.Exp(-x)*s
	})
	// On the sphere S² a uniform direction has u₁ ~ Uniform[−1, 1] (Archimedes).
	ksTest(t, "ObjPert direction", u1, func(v float64) float64 { return (v + 1) / 2 })
	// Direction uniform on the sphere: E[u₁] = 0, Var u₁ = 1/d.
	if z := first / float64(n) / math.Sqrt(1/float64(d)/float64(n)); math.Abs(z) > zAlpha2 {
		t.Errorf("direction biased: z = %.2f", z)
	}
	if _, err := ObjPert(src, 0, 1); err == nil {
		t.Error("d = 0 accepted")
	}
	if _, err := ObjPert(src, 2, math.NaN()); err == nil {
		t.Error("β = NaN accepted")
	}
}

func TestInsecureWishart(t *testing.T) {
	src := testSource(22)
	d, df, s := 3, 5, 0.5
	n := samples(2000)
	var diag, off float64
	for k := 0; k < n; k++ {
		w, err := InsecureWishart(src, d, df, s)
		if err != nil {
			t.Fatal(err)
		}
		diag += w[0]
		off += w[1]
	}
	// E W = df·s²·I; Var W₁₁ = 2 df s⁴.
	mean, sd := float64(df)*s*s, math.Sqrt(2*float64(df))*s*s/math.Sqrt(float64(n))
	if z := (diag/float64(n) - mean) / sd; math.Abs(z) > zAlpha2 {
		t.Errorf("Wishart diagonal mean %v want %v (z = %.2f)", diag/float64(n), mean, z)
	}
	if z := off / float64(n) / (math.Sqrt(float64(df)) * s * s / math.Sqrt(float64(n))); math.Abs(z) > zAlpha2 {
		t.Errorf("Wishart off-diagonal mean %v (z = %.2f)", off/float64(n), z)
	}
}

func TestAddDiscreteVectors(t *testing.T) {
	src := testSource(23)
	n := samples(20000)
	x := make([]int64, n)
	if err := AddDiscreteGaussian(src, x, big.NewRat(25, 4)); err != nil {
		t.Fatal(err)
	}
	chiSquareTest(t, "AddDiscreteGaussian", x, discreteGaussianPMF(6.25), -200, 200)
	y := make([]int64, n)
	for i := range y {
		y[i] = 1000
	}
	if err := AddDiscreteLaplace(src, y, big.NewRat(2, 1)); err != nil {
		t.Fatal(err)
	}
	for i := range y {
		y[i] -= 1000
	}
	chiSquareTest(t, "AddDiscreteLaplace", y, discreteLaplacePMF(2), -500, 500)
	// Positive noise on MaxInt64 must be refused, leaving x unchanged
	// (P(no positive draw in 30 tries) < 1e-8).
	refused := false
	for k := 0; k < 30 && !refused; k++ {
		v := []int64{math.MaxInt64, 0}
		if err := AddDiscreteGaussian(src, v, big.NewRat(100, 1)); err != nil {
			refused = true
			if v[0] != math.MaxInt64 || v[1] != 0 {
				t.Fatalf("x modified on error: %v", v)
			}
		}
	}
	if !refused {
		t.Error("overflow never detected")
	}
	if err := AddDiscreteGaussian(src, x, nil); err == nil {
		t.Error("nil σ² accepted")
	}
}

// Property behind GaussianGridSlack/LaplaceGridSlack: snapping changes the
// difference of two inputs by at most one grid step per coordinate.
func TestSnapSlackProperty(t *testing.T) {
	src := NewInsecureSeeded(24)
	r, _ := newRNG(src)
	g, _ := GaussianGrid(0.37, 5)
	for i := 0; i < 20000; i++ {
		u, _ := r.uint64()
		v, _ := r.uint64()
		x := (float64(u>>11)/(1<<53) - 0.5) * 1000
		y := x + (float64(v>>11)/(1<<53)-0.5)*math.Ldexp(1, int(u%40)-30)
		k, err := snap([]float64{x, y}, g)
		if err != nil {
			t.Fatal(err)
		}
		if d := math.Abs(float64(k[0]-k[1]))*g - math.Abs(x-y); d > g {
			t.Fatalf("snapped difference grew by %v > g = %v (x=%v y=%v)", d, g, x, y)
		}
	}
}

// Sources and samplers are safe for concurrent use (run with -race).
func TestConcurrentUse(t *testing.T) {
	for _, src := range []Source{NewSecure(), NewInsecureSeeded(25)} {
		done := make(chan error, 4)
		for g := 0; g < 4; g++ {
			go func() {
				x := make([]float64, 50)
				var err error
				for k := 0; k < 20 && err == nil; k++ {
					err = AddGaussian(src, x, 1)
					if err == nil {
						_, err = Binomial(src, 1000)
					}
				}
				done <- err
			}()
		}
		for g := 0; g < 4; g++ {
			if err := <-done; err != nil {
				t.Fatal(err)
			}
		}
	}
}

// Any input either fails cleanly or gives an on-grid result; never a panic.
func FuzzAddNoise(f *testing.F) {
	f.Add(1.0, 1.0, uint64(1))
	f.Add(math.NaN(), 1.0, uint64(2))
	f.Add(1e300, 1e-300, uint64(3))
	f.Add(math.Copysign(0, -1), 5e-324, uint64(4))
	f.Add(123.456, math.MaxFloat64, uint64(5))
	f.Fuzz(func(t *testing.T, x, scale float64, seed uint64) {
		src := NewInsecureSeeded(seed)
		for _, add := range []func(Source, []float64, float64) error{AddGaussian, AddLaplace} {
			v := []float64{x, -x}
			if err := add(src, v, scale); err != nil {
				continue
			}
			for _, y := range v {
				if math.IsNaN(y) || math.IsInf(y, 0) {
					t.Fatalf("x=%v scale=%v gave %v", x, scale, y)
				}
			}
		}
	})
}

// Mironov 2012: with floating-point noise the low-order bits of x + noise
// reveal x. Here the output depends on x only through its grid point: two
// inputs that snap to the same grid point give bit-identical outputs with the
// same randomness, so no bit of the output carries more about x.
func TestOutputDependsOnlyOnGridPoint(t *testing.T) {
	const sigma = 0.5
	g, _ := GaussianGrid(sigma, 3)
	lg, _ := LaplaceGrid(sigma, 3)
	for seed := uint64(0); seed < 50; seed++ {
		on := func(v, g float64) float64 { return math.Round(v/g) * g }
		a := []float64{on(0.1, g) + 0.1*g, on(-7.25, g) - 0.4*g, on(1e5, g) + 0.2*g}
		b := []float64{on(0.1, g) - 0.3*g, on(-7.25, g) + 0.45*g, on(1e5, g) - 0.2*g}
		if err := AddGaussian(NewInsecureSeeded(seed), a, sigma); err != nil {
			t.Fatal(err)
		}
		if err := AddGaussian(NewInsecureSeeded(seed), b, sigma); err != nil {
			t.Fatal(err)
		}
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				t.Fatalf("Gaussian outputs differ for the same grid point: %v vs %v", a[i], b[i])
			}
		}
		c := []float64{on(0.1, lg) + 0.1*lg, on(-7.25, lg) - 0.4*lg, on(1e5, lg) + 0.2*lg}
		d := []float64{on(0.1, lg) - 0.3*lg, on(-7.25, lg) + 0.45*lg, on(1e5, lg) - 0.2*lg}
		if err := AddLaplace(NewInsecureSeeded(seed), c, sigma); err != nil {
			t.Fatal(err)
		}
		if err := AddLaplace(NewInsecureSeeded(seed), d, sigma); err != nil {
			t.Fatal(err)
		}
		for i := range c {
			if math.Float64bits(c[i]) != math.Float64bits(d[i]) {
				t.Fatalf("Laplace outputs differ for the same grid point: %v vs %v", c[i], d[i])
			}
		}
	}
}
