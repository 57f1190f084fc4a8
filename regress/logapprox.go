package regress

import (
	"fmt"
	"math"
)

// Quadratic approximations of the logistic loss (issue 16).
//
// The logistic loss of a row is ℓ(z, y) = log(1 + e^z) − y·z with z = xᵀω.
// Only g(z) = log(1 + e^z) needs approximating; the FM family replaces it by
// a quadratic g(z) ≈ a0 + a1·z + a2·z², which makes the average objective
//
//	f̃(ω) = a0 + Λ1ᵀω + ωᵀΛ2ω,  Λ1 = (1/N)Σ(a1 − y)x,  Λ2 = (a2/N)Σ x xᵀ.
//
// The FM seed takes the Taylor expansion at 0: a1 = ½, a2 = ⅛. That is exact
// at z = 0 only; the curvature of g, σ(z)(1 − σ(z)), falls from ¼ at 0 to
// 0.105 at |z| = 2 and 0.045 at |z| = 3, so the truncated objective is too
// curved and its minimiser too short (the noise-free relative coefficient
// error is 0.3-0.4 on SmokeBan and CPS1988).
//
// The alternatives fit the quadratic over the public range |z| ≤ R, which
// holds for every row and every ω in the public ball ‖ω‖ ≤ R because
// ‖x‖ ≤ 1 (Cauchy-Schwarz):
//
//   - "chebyshev": the degree-2 truncation of g's Chebyshev series on
//     [−R, R] (near-minimax in the sup norm);
//   - "least-squares": the L2([−R, R]) projection on the quadratics
//     (Legendre series truncated at degree 2).
//
// Both are computed by quadrature from public numbers only (R), never from
// the data.
//
// # Why a1 = ½ for every symmetric range
//
// g(z) − z/2 = log(e^{−z/2} + e^{z/2}) = log(2cosh(z/2)) is even. Both
// projections map an even function on a symmetric interval to an even
// polynomial (the odd basis functions T1, P1 are orthogonal to it) and the
// odd part z/2 to itself, so a1 = ½ exactly, whatever R. The code uses the
// exact ½, so Λ1 and its sensitivity are the seed's.
//
// # Consequence: a rescaling of the Taylor fit
//
// With a1 fixed at ½, Λ1 does not depend on the approximation and Λ2 is the
// Taylor Λ2 times 8·a2. Gaussian FM's Λ2 sensitivity (below) and hence its
// noise τ2, the default ridge (a multiple of τ2) and the trimming floor (a
// fraction of the ridge) all scale by the same 8·a2, while Λ1's noise is
// unchanged: the noisy minimiser is distributed as the Taylor one times
// 1/(8·a2) (up to the rounding of the noise grid; the noise-free minimiser
// is exactly that). The approximation moves the length of ω, not its
// direction, so it changes the coefficients and the predicted
// probabilities but not (in distribution) a classification by sign(xᵀω).
//
// # Sensitivities (replace-one, ‖x‖ ≤ 1, y ∈ {0, 1}; 0 < a2 ≤ ⅛)
//
//	Λ1, L2:  ‖(½ − y)x − (½ − y')x'‖/N ≤ (½ + ½)/N = 1/N   (unchanged);
//	Λ2, L2 of the released upper triangle: a2·‖xxᵀ − x'x'ᵀ‖_F/N ≤ √2·a2/N
//	        (the Frobenius bound of SensitivitiesFor, times a2/⅛·⅛);
//	fm, L1:  the published (d²/4 + 3d)/N has d²/4 = 2·⅛·d² from Λ2, so
//	        (2·a2·d² + 3d)/N;
//	relaxed-fm, L2: the published √(d²/16 + d)/N has (d/4)² = (2·⅛·d)² from
//	        Λ2, so √((2·a2·d)² + d)/N.
//
// Each bound is the Taylor bound with the Λ2 part scaled by 8·a2 ≤ 1, so
// each is at most the Taylor bound. TestLogisticApproxSensitivity checks
// them on random and on extremal neighbouring pairs (e1 against e2, which
// attains the Λ2 bound).

// Logistic approximation names (Config.LogisticApprox).
const (
	ApproxTaylor       = "taylor"
	ApproxChebyshev    = "chebyshev"
	ApproxLeastSquares = "least-squares"
)

// LogisticQuadratic is a quadratic a0 + a1·z + a2·z² standing in for
// log(1 + e^z) in the FM family's logistic objective.
type LogisticQuadratic struct {
	// Name is ApproxTaylor, ApproxChebyshev or ApproxLeastSquares.
	Name string
	// Range is R, the public bound |xᵀω| ≤ R the fit is made over (0 for
	// Taylor, which is local at 0).
	Range float64
	// A0, A1, A2 are the coefficients; A1 is ½ for every approximation.
	A0, A1, A2 float64
}

// TaylorQuadratic is the FM seed's expansion at 0: log 2 + z/2 + z²/8.
var TaylorQuadratic = LogisticQuadratic{Name: ApproxTaylor, A0: math.Ln2, A1: 0.5, A2: 0.125}

