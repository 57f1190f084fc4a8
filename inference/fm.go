package inference

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dplearn/dplearn/regress"
)

// DefaultReplicates is the number of parametric-bootstrap replicates. The
// interval ends are the 2.5% and 97.5% quantiles of the replicates; with
// 2000 of them the Monte Carlo error of a 95% interval's coverage is about
// ±0.3 percentage points (measured in TestCoverage's table).
const DefaultReplicates = 2000

// DefaultSeed seeds the bootstrap when Options.Seed is 0, so the intervals
// are a deterministic function of the released values.
const DefaultSeed = 0x5eed_c1_0f_15

// Options configures interval computation.
type Options struct {
	// Level is the nominal coverage in (0, 1); 0 means 0.95.
	Level float64
	// Replicates is the bootstrap size; 0 means DefaultReplicates.
	Replicates int
	// Seed seeds the bootstrap's generator; 0 means DefaultSeed. The
	// bootstrap simulates the (public) noise distribution around released
	// values: it is post-processing, not privacy noise, so a deterministic
	// generator is right here.
	Seed uint64
	// CalibrationOuter and CalibrationInner size the second-level
	// calibration (0: the package's CalibrationOuter and CalibrationInner)
	// and CalibrationObserved the number of first-level replicates
	// eigen-decomposed for it (0: calibrationObserved, at least
	// CalibrationOuter). Budget.Options sets all three from the cost
	// model's budget.
	CalibrationOuter, CalibrationInner, CalibrationObserved int

	// calibration selects the second-level calibration's variant for the
	// coverage probes (TestCoverageEdgeProbe); the zero value is the
	// shipped rule.
	calibration calibrationVariant
}

func (o Options) level() (float64, error) {
	if o.Level == 0 {
		return 0.95, nil
	}
	if !(o.Level > 0 && o.Level < 1) {
		return 0, fmt.Errorf("inference: confidence level must be in (0, 1), got %v", o.Level)
	}
	return o.Level, nil
}

func (o Options) seed() uint64 {
	if o.Seed == 0 {
		return DefaultSeed
	}
	return o.Seed
}

// calibrationSizes returns the second level's outer and inner counts.
func (o Options) calibrationSizes() (outer, inner int) {
	outer, inner = CalibrationOuter, CalibrationInner
	if o.CalibrationOuter > 0 {
		outer = o.CalibrationOuter
	}
	if o.CalibrationInner > 0 {
		inner = o.CalibrationInner
	}
	return outer, inner
}

// MinForecastReplicates is the fewest simulated fits a forecast runs (the
// budget of PlanBudget may give it fewer than ForecastReplicates; a
// robust SD from 20 draws carries a Monte Carlo error of about 25%, still
// enough for a forecast's order of magnitude).
const MinForecastReplicates = 20

// forecastReplicates is replicates with the forecasts' floor.
func (o Options) forecastReplicates() (int, error) {
	if o.Replicates == 0 {
		return DefaultReplicates, nil
	}
	if o.Replicates < MinForecastReplicates {
		return 0, fmt.Errorf("inference: a forecast needs at least %d simulated fits, got %d", MinForecastReplicates, o.Replicates)
	}
	return o.Replicates, nil
}

func (o Options) replicates() (int, error) {
	if o.Replicates == 0 {
		return DefaultReplicates, nil
	}
	if o.Replicates < 100 {
		return 0, fmt.Errorf("inference: need at least 100 bootstrap replicates, got %d", o.Replicates)
	}
	return o.Replicates, nil
}

// TargetMoment is the released (noisy) Λ0 = (1/N)Σy² of a linear model's
// encoded target (regress.ReleaseTargetMoment), which linear intervals need
// for the residual variance.
type TargetMoment struct {
	Value float64 `json:"value"`
	// KeptShare is 1 − f, f the (released) share of the N rows that are
	// the zero rows of records dropped for a missing value
	// (regress.ReleaseDroppedShare); 0 means 1 (nothing dropped). Zero rows
	// shrink Λ0 − βᵀΛ2β to (1 − f)σ², so the residual variance is divided
	// by KeptShare.
	KeptShare float64 `json:"kept_share,omitempty"`
	// SamplingInflation multiplies the sampling part's variance (a public
	// design effect: fit.UnitSamplingInflation under a privacy unit, whose
	// rows are correlated within a unit); 0 means 1.
	SamplingInflation float64 `json:"sampling_inflation,omitempty"`
}

