package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/inference"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/report"
	"github.com/dplearn/dplearn/schema"
)

// defaultCIShare is the share of --epsilon that a linear FM-family fit
// spends on the target's second moment Λ0 (the residual variance of the
// confidence intervals needs it; the fit itself does not release Λ0), and an
// irls fit on its residual summary (regress.ReleaseRobustScale). Λ0's
// Laplace noise has standard deviation √2/(N·ε·share), next to residual
// variances of 10⁻³–10⁻¹ on the encoded scale, so 5% is plenty from N ≈ 10³;
// the fit keeps 95% of the budget (its noise grows by about 5%).
const defaultCIShare = 0.05

// hasIntervals reports whether fits with the mechanism get confidence
// intervals.
func hasIntervals(mechanism string) bool {
	return inference.Forecaster(mechanism) || mechanism == "irls"
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
	// zeroRows: records may enter as all-zero rows (the schema drops
	// records with a missing value, or --skip-bad-rows keeps bad records
	// as zero rows); dropped counts both kinds.
	zeroRows bool
}

// setClassical records --cov and the number of dropped records for the
// reference fit's classical summary; --cov is only for nonprivate.
func (p *inferencePlan) setClassical(cov string, dropped int64, dropsKnown, zeroRows bool) error {
	switch cov {
	case "", regress.CovNonrobust:
	case regress.CovHC1:
		if p.mechanism != "nonprivate" {
			return fmt.Errorf("--cov HC1 is for the classical summary of --mechanism nonprivate; the private fits' intervals come from their mechanism's noise (see docs/inference.md)")
		}
	default:
		return fmt.Errorf("--cov must be nonrobust or HC1, got %q", cov)
	}
	p.cov, p.dropped, p.dropsKnown, p.zeroRows = cov, dropped, dropsKnown, zeroRows
	return nil
}

// classicalRows makes the reference fit load the rows when its classical
// summary needs them (linear with --cov HC1; logistic loads them anyway).
func classicalRows(est regress.Estimator, mechanism, cov string) regress.Estimator {
	if mechanism != "nonprivate" || cov != regress.CovHC1 {
		return est
	}
	return rowsEstimator{est}
}

type rowsEstimator struct{ regress.Estimator }

func (rowsEstimator) NeedsRows(regress.Kind) bool { return true }

