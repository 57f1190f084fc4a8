package regress

import (
	"math/big"
	"testing"

	"github.com/dplearn/dplearn/noise"
)

// TestIRLSRhoRoundsUp: the ρ a zCDP ledger is charged for irls is never
// below the exact rational value of its composition J(ρ_A + ρ_B) + ρ_FM,
// each Gaussian term Δ_cal²/(2σ²) recomputed here exactly from the plan's
// calibrated sensitivity and noise (Δ_cal with the grid slack,
// noise.GaussianCalibrationSensitivity) and the warm start's μ_FM²/2, and
// is that value rounded up (within 4 ulps). Across forms, noise on A,
// warm and cold starts and J.
func TestIRLSRhoRoundsUp(t *testing.T) {
	rat := func(x float64) *big.Rat { return new(big.Rat).SetFloat64(x) }
	half := func(mu *big.Rat) *big.Rat { // μ²/2
		r := new(big.Rat).Mul(mu, mu)
		return r.Quo(r, big.NewRat(2, 1))
	}
	gauss := func(sens, sigma float64, entries int) *big.Rat { // (Δ_cal/σ)²/2, exact
		r := half(rat(noise.GaussianCalibrationSensitivity(sens, sigma, entries)))
		s := rat(sigma)
		return r.Quo(r, s.Mul(s, s))
	}
	for _, c := range []struct {
		name string
		eps  float64
		n    int64
		d    int
		opt  IRLSOptions
	}{
		{"default (preconditioned, warm)", 1, 5000, 5, IRLSOptions{}},
		{"moments, J = 3", 0.7, 3000, 4, IRLSOptions{Form: IRLSFormMoments, Iterations: 3}},
		{"gradient, J = 5, cold", 0.3, 20000, 7, IRLSOptions{Form: IRLSFormGradient, Iterations: 5, WarmStart: -1}},
		{"Laplace A, J = 4, cold", 2, 8000, 3, IRLSOptions{FirstMoment: "laplace", Iterations: 4, WarmStart: -1, Form: IRLSFormMoments}},
		{"moments, J = 7, warm 0.4", 1.3, 12345, 6, IRLSOptions{Form: IRLSFormMoments, Iterations: 7, WarmStart: 0.4}},
	} {
		t.Run(c.name, func(t *testing.T) {
			p, err := PlanIRLS(c.eps, 1e-6, c.n, c.d, c.opt)
			if err != nil {
				t.Fatal(err)
			}
			_, _, nSecond, _ := p.releaseNames()
			b := gauss(p.SensB, p.SigmaB, nSecond)
			if rat(p.RhoB).Cmp(b) < 0 {
				t.Errorf("ρ_B = %v below the exact (Δ_cal/σ)²/2 = %v", p.RhoB, b.FloatString(20))
			}
			a := rat(p.RhoA)
			if p.FirstMoment == "gaussian" {
				if a = gauss(p.SensA, p.ScaleA, c.d); rat(p.RhoA).Cmp(a) < 0 {
					t.Errorf("ρ_A = %v below the exact (Δ_cal/σ)²/2 = %v", p.RhoA, a.FloatString(20))
				}
			}
			exact := new(big.Rat).Add(a, b)
			exact.Mul(exact, big.NewRat(int64(p.Iterations), 1))
			if p.WarmStart > 0 {
				exact.Add(exact, half(rat(p.FMWhitened)))
			}
			if rat(p.Rho).Cmp(exact) < 0 {
				t.Errorf("ρ = %v below the exact composition %v", p.Rho, exact.FloatString(25))
			}
			f, _ := exact.Float64()
			if p.Rho > f*(1+4*0x1p-52) {
				t.Errorf("ρ = %v is more than the exact %v rounded up", p.Rho, f)
			}
		})
	}
}