// Coefficient is the inference for one encoded coefficient.
type Coefficient struct {
	// Identified is false when the released Λ2 does not determine the
	// coefficient (a direction was trimmed); the other fields are then 0.
	Identified bool `json:"identified"`
	// Estimate is the bias-corrected point estimate of the estimand: the
	// released fit's unregularised minimiser minus the bootstrap median
	// bias. It can differ from the fitted (ridged) coefficient.
	Estimate float64 `json:"estimate"`
	// SE is the standard error: half the width of the central 68.27%
	// of the bootstrap distribution (the standard deviation when it is
	// normal, and robust to the heavy tails of an inverted noisy matrix).
	SE float64 `json:"se"`
	// Lower and Upper are the confidence interval at Intervals.Level.
	Lower float64 `json:"lower"`
	Upper float64 `json:"upper"`
	// NoiseSE and SamplingSE split the variance into the privacy noise's
	// and the data's sampling part (NoiseSE² + SamplingSE² ≈ SE²).
	NoiseSE    float64 `json:"noise_se"`
	SamplingSE float64 `json:"sampling_se"`
	// PValue is the two-sided p-value of the test of coefficient = 0
	// (statsmodels' P>|z| column) calibrated by the same parametric
	// bootstrap as the interval, so it accounts for the mechanism's noise
	// and the data's sampling: with F the bootstrap law of the deviation
	// δ (failed replicates at ±∞, half each), the basic-bootstrap interval
	// at level 1 − α excludes 0 exactly when the centre c falls outside
	// F's α/2 and 1 − α/2 quantiles, so p = 2·min(F(c), 1 − F(c)),
	// computed as 2·(1 + min(#{δ_b ≤ c}, #{δ_b ≥ c}))/(B + 1) (the
	// Monte Carlo p-value, never 0), capped at 1. It rejects at level α
	// exactly when the 1 − α interval excludes 0 (up to the +1).
	PValue float64 `json:"p_value"`
	// WeaklyLocated is set on an identified coefficient that loads
	// (|v_i| ≥ UnlocatedLoading) on an eigen-direction the released
	// objective locates by less than WeakLocationMargin noise SDs above its
	// Fieller floor: at the identification edge such intervals covered
	// 85–93% for 95% nominal (docs/inference.md, "Diagnosis at the edge").
	// A warning only; the interval is reported as computed.
	WeaklyLocated bool `json:"weakly_located,omitempty"`
}

// WeakLocationMargin is the margin, in noise SDs s(v) above the Fieller
// floor z·s(v), below which a located direction marks the coefficients
// loading on it as Coefficient.WeaklyLocated. Reporting them unidentified
// instead (the probe's identifyMargin) removed too many intervals (45.8%
// unidentified at 1 SD at the edge), so they are flagged, not dropped.
const WeakLocationMargin = 1

// NormalPValue is the two-sided normal p-value 2Φ(−|est/se|) of the test
// est = 0, for linear combinations of the coefficients (the intercept in
// original units) whose interval is the normal one with the bootstrap
// covariance. It is 1 when se is not positive and est is 0, else 0 for se 0.
func NormalPValue(est, se float64) float64 {
	if !(se > 0) {
		if est == 0 {
			return 1
		}
		return 0
	}
	return 2 * distuv.UnitNormal.CDF(-math.Abs(est/se))
}

// bootstrapPValue returns the Monte Carlo p-value of coefficient = 0 from
// the sorted finite deviations among total replicates (failures at ±∞, half
// each) and the centre c (see Coefficient.PValue).
func bootstrapPValue(sorted []float64, total int, c float64) float64 {
	f := total - len(sorted)
	lowF := f / 2
	le := sort.Search(len(sorted), func(i int) bool { return sorted[i] > c }) // #{δ ≤ c}
	ge := len(sorted) - sort.Search(len(sorted), func(i int) bool { return sorted[i] >= c })
	low, high := le+lowF, ge+(f-lowF)
	return math.Min(1, 2*float64(1+min(low, high))/float64(total+1))
}

// Intervals are confidence intervals for the encoded coefficients of one
// fit, computed from released values and public parameters only.
type Intervals struct {
	Level    float64 `json:"level"`
	Method   string  `json:"method"`
	Estimand string  `json:"estimand"`
	// Coefficients are in the encoded feature space (schema order).
	Coefficients []Coefficient `json:"coefficients"`
	// Covariance is the bootstrap covariance of the estimate (encoded
	// space), for intervals of linear combinations such as the intercept
	// in original units (normal approximation).
	Covariance [][]float64 `json:"covariance"`
	// ResidualVariance is the estimated residual variance on the encoded
	// target scale (linear: σ²; logistic: that of y − ½ about the
	// truncated fit), a function of released values.
	ResidualVariance float64 `json:"residual_variance"`
	// Replicates is the bootstrap size; Failed counts replicates in which
	// the noisy Λ2 located no direction at all (they count as outside every
	// interval: the ends are taken over all Replicates, failures placed
	// at ±∞, so a fragile fit gets wider intervals, never narrower).
	Replicates int `json:"replicates"`
	Failed     int `json:"failed_replicates"`
	// Dropped counts replicates in which a direction that the released
	// objective locates fell below its identification floor and was
	// dropped (as the estimate would drop it: a finite deviation, part of
	// the interval, not a failure).
	Dropped int `json:"dropped_replicates"`
	// Diagnosis, when some coefficient is not identified, says why and
	// which directions (nil when every coefficient is identified).
	Diagnosis *Diagnosis `json:"diagnosis,omitempty"`
}

