package fit

import (
	"context"
	"fmt"
	"math"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/inference"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/report"
	"github.com/dplearn/dplearn/schema"
)

// hasIntervals reports whether fits with the mechanism can get
// confidence intervals. auto can because one of the mechanisms its rule
// chooses (gaussian-fm) has them; on its other path (noisygd) the plan
// says why there are none (planMechanism).
func hasIntervals(mechanism string) bool {
	if mechanism == "auto" {
		return hasIntervals(regress.AutoHuberPath) || hasIntervals(regress.AutoLeastSquaresPath)
	}
	return inference.Forecaster(mechanism) || mechanism == "irls" || mechanism == "objpert"
}

// planMechanism is planInference for a fit by the mechanism on n rows with
// d coefficients (intercept included: the N and K − 1 regress reads from
// the statistics). For every mechanism but auto it is planInference. auto
// gets the plan (intervals, the split of ε, the forecasts) of the
// mechanism its public rule (regress.AutoPath, the one source of the rule)
// chooses, exactly as if that mechanism had been asked for: noisygd on the
// Huber path (no intervals, the whole ε to the fit), gaussian-fm on the
// least-squares path (Λ0 and inference.FM with --ci-share's share of ε).
//
// The rule depends on ε, and the plan may take the intervals' share out of
// ε before the fit: the estimator decides its path from the ε it is given
// (cfg.Epsilon after the split), so the path must be a fixed point, the
// mechanism whose plan leaves an ε at which the rule chooses it. Each
// candidate is planned on a copy of cfg and kept when the rule at its
// fit's ε chooses it: noisygd first (its fit's ε is the whole ε, so it is
// a fixed point exactly when the rule chooses it at ε), then gaussian-fm
// with the share. One case has neither: ε just above the rule's upper
// bound with ε·(1 − share) inside it. There gaussian-fm is planned with
// the whole ε and no intervals, which the rule chooses at ε, and the
// report says why. So every request has exactly one plan, the rule's
// choice at the ε its fit runs with.
func planMechanism(mechanism string, cfg *regress.Config, share float64, n int64, d int) (*inferencePlan, error) {
	if mechanism != "auto" {
		return planInference(mechanism, cfg, share)
	}
	if cfg.Kind == regress.Logistic {
		m := regress.AutoPathFor(cfg.Kind, n, d, cfg.Epsilon)
		p, err := planInference(m, cfg, share)
		if err != nil {
			return nil, err
		}
		p.why = fmt.Sprintf("no confidence intervals: auto fits logistic models by %s's clipped gradient, which has none (--mechanism objpert has them, for the maximum-likelihood log-odds)", m)
		return p, nil
	}
	r := float64(n) * cfg.Epsilon / float64(d)
	for _, m := range []string{regress.AutoHuberPath, regress.AutoLeastSquaresPath} {
		c := *cfg
		p, err := planInference(m, &c, share)
		if err != nil {
			return nil, err
		}
		if regress.AutoPath(n, d, c.Epsilon) == m {
			if m == regress.AutoHuberPath {
				p.why = fmt.Sprintf("no confidence intervals: auto's rule chose Huber's loss by %s at N·ε/d = %.4g, which has none (--mechanism %s or irls have them)", m, r, regress.AutoLeastSquaresPath)
			}
			*cfg = c
			return p, nil
		}
	}
	c := *cfg
	p, err := planInference(regress.AutoLeastSquaresPath, &c, 0)
	if err != nil {
		return nil, err
	}
	if regress.AutoPath(n, d, c.Epsilon) != regress.AutoLeastSquaresPath {
		return nil, fmt.Errorf("fit: auto: no path of its rule is consistent with the ε left after --ci-share's share (N = %d, d = %d, ε = %v)", n, d, cfg.Epsilon)
	}
	p.why = fmt.Sprintf("no confidence intervals: at N·ε/d = %.4g auto's rule chooses least squares by %s, but with --ci-share's share taken out of ε it would choose %s; the fit keeps the whole ε (--mechanism %s gives intervals)", r, regress.AutoLeastSquaresPath, regress.AutoHuberPath, regress.AutoLeastSquaresPath)
	*cfg = c
	return p, nil
}

// checkPath refuses a fit whose estimator took another path than the plan
// assumed (auto's least-squares path releases Gaussian FM's objective,
// its Huber path no objective at all), before any interval is computed
// from it: planMechanism and regress.AutoPath agree by construction, and
// this keeps a future change to either from printing one mechanism's
// intervals for the other's fit.
func checkPath(mechanism, path string, res *regress.Result) error {
	if mechanism != "auto" {
		return nil
	}
	if released := res.Released != nil; released != (path == regress.AutoLeastSquaresPath) {
		return fmt.Errorf("fit: auto's estimator released %s, but its intervals were planned for %s", map[bool]string{true: "an objective", false: "no objective"}[released], path)
	}
	return nil
}

