package inference

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
)

// SwampRatio is the forecast's warning threshold for linear models: the
// warning is given when the forecast root-mean-square noise of the encoded
// prediction xᵀω exceeds this fraction of the target's declared half-range
// (the encoded target lies in [−1, 1]). A real target usually fills only part
// of a generously declared range: encoded standard deviations of 0.1–0.3 are
// typical, and a regression explaining 30% of the variance of a target with
// standard deviation 0.2 has a signal of standard deviation 0.11, so noise
// of 0.05 is already comparable to the signal. Examples (docs/inference.md):
// the PSID wage regression (N = 3,332, 18 coefficients, ε = 1, gaussian-fm;
// negative test R² reported in issue 15) forecasts 0.083; CPS1988 (N =
// 28,155, 8 coefficients, ε = 1) forecasts 0.005. For logistic models the
// threshold is LogOddsSwamp on the log-odds scale.
const SwampRatio = 0.05

// LogOddsSwamp is the forecast threshold of logistic models: noise of 0.5
// in the log-odds moves a predicted probability of ½ to 0.38 or 0.62.
const LogOddsSwamp = 0.5

// ShrinkSwamp is the threshold on the ridge's shrinkage: the ridge λ that
// the noise requires multiplies the coefficients along a reference-design
// direction with eigenvalue μ by μ/(μ + λ); a loss of more than half of the
// signal in some direction is warned about.
const ShrinkSwamp = 0.5

// Forecast is the expected effect of the privacy noise on a fit's
// coefficients, computed before fitting from public quantities only: the
// mechanism and its public parameters (ε, δ, λ, split), N, and the schema
// (number of coefficients, ranges, categories). It never reads the data.
type Forecast struct {
	Mechanism string `json:"mechanism"`
	// CoefSD is the forecast noise standard deviation of each encoded
	// coefficient (robust: half the central 68.27% range) and
	// CoefSDOriginal the same in original units (a scale for slopes; the
	// intercept's via the reference covariance).
	CoefSD         []float64 `json:"coef_sd"`
	CoefSDOriginal []float64 `json:"coef_sd_original"`
	// PredictionRMS is the forecast root-mean-square noise of the encoded
	// prediction xᵀω over the reference design (encoded target scale,
	// where the declared range is [−1, 1]; log-odds for logistic models).
	PredictionRMS float64 `json:"prediction_rms"`
	// Shrinkage is the largest fraction of a coefficient that the ridge
	// removes along a reference-design direction: max 1 − μ/(μ + λ).
	Shrinkage float64 `json:"shrinkage"`
	// FailedShare is the share of simulated fits in which the noise left
	// no usable direction of Λ2 (the real fit would fail).
	FailedShare float64 `json:"failed_share"`
	// TrimmedShare (ReleasedForecast only) is the share of simulated fits
	// whose post-processing trimmed at least one direction.
	TrimmedShare float64 `json:"trimmed_share,omitempty"`
	// Swamped is true when PredictionRMS exceeds SwampRatio (linear) or
	// LogOddsSwamp (logistic), Shrinkage exceeds ShrinkSwamp, or more than
	// 5% of the simulated fits fail.
	Swamped bool   `json:"swamped"`
	Warning string `json:"warning,omitempty"`
	// Reference describes the assumption the forecast rests on.
	Reference string `json:"reference"`
}

// ReferenceDesign describes the public stand-in for the data.
const ReferenceDesign = "reference design: features independent, numeric ones uniform over their declared ranges, categories equally likely; true coefficients 0 (noise around a fit with signal is larger by the ‖ω‖ term of Λ2's noise)"

// refStats are the expected sufficient statistics of N rows of the
// reference design (all public: functions of the schema and N).
type refStats struct {
	k   int
	n   int64
	sum []float64
	m   []float64
}

func (s *refStats) K() int              { return s.k }
func (s *refStats) N() int64            { return s.n }
func (s *refStats) Sum(i int) float64   { return s.sum[i] }
func (s *refStats) At(i, j int) float64 { return s.m[i*s.k+j] }

