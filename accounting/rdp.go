package accounting

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dplearn/dplearn/internal/roundup"
)

// EpsDelta is an (ε, δ)-DP guarantee.
type EpsDelta struct {
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
}

// Validate checks ε ≥ 0 finite and δ ∈ [0, 1).
func (p EpsDelta) Validate() error {
	if !finite(p.Epsilon) || p.Epsilon < 0 {
		return fmt.Errorf("accounting: ε must be finite and ≥ 0, got %v", p.Epsilon)
	}
	if !finite(p.Delta) || p.Delta < 0 || p.Delta >= 1 {
		return fmt.Errorf("accounting: δ must be in [0, 1), got %v", p.Delta)
	}
	return nil
}

// ZCDP is a ρ-zero-concentrated-DP guarantee (Bun & Steinke 2016).
type ZCDP struct {
	Rho float64 `json:"rho"`
}

// Validate checks ρ ≥ 0 finite.
func (z ZCDP) Validate() error {
	if !finite(z.Rho) || z.Rho < 0 {
		return fmt.Errorf("accounting: ρ must be finite and ≥ 0, got %v", z.Rho)
	}
	return nil
}

// ComposeZCDP adds the ρ of mechanisms run in sequence (adaptive composition
// of zCDP, Bun & Steinke 2016 Lemma 2.3). The sum is exact (rational) and
// rounded up, so the ρ returned is never below the true total.
func ComposeZCDP(parts ...ZCDP) (ZCDP, error) {
	rho := new(big.Rat)
	for i, p := range parts {
		if err := p.Validate(); err != nil {
			return ZCDP{}, fmt.Errorf("accounting: part %d: %w", i, err)
		}
		rho.Add(rho, new(big.Rat).SetFloat64(p.Rho))
	}
	z := ZCDP{roundup.Rat(rho)}
	if err := z.Validate(); err != nil {
		return ZCDP{}, fmt.Errorf("accounting: composed: %w", err)
	}
	return z, nil
}

// PureToZCDP returns the ρ = ε²/2 of an ε-DP mechanism (Bun & Steinke 2016,
// Prop. 1.4), rounded up.
func PureToZCDP(epsilon float64) (ZCDP, error) {
	if !finite(epsilon) || epsilon < 0 {
		return ZCDP{}, fmt.Errorf("accounting: ε must be finite and ≥ 0, got %v", epsilon)
	}
	return ZCDP{roundup.Mul(epsilon, epsilon, 0.5)}, nil
}

// GDPToZCDP returns the ρ = μ²/2, rounded up, of a μ-Gaussian-DP mechanism.
//
// Derivation. μ-GDP means the mechanism's trade-off function between any
// two neighbours is at least that of N(0, 1) against N(μ, 1) (Dong, Roth &
// Su 2019). By Blackwell's theorem (their Theorem 2.10 and Proposition
// 2.8's converse) the neighbours' output laws P, Q are then one
// post-processing (a Markov kernel) of N(0, 1) and N(μ, 1), and Rényi
// divergence does not grow under post-processing, so for every α > 1
// D_α(P‖Q) ≤ D_α(N(0, 1)‖N(μ, 1)) = αμ²/2: the definition of
// μ²/2-zCDP (Bun & Steinke 2016, Definition 1.1). For one Gaussian
// release of L2 sensitivity Δ and noise σ, μ = Δ/σ and this is Bun &
// Steinke's Prop. 1.6; for the discrete Gaussians of package noise it
// holds with μ = noise.GaussianCalibrationSensitivity(Δ, σ, n)/σ (its
// documentation, "Compositions and other accountants").
func GDPToZCDP(mu float64) (ZCDP, error) {
	if !finite(mu) || mu < 0 {
		return ZCDP{}, fmt.Errorf("accounting: μ must be finite and ≥ 0, got %v", mu)
	}
	return ZCDP{roundup.Mul(mu, mu, 0.5)}, nil
}

// Epsilon converts ρ-zCDP to (ε, δ)-DP with the standard bound
// ε = ρ + 2√(ρ ln(1/δ)) (Bun & Steinke 2016, Prop. 1.3).
func (z ZCDP) Epsilon(delta float64) (float64, error) {
	if err := z.Validate(); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	return z.Rho + 2*math.Sqrt(z.Rho*math.Log(1/delta)), nil
}