// Values of Request.Intervals.
const (
	IntervalsAuto = "auto"
	IntervalsOn   = "on"
	IntervalsOff  = "off"
)

// IntervalsHelp is the rule, for the --intervals flag's help.
var IntervalsHelp = fmt.Sprintf("confidence intervals: auto (default) computes them when the forecasts and intervals fit a budget of %g× the fit's cost, counted from the public N and number of coefficients d (always for d ≤ %d; at least %d bootstrap replicates, fewer than %d stated with their Monte Carlo error), else spends no ε on them and says so; on computes them with %d replicates whatever they cost; off never", inference.InferenceShare, inference.FullD, inference.MinReplicates, inference.DefaultReplicates, inference.DefaultReplicates)

// checkIntervals refuses an unknown Request.Intervals and a Replicates
// the bootstrap cannot use.
func checkIntervals(r Request) error {
	switch r.Intervals {
	case "", IntervalsAuto, IntervalsOn, IntervalsOff:
	default:
		return fmt.Errorf("--intervals must be auto, on or off, got %q", r.Intervals)
	}
	switch {
	case r.Replicates != 0 && r.Replicates < 100:
		return fmt.Errorf("--ci-replicates must be at least 100 (or 0: the budget's), got %d", r.Replicates)
	case r.Replicates != 0 && !hasIntervals(r.Mechanism):
		return fmt.Errorf("--ci-replicates: --mechanism %s has no bootstrap intervals; drop it", r.Mechanism)
	case r.Replicates != 0 && r.Intervals == IntervalsOff:
		return fmt.Errorf("--ci-replicates sizes intervals that --intervals off turns off; drop one")
	}
	return nil
}

// intervalShare returns the share of ε to spend on the intervals and,
// when they are off by the request or the budget, the one-line note that
// says so (the share is then 0: nothing is released for them and the
// whole ε goes to the fit). Only mechanisms with intervals and a share
// above 0 are affected.
func intervalShare(r Request, b inference.Budget) (float64, string) {
	if !hasIntervals(r.Mechanism) || r.CIShare == 0 {
		return r.CIShare, ""
	}
	switch {
	case r.Intervals == IntervalsOff:
		return 0, "no confidence intervals (--intervals off): nothing was spent on them, the whole ε went to the fit"
	case r.Intervals == IntervalsOn || r.Replicates > 0:
		return r.CIShare, ""
	case b.Replicates == 0:
		return 0, b.Note()
	}
	return r.CIShare, ""
}

// intervalOptions sizes the bootstrap: the request's Replicates, the
// default with IntervalsOn, else the budget's.
func intervalOptions(r Request, b inference.Budget) inference.Options {
	switch {
	case r.Replicates > 0:
		return inference.Options{Replicates: r.Replicates}
	case r.Intervals == IntervalsOn:
		return inference.Options{}
	}
	return b.Options()
}

// forecastSizes are the sizes of the forecasts before fitting and on the
// released design: the default with IntervalsOn, else the budget's.
func forecastSizes(r Request, b inference.Budget) (before, released int) {
	if r.Intervals == IntervalsOn {
		return ForecastReplicates, ForecastReplicates
	}
	return b.ForecastReplicates, b.ReleasedForecastReplicates
}

// forecastSkipped says why a forecast did not run.
func forecastSkipped(b inference.Budget) error {
	return fmt.Errorf("skipped: at d = %d, N = %d fewer than %d simulated fits fit the inference budget (%g× the fit; the default forecasts and intervals would cost %s×); --intervals=on runs it", b.D, b.N, inference.MinForecastReplicates, inference.InferenceShare, b.CostRatioText())
}

// inferencePlan is what `fit` does for the coefficient table: it splits the
// budget before the fit and computes the intervals after it.
type inferencePlan struct {
	mechanism string
	kind      regress.Kind
	// momentEps is the ε spent on Λ0 (0 when no moment is released).
	fitEps, momentEps float64
	enabled           bool
	// why, when set, says why intervals are off for this configuration.
	why string
	// cov is the reference fit's covariance (--cov) and dropped the number
	// of records dropped for a missing value (zero rows to take out of the
	// classical summary's n).
	cov     string
	dropped int64
	// dropsKnown says whether dropped is the real count (false for
	// --stats input, which does not record it).
	dropsKnown bool
	// opt sizes the bootstrap (the inference budget or the request's
	// override).
	opt inference.Options
	// fewerWhy says why opt has fewer than the default replicates.
	fewerWhy string
	// zeroRows: records may enter as all-zero rows (the schema drops
	// records with a missing value, or --skip-bad-rows keeps bad records
	// as zero rows); dropped counts both kinds.
	zeroRows bool
}

