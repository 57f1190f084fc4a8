package accounting

import (
	"fmt"
	"math"
)

// DDGParams describe the distributed discrete Gaussian: each of Parties
// parties adds independent discrete Gaussian noise N_ℤ(0, σ²) (variance
// parameter Sigma²) to a Dim-dimensional integer vector, and only the sum is
// revealed (secure aggregation). L1 and L2 are the sensitivities of the
// summed integer vector.
type DDGParams struct {
	Sigma   float64
	Parties int
	Dim     int
	L1, L2  float64
}

// DDGTau returns τ = 10 Σ_{k=1}^{n−1} exp(−2π²σ² k/(k+1)), the correction of
// Kairouz, Liu & Steinke 2021 for the sum of n discrete Gaussians not being a
// discrete Gaussian (PRIVACY-NOTES item 13).
func DDGTau(sigma float64, parties int) float64 {
	var tau float64
	for k := 1; k < parties; k++ {
		fk := float64(k)
		tau += math.Exp(-2 * math.Pi * math.Pi * sigma * sigma * fk / (fk + 1))
	}
	return 10 * tau
}

// DDGRDP returns the RDP curve of the distributed discrete Gaussian by
// Kairouz, Liu & Steinke 2021, Proposition 14 (σ ≥ ½): for every order α,
//
//	ε(α) = min{ α Δ2²/(2nσ²) + τd,
//	            (α/2)(Δ2²/(nσ²) + 2Δ1τ/(√n σ) + τ²d),
//	            (α/2)(Δ2/(√n σ) + τ√d)² },
//
// with τ = DDGTau(σ, n), n parties and d dimensions.
func DDGRDP(p DDGParams, orders []float64) (RDP, error) {
	if !finite(p.Sigma) || p.Sigma < 0.5 {
		return RDP{}, fmt.Errorf("accounting: distributed discrete Gaussian needs σ ≥ 1/2, got %v", p.Sigma)
	}
	if p.Parties < 1 || p.Dim < 1 {
		return RDP{}, fmt.Errorf("accounting: need ≥ 1 party and dimension, got parties=%d dim=%d", p.Parties, p.Dim)
	}
	if !finite(p.L1) || !finite(p.L2) || p.L1 < 0 || p.L2 < 0 || p.L2 > p.L1 {
		return RDP{}, fmt.Errorf("accounting: need 0 ≤ L2 ≤ L1 finite, got L1=%v L2=%v", p.L1, p.L2)
	}
	if err := checkOrders(orders); err != nil {
		return RDP{}, err
	}
	tau := DDGTau(p.Sigma, p.Parties)
	n, d := float64(p.Parties), float64(p.Dim)
	ns2 := n * p.Sigma * p.Sigma
	sq := math.Sqrt(n) * p.Sigma
	r := RDP{Orders: append([]float64(nil), orders...), Epsilons: make([]float64, len(orders))}
	for i, a := range orders {
		b1 := a*p.L2*p.L2/(2*ns2) + tau*d
		b2 := a / 2 * (p.L2*p.L2/ns2 + 2*p.L1*tau/sq + tau*tau*d)
		t := p.L2/sq + tau*math.Sqrt(d)
		b3 := a / 2 * t * t
		r.Epsilons[i] = math.Min(b1, math.Min(b2, b3))
	}
	return r, nil
}

// DDGSigma returns the smallest per-party σ (relative precision 1e-6,
// rounded up, σ ≥ ½) such that the distributed discrete Gaussian with the
// other parameters of p (p.Sigma is ignored) is (ε, δ)-DP by DDGRDP on the
// given orders (DefaultOrders if nil) with the improved RDP conversion.
func DDGSigma(epsilon, delta float64, p DDGParams, orders []float64) (float64, error) {
	if err := checkPositive("ε", epsilon); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if orders == nil {
		orders = DefaultOrders()
	}
	ok := func(s float64) bool {
		q := p
		q.Sigma = s
		r, err := DDGRDP(q, orders)
		if err != nil {
			return false
		}
		e, _, err := r.Epsilon(delta)
		return err == nil && e <= epsilon
	}
	q := p
	q.Sigma = 1
	if _, err := DDGRDP(q, orders); err != nil {
		return 0, err
	}
	lo, hi := 0.5, 1.0
	if ok(lo) {
		return lo, nil
	}
	for !ok(hi) {
		lo, hi = hi, hi*2
		if hi > 1e9 {
			return 0, fmt.Errorf("accounting: no σ ≤ 1e9 achieves (ε=%g, δ=%g) for the distributed discrete Gaussian", epsilon, delta)
		}
	}
	return bisect(lo, hi, 1e-6, ok)
}