// Estimands, as printed in reports.
const (
	EstimandLinear   = "population least-squares coefficients of the encoded target on the encoded features (β minimising E(y − xᵀβ)²); the data's sampling part assumes homoskedastic errors"
	EstimandLogistic = "population minimiser of the Functional Mechanism's 2nd-order (Taylor-truncated) logistic loss, 4·(least-squares coefficients of y − ½ on x): close to the logistic coefficients only where |xᵀβ| is small; these are surrogate coefficients, not log-odds: exp(b) is not an odds ratio of the logistic model"
)

// FM computes confidence intervals for the coefficients of an FM-family fit
// (fm, relaxed-fm, gaussian-fm; linear or logistic) from its released
// objective. y2 is required for linear models and ignored for logistic
// ones. See the package documentation for the method.
func FM(rel *regress.Released, y2 *TargetMoment, opt Options) (*Intervals, error) {
	if err := rel.Validate(); err != nil {
		return nil, fmt.Errorf("inference: %w", err)
	}
	var model samplingModel
	switch rel.Kind {
	case regress.Linear:
		if y2 == nil {
			return nil, errors.New("inference: linear intervals need the released target moment Λ0 (regress.ReleaseTargetMoment)")
		}
		if math.IsNaN(y2.Value) || math.IsInf(y2.Value, 0) {
			return nil, fmt.Errorf("inference: released target moment is %v", y2.Value)
		}
		// σ² = Λ0 − βᵀΛ2β at the population minimiser; βᵀΛ2β is estimated
		// by w0ᵀΛ̃2w0 less its bootstrap noise bias. V = σ²Λ2⁻¹/N.
		kept := y2.KeptShare
		if kept == 0 {
			kept = 1
		}
		if !(kept > 0 && kept <= 1) {
			return nil, fmt.Errorf("inference: kept share %v must be in (0, 1]", y2.KeptShare)
		}
		infl := y2.SamplingInflation
		if infl == 0 {
			infl = 1
		}
		if !(infl >= 1) || math.IsInf(infl, 0) {
			return nil, fmt.Errorf("inference: sampling inflation %v must be finite and ≥ 1", y2.SamplingInflation)
		}
		model = func(fitQuad float64) (float64, float64, float64) {
			s2 := clamp((y2.Value-fitQuad)/kept, 0, 1)
			return s2, s2 * infl, 1
		}
	case regress.Logistic:
		// (y − ½)² = ¼ exactly, so σ_r² = ¼ − γᵀSγ with γ = β/4 and
		// S = 8Λ2, i.e. ¼ − βᵀΛ2β/2; V = 16σ_r²S⁻¹/N = 2σ_r²Λ2⁻¹/N.
		model = func(fitQuad float64) (float64, float64, float64) {
			s2 := clamp(0.25-fitQuad/2, 0, 0.25)
			return s2, 2 * s2, 1
		}
	default:
		return nil, fmt.Errorf("inference: FM intervals are for linear and logistic fits, not %q", rel.Kind)
	}
	est := EstimandLinear
	if rel.Kind == regress.Logistic {
		est = EstimandLogistic
	}
	return bootstrap(rel, model, est, opt, nil)
}