// DefaultLogisticRange is the default R of the Chebyshev and least-squares
// approximations: R = 4, the range of xᵀω over which the approximation is
// fitted. It is a public constant (it depends on no data); see
// docs/mechanisms.md ("Logistic approximation") for the sweep behind it.
const DefaultLogisticRange = 4.0

// maxLogisticRange bounds R: beyond it the fitted curvature a2 is tiny and
// the fit is a linear classifier of unbounded length.
const maxLogisticRange = 64.0

// NewLogisticQuadratic returns the quadratic approximation name over the
// public range |z| ≤ r (r = 0 means DefaultLogisticRange; ignored for
// Taylor).
func NewLogisticQuadratic(name string, r float64) (LogisticQuadratic, error) {
	switch name {
	case "", ApproxTaylor:
		return TaylorQuadratic, nil
	case ApproxChebyshev, ApproxLeastSquares:
	default:
		return LogisticQuadratic{}, fmt.Errorf("regress: unknown logistic approximation %q (want %s, %s or %s)", name, ApproxTaylor, ApproxChebyshev, ApproxLeastSquares)
	}
	if r == 0 {
		r = DefaultLogisticRange
	}
	if !(r > 0) || r > maxLogisticRange {
		return LogisticQuadratic{}, fmt.Errorf("regress: logistic approximation range R must be in (0, %g], got %v", maxLogisticRange, r)
	}
	// Even part h(z) = log(2cosh(z/2)) = softplus(z) − z/2.
	h := func(z float64) float64 { return softplus(z) - z/2 }
	var c0, c2 float64
	const m = 4096
	if name == ApproxChebyshev {
		// c_k = (2/π)∫_0^π h(R cos θ) cos kθ dθ (c0 with 1/π), midpoint
		// rule: exact for trigonometric polynomials of degree < 2m, so
		// spectrally accurate for this analytic h.
		for i := 0; i < m; i++ {
			th := (float64(i) + 0.5) * math.Pi / m
			v := h(r * math.Cos(th))
			c0 += v
			c2 += v * math.Cos(2*th)
		}
		c0 /= m
		c2 *= 2.0 / m
		// c0·T0 + c2·T2(z/R), T2(t) = 2t² − 1.
		return finishQuadratic(name, r, c0-c2, 2*c2/(r*r))
	}
	// Legendre: c_k = (2k+1)/2 ∫_{−1}^{1} h(Rt) P_k(t) dt by composite
	// Simpson on m intervals (h is analytic; the error is far below 1e-12).
	for i := 0; i <= m; i++ {
		t := -1 + 2*float64(i)/m
		w := 2.0
		switch {
		case i == 0 || i == m:
			w = 1
		case i%2 == 1:
			w = 4
		}
		w *= 2.0 / m / 3
		v := h(r * t)
		c0 += w * v
		c2 += w * v * (3*t*t - 1) / 2
	}
	c0 /= 2
	c2 *= 2.5
	// c0 + c2·P2(z/R), P2(t) = (3t² − 1)/2.
	return finishQuadratic(name, r, c0-c2/2, 1.5*c2/(r*r))
}

func finishQuadratic(name string, r, a0, a2 float64) (LogisticQuadratic, error) {
	// h is convex with h'' ≤ ¼ (σ(1 − σ) ≤ ¼), so its best quadratic on a
	// symmetric range has 0 < a2 ≤ ⅛; the sensitivities rely on it.
	if !(a2 > 0 && a2 <= 0.125) {
		return LogisticQuadratic{}, fmt.Errorf("regress: %s approximation on |z| ≤ %v gave curvature %v outside (0, 1/8]", name, r, a2)
	}
	return LogisticQuadratic{Name: name, Range: r, A0: a0, A1: 0.5, A2: a2}, nil
}

// Eval returns a0 + a1·z + a2·z².
func (lq LogisticQuadratic) Eval(z float64) float64 { return lq.A0 + lq.A1*z + lq.A2*z*z }

// String describes the approximation for reports.
func (lq LogisticQuadratic) String() string {
	if lq.Name == ApproxTaylor {
		return "2nd-order Taylor expansion of log(1+e^z) at 0 (a2 = 1/8)"
	}
	return fmt.Sprintf("%s quadratic of log(1+e^z) on the public range |xᵀω| ≤ %g (a1 = 1/2, a2 = %.6g)", lq.Name, lq.Range, lq.A2)
}

// logisticQuadratic returns the configured approximation (Taylor unless
// Config.LogisticApprox says otherwise). It reads public parameters only.
func (c *Config) logisticQuadratic() (LogisticQuadratic, error) {
	if math.IsNaN(c.LogisticRange) || math.IsInf(c.LogisticRange, 0) || c.LogisticRange < 0 {
		return LogisticQuadratic{}, fmt.Errorf("regress: logistic approximation range R must be finite and > 0, got %v", c.LogisticRange)
	}
	return NewLogisticQuadratic(c.LogisticApprox, c.LogisticRange)
}