// setClassical records --cov and the number of dropped records for the
// reference fit's classical summary; --cov is only for nonprivate.
func (p *inferencePlan) setClassical(cov string, dropped int64, dropsKnown, zeroRows bool) error {
	if err := checkCov(p.mechanism, cov); err != nil {
		return err
	}
	p.cov, p.dropped, p.dropsKnown, p.zeroRows = cov, dropped, dropsKnown, zeroRows
	return nil
}

// planInference decides whether the fit gets confidence intervals and, for
// linear FM-family fits, takes the target moment's share out of cfg.Epsilon
// so that the composed guarantee is exactly the --epsilon given.
func planInference(mechanism string, cfg *regress.Config, share float64) (*inferencePlan, error) {
	p := &inferencePlan{mechanism: mechanism, kind: cfg.Kind}
	if !hasIntervals(mechanism) {
		return p, nil
	}
	if err := checkCIShare(share); err != nil {
		return nil, err
	}
	if mechanism == "objpert" {
		// Logistic objpert: the share is the share of the fit's own
		// (ε, δ) calibration given to a noisy Hessian (inference.ObjPert).
		if cfg.Kind != regress.Logistic {
			p.why = "no confidence intervals for linear objpert (logistic objpert has them)"
		} else if share > 0 {
			cfg.ObjPert.HessianShare = share
			p.enabled = true
		}
		return p, nil
	}
	// The intervals model the seed's Taylor objective minimised without a
	// constraint; with another objective or the ball they would describe
	// the wrong estimator, so there are none (and no budget is spent).
	if cfg.Kind == regress.Logistic && cfg.LogisticApprox != "" && cfg.LogisticApprox != "taylor" {
		p.why = "no confidence intervals with --logistic-approx " + cfg.LogisticApprox + " (they are derived for the Taylor objective)"
		return p, nil
	}
	if cfg.SolveRadius > 0 && mechanism != "irls" {
		p.why = "no confidence intervals with --solve-radius (they are derived for the unconstrained minimiser)"
		return p, nil
	}
	if cfg.Kind == regress.Linear || mechanism == "irls" {
		if share == 0 {
			return p, nil // no budget for Λ0: no intervals
		}
		p.fitEps = cfg.Epsilon * (1 - share)
		// ε − ε_fit is exact (Sterbenz), so ε_fit + ε_moment == ε.
		p.momentEps = cfg.Epsilon - p.fitEps
		cfg.Epsilon = p.fitEps
	}
	p.enabled = true
	return p, nil
}

func fp(v float64) *float64 { return &v }

// classicalReport fills rep with the reference fit's classical summary, or
// says why there is none.
func (p *inferencePlan) classicalReport(ctx context.Context, rep *regress.CoefTable, data regress.Data, res *regress.Result, s *schema.Schema) {
	if p.kind != regress.Linear && p.kind != regress.Logistic {
		rep.Unavailable = "no classical summary for robust (L1) reference fits"
		return
	}
	opt := regress.ClassicalOptions{Cov: p.cov, Dropped: p.dropped, HasIntercept: s.HasIntercept()}
	if !s.Target.Binary() {
		opt.TargetScale = (s.Target.Range[1] - s.Target.Range[0]) / 2
	}
	c, err := regress.ClassicalFit(ctx, p.kind, data, res.Coef, opt)
	if err != nil {
		rep.Unavailable = "no classical summary: " + err.Error()
		return
	}
	rep.Level = c.Level
	stat := "t"
	if !c.UseT {
		stat = "z"
	}
	covText := "model-based covariance (σ̂²(XᵀX)⁻¹)"
	if p.kind == regress.Logistic {
		covText = "model-based covariance (inverse Fisher information at the MLE)"
	}
	if c.Cov == regress.CovHC1 {
		covText = "heteroskedasticity-robust covariance HC1 (White's sandwich × n/(n − k))"
	}
	rep.Method = fmt.Sprintf("classical inference for the non-private reference fit, as statsmodels' %s: %s; %s statistics", map[regress.Kind]string{regress.Linear: "OLS", regress.Logistic: "Logit"}[p.kind], covText, stat)
	if p.kind == regress.Linear {
		rep.Estimand = "population least-squares coefficients of the (transformed, clipped) target on the features in original units"
	} else {
		rep.Estimand = "logistic-regression coefficients (log-odds per unit, the maximum-likelihood estimand); exp(b) is an odds ratio"
	}
	sum := &regress.ClassicalSummary{Cov: c.Cov, Stat: stat, Nobs: c.N, DFModel: c.DFModel, DFResid: c.DFResid, LogLik: c.LogLik, AIC: c.AIC, BIC: c.BIC}
	if p.kind == regress.Linear {
		sum.R2, sum.AdjR2, sum.F, sum.FPValue, sum.Sigma = fp(c.R2), fp(c.AdjR2), fp(c.F), fp(c.FPValue), fp(c.ScaleSigma)
	} else {
		sum.LLNull, sum.LLR, sum.LLRP, sum.PseudoR2, sum.Deviance = fp(c.LLNull), fp(c.LLR), fp(c.LLRPValue), fp(c.PseudoR2), fp(c.Deviance)
	}
	rep.Classical = sum
	units := s.OriginalUnits()
	for i, u := range units {
		// Encoded-space statistics: the encoded coefficient's own row.
		e := make([]float64, len(units))
		e[i] = 1
		_, seEnc, _, _, loEnc, hiEnc := c.Test(0, e)
		est, se, st, pv, lo, hi := c.Test(u.Offset, u.Weights)
		r := regress.CoefRow{Name: u.Name, Encoded: c.Coef[i], Original: est, Meaning: u.Meaning(est), Identified: true,
			SE: seEnc, Lower: loEnc, Upper: hiEnc, OriginalSE: se, OriginalLower: lo, OriginalUpper: hi, Stat: fp(st), PValue: fp(pv)}
		rep.Rows = append(rep.Rows, r)
	}
}