// EpsilonImproved converts ρ-zCDP to (ε, δ)-DP with the bound of Canonne,
// Kamath & Steinke 2020 (Prop. 12 / Cor. 13):
//
//	ε = inf_{α>1} αρ + (ln(1/δ) + (α−1)ln(1−1/α) − ln α)/(α−1),
//
// minimised numerically over α ∈ (1, 10⁶]. It is never larger than Epsilon.
//
// It is the default conversion of dplearn for compositions that are not all
// Gaussian, in particular mixtures of Laplace (pure ε, ρ = ε²/2 by
// PureToZCDP) and Gaussian (GaussianZCDP) releases composed with
// ComposeZCDP (PRIVACY-NOTES item 21); Epsilon is the looser textbook bound,
// for secondary figures. For compositions of Gaussian releases only, the
// exact Gaussian-DP accountant (GDPMu, GDPEpsilon) is tighter still.
func (z ZCDP) EpsilonImproved(delta float64) (float64, error) {
	if err := z.Validate(); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if z.Rho == 0 {
		return 0, nil
	}
	f := func(a float64) float64 { return improvedEps(a*z.Rho, a, delta) }
	a := minimiseOrder(f)
	e := f(a)
	if std, _ := z.Epsilon(delta); std < e {
		e = std
	}
	return math.Max(e, 0), nil
}

// improvedEps is the (ε, δ) conversion of Balle et al. 2020 (Thm 21) of an
// (α, ε_α)-RDP guarantee: ε = ε_α + ln((α−1)/α) − (ln δ + ln α)/(α−1).
func improvedEps(epsAlpha, alpha, delta float64) float64 {
	return epsAlpha + math.Log((alpha-1)/alpha) - (math.Log(delta)+math.Log(alpha))/(alpha-1)
}

// classicEps is Mironov 2017 Prop. 3: ε = ε_α + ln(1/δ)/(α−1).
func classicEps(epsAlpha, alpha, delta float64) float64 {
	return epsAlpha + math.Log(1/delta)/(alpha-1)
}

// minimiseOrder minimises a unimodal function of the order α over
// (1, 10⁶] by a log-spaced scan followed by golden-section refinement.
func minimiseOrder(f func(float64) float64) float64 {
	best, bestV := 2.0, f(2)
	const n = 400
	var grid [n]float64
	for i := range grid {
		grid[i] = 1 + math.Pow(10, -6+12*float64(i)/(n-1)) // 1+1e-6 … 1+1e6
		if v := f(grid[i]); v < bestV {
			best, bestV = grid[i], v
		}
	}
	// bracket around best
	lo, hi := best, best
	for i, g := range grid {
		if g == best {
			if i > 0 {
				lo = grid[i-1]
			}
			if i < n-1 {
				hi = grid[i+1]
			}
		}
	}
	const phi = 0.6180339887498949
	a, b := lo, hi
	c, d := b-phi*(b-a), a+phi*(b-a)
	fc, fd := f(c), f(d)
	for i := 0; i < 100; i++ {
		if fc < fd {
			b, d, fd = d, c, fc
			c = b - phi*(b-a)
			fc = f(c)
		} else {
			a, c, fc = c, d, fd
			d = a + phi*(b-a)
			fd = f(d)
		}
	}
	if fc < bestV {
		best, bestV = c, fc
	}
	if fd < bestV {
		best = d
	}
	return best
}

// RDP is a Rényi-DP curve: the mechanism is (Orders[i], Epsilons[i])-RDP for
// every i. Epsilons may be +Inf.
type RDP struct {
	Orders   []float64 `json:"orders"`
	Epsilons []float64 `json:"epsilons"`
}

// DefaultOrders returns the order grid of Opacus and TF Privacy:
// 1.1, 1.2, …, 10.9, then 12, 13, …, 63 (150 orders).
func DefaultOrders() []float64 {
	o := make([]float64, 0, 150)
	for x := 1; x < 100; x++ {
		o = append(o, 1+float64(x)/10)
	}
	for x := 12; x < 64; x++ {
		o = append(o, float64(x))
	}
	return o
}

