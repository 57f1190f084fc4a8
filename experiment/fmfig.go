package experiment

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
)

// FM seed Section 7, Figures 4-9, on CPS1988.

// fmSubsets are CPS1988 attribute subsets in the spirit of the FM seed's 5,
// 8, 11 and 14 attribute subsets (nested, adding attributes).
var fmSubsets = [][]string{
	{"education", "experience"},
	{"education", "experience", "ethnicity", "parttime"},
	{"education", "experience", "ethnicity", "parttime", "smsa"},
	{"education", "experience", "ethnicity", "parttime", "smsa", "region"},
}

const (
	fmDefaultEps = 0.8
	fmDelta      = 1e-5
)

// (Same order as fmLinMechs, Truncated last, so that the series without a
// fixed style in plot.go get the same colour in every panel.)
var fmMechs = []string{"nonprivate", "fm", "gaussian-fm", "dpme", "filter-priority", "truncated"}

// fmLinMechs are the linear panels' series (Truncated is omitted, as in the
// seed: it equals NoPrivacy for linear regression).
var fmLinMechs = []string{"nonprivate", "fm", "gaussian-fm", "dpme", "filter-priority"}

// fmHistogram reports whether a mechanism is one of the seed's
// synthetic-data baselines, which get the schema's public grid.
func fmHistogram(m string) bool { return m == "dpme" || m == "filter-priority" }

// fmSchema returns the public schema of a CPS1988 attribute subset (the
// grid of the histogram baselines), as loadReal builds it.
func fmSchema(name string, features []string) (*schema.Schema, error) {
	s, err := loadSchema(realDatasets[name].schema)
	if err != nil {
		return nil, err
	}
	var fs []schema.Feature
	for _, f := range s.Features {
		if slices.Contains(features, f.Name) {
			fs = append(fs, f)
		}
	}
	s.Features = fs
	if err := s.Validate(); err != nil {
		return nil, fmt.Errorf("experiment: %s subset: %w", name, err)
	}
	return s, nil
}

// fmData is one attribute subset: its tables and their schemas.
type fmData struct {
	lin, logi   *table
	linS, logiS *schema.Schema
}

func fmFiguresSpec() spec {
	return spec{
		name: "fm-figures", title: "Functional Mechanism: error and time vs dimensionality, cardinality and ε (CPS1988)",
		paper: "FM seed, Section 7, Figures 4-9", runs: 20, quickRuns: 2,
		build: buildFMFigures,
	}
}

