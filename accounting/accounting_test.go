package accounting

import (
	"math"
	"math/big"
	"testing"

	"github.com/dplearn/dplearn/noise"
)

func near(got, want, rel float64) bool {
	return math.Abs(got-want) <= rel*math.Abs(want)
}

// Known answer from Google's differential-privacy library tests and Balle &
// Wang 2018: δ(σ=10, Δ=1, ε=0.1) = 0.008751768145810.
func TestAnalyticGaussianDeltaKnownAnswer(t *testing.T) {
	d, err := AnalyticGaussianDelta(0.1, 10, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !near(d, 0.008751768145810, 1e-12) {
		t.Fatalf("δ = %.15f, want 0.008751768145810", d)
	}
}

func TestAnalyticGaussianDeltaLimits(t *testing.T) {
	// ε = 0: δ is the total variation Φ(Δ/2σ) − Φ(−Δ/2σ) = 2Φ(Δ/2σ) − 1.
	d, _ := AnalyticGaussianDelta(0, 2, 1)
	if want := 2*normCDF(0.25) - 1; !near(d, want, 1e-12) {
		t.Fatalf("δ(0) = %v, want %v", d, want)
	}
	// Large ε must not overflow and must give a tiny δ.
	d, err := AnalyticGaussianDelta(50, 1, 1)
	if err != nil || d < 0 || d > 1e-200 || math.IsNaN(d) {
		t.Fatalf("δ(50) = %v, %v", d, err)
	}
}

func TestAnalyticGaussianSigmaRoundTrip(t *testing.T) {
	for _, c := range []struct{ eps, delta, sens float64 }{
		{0.1, 1e-5, 1}, {1, 1e-5, 1}, {5, 1e-8, 3}, {20, 1e-10, 0.5}, {0.5, 1e-3, 2},
	} {
		s, err := AnalyticGaussianSigma(c.eps, c.delta, c.sens)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := AnalyticGaussianDelta(c.eps, s, c.sens)
		if d > c.delta {
			t.Errorf("%+v: σ=%v gives δ=%v > target", c, s, d)
		}
		d2, _ := AnalyticGaussianDelta(c.eps, s*(1-1e-9), c.sens)
		if d2 <= c.delta {
			t.Errorf("%+v: σ=%v is not minimal (δ(0.999999999σ)=%v)", c, s, d2)
		}
		if c.eps < 1 {
			cl, err := ClassicGaussianSigma(c.eps, c.delta, c.sens)
			if err != nil || cl <= s {
				t.Errorf("%+v: classic σ=%v should exceed analytic %v (%v)", c, cl, s, err)
			}
		}
	}
}

func TestGaussianSigmaIncludesGridSlack(t *testing.T) {
	for _, c := range []struct{ eps, delta, sens float64 }{{1, 1e-5, 1}, {0.3, 1e-6, 0.01}, {8, 1e-9, 100}} {
		s, err := GaussianSigma(c.eps, c.delta, c.sens)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := AnalyticGaussianSigma(c.eps, c.delta, c.sens)
		if s <= a || s > a*(1+1e-4) {
			t.Errorf("%+v: GaussianSigma %v vs analytic %v", c, s, a)
		}
		for _, n := range []int{1, 7, 1000, 1 << 20} {
			slack := noise.GaussianGridSlack(s, n)
			d, _ := AnalyticGaussianDelta(c.eps, s, c.sens+slack)
			if d > c.delta {
				t.Errorf("%+v n=%d: δ with slack %v = %v > %v", c, n, slack, d, c.delta)
			}
		}
	}
}

func TestLaplaceScaleIncludesGridSlack(t *testing.T) {
	for _, c := range []struct{ eps, sens float64 }{{1, 1}, {0.01, 2}, {10, 0.5}} {
		b, err := LaplaceScale(c.eps, c.sens)
		if err != nil {
			t.Fatal(err)
		}
		if b < c.sens/c.eps || b > c.sens/c.eps*(1+1e-4) {
			t.Errorf("%+v: b=%v vs Δ/ε=%v", c, b, c.sens/c.eps)
		}
		for _, n := range []int{1, 3, 1 << 20} {
			if e := (c.sens + noise.LaplaceGridSlack(b, n)) / b; e > c.eps {
				t.Errorf("%+v n=%d: effective ε %v > %v", c, n, e, c.eps)
			}
		}
	}
}

func TestCalibrationRejectsBadInput(t *testing.T) {
	nan, inf := math.NaN(), math.Inf(1)
	checks := map[string]error{}
	_, checks["classic ε=1"] = ClassicGaussianSigma(1, 1e-5, 1)
	_, checks["classic ε=2"] = ClassicGaussianSigma(2, 1e-5, 1)
	_, checks["σ NaN ε"] = GaussianSigma(nan, 1e-5, 1)
	_, checks["σ δ=0"] = GaussianSigma(1, 0, 1)
	_, checks["σ δ=1"] = GaussianSigma(1, 1, 1)
	_, checks["σ Δ=Inf"] = GaussianSigma(1, 1e-5, inf)
	_, checks["σ Δ<0"] = AnalyticGaussianSigma(1, 1e-5, -1)
	_, checks["b ε=0"] = LaplaceScale(0, 1)
	_, checks["b Δ=NaN"] = LaplaceScale(1, nan)
	_, checks["δ σ=0"] = AnalyticGaussianDelta(1, 0, 1)
	_, checks["dg Δ=1.5"] = DiscreteGaussianDelta(1, 3, 1.5)
	for name, err := range checks {
		if err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// CKS 2020 Theorem 7 in tail form: for integer Δ,
// δ = P[Y > εσ²/Δ − Δ/2] − e^ε P[Y > εσ²/Δ + Δ/2], Y ~ N_ℤ(0, σ²): an
// independent computation of DiscreteGaussianDelta. The result is also within
// 10% of the continuous analytic δ (CKS Fig. 1).
func TestDiscreteGaussianDelta(t *testing.T) {
	for _, c := range []struct{ eps, sigma, sens float64 }{{1, 2, 1}, {1, 5, 1}, {0.5, 3, 2}, {2, 20, 3}} {
		lim := int(60*c.sigma) + 10
		var z float64
		pmf := func(y int) float64 { return math.Exp(-float64(y*y) / (2 * c.sigma * c.sigma)) }
		for y := -lim; y <= lim; y++ {
			z += pmf(y)
		}
		tail := func(x float64) float64 { // P[Y > x]
			var s float64
			for y := int(math.Floor(x)) + 1; y <= lim; y++ {
				s += pmf(y)
			}
			return s / z
		}
		m := c.eps * c.sigma * c.sigma / c.sens
		want := tail(m-c.sens/2) - math.Exp(c.eps)*tail(m+c.sens/2)
		got, err := DiscreteGaussianDelta(c.eps, c.sigma, c.sens)
		if err != nil {
			t.Fatal(err)
		}
		if !near(got, want, 1e-9) {
			t.Errorf("%+v: δ = %v, Theorem 7 gives %v", c, got, want)
		}
		dc, _ := AnalyticGaussianDelta(c.eps, c.sigma, c.sens)
		if !near(got, dc, 0.1) {
			t.Errorf("%+v: discrete δ %v vs continuous %v", c, got, dc)
		}
	}
	s, err := DiscreteGaussianSigma(1, 1e-5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := DiscreteGaussianDelta(1, s, 1); d > 1e-5 {
		t.Fatalf("σ=%v gives δ=%v", s, d)
	}
	if d, _ := DiscreteGaussianDelta(1, s*(1-1e-6), 1); d <= 1e-5 {
		t.Fatalf("σ=%v not minimal", s)
	}
}

// TestZCDPRoundsUp checks that the ρ of a composition and of the pure and
// Gaussian-DP conversions is never below its exact rational value, on
// inputs whose float arithmetic rounds down (0.1 + 0.2 rounds to nearest,
// which is below the rational sum of the two floats here).
func TestZCDPRoundsUp(t *testing.T) {
	exact := func(xs ...float64) *big.Rat {
		s := new(big.Rat)
		for _, x := range xs {
			s.Add(s, new(big.Rat).SetFloat64(x))
		}
		return s
	}
	below := 0
	for _, c := range [][2]float64{{0.1, 0.2}, {1e-3, 0.7}, {0.3, 0.6}, {1.0 / 3, 1.0 / 7}} {
		z, err := ComposeZCDP(ZCDP{c[0]}, ZCDP{c[1]})
		if err != nil {
			t.Fatal(err)
		}
		if new(big.Rat).SetFloat64(z.Rho).Cmp(exact(c[0], c[1])) < 0 {
			t.Errorf("ComposeZCDP(%v, %v) = %v, below the exact sum", c[0], c[1], z.Rho)
		}
		if new(big.Rat).SetFloat64(c[0]+c[1]).Cmp(exact(c[0], c[1])) < 0 {
			below++
		}
	}
	if below == 0 {
		t.Fatal("no case where the float sum rounds down: the test has no power")
	}
	for _, x := range []float64{0.1, 0.3, 1.0 / 3, 0.7} {
		sq := new(big.Rat).SetFloat64(x)
		sq.Mul(sq, sq).Quo(sq, big.NewRat(2, 1))
		p, _ := PureToZCDP(x)
		g, _ := GDPToZCDP(x)
		for _, z := range []ZCDP{p, g} {
			if new(big.Rat).SetFloat64(z.Rho).Cmp(sq) < 0 {
				t.Errorf("ρ(%v) = %v is below x²/2", x, z.Rho)
			}
			if z.Rho > x*x/2*(1+1e-15) {
				t.Errorf("ρ(%v) = %v is not x²/2 = %v rounded up", x, z.Rho, x*x/2)
			}
		}
	}
	if _, err := GDPToZCDP(math.NaN()); err == nil {
		t.Error("GDPToZCDP(NaN) accepted")
	}
	// The Gaussian mechanism's ρ = Δ²/(2σ²) and T steps of it: exact
	// from the floats, rounded up (the float formula rounds down on some
	// of these pairs, which gives the check its power).
	down := 0
	for _, c := range [][2]float64{{0.1, 0.3}, {1e-3, 0.07}, {1.0 / 3, 1.0 / 7}, {0.7, 2.9}, {3e-5, 0.011}} {
		sens, sigma := c[0], c[1]
		want := new(big.Rat).SetFloat64(sens)
		want.Mul(want, want)
		s2 := new(big.Rat).SetFloat64(sigma)
		want.Quo(want, s2.Mul(s2, s2))
		want.Quo(want, big.NewRat(2, 1))
		rho, err := GaussianZCDP(sigma, sens)
		if err != nil {
			t.Fatal(err)
		}
		if r := sens / sigma; new(big.Rat).SetFloat64(r*r/2).Cmp(want) < 0 {
			down++
		}
		f, _ := want.Float64()
		if new(big.Rat).SetFloat64(rho).Cmp(want) < 0 || rho > f*(1+0x1p-52) {
			t.Errorf("GaussianZCDP(σ=%v, Δ=%v) = %v, want the exact %v rounded up", sigma, sens, rho, want.FloatString(25))
		}
		steps, err := GaussianSteps(sigma, sens, 7, 1e-6)
		if err != nil {
			t.Fatal(err)
		}
		want.Mul(want, big.NewRat(7, 1))
		if f, _ = want.Float64(); new(big.Rat).SetFloat64(steps.Rho).Cmp(want) < 0 || steps.Rho > f*(1+4*0x1p-52) {
			t.Errorf("GaussianSteps(σ=%v, Δ=%v, 7).Rho = %v, want 7Δ²/(2σ²) = %v rounded up", sigma, sens, steps.Rho, want.FloatString(25))
		}
	}
	if down == 0 {
		t.Error("no Gaussian pair where the float formula rounds down: the check has no power")
	}
}

func TestZCDPConversions(t *testing.T) {
	z, _ := PureToZCDP(0.5)
	if z.Rho != 0.125 {
		t.Fatalf("ρ = %v", z.Rho)
	}
	for _, rho := range []float64{0.001, 0.1, 1, 10} {
		z := ZCDP{rho}
		std, _ := z.Epsilon(1e-6)
		if want := rho + 2*math.Sqrt(rho*math.Log(1e6)); !near(std, want, 1e-12) {
			t.Fatalf("standard ε = %v want %v", std, want)
		}
		imp, _ := z.EpsilonImproved(1e-6)
		if imp > std || imp < 0.5*std {
			t.Errorf("ρ=%v: improved ε %v vs standard %v", rho, imp, std)
		}
		// The improved conversion on the RDP grid can only be worse than
		// the continuous optimum.
		r, _ := ZCDPToRDP(z, DefaultOrders())
		g, _, _ := r.Epsilon(1e-6)
		if g < imp-1e-9 {
			t.Errorf("ρ=%v: grid %v below continuous optimum %v", rho, g, imp)
		}
		// The classic RDP conversion on a continuous α is exactly the standard zCDP one.
		c, _, _ := r.EpsilonClassic(1e-6)
		if c < std-1e-9 {
			t.Errorf("ρ=%v: classic RDP %v below ρ+2√(ρ ln 1/δ) = %v", rho, c, std)
		}
	}
}

// Seed Eq. (7)-(8): valid, but α of Eq. (8) is not the minimiser, so the
// published ε is ≥ the zCDP one, which is ≥ the improved one.
func TestGaussianSteps(t *testing.T) {
	r, err := GaussianSteps(10, 1, 100, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if !near(r.Rho, 0.5, 1e-12) {
		t.Fatalf("ρ = %v", r.Rho)
	}
	l := math.Log(1e5)
	if want := 1 + math.Sqrt(1+2*100*l/100); !near(r.AlphaClassic, want, 1e-12) {
		t.Fatalf("α = %v want %v", r.AlphaClassic, want)
	}
	if want := r.AlphaClassic*0.5 + l/(r.AlphaClassic-1); !near(r.EpsilonRDPClassic, want, 1e-12) {
		t.Fatalf("Eq.7 ε = %v want %v", r.EpsilonRDPClassic, want)
	}
	if !(r.EpsilonExact < r.EpsilonRDP && r.EpsilonRDP < r.EpsilonZCDP && r.EpsilonZCDP <= r.EpsilonRDPClassic) {
		t.Fatalf("ordering violated: %+v", r)
	}
	// The exact ε inverts the analytic Gaussian with sensitivity √T·Δ = 10.
	if d, _ := AnalyticGaussianDelta(r.EpsilonExact, 10, 10); !near(d, 1e-5, 1e-9) {
		t.Fatalf("δ at exact ε = %v", d)
	}
}

// Known answer: Opacus / TF Privacy give ε ≈ 7.329 for σ=1.5, q=0.04 (batch
// 2400 of 60000), 2250 steps (90 epochs), δ=1e-5 on the default orders with
// the improved conversion.
func TestSubsampledGaussianKnownAnswer(t *testing.T) {
	e, _, err := SubsampledGaussianEpsilon(AddRemove, 0.04, 1.5, 2250, 1e-5, nil)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(e-7.329) > 0.001 {
		t.Fatalf("ε = %v, want ≈ 7.329", e)
	}
}

func TestSubsampledGaussianConsistency(t *testing.T) {
	// q = 1 is the plain Gaussian.
	r, _ := SubsampledGaussianRDP(1, 2, 3, []float64{1.5, 2, 7})
	for i, a := range r.Orders {
		if !near(r.Epsilons[i], 3*a/8, 1e-12) {
			t.Errorf("q=1 α=%v: %v", a, r.Epsilons[i])
		}
	}
	// The fractional series agrees with the exact integer sum as α → integer.
	for _, q := range []float64{0.01, 0.1, 0.5} {
		for _, a := range []int{2, 3, 10, 32} {
			ex := logAInt(q, 1.3, a)
			fr := logAFrac(q, 1.3, float64(a)+1e-9)
			if math.Abs(ex-fr) > 1e-6*math.Max(1, math.Abs(ex)) {
				t.Errorf("q=%v α=%d: integer %v vs fractional %v", q, a, ex, fr)
			}
		}
	}
	// Subsampling amplifies: never worse than the full-batch Gaussian.
	r2, _ := SubsampledGaussianRDP(0.05, 1.1, 1, DefaultOrders())
	for i, a := range r2.Orders {
		if r2.Epsilons[i] > a/(2*1.1*1.1)+1e-12 {
			t.Errorf("α=%v: subsampled %v > full %v", a, r2.Epsilons[i], a/(2*1.1*1.1))
		}
	}
}

func TestSubsampledGaussianSigmaRoundTrip(t *testing.T) {
	if testing.Short() {
		t.Skip("solver round trip is slow")
	}
	s, err := SubsampledGaussianSigma(AddRemove, 2, 1e-5, 0.01, 1000, nil)
	if err != nil {
		t.Fatal(err)
	}
	e, _, _ := SubsampledGaussianEpsilon(AddRemove, 0.01, s, 1000, 1e-5, nil)
	e2, _, _ := SubsampledGaussianEpsilon(AddRemove, 0.01, s*(1-1e-5), 1000, 1e-5, nil)
	if e > 2 || e2 <= 2 {
		t.Fatalf("σ=%v: ε=%v, ε(σ−)=%v", s, e, e2)
	}
}

func TestCompositions(t *testing.T) {
	b, err := BasicComposition(EpsDelta{0.5, 1e-6}, EpsDelta{0.25, 2e-6})
	if err != nil || b.Epsilon != 0.75 || !near(b.Delta, 3e-6, 1e-12) {
		t.Fatalf("basic %+v %v", b, err)
	}
	a, err := AdvancedComposition(0.1, 0, 100, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if want := 0.1*math.Sqrt(200*math.Log(1e5)) + 10*math.Expm1(0.1); !near(a.Epsilon, want, 1e-12) || a.Delta != 1e-5 {
		t.Fatalf("advanced %+v want ε=%v", a, want)
	}
	o, err := OptimalComposition(0.1, 0, 100, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if o >= a.Epsilon || o >= 10 || o <= 0 {
		t.Fatalf("optimal ε %v not below advanced %v and basic 10", o, a.Epsilon)
	}
	// Independent computation (Python, exact binomial coefficients and
	// bisection on the KOV profile): 4.306791372516512.
	if !near(o, 4.306791372516512, 1e-8) {
		t.Fatalf("optimal ε = %.12g, want 4.306791372516512", o)
	}
	// k = 1: the optimal composition of one ε-DP mechanism is ε at δ → 0.
	o1, _ := OptimalComposition(0.7, 0, 1, 1e-12)
	if !near(o1, 0.7, 1e-6) {
		t.Fatalf("k=1: %v", o1)
	}
}

// KOV 2015 Theorem 3.3 in closed form: at ε_g = (k−2i)ε,
// δ = Σ_{l<i} C(k,l)(e^{(k−l)ε} − e^{(k−2i+l)ε})/(1+e^ε)^k.
func TestKOVClosedForm(t *testing.T) {
	eps, k := 0.3, 12
	for i := 0; i <= k/2; i++ {
		var want float64
		for l := 0; l < i; l++ {
			c := math.Exp(logBinom(float64(k), float64(l)))
			want += c * (math.Exp(float64(k-l)*eps) - math.Exp(float64(k-2*i+l)*eps))
		}
		want /= math.Pow(1+math.Exp(eps), float64(k))
		got := kovDeltaRR(eps, k, float64(k-2*i)*eps)
		if math.Abs(got-want) > 1e-12 {
			t.Errorf("i=%d: δ %v want %v", i, got, want)
		}
	}
}

func TestBinomialMechanism(t *testing.T) {
	n, err := BinomialDPPP(1, 1e-5, 1)
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(math.Ceil(18 * math.Log(2e5))); n != want {
		t.Fatalf("DPPP n = %d want %d", n, want)
	}
	for _, c := range []struct {
		eps, delta float64
		sens       int64
	}{{1, 1e-5, 1}, {0.5, 1e-6, 1}, {2, 1e-5, 2}} {
		nd, err := BinomialDPPP(c.eps, c.delta, int(c.sens))
		if err != nil {
			t.Fatal(err)
		}
		nc, err := BinomialCPSGD(c.eps, c.delta, float64(c.sens))
		if err != nil {
			t.Fatal(err)
		}
		// Both published bounds must be valid: the exact δ at their n is
		// below the target (independent computation from the pmf).
		for name, n := range map[string]int64{"DPPP": nd, "cpSGD": nc} {
			d, err := BinomialExactDelta(n, c.eps, c.sens)
			if err != nil {
				t.Fatal(err)
			}
			if d > c.delta {
				t.Errorf("%+v %s n=%d: exact δ %v > %v", c, name, n, d, c.delta)
			}
		}
		if e, err := CPSGDEpsilon(CPSGDParams{N: nc, P: 0.5, S: 1, Dim: 1, Delta1: float64(c.sens), Delta2: float64(c.sens), DeltaI: float64(c.sens)}, c.delta); err != nil || e > c.eps {
			t.Errorf("cpSGD ε at n=%d: %v %v", nc, e, err)
		}
		if e, err := CPSGDEpsilon(CPSGDParams{N: nc - 1, P: 0.5, S: 1, Dim: 1, Delta1: float64(c.sens), Delta2: float64(c.sens), DeltaI: float64(c.sens)}, c.delta); err == nil && e <= c.eps {
			t.Errorf("cpSGD n=%d not minimal", nc)
		}
	}
	if _, err := BinomialDPPP(1, 1e-5, 0); err == nil {
		t.Error("sensitivity 0 accepted")
	}
}

func TestDDG(t *testing.T) {
	// One party: τ = 0 and the bound is the Gaussian α Δ²/(2σ²).
	r, err := DDGRDP(DDGParams{Sigma: 3, Parties: 1, Dim: 4, L1: 2, L2: math.Sqrt2}, []float64{2, 8})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range r.Orders {
		if !near(r.Epsilons[i], a*2/(2*9), 1e-12) {
			t.Errorf("α=%v: %v", a, r.Epsilons[i])
		}
	}
	// Small σ: τ is not negligible and the bound exceeds the naive one.
	if tau := DDGTau(0.5, 10); tau < 1e-3 {
		t.Fatalf("τ(0.5, 10) = %v", tau)
	}
	r2, _ := DDGRDP(DDGParams{Sigma: 0.5, Parties: 10, Dim: 100, L1: 2, L2: math.Sqrt2}, []float64{2})
	if naive := 2 * 2 / (2 * 10 * 0.25); r2.Epsilons[0] <= naive {
		t.Fatalf("τ correction missing: %v ≤ %v", r2.Epsilons[0], naive)
	}
	if _, err := DDGRDP(DDGParams{Sigma: 0.4, Parties: 2, Dim: 1, L1: 1, L2: 1}, []float64{2}); err == nil {
		t.Error("σ < 1/2 accepted")
	}
}
func TestBinomialExactN(t *testing.T) {
	for _, c := range []struct {
		eps, delta float64
		sens       int64
	}{{1, 1e-5, 1}, {0.5, 1e-6, 2}} {
		n, err := BinomialExactN(c.eps, c.delta, c.sens)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := BinomialExactDelta(n, c.eps, c.sens)
		if d > c.delta {
			t.Fatalf("%+v: n=%d δ=%v", c, n, d)
		}
		nc, _ := BinomialCPSGD(c.eps, c.delta, float64(c.sens))
		if n > nc {
			t.Errorf("%+v: exact n=%d above cpSGD %d", c, n, nc)
		}
		if c.sens == 1 {
			nd, _ := BinomialDPPP(c.eps, c.delta, 1)
			if n > nd {
				t.Errorf("%+v: exact n=%d above DPPP %d", c, n, nd)
			}
		}
	}
}

// Independent check of Mironov-Talwar-Zhang: A_α = ∫ μ₀ (μ/μ₀)^α with
// μ₀ = N(0, σ²), μ = (1−q)μ₀ + qN(1, σ²), by Simpson's rule on a fine grid,
// for integer and fractional orders.
func TestSubsampledGaussianNumericalIntegral(t *testing.T) {
	for _, c := range []struct{ q, sigma, alpha float64 }{
		{0.01, 1, 2}, {0.01, 1, 2.5}, {0.1, 2, 8}, {0.1, 2, 7.3}, {0.04, 1.5, 3.9}, {0.3, 0.8, 4}, {0.3, 0.8, 1.5},
	} {
		s := c.sigma
		lo, hi := -30*s, 30*s+1
		const n = 200000
		h := (hi - lo) / n
		var sum float64
		for i := 0; i <= n; i++ {
			z := lo + float64(i)*h
			// ratio μ/μ₀ = 1 − q + q·exp((2z − 1)/(2σ²))
			r := 1 - c.q + c.q*math.Exp((2*z-1)/(2*s*s))
			f := math.Exp(-z*z/(2*s*s)) / (s * math.Sqrt(2*math.Pi)) * math.Pow(r, c.alpha)
			w := 2.0
			if i == 0 || i == n {
				w = 1
			} else if i%2 == 1 {
				w = 4
			}
			sum += w * f
		}
		want := math.Log(sum*h/3) / (c.alpha - 1)
		r, err := SubsampledGaussianRDP(c.q, c.sigma, 1, []float64{c.alpha})
		if err != nil {
			t.Fatal(err)
		}
		if !near(r.Epsilons[0], want, 1e-6) {
			t.Errorf("%+v: ε(α) = %.10g, integral gives %.10g", c, r.Epsilons[0], want)
		}
	}
}

// PRIVACY-NOTES item 14: the DPPP seed's Theorem 1 checked against the exact
// privacy profile of the binomial mechanism over a grid of (ε, δ): it is
// valid everywhere on the grid, and never smaller than the exact n.
func TestDPPPTheorem1AgainstExactProfile(t *testing.T) {
	for _, e := range []float64{0.05, 0.1, 0.3, 0.5, 1, 2, 4, 8} {
		for _, d := range []float64{1e-2, 1e-3, 1e-5, 1e-8, 1e-10} {
			n, err := BinomialDPPP(e, d, 1)
			if err != nil {
				t.Fatal(err)
			}
			x, err := BinomialExactDelta(n, e, 1)
			if err != nil {
				t.Fatal(err)
			}
			if x > d {
				t.Errorf("ε=%v δ=%v: Theorem 1's n=%d has exact δ=%v", e, d, n, x)
			}
			if ne, _ := BinomialExactN(e, d, 1); ne > n {
				t.Errorf("ε=%v δ=%v: exact n=%d above Theorem 1's %d", e, d, ne, n)
			}
		}
	}
}

// Values computed independently in Python with exact integer binomial
// coefficients: Σ_k max(0, b(k) − e^ε b(k−Δ)).
func TestBinomialExactDeltaKnownAnswers(t *testing.T) {
	for _, c := range []struct {
		n    int64
		eps  float64
		sens int64
		want float64
	}{
		{61, 1, 1, 1.2024487047718151e-05},
		{62, 1, 1, 9.627338180464878e-06},
		{229, 1, 2, 1.0166052809230024e-05},
		{230, 1, 2, 9.741885557566296e-06},
		{230, 1, 1, 1.3200839500140796e-14},
	} {
		got, err := BinomialExactDelta(c.n, c.eps, c.sens)
		if err != nil || !near(got, c.want, 1e-9) {
			t.Errorf("%+v: δ = %v (%v)", c, got, err)
		}
	}
}

// AddGaussian is a discrete Gaussian on a grid with spacing g ≤ 2^-21·σ,
// so in grid units the sensitivity is Δ/g ≳ 2^21·Δ/σ. The discrete privacy
// profile converges to the continuous one as the grid refines (relative
// error ~k⁻² when σ and Δ are scaled by k), and GaussianSigma keeps a margin
// (it charges slack GridSlackRatio·σ while the true slack is at most half
// that) much larger than the remaining discretisation error.
func TestDiscreteProfileConvergesAndMarginCoversIt(t *testing.T) {
	prev := math.Inf(1)
	for _, k := range []float64{10, 100, 1000} {
		s, d := 3.7306*k, k
		dd, err := DiscreteGaussianDelta(1, s, d)
		if err != nil {
			t.Fatal(err)
		}
		dc, _ := AnalyticGaussianDelta(1, s, d)
		rel := math.Abs(dd-dc) / dc
		if rel >= prev/10 {
			t.Errorf("k=%v: relative gap %v not shrinking (previous %v)", k, rel, prev)
		}
		prev = rel
	}
	if prev > 1e-7 {
		t.Errorf("relative gap at k=1000 is %v", prev)
	}
	// Small ε (σ ≫ Δ): the gap is governed by σ in grid steps, already
	// below 1e-6 at σ ≈ 2400 steps with Δ = 10 steps (AddGaussian has
	// σ ≥ 2^21 steps).
	for _, c := range []struct{ eps, delta float64 }{{0.01, 1e-5}, {0.001, 1e-3}, {0.1, 1e-8}} {
		s, _ := AnalyticGaussianSigma(c.eps, c.delta, 1)
		dd, err := DiscreteGaussianDelta(c.eps, 10*s, 10)
		if err != nil {
			t.Fatal(err)
		}
		dc, _ := AnalyticGaussianDelta(c.eps, 10*s, 10)
		if rel := math.Abs(dd-dc) / dc; rel > 1e-6 {
			t.Errorf("%+v: relative gap %v at Δ = 10 steps", c, rel)
		}
	}
	for _, c := range []struct{ eps, delta float64 }{{1, 1e-5}, {0.1, 1e-6}, {8, 1e-10}} {
		s, _ := GaussianSigma(c.eps, c.delta, 1)
		worst := analyticDelta(c.eps, 1/s+noise.GridSlackRatio/2) // largest true slack
		if margin := (c.delta - worst) / c.delta; margin < 1e-6 {
			t.Errorf("%+v: margin %v too small to cover discretisation", c, margin)
		}
	}
}

// The classic calibration (with slack) is never below GaussianSigma, so the
// argument for the grid sampler carries over to it.
func TestClassicAboveAnalyticWithSlack(t *testing.T) {
	for _, e := range []float64{0.01, 0.1, 0.5, 0.9, 0.999} {
		for _, d := range []float64{1e-3, 1e-6, 1e-12} {
			c, err := ClassicGaussianSigma(e, d, 1)
			if err != nil {
				t.Fatal(err)
			}
			g, _ := GaussianSigma(e, d, 1)
			if c < g {
				t.Errorf("ε=%v δ=%v: classic %v < analytic %v", e, d, c, g)
			}
		}
	}
}

// Monotonicity properties that any correct accountant has.
func TestMonotonicity(t *testing.T) {
	prev := math.Inf(1)
	for _, e := range []float64{0.05, 0.2, 1, 3, 10} {
		s, err := GaussianSigma(e, 1e-6, 1)
		if err != nil || s >= prev {
			t.Errorf("GaussianSigma not decreasing in ε at %v: %v (%v)", e, s, err)
		}
		prev = s
	}
	prev = math.Inf(1)
	for _, d := range []float64{1e-12, 1e-8, 1e-5, 1e-2} {
		s, _ := GaussianSigma(1, d, 1)
		if s >= prev {
			t.Errorf("GaussianSigma not decreasing in δ at %v", d)
		}
		prev = s
	}
	prev = math.Inf(1)
	for _, s := range []float64{0.5, 1, 2, 5, 20} {
		d, _ := AnalyticGaussianDelta(1, s, 1)
		if d >= prev {
			t.Errorf("δ not decreasing in σ at %v", s)
		}
		prev = d
	}
	prevE := 0.0
	for _, q := range []float64{0.001, 0.01, 0.05, 0.2, 1} {
		e, _, err := SubsampledGaussianEpsilon(AddRemove, q, 1.2, 100, 1e-5, nil)
		if err != nil || e <= prevE {
			t.Errorf("subsampled ε not increasing in q at %v: %v (%v)", q, e, err)
		}
		prevE = e
	}
	prevE = 0
	for _, steps := range []int{1, 10, 100, 1000} {
		e, _, _ := SubsampledGaussianEpsilon(AddRemove, 0.01, 1.2, steps, 1e-5, nil)
		if e <= prevE {
			t.Errorf("subsampled ε not increasing in steps at %v", steps)
		}
		prevE = e
	}
}

// cpSGD Theorem 1 known answers, from an independent public instantiation
// of the theorem (δ = 1e-6, d = 1, s = 1, Δ1 = Δ2 = Δ∞ = 1): for p = ½ the
// smallest n for ε = 1 is 1483 and ε(n = 2000) ∈ (0.6375, 0.6376); for p = ¼
// the smallest n is 1978 (where the side condition np(1−p) ≥ 23 ln(10d/δ)
// starts to hold).
func TestCPSGDKnownAnswers(t *testing.T) {
	if n, err := BinomialCPSGD(1, 1e-6, 1); err != nil || n != 1483 {
		t.Errorf("n = %d (%v), want 1483", n, err)
	}
	unit := CPSGDParams{N: 2000, P: 0.5, S: 1, Dim: 1, Delta1: 1, Delta2: 1, DeltaI: 1}
	if e, err := CPSGDEpsilon(unit, 1e-6); err != nil || e <= 0.6375 || e >= 0.6376 {
		t.Errorf("ε(2000) = %v (%v)", e, err)
	}
	q := unit
	q.P = 0.25
	q.N = 1977
	if _, err := CPSGDEpsilon(q, 1e-6); err == nil {
		t.Error("p=¼, n=1977 should violate the side condition")
	}
	q.N = 1978
	if e, err := CPSGDEpsilon(q, 1e-6); err != nil || e > 1 {
		t.Errorf("p=¼, n=1978: ε = %v (%v)", e, err)
	}
}

func TestDDGSigma(t *testing.T) {
	p := DDGParams{Parties: 10, Dim: 5, L1: 2, L2: math.Sqrt2}
	s, err := DDGSigma(1, 1e-5, p, nil)
	if err != nil {
		t.Fatal(err)
	}
	p.Sigma = s
	r, _ := DDGRDP(p, DefaultOrders())
	if e, _, _ := r.Epsilon(1e-5); e > 1 {
		t.Fatalf("σ=%v gives ε=%v", s, e)
	}
	p.Sigma = s * (1 - 1e-4)
	r, _ = DDGRDP(p, DefaultOrders())
	if e, _, _ := r.Epsilon(1e-5); e <= 1 {
		t.Fatalf("σ=%v not minimal", s)
	}
	// The total noise √n·σ is close to (slightly above) the central Gaussian's
	// RDP calibration for the same sensitivity when τ is negligible.
	z, _ := ZCDPToRDP(ZCDP{2 / (2 * 10 * s * s)}, DefaultOrders())
	e, _, _ := z.Epsilon(1e-5)
	if e > 1+1e-6 {
		t.Errorf("central equivalent ε = %v > 1", e)
	}
}

// TestSubsampledReplaceOne checks the replace-one curve: it is never below
// the add/remove curve, and without sampling (q = 1) it is a valid bound on
// the exact replace-one RDP of the Gaussian mechanism, whose sensitivity is
// twice the per-record bound: α·2²/(2σ²) = 2α/σ².
func TestSubsampledReplaceOne(t *testing.T) {
	orders := []float64{1.5, 2, 3, 8, 32}
	for _, q := range []float64{0.01, 0.1, 1} {
		ar, err := SubsampledGaussianRDP(q, 1.3, 1, orders)
		if err != nil {
			t.Fatal(err)
		}
		ro, err := SubsampledGaussianRDPFor(ReplaceOne, q, 1.3, 1, orders)
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range orders {
			if ro.Epsilons[i] < ar.Epsilons[i] {
				t.Errorf("q=%g α=%g: replace-one %g < add/remove %g", q, a, ro.Epsilons[i], ar.Epsilons[i])
			}
			if exact := 2 * a / (1.3 * 1.3); q == 1 && ro.Epsilons[i] < exact*(1-1e-12) {
				t.Errorf("α=%g: replace-one bound %g below the exact %g", a, ro.Epsilons[i], exact)
			}
		}
	}
	if _, err := ParseNeighbours("swap"); err == nil {
		t.Error("unknown relation accepted")
	}
	if _, err := SubsampledGaussianRDPReplaceOne(0.1, 1, 1, []float64{1}); err == nil {
		t.Error("order 1 accepted")
	}
}
