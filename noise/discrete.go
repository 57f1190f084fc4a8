package noise

import (
	"math"
	"math/big"
)

// DiscreteGaussianMargin is the relative sensitivity margin that lets the
// continuous Gaussian privacy curves (the analytic Gaussian of Balle & Wang
// 2018, Gaussian DP composition) be applied to AddGaussian, which is a
// discrete Gaussian mechanism on a grid. GaussianCalibrationSensitivity
// applies it; the proof is in the comment of that function.
const DiscreteGaussianMargin = 0x1p-32

// MinGridScale is the smallest noise scale, in grid steps, that GaussianGrid
// ever gives: σ/GaussianGrid(σ, n) ≥ MinGridScale·√n ≥ MinGridScale. The
// margin proof below needs σ/g ≥ 2^21.
const MinGridScale = 0x1p21

// MaxMarginEntries bounds the total number of noisy coordinates (summed over
// every AddGaussian call of a composition) covered by the margin proof.
const MaxMarginEntries = 1 << 40

// GaussianCalibrationSensitivity returns the L2 sensitivity to give the
// continuous Gaussian curves when an n-vector with L2 sensitivity sens is
// released with AddGaussian(σ):
//
//	(sens + GaussianGridSlack(σ, n)) · (1 + DiscreteGaussianMargin),
//
// rounded up. It is +Inf for invalid input (sens < 0 or not finite, σ ≤ 0 or
// not finite, n < 1). Use sens'/σ, with sens' this value, wherever a
// calibration would use Δ/σ for a continuous Gaussian: the analytic
// Gaussian δ(ε) at sensitivity sens' and noise σ, or the Gaussian-DP
// ratio μ_i = sens'/σ_i of one release in a composition. Then the
// implemented (discrete) mechanism meets every (ε, δ) with δ < 0.4 that the
// continuous curve gives, as proved here.
//
// # The mechanism
//
// AddGaussian releases g·(k(D) + Z) with g = GaussianGrid(σ, n), k(D) =
// round(f(D)/g) ∈ ℤⁿ and Z ~ N_ℤ(0, s²)ⁿ, s = σ/g, an exact discrete
// Gaussian (P[Z = z] ∝ exp(−‖z‖²/2s²) on ℤⁿ). Neighbours give lattice
// points with ‖k(D) − k(D′)‖ ≤ (sens + GaussianGridSlack(σ, n))/g =: K (see
// the package documentation). Write P = N_ℤ(0, s²Iₙ), Q = N_ℤ(κ, s²Iₙ) for
// an integer shift κ with ‖κ‖ ≤ K, μ = ‖κ‖/s, and f(ε; μ) for the
// continuous curve Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ), which is the exact
// δ(ε) of N(0, I) against N(μe₁, I) in any dimension. The discrete profile
// δ_P,Q(ε) = Σ_y (P(y) − e^ε Q(y))₊ is not f(ε; μ): at the library's grids
// it differs by up to 3·10⁻¹³ relative, in either direction (measured
// exactly in the tests), because a lattice sum of the kinked integrand is
// not its integral.
//
// # Theorem
//
// If s ≥ 2^21, n ≤ 2^40, 2^-1074 ≤ δ < 0.42, and
// f(ε; (1 + 2^-32)·μ) ≤ δ, then δ_P,Q(ε) ≤ δ.
//
// Since μ ≤ (sens + GaussianGridSlack(σ, n))/σ, f increases in μ, and
// σ/g ≥ MinGridScale always, the hypothesis holds whenever f(ε; sens'/σ) ≤ δ
// for sens' = GaussianCalibrationSensitivity(sens, σ, n).
//
// # Proof
//
// Step 1 (coupling with a continuous Gaussian). Let s₂ = 8 and s₁ =
// √(s² − s₂²). Let X ~ N(c, s₁²Iₙ) be continuous and, given X, let Y be a
// discrete Gaussian on ℤⁿ centred at X: P[Y = y | X = x] =
// exp(−‖y − x‖²/2s₂²)/θ(x), θ(x) = Σ_{z∈ℤⁿ} exp(−‖z − x‖²/2s₂²). Call K_c
// the law of Y (for c = 0 or κ). By Poisson summation,
// θ(x) = (s₂√(2π))ⁿ Πᵢ (1 + 2Σ_{m≥1} e^{−2π²s₂²m²} cos 2πmxᵢ), so θ lies in
// (s₂√(2π))ⁿ·[(1 − τ)ⁿ, (1 + τ)ⁿ] with τ = 2Σ_{m≥1} e^{−2π²s₂²m²} <
// 10^-548. The unnormalised law ∫ φ_{s₁}(x − c) exp(−‖y − x‖²/2s₂²) dx is
// a constant times exp(−‖y − c‖²/2s²) (Gaussian convolution, s² = s₁² +
// s₂²), which normalised on ℤⁿ is exactly N_ℤ(c, s²). Bounding 1/θ by its
// extremes, and noting that the normaliser of the discrete Gaussian lies
// between the same extremes (K_c sums to 1), gives pointwise
//
//	P(y) ≤ ρ·K₀(y),   Q(y) ≥ K_κ(y)/ρ,   ρ = ((1 + τ)/(1 − τ))ⁿ,
//
// so ρ − 1 < 10^-535 for n ≤ 2^40.
//
// Step 2 (hockey-stick). With S = {y : P(y) > e^ε Q(y)},
// P − e^ε Q ≤ ρ(K₀ − e^ε K_κ) + e^ε(ρ − 1/ρ)K_κ on S, and
// e^ε K_κ(S) ≤ ρ e^ε Q(S) ≤ ρ P(S) ≤ ρ. K₀, K_κ are one post-processing
// of N(0, s₁²I) and N(κ, s₁²I), whose hockey-stick divergence is f(ε; μ₁),
// μ₁ = ‖κ‖/s₁. So
//
//	δ_P,Q(ε) ≤ ρ f(ε; μ₁) + ρ² − 1 ≤ f(ε; μ₁) + A,   A = 4(ρ − 1) < 10^-530,
//
// and μ₁ = μ/√(1 − 64/s²) ≤ μ(1 + 64/s²) ≤ μ(1 + 2^-36) (since
// (1 − x)^-½ ≤ 1 + x for x ≤ 0.6, and s ≥ 2^21).
//
// Step 3 (the margin absorbs A). Let μ₂ = (1 + 2^-32)μ ≥ μ₁, so the
// interval I = [μ₁, μ₂] has length ≥ μ·2^-32·15/16. The curve satisfies
// ∂f/∂μ = φ(a(μ)), a(μ) = μ/2 − ε/μ, increasing in μ. Let G = f(ε; μ₂) −
// f(ε; μ₁) = ∫_I φ(a(t)) dt.
//   - If G ≥ A: δ_P,Q ≤ f(ε; μ₁) + A ≤ f(ε; μ₂) ≤ δ.
//   - If G < A and a(μ₂) ≤ 0: φ(a(t)) increases on (0, μ₂], so
//     f(ε; μ₁) ≤ μ₁φ(a(μ₁)) and G ≥ |I|φ(a(μ₁)); hence f(ε; μ₁) <
//     1.07·2^32·A and δ_P,Q < 10^-519 < 2^-1074 ≤ δ.
//   - If G < A and a(μ₂) > 0 (ε < μ₂²/2): f decreases in ε, so δ ≥
//     f(ε; μ₂) ≥ f(μ₂²/2; μ₂) = ½ − e^{μ₂²/2}Φ(−μ₂) ≥ ½ − 1/(μ₂√(2π)),
//     which is ≥ 0.42 for μ₂ ≥ 5; so μ₂ < 5. On I, |a| < 2.6, so G ≥
//     |I|·φ(2.6) > 2.9·10^-12·μ, giving μ < 10^-518, f(ε; μ₁) ≤ μ₁φ(0) and
//     again δ_P,Q < 10^-517 < δ.
//
// # Compositions and other accountants
//
// The same argument covers several AddGaussian releases composed
// adaptively (several blocks, iterations), with MaxMarginEntries counting
// all their coordinates: the pointwise bounds of step 1 multiply along the
// releases, the continuous counterparts compose (adaptively) to exactly
// √(Σ μ₁,ᵢ²)-GDP (Dong, Roth & Su 2019), and μ₁,ᵢ ≤ (1 + 2^-36)μᵢ for
// every i, so steps 2-3 apply to μ = √(Σ μᵢ²). Hence: calibrate with
// μᵢ = GaussianCalibrationSensitivity(Δᵢ, σᵢ, nᵢ)/σᵢ.
//
// Sums and linear views of several discrete Gaussians (package capefm's
// CAPE views: the aggregator's view of u_h = ê_h + g_h given Σ ê, a site's
// view of the other sites' Σ g) are not discrete Gaussians. Poisson
// summation over the lattice of the sum's fibre shows that their pmf is a
// lattice Gaussian (a discrete Gaussian with the view's covariance on its
// lattice) up to a factor 1 ± e^{−2π²(σ/step)²}-small, and step 1 above
// runs unchanged on the whitened lattice Σ^{−1/2}(gℤⁿ), whose dual lattice
// has minimum λ_min(Σ)^{1/2}/g, with s₂ = 8g/λ_min(Σ)^{1/2}: the same
// margin covers them when λ_min(Σ)^{1/2}/g ≥ 2^21 (capefm package
// documentation, Lattice; capefm.TestLatticePoissonStep).
//
// zCDP and Rényi accounting of the unsampled discrete Gaussian need no
// margin: its Rényi divergence is at most α‖κ‖²/2s² exactly (Canonne,
// Kamath & Steinke 2020 prove it for one coordinate; Rényi divergences of
// product distributions add), so GaussianGridSlack alone is enough there.
// For subsampled (mixture) releases steps 1-2 give D_α ≤ D_α(continuous,
// σ₁) + (2α − 1)/(α − 1)·ln ρ; the last term is below 10^-534 per release and
// is not otherwise accounted. AddLaplace is exactly the
// discrete Laplace mechanism, whose privacy loss is at most ‖κ‖₁/(b/g):
// LaplaceGridSlack alone is enough.
func GaussianCalibrationSensitivity(sens, sigma float64, n int) float64 {
	if math.IsNaN(sens) || math.IsInf(sens, 0) || sens < 0 {
		return math.Inf(1)
	}
	slack := GaussianGridSlack(sigma, n)
	if math.IsInf(slack, 0) {
		return slack
	}
	return marginUp(sens, slack)
}

// upFloat64 returns the smallest float64 ≥ z.
func upFloat64(z *big.Float) float64 {
	f, acc := z.Float64()
	if acc == big.Below {
		f = math.Nextafter(f, math.Inf(1))
	}
	return f
}

// marginUp returns (a + b)·(1 + DiscreteGaussianMargin), computed exactly
// and rounded up (a, b finite).
func marginUp(a, b float64) float64 {
	const prec = 2200 // exact for any two float64 and the factor 1 + 2^-32
	x := new(big.Float).SetPrec(prec).Add(big.NewFloat(a), big.NewFloat(b))
	m := new(big.Float).SetPrec(prec).Mul(x, big.NewFloat(DiscreteGaussianMargin))
	return upFloat64(x.Add(x, m))
}
