// Package regress fits linear, logistic and robust (L1) regression models, privately or
// not, behind one estimator interface.
//
// # Data
//
// Rows are encoded by package schema: features x with ‖x‖₂ ≤ 1 (intercept
// included) and a target y ∈ [−1, 1] (linear) or y ∈ {0, 1} (logistic), the
// target last. The Functional Mechanism family sees the data only through
// sufficient statistics (N, Σz, Σzzᵀ of the encoded rows z = (x, y)); other
// estimators may also need the rows themselves (Estimator.NeedsRows).
//
// # Objectives
//
// All objectives are averages over the N rows, written as quadratic
// polynomials in ω (the Functional Mechanism's representation):
//
//	linear:   f(ω) = (1/N)Σ(y − xᵀω)² = Λ0 + Λ1ᵀω + ωᵀΛ2ω,
//	          Λ1 = −(2/N)Σ y x,   Λ2 = (1/N)Σ x xᵀ;
//	logistic: f̃(ω) = log 2 + Λ1ᵀω + ωᵀΛ2ω  (2nd-order Taylor at 0),
//	          Λ1 = (1/N)Σ(½ − y)x,   Λ2 = (1/(8N))Σ x xᵀ.
//
// Config.LogisticApprox replaces the Taylor expansion by a Chebyshev or
// least-squares quadratic of log(1 + e^z) over the public range
// |xᵀω| ≤ LogisticRange: Λ2's factor ⅛ becomes a2 < ⅛ (logapprox.go, with
// the sensitivities).
//
// # Mechanisms
//
//   - nonprivate: exact least squares (linear) or exact maximum likelihood
//     (logistic, Newton's method on the rows). A reference, not a release.
//   - truncated: the minimiser of the Taylor-truncated logistic objective,
//     without noise (a reference for what FM approximates).
//   - fm: the Functional Mechanism of Zhang et al. (ε-DP, Laplace noise on
//     every released coefficient with the L1 sensitivities as published:
//     2(d+1)²/N linear, (d²/4 + 3d)/N logistic).
//   - gaussian-fm: Gaussian FM of Tasnim et al. with the corrections of
//     PRIVACY-NOTES items 1-4: the L2 sensitivities Δ1 = 4/N, Δ2 = √2/N
//     (linear) and Δ1 = 1/N, Δ2 = √2/(8N) (logistic), where Δ2 is the
//     Frobenius bound on the released upper triangle; Λ1 and Λ2 calibrated
//     jointly as one Gaussian mechanism by the analytic Gaussian (Balle &
//     Wang 2018); Λ0 is not released.
//   - relaxed-fm: relaxed FM of Ding et al. as in the Gaussian FM seed's
//     Table A1: one Gaussian mechanism on the whole coefficient vector with L2
//     sensitivity 2√(1+4d+d²)/N (linear) or √(d²/16+d)/N (logistic),
//     calibrated by the analytic Gaussian.
//   - objpert: objective perturbation as approximate minima perturbation
//     (Iyengar et al. 2019), (ε, δ)-DP: Gaussian objective noise, a verified
//     optimiser tolerance and Gaussian output noise (logistic as Chaudhuri,
//     Monteleoni & Sarwate 2011; linear on a public parameter ball as Kifer,
//     Smith & Thakurta 2012); see objpert.go.
//   - noisygd: noisy gradient descent (Song, Chaudhuri & Sarwate 2013) in a
//     public parameter ball, (ε, δ)-DP by Rényi DP, optionally with Poisson
//     mini-batches; see noisygd.go.
//   - irls (Kind Robust): DP-IRLS for L1 regression (Park & Welling) with
//     symmetric Gaussian noise on the weighted second moment and exact
//     Gaussian-DP composition, by default warm-started from a Gaussian FM
//     least-squares fit inside the same budget; irls-wishart is the seed's
//     variant, labelled NOT DP.
//     nonprivate with Kind Robust is the exact least-absolute-deviations fit.
//   - dpme: DPME (Lei 2011), a Laplace histogram on the schema's grid,
//     fitted on weighted synthetic cells; pure ε-DP, histogram L1
//     sensitivity 2 (dpme.go).
//   - filter-priority: Filter-Priority (Cormode, Procopiuc, Srivastava &
//     Tran 2012), geometric noise, threshold θ and priority sampling without
//     materialising empty cells; exactly ε-DP (filterpriority.go,
//     synth.Filter).
//
// # Post-processing
//
// Only released (noisy) values are post-processed: Λ2 is noised on its upper
// triangle and mirrored (symmetric), projected onto the public identities of
// the schema's encoding when Config.Structure is set (GramStructure: the
// intercept's known diagonal, indicator diagonals equal to their intercept
// entries, zero products within a categorical feature; structure.go), a
// data-independent ridge λ is added to
// its diagonal (regularisation, FM Section 6.1), and eigen-directions whose
// eigenvalue is at most TrimFraction·λ are removed (spectral trimming, FM
// Section 6.2, which includes the projection onto the PSD cone followed by
// dropping the null space). The minimiser is then ω = −½ Q'ᵀ Λ'⁻¹ Q' Λ1, the minimum-norm
// solution in the kept eigen-space, or, with Config.SolveRadius, the
// minimiser over the public ball ‖ω‖ ≤ SolveRadius in that space.
package regress

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/report"
)