// referenceStats builds the reference design's expected statistics. The
// target has mean 0 and second moment 1/3 (uniform on [−1, 1]) for linear
// models, and mean ½ for logistic ones, independent of the features
// (coefficients 0 but the intercept of a logistic model).
func referenceStats(s *schema.Schema, kind regress.Kind, n int64) *refStats {
	d := s.Dim()
	k := d + 1
	sc := 1 / math.Sqrt(float64(s.Bound()))
	mean := make([]float64, k)
	sq := make([]float64, k)
	group := make([]int, k) // columns of one categorical feature share a group
	col := 0
	g := 1
	if s.HasIntercept() {
		mean[0], sq[0] = sc, sc*sc
		group[0] = g
		g++
		col = 1
	}
	for _, f := range s.Features {
		if f.Categorical() {
			c := float64(len(f.Categories))
			for range f.Categories[1:] {
				mean[col], sq[col] = sc/c, sc*sc/c
				group[col] = g
				col++
			}
			g++
			continue
		}
		mean[col], sq[col] = 0, sc*sc/3
		group[col] = g
		g++
		col++
	}
	if kind == regress.Logistic {
		mean[d], sq[d] = 0.5, 0.5
	} else {
		mean[d], sq[d] = 0, 1.0/3
	}
	group[d] = g
	st := &refStats{k: k, n: n, sum: make([]float64, k), m: make([]float64, k*k)}
	N := float64(n)
	for i := 0; i < k; i++ {
		st.sum[i] = N * mean[i]
		for j := 0; j < k; j++ {
			switch {
			case i == j:
				st.m[i*k+j] = N * sq[i]
			case group[i] == group[j]:
				st.m[i*k+j] = 0 // indicators of one feature are exclusive
			default:
				st.m[i*k+j] = N * mean[i] * mean[j]
			}
		}
	}
	return st
}

// Forecaster reports whether a mechanism has a forecast.
func Forecaster(mechanism string) bool {
	switch mechanism {
	case "fm", "gaussian-fm", "relaxed-fm", "irls":
		return true
	}
	return false
}

// referenceRelease returns the noise-free reference objective and the noise
// law of the mechanism's release on it (noisy values discarded), plus the
// inflation of the noise of earlier iterations (1 except for irls) and
// irls's warm-start noise term (nil otherwise; irlsFitNoise).
func referenceRelease(mechanism string, cfg regress.Config, s *schema.Schema, n int64, seed uint64) (*regress.Quadratic, *regress.Released, float64, noiseTerm, error) {
	if mechanism == "irls" {
		return irlsReference(cfg, s, n)
	}
	q0, rel, err := fmReference(mechanism, cfg, s, n, seed)
	return q0, rel, 1, nil, err
}

// fmReference is an FM-family mechanism's reference release.
func fmReference(mechanism string, cfg regress.Config, s *schema.Schema, n int64, seed uint64) (*regress.Quadratic, *regress.Released, error) {
	est, err := regress.New(mechanism)
	if err != nil {
		return nil, nil, err
	}
	st := referenceStats(s, cfg.Kind, n)
	c := cfg
	c.Source = noise.NewInsecureSeeded(seed) // the reference fit's noise is discarded
	res, err := est.Fit(context.Background(), regress.Data{Stats: st}, c)
	if err != nil {
		return nil, nil, fmt.Errorf("inference: forecast: %w", err)
	}
	if res.Released == nil {
		return nil, nil, fmt.Errorf("inference: forecast: %s released no objective", mechanism)
	}
	q0, err := regress.Objective(cfg.Kind, st)
	if err != nil {
		return nil, nil, fmt.Errorf("inference: forecast: %w", err)
	}
	return q0, res.Released, nil
}