// finish releases Λ0 if planned (composing its ε into the report), computes
// the intervals and builds the table.
func (p *inferencePlan) finish(ctx context.Context, data regress.Data, cfg regress.Config, res *regress.Result, s *schema.Schema) (*regress.CoefTable, error) {
	rep := &regress.CoefTable{}
	var iv *inference.Intervals
	switch {
	case p.mechanism == "nonprivate":
		p.classicalReport(ctx, rep, data, res, s)
		if rep.Classical != nil {
			return rep, nil
		}
	case p.why != "":
		rep.Unavailable = p.why
	case !p.enabled && p.mechanism == "objpert":
		rep.Unavailable = "no confidence intervals: --ci-share 0 released no Hessian; the coefficients are the ridge-penalised fit (log-odds shrunk toward 0 by the regulariser Λ), not the de-ridged maximum-likelihood estimate"
	case !p.enabled && hasIntervals(p.mechanism):
		rep.Unavailable = "no confidence intervals: --ci-share 0 spent no budget on the residual summary they need"
	case !p.enabled:
		rep.Unavailable = fmt.Sprintf("no confidence intervals for %s (available for fm, relaxed-fm, gaussian-fm and irls fits, auto's least-squares path, and logistic objpert)", p.mechanism)
	case p.mechanism == "objpert":
		var err error
		if iv, err = inference.ObjPert(res.ObjPert, p.opt); err != nil {
			return nil, err
		}
		rep.Level, rep.Method, rep.Estimand = iv.Level, iv.Method, iv.Estimand
	case res.Released == nil:
		rep.Unavailable = "no confidence intervals: the fit released no objective"
	case p.mechanism == "irls":
		rs, rel, err := regress.ReleaseRobustScale(data.Rows, data.Stats.K(), res.Coef, res.Released.ResidualFloor, p.momentEps, cfg.Source)
		if err != nil {
			return nil, err
		}
		if err := composeMoment(&res.Privacy, p.momentEps, rel, "residual summary at the fitted coefficients"); err != nil {
			return nil, err
		}
		if iv, err = inference.IRLS(res.Released, rs, p.opt); err != nil {
			return nil, err
		}
		rep.Level, rep.Method, rep.Estimand = iv.Level, iv.Method, iv.Estimand
	default:
		var y2 *inference.TargetMoment
		if p.momentEps > 0 {
			epsY2 := p.momentEps
			correct := p.zeroRows && p.kind == regress.Linear && p.dropsKnown
			if correct {
				epsY2 = p.momentEps / 2 // the other half releases the dropped share
			}
			v, rel, err := regress.ReleaseTargetMoment(data.Stats, epsY2, cfg.Source)
			if err != nil {
				return nil, err
			}
			if err := composeMoment(&res.Privacy, epsY2, rel, "target moment Λ0"); err != nil {
				return nil, err
			}
			y2 = &inference.TargetMoment{Value: v}
			if u, ok := regress.UnitOf(data.Stats); ok {
				y2.SamplingInflation = UnitSamplingInflation(u.MaxRows) // units.go
			}
			rep.TargetMoment = &v
			if correct {
				epsF := p.momentEps - epsY2
				f, rel, err := regress.ReleaseDroppedShare(p.dropped, data.Stats.N(), epsF, cfg.Source)
				if err != nil {
					return nil, err
				}
				if err := composeMoment(&res.Privacy, epsF, rel, "number of records dropped for a missing value"); err != nil {
					return nil, err
				}
				y2.KeptShare = 1 - f
				rep.DroppedShare = &f
			}
		}
		var err error
		if iv, err = inference.FM(res.Released, y2, p.opt); err != nil {
			return nil, err
		}
		rep.Level, rep.Method, rep.Estimand = iv.Level, iv.Method, iv.Estimand
		if u, ok := regress.UnitOf(data.Stats); ok && y2 != nil {
			rep.Method += "; " + unitIntervalNote(u)
			rep.Estimand += "; " + unitIntervalNote(u)
		}
		switch {
		case rep.DroppedShare != nil:
			rep.Method += fmt.Sprintf("; the residual variance is divided by 1 − f̂ = %.4g, f̂ the released share of rows that are dropped records (Laplace, half of --ci-share's budget), since their zero rows shrink Λ0 − βᵀΛ2β by 1 − f", 1-*rep.DroppedShare)
		case p.zeroRows && p.kind == regress.Linear:
			rep.Method += "; the schema drops records with a missing value but the number dropped is unknown here (--stats input): the sampling part is short by √(1 − f) for a dropped share f"
		case p.zeroRows:
			rep.Method += "; the schema drops records with a missing value: their zero rows make the sampling part's residual variance ¼ − βᵀΛ2β/2 larger than over the records (conservative)"
		}
	}
	units := s.OriginalUnits()
	z := 0.0
	if iv != nil {
		z = inference.NormalQuantile(0.5 + iv.Level/2)
		rep.Replicates, rep.Failed = iv.Replicates, iv.Failed
		if iv.Replicates < inference.DefaultReplicates {
			rep.Method += fmt.Sprintf("; %d replicates, fewer than the default %d (%s): each interval end carries a Monte Carlo error of about %.2f SE, which alone lowers the coverage by about %.2f percentage points (1.0 point measured at 200 replicates, docs/inference.md)",
				iv.Replicates, inference.DefaultReplicates, p.fewerWhy, inference.QuantileMCError(iv.Replicates), 100*inference.CoverageLoss(iv.Replicates))
		}
		if iv.Diagnosis != nil {
			rep.Diagnosis = iv.Diagnosis.Explain(s.FeatureNames())
		}
	}
	surrogate := p.kind == regress.Logistic && surrogateLogistic(p.mechanism)
	if surrogate {
		rep.Note = "the coefficients are those of the Functional Mechanism's quadratic surrogate of the logistic loss (Taylor-truncated unless --logistic-approx says otherwise), not log-odds: exp(b) is not an odds ratio (with no noise at all, --mechanism truncated, they can differ from the maximum-likelihood log-odds several-fold where |xᵀβ| is not small); for odds ratios use objpert (penalised logistic maximum likelihood, de-ridged with intervals) or nonprivate as the reference"
	}
	if p.kind == regress.Logistic && p.mechanism == "noisygd" && regress.NoisyGDHuberScale(cfg, data.Stats.N(), data.Stats.K()-1) > 0 {
		rep.Note = "the coefficients are noisygd's clipped-gradient fit (each row's gradient clipped to norm --huber c): log-odds of a bounded-influence logistic estimator, shrunk toward 0 against the maximum-likelihood log-odds where rows' gradients are clipped; chosen for prediction (log-loss, accuracy). For odds ratios of the maximum-likelihood fit use objpert (with intervals) or nonprivate as the reference"
	}
	// One estimator per row: where the coefficient has an interval, the
	// printed estimate is the point estimate the interval is built around
	// (inference.Coefficient.Estimate: the released objective's
	// unregularised minimiser less the bootstrap's median bias), which lies
	// between the interval's ends by construction (the median of the
	// bootstrap deviations lies between their α/2 and 1 − α/2 quantiles).
	// The ridge-regularised fit the model predicts with is kept as
	// FittedEncoded/FittedOriginal.
	est := append([]float64(nil), res.Coef...)
	if iv != nil {
		for j, c := range iv.Coefficients {
			if c.Identified {
				est[j] = c.Estimate
			}
		}
	}
	for i, u := range units {
		r := regress.CoefRow{Name: u.Name, Encoded: res.Coef[i], Original: u.Apply(res.Coef)}
		if iv != nil && identifiedUnit(iv, u, i) {
			c := iv.Coefficients[i]
			r.FittedEncoded, r.FittedOriginal = fp(r.Encoded), fp(r.Original)
			r.Encoded, r.Original = est[i], u.Apply(est)
			r.Identified, r.SE, r.Lower, r.Upper = true, c.SE, c.Lower, c.Upper
			r.WeaklyLocated = weakUnit(iv, u, i)
			if sl, ok := u.Slope(); ok {
				r.OriginalSE = math.Abs(sl) * c.SE
				a, b := sl*c.Lower, sl*c.Upper
				r.OriginalLower, r.OriginalUpper = math.Min(a, b), math.Max(a, b)
				r.PValue = fp(c.PValue) // b = 0 exactly when ω = 0
			} else {
				// The intercept is a linear combination: normal interval
				// with the bootstrap covariance, centred at the
				// combination of the bias-corrected estimates.
				v := 0.0
				for a := range u.Weights {
					for b := range u.Weights {
						v += u.Weights[a] * iv.Covariance[a][b] * u.Weights[b]
					}
				}
				r.OriginalSE = math.Sqrt(v)
				r.OriginalLower, r.OriginalUpper = r.Original-z*r.OriginalSE, r.Original+z*r.OriginalSE
				r.PValue = fp(inference.NormalPValue(r.Original, r.OriginalSE))
			}
		}
		r.Meaning = u.Meaning(r.Original)
		if surrogate {
			r.Meaning = surrogateMeaning(u, r.Original, s.Target.Name)
		}
		rep.Rows = append(rep.Rows, r)
	}
	if iv != nil && rep.Estimand != "" {
		rep.Estimand += estimateWording(p.mechanism, res.Released)
	}
	return rep, nil
}