// IRLS computes confidence intervals for the coefficients of a DP-IRLS fit
// (Kind Robust) from its last iteration's released objective and the
// released residual summary rs (regress.ReleaseRobustScale at the released
// coefficients). See the package documentation for the method.
func IRLS(rel *regress.Released, rs regress.RobustScale, opt Options) (*Intervals, error) {
	if err := rel.Validate(); err != nil {
		return nil, fmt.Errorf("inference: %w", err)
	}
	if rel.Kind != regress.Robust || !(rel.ResidualFloor > 0) {
		return nil, fmt.Errorf("inference: IRLS intervals need a robust fit's released objective with its residual floor")
	}
	for _, v := range []float64{rs.MeanWeight, rs.Inside, rs.MeanPsi2, rs.NoiseScale} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("inference: released residual summary holds %v", v)
		}
	}
	if rs.NoiseScale < 0 {
		return nil, fmt.Errorf("inference: released residual summary with a negative noise scale %v", rs.NoiseScale)
	}
	eta := rel.ResidualFloor
	n := float64(rel.N)
	// Post-process the noisy means into their ranges: ψ² and the share in
	// [1/N, 1], the mean weight in [share/η, 1/η] (s ≥ 1{|r|<η}/η).
	m1 := clamp(rs.Inside, 1/n, 1)
	m2 := clamp(rs.MeanPsi2, 1/n, 1)
	m0 := clamp(rs.MeanWeight, m1/eta, 1/eta)
	// Huber-type fixed point ψ(r) = r/max(η, |r|): sandwich
	// E[ψ']⁻²E[ψ²]·S⁻¹/N with E[ψ'] = share/η, and S⁻¹ = m0·B⁻¹ since
	// B = E[s·xxᵀ] = m0·S when residuals are independent of x.
	kappa := m2 * eta * eta / (m1 * m1)
	// The previous iterate's noise moves the weights: near the fixed point
	// the IRLS map ω ↦ B(ω)⁻¹A(ω) is linear with Jacobian f·I,
	// f = 1 − share/(η·m0) (residuals independent of x), so an error Δ in
	// an iterate becomes f·Δ in the next one: the last of J iterations
	// from the start ω_s is ω_J ≈ β + f^J(ω_s − β) + Σ_{j<J} f^j(e_{J−j} +
	// u), e the iterations' noise, u the sampling error of one step. The
	// fixed point is extrapolated from the two released points,
	// β̂ = (ω_J − f^J·ω_s)/(1 − f^J) = β + (Σ_{j<J} f^j e_{J−j})/(1 − f^J)
	// + u/(1 − f): the start's error (the cold start's −β, the warm
	// start's noise and least-squares bias) cancels, the sampling part is
	// Huber's sandwich above, and the noise part is the last iteration's
	// times √((1 − f^{2J})/(1 − f²))/(1 − f^J).
	//
	// f itself is estimated from the noisy summary: each replicate also
	// draws the summary's public Laplace noise (NoiseScale) around the
	// released means, and the estimate's change with the drawn gain enters
	// the replicate's noise deviation.
	contraction := func(inside, weight float64) float64 {
		m1 := clamp(inside, 1/n, 1)
		return clamp(1-m1/(eta*clamp(weight, m1/eta, 1/eta)), 0, 0.95)
	}
	f := contraction(rs.Inside, rs.MeanWeight)
	j := float64(iterations(rel))
	c := math.Pow(f, j)
	start := make([]float64, rel.Objective.D) // the cold start's ω = 0
	if w := rel.Warm; w != nil {
		var err error
		if start, _, err = w.Objective.Minimize(regress.NoisyPostProcess(w.Ridge)); err != nil {
			return nil, fmt.Errorf("inference: the released warm start has no minimiser: %w", err)
		}
	}
	inflate := math.Sqrt((1-math.Pow(f, 2*j))/(1-f*f)) / (1 - c)
	model := func(float64) (float64, float64, float64) {
		return kappa, kappa * m0, inflate
	}
	// The gradient forms release the last step, not the last iterate: the
	// iterate is the released step start plus the objective's minimiser
	// (regress.Released.Start); the step's noise is the minimiser's.
	ex := &extrapolation{f: f, j: j, start: start, offset: rel.Start}
	if rel.Start != nil {
		// Their steps solve with the ridge λ added to Λ2 ≈ m₀·S: the map
		// ω ↦ ω + (Λ2 + λI)⁻¹g(ω) has Jacobian I − (1 − f)(Λ2 + λI)⁻¹Λ2,
		// so along Λ2's eigen-direction k (eigenvalue μ_k) it contracts by
		// f_k = 1 − (1 − f)·μ_k/(μ_k + λ) ≥ f: the ridge slows the
		// iteration most where Λ2 is smallest, and the extrapolation and
		// the noise inflation use f_k there (no ridge bias: the ridge only
		// shortens steps toward the same fixed point).
		vals, vecs, err := rel.Objective.Eigen(0, true)
		if err != nil {
			return nil, err
		}
		ex.vecs, ex.damp = vecs, make([]float64, len(vals))
		for k, mu := range vals {
			if mu > 0 {
				ex.damp[k] = mu / (mu + rel.Ridge)
			}
		}
		model = func(float64) (float64, float64, float64) { return kappa, kappa * m0, 1 } // inflation per direction: ex.scale
	}
	if b := rs.NoiseScale; b > 0 {
		ex.drawF = func(rng *rand.Rand) float64 {
			lap := func() float64 { return (rng.ExpFloat64() - rng.ExpFloat64()) * b } // seeded bootstrap draw of the public noise law on released values: post-processing, not privacy noise
			return contraction(rs.Inside+lap(), rs.MeanWeight+lap()/eta)               // MeanWeight = (released mean of η·s)/η
		}
	}
	iv, err := bootstrap(rel, model, EstimandRobust, opt, ex)
	if err == nil {
		from := "the cold start ω = 0"
		if rel.Warm != nil {
			from = "the warm start (its released fit)"
		}
		form := rel.Form
		if form == "" {
			form = regress.IRLSFormMoments
		}
		iv.Method += fmt.Sprintf("; %s form; fixed point extrapolated from %s and the last of J = %d iteration(s) with gain f^J = %.3g (f = 1 − share/(η·mean weight), released residual summary)", form, from, int(j), c)
	}
	return iv, err
}

