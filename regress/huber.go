package regress

import (
	"fmt"
	"math"
)

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
// Huber loss: DefaultHuberEta on the encoded target scale |y| ≤ 1, for
// every N, d and ε (the arguments keep the rule's signature public-only).
// Chosen by `dplearn experiment huber-sweep` on embedded and synthetic data
// (docs/mechanisms.md): η = 0.5 was within 1.12× of the best reference on
// every linear cell for noisygd, where the floor rule of auto's Huber path
// (η = 0.1–0.35 in the noise-dominated cells) lost up to 4.4×: noisy
// gradient descent, unlike DP-IRLS, is not preconditioned, and a small η
// flattens the loss (curvature 2P(|r| < η)) so that the descent does not
// converge in its T steps.
func DefaultHuberScale(n int64, d int, epsilon float64) float64 {
	return DefaultHuberEta
}

// DefaultHuberEta is the default Huber scale η (DefaultHuberScale).
const DefaultHuberEta = 0.5

// HuberScale is η of the Huber loss objpert and noisygd use for cfg on n
// rows (units under a privacy unit) with d coefficients, or 0 for the
// squared (or logistic) loss: the one resolution of Config.Huber.
func HuberScale(cfg Config, n int64, d int) float64 { return huberScale(cfg, n, d) }

// huberScale resolves Config.Huber for a linear fit on n rows with d
// coefficients: η > 0 for the Huber loss, or 0 for the squared loss
// (Config.Huber < 0, or a model other than linear).
func huberScale(cfg Config, n int64, d int) float64 {
	switch {
	case !usesHuber(cfg):
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

// usesHuber reports whether cfg selects the Huber loss (linear models with
// Config.Huber ≥ 0: the default or a given η), the one test behind
// huberScale's η > 0.
func usesHuber(cfg Config) bool { return cfg.Kind == Linear && cfg.Huber >= 0 }

// configRows is implemented by estimators whose need for the rows depends
// on more of the configuration than the model (objpert: linear fits read
// the rows for the Huber loss only).
type configRows interface {
	needsRowsFor(cfg Config) bool
	// rowsHint says how to fit a model of that kind without the rows.
	rowsHint(k Kind) string
}

// RowsHint is a clause for the error that refuses to fit est without the
// rows, naming the configuration that needs none ("" if there is none).
func RowsHint(est Estimator, k Kind) string {
	if c, ok := est.(configRows); ok {
		return c.rowsHint(k)
	}
	return ""
}

// NeedsRowsFor reports whether est needs Data.Rows to fit cfg:
// NeedsRows(cfg.Kind), refined by the whole configuration where the
// estimator's loss decides it (objpert's squared loss, --huber -1, fits a
// linear model from the statistics alone).
func NeedsRowsFor(est Estimator, cfg Config) bool {
	if c, ok := est.(configRows); ok {
		return c.needsRowsFor(cfg)
	}
	return est.NeedsRows(cfg.Kind)
}

// # noisygd's clipped logistic gradient (issue 26, fifth pass)
//
// The logistic loss log(1 + e^z) − yz, z = xᵀω, has the per-row gradient
// (σ(z) − y)x, of norm < 1 without a ball (‖x‖ ≤ 1), and DP gradient
// descent pays that bound on every row, although near a good fit most
// rows' gradients are far smaller. noisygd's logistic default clips each
// row's gradient to norm c (Config.Huber, the same option as the linear
// Huber scale: the bound on what one row can pull):
//
//	g_c(ω; x, y) = (σ(z) − y)x·min(1, c/(|σ(z) − y|·‖x‖))
//	             = clamp(σ(z) − y, −c/‖x‖, c/‖x‖)·x,
//
// the gradient of a Huberised logistic loss with the row's own knee
// c/‖x‖: the logistic loss where |σ(z) − y| ≤ c/‖x‖, continued linearly
// beyond (the clamp is non-decreasing in z, so the loss is convex, and its
// curvature is ≤ ¼‖x‖², so the smoothness bound and the learning rate 4
// are the logistic loss's). Its norm is ≤ G = c for every ω, and two rows'
// differ by ≤ D = 2c, attained at x' = −x, unit norm, y = y' = 0, ω = 0
// when c ≤ ½ (TestNoisyGDLogisticClipSensitivity): at c = ½ half the
// unclipped loss's D = 2, a quarter of its noise variance, and no ball is
// needed (the default has none).
//
// The estimand is the root of Σ g_c(ω; x_i, y_i) = 0, a bounded-influence
// logistic M-estimator: rows the fit gets badly wrong pull with norm c
// instead of up to 1. It is not the maximum-likelihood estimate (objpert's
// estimand, for inference): where many gradients are clipped it shrinks
// the log-odds toward 0; the classifier sign(xᵀω) and the log-loss of its
// predictions are what it is chosen for. DefaultLogisticClip is chosen by
// `dplearn experiment utility-refs-logistic` (docs/mechanisms.md);
// Config.Huber < 0 restores the logistic loss on the ball ‖ω‖ ≤ 2√d bit
// for bit.

// DefaultLogisticClip is the default c of noisygd's clipped logistic
// gradient (see above).
const DefaultLogisticClip = 0.5

// NoisyGDHuberScale is the residual bound noisygd uses for cfg on n rows
// (units under a privacy unit) with d coefficients: η of the linear Huber
// loss (HuberScale), c of the clipped logistic gradient (Config.Huber > 0, or
// DefaultLogisticClip when it is 0), or 0 for the squared or plain
// logistic loss (Config.Huber < 0): the one resolution of Config.Huber
// for noisygd.
func NoisyGDHuberScale(cfg Config, n int64, d int) float64 {
	if cfg.Kind == Logistic {
		switch {
		case cfg.Huber < 0:
			return 0
		case cfg.Huber > 0:
			return cfg.Huber
		}
		return DefaultLogisticClip
	}
	return huberScale(cfg, n, d)
}

// checkHuberKind refuses an explicit Huber scale on a model other than
// linear (where it would be silently ignored).
func checkHuberKind(cfg Config) error {
	if cfg.Kind != Linear && cfg.Huber > 0 {
		return fmt.Errorf("--huber %v applies to linear models only, not %q", cfg.Huber, cfg.Kind)
	}
	return nil
}