// irlsReference is DP-IRLS's reference release: the calibration of
// regress.PlanIRLS (public), and B = E[s·xxᵀ] = m₀·S₀ on the reference
// design with residuals independent of x and uniform on [−c, c],
// c = max(2η, ReferenceResidualSpread): m₀ = E[1/max(η, |r|)] =
// (1 + ln(c/η))/c and P(|r| < η) = η/c. With c = 2η (the moments form's
// floor, at least 0.3, sits at the residuals' scale) half of them are inside
// the floor; the gradient forms' floor (0.1 on large tables) sits below the
// typical residual, where the noise grows with the residuals' spread (a
// wider spread gives smaller weights), which a forecast cannot know: the
// reference assumes a spread of at least ReferenceResidualSpread on the
// encoded target's scale. The noise of earlier iterations is carried into
// the last one as in IRLS (irlsFitNoise), f = 1 − P(|r| < η)/(η·m₀); with
// the warm start, its noise is simulated on the reference design's expected
// least-squares objective with the public FMTau1, FMTau2 and its ridge.
func irlsReference(cfg regress.Config, s *schema.Schema, n int64) (*regress.Quadratic, *regress.Released, float64, noiseTerm, error) {
	st := referenceStats(s, regress.Linear, n)
	d := st.K() - 1
	plan, err := regress.PlanIRLS(cfg.Epsilon, cfg.Delta, n, d, cfg.IRLS)
	if err != nil {
		return nil, nil, 0, nil, fmt.Errorf("inference: forecast: %w", err)
	}
	eta := plan.ResidualFloor
	c := math.Max(2*eta, ReferenceResidualSpread)
	m0, inside := (1+math.Log(c/eta))/c, eta/c
	q0, err := regress.Objective(regress.Linear, st)
	if err != nil {
		return nil, nil, 0, nil, fmt.Errorf("inference: forecast: %w", err)
	}
	for i := range q0.Upper {
		q0.Upper[i] *= m0
	}
	for i := range q0.Lambda1 {
		q0.Lambda1[i] = 0
	}
	lam := ridge(cfg, plan.SigmaB)
	v1 := plan.ScaleA * plan.ScaleA
	if plan.FirstMoment == "laplace" {
		v1 *= 2
	}
	rel := &regress.Released{Kind: regress.Robust, N: n, Objective: q0, Ridge: lam, MinEigen: regress.TrimFraction * lam,
		VarLambda1: 4 * v1, VarLambda2: plan.SigmaB * plan.SigmaB, Noise1: plan.FirstMoment, Noise2: "gaussian", ResidualFloor: eta,
		Iterations: plan.Iterations}
	if plan.Form != regress.IRLSFormMoments {
		// The gradient forms release the step from the previous iterate;
		// its noise is the same minimiser's (the start only shifts it).
		rel.Form, rel.Start = plan.Form, make([]float64, d)
	}
	if plan.Form == regress.IRLSFormPreconditioned {
		// The step's quadratic is (m/η)·G̃ = m₀·G̃, G̃ the warm start's noisy
		// Gram matrix with its ridge: both scale by m₀ (m's own noise, of
		// relative size σ_m/m, is neglected).
		lw := ridge(cfg, plan.FMTau2)
		rel.VarLambda2 = m0 * m0 * plan.FMTau2 * plan.FMTau2
		rel.Ridge, rel.MinEigen = m0*lw, regress.TrimFraction*m0*lw
	}
	if plan.WarmStart > 0 {
		qw, err := regress.Objective(regress.Linear, st)
		if err != nil {
			return nil, nil, 0, nil, fmt.Errorf("inference: forecast: %w", err)
		}
		qw.Lambda0 = 0 // not released
		lw := ridge(cfg, plan.FMTau2)
		rel.Warm = &regress.Released{Kind: regress.Linear, N: n, Objective: qw, Ridge: lw, MinEigen: regress.TrimFraction * lw,
			VarLambda1: plan.FMTau1 * plan.FMTau1, VarLambda2: plan.FMTau2 * plan.FMTau2, Noise1: "gaussian", Noise2: "gaussian"}
	}
	f := clamp(1-inside/(eta*m0), 0, 0.95)
	inflate, extra := irlsFitNoise(rel, f)
	return q0, rel, inflate, extra, nil
}

// ridge is the fit's ridge λ for a release with noise σ on Λ2: cfg.Lambda
// when set (≥ 0), else the factor (default regress.DefaultLambdaFactor)
// times σ, as regress.Config does.
func ridge(cfg regress.Config, sigma float64) float64 {
	if cfg.Lambda >= 0 {
		return cfg.Lambda
	}
	f := cfg.LambdaFactor
	if f <= 0 {
		f = regress.DefaultLambdaFactor
	}
	return f * sigma
}

