package accounting

import (
	"math"
	"math/big"
	"testing"
)

func TestGDPMu(t *testing.T) {
	if mu, err := GDPMu(3, 4); err != nil || mu != 5 {
		t.Fatalf("GDPMu(3, 4) = %v, %v", mu, err)
	}
	// Rounded up, and the smallest float64 that is: compared exactly.
	for _, rs := range [][]float64{{0.1, 0.2}, {0.3, 0.3, 0.3}, {1e-3, 2, 0.7, 1e-8}, {math.Pi}} {
		mu, err := GDPMu(rs...)
		if err != nil {
			t.Fatal(err)
		}
		sum := new(big.Rat)
		for _, r := range rs {
			sum.Add(sum, sqRat(r))
		}
		if sqRat(mu).Cmp(sum) < 0 || sqRat(math.Nextafter(mu, 0)).Cmp(sum) >= 0 {
			t.Errorf("GDPMu%v = %v is not √Σ rounded up", rs, mu)
		}
	}
	for _, bad := range [][]float64{nil, {-1}, {math.NaN()}, {1, math.Inf(1)}} {
		if _, err := GDPMu(bad...); err == nil {
			t.Errorf("GDPMu%v accepted", bad)
		}
	}
}

// T equal Gaussian steps are one Gaussian with √T·Δ: GaussianSteps' exact ε
// is GDPEpsilon of the composed μ, and a two-block release composes the
// same way as its whitened single vector.
func TestGDPComposition(t *testing.T) {
	r, err := GaussianSteps(10, 1, 100, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	ratios := make([]float64, 100)
	for i := range ratios {
		ratios[i] = 0.1
	}
	mu, _ := GDPMu(ratios...)
	if !near(mu, 1, 1e-15) || !near(r.Mu, 1, 1e-15) {
		t.Fatalf("μ = %v, GaussianSteps μ = %v, want 1", mu, r.Mu)
	}
	e, _ := GDPEpsilon(r.Mu, 1e-5)
	if e != r.EpsilonExact || !(e < r.EpsilonRDP) {
		t.Errorf("exact ε %v, GaussianSteps %v, RDP %v", e, r.EpsilonExact, r.EpsilonRDP)
	}
	// Two blocks (Δ1, σ1), (Δ2, σ2): √((Δ1/σ1)² + (Δ2/σ2)²).
	mu2, _ := GDPMu(0.3/0.5, 0.4/0.5)
	if !near(mu2, 1, 1e-15) {
		t.Errorf("two blocks μ = %v", mu2)
	}
}

func TestGDPDeltaEpsilonMuFor(t *testing.T) {
	for _, c := range []struct{ eps, delta float64 }{{1, 1e-5}, {0.1, 1e-6}, {5, 1e-10}, {0.5, 0.01}} {
		mu, err := GDPMuFor(c.eps, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := GDPDelta(mu, c.eps)
		over, _ := GDPDelta(mu*(1+1e-11), c.eps)
		if !(d <= c.delta) || !(over > c.delta) {
			t.Errorf("(%v, %v): μ = %v gives δ = %v; 1e-11 more gives %v", c.eps, c.delta, mu, d, over)
		}
		// GDPEpsilon inverts GDPDelta, rounded up.
		e, _ := GDPEpsilon(mu, c.delta)
		if !(e >= c.eps*(1-1e-11)) || !near(e, c.eps, 1e-10) {
			t.Errorf("(%v, %v): GDPEpsilon = %v", c.eps, c.delta, e)
		}
		if d2, _ := GDPDelta(mu, e); !(d2 <= c.delta) {
			t.Errorf("(%v, %v): δ at the rounded-up ε is %v", c.eps, c.delta, d2)
		}
		// σ for one release of sensitivity 1 agrees with the analytic Gaussian.
		s, _ := AnalyticGaussianSigma(c.eps, c.delta, 1)
		if !near(1/mu, s, 1e-11) {
			t.Errorf("1/μ = %v vs analytic σ %v", 1/mu, s)
		}
	}
	if d, err := GDPDelta(0, 1); d != 0 || err != nil {
		t.Errorf("μ = 0: %v %v", d, err)
	}
	if e, err := GDPEpsilon(0, 1e-5); e != 0 || err != nil {
		t.Errorf("μ = 0: %v %v", e, err)
	}
	// ε = 0: δ is the total variation distance 2Φ(μ/2) − 1.
	if d, _ := GDPDelta(1, 0); !near(d, 2*normCDF(0.5)-1, 1e-14) {
		t.Errorf("δ(0) = %v", d)
	}
	for _, bad := range [][2]float64{{-1, 1}, {math.NaN(), 1}, {1, -1}, {1, math.Inf(1)}} {
		if _, err := GDPDelta(bad[0], bad[1]); err == nil {
			t.Errorf("GDPDelta%v accepted", bad)
		}
	}
	if _, err := GDPMuFor(0, 1e-5); err == nil {
		t.Error("ε = 0 accepted")
	}
	if _, err := GDPEpsilon(1, 1); err == nil {
		t.Error("δ = 1 accepted")
	}
}

// Mixtures of Laplace and Gaussian releases: the improved zCDP conversion
// is never looser than the standard one.
func TestMixtureImprovedConversion(t *testing.T) {
	lap, _ := PureToZCDP(0.3)
	g, _ := GaussianZCDP(4, 1)
	z, _ := ComposeZCDP(lap, ZCDP{g})
	std, _ := z.Epsilon(1e-5)
	imp, _ := z.EpsilonImproved(1e-5)
	if !(imp < std) {
		t.Errorf("improved %v not below standard %v", imp, std)
	}
}