// planInference decides whether the fit gets confidence intervals and, for
// linear FM-family fits, takes the target moment's share out of cfg.Epsilon
// so that the composed guarantee is exactly the --epsilon given.
func planInference(mechanism string, cfg *regress.Config, share float64) (*inferencePlan, error) {
	p := &inferencePlan{mechanism: mechanism, kind: cfg.Kind}
	if !hasIntervals(mechanism) {
		return p, nil
	}
	if math.IsNaN(share) || share < 0 || share >= 1 {
		return nil, fmt.Errorf("--ci-share must be in [0, 1), got %v", share)
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

// coefRow is one line of the coefficient table, as stored in the model
// file: every number is a function of released values and public
// parameters (the schema), so it is public.
type coefRow struct {
	Name    string  `json:"name"`
	Encoded float64 `json:"encoded"`
	// Original is the fitted coefficient in original units; Meaning says
	// what it means in words.
	Original float64 `json:"original"`
	Meaning  string  `json:"meaning"`
	// The inference, when available: encoded-space and original-units
	// standard error and confidence interval.
	Identified bool    `json:"identified,omitempty"`
	SE         float64 `json:"se,omitempty"`
	// Stat and PValue are the classical t or z statistic for the
	// original-units coefficient = 0 and its two-sided p-value (reference
	// fit only).
	Stat          *float64 `json:"stat,omitempty"`
	PValue        *float64 `json:"p_value,omitempty"`
	Lower         float64  `json:"lower,omitempty"`
	Upper         float64  `json:"upper,omitempty"`
	OriginalSE    float64  `json:"original_se,omitempty"`
	OriginalLower float64  `json:"original_lower,omitempty"`
	OriginalUpper float64  `json:"original_upper,omitempty"`
	// FittedEncoded and FittedOriginal are the ridge-regularised fit the
	// model predicts with, when the printed estimate is the interval's
	// de-ridged point estimate instead.
	FittedEncoded  *float64 `json:"fitted_encoded,omitempty"`
	FittedOriginal *float64 `json:"fitted_original,omitempty"`
}

// coefReport is the "inference" section of a model file.
type coefReport struct {
	Level    float64   `json:"level,omitempty"`
	Method   string    `json:"method,omitempty"`
	Estimand string    `json:"estimand,omitempty"`
	Rows     []coefRow `json:"coefficients"`
	// TargetMoment is the released Λ0 (linear FM-family fits).
	TargetMoment *float64 `json:"target_moment,omitempty"`
	// DroppedShare is the released share of rows that are dropped records
	// (linear FM-family fits whose schema drops records).
	DroppedShare *float64 `json:"dropped_share,omitempty"`
	// Unavailable says why there are no intervals.
	Unavailable string `json:"unavailable,omitempty"`
	// Replicates and Failed are the bootstrap's size and its replicates in
	// which the noisy Λ2 lost a direction.
	Replicates int `json:"replicates,omitempty"`
	Failed     int `json:"failed_replicates,omitempty"`
	// Diagnosis says why coefficients are unidentified and what would
	// identify them.
	Diagnosis string `json:"diagnosis,omitempty"`
	// Note is a caveat on what the coefficients estimate.
	Note string `json:"note,omitempty"`
	// Classical is the reference fit's classical summary (nonprivate).
	Classical *classicalSummary `json:"classical,omitempty"`
}

// classicalSummary is the fit-level part of statsmodels' summary for the
// reference fit. The log-likelihood (and AIC, BIC) of a linear fit is that
// of the target on its declared, transformed scale (log wage for a log
// target), as statsmodels would report it fitted on that scale.
type classicalSummary struct {
	Cov      string   `json:"cov_type"`
	Stat     string   `json:"statistic"` // "t" or "z"
	Nobs     int64    `json:"nobs"`
	DFModel  float64  `json:"df_model"`
	DFResid  float64  `json:"df_resid"`
	LogLik   float64  `json:"log_likelihood"`
	AIC      float64  `json:"aic"`
	BIC      float64  `json:"bic"`
	R2       *float64 `json:"r_squared,omitempty"`
	AdjR2    *float64 `json:"adj_r_squared,omitempty"`
	F        *float64 `json:"f_statistic,omitempty"`
	FPValue  *float64 `json:"f_pvalue,omitempty"`
	Sigma    *float64 `json:"residual_sd,omitempty"`
	LLNull   *float64 `json:"ll_null,omitempty"`
	LLR      *float64 `json:"llr,omitempty"`
	LLRP     *float64 `json:"llr_pvalue,omitempty"`
	PseudoR2 *float64 `json:"pseudo_r_squared,omitempty"`
	Deviance *float64 `json:"deviance,omitempty"`
}

func fp(v float64) *float64 { return &v }

// classicalReport fills rep with the reference fit's classical summary, or
// says why there is none.
func (p *inferencePlan) classicalReport(ctx context.Context, rep *coefReport, data regress.Data, res *regress.Result, s *schema.Schema) {
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
	sum := &classicalSummary{Cov: c.Cov, Stat: stat, Nobs: c.N, DFModel: c.DFModel, DFResid: c.DFResid, LogLik: c.LogLik, AIC: c.AIC, BIC: c.BIC}
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
		r := coefRow{Name: u.Name, Encoded: c.Coef[i], Original: est, Meaning: u.Meaning(est), Identified: true,
			SE: seEnc, Lower: loEnc, Upper: hiEnc, OriginalSE: se, OriginalLower: lo, OriginalUpper: hi, Stat: fp(st), PValue: fp(pv)}
		rep.Rows = append(rep.Rows, r)
	}
}

// finish releases Λ0 if planned (composing its ε into the report), computes
// the intervals and builds the table.
func (p *inferencePlan) finish(data regress.Data, cfg regress.Config, res *regress.Result, s *schema.Schema) (*coefReport, error) {
	rep := &coefReport{}
	var iv *inference.Intervals
	switch {
	case p.mechanism == "nonprivate":
		p.classicalReport(context.Background(), rep, data, res, s)
		if rep.Classical != nil {
			return rep, nil
		}
	case p.why != "":
		rep.Unavailable = p.why
	case !p.enabled && hasIntervals(p.mechanism):
		rep.Unavailable = "no confidence intervals: --ci-share 0 spent no budget on the residual summary they need"
	case !p.enabled:
		rep.Unavailable = fmt.Sprintf("no confidence intervals for %s (available for fm, relaxed-fm, gaussian-fm and irls fits)", p.mechanism)
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
		if iv, err = inference.IRLS(res.Released, rs, inference.Options{}); err != nil {
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
		if iv, err = inference.FM(res.Released, y2, inference.Options{}); err != nil {
			return nil, err
		}
		rep.Level, rep.Method, rep.Estimand = iv.Level, iv.Method, iv.Estimand
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
		if iv.Diagnosis != nil {
			rep.Diagnosis = iv.Diagnosis.Explain(s.FeatureNames())
		}
	}
	surrogate := p.kind == regress.Logistic && surrogateLogistic(p.mechanism)
	if surrogate {
		rep.Note = "the coefficients are those of the Functional Mechanism's quadratic surrogate of the logistic loss (Taylor-truncated unless --logistic-approx says otherwise), not log-odds: exp(b) is not an odds ratio (with no noise at all, --mechanism truncated, they can differ from the maximum-likelihood log-odds several-fold where |xᵀβ| is not small); for odds ratios use objpert or noisygd (penalised logistic maximum likelihood) or nonprivate as the reference"
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
		r := coefRow{Name: u.Name, Encoded: res.Coef[i], Original: u.Apply(res.Coef)}
		if iv != nil && identifiedUnit(iv, u, i) {
			c := iv.Coefficients[i]
			r.FittedEncoded, r.FittedOriginal = fp(r.Encoded), fp(r.Original)
			r.Encoded, r.Original = est[i], u.Apply(est)
			r.Identified, r.SE, r.Lower, r.Upper = true, c.SE, c.Lower, c.Upper
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
		rep.Estimand += "; the printed estimate is the interval's own point estimate of this estimand (de-ridged: computed without the ridge, less the bootstrap's median bias), inside its interval by construction; the model predicts with the ridge-regularised fit (fitted_encoded in the model file)"
	}
	return rep, nil
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

// surrogateLogistic reports whether a logistic fit by the mechanism
// estimates a quadratic surrogate's minimiser rather than log-odds: the FM
// family and its noise-free version. nonprivate estimates the MLE, objpert
// and noisygd a penalised MLE (log-odds shrunk by their regulariser).
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
// fit's (ε_fit, δ) and the release's (ε_moment, 0).
func composeMoment(p *report.Privacy, eps float64, rel report.Release, what string) error {
	tot, err := accounting.BasicComposition(accounting.EpsDelta{Epsilon: p.Epsilon, Delta: p.Delta}, accounting.EpsDelta{Epsilon: eps})
	if err != nil {
		return fmt.Errorf("compose the target moment's budget: %w", err)
	}
	p.Accountant += fmt.Sprintf("; then basic composition with the Laplace release of the %s for the confidence intervals (ε = %s, part of --ci-share's share of the total) after ε = %s",
		what, report.Up(eps), report.Up(p.Epsilon))
	p.Epsilon, p.Delta = tot.Epsilon, tot.Delta
	p.Releases = append(p.Releases, rel)
	for i, pp := range p.PostProcessing {
		if strings.HasPrefix(pp, "Λ0 (the constant term) not released") {
			p.PostProcessing[i] = "Λ0 (the constant term) not released with the fit (it does not change the minimiser); a separate noisy Λ0 is released for the confidence intervals only"
		}
	}
	return nil
}

// raw encodes the report for the model file.
func (r *coefReport) raw() (json.RawMessage, error) {
	if r == nil {
		return nil, nil
	}
	return json.Marshal(r)
}

// writeModelCoefTable prints a model's coefficient table: the stored one,
// or, for a model without it (older files, other commands), the
// coefficients in original units without inference.
func writeModelCoefTable(w io.Writer, m *regress.Model) error {
	r := &coefReport{}
	if len(m.Inference) > 0 {
		if err := json.Unmarshal(m.Inference, r); err != nil {
			return fmt.Errorf("model: inference section: %w", err)
		}
		if len(r.Rows) != len(m.Coefficients) {
			return fmt.Errorf("model: inference section has %d coefficients, the model %d", len(r.Rows), len(m.Coefficients))
		}
		return writeCoefTable(w, r)
	}
	for i, u := range m.Schema.OriginalUnits() {
		b := u.Apply(m.Coefficients)
		r.Rows = append(r.Rows, coefRow{Name: u.Name, Encoded: m.Coefficients[i], Original: b, Meaning: u.Meaning(b)})
	}
	r.Unavailable = "no confidence intervals for this fit"
	return writeCoefTable(w, r)
}

// writeCoefTable prints the coefficient table for the local console.
func writeCoefTable(w io.Writer, r *coefReport) error {
	if r.Classical != nil {
		return writeClassicalTable(w, r)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	ci := "95% CI"
	if r.Level > 0 {
		ci = fmt.Sprintf("%g%% CI", 100*r.Level)
	}
	fmt.Fprintf(tw, "coefficient\testimate (original units)\tSE\tP>|z|\t%s (original units)\tencoded\tSE (encoded)\tmeaning\n", ci)
	for _, c := range r.Rows {
		se, ciText, seEnc, pv := "n/a", "n/a", "n/a", "n/a"
		if c.Identified {
			se, ciText, seEnc = fmt.Sprintf("%.4g", c.OriginalSE), fmt.Sprintf("[%.4g, %.4g]", c.OriginalLower, c.OriginalUpper), fmt.Sprintf("%.4g", c.SE)
		} else if r.Level > 0 {
			se, ciText, seEnc = "unidentified", "unidentified", "unidentified"
		}
		if c.Identified && c.PValue != nil {
			pv = fmt.Sprintf("%.3f", *c.PValue) // the bootstrap p-value (inference.Coefficient.PValue)
		}
		fmt.Fprintf(tw, "%s\t%+.5g\t%s\t%s\t%s\t%+.5f\t%s\t%s\n", c.Name, c.Original, se, pv, ciText, c.Encoded, seEnc, c.Meaning)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	switch {
	case r.Unavailable != "":
		fmt.Fprintf(w, "(%s)\n", r.Unavailable)
	default:
		fmt.Fprintf(w, "Intervals: %s.\nEstimand: %s.\n", r.Method, r.Estimand)
	}
	if r.Replicates > 0 {
		fmt.Fprintf(w, "Bootstrap: %d of %d replicates failed (%.1f%%: the noisy Λ2 located no direction; they count as outside every interval).\n",
			r.Failed, r.Replicates, 100*float64(r.Failed)/float64(r.Replicates))
	}
	if r.Diagnosis != "" {
		fmt.Fprintf(w, "Why: %s.\n", r.Diagnosis)
	}
	if r.Note != "" {
		fmt.Fprintf(w, "Note: %s.\n", r.Note)
	}
	return nil
}

// printForecast prints the forecast of the noise before fitting. It uses
// only public quantities (mechanism, ε, δ, N, schema).
func printForecast(w io.Writer, mechanism string, cfg regress.Config, s *schema.Schema, n int64) (*inference.Forecast, error) {
	if !inference.Forecaster(mechanism) {
		return nil, nil
	}
	f, err := inference.NoiseForecast(mechanism, cfg, s, n, inference.Options{Replicates: 500})
	if err != nil {
		fmt.Fprintf(w, "forecast: %v\n", err)
		return nil, nil
	}
	fmt.Fprintf(w, "Forecast before fitting (public quantities only: N = %d, %d coefficients, ε = %s for the fit, the schema's ranges): noise standard deviation of the encoded coefficients %s (median), of the encoded prediction %.3g; the ridge removes up to %.0f%% of a coefficient.\n",
		n, len(f.CoefSD), report.Up(cfg.Epsilon), fmtMedian(f.CoefSD), f.PredictionRMS, 100*f.Shrinkage)
	// The forecast cannot see the data's design (issue 25 item 1): say so,
	// and where to read the real design's failures.
	fmt.Fprintln(w, "(The forecast simulates an idealised design: independent features, equally likely category levels. Rare levels or nearly collinear columns make the real fit noisier; the bootstrap line after the fit reports failures on the released design.)")
	if f.Warning != "" {
		fmt.Fprintf(w, "warning: %s\n", f.Warning)
	}
	return f, nil
}

func fmtMedian(xs []float64) string {
	c := append([]float64(nil), xs...)
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && c[j] < c[j-1]; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
	return fmt.Sprintf("%.3g", c[len(c)/2])
}

// setupRadius gives noisygd the --radius flag (it was only wired to objpert)
// and states the radius R in the report: the value, and whether it is the
// default. R is a public parameter of the mechanism.
func setupRadius(mechanism string, cfg *regress.Config, d int) (radius float64, isDefault, used bool) {
	given := cfg.ObjPert.Radius
	var def float64
	switch {
	case mechanism == "noisygd":
		if cfg.NoisyGD.Radius == 0 {
			cfg.NoisyGD.Radius = given
		}
		given = cfg.NoisyGD.Radius
		def = regress.DefaultNoisyGDRadius(cfg.Kind, d)
	case mechanism == "objpert" && cfg.Kind == regress.Linear:
		def = regress.DefaultObjPertRadius(d)
	default:
		return 0, false, false
	}
	if given == 0 {
		return def, true, true
	}
	return given, false, true
}

// radiusNote is the report's statement of the radius (public).
func radiusNote(mechanism string, kind regress.Kind, d int, radius float64, isDefault bool) string {
	rule, def := "√d/2", regress.DefaultObjPertRadius(d)
	if mechanism == "noisygd" {
		def = regress.DefaultNoisyGDRadius(kind, d)
		if kind == regress.Logistic {
			rule = "2√d"
		}
	}
	if isDefault {
		return fmt.Sprintf("public parameter ball ‖ω‖ ≤ R = %.4g on the encoded coefficients: the default %s for d = %d (--radius changes it; a larger R costs more noise)", radius, rule, d)
	}
	return fmt.Sprintf("public parameter ball ‖ω‖ ≤ R = %.4g on the encoded coefficients, set by --radius (the default would be %s = %.4g for d = %d)", radius, rule, def, d)
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

// writeClassicalTable prints the reference fit's table as statsmodels'
// summary does: coefficient, SE, t or z, two-sided p, interval (original
// units), then the fit's statistics.
func writeClassicalTable(w io.Writer, r *coefReport) error {
	c := r.Classical
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "coefficient\toriginal units\tSE\t%s\tP>|%s|\t%g%% CI (original units)\tencoded\tSE (encoded)\tmeaning\n", c.Stat, c.Stat, 100*r.Level)
	for _, row := range r.Rows {
		st, pv := math.NaN(), math.NaN()
		if row.Stat != nil {
			st = *row.Stat
		}
		if row.PValue != nil {
			pv = *row.PValue
		}
		fmt.Fprintf(tw, "%s\t%+.5g\t%.4g\t%.3f\t%s\t[%.4g, %.4g]\t%+.5f\t%.4g\t%s\n", row.Name, row.Original, row.OriginalSE, st, fmtP(pv),
			row.OriginalLower, row.OriginalUpper, row.Encoded, row.SE, row.Meaning)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "No. observations %d, df model %g, df residuals %g, covariance %s.\n", c.Nobs, c.DFModel, c.DFResid, c.Cov)
	if c.R2 != nil {
		fmt.Fprintf(w, "R² %.4f, adjusted R² %.4f, F %.4g (p %s), residual SD %.4g (target scale after its transform).\n", *c.R2, *c.AdjR2, *c.F, fmtP(*c.FPValue), *c.Sigma)
		fmt.Fprintf(w, "Log-likelihood %.6g, AIC %.6g, BIC %.6g (Gaussian, target scale after its transform).\n", c.LogLik, c.AIC, c.BIC)
	} else {
		fmt.Fprintf(w, "Log-likelihood %.6g, LL-null %.6g, LLR %.4g (p %s), pseudo-R² (McFadden) %.4f, deviance %.6g, AIC %.6g, BIC %.6g.\n",
			c.LogLik, *c.LLNull, *c.LLR, fmtP(*c.LLRP), *c.PseudoR2, *c.Deviance, c.AIC, c.BIC)
	}
	fmt.Fprintf(w, "Intervals: %s.\nEstimand: %s.\n", r.Method, r.Estimand)
	return nil
}

// fmtP prints a p-value as statsmodels' summary does to three decimals,
// with small ones in scientific notation rather than as 0.000.
func fmtP(p float64) string {
	if p == 0 {
		return "<1e-300" // below float64's range
	}
	if p < 0.001 {
		return fmt.Sprintf("%.2g", p)
	}
	return fmt.Sprintf("%.3f", p)
}
