package audit

import (
	"context"
	"math"
	"os"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
)

func TestRegIncBetaClosedForms(t *testing.T) {
	for _, x := range []float64{0.001, 0.1, 0.37, 0.5, 0.9, 0.999} {
		for _, c := range []struct{ a, b, want float64 }{
			{1, 1, x},
			{3.5, 1, math.Pow(x, 3.5)},
			{1, 7, 1 - math.Pow(1-x, 7)},
		} {
			if got := RegIncBeta(x, c.a, c.b); math.Abs(got-c.want) > 1e-12 {
				t.Errorf("I_%v(%v,%v) = %v want %v", x, c.a, c.b, got, c.want)
			}
		}
	}
	for _, a := range []float64{0.5, 2, 50, 5000} {
		if got := RegIncBeta(0.5, a, a); math.Abs(got-0.5) > 1e-10 {
			t.Errorf("I_0.5(%v,%v) = %v", a, a, got)
		}
	}
}

// Clopper-Pearson with k = 0: the upper bound is 1 − alpha^{1/n} exactly.
func TestClopperPearson(t *testing.T) {
	if got, want := ClopperPearsonUpper(0, 100, 0.05), 1-math.Pow(0.05, 0.01); math.Abs(got-want) > 1e-12 {
		t.Fatalf("upper = %v want %v", got, want)
	}
	if got, want := ClopperPearsonLower(100, 100, 0.05), math.Pow(0.05, 0.01); math.Abs(got-want) > 1e-12 {
		t.Fatalf("lower = %v want %v", got, want)
	}
	lo, hi := ClopperPearsonLower(30, 100, 0.025), ClopperPearsonUpper(30, 100, 0.025)
	// Reference values of the exact 95% interval for 30/100: [0.2124, 0.3998].
	if math.Abs(lo-0.2124) > 5e-4 || math.Abs(hi-0.3998) > 5e-4 {
		t.Fatalf("interval [%v, %v]", lo, hi)
	}
}

const trials = 20000

// confidence of the audits: the false-alarm rate (a correctly calibrated
// mechanism reported as violating its claim) is at most 1 − confidence.
const confidence = 0.999

// source returns a seeded source (deterministic CI), or fresh crypto/rand
// randomness when DPLEARN_LONG_TESTS=1.
func source(seed uint64) noise.Source {
	if os.Getenv("DPLEARN_LONG_TESTS") == "1" {
		return noise.NewSecure()
	}
	return noise.NewInsecureSeeded(seed)
}

func laplaceMech(t *testing.T, scale float64, seed uint64) func(int) (float64, error) {
	src := source(seed)
	return func(nb int) (float64, error) {
		z, err := noise.Laplace(src, scale)
		return float64(nb) + z, err
	}
}

func gaussMech(t *testing.T, sigma float64, seed uint64) func(int) (float64, error) {
	src := source(seed)
	return func(nb int) (float64, error) {
		z, err := noise.Gaussian(src, sigma)
		return float64(nb) + z, err
	}
}

// Fixed seeds (deterministic); with DPLEARN_LONG_TESTS=1 fresh randomness,
// where the calibrated case fails with probability ≤ 1 − confidence = 1e-3.
func TestAuditLaplace(t *testing.T) {
	ctx := context.Background()
	b, err := accounting.LaplaceScale(1, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Audit(ctx, laplaceMech(t, b, 1), trials, confidence)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Check(1); err != nil {
		t.Fatalf("calibrated Laplace fails: %v", err)
	}
	if r.EpsilonLower < 0.5 {
		t.Errorf("audit too weak: lower bound %v for a tight ε = 1 mechanism", r.EpsilonLower)
	}
	r, err = Audit(ctx, laplaceMech(t, b/3, 2), trials, confidence)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Check(1); err == nil {
		t.Fatalf("Laplace with 3× too little noise passes: %+v", r)
	}
}

func TestAuditGaussian(t *testing.T) {
	ctx := context.Background()
	const delta = 1e-5
	s, err := accounting.GaussianSigma(1, delta, 1)
	if err != nil {
		t.Fatal(err)
	}
	r, err := AuditDelta(ctx, gaussMech(t, s, 3), trials, confidence, delta)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Check(1); err != nil {
		t.Fatalf("calibrated Gaussian fails: %v", err)
	}
	r, err = AuditDelta(ctx, gaussMech(t, s/3, 4), trials, confidence, delta)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Check(1); err == nil {
		t.Fatalf("Gaussian with 3× too little noise passes: %+v", r)
	}
}

func TestAuditRejectsBadInput(t *testing.T) {
	ctx := context.Background()
	m := func(int) (float64, error) { return 0, nil }
	if _, err := Audit(ctx, m, 10, 0.95); err == nil {
		t.Error("10 trials accepted")
	}
	if _, err := Audit(ctx, m, 2000, 1.5); err == nil {
		t.Error("confidence 1.5 accepted")
	}
	if _, err := Audit(ctx, nil, 2000, 0.95); err == nil {
		t.Error("nil mechanism accepted")
	}
	if _, err := Audit(ctx, func(int) (float64, error) { return math.NaN(), nil }, 2000, 0.95); err == nil {
		t.Error("NaN output accepted")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Audit(cctx, m, 2000, 0.95); err == nil {
		t.Error("cancelled context ignored")
	}
	// A constant mechanism is perfectly private: the bound is 0.
	r, err := Audit(ctx, m, 2000, 0.95)
	if err != nil || r.EpsilonLower != 0 {
		t.Errorf("constant mechanism: %+v %v", r, err)
	}
}

// TestAuditGaussianDP: a scalar Gaussian mechanism with noise σ = Δ/μ passes
// a μ-GDP audit at its μ, and the same mechanism with half the noise (true
// μ doubled) is caught, on each of five seeds. The (ε, δ) audit of the
// half-noise mechanism is logged for comparison.
func TestAuditGaussianDP(t *testing.T) {
	const sens, mu = 1.0, 0.27 // about the μ of (ε, δ) = (1, 1e-5)
	for seed := uint64(1); seed <= 5; seed++ {
		src := source(seed)
		mech := func(sigma float64) func(int) (float64, error) {
			return func(nb int) (float64, error) {
				v := []float64{float64(nb) * sens}
				err := noise.AddGaussian(src, v, sigma)
				return v[0], err
			}
		}
		good, err := AuditGaussianDP(context.Background(), mech(sens/mu), trials, confidence)
		if err != nil {
			t.Fatal(err)
		}
		if err := good.CheckMu(mu); err != nil {
			t.Errorf("seed %d: calibrated mechanism flagged: %v", seed, err)
		}
		bad, err := AuditGaussianDP(context.Background(), mech(sens/mu/2), trials, confidence)
		if err != nil {
			t.Fatal(err)
		}
		if bad.CheckMu(mu) == nil {
			t.Errorf("seed %d: half the noise not detected: μ ≥ %.3f, claimed %.3f", seed, bad.MuLower, mu)
		}
		epsd, err := AuditDelta(context.Background(), mech(sens/mu/2), trials, confidence, 1e-5)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("seed %d: μ lower bounds %.3f (calibrated), %.3f (half noise; claim %.2f); (ε, δ) audit of half noise: ε ≥ %.3f (claim 1)",
			seed, good.MuLower, bad.MuLower, mu, epsd.EpsilonLower)
	}
}