// estimateWording is the estimand line's account of the printed estimate
// against the fit the model predicts with, naming the post-processing the
// fit actually applied (issue 25: a gaussian-fm linear fit clips the noisy
// Λ2's eigenvalues at a public floor and adds no ridge, so "de-ridged"
// described an estimator it does not use). objpert's estimand says it
// itself (EstimandObjPert).
func estimateWording(mechanism string, rel *regress.Released) string {
	switch {
	case mechanism == "objpert":
		return ""
	case rel != nil && rel.Floor > 0:
		return fmt.Sprintf("; the printed estimate is the interval's own point estimate of this estimand (computed without the eigenvalue clip: the released objective's minimiser over the directions it locates, less the bootstrap's median bias), inside its interval by construction; the model predicts with the eigenvalue-clipped fit (every eigenvalue of the noisy Λ2 below the public floor %.3g raised to it, no ridge; fitted_encoded in the model file)", rel.Floor)
	}
	return "; the printed estimate is the interval's own point estimate of this estimand (de-ridged: computed without the ridge, less the bootstrap's median bias), inside its interval by construction; the model predicts with the ridge-regularised fit (fitted_encoded in the model file)"
}

// identifiedUnit reports whether coefficient i in original units has an
// interval: its encoded coefficient is identified and, for the intercept (a
// combination), so is every coefficient it combines.
func identifiedUnit(iv *inference.Intervals, u schema.Unit, i int) bool {
	if !iv.Coefficients[i].Identified {
		return false
	}
	for j, w := range u.Weights {
		if w != 0 && !iv.Coefficients[j].Identified {
			return false
		}
	}
	return true
}

