package accounting

import (
	"fmt"
	"math"
)

// Neighbours names the neighbouring relation of a subsampled accountant.
// Sampling changes the answer: removing a record and replacing one are not
// the same event for a Poisson sample.
type Neighbours string

const (
	// ReplaceOne: neighbouring datasets have the same size and differ in one
	// record (bounded DP), dplearn's relation everywhere.
	ReplaceOne Neighbours = "replace-one"
	// AddRemove: one dataset has one record more (unbounded DP), the
	// relation of Opacus and TF Privacy.
	AddRemove Neighbours = "add-remove"
)

// ParseNeighbours validates a relation name.
func ParseNeighbours(s string) (Neighbours, error) {
	switch Neighbours(s) {
	case ReplaceOne, AddRemove:
		return Neighbours(s), nil
	}
	return "", fmt.Errorf("accounting: neighbouring relation %q (want %s or %s)", s, ReplaceOne, AddRemove)
}

// SubsampledGaussianRDPFor returns the RDP curve of `steps`
// Poisson-subsampled Gaussian steps under the given neighbouring relation.
func SubsampledGaussianRDPFor(rel Neighbours, q, sigma float64, steps int, orders []float64) (RDP, error) {
	switch rel {
	case AddRemove:
		return SubsampledGaussianRDP(q, sigma, steps, orders)
	case ReplaceOne:
		return SubsampledGaussianRDPReplaceOne(q, sigma, steps, orders)
	}
	return RDP{}, fmt.Errorf("accounting: unknown neighbouring relation %q", rel)
}

// SubsampledGaussianRDPReplaceOne returns the RDP curve, for replace-one
// neighbours, of `steps` Poisson-subsampled Gaussian steps with rate q and
// noise multiplier σ. Per step, with ε the add/remove curve of
// SubsampledGaussianRDP (which bounds both directions, Mironov, Talwar &
// Zhang 2019, Theorem 5), the weak triangle inequality of Rényi divergence
// (Mironov 2017, Proposition 11 with p = q = 2) through the intermediate
// dataset without the replaced record gives
//
//	ε_replace(α) ≤ (α − ½)/(α − 1)·ε(2α) + ε(2α − 1).
//
// Orders must be > 1.
func SubsampledGaussianRDPReplaceOne(q, sigma float64, steps int, orders []float64) (RDP, error) {
	o2 := make([]float64, len(orders))
	o21 := make([]float64, len(orders))
	for i, a := range orders {
		if !(a > 1) {
			return RDP{}, fmt.Errorf("accounting: replace-one RDP needs orders > 1, got %v", a)
		}
		o2[i], o21[i] = 2*a, 2*a-1
	}
	e2, err := SubsampledGaussianRDP(q, sigma, 1, o2)
	if err != nil {
		return RDP{}, err
	}
	e21, err := SubsampledGaussianRDP(q, sigma, 1, o21)
	if err != nil {
		return RDP{}, err
	}
	r := RDP{Orders: append([]float64(nil), orders...), Epsilons: make([]float64, len(orders))}
	for i, a := range orders {
		r.Epsilons[i] = float64(steps) * ((a-0.5)/(a-1)*e2.Epsilons[i] + e21.Epsilons[i])
	}
	return r, nil
}

// SubsampledGaussianRDP returns the RDP curve, for add/remove neighbours (as
// Opacus and TF Privacy; see SubsampledGaussianRDPFor for dplearn's
// replace-one relation), of `steps` compositions of the
// Poisson-subsampled Gaussian mechanism (sampling rate q, noise multiplier
// σ = noise std / L2 sensitivity), by Mironov, Talwar & Zhang 2019: for each
// order α, ε(α) = steps · ln(A_α)/(α−1), with A_α computed exactly by the
// finite binomial sum for integer α (Section 3.3, Eq. for integer α) and by
// the convergent two-sided series with erfc terms for fractional α (Section
// 3.3), as Opacus and TF Privacy do. q = 1 gives the plain Gaussian
// α/(2σ²). No grid slack is included.
func SubsampledGaussianRDP(q, sigma float64, steps int, orders []float64) (RDP, error) {
	if !finite(q) || q < 0 || q > 1 {
		return RDP{}, fmt.Errorf("accounting: sampling rate q must be in [0, 1], got %v", q)
	}
	if err := checkPositive("noise multiplier σ", sigma); err != nil {
		return RDP{}, err
	}
	if steps < 0 {
		return RDP{}, fmt.Errorf("accounting: steps must be ≥ 0, got %d", steps)
	}
	if err := checkOrders(orders); err != nil {
		return RDP{}, err
	}
	r := RDP{Orders: append([]float64(nil), orders...), Epsilons: make([]float64, len(orders))}
	for i, a := range orders {
		var e float64
		switch {
		case q == 0:
			e = 0
		case q == 1:
			e = a / (2 * sigma * sigma)
		case a == math.Floor(a):
			e = logAInt(q, sigma, int(a)) / (a - 1)
		default:
			e = logAFrac(q, sigma, a) / (a - 1)
		}
		if math.IsNaN(e) {
			return RDP{}, fmt.Errorf("accounting: subsampled Gaussian RDP is NaN at order %v (q=%v, σ=%v)", a, q, sigma)
		}
		r.Epsilons[i] = math.Max(e, 0) * float64(steps)
	}
	return r, nil
}

func logBinom(n, k float64) float64 {
	a, _ := math.Lgamma(n + 1)
	b, _ := math.Lgamma(k + 1)
	c, _ := math.Lgamma(n - k + 1)
	return a - b - c
}

