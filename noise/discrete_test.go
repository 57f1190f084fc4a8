package noise

import (
	"math"
	"math/big"
	"testing"
)

// Tests of the discrete-versus-continuous margin (GaussianCalibrationSensitivity).
// The exact discrete δ is computed two independent ways: by brute-force lattice
// sums (every term, compensated summation, arguments in double-double), and by
// the Euler-Maclaurin formula with its remainder bounded (fast, used at the
// library's grids). The heavy brute-force runs at the library's grids need
// DPLEARN_LONG_TESTS=1.

// contDelta is the analytic Gaussian curve f(ε; μ) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ).
func contDelta(eps, mu float64) float64 {
	a, b := mu/2-eps/mu, -mu/2-eps/mu
	return 0.5*math.Erfc(-a/math.Sqrt2) - math.Exp(eps)*0.5*math.Erfc(-b/math.Sqrt2)
}

// contDeltaQuad is f(ε; μ) = ∫₀^μ φ(t/2 − ε/t) dt (the derivative of the
// curve in μ is φ(μ/2 − ε/μ)) by adaptive Gauss-Legendre quadrature. The
// integrand is positive, so unlike Φ(a) − e^ε Φ(b) there is no cancellation:
// it is accurate to a few ulps times 1 + a², a = μ/2 − ε/μ.
func contDeltaQuad(eps, mu float64) float64 {
	g := func(t float64) float64 {
		a := t/2 - eps/t
		return math.Exp(-a*a/2) / math.Sqrt(2*math.Pi)
	}
	gl := func(lo, hi float64, n int) float64 {
		xs, ws := glNodes(n)
		var acc neumaier
		for i := range xs {
			acc.add(ws[i] * g(lo+(hi-lo)*(xs[i]+1)/2))
		}
		return acc.sum() * (hi - lo) / 2
	}
	// A coarse pass fixes the absolute tolerance.
	est := gl(0, mu, 40)
	var rec func(lo, hi, whole float64, depth int) float64
	rec = func(lo, hi, whole float64, depth int) float64 {
		mid := lo + (hi-lo)/2
		l, r := gl(lo, mid, 20), gl(mid, hi, 20)
		if depth > 40 || math.Abs(l+r-whole) <= 1e-18*est {
			return l + r
		}
		return rec(lo, mid, l, depth+1) + rec(mid, hi, r, depth+1)
	}
	return rec(0, mu, gl(0, mu, 20), 0)
}

// glNodes returns the n-point Gauss-Legendre nodes and weights on [−1, 1]
// (Newton's method on the Legendre polynomial).
func glNodes(n int) ([]float64, []float64) {
	if c, ok := glCache[n]; ok {
		return c[0], c[1]
	}
	xs, ws := make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		x := math.Cos(math.Pi * (float64(i) + 0.75) / (float64(n) + 0.5))
		var dp float64
		for it := 0; it < 100; it++ {
			p0, p1 := 1.0, x
			for k := 2; k <= n; k++ {
				p0, p1 = p1, ((2*float64(k)-1)*x*p1-(float64(k)-1)*p0)/float64(k)
			}
			dp = float64(n) * (x*p1 - p0) / (x*x - 1)
			dx := p1 / dp
			x -= dx
			if math.Abs(dx) < 1e-17 {
				break
			}
		}
		xs[i], ws[i] = x, 2/((1-x*x)*dp*dp)
	}
	glCache[n] = [2][]float64{xs, ws}
	return xs, ws
}

var glCache = map[int][2][]float64{}