// iterations is the recorded J of a DP-IRLS release, or the cold start's
// default when none was recorded.
func iterations(rel *regress.Released) int {
	if rel.Iterations > 0 {
		return rel.Iterations
	}
	return regress.DefaultIRLSIterations
}

// extrapolation maps the minimiser w of the last released objective to the
// estimate (offset + w − G·start)/(1 − G) (DP-IRLS's fixed point; see
// IRLS) with the gain G = f^J of J iterations contracting by f, offset
// being the step start of the gradient forms (nil: 0). With damp set (the
// gradient forms' ridge), the contraction along the eigenvector k of the
// released Λ2 (column k of vecs) is f_k = 1 − (1 − f)·damp_k and the map
// is applied per direction. drawF, when set, draws f as estimated from a
// replicate of the noisy summary it comes from.
type extrapolation struct {
	f, j   float64
	start  []float64
	offset []float64
	damp   []float64
	vecs   *mat.Dense
	drawF  func(*rand.Rand) float64
}

// contractions returns f_k per direction for the contraction f (one value,
// f itself, without damp).
func (ex *extrapolation) contractions(f float64) []float64 {
	if ex.damp == nil {
		return []float64{f}
	}
	out := make([]float64, len(ex.damp))
	for k, dk := range ex.damp {
		out[k] = math.Min(0.99, 1-(1-f)*dk)
	}
	return out
}

// rotate returns Vᵀv (toEigen) or Vv for the eigenvectors V of the
// released Λ2, or v itself without damp.
func (ex *extrapolation) rotate(v []float64, toEigen bool) []float64 {
	if ex.damp == nil {
		return append([]float64(nil), v...)
	}
	out := make([]float64, len(v))
	for i := range out {
		for k := range v {
			if toEigen {
				out[i] += ex.vecs.At(k, i) * v[k]
			} else {
				out[i] += ex.vecs.At(i, k) * v[k]
			}
		}
	}
	return out
}

// at returns the estimate (offset + w − G·start)/(1 − G) for the
// contraction f (G = f^J, per direction with damp).
func (ex *extrapolation) at(w []float64, f float64) []float64 {
	v := append([]float64(nil), w...)
	for i := range v {
		if ex.offset != nil {
			v[i] += ex.offset[i]
		}
	}
	a, s := ex.rotate(v, true), ex.rotate(ex.start, true)
	fs := ex.contractions(f)
	for k := range a {
		g := math.Pow(fs[min(k, len(fs)-1)], ex.j)
		a[k] = (a[k] - g*s[k]) / (1 - g)
	}
	return ex.rotate(a, false)
}

// scale returns the last iteration's noise deviation dev scaled to the
// estimate's, √((1 − f_k^{2J})/(1 − f_k²))/(1 − f_k^J) per direction (used
// with damp; without it the model's scalar inflation applies).
func (ex *extrapolation) scale(dev []float64) []float64 {
	a := ex.rotate(dev, true)
	fs := ex.contractions(ex.f)
	for k := range a {
		fk := fs[min(k, len(fs)-1)]
		a[k] *= math.Sqrt((1-math.Pow(fk, 2*ex.j))/(1-fk*fk)) / (1 - math.Pow(fk, ex.j))
	}
	return ex.rotate(a, false)
}

// irlsFitNoise models, for the forecast of a DP-IRLS fit's coefficients,
// the noise of the iterations before the last one given the contraction f
// of the IRLS map at the fixed point: it returns the factor on the last
// iteration's noise deviations, √((1 − f^{2J})/(1 − f²)) (the last
// iteration's noise plus the J − 1 before it contracted by f, …, f^{J−1}),
// and, for a warm start, the warm start's noise carried in with gain f^J
// (warmTerm; nil for a cold start, whose start ω = 0 is not noisy).
func irlsFitNoise(rel *regress.Released, f float64) (float64, noiseTerm) {
	j := float64(iterations(rel))
	inflate := math.Sqrt((1 - math.Pow(f, 2*j)) / (1 - f*f))
	if rel.Warm == nil {
		return inflate, nil
	}
	return inflate, warmTerm(rel.Warm, math.Pow(f, j))
}

// noiseTerm adds one draw of a further noise deviation (independent of the
// released objective's noise) to dev; it returns false when the draw fails
// (every direction trimmed), which counts as a failed draw.
type noiseTerm func(rng *rand.Rand, dev []float64) bool