// logAInt is ln A_α for integer α:
// A_α = Σ_{k=0}^{α} C(α,k) (1−q)^{α−k} q^k exp((k²−k)/(2σ²)).
func logAInt(q, sigma float64, alpha int) float64 {
	la := math.Inf(-1)
	lq, l1q := math.Log(q), math.Log1p(-q)
	for k := 0; k <= alpha; k++ {
		fk := float64(k)
		t := logBinom(float64(alpha), fk) + fk*lq + float64(alpha-k)*l1q + (fk*fk-fk)/(2*sigma*sigma)
		la = logAdd(la, t)
	}
	return la
}

// logErfc returns ln erfc(x), accurate for large x.
func logErfc(x float64) float64 {
	if x < 25 {
		return math.Log(math.Erfc(x))
	}
	// erfc(x) ≈ e^{−x²}/(x√π) (1 − 1/(2x²) + 3/(4x⁴) − 15/(8x⁶))
	x2 := x * x
	return -x2 - math.Log(x) - 0.5*math.Log(math.Pi) + math.Log1p(-1/(2*x2)+3/(4*x2*x2)-15/(8*x2*x2*x2))
}

// logAFrac is ln A_α for fractional α (Mironov, Talwar & Zhang 2019, §3.3):
// with z₀ = σ² ln(1/q − 1) + ½, A_α = A₀ + A₁ where
//
//	A₀ = Σ_{i≥0} C(α,i) q^i (1−q)^{α−i} e^{(i²−i)/(2σ²)} · ½ erfc((i − z₀)/(√2σ))
//	A₁ = Σ_{i≥0} C(α,i) q^{α−i} (1−q)^i e^{((α−i)²−(α−i))/(2σ²)} · ½ erfc((z₀ − (α−i))/(√2σ))
//
// with generalised (possibly negative) binomial coefficients; the series is
// summed until its terms fall below e^{−30} relative to the running sums.
func logAFrac(q, sigma, alpha float64) float64 {
	a0 := signedLog{math.Inf(-1), 0}
	a1 := signedLog{math.Inf(-1), 0}
	z0 := sigma*sigma*math.Log(1/q-1) + 0.5
	lq, l1q := math.Log(q), math.Log1p(-q)
	s2 := math.Sqrt2 * sigma
	lgA, _ := math.Lgamma(alpha + 1)
	for i := 0; i < 100000; i++ {
		fi := float64(i)
		j := alpha - fi
		lgI, _ := math.Lgamma(fi + 1)
		lgJ, sgnJ := math.Lgamma(j + 1)
		logCoef := lgA - lgI - lgJ
		sign := sgnJ // Γ(α+1) > 0, Γ(i+1) > 0
		t0 := logCoef + fi*lq + j*l1q + (fi*fi-fi)/(2*sigma*sigma) + math.Log(0.5) + logErfc((fi-z0)/s2)
		t1 := logCoef + j*lq + fi*l1q + (j*j-j)/(2*sigma*sigma) + math.Log(0.5) + logErfc((z0-j)/s2)
		a0 = a0.add(signedLog{t0, sign})
		a1 = a1.add(signedLog{t1, sign})
		if i > int(alpha)+1 && math.Max(t0, t1) < -30+math.Max(a0.log, a1.log) {
			break
		}
	}
	s := a0.add(a1)
	if s.sign <= 0 {
		return math.NaN()
	}
	return s.log
}

// SubsampledGaussianEpsilon returns the (ε, δ) of `steps` Poisson-subsampled
// Gaussian steps under the neighbouring relation rel, on the given orders
// (DefaultOrders if nil) with the improved conversion of Balle et al. 2020,
// and the order that attains it.
func SubsampledGaussianEpsilon(rel Neighbours, q, sigma float64, steps int, delta float64, orders []float64) (eps, order float64, err error) {
	if orders == nil {
		orders = DefaultOrders()
	}
	r, err := SubsampledGaussianRDPFor(rel, q, sigma, steps, orders)
	if err != nil {
		return 0, 0, err
	}
	return r.Epsilon(delta)
}

// SubsampledGaussianSigma returns the smallest noise multiplier σ (relative
// precision 1e-6, rounded up) such that `steps` Poisson-subsampled Gaussian
// steps with rate q are (ε, δ)-DP under the relation rel by
// SubsampledGaussianEpsilon on the given orders (DefaultOrders if nil).
func SubsampledGaussianSigma(rel Neighbours, epsilon, delta, q float64, steps int, orders []float64) (float64, error) {
	if err := checkPositive("ε", epsilon); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if steps < 1 {
		return 0, fmt.Errorf("accounting: steps must be ≥ 1, got %d", steps)
	}
	if !finite(q) || q <= 0 || q > 1 {
		return 0, fmt.Errorf("accounting: sampling rate q must be in (0, 1], got %v", q)
	}
	ok := func(s float64) bool {
		e, _, err := SubsampledGaussianEpsilon(rel, q, s, steps, delta, orders)
		return err == nil && e <= epsilon
	}
	lo, hi := 0.1, 1.0
	for !ok(hi) {
		lo, hi = hi, hi*2
		if hi > 1e6 {
			return 0, fmt.Errorf("accounting: no noise multiplier ≤ 1e6 achieves (ε=%g, δ=%g)", epsilon, delta)
		}
	}
	for lo > 1e-3 && ok(lo) {
		hi, lo = lo, lo/2
	}
	return bisect(lo, hi, 1e-6, ok)
}
