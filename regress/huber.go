package regress

import "math"

// # The Huber loss of objpert and noisygd on linear models (issue 26)
//
// objpert and noisygd perturb the gradient of a per-row loss. With the
// squared loss (y − xᵀω)² that gradient, −2(y − xᵀω)x, is only bounded on a
// public parameter ball ‖ω‖ ≤ R, and its replace-one difference bound
// 2(R + 2) grows with R: a ball large enough not to cap the fit (‖ω‖ ≈ 10
// on a collinear design) costs several times the noise of one that caps
// it. A loss whose derivative in the residual r = y − xᵀω is bounded by
// 2η needs no ball at all: its per-row gradient −ℓ'(r)x has norm ≤ 2η for
// every ω, and the replace-one difference is ≤ 4η. At the residual scale
// of an encoded table (η ≈ 0.1–0.5) that is 0.4–2 against 2(R + 2) ≈ 8–20.
//
// The loss keeps the squared loss's scale near 0 (ℓ(r) ≈ r², ℓ'' ≤ 2, so
// the smoothness bound and the learning rate are unchanged):
//
//   - noisygd: Huber's loss ℓ(r) = r² for |r| ≤ η, 2η|r| − η² beyond,
//     ℓ'(r) = 2·clamp(r, −η, η);
//   - objpert: the pseudo-Huber loss ℓ(r) = 2η²(√(1 + (r/η)²) − 1),
//     ℓ'(r) = 2r/√(1 + (r/η)²), ℓ''(r) = 2(1 + (r/η)²)^(−3/2) ∈ (0, 2]:
//     objective perturbation needs a twice-differentiable loss.
//
// The estimand changes with it: the minimiser of Σℓ(y_i − x_iᵀω) is the
// Huber M-estimator, which equals least squares' population coefficients
// when the errors are symmetric about the regression line (as auto's
// Huber path; regress/auto.go) and is robust to outlying rows otherwise.
// Config.Huber < 0 restores the squared loss on the ball.

// DefaultHuberScale is the default η of objpert's and noisygd's linear
// Huber loss for N = n rows (units under a privacy unit), d coefficients
// and budget ε, a rule in public quantities only: auto's residual floor
// AutoHuberResidualFloor (η = 0.1–0.35 where the noise dominates, growing
// like √(N·ε/d) toward least squares). See docs/mechanisms.md.
func DefaultHuberScale(n int64, d int, epsilon float64) float64 {
	return AutoHuberResidualFloor(n, d, epsilon)
}

// huberScale resolves Config.Huber for a linear fit on n rows with d
// coefficients: η > 0 for the Huber loss, or 0 for the squared loss
// (Config.Huber < 0, or a model other than linear).
func huberScale(cfg Config, n int64, d int) float64 {
	switch {
	case cfg.Kind != Linear || cfg.Huber < 0:
		return 0
	case cfg.Huber > 0:
		return cfg.Huber
	}
	eps := cfg.Epsilon
	if math.IsInf(eps, 0) || eps == math.MaxFloat64 {
		eps = 0
	}
	return DefaultHuberScale(n, d, eps)
}