// weakUnit reports whether coefficient i in original units rests on a
// weakly located direction: its encoded coefficient or, for the intercept,
// any coefficient it combines is inference.Coefficient.WeaklyLocated.
func weakUnit(iv *inference.Intervals, u schema.Unit, i int) bool {
	if iv.Coefficients[i].WeaklyLocated {
		return true
	}
	for j, w := range u.Weights {
		if w != 0 && iv.Coefficients[j].WeaklyLocated {
			return true
		}
	}
	return false
}

// surrogateLogistic reports whether a logistic fit by the mechanism
// estimates a quadratic surrogate's minimiser rather than log-odds: the FM
// family and its noise-free version. nonprivate estimates the MLE, objpert
// a penalised MLE (log-odds shrunk by its regulariser), noisygd a
// bounded-influence fit (its clipped gradient; with --huber -1 the MLE on
// its ball).
func surrogateLogistic(mechanism string) bool {
	switch mechanism {
	case "fm", "relaxed-fm", "gaussian-fm", "truncated":
		return true
	}
	return false
}

// surrogateMeaning says what a surrogate logistic coefficient is, without
// calling it an odds ratio.
func surrogateMeaning(u schema.Unit, b float64, target string) string {
	switch {
	case u.Feature == "":
		return fmt.Sprintf("surrogate score of %s at zero numeric features and reference categories (not a log-odds)", target)
	case u.Category != "":
		return fmt.Sprintf("%s=%s instead of %s: %+.4g on the surrogate score (not a log-odds ratio)", u.Feature, u.Category, u.Reference, b)
	case u.Transform != schema.TransformNone:
		return fmt.Sprintf("+1 in %s(%s): %+.4g on the surrogate score (not a log-odds ratio)", u.Transform, u.Feature, b)
	}
	return fmt.Sprintf("+1 %s: %+.4g on the surrogate score (not a log-odds ratio)", u.Feature, b)
}