func checkOrders(orders []float64) error {
	if len(orders) == 0 {
		return fmt.Errorf("accounting: empty RDP order grid")
	}
	for i, a := range orders {
		if !finite(a) || a <= 1 {
			return fmt.Errorf("accounting: RDP order %d must be finite and > 1, got %v", i, a)
		}
	}
	return nil
}

// Validate checks the grid and that every ε(α) is ≥ 0 (or +Inf).
func (r RDP) Validate() error {
	if err := checkOrders(r.Orders); err != nil {
		return err
	}
	if len(r.Epsilons) != len(r.Orders) {
		return fmt.Errorf("accounting: RDP curve has %d orders but %d epsilons", len(r.Orders), len(r.Epsilons))
	}
	for i, e := range r.Epsilons {
		if math.IsNaN(e) || e < 0 || math.IsInf(e, -1) {
			return fmt.Errorf("accounting: RDP ε at order %v must be ≥ 0, got %v", r.Orders[i], e)
		}
	}
	return nil
}

// ComposeRDP adds RDP curves order by order (Mironov 2017, Prop. 1). All
// curves must share the same order grid.
func ComposeRDP(curves ...RDP) (RDP, error) {
	if len(curves) == 0 {
		return RDP{}, fmt.Errorf("accounting: nothing to compose")
	}
	out := RDP{Orders: append([]float64(nil), curves[0].Orders...), Epsilons: make([]float64, len(curves[0].Orders))}
	for k, c := range curves {
		if err := c.Validate(); err != nil {
			return RDP{}, fmt.Errorf("accounting: curve %d: %w", k, err)
		}
		if len(c.Orders) != len(out.Orders) {
			return RDP{}, fmt.Errorf("accounting: curve %d has %d orders, want %d", k, len(c.Orders), len(out.Orders))
		}
		for i, a := range c.Orders {
			if a != out.Orders[i] {
				return RDP{}, fmt.Errorf("accounting: curve %d order %d is %v, want %v", k, i, a, out.Orders[i])
			}
			out.Epsilons[i] += c.Epsilons[i]
		}
	}
	return out, nil
}

// ZCDPToRDP returns the RDP curve ε(α) = αρ of a ρ-zCDP mechanism.
func ZCDPToRDP(z ZCDP, orders []float64) (RDP, error) {
	if err := z.Validate(); err != nil {
		return RDP{}, err
	}
	if err := checkOrders(orders); err != nil {
		return RDP{}, err
	}
	r := RDP{Orders: append([]float64(nil), orders...), Epsilons: make([]float64, len(orders))}
	for i, a := range orders {
		r.Epsilons[i] = a * z.Rho
	}
	return r, nil
}

func (r RDP) convert(delta float64, conv func(e, a, d float64) float64) (float64, float64, error) {
	if err := r.Validate(); err != nil {
		return 0, 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, 0, err
	}
	best, order := math.Inf(1), 0.0
	for i, a := range r.Orders {
		if e := conv(r.Epsilons[i], a, delta); e < best {
			best, order = e, a
		}
	}
	if math.IsInf(best, 1) {
		return best, 0, fmt.Errorf("accounting: RDP curve is infinite at every order")
	}
	return math.Max(best, 0), order, nil
}

// Epsilon converts the curve to (ε, δ)-DP with the improved conversion of
// Balle et al. 2020 (Thm 21), as Opacus does:
// ε = min_α ε(α) + ln((α−1)/α) − (ln δ + ln α)/(α−1). It returns ε and the
// minimising order.
func (r RDP) Epsilon(delta float64) (eps, order float64, err error) {
	return r.convert(delta, improvedEps)
}

// EpsilonClassic converts with Mironov 2017 Prop. 3:
// ε = min_α ε(α) + ln(1/δ)/(α−1).
func (r RDP) EpsilonClassic(delta float64) (eps, order float64, err error) {
	return r.convert(delta, classicEps)
}

// GaussianRDP returns the RDP curve of T compositions of the Gaussian
// mechanism with noise σ and L2 sensitivity Δ: ε(α) = αTΔ²/(2σ²) (Mironov
// 2017 Prop. 7; seed Prop. 3). No grid slack is included.
func GaussianRDP(sigma, sens float64, steps int, orders []float64) (RDP, error) {
	rho, err := GaussianZCDP(sigma, sens)
	if err != nil {
		return RDP{}, err
	}
	if steps < 1 {
		return RDP{}, fmt.Errorf("accounting: steps must be ≥ 1, got %d", steps)
	}
	return ZCDPToRDP(ZCDP{rho * float64(steps)}, orders)
}