// NoiseForecast forecasts the noise on the coefficients of a fit with the
// given mechanism and public configuration (cfg.Source is ignored) on N rows
// with schema s, from public quantities only. It runs the mechanism's own
// calibration and post-processing on the reference design's expected
// statistics (so the noise scales, ridge and trimming are exactly those of
// the real fit) and simulates the noise with a deterministic generator.
func NoiseForecast(mechanism string, cfg regress.Config, s *schema.Schema, n int64, opt Options) (*Forecast, error) {
	if !Forecaster(mechanism) {
		return nil, fmt.Errorf("inference: no forecast for mechanism %q (available for fm, gaussian-fm, relaxed-fm, irls)", mechanism)
	}
	if s == nil || n < 1 {
		return nil, fmt.Errorf("inference: forecast needs a schema and N ≥ 1")
	}
	reps, err := opt.forecastReplicates()
	if err != nil {
		return nil, err
	}
	seed := opt.seed()
	q0, rel, inflate, extra, err := referenceRelease(mechanism, cfg, s, n, seed)
	if err != nil {
		return nil, err
	}
	kind := cfg.Kind
	if kind == regress.Robust {
		kind = regress.Linear
	}
	st := referenceStats(s, kind, n)
	pp := rel.PostProcess() // the fit's own: public structure, ridge, trimming
	w0, _, err := q0.Minimize(pp)
	if err != nil {
		return nil, fmt.Errorf("inference: forecast: %w", err)
	}
	d := q0.D
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	star := &regress.Quadratic{D: d, Lambda1: make([]float64, d), Upper: make([]float64, len(q0.Upper))}
	tri := newTriSolver(d)
	devs := make([][]float64, 0, reps)
	failed := 0
	predSS := 0.0
	for b := 0; b < reps; b++ {
		perturb(rng, q0, star, rel)
		w, _, err := minimizeFast(star, pp, tri)
		if err != nil {
			failed++
			continue
		}
		dv := make([]float64, d)
		for i := range dv {
			dv[i] = (w[i] - w0[i]) * inflate
		}
		if extra != nil && !extra(rng, dv) {
			failed++
			continue
		}
		devs = append(devs, dv)
		// E over the reference design of (xᵀδ)² = δᵀ E[xxᵀ] δ.
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				predSS += dv[i] * st.At(i, j) / float64(n) * dv[j]
			}
		}
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("inference: forecast: the noise removes every direction of Λ2 in all %d simulated fits; raise ε or N", reps)
	}
	f := &Forecast{Mechanism: mechanism, CoefSD: make([]float64, d), CoefSDOriginal: make([]float64, d), Reference: ReferenceDesign,
		PredictionRMS: math.Sqrt(predSS / float64(len(devs)))}
	col := make([]float64, len(devs))
	for i := 0; i < d; i++ {
		for b := range devs {
			col[b] = devs[b][i]
		}
		sort.Float64s(col)
		f.CoefSD[i] = robustSD(col, reps)
	}
	cov := covariance(devs, d)
	for i, u := range s.OriginalUnits() {
		v := 0.0
		for a := 0; a < d; a++ {
			for b := 0; b < d; b++ {
				v += u.Weights[a] * cov[a][b] * u.Weights[b]
			}
		}
		if sl, ok := u.Slope(); ok {
			f.CoefSDOriginal[i] = math.Abs(sl) * f.CoefSD[i]
		} else {
			f.CoefSDOriginal[i] = math.Sqrt(v)
		}
	}
	if f.Shrinkage, err = shrinkage(q0, rel.PostProcess()); err != nil {
		return nil, err
	}
	limit, scale := SwampRatio, "of the target's declared half-range"
	if cfg.Kind == regress.Logistic {
		limit, scale = LogOddsSwamp, "log-odds units"
	}
	f.FailedShare = float64(failed) / float64(reps)
	if f.PredictionRMS > limit || f.Shrinkage > ShrinkSwamp || f.FailedShare > 0.05 {
		f.Swamped = true
		f.Warning = fmt.Sprintf("the privacy noise is forecast to swamp the signal: at N = %d, %d coefficients, ε = %g with %s, the noise alone moves predictions by about %.3g %s (warning above %g) and the ridge it needs removes up to %.0f%% of a coefficient (warning above %.0f%%); expect a test R² near or below 0: raise ε, use more rows or fewer features",
			n, d, cfg.Epsilon, mechanism, f.PredictionRMS, scale, limit, 100*f.Shrinkage, 100*ShrinkSwamp)
		if f.FailedShare > 0.05 {
			f.Warning += fmt.Sprintf("; in %.0f%% of simulated fits the noise leaves Λ2 without a usable direction (the fit would fail)", 100*f.FailedShare)
		}
	}
	return f, nil
}