// composeMoment adds the extra release of the intervals (Λ0, or irls's
// residual summary) to the fit's privacy report: basic composition of the
// fit's (ε_fit, δ) and the release's (ε_moment, 0). ε_fit + ε_moment is
// the ε requested (planInference splits it exactly), and BasicComposition
// adds the ε's and δ's (Dwork & Roth, Theorem 3.16). Where the fit reports
// a zCDP ρ, the composed ρ is ρ_fit + ε_moment²/2: the Laplace release is
// ε_moment-DP, hence ε_moment²/2-zCDP (Bun & Steinke 2016, Prop. 1.4), and
// zCDP composes additively (their Lemma 2.3). A ρ ledger is charged that
// total; without the second term it would be charged the fit alone.
func composeMoment(p *report.Privacy, eps float64, rel report.Release, what string) error {
	tot, err := accounting.BasicComposition(accounting.EpsDelta{Epsilon: p.Epsilon, Delta: p.Delta}, accounting.EpsDelta{Epsilon: eps})
	if err != nil {
		return fmt.Errorf("compose the target moment's budget: %w", err)
	}
	var rho float64
	if p.Rho > 0 {
		moment, err := accounting.PureToZCDP(eps)
		if err != nil {
			return fmt.Errorf("compose the target moment's ρ: %w", err)
		}
		z, err := accounting.ComposeZCDP(accounting.ZCDP{Rho: p.Rho}, moment)
		if err != nil {
			return fmt.Errorf("compose the target moment's ρ: %w", err)
		}
		rho = z.Rho
	}
	p.Compose(tot.Epsilon, tot.Delta, rho, fmt.Sprintf("basic composition with the Laplace release of the %s for the confidence intervals (ε = %s, part of --ci-share's share of the total) after ε = %s",
		what, report.Up(eps), report.Up(p.Epsilon)), rel)
	p.ReplacePostProcessing(regress.Lambda0NotReleased, lambda0ReleasedForIntervals)
	return nil
}

// lambda0ReleasedForIntervals replaces regress.Lambda0NotReleased in the
// report of a fit whose intervals release a noisy Λ0.
const lambda0ReleasedForIntervals = "Λ0 (the constant term) not released with the fit (it does not change the minimiser); a separate noisy Λ0 is released for the confidence intervals only"

// setupRadius gives noisygd the --radius flag (it was only wired to objpert)
// and states the radius R in the report: the value, and whether it is the
// default. R is a public parameter of the mechanism. The linear default
// depends on the public N and ε (regress.DefaultObjPertRadius); it is set
// in cfg so that the mechanism uses the R printed.
func setupRadius(mechanism string, cfg *regress.Config, d int, n int64) (radius float64, isDefault, used bool) {
	given := cfg.ObjPert.Radius
	var def, walk float64
	switch {
	case mechanism == "noisygd":
		if cfg.NoisyGD.Radius == 0 {
			cfg.NoisyGD.Radius = given
		}
		given = cfg.NoisyGD.Radius
		def, _, walk = regress.NoisyGDBallFor(*cfg, d, n)
		if def == 0 && given == 0 {
			// The clipped logistic gradient: no ball unless one is given.
			return 0, false, false
		}
	case mechanism == "objpert" && cfg.Kind == regress.Linear && regress.HuberScale(*cfg, n, d) == 0:
		// Only the squared loss has a ball; the Huber loss (the default)
		// minimises over ℝ^d.
		def = regress.DefaultObjPertRadius(d, n, cfg.Epsilon)
	default:
		return 0, false, false
	}
	if given == 0 {
		if mechanism == "noisygd" {
			if walk > 0 {
				// The noise-walk ball: the fit decides R from its released
				// step and states it (regress.Result.Radius); def is the
				// plan's bound until then.
				return def, true, true
			}
			cfg.NoisyGD.Radius = def
		} else {
			cfg.ObjPert.Radius = def
		}
		return def, true, true
	}
	return given, false, true
}