// warmTerm is the noise of a DP-IRLS warm start w (its released Gaussian FM
// objective) carried into the last iterate with gain c: one draw is
// c·(g(Λ̃_ws + e*) − g(Λ̃_ws)), g the warm start's own minimiser (ridge and
// trimming as the fit), e* the warm start's public Gaussian noise law.
func warmTerm(w *regress.Released, c float64) noiseTerm {
	pp := regress.NoisyPostProcess(w.Ridge)
	q := w.Objective
	center, _, err := q.Minimize(pp)
	star := &regress.Quadratic{D: q.D, Lambda1: make([]float64, q.D), Upper: make([]float64, len(q.Upper))}
	return func(rng *rand.Rand, dev []float64) bool {
		if err != nil {
			return false
		}
		perturb(rng, q, star, w)
		ws, _, err := star.Minimize(pp)
		if err != nil {
			return false
		}
		for i := range dev {
			dev[i] += c * (ws[i] - center[i])
		}
		return true
	}
}

// EstimandRobust describes what DP-IRLS intervals cover.
const EstimandRobust = "fixed point of the IRLS weights 1/max(η, |r|) (a Huber-type M-estimator with threshold η; for errors symmetric about 0 and independent of x, the coefficients of the median and mean regression); the sampling part assumes residuals independent of x"

// samplingModel returns, given the bootstrap-corrected estimate of
// β̂ᵀΛ2β̂, the residual variance to report, the factor c·s² of the sampling
// covariance c·s²·Λ2⁻¹/N, and the inflation of the noise deviations.
type samplingModel func(fitQuad float64) (resid, scale, noiseInflation float64)