// minimizeFast is q.Minimize(pp) for a post-processing without a ball:
// when nothing would be trimmed or clipped (Λ2 + (λ − max(floor, clip))·I
// positive definite after the structure's projection) it is the Cholesky
// solve of (Λ2 + λI)w = −½Λ1, several times cheaper than the
// eigen-decomposition; otherwise the tridiagonal path (triSolver, tri its
// reused workspace of size q.D) with the fit's rule (an eigenvalue of
// Λ2 + λI below the clip pp.Floor is raised to it, then one at or below the
// trimming floor, or not positive, is trimmed), which needs vectors only
// for the clipped and trimmed directions. It returns the number of trimmed
// directions. (Before issue 24's change the Cholesky test ignored the clip
// pp.Floor, so a replicate with an eigenvalue between the trimming floor
// and the clip was solved unclipped, unlike the fit.)
func minimizeFast(q *regress.Quadratic, pp regress.PostProcess, tri *triSolver) ([]float64, int, error) {
	if pp.Radius == 0 && pp.RelTol == 0 {
		p := q
		if pp.Structure != nil {
			var err error
			if p, err = pp.Structure.Project(q); err != nil {
				return nil, 0, err
			}
		}
		// Above max(floor, clip) no eigenvalue is trimmed or clipped.
		weak := math.Max(pp.MinEigen, pp.Floor)
		if w, ok := cholSolve(p, pp.Lambda, weak); ok {
			return w, 0, nil
		}
		if tri != nil && tri.n == p.D {
			at := func(i, j int) float64 {
				if i == j {
					return p.At(i, j) + pp.Lambda
				}
				return p.At(i, j)
			}
			// Minimize's rule: raise to the clip, then trim at the floor.
			// Every eigenvalue at or below weak = max(floor, clip) ends
			// at the clip when the clip is above the floor, else is
			// trimmed: one value for all of them.
			uniform := 0.0
			if pp.Floor > pp.MinEigen && pp.Floor > 0 {
				uniform = pp.Floor
			}
			w, trimmed, err := tri.solve(at, p.Lambda1, weak, uniform, nil)
			if err == nil {
				return w, trimmed, nil
			}
			if !errors.Is(err, errTriFallback) {
				return nil, trimmed, err
			}
		}
	}
	return q.Minimize(pp)
}

// shrinkage returns max_k of the fit's shrinkage 1 − μ_k/(max(μ_k, floor)
// + λ) over the eigenvalues μ_k of the reference Λ2 (its ridge λ or
// eigenvalue floor: regress.PostProcess.Shrinkage).
func shrinkage(q *regress.Quadratic, pp regress.PostProcess) (float64, error) {
	vals, _, err := q.Eigen(0, false)
	if err != nil {
		return 0, fmt.Errorf("inference: forecast: %w", err)
	}
	worst := 0.0
	for _, mu := range vals {
		worst = math.Max(worst, pp.Shrinkage(mu)) // the fit's own ridge or eigenvalue floor (regress.PostProcess.Shrinkage)
	}
	return worst, nil
}

// ReferenceResidualSpread is the smallest half-width c of irlsReference's
// residuals (encoded target scale, where |y| ≤ 1): a public assumption of
// the forecast, not a property of any data (see irlsReference).
const ReferenceResidualSpread = 0.33

// ReleasedDesign describes ReleasedForecast's stand-in for the data.
const ReleasedDesign = "released design: the released Λ2 (after the schema's Gram structure) with its eigenvalues raised to the fit's trimming floor, and the released Λ1 — post-processing of the released values"

// ReleasedForecaster reports whether ReleasedForecast supports the
// mechanism (the FM family).
func ReleasedForecaster(mechanism string) bool { return Forecaster(mechanism) && mechanism != "irls" }