// Kind is the regression model.
type Kind string

// The model kinds.
const (
	Linear   Kind = "linear"
	Logistic Kind = "logistic"
	// Robust is least-absolute-deviations (L1) linear regression, fitted by
	// iteratively reweighted least squares (see irls.go).
	Robust Kind = "robust"
)

// ParseKind validates a model kind.
func ParseKind(s string) (Kind, error) {
	switch Kind(s) {
	case Linear, Logistic, Robust:
		return Kind(s), nil
	}
	return "", fmt.Errorf("unknown model %q (want linear, logistic or robust)", s)
}

// Stats is what the FM family needs from the data: sufficient statistics of
// the encoded rows z ∈ R^K (features then target). suffstat.Moments
// implements it.
type Stats interface {
	K() int
	N() int64
	Sum(i int) float64
	At(i, j int) float64
}

// Data is the input to an estimator.
type Data struct {
	Stats Stats
	// Rows holds the encoded rows (row-major, K per row) for estimators that
	// need them; nil when only statistics were computed.
	Rows []float64
}

// Config holds the public parameters of a fit.
type Config struct {
	Kind    Kind
	Epsilon float64
	Delta   float64
	// Lambda is the data-independent ridge added to the noisy Λ2. Negative
	// means LambdaFactor times the per-entry noise standard deviation of Λ2.
	Lambda float64
	// LambdaFactor sets the ridge when Lambda < 0; 0 means
	// DefaultLambdaFactor.
	LambdaFactor float64
	// EigenFloor is c in gaussian-fm's eigenvalue floor c·τ2·√d for
	// linear regression (regress.EigenFloor), used instead of the ridge and
	// trimming when Lambda < 0: 0 means DefaultEigenFloorFactor, negative
	// turns clipping off (the ridge LambdaFactor·τ2 and trimming, as fm).
	EigenFloor float64
	// Split is the share of Gaussian FM's budget (of the whitened squared
	// sensitivity) given to Λ1; the rest goes to Λ2. 0 means 0.5.
	Split float64
	// SolveRadius, when > 0, makes the FM family minimise the noisy
	// objective over the public ball ‖ω‖ ≤ SolveRadius instead of over all
	// of ℝ^d (post-processing of the released values; PostProcess.Radius).
	// It must not depend on the data. 0 means unconstrained.
	SolveRadius float64
	// Structure, when non-nil, is the public structure of the mean Gram
	// matrix of the encoded features (GramStructureFor from the schema):
	// the FM family projects the released Λ2 onto it before solving
	// (post-processing; GramStructure.Project). nil skips the projection.
	Structure *GramStructure
	// LogisticApprox is the FM family's quadratic stand-in for the logistic
	// loss: "taylor" (the seed's expansion at 0; "" means taylor),
	// "chebyshev" or "least-squares" (fitted over the public range
	// |xᵀω| ≤ LogisticRange; logapprox.go). Ignored for linear regression.
	LogisticApprox string
	// LogisticRange is R for the chebyshev and least-squares
	// approximations; 0 means DefaultLogisticRange.
	LogisticRange float64
	// Huber is η, the scale of objpert's and noisygd's Huber loss on linear
	// models (huber.go): 0 means DefaultHuberScale, a negative value the
	// squared loss on the public parameter ball. For noisygd's logistic
	// models it is c ∈ (0, 1], the norm each row's gradient is clipped to
	// (0 means DefaultLogisticClip, a negative value the unclipped loss on
	// the ball). Ignored by other mechanisms; a positive value on objpert's
	// logistic models is refused.
	Huber float64
	// Source supplies the randomness of the noise.
	Source noise.Source
	// ObjPert, NoisyGD and IRLS hold the public parameters of the objpert,
	// noisygd and irls mechanisms (zero values mean the documented defaults).
	ObjPert ObjPertOptions
	NoisyGD NoisyGDOptions
	IRLS    IRLSOptions

	// unitAware is set by the mechanisms that calibrate unit statistics
	// (UnitStats) at sensitivityN: the FM family, irls and noisygd;
	// unitRows by those among them that read the rows (Data.Rows, at most
	// K per unit) with a unit-level derivation: irls and noisygd.
	unitAware, unitRows bool
}