// GaussianStepsResult reports the (ε, δ) guarantee of T Gaussian steps.
type GaussianStepsResult struct {
	// EpsilonRDP uses the improved RDP conversion (Balle et al. 2020)
	// minimised over continuous α > 1 (equal to ZCDP.EpsilonImproved).
	EpsilonRDP float64 `json:"epsilon_rdp"`
	// EpsilonRDPClassic is the seed's Eq. (7) evaluated at its Eq. (8) α.
	EpsilonRDPClassic float64 `json:"epsilon_rdp_classic"`
	// AlphaClassic is the seed's α_opt of Eq. (8).
	AlphaClassic float64 `json:"alpha_classic"`
	// EpsilonZCDP is ρ + 2√(ρ ln(1/δ)) with ρ = TΔ²/(2σ²).
	EpsilonZCDP float64 `json:"epsilon_zcdp"`
	Rho         float64 `json:"rho"`
	// EpsilonExact is the exact ε: T adaptively composed Gaussian
	// mechanisms are exactly one Gaussian mechanism with sensitivity √T·Δ
	// (Gaussian DP, Dong, Roth & Su 2019, Cor. 3.3), whose (ε, δ) curve is
	// the analytic Gaussian (Balle & Wang 2018). It is the smallest of all.
	// For noise.AddGaussian steps it relies on the same discretisation
	// argument and slack margin as GaussianSigma (see there).
	EpsilonExact float64 `json:"epsilon_exact"`
	// Mu is the Gaussian-DP parameter of the composition, √T·Δ/σ (rounded
	// up): EpsilonExact = GDPEpsilon(Mu, δ).
	Mu float64 `json:"mu"`
}

// GaussianSteps returns the privacy of T Gaussian mechanisms with noise σ and
// L2 sensitivity Δ at δ (noisy gradient descent, seed Section 3 Eq. 7-8).
//
// Note on the seed: Eq. (8), α = 1 + √(1 + 2σ²ln(1/δ)/(TΔ²)), does not
// minimise Eq. (7); the minimiser is α* = 1 + √(2σ²ln(1/δ)/(TΔ²)), where
// Eq. (7) equals ρ + 2√(ρ ln(1/δ)) = EpsilonZCDP. Any α > 1 gives a valid
// bound, so EpsilonRDPClassic (as published) is valid but slightly larger.
// No grid slack is included: pass Δ + noise.GaussianGridSlack(σ, d) if the
// steps use noise.AddGaussian.
func GaussianSteps(sigma, sens float64, steps int, delta float64) (GaussianStepsResult, error) {
	rho, err := GaussianZCDP(sigma, sens)
	if err != nil {
		return GaussianStepsResult{}, err
	}
	if steps < 1 {
		return GaussianStepsResult{}, fmt.Errorf("accounting: steps must be ≥ 1, got %d", steps)
	}
	if err := checkDelta(delta); err != nil {
		return GaussianStepsResult{}, err
	}
	z := ZCDP{roundup.Mul(rho, float64(steps))}
	var res GaussianStepsResult
	res.Rho = z.Rho
	l := math.Log(1 / delta)
	r2 := (sigma / sens) * (sigma / sens)
	res.AlphaClassic = 1 + math.Sqrt(1+2*r2*l/float64(steps))
	res.EpsilonRDPClassic = res.AlphaClassic*z.Rho + l/(res.AlphaClassic-1)
	if res.EpsilonZCDP, err = z.Epsilon(delta); err != nil {
		return res, err
	}
	if res.EpsilonRDP, err = z.EpsilonImproved(delta); err != nil {
		return res, err
	}
	// T equal Gaussian steps: μ = √(T·(Δ/σ)²), rounded up.
	res.Mu = sqrtUp(new(big.Rat).Mul(big.NewRat(int64(steps), 1), sqRat(ratioUp(sens, sigma))))
	if res.EpsilonExact, err = GDPEpsilon(res.Mu, delta); err != nil {
		return res, err
	}
	return res, nil
}
