package accounting

import (
	"math"
	"testing"
)

// TestBinomialDPPPGroup checks the group-privacy conversion against a
// hand computation, against BinomialDPPP at S = 1, and, independently of
// any theorem, that the n it returns makes the mechanism (ε, δ)-DP by the
// exact privacy profile over all shifts 1..S (BinomialExactDelta).
func TestBinomialDPPPGroup(t *testing.T) {
	// ε = 0.5, δ = 1e-6, S = 3: ε₁ = 1/6, δ₁ = 1e-6/(3e^(1/3)) = 2.38844e-7,
	// (2+ε₁)/ε₁ = 13, n = ⌈2·13²·ln(2/δ₁)⌉ = ⌈338·15.94063⌉ = 5388 (without
	// the e^((S−1)ε₁) factor it would be 5276).
	n, err := BinomialDPPPGroup(0.5, 1e-6, 3)
	if err != nil || n != 5388 {
		t.Fatalf("BinomialDPPPGroup(0.5, 1e-6, 3) = %d, %v; want 5388", n, err)
	}
	for _, c := range []struct {
		eps, delta float64
		sens       int64
	}{{1, 1e-5, 1}, {0.5, 1e-6, 3}, {2, 1e-9, 7}, {0.2, 1e-4, 2}} {
		n, err := BinomialDPPPGroup(c.eps, c.delta, c.sens)
		if err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
		if c.sens == 1 {
			if one, _ := BinomialDPPP(c.eps, c.delta, 1); one != n {
				t.Errorf("%+v: %d flips, BinomialDPPP gives %d", c, n, one)
			}
		}
		for s := int64(1); s <= c.sens; s++ {
			d, err := BinomialExactDelta(n, c.eps, s)
			if err != nil {
				t.Fatal(err)
			}
			if d > c.delta {
				t.Errorf("%+v: %d flips have exact δ = %g > %g at shift %d", c, n, d, c.delta, s)
			}
		}
	}
	for _, sens := range []int64{0, -1} {
		if _, err := BinomialDPPPGroup(1, 1e-5, sens); err == nil {
			t.Errorf("sensitivity %d accepted", sens)
		}
	}
}

// TestGaussianStepsOnGrid checks that the grid slack is added to the
// sensitivity, 2⁻²⁰·σ, and nothing else: the result is GaussianSteps at
// Δ + 2⁻²⁰σ, and each ε is above the ideal Gaussian's.
func TestGaussianStepsOnGrid(t *testing.T) {
	got, err := GaussianStepsOnGrid(10, 1, 100, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	want, err := GaussianSteps(10, 1+10*math.Ldexp(1, -20), 100, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("on grid %+v, want %+v", got, want)
	}
	ideal, err := GaussianSteps(10, 1, 100, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	if !(got.EpsilonExact > ideal.EpsilonExact && got.EpsilonRDP > ideal.EpsilonRDP && got.Rho > ideal.Rho) {
		t.Errorf("slack did not raise ε: on grid %+v, ideal %+v", got, ideal)
	}
	if _, err := GaussianStepsOnGrid(0, 1, 100, 1e-5); err == nil {
		t.Error("σ = 0 accepted")
	}
}