// Result is a fitted model in the encoded feature space.
type Result struct {
	Coef    []float64
	Privacy report.Privacy
	// Trimmed counts the eigen-directions removed by spectral trimming.
	Trimmed int
	// Radius is the parameter ball noisygd projected onto (0 for none or
	// other mechanisms): its default can depend on the released step
	// (the noise-walk ball), so the fit states the one it used.
	Radius float64
	// Warnings carries non-fatal facts the user should see.
	Warnings []string
	// Released is the noisy objective an FM-family fit released, for
	// inference from released values (nil for other mechanisms).
	Released *Released `json:"-"`
	// ObjPert is what a logistic objpert fit with a Hessian share released
	// for inference (nil otherwise).
	ObjPert *ObjPertRelease `json:"-"`
}

// Estimator fits a model.
type Estimator interface {
	// Name is the mechanism's CLI name.
	Name() string
	// NeedsRows reports whether Fit needs Data.Rows for a model of that
	// kind in some configuration; NeedsRowsFor decides for a whole
	// configuration.
	NeedsRows(Kind) bool
	// Private reports whether the output is differentially private.
	Private() bool
	Fit(ctx context.Context, data Data, cfg Config) (*Result, error)
}

// Mechanisms lists the mechanism names New accepts (the registry), sorted.
func Mechanisms() []string {
	names := make([]string, len(registry))
	for i, m := range registry {
		names[i] = m.Name
	}
	sort.Strings(names)
	return names
}

// New returns the estimator for a mechanism name.
func New(mechanism string) (Estimator, error) {
	if m, ok := LookupMechanism(mechanism); ok {
		return m.new(), nil
	}
	return nil, fmt.Errorf("unknown mechanism %q (want one of %s)", mechanism, strings.Join(Mechanisms(), ", "))
}

// validate checks the public configuration against the data.
func (c *Config) validate(data Data, private bool) error {
	if c.Kind != Linear && c.Kind != Logistic {
		return fmt.Errorf("regress: unknown model kind %q", c.Kind)
	}
	if data.Stats == nil {
		return errors.New("regress: no statistics")
	}
	if data.Stats.K() < 2 {
		return fmt.Errorf("regress: rows have %d columns; need at least one feature and the target", data.Stats.K())
	}
	if data.Stats.N() < 1 {
		return errors.New("regress: the dataset is empty")
	}
	if !private {
		return nil
	}
	if u, ok := unitOf(data.Stats); ok && (!c.unitAware || (data.Rows != nil && !c.unitRows)) {
		return fmt.Errorf("regress: privacy unit %q: this mechanism bounds one row's influence and has no sensitivity derived for a unit of %d rows; use fm, relaxed-fm, gaussian-fm, irls or noisygd", u.Column, u.MaxRows)
	}
	if !(c.Epsilon > 0) || math.IsInf(c.Epsilon, 0) {
		return fmt.Errorf("regress: ε must be finite and > 0, got %v", c.Epsilon)
	}
	if c.Delta < 0 || c.Delta >= 1 || math.IsNaN(c.Delta) {
		return fmt.Errorf("regress: δ must be in [0, 1), got %v", c.Delta)
	}
	if c.Source == nil {
		return errors.New("regress: no randomness source")
	}
	if math.IsNaN(c.EigenFloor) || math.IsInf(c.EigenFloor, 0) {
		return fmt.Errorf("regress: eigenvalue floor factor must be finite, got %v", c.EigenFloor)
	}
	if c.Split < 0 || c.Split >= 1 || math.IsNaN(c.Split) {
		return fmt.Errorf("regress: budget split must be in (0, 1), got %v", c.Split)
	}
	if math.IsNaN(c.Lambda) || math.IsInf(c.Lambda, 0) {
		return fmt.Errorf("regress: λ must be finite, got %v", c.Lambda)
	}
	if math.IsNaN(c.Huber) || math.IsInf(c.Huber, 0) {
		return fmt.Errorf("regress: --huber must be finite, got %v", c.Huber)
	}
	if math.IsNaN(c.SolveRadius) || math.IsInf(c.SolveRadius, 0) || c.SolveRadius < 0 {
		return fmt.Errorf("regress: the solving ball's radius must be finite and ≥ 0, got %v", c.SolveRadius)
	}
	if c.Structure != nil {
		if err := c.Structure.validate(); err != nil {
			return err
		}
		if d := data.Stats.K() - 1; c.Structure.D != d {
			return fmt.Errorf("regress: the Gram structure is for %d encoded features, the data have %d (was it built from this schema?)", c.Structure.D, d)
		}
	}
	return nil
}

func randomness(src noise.Source) (string, bool) {
	if src == nil {
		return "none", false
	}
	return src.String(), !src.Secure()
}