// contSigma returns the smallest σ (bisection, relative 1e-14, then verified)
// with contDelta(ε, sensFn(σ)/σ) ≤ δ: the calibration a caller of
// GaussianCalibrationSensitivity performs.
func contSigma(t *testing.T, eps, delta float64, sensFn func(sigma float64) float64) float64 {
	t.Helper()
	ok := func(s float64) bool { return contDelta(eps, sensFn(s)/s) <= delta }
	lo, hi := 1e-300, 1.0
	for !ok(hi) {
		lo, hi = hi, hi*2
	}
	for hi-lo > 1e-14*hi {
		if mid := lo + (hi-lo)/2; ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if !ok(hi) {
		t.Fatal("calibration failed")
	}
	return hi
}

// neumaier is compensated summation.
type neumaier struct{ s, c float64 }

func (n *neumaier) add(x float64) {
	t := n.s + x
	if math.Abs(n.s) >= math.Abs(x) {
		n.c += (n.s - t) + x
	} else {
		n.c += (x - t) + n.s
	}
	n.s = t
}
func (n *neumaier) sum() float64 { return n.s + n.c }

// gaussTerm returns exp(−y²/(2s²)) with the argument in double-double
// (|y| < 2^26 so y² is exact).
func gaussTerm(y, s float64) float64 {
	ys := y * y
	dHi := 2 * s * s
	dLo := 2 * math.FMA(s, s, -s*s)
	qHi := ys / dHi
	r := math.FMA(-qHi, dHi, ys) - qHi*dLo
	qLo := r / dHi
	return math.Exp(-qHi) * (1 - qLo)
}

// lowerTail returns Σ_{y ≤ m} exp(−y²/2s²) by brute force.
func lowerTail(m int64, s float64) float64 {
	var acc neumaier
	for y := m; ; y-- {
		term := gaussTerm(float64(y), s)
		acc.add(term)
		if y < 0 && term < 1e-30*acc.sum() {
			return acc.sum()
		}
	}
}

// theta1 returns Σ_{y∈ℤ} exp(−y²/2s²): s√(2π)(1 + τ) with τ = 2Σ e^{−2π²s²m²}
// (Poisson summation); for s ≥ 8, τ < 1e-548, below float64.
func theta1(s float64) float64 {
	if s >= 8 {
		return s * math.Sqrt(2*math.Pi)
	}
	return 2*lowerTail(0, s) - 1
}

// threshold returns, for an integer shift k > 0, M = the largest integer y
// with privacy loss (k² − 2ky)/2s² > ε, and frac = c − M ∈ (0, 1] where c =
// k/2 − εs²/k, both computed exactly.
func threshold(eps, s float64, k int64) (m int64, frac float64) {
	c := new(big.Rat).SetFrac64(k, 2)
	e := new(big.Rat).SetFloat64(eps)
	ss := new(big.Rat).SetFloat64(s)
	e.Mul(e, ss).Mul(e, ss).Quo(e, new(big.Rat).SetInt64(k))
	c.Sub(c, e)
	// M = ⌈c⌉ − 1.
	q := new(big.Int).Quo(c.Num(), c.Denom()) // truncation toward zero
	if new(big.Rat).SetInt(q).Cmp(c) >= 0 {
		q.Sub(q, big.NewInt(1)) // c is an integer or negative non-integer
	}
	if new(big.Rat).SetInt(new(big.Int).Add(q, big.NewInt(1))).Cmp(c) < 0 {
		q.Add(q, big.NewInt(1))
	}
	if !q.IsInt64() {
		panic("threshold out of range")
	}
	f, _ := new(big.Rat).Sub(c, new(big.Rat).SetInt(q)).Float64()
	return q.Int64(), f
}

// discreteDeltaBrute returns the exact δ(ε) of the 1-D discrete Gaussian
// N_ℤ(0, s²) against N_ℤ(k, s²), k > 0 (CKS 2020, Theorem 7):
// P[Z ≤ M] − e^ε P[Z ≤ M − k], by summing every lattice term. Each tail is
// accurate to a few ulps; the difference loses a factor cancel = P[Z ≤ M]/δ,
// which is returned too (the same factor limits the float64 evaluation of
// the continuous curve, contDelta).
func discreteDeltaBrute(eps, s float64, k int64) (delta, cancel float64) {
	m, _ := threshold(eps, s, k)
	th := theta1(s)
	p := lowerTail(m, s) / th
	d := p - math.Exp(eps)*lowerTail(m-k, s)/th
	return max(d, 0), p / d
}

// discreteExcessEM returns δ_disc(ε) − f(ε; k/s) for the 1-D discrete
// Gaussian with integer shift k > 0, by the Euler-Maclaurin formula
//
//	Σ_{y≤M} F(y) = ∫_{−∞}^{M} F + F(M)/2 + F′(M)/12 − F‴(M)/720 + R,
//	|R| ≤ 2ζ(4)/(2π)⁴ ∫|F⁗| ≤ 0.017 s⁻³ for F(y) = exp(−y²/2s²),
//
// applied to both tails, minus the continuous integrals up to the exact
// threshold c. The part ∫_M^c (under one grid step) is done by 5-point
// Gauss-Legendre. Valid for s ≥ 8 (θ = s√(2π) to float precision); the
// remainder is below 0.02 s⁻⁴ in δ units.
func discreteExcessEM(eps, s float64, k int64) float64 {
	m, frac := threshold(eps, s, k)
	s2 := s * s
	f := func(y float64) float64 { return math.Exp(-y * y / (2 * s2)) }
	part := func(m int64) float64 {
		y := float64(m)
		fy := f(y)
		d1 := -y / s2 * fy
		d3 := (-y*y*y/(s2*s2*s2) + 3*y/(s2*s2)) * fy
		// ∫_m^{m+frac} f by Gauss-Legendre (5 points on [0, frac]).
		xs := [5]float64{-0.9061798459386640, -0.5384693101056831, 0, 0.5384693101056831, 0.9061798459386640}
		ws := [5]float64{0.2369268850561891, 0.4786286704993665, 0.5688888888888889, 0.4786286704993665, 0.2369268850561891}
		var in float64
		for i := range xs {
			in += ws[i] * f(y+frac*(xs[i]+1)/2)
		}
		in *= frac / 2
		return -in + fy/2 + d1/12 - d3/720
	}
	return (part(m) - math.Exp(eps)*part(m-k)) / (s * math.Sqrt(2*math.Pi))
}

func TestMinGridScale(t *testing.T) {
	for _, sigma := range []float64{1e-280, 3e-9, 1.4e-3, 0.7, 1, 3.7306, 1e5, 1e300} {
		for _, n := range []int{1, 2, 3, 9, 45, 1000, 123457} {
			g, err := GaussianGrid(sigma, n)
			if err != nil {
				t.Fatal(err)
			}
			// σ/g ≥ 2^21·√n, i.e. (σ/g)² ≥ 2^42·n, checked exactly.
			r := new(big.Rat).Quo(new(big.Rat).SetFloat64(sigma), new(big.Rat).SetFloat64(g))
			r.Mul(r, r)
			if r.Cmp(new(big.Rat).SetFloat64(MinGridScale*MinGridScale*float64(n))) < 0 {
				t.Errorf("σ=%g n=%d: σ/g = %g < 2^21·√n", sigma, n, sigma/g)
			}
		}
	}
}

func TestGaussianCalibrationSensitivity(t *testing.T) {
	cases := []struct {
		sens, sigma float64
		n           int
	}{
		{0, 1, 1}, {1, 1, 1}, {1.4207e-4, 1.413e-3, 9}, {5.023e-5, 4.995e-4, 45},
		{math.Sqrt2, 10, 1 << 20}, {1e-300, 1e-290, 3}, {3, 0.5, 7},
	}
	for _, c := range cases {
		got := GaussianCalibrationSensitivity(c.sens, c.sigma, c.n)
		slack := GaussianGridSlack(c.sigma, c.n)
		// want = (sens + slack)(1 + 2^-32), exactly.
		want := new(big.Float).SetPrec(4000).Add(big.NewFloat(c.sens), big.NewFloat(slack))
		want.Mul(want, new(big.Float).SetPrec(4000).Add(big.NewFloat(1), big.NewFloat(DiscreteGaussianMargin)))
		gb := new(big.Float).SetFloat64(got)
		if gb.Cmp(want) < 0 {
			t.Errorf("%+v: %v below (Δ + slack)(1 + m)", c, got)
		}
		if new(big.Float).SetFloat64(math.Nextafter(got, 0)).Cmp(want) >= 0 {
			t.Errorf("%+v: %v not rounded up tightly", c, got)
		}
		if rel := got/(c.sens+slack) - 1; rel > 2*DiscreteGaussianMargin || rel < DiscreteGaussianMargin/2 {
			t.Errorf("%+v: relative margin %g", c, rel)
		}
	}
	for _, bad := range []struct {
		sens, sigma float64
		n           int
	}{{-1, 1, 1}, {math.NaN(), 1, 1}, {math.Inf(1), 1, 1}, {1, 0, 1}, {1, -1, 1}, {1, math.Inf(1), 1}, {1, 1, 0}} {
		if got := GaussianCalibrationSensitivity(bad.sens, bad.sigma, bad.n); !math.IsInf(got, 1) {
			t.Errorf("%+v: got %v, want +Inf", bad, got)
		}
	}
}

// TestEulerMaclaurinMatchesBruteForce checks the fast formula against the
// lattice sums at moderate s (and at the library's grids with
// DPLEARN_LONG_TESTS): both give the same discrete δ.
func TestEulerMaclaurinMatchesBruteForce(t *testing.T) {
	type tc struct {
		eps, s float64
		k      int64
	}
	cases := []tc{
		{0.5, 1000, 300}, {1, 1000, 500}, {0.1, 4096, 205}, {2, 3000, 4500}, {1, 1 << 14, 1<<13 + 77},
	}
	if longTests() {
		cases = append(cases, tc{0.5, 0x1p21 * 1.37, 300000}, tc{1, 0x1p21 * 3, 3 * 1048576})
	}
	for _, c := range cases {
		brute, cancel := discreteDeltaBrute(c.eps, c.s, c.k)
		cont := contDeltaQuad(c.eps, float64(c.k)/c.s)
		em := cont + discreteExcessEM(c.eps, c.s, c.k)
		// The brute-force difference of tails loses the factor cancel.
		if rel := math.Abs(em/brute - 1); rel > 1e-14+5e-16*cancel {
			t.Errorf("%+v: brute %.17g, Euler-Maclaurin %.17g (rel %.2g)", c, brute, em, rel)
		}
		t.Logf("ε=%g s=%g k=%d: δ_disc=%.15g, δ_cont=%.15g, excess %.3g relative (brute %.3g)", c.eps, c.s, c.k, brute, cont, em/cont-1, brute/cont-1)
	}
}

// TestDiscreteDeltaAtLibraryGrids calibrates σ as a caller of
// GaussianCalibrationSensitivity would (the analytic Gaussian curve at the
// returned sensitivity), takes the grid AddGaussian uses, and computes the
// exact δ(ε) of the discrete mechanism for the largest integer shift the
// sensitivity allows (the worst 1-D lattice shift; axis-aligned for n > 1).
// It must not exceed the target, and the excess of the discrete δ over the
// continuous one must be far below what the margin buys.
func TestDiscreteDeltaAtLibraryGrids(t *testing.T) {
	type tc struct {
		eps, delta, sens float64
		n                int
	}
	var cases []tc
	for _, eps := range []float64{0.05, 0.1, 0.5, 1, 2, 8} {
		for _, delta := range []float64{1e-5, 1e-9} {
			for _, sens := range []float64{4.0 / 28155, math.Sqrt2 / 28155, 1, 3.7} {
				for _, n := range []int{1, 9, 45} {
					cases = append(cases, tc{eps, delta, sens, n})
				}
			}
		}
	}
	brute := 0
	var minExcess, maxExcess, minMargin float64 = math.Inf(1), math.Inf(-1), math.Inf(1)
	for i, c := range cases {
		calSens := func(sigma float64) float64 { return GaussianCalibrationSensitivity(c.sens, sigma, c.n) }
		sigma := contSigma(t, c.eps, c.delta, calSens)
		g, err := GaussianGrid(sigma, c.n)
		if err != nil {
			t.Fatal(err)
		}
		s := sigma / g // exact: g is a power of two
		K := (c.sens + GaussianGridSlack(sigma, c.n)) / g
		k := int64(math.Floor(K))
		mu := float64(k) / s
		cont := contDeltaQuad(c.eps, mu)
		excess := discreteExcessEM(c.eps, s, k)
		disc := cont + excess
		if longTests() && i%24 == 0 {
			b, cancel := discreteDeltaBrute(c.eps, s, k)
			if math.Abs(b/disc-1) > 1e-14+5e-16*cancel {
				t.Errorf("%+v: brute-force δ %.17g vs Euler-Maclaurin %.17g", c, b, disc)
			}
			disc = max(disc, b)
			brute++
		}
		// The quadrature is accurate to about 1e-15·(1 + a²) relative.
		a := mu/2 - c.eps/mu
		if disc*(1+1e-14*(1+a*a)) > c.delta {
			t.Errorf("%+v: σ=%g s=%g k=%d: discrete δ %.17g exceeds the target", c, sigma, s, k, disc)
		}
		// What the margin buys at this μ versus what the lattice costs.
		margin := contDeltaQuad(c.eps, mu*(1+DiscreteGaussianMargin))/cont - 1
		rel := excess / cont
		minExcess, maxExcess = min(minExcess, rel), max(maxExcess, rel)
		minMargin = min(minMargin, margin)
		if rel > margin/1000 {
			t.Errorf("%+v: discrete excess %.3g relative is not ≪ the margin's %.3g", c, rel, margin)
		}
		if i%12 == 0 {
			t.Logf("ε=%-4g δ=%-5g Δ=%-9.4g n=%-2d σ=%-10.5g s=σ/g=%-10.4g k=%-9d δ_disc=%.12g  (δ_disc/δ_cont − 1 = %+.3g; margin buys %.3g)",
				c.eps, c.delta, c.sens, c.n, sigma, s, k, disc, rel, margin)
		}
	}
	t.Logf("%d cases (%d also by brute force): discrete excess δ_disc/δ_cont − 1 from %.3g to %.3g, smallest margin %.3g relative", len(cases), brute, minExcess, maxExcess, minMargin)
}

// TestCouplingBoundTwoDimensions checks steps 1-2 of the proof, δ_P,Q(ε) ≤
// ρ f(ε; ‖κ‖/s₁) + ρ² − 1 with s₁ = √(s² − s₂²), by exact lattice sums in
// two dimensions at small s (where the discrete excess is large enough to
// see), for shifts along an axis and along diagonals, and shows that the
// continuous curve at ‖κ‖/s alone does not cover the discrete δ.
func TestCouplingBoundTwoDimensions(t *testing.T) {
	const s2 = 1.5 // τ = 2Σe^{−2π²s₂²m²} ≈ 9.5e-20
	tau := 2 * math.Exp(-2*math.Pi*math.Pi*s2*s2) * 1.0000001
	rho := math.Pow((1+tau)/(1-tau), 2)
	slackA := rho*rho - 1 + 4*tau // ρ² − 1 plus the (ρ−1)f term, generously
	type tc struct {
		eps, s float64
		k      [2]int64
	}
	var cases []tc
	for _, s := range []float64{6, 10} {
		for _, eps := range []float64{0.25, 1, 3} {
			for _, k := range [][2]int64{{5, 0}, {3, 4}, {4, 3}, {1, 1}, {7, 7}, {12, 5}, {2, 9}} {
				cases = append(cases, tc{eps, s, k})
			}
		}
	}
	uncovered := 0
	for _, c := range cases {
		w := int64(math.Ceil(14*c.s)) + 20
		th := theta1(c.s)
		norm := th * th
		var d neumaier
		e := math.Exp(c.eps)
		ss := c.s * c.s
		for y0 := -w; y0 <= w; y0++ {
			for y1 := -w; y1 <= w; y1++ {
				p := math.Exp(-float64(y0*y0+y1*y1)/(2*ss)) / norm
				a, b := y0-c.k[0], y1-c.k[1]
				q := math.Exp(-float64(a*a+b*b)/(2*ss)) / norm
				if v := p - e*q; v > 0 {
					d.add(v)
				}
			}
		}
		disc := d.sum()
		kn := math.Hypot(float64(c.k[0]), float64(c.k[1]))
		bound := rho*contDelta(c.eps, kn/math.Sqrt(ss-s2*s2)) + slackA
		naive := contDelta(c.eps, kn/c.s)
		if disc > bound*(1+1e-12) {
			t.Errorf("%+v: discrete δ %.15g exceeds the coupling bound %.15g", c, disc, bound)
		}
		if disc > naive {
			uncovered++
		}
		t.Logf("ε=%-4g s=%-3g κ=%v: δ_disc=%.6g δ_cont(‖κ‖/s)=%.6g (disc/cont − 1 = %+.2e), bound %.6g", c.eps, c.s, c.k, disc, naive, disc/naive-1, bound)
	}
	if uncovered == 0 {
		t.Error("expected some cases where the discrete δ exceeds the continuous curve at ‖κ‖/s (the reason for the margin)")
	}
}

// TestReferenceValues pins the computations against values computed
// independently at 60 significant digits (mpmath; the discrete δ by the
// Euler-Maclaurin formula, whose remainder is below 1e-25 relative here):
// s = 2^21·1.37 (float64), k = 300000, ε = 0.5, and s = 3·2^21, k = 3·2^20,
// ε = 1.
func TestReferenceValues(t *testing.T) {
	cases := []struct {
		eps, s     float64
		k          int64
		disc, cont float64
	}{
		{0.5, 0x1p21 * 1.37, 300000, 2.178836050823667352e-8, 2.1788360508233845582e-8},
		{1, 3 * 0x1p21, 3 << 20, 0.0068295949831144845639, 0.0068295949831145753842},
	}
	for _, c := range cases {
		mu := float64(c.k) / c.s
		if got := contDeltaQuad(c.eps, mu); math.Abs(got/c.cont-1) > 2e-15 {
			t.Errorf("%+v: quadrature curve %.17g, reference %.17g (rel %.2g)", c, got, c.cont, got/c.cont-1)
		}
		if got := contDeltaQuad(c.eps, mu) + discreteExcessEM(c.eps, c.s, c.k); math.Abs(got/c.disc-1) > 2e-15 {
			t.Errorf("%+v: discrete δ %.17g, reference %.17g (rel %.2g)", c, got, c.disc, got/c.disc-1)
		}
		if longTests() {
			if got, _ := discreteDeltaBrute(c.eps, c.s, c.k); math.Abs(got/c.disc-1) > 1e-14 {
				t.Errorf("%+v: brute-force discrete δ %.17g, reference %.17g (rel %.2g)", c, got, c.disc, got/c.disc-1)
			}
		}
	}
}