func buildFMFigures(ctx context.Context, e *env) (*plan, error) {
	data := make([]fmData, len(fmSubsets))
	for i, s := range fmSubsets {
		var err error
		d := &data[i]
		if d.lin, err = e.real("cps1988", s); err != nil {
			return nil, err
		}
		if d.logi, err = e.real("cps1988-highwage", s); err != nil {
			return nil, err
		}
		if d.linS, err = fmSchema("cps1988", s); err != nil {
			return nil, err
		}
		if d.logiS, err = fmSchema("cps1988-highwage", s); err != nil {
			return nil, err
		}
	}
	full := len(fmSubsets) - 1
	rates := []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1}
	epss := []float64{3.2, 1.6, 0.8, 0.4, 0.2, 0.1}
	if e.opt.Quick {
		rates = []float64{0.1, 0.3, 1}
		epss = []float64{3.2, 0.8, 0.1}
	}
	linMechs := fmLinMechs
	pan := func(id, title, xl, yl string, logX, logY bool, metric string, series []string) panel {
		return panel{id: id, title: title, xlabel: xl, ylabel: yl, logX: logX, logY: logY, metric: metric, series: series}
	}
	fig := figure{cols: 3, panels: []panel{
		pan("dim", "Fig. 4a: linear, vs dimensionality", "encoded dimension D (with intercept)", "test MSE", false, true, "mse", linMechs),
		pan("dim", "Fig. 4c: logistic, vs dimensionality", "encoded dimension D (with intercept)", "misclassification rate", false, false, "misclassification", fmMechs),
		pan("dim", "Fig. 7: logistic time vs dimensionality", "encoded dimension D (with intercept)", "fit time (ms)", false, true, "time_ms", fmMechs),
		pan("rate", "Fig. 5a: linear, vs sampling rate", "sampling rate", "test MSE", false, true, "mse", linMechs),
		pan("rate", "Fig. 5c: logistic, vs sampling rate", "sampling rate", "misclassification rate", false, false, "misclassification", fmMechs),
		pan("rate", "Fig. 8: logistic time vs sampling rate", "sampling rate", "fit time (ms)", false, true, "time_ms", fmMechs),
		pan("eps", "Fig. 6a: linear, vs ε", "privacy budget ε", "test MSE", true, true, "mse", linMechs),
		pan("eps", "Fig. 6c: logistic, vs ε", "privacy budget ε", "misclassification rate", true, false, "misclassification", fmMechs),
		pan("eps", "Fig. 9: logistic time vs ε", "privacy budget ε", "fit time (ms)", true, true, "time_ms", fmMechs),
	}}
	fig.caption = fmt.Sprintf("Defaults (the seed's bold values): ε = %g, all attributes, sampling rate 1. gaussian-fm uses δ = %g. "+
		"Linear target: log weekly wage on [4, 9] mapped to [−1, 1]; logistic target: weekly wage > $%g (public threshold). "+
		"dpme and filter-priority: pure ε-DP, grids from the schema (see notes). "+
		"Error bars: one sd over runs (random 90:10 splits).", fmDefaultEps, fmDelta, HighWageThreshold)
	var jobs []job
	for run := 0; run < e.runs; run++ {
		for i := range fmSubsets {
			jobs = append(jobs, fmJob("dim", float64(data[i].lin.K-1), data[i], fmDefaultEps, 1))
		}
		for _, r := range rates {
			jobs = append(jobs, fmJob("rate", r, data[full], fmDefaultEps, r))
		}
		for _, eps := range epss {
			jobs = append(jobs, fmJob("eps", eps, data[full], eps, 1))
		}
	}
	notes := []string{
		fmt.Sprintf("Data: %s; the seed's IPUMS US/Brazil census extracts are not available offline. CPS1988 has 6 attributes besides wage, so the subsets have 2, 4, 5 and 6 attributes (encoded D = 3, 5, 6, 9 with the intercept) instead of the seed's 4, 7, 10, 13.", data[full].lin.Note),
		"The seed's baselines are our implementations (the seed used the authors' code): dpme is Lei (2011), a Laplace histogram over every cell of the schema's grid (numeric features and a continuous target in synth.LeiBins bins each, about N/ln N cells in all; categorical features and a binary target by their levels), synthetic data = cell representatives weighted by the noisy counts; filter-priority is Cormode et al. (2012), geometric noise, high-pass filter at θ = synth.ThresholdFor(ε, M, N) (≥ 2), priority sample of N cells, on the same grid with regress.DefaultFPBins = 16 bins per numeric axis. Both fit the model on their synthetic data (weighted least squares; weighted logistic maximum likelihood). gaussian-fm is added.",
		"Why dpme does well here (our reading, not a measurement): CPS1988 has only two numeric attributes, so even at D = 9 DPME's grid is a few thousand cells (Lei's rule: about N/ln N) for about 25,000 rows, mostly categorical levels that it represents exactly; the seed's census subsets had up to about ten numeric attributes, where bins^p forces coarse bins. fm pays for the published, conservative L1 sensitivity 2(D+1)²/N.",
		"Timings are wall-clock per fit on a shared 2-core machine with the worker pool running other fits concurrently; compare ratios within one run, not absolute values. fm and gaussian-fm timings include computing the sufficient statistics; nonprivate logistic is Newton's method on the rows.",
		"Runs are random 90:10 train/test splits (the seed used 50 × 5-fold cross-validation).",
	}
	return &plan{jobs: jobs, figures: []figure{fig}, notes: notes, claims: fmClaims}, nil
}