// bootstrap is the common procedure of FM and IRLS (see the package doc).
// ex, when non-nil, maps the released minimiser to the estimate (the
// deviations' scale is the model's inflation).
func bootstrap(rel *regress.Released, model samplingModel, estimand string, opt Options, ex *extrapolation) (*Intervals, error) {
	level, err := opt.level()
	if err != nil {
		return nil, err
	}
	reps, err := opt.replicates()
	if err != nil {
		return nil, err
	}
	seed := opt.seed()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	// The fit's public structure of Λ2 (if any) is applied to the released
	// objective and to every replicate (rel.Projected: projecting commutes
	// with fresh noise).
	q, err := rel.Projected()
	if err != nil {
		return nil, fmt.Errorf("inference: %w", err)
	}
	d := q.D
	loc := newLocator(rel, level)

	out := &Intervals{Level: level, Replicates: reps,
		Method:   fmt.Sprintf("parametric bootstrap over the mechanism's noise (%s on Λ1, %s on Λ2, variances from ε, δ, N, d) around the released objective, plus the data's sampling variation (sandwich with released values), %d replicates, basic-bootstrap interval; eigen-directions of Λ2 whose curvature is not significantly positive (Fieller, at the interval's level) are not located, in the estimate and in every replicate alike", rel.Noise1, rel.Noise2, reps),
		Estimand: estimand, Coefficients: make([]Coefficient, d)}
	sol, err := loc.solve(q, nil)
	if err != nil {
		// Λ2 itself locates no direction: no coefficient is identified.
		out.Covariance = zeros(d)
		out.Diagnosis = diagnose(sol, loc, rel, "trimmed")
		return out, nil
	}
	w0 := sol.w
	// Coefficients loading on a direction the released objective does not
	// locate are unidentified; the others get intervals for the minimiser
	// restricted to the located directions (basis), in the estimate and in
	// every replicate.
	var basis *mat.Dense
	unlocated := make([]bool, d)
	if sol.dropped > 0 {
		basis = sol.keptBasis()
		loc.setBasis(basis, sol.droppedBasis())
		for k, ok := range sol.located {
			if ok {
				continue
			}
			for i := 0; i < d; i++ {
				if math.Abs(sol.vecs.At(i, k)) >= UnlocatedLoading {
					unlocated[i] = true
				}
			}
		}
		out.Diagnosis = diagnose(sol, loc, rel, "trimmed")
	}
	// Coefficients loading on a direction located by less than
	// WeakLocationMargin noise SDs are flagged (nearFloor also marks those
	// loading on dropped directions, which are unidentified anyway).
	weak := (&calibration{d: d, loc: loc, margin: WeakLocationMargin}).nearFloor(sol)
	if m := opt.calibration.identifyMargin; m > 0 {
		// Probe variant: a coefficient loading on a direction located by
		// less than m noise SDs above its floor is reported unidentified.
		near := (&calibration{d: d, loc: loc, margin: m}).nearFloor(sol)
		for i, x := range near {
			unlocated[i] = unlocated[i] || x
		}
	}

	// Eigen-decomposition of the released Λ2 for the sampling part (the
	// located directions only).
	vals, vecs := sol.vals, sol.vecs

	// Pass 1: the noise-only bootstrap.
	noiseDraws := make([][]float64, 0, reps)
	cal := newCalibration(d, sol, loc, opt.calibration)
	cal.outerN, cal.innerN = opt.calibrationSizes()
	observed := max(opt.CalibrationObserved, cal.outerN)
	if opt.CalibrationObserved == 0 {
		observed = max(calibrationObserved, cal.outerN)
	}
	quad := func(w []float64) float64 {
		s := 0.0
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				s += w[i] * q.At(i, j) * w[j]
			}
		}
		return s
	}
	star := &regress.Quadratic{D: d, Lambda1: make([]float64, d), Upper: make([]float64, len(q.Upper))}
	// The noise bias of the fit's quadratic form w0ᵀΛ̃2w0 (for the residual
	// variance) is the median over the replicates of quad(w*) − quad(w0):
	// the mean is dominated by the few replicates whose noisy curvature
	// nearly vanishes (quad grows like 1/μ*).
	quadDiffs := make([]float64, 0, reps)
	for b := 0; b < reps; b++ {
		perturb(rng, q, star, rel)
		sp, err := rel.Structure.Project(star)
		if err != nil {
			return nil, fmt.Errorf("inference: %w", err)
		}
		// The first calibrationObserved replicates are decomposed for the
		// calibration; the rest take the Cholesky fast path when nothing
		// is near a floor.
		solve := loc.solveFast
		if ex == nil && b < observed {
			solve = loc.solve
		}
		rs, err := solve(sp, basis)
		if err != nil {
			out.Failed++
			continue
		}
		if rs.dropped > 0 {
			out.Dropped++
		}
		w := rs.w
		noiseDraws = append(noiseDraws, w)
		quadDiffs = append(quadDiffs, quad(w)-quad(w0))
		if ex == nil && rs.vecs != nil {
			cal.observe(sp, rs)
		}
	}
	quadBias := 0.0
	if len(quadDiffs) > 0 {
		sort.Float64s(quadDiffs)
		quadBias = quantileWithFailures(quadDiffs, len(quadDiffs), 0.5)
	}
	resid, scale, inflate := model(quad(w0) - quadBias)
	out.ResidualVariance = resid
	n := float64(rel.N)
	sampSD := make([]float64, d) // per eigen-direction
	for k, mu := range vals {
		if mu > 0 && sol.located[k] {
			sampSD[k] = math.Sqrt(scale / (n * mu))
		}
	}
	sampVar := make([]float64, d)
	for i := 0; i < d; i++ {
		for k := range vals {
			v := vecs.At(i, k) * sampSD[k]
			sampVar[i] += v * v
		}
	}

	center := w0
	if ex != nil {
		center = ex.at(w0, ex.f)
	}
	// Second level (FM fits): how much wider the replicates' spread is
	// than the estimator's, estimated one level out (calibration).
	kn, ks := ones(d), ones(d)
	if ex == nil && !opt.calibration.off {
		var err error
		if kn, ks, err = cal.factors(rng, rel, loc, basis, w0, noiseDraws, reps); err != nil {
			return nil, err
		}
		if g := opt.calibration.releasedGate; g > 0 {
			near := (&calibration{d: d, loc: loc, margin: g}).nearFloor(sol)
			for i, x := range near {
				if x {
					kn[i], ks[i] = 1, 1
				}
			}
		}
		out.Method += "; the spread of the noise and sampling parts divided per coefficient by its inflation, estimated by a second-level bootstrap (calibration.go)"
	}
	// Pass 2: total deviations δ = (noise draw + sampling draw) − w0.
	devs := make([][]float64, len(noiseDraws))
	ndevs := make([][]float64, len(noiseDraws))
	xi := make([]float64, d)
	for b, w := range noiseDraws {
		var gainDev, scaled []float64
		if ex != nil && ex.drawF != nil {
			gainDev = ex.at(w0, ex.drawF(rng))
		}
		if ex != nil && ex.damp != nil {
			diff := make([]float64, d)
			for i := range diff {
				diff[i] = w[i] - w0[i]
			}
			scaled = ex.scale(diff)
		}
		for k := range xi {
			xi[k] = rng.NormFloat64() * sampSD[k] // seeded bootstrap draw of the public noise law on released values: post-processing, not privacy noise
		}
		dv, nv := make([]float64, d), make([]float64, d)
		for i := 0; i < d; i++ {
			z := 0.0
			for k := range xi {
				z += vecs.At(i, k) * xi[k]
			}
			nv[i] = (w[i] - w0[i]) * inflate / kn[i]
			z /= ks[i]
			if scaled != nil {
				nv[i] = scaled[i]
			}
			if gainDev != nil {
				nv[i] += gainDev[i] - center[i]
			}
			dv[i] = nv[i] + z
		}
		devs[b], ndevs[b] = dv, nv
	}
	out.Covariance = covariance(devs, d)
	alpha := 1 - level
	col := make([]float64, len(devs))
	ncol := make([]float64, len(devs))
	for i := 0; i < d; i++ {
		for b := range devs {
			col[b] = devs[b][i]
			ncol[b] = ndevs[b][i]
		}
		sort.Float64s(col)
		sort.Float64s(ncol)
		// Failed replicates sit at ±∞: half at each end.
		lo := quantileWithFailures(col, reps, alpha/2)
		hi := quantileWithFailures(col, reps, 1-alpha/2)
		med := quantileWithFailures(col, reps, 0.5)
		s, ns := robustSD(col, reps), robustSD(ncol, reps)
		if unlocated[i] || math.IsInf(lo, 0) || math.IsInf(hi, 0) || math.IsInf(s, 0) {
			continue // not identified at this level
		}
		out.Coefficients[i] = Coefficient{Identified: true,
			Estimate: center[i] - med, SE: s,
			Lower: center[i] - hi, Upper: center[i] - lo,
			NoiseSE: ns, SamplingSE: math.Sqrt(sampVar[i]),
			PValue: bootstrapPValue(col, reps, center[i]), WeaklyLocated: weak[i]}
	}
	for _, c := range out.Coefficients {
		if !c.Identified && out.Diagnosis == nil {
			out.Diagnosis = diagnose(sol, loc, rel, "failed-replicates")
			break
		}
	}
	return out, nil
}

