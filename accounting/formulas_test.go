package accounting

import (
	"math"
	"testing"
)

// TestFormulasKnownAnswers recomputes published formulas term by term at
// points where every term matters, independently of the implementation
// (each written out from its paper), so that dropping or scaling one term
// fails: advanced composition (Dwork & Roth Thm 3.20, both ε and kδ + δ′),
// zCDP composition (ρ adds), T Gaussian steps (ρ = TΔ²/(2σ²) at every
// order: ε(α) = αρ), and the distributed discrete Gaussian of Kairouz, Liu
// & Steinke 2021 (τ = 10Σ exp(−2π²σ²k/(k+1)); the minimum of the three
// bounds of Prop. 14) at σ = 0.5, where τ ≈ 2.3 is far from negligible
// (the first bound, α Δ2²/(2nσ²) + τd, is the binding one there).
func TestFormulasKnownAnswers(t *testing.T) {
	near := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-12*math.Max(1, math.Abs(want)) {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}
	// Advanced composition, k = 10 of (0.1, 1e-6), δ′ = 1e-5.
	adv, err := AdvancedComposition(0.1, 1e-6, 10, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	near("advanced ε", adv.Epsilon, 0.1*math.Sqrt(2*10*math.Log(1e5))+10*0.1*(math.Exp(0.1)-1))
	near("advanced δ", adv.Delta, 10*1e-6+1e-5)
	// zCDP composition adds ρ.
	z, err := ComposeZCDP(ZCDP{0.25}, ZCDP{0.5}, ZCDP{0.125})
	if err != nil {
		t.Fatal(err)
	}
	near("composed ρ", z.Rho, 0.875)
	// T = 7 Gaussian steps with Δ = 2, σ = 3: ρ = 7·4/18 and ε(α) = αρ.
	r, err := GaussianRDP(3, 2, 7, []float64{1.5, 4, 32})
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range r.Orders {
		near("Gaussian steps ε(α)", r.Epsilons[i], a*7*4/(2*9))
	}
	// Distributed discrete Gaussian.
	const sigma, parties, dim, l1, l2 = 0.5, 10, 100, 2.0, math.Sqrt2
	tau := 0.0
	for k := 1.0; k < parties; k++ {
		tau += math.Exp(-2 * math.Pi * math.Pi * sigma * sigma * k / (k + 1))
	}
	tau *= 10
	near("τ", DDGTau(sigma, parties), tau)
	orders := []float64{1.5, 2, 16, 256}
	ddg, err := DDGRDP(DDGParams{Sigma: sigma, Parties: parties, Dim: dim, L1: l1, L2: l2}, orders)
	if err != nil {
		t.Fatal(err)
	}
	n2 := parties * sigma * sigma
	sq := math.Sqrt(parties) * sigma
	for i, a := range orders {
		b1 := a*l2*l2/(2*n2) + tau*dim
		b2 := a / 2 * (l2*l2/n2 + 2*l1*tau/sq + tau*tau*dim)
		b3 := a / 2 * math.Pow(l2/sq+tau*math.Sqrt(dim), 2)
		near("DDG ε(α)", ddg.Epsilons[i], math.Min(b1, math.Min(b2, b3)))
	}
}