// radiusNote is the report's statement of the radius (public) of a fit
// by mechanism, asked for as requested (auto's noisygd path takes no
// --radius: the note says how to set one).
func radiusNote(requested, mechanism string, cfg regress.Config, d int, n int64, radius float64, isDefault bool) string {
	set := "--radius changes it"
	if requested != mechanism {
		set = fmt.Sprintf("--mechanism %s --radius sets another", mechanism)
	}
	eps := cfg.Epsilon
	rule, def := "√d/2", regress.DefaultObjPertRadius(d, n, eps)
	growth := fmt.Sprintf(", times max(1, (Nε/(%dd))^(1/4)) at N = %d, ε = %g", regress.RadiusRuleScale, n, eps)
	cost := "a larger R costs more noise"
	if mechanism == "noisygd" {
		var base, walk float64 // one calibration for the default and its note
		def, base, walk = regress.NoisyGDBallFor(cfg, d, n)
		switch {
		case cfg.Kind == regress.Logistic && regress.NoisyGDHuberScale(cfg, n, d) > 0:
			rule, growth = "none", ""
			cost = "with the clipped logistic gradient the ball is post-processing: R costs no noise, it only regularises"
		case cfg.Kind == regress.Logistic:
			rule, growth = "2√d", ""
		case regress.HuberScale(cfg, n, d) > 0:
			rule = fmt.Sprintf("%d × √d/2", regress.NoisyGDHuberBallFactor)
			cost = "with the Huber loss the ball is post-processing: R costs no noise, it only regularises"
			if walk > 0 && isDefault && radius > base {
				growth += fmt.Sprintf(" (R₀ = %.4g), grown by the noise-walk rule (its post-processing line: W, the distance the noise alone walks in T steps of the step used, is below R₀/%d)", base, regress.NoisyGDBallWalkFactor)
			}
		}
	}
	if isDefault {
		return fmt.Sprintf("public parameter ball ‖ω‖ ≤ R = %.4g on the encoded coefficients: the default %s for d = %d%s (%s; %s)", radius, rule, d, growth, set, cost)
	}
	if def == 0 {
		return fmt.Sprintf("public parameter ball ‖ω‖ ≤ R = %.4g on the encoded coefficients, set by --radius (the default has none; %s)", radius, cost)
	}
	return fmt.Sprintf("public parameter ball ‖ω‖ ≤ R = %.4g on the encoded coefficients, set by --radius (the default would be %s for d = %d%s: %.4g)", radius, rule, d, growth, def)
}

// radiusBoundaryFraction: a released coefficient vector with
// ‖ω‖ ≥ this × R is reported as sitting on the ball's boundary.
const radiusBoundaryFraction = 0.98

// radiusWarning returns the console-only warning that the fitted coefficients
// sit on the boundary of the ball (the radius probably constrains the fit).
// It depends on the fitted values, so it goes to the local console only and
// never into the model file (PRIVACY-NOTES item 23).
func radiusWarning(coef []float64, radius float64) string {
	n := 0.0
	for _, c := range coef {
		n += c * c
	}
	n = math.Sqrt(n)
	if n < radiusBoundaryFraction*radius {
		return ""
	}
	return fmt.Sprintf("the fitted coefficients have ‖ω‖ = %.4g, on the boundary of the public ball R = %.4g: the radius probably cuts the fit short; refit with a larger --radius (this note is shown on this console only)", n, radius)
}

// zeroRowNotes are a private fit's notes on records that entered as
// all-zero rows. They depend only on the request, the input's kind and the
// schema, never on whether or how many records were bad or dropped: that
// count is data-dependent (PRIVACY-NOTES item 23).
func zeroRowNotes(skipBadRows, fromStatsFile, dropsRecords bool) []string {
	var notes []string
	if skipBadRows {
		note := "fitted with --skip-bad-rows: each record that could not be read or encoded entered the fit as an all-zero row, as a dropped record does, which adds nothing to the sums the mechanism uses but counts in N (the normalised statistics are scaled by the share of records kept); N is the number of records read and stays public as the neighbouring relation requires; the number of bad records is not released"
		if fromStatsFile {
			// A statistics file computed with skipping left the bad rows out.
			note = "fitted with --skip-bad-rows (in the statistics file, which left the bad rows out): the guarantee treats the number of encoded rows N as public; if the number of bad rows is not public knowledge, N reveals something about the data and is not covered"
		}
		notes = append(notes, note)
	}
	if dropsRecords {
		notes = append(notes,
			`the schema drops records with a missing value ("missing": "drop"): each enters the fit as an all-zero row, which adds nothing to the sums the mechanism uses but counts in N (the normalised statistics are scaled by the share of records kept), so N is the number of records read and stays public as the neighbouring relation requires; the number dropped is not released except as the Laplace-noised count that linear FM-family confidence intervals use (listed among the releases when it is)`)
	}
	return notes
}