// quantileWithFailures returns the p-quantile of the n = total values made of
// the sorted finite values and (total − len(sorted)) failures split evenly
// between −∞ and +∞.
func quantileWithFailures(sorted []float64, total int, p float64) float64 {
	f := total - len(sorted)
	low := f / 2
	idx := int(math.Floor(p * float64(total-1)))
	frac := p*float64(total-1) - float64(idx)
	at := func(i int) float64 {
		switch {
		case i < low:
			return math.Inf(-1)
		case i-low >= len(sorted):
			return math.Inf(1)
		}
		return sorted[i-low]
	}
	a := at(idx)
	if frac == 0 || idx+1 >= total {
		return a
	}
	b := at(idx + 1)
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		if frac < 0.5 {
			return a
		}
		return b
	}
	return a + frac*(b-a)
}

// robustSD is half the central 68.27% range of the sorted values among
// total (failures at ±∞): the standard deviation of a normal law.
func robustSD(sorted []float64, total int) float64 {
	return (quantileWithFailures(sorted, total, 0.841344746) - quantileWithFailures(sorted, total, 0.158655254)) / 2
}

// perturb sets star to q plus one draw of the released noise of rel.
func perturb(rng *rand.Rand, q, star *regress.Quadratic, rel *regress.Released) {
	sd1, sd2 := math.Sqrt(rel.VarLambda1), math.Sqrt(rel.VarLambda2)
	for i, v := range q.Lambda1 {
		star.Lambda1[i] = v + draw(rng, rel.Noise1, sd1)
	}
	for i, v := range q.Upper {
		star.Upper[i] = v + draw(rng, rel.Noise2, sd2)
	}
}

func draw(rng *rand.Rand, kind string, sd float64) float64 {
	if kind == "laplace" {
		// Laplace with standard deviation sd: scale b = sd/√2.
		return (rng.ExpFloat64() - rng.ExpFloat64()) * sd / math.Sqrt2 // seeded bootstrap draw of the public noise law on released values: post-processing, not privacy noise
	}
	return rng.NormFloat64() * sd // seeded bootstrap draw of the public noise law on released values: post-processing, not privacy noise
}

func clamp(v, lo, hi float64) float64 { return math.Max(lo, math.Min(hi, v)) }

func zeros(d int) [][]float64 {
	m := make([][]float64, d)
	for i := range m {
		m[i] = make([]float64, d)
	}
	return m
}

func covariance(xs [][]float64, d int) [][]float64 {
	c := zeros(d)
	if len(xs) < 2 {
		return c
	}
	mean := make([]float64, d)
	for _, x := range xs {
		for i := range mean {
			mean[i] += x[i] / float64(len(xs))
		}
	}
	for _, x := range xs {
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				c[i][j] += (x[i] - mean[i]) * (x[j] - mean[j]) / float64(len(xs)-1)
			}
		}
	}
	return c
}

// NormalQuantile returns Φ⁻¹(p), the standard normal quantile.
func NormalQuantile(p float64) float64 { return distuv.UnitNormal.Quantile(p) }