func fmJob(panelID string, x float64, d fmData, eps, rate float64) job {
	return func(ctx context.Context, src noise.Source, rng *rand.Rand) ([]obs, error) {
		var out []obs
		for _, t := range []*table{d.lin, d.logi} {
			n := 0
			if rate < 1 {
				n = int(math.Round(rate * 0.9 * float64(t.N())))
			}
			train, test := t.split(rng, 0.1, n)
			mechs, metric, sch := fmMechs, "misclassification", d.logiS
			if t.Kind == regress.Linear {
				mechs, metric, sch = fmLinMechs, "mse", d.linS
			}
			for _, m := range mechs {
				var coef []float64
				var dt time.Duration
				var err error
				if fmHistogram(m) {
					coef, dt, err = fitHistogram(ctx, m, t.Kind, eps, sch, train, src)
				} else {
					coef, dt, err = fitTable(ctx, fitSpec{mech: m, kind: t.Kind, eps: eps, delta: fmDelta}, train, nil, src)
				}
				if err != nil {
					return nil, fmt.Errorf("%s %s=%g: %w", t.Name, panelID, x, err)
				}
				v := evaluate(t.Kind, coef, test)
				if t.Kind == regress.Logistic {
					v = 1 - v
					out = append(out, obs{panel: panelID, xname: panelID, x: x, series: m, metric: "time_ms", v: float64(dt.Microseconds()) / 1000})
				}
				out = append(out, obs{panel: panelID, xname: panelID, x: x, series: m, metric: metric, v: v})
			}
		}
		return out, nil
	}
}

// fitHistogram fits dpme or filter-priority with the schema's public grid,
// timing it as fitTable does (statistics included).
func fitHistogram(ctx context.Context, mech string, kind regress.Kind, eps float64, s *schema.Schema, train *table, src noise.Source) ([]float64, time.Duration, error) {
	est, err := regress.New(mech)
	if err != nil {
		return nil, 0, err
	}
	est = regress.WithSchema(est, s)
	start := time.Now()
	stats, err := moments(train)
	if err != nil {
		return nil, 0, err
	}
	res, err := est.Fit(ctx, regress.Data{Stats: stats, Rows: train.Rows}, regress.Config{Kind: kind, Epsilon: eps, Source: src})
	if err != nil {
		return nil, 0, fmt.Errorf("%s (ε=%g, N=%d): %w", mech, eps, train.N(), err)
	}
	return res.Coef, time.Since(start), nil
}

func fmClaims(a *Aggregate) []Claim {
	var cl []Claim
	if f, ok := a.at("eps", "fm", "mse", fmDefaultEps); ok {
		np, _ := a.at("eps", "nonprivate", "mse", fmDefaultEps)
		g, _ := a.at("eps", "gaussian-fm", "mse", fmDefaultEps)
		h := "yes"
		if f.Mean > 1.1*np.Mean {
			h = fmt.Sprintf("no: fm's MSE is %.0f%% above nonprivate (Laplace noise with Δ = 2(D+1)²/N on N ≈ 25,000 rows; the seed had 370,000)", 100*(f.Mean/np.Mean-1))
		}
		cl = append(cl, Claim{
			Paper:    fmt.Sprintf("linear regression: FM's accuracy is almost identical to NoPrivacy (ε = %g)", fmDefaultEps),
			Measured: fmt.Sprintf("test MSE: fm %s, nonprivate %s, gaussian-fm %s", meanSD(f), meanSD(np), meanSD(g)),
			Holds:    h,
		})
	}
	if tr, ok := a.at("eps", "truncated", "misclassification", fmDefaultEps); ok {
		np, _ := a.at("eps", "nonprivate", "misclassification", fmDefaultEps)
		h := "yes"
		if tr.Mean > np.Mean+0.02 {
			h = "no"
		}
		cl = append(cl, Claim{
			Paper:    "logistic: Truncated's error is comparable to NoPrivacy",
			Measured: fmt.Sprintf("misclassification: truncated %s, nonprivate %s", meanSD(tr), meanSD(np)),
			Holds:    h,
		})
	}
	rs := a.series("rate", "fm", "misclassification")
	if len(rs) >= 2 {
		np := a.series("rate", "nonprivate", "misclassification")
		if len(np) == len(rs) {
			g0, g1 := rs[0].Mean-np[0].Mean, rs[len(rs)-1].Mean-np[len(np)-1].Mean
			h := "yes"
			if g1 >= g0 {
				h = "no"
			}
			cl = append(cl, Claim{
				Paper:    "logistic: the gap between FM and NoPrivacy shrinks as the cardinality grows",
				Measured: fmt.Sprintf("gap %s at rate %g, %s at rate %g", fmtNum(g0), rs[0].X, fmtNum(g1), rs[len(rs)-1].X),
				Holds:    h,
			})
		}
	}
	if f, ok := a.at("eps", "fm", "time_ms", fmDefaultEps); ok {
		np, _ := a.at("eps", "nonprivate", "time_ms", fmDefaultEps)
		ratio := np.Mean / f.Mean
		h := "yes"
		if ratio < 10 {
			h = fmt.Sprintf("partly: fm is %.1f× faster, not ≥ 10×", ratio)
		}
		cl = append(cl, Claim{
			Paper:    "FM's running time is at least an order of magnitude below NoPrivacy (logistic)",
			Measured: fmt.Sprintf("fit time: fm %s ms, nonprivate %s ms (ratio %.1f)", fmtNum(f.Mean), fmtNum(np.Mean), ratio),
			Holds:    h,
		})
	}
	e := a.series("eps", "fm", "time_ms")
	if len(e) >= 2 {
		lo, hi := math.Inf(1), math.Inf(-1)
		for _, r := range e {
			lo, hi = math.Min(lo, r.Mean), math.Max(hi, r.Mean)
		}
		cl = append(cl, Claim{
			Paper:    "ε has negligible effect on running time",
			Measured: fmt.Sprintf("fm fit time across ε: %s-%s ms", fmtNum(lo), fmtNum(hi)),
			Holds:    "yes (within timing noise)",
		})
	}
	return append(cl, fmBaselineClaims(a)...)
}