// ReleasedForecast is the forecast simulated on the released design
// instead of the idealised reference one (issue 25 item 1: the reference
// has independent features and equally likely levels, so it reported no
// trouble where the real design's collinear columns or rare levels swamp
// the fit). It runs after the fit, on released values only: the released
// objective projected onto its public structure, with Λ2's eigenvalues
// raised to the trimming floor TrimFraction·λ so that the stand-in is
// positive definite, is re-noised with the mechanism's public noise law
// and solved with the fit's own post-processing (ridge, trimming). The
// figures mean what NoiseForecast's do, on that design; TrimmedShare adds
// the share of simulated fits that trimmed some direction. FM family only
// (fm, relaxed-fm, gaussian-fm).
func ReleasedForecast(mechanism string, rel *regress.Released, s *schema.Schema, opt Options) (*Forecast, error) {
	if !ReleasedForecaster(mechanism) {
		return nil, fmt.Errorf("inference: no released-design forecast for mechanism %q (available for fm, gaussian-fm, relaxed-fm)", mechanism)
	}
	if err := rel.Validate(); err != nil {
		return nil, fmt.Errorf("inference: %w", err)
	}
	reps, err := opt.forecastReplicates()
	if err != nil {
		return nil, err
	}
	q, err := rel.Projected()
	if err != nil {
		return nil, fmt.Errorf("inference: %w", err)
	}
	d := q.D
	vals, vecs, err := q.Eigen(0, true)
	if err != nil {
		return nil, fmt.Errorf("inference: forecast: %w", err)
	}
	q0 := &regress.Quadratic{D: d, Lambda1: append([]float64(nil), q.Lambda1...), Upper: make([]float64, len(q.Upper))}
	p := 0
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			v := 0.0
			for k, mu := range vals {
				v += vecs.At(i, k) * math.Max(mu, rel.MinEigen) * vecs.At(j, k)
			}
			q0.Upper[p] = v
			p++
		}
	}
	pp := rel.PostProcess()
	w0, _, err := q0.Minimize(pp)
	if err != nil {
		return nil, fmt.Errorf("inference: forecast: %w", err)
	}
	// Λ2 holds a·G (a = 1 linear, ⅛ logistic): the prediction's noise
	// δᵀGδ = δᵀΛ2δ/a.
	a := 1.0
	if rel.Kind == regress.Logistic {
		a = 0.125
	}
	seed := opt.seed()
	rng := rand.New(rand.NewPCG(seed, seed^0x2545f4914f6cdd1d))
	star := &regress.Quadratic{D: d, Lambda1: make([]float64, d), Upper: make([]float64, len(q0.Upper))}
	tri := newTriSolver(d)
	devs := make([][]float64, 0, reps)
	failed, trimmed := 0, 0
	predSS := 0.0
	for b := 0; b < reps; b++ {
		perturb(rng, q0, star, rel)
		w, tr, err := minimizeFast(star, pp, tri)
		if err != nil {
			failed++
			continue
		}
		if tr > 0 {
			trimmed++
		}
		dv := make([]float64, d)
		for i := range dv {
			dv[i] = w[i] - w0[i]
		}
		devs = append(devs, dv)
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				predSS += dv[i] * q0.At(i, j) / a * dv[j]
			}
		}
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("inference: forecast: the noise removes every direction of the released Λ2 in all %d simulated fits", reps)
	}
	f := &Forecast{Mechanism: mechanism, CoefSD: make([]float64, d), CoefSDOriginal: make([]float64, d), Reference: ReleasedDesign,
		PredictionRMS: math.Sqrt(predSS / float64(len(devs))), TrimmedShare: float64(trimmed) / float64(reps)}
	col := make([]float64, len(devs))
	for i := 0; i < d; i++ {
		for b := range devs {
			col[b] = devs[b][i]
		}
		sort.Float64s(col)
		f.CoefSD[i] = robustSD(col, reps)
	}
	if s != nil {
		cov := covariance(devs, d)
		for i, u := range s.OriginalUnits() {
			if i >= d {
				break
			}
			if sl, ok := u.Slope(); ok {
				f.CoefSDOriginal[i] = math.Abs(sl) * f.CoefSD[i]
				continue
			}
			v := 0.0
			for x := 0; x < d; x++ {
				for y := 0; y < d; y++ {
					v += u.Weights[x] * cov[x][y] * u.Weights[y]
				}
			}
			f.CoefSDOriginal[i] = math.Sqrt(v)
		}
	}
	if f.Shrinkage, err = shrinkage(q0, pp); err != nil {
		return nil, err
	}
	limit := SwampRatio
	if rel.Kind == regress.Logistic {
		limit = LogOddsSwamp
	}
	f.FailedShare = float64(failed) / float64(reps)
	if f.PredictionRMS > limit || f.Shrinkage > ShrinkSwamp || f.FailedShare > 0.05 {
		f.Swamped = true
		f.Warning = fmt.Sprintf("on the released design the privacy noise swamps the signal: the noise alone moves predictions by about %.3g (warning above %g), the post-processing (ridge or eigenvalue clip) shrinks a coefficient by up to %.0f%% (warning above %.0f%%), %.0f%% of simulated fits trim a direction and %.0f%% fail",
			f.PredictionRMS, limit, 100*f.Shrinkage, 100*ShrinkSwamp, 100*f.TrimmedShare, 100*f.FailedShare)
	}
	return f, nil
}