// fmBaselineClaims sets the seed's statements about DPME and FP beside our
// numbers.
func fmBaselineClaims(a *Aggregate) []Claim {
	var cl []Claim
	base := []string{"dpme", "filter-priority"}
	// beats counts the x values of a panel where fm's metric is below every
	// baseline's, and lists the worst margin.
	beats := func(panel, metric string) (int, int, string) {
		f := a.series(panel, "fm", metric)
		won, lost := 0, 0
		detail := ""
		for _, r := range f {
			ok := true
			for _, b := range base {
				if br, found := a.at(panel, b, metric, r.X); found && br.Mean <= r.Mean {
					ok = false
					if lost++; lost <= 2 {
						detail += fmt.Sprintf(" %s beats fm at %s=%g (%s vs %s);", b, panel, r.X, fmtNum(br.Mean), fmtNum(r.Mean))
					}
				}
			}
			if ok {
				won++
			}
		}
		if lost > 2 {
			detail += fmt.Sprintf(" and %d more", lost-2)
		}
		return won, len(f), detail
	}
	holds := func(won, of int, detail string) string {
		if won == of {
			return "yes"
		}
		if won == 0 {
			return "no:" + detail
		}
		return "partly:" + detail
	}
	vals := func(panel, series, metric string) string {
		out := ""
		for i, r := range a.series(panel, series, metric) {
			if i > 0 {
				out += ", "
			}
			out += fmt.Sprintf("%g: %s", r.X, fmtNum(r.Mean))
		}
		return out
	}
	for _, c := range []struct{ panel, metric, paper string }{
		{"dim", "mse", "Fig. 4a: FM consistently outperforms FP and DPME (linear, every dimensionality)"},
		{"dim", "misclassification", "Fig. 4c: FM's error is much smaller than FP's and DPME's (logistic, every dimensionality)"},
		{"rate", "mse", "Fig. 5: FM outperforms FP and DPME by considerable margins at every cardinality (linear)"},
		{"rate", "misclassification", "Fig. 5: FP's and DPME's errors remain considerably higher than FM's at every cardinality (logistic)"},
		{"eps", "mse", "Fig. 6: FM outperforms FP and DPME for every ε (linear)"},
		{"eps", "misclassification", "Fig. 6: FM outperforms FP and DPME for every ε (logistic)"},
	} {
		if !a.has(c.panel, "fm", c.metric) {
			continue
		}
		won, of, detail := beats(c.panel, c.metric)
		cl = append(cl, Claim{
			Paper: c.paper,
			Measured: fmt.Sprintf("fm best at %d of %d points; fm %s | dpme %s | filter-priority %s", won, of,
				vals(c.panel, "fm", c.metric), vals(c.panel, "dpme", c.metric), vals(c.panel, "filter-priority", c.metric)),
			Holds: holds(won, of, detail),
		})
	}
	// Trends of the baselines: error grows with dimensionality, falls with
	// cardinality and with ε.
	for _, c := range []struct {
		panel, metric, paper string
		increasing           bool
	}{
		{"dim", "mse", "Fig. 4: FP and DPME incur significant errors, especially when the dimensionality is large (error grows with D)", true},
		{"rate", "mse", "Fig. 5: the performance of FP and DPME improves with the dataset cardinality", false},
		{"eps", "mse", "Fig. 6: FP and DPME are much less accurate especially when ε is small", false},
	} {
		m := ""
		ok := 0
		for _, b := range base {
			r := a.series(c.panel, b, c.metric)
			if len(r) < 2 {
				continue
			}
			lo, hi := r[0], r[len(r)-1]
			m += fmt.Sprintf("%s: %s at %s=%g, %s at %g; ", b, fmtNum(lo.Mean), c.panel, lo.X, fmtNum(hi.Mean), hi.X)
			if (hi.Mean > lo.Mean) == c.increasing {
				ok++
			}
		}
		if m == "" {
			continue
		}
		h := "yes"
		switch ok {
		case 0:
			h = "no"
		case 1:
			h = "partly (one of the two baselines)"
		}
		cl = append(cl, Claim{Paper: c.paper + " (linear MSE)", Measured: m, Holds: h})
	}
	// Running time (logistic, defaults): NoPrivacy about 2× faster than FP
	// and DPME; their time grows faster with D and N than FM's.
	if np, ok := a.at("eps", "nonprivate", "time_ms", fmDefaultEps); ok {
		m, h := "", "yes"
		for _, b := range base {
			if br, ok := a.at("eps", b, "time_ms", fmDefaultEps); ok {
				m += fmt.Sprintf("%s %s ms (%.2f× nonprivate); ", b, fmtNum(br.Mean), br.Mean/np.Mean)
				if br.Mean < np.Mean {
					h = "no: the baselines are faster than nonprivate here (their logistic fit runs on a few thousand weighted cells, not N rows)"
				}
			}
		}
		cl = append(cl, Claim{
			Paper:    "Figs. 7-9: NoPrivacy is about two times faster than FP and DPME (logistic)",
			Measured: fmt.Sprintf("nonprivate %s ms; %s", fmtNum(np.Mean), m),
			Holds:    h,
		})
	}
	for _, panel := range []string{"dim", "rate"} {
		growth := func(series string) (float64, bool) {
			r := a.series(panel, series, "time_ms")
			if len(r) < 2 || r[0].Mean <= 0 {
				return 0, false
			}
			return r[len(r)-1].Mean / r[0].Mean, true
		}
		gf, ok1 := growth("fm")
		gn, ok2 := growth("nonprivate")
		if !ok1 || !ok2 {
			continue
		}
		m := fmt.Sprintf("time ratio last/first x: fm %.2f, nonprivate %.2f", gf, gn)
		faster := 0
		for _, b := range base {
			if g, ok := growth(b); ok {
				m += fmt.Sprintf(", %s %.2f", b, g)
				if g > math.Max(gf, gn) {
					faster++
				}
			}
		}
		h := "yes"
		switch faster {
		case 0:
			h = "no"
		case 1:
			h = "partly (one of the two baselines)"
		}
		what := map[string]string{"dim": "dimensionality", "rate": "cardinality"}[panel]
		cl = append(cl, Claim{
			Paper:    fmt.Sprintf("Figs. 7-8: FP's and DPME's running time increases faster with the %s than FM's and NoPrivacy's", what),
			Measured: m,
			Holds:    h,
		})
	}
	return cl
}
