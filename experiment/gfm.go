package experiment

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/report"
)

// Parameters of the Gaussian FM seed's Appendix A (Figures A1-A2).
const (
	NoiseN       = 10000
	NoiseDelta   = 1e-5
	NoiseEpsilon = 0.5
)

// noiseDims is the x-axis of Figures A1-A2.
var noiseDims = []int{2, 5, 10, 20, 50, 100, 200, 500}

// NoiseStd returns the per-coefficient noise standard deviation of order j
// (0, 1, 2) for a mechanism series of gfm-noise-vs-dim, with d features and
// n rows: "fm" (Laplace, √2·b), "relaxed-fm" and "gaussian-fm" (ours, as
// regress calibrates them), "gaussian-fm (as published)" (the seed's Δ0 =
// 1/N, Δ1 = 4/N (linear) or 1/N (logistic), Δ2 = 1/N or 1/(8N), each block
// calibrated on its own by the classic formula: no valid guarantee). ok is
// false when the series releases no coefficient of that order.
func NoiseStd(series string, kind regress.Kind, j, d int, n int64, eps, delta float64) (std float64, ok bool, err error) {
	sens, err := regress.SensitivitiesFor(kind, d, n)
	if err != nil {
		return 0, false, err
	}
	N := float64(n)
	switch series {
	case "fm":
		b, err := accounting.LaplaceScale(eps, sens.FM)
		return math.Sqrt2 * b, err == nil, err
	case "relaxed-fm":
		s, err := accounting.GaussianSigma(eps, delta, sens.Relaxed)
		return s, err == nil, err
	case "gaussian-fm":
		if j == 0 {
			return 0, false, nil // Λ0 is not released (PRIVACY-NOTES item 4)
		}
		js, err := regress.GaussianFMJointScales(kind, d, n, regress.TaylorQuadratic, eps, delta, regress.DefaultGaussianFMSplit)
		if err != nil {
			return 0, false, err
		}
		if j == 1 {
			return js.Tau1, true, nil
		}
		return js.Tau2, true, nil
	case "gaussian-fm (as published)":
		var delt float64
		switch {
		case j == 0 && kind == regress.Linear:
			delt = 1 / N
		case j == 0:
			return 0, false, nil // Λ0 = log 2 is data independent
		case j == 1 && kind == regress.Linear:
			delt = 4 / N
		case j == 1:
			delt = 1 / N
		case kind == regress.Linear:
			delt = 1 / N
		default:
			delt = 1 / (8 * N)
		}
		return delt * classicMultiplier(eps, delta), true, nil
	}
	return 0, false, fmt.Errorf("experiment: unknown noise series %q", series)
}

var noiseSeries = []string{"fm", "relaxed-fm", "gaussian-fm", "gaussian-fm (as published)"}

func gfmNoiseSpec() spec {
	return spec{
		name: "gfm-noise-vs-dim", title: "Noise standard deviation per order j vs dimension D",
		paper: "Gaussian FM seed, Appendix A, Figures A1-A2", runs: 1, quickRuns: 1,
		build: func(ctx context.Context, e *env) (*plan, error) {
			type cell struct {
				kind regress.Kind
				j    int
			}
			cells := []cell{{regress.Linear, 0}, {regress.Linear, 1}, {regress.Linear, 2}, {regress.Logistic, 1}, {regress.Logistic, 2}}
			fig := figure{cols: 3, note: fmt.Sprintf("analytic (no randomness): N = %d, ε = %g, δ = %g", NoiseN, NoiseEpsilon, NoiseDelta)}
			var obsAll []obs
			for _, c := range cells {
				id := fmt.Sprintf("%s j=%d", c.kind, c.j)
				fig.panels = append(fig.panels, panel{
					id: id, title: fmt.Sprintf("%s regression, j = %d", c.kind, c.j),
					xlabel: "dimension D", ylabel: "noise std τ", logX: true, logY: true,
					metric: "noise_std", series: noiseSeries,
				})
				for _, d := range noiseDims {
					for _, s := range noiseSeries {
						std, ok, err := NoiseStd(s, c.kind, c.j, d, NoiseN, NoiseEpsilon, NoiseDelta)
						if err != nil {
							return nil, fmt.Errorf("%s D=%d: %w", s, d, err)
						}
						if ok {
							obsAll = append(obsAll, obs{panel: id, xname: "D", series: s, metric: "noise_std", x: float64(d), v: std})
						}
					}
				}
			}
			fig.caption = fmt.Sprintf("N = %d, ε = %g, δ = %g. fm: Laplace noise std √2·b; relaxed-fm and gaussian-fm: our analytic-Gaussian calibration "+
				"(gaussian-fm: Frobenius Δ2 = √2/N or √2/(8N), Λ1 and Λ2 calibrated jointly with an equal split, Λ0 not released). "+
				"The dotted series is the seed's as-published calibration (Δ2 = 1/N, classic formula, each block on its own), which does not give (ε, δ)-DP.",
				NoiseN, NoiseEpsilon, NoiseDelta)
			jobs := []job{func(context.Context, noise.Source, *rand.Rand) ([]obs, error) { return obsAll, nil }}
			return &plan{jobs: jobs, figures: []figure{fig}, claims: noiseClaims, notes: []string{
				"Analytic: no randomness is drawn; the numbers are the calibrations regress uses.",
				"Our gaussian-fm versus the as-published calibration: for Λ2 ours is √2 larger from the Frobenius sensitivity (PRIVACY-NOTES item 1) and √2 larger from sharing one (ε, δ) between Λ1 and Λ2 (item 2), less the saving of the analytic Gaussian over the classic formula (item 3): about 1.45× at ε = 0.5; for Λ1 the split and the saving about cancel (1.03×). The as-published numbers look smaller only because they do not deliver (ε, δ)-DP.",
			}}, nil
		},
	}
}

func noiseClaims(a *Aggregate) []Claim {
	var cl []Claim
	for _, d := range []float64{20, 100} {
		g, ok1 := a.at("linear j=2", "gaussian-fm", "noise_std", d)
		f, ok2 := a.at("linear j=2", "fm", "noise_std", d)
		r, ok3 := a.at("linear j=2", "relaxed-fm", "noise_std", d)
		if !(ok1 && ok2 && ok3) {
			continue
		}
		fo, ro := math.Log10(f.Mean/g.Mean), math.Log10(r.Mean/g.Mean)
		holds := "yes"
		if ro < 1 {
			holds = "partly: ≥ 2 orders below fm, < 1 below relaxed-fm"
		}
		cl = append(cl, Claim{
			Paper:    fmt.Sprintf("gaussian-fm's noise is orders of magnitude below fm and relaxed-fm (linear, j = 2, D = %g)", d),
			Measured: fmt.Sprintf("τ: gaussian-fm %s, fm %s (%.1f orders), relaxed-fm %s (%.1f orders)", fmtNum(g.Mean), fmtNum(f.Mean), fo, fmtNum(r.Mean), ro),
			Holds:    holds,
		})
	}
	g, ok1 := a.at("logistic j=2", "gaussian-fm", "noise_std", 50)
	f, ok2 := a.at("logistic j=2", "fm", "noise_std", 50)
	if ok1 && ok2 {
		cl = append(cl, Claim{
			Paper:    "same for logistic regression (j = 2, D = 50)",
			Measured: fmt.Sprintf("τ: gaussian-fm %s, fm %s (%.1f orders)", fmtNum(g.Mean), fmtNum(f.Mean), math.Log10(f.Mean/g.Mean)),
			Holds:    "yes",
		})
	}
	return cl
}

// Utility experiments (Figures 1-2 and A3).

const (
	utilDelta   = 1e-5
	utilEpsilon = 0.5
	// NoisyGDSteps is the seed's T.
	NoisyGDSteps = 1000
	synthN       = 10000
)

// NoisyGDMatched is the series of noisy gradient descent calibrated so that
// its overall (ε, δ) over all T steps is the target (the seed's noisygd
// spends the target per step).
const NoisyGDMatched = "noisygd (overall ε matched)"

var utilMechs = []string{"nonprivate", "fm", "relaxed-fm", "gaussian-fm", "objpert", "noisygd", NoisyGDMatched}
var deltaMechs = []string{"nonprivate", "relaxed-fm", "gaussian-fm", "noisygd", NoisyGDMatched}

// mechOf maps a series to its regress mechanism; matched reports the
// overall-ε-matched noisygd.
func mechOf(series string) (mech string, matched bool) {
	if series == NoisyGDMatched {
		return "noisygd", true
	}
	return series, false
}

func gfmUtilitySpec(name string) spec {
	kind := regress.Linear
	title := "Linear regression: test MSE vs τ, N_train and δ"
	paper := "Gaussian FM seed, Figure 1 and Figure A3(a-c)"
	if name == "gfm-logistic" {
		kind = regress.Logistic
		title = "Logistic regression: test accuracy vs τ, N_train and δ"
		paper = "Gaussian FM seed, Figure 2 and Figure A3(g-i)"
	}
	return spec{name: name, title: title, paper: paper, runs: 10, quickRuns: 2,
		build: func(ctx context.Context, e *env) (*plan, error) { return buildUtility(ctx, e, name, kind) }}
}

func buildUtility(ctx context.Context, e *env, name string, kind regress.Kind) (*plan, error) {
	var tabs []*table
	names := []string{"cps1988", "diabetes"}
	synthD := 20
	if kind == regress.Logistic {
		names = []string{"smokeban", "breast_cancer"}
		synthD = 50
	}
	for _, n := range names {
		t, err := e.real(n, nil)
		if err != nil {
			return nil, err
		}
		tabs = append(tabs, t)
	}
	var seed [2]uint64
	if e.opt.Seeded {
		seed = [2]uint64{jobSeed(e.opt.Seed, name, -1, "synth"), 1}
	} else {
		seed = [2]uint64{rand.Uint64(), rand.Uint64()}
	}
	sn := synthN
	if e.opt.synthN > 0 {
		sn = e.opt.synthN
	}
	tabs = append(tabs, synthetic(kind, synthD, sn, rand.New(rand.NewPCG(seed[0], seed[1]))))

	taus := []float64{1, 2, 5, 10, 20, 50}
	fracs := []float64{0.05, 0.1, 0.2, 0.4, 0.7, 1}
	deltas := []float64{1e-5, 1e-4, 1e-3, 1e-2, 5e-2}
	steps := NoisyGDSteps
	if e.opt.Quick {
		taus = []float64{1, 3, 10, 30}
		fracs = []float64{0.1, 0.3, 1}
		deltas = []float64{1e-5, 1e-3, 5e-2}
	}
	metric, ylabel := "mse", "test MSE (target on [−1, 1])"
	if kind == regress.Logistic {
		metric, ylabel = "accuracy", "test accuracy"
	}
	var mechs, dmechs, missing []string
	for _, m := range utilMechs {
		if mm, _ := mechOf(m); available(mm) {
			mechs = append(mechs, m)
			if contains(deltaMechs, m) {
				dmechs = append(dmechs, m)
			}
		} else {
			missing = append(missing, m)
		}
	}
	fig := figure{cols: 3}
	var jobs []job
	var notes []string
	for _, t := range tabs {
		nTrain := t.N() - int(math.Round(0.1*float64(t.N())))
		pTau, pN, pD := t.Name+" vs τ", t.Name+" vs N", t.Name+" vs δ"
		fig.panels = append(fig.panels,
			panel{id: pTau, title: fmt.Sprintf("%s (D=%d): vs τ (δ=%g)", t.Name, t.K-1, utilDelta), xlabel: "noise multiplier τ = √(2 ln(1.25/δ))/ε", ylabel: ylabel,
				logX: true, logY: kind == regress.Linear, metric: metric, series: mechs, right: "overall_epsilon", rightSeries: "noisygd", rightLabel: "overall ε"},
			panel{id: pN, title: fmt.Sprintf("%s: vs N_train (ε=%g, δ=%g)", t.Name, utilEpsilon, utilDelta), xlabel: "N_train", ylabel: ylabel,
				logX: true, logY: kind == regress.Linear, metric: metric, series: mechs, right: "overall_epsilon", rightSeries: "noisygd", rightLabel: "overall ε"},
			panel{id: pD, title: fmt.Sprintf("%s: vs δ (ε=%g)", t.Name, utilEpsilon), xlabel: "δ", ylabel: ylabel,
				logX: true, logY: kind == regress.Linear, metric: metric, series: dmechs, right: "overall_epsilon", rightSeries: "noisygd", rightLabel: "overall ε"},
		)
		notes = append(notes, fmt.Sprintf("%s: %s, N = %d, 90:10 train/test split per run.", t.Name, t.Note, t.N()))
		for run := 0; run < e.runs; run++ {
			for _, tau := range taus {
				jobs = append(jobs, utilJob(t, kind, pTau, "tau", tau, mechs, epsForMultiplier(tau, utilDelta), utilDelta, tau, steps, 0))
			}
			for _, fr := range fracs {
				n := int(math.Round(fr * float64(nTrain)))
				if n < 10 {
					continue
				}
				tau := classicMultiplier(utilEpsilon, utilDelta)
				jobs = append(jobs, utilJob(t, kind, pN, "n_train", float64(n), mechs, utilEpsilon, utilDelta, tau, steps, n))
			}
			for _, d := range deltas {
				tau := classicMultiplier(utilEpsilon, d)
				jobs = append(jobs, utilJob(t, kind, pD, "delta", d, dmechs, utilEpsilon, d, tau, steps, 0))
			}
		}
	}
	notes = append(notes,
		"The seed's datasets (IWPC, crime, twitter, phishing, adult, kdd) are not available offline; we use the example data of ../shared/data and the Appendix B style synthetic data (generator in experiment/data.go).",
		"τ on the x-axis is the seed's noise multiplier √(2 ln(1.25/δ))/ε: at each τ every mechanism runs at ε = √(2 ln(1.25/δ))/τ (fm with δ = 0). Our gaussian-fm and relaxed-fm then calibrate with the analytic Gaussian and the corrected sensitivities, so their actual noise differs from the seed's.",
		fmt.Sprintf("noisygd's overall ε (right axis, magenta dotted; stated in the panel title where it is constant) is for T = %d steps with per-step noise multiplier τ at target δ, by the exact composition (Gaussian DP, the tightest valid accountant); the RDP value with the improved conversion and the seed's Eq. (7)-(8) value are in the CSV as metrics overall_epsilon_rdp and overall_epsilon_eq7.", steps),
		fmt.Sprintf("%s is noisy gradient descent with the same T = %d but its noise solved so that the whole run is (ε, δ)-DP at the panel's ε: the like-for-like comparison the seed does not show.", NoisyGDMatched, steps),
		"Features are clipped to declared public ranges and scaled by the public rule of package schema, never by the data's own maxima (PRIVACY-NOTES item 7).",
	)
	if len(missing) > 0 {
		notes = append(notes, fmt.Sprintf("Not in this build (not yet in package regress): %s; their curves are absent. noisygd's overall ε is computed by the accountant regardless.", strings.Join(missing, ", ")))
	}
	return &plan{jobs: jobs, figures: []figure{fig}, notes: notes, claims: func(a *Aggregate) []Claim { return utilClaims(a, tabs, kind, metric) }}, nil
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}

// utilJob: one split, one x, every mechanism.
func utilJob(t *table, kind regress.Kind, panelID, xname string, x float64, mechs []string, eps, delta, tau float64, steps, nTrain int) job {
	metric := "mse"
	if kind == regress.Logistic {
		metric = "accuracy"
	}
	return func(ctx context.Context, src noise.Source, rng *rand.Rand) ([]obs, error) {
		train, test := t.split(rng, 0.1, nTrain)
		st, err := moments(train)
		if err != nil {
			return nil, err
		}
		var out []obs
		for _, m := range mechs {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			mech, matched := mechOf(m)
			f := fitSpec{mech: mech, kind: kind, eps: eps, delta: delta, tau: tau, steps: steps}
			if matched {
				f.tau = 0 // solve for the multiplier that meets (ε, δ) over all T steps
			}
			coef, _, err := fitTable(ctx, f, train, st, src)
			if err != nil {
				return nil, fmt.Errorf("%s %s=%g: %w", t.Name, xname, x, err)
			}
			out = append(out, obs{panel: panelID, xname: xname, x: x, series: m, metric: metric, v: evaluate(kind, coef, test)})
		}
		g, err := accounting.GaussianSteps(tau, 1, steps, delta)
		if err != nil {
			return nil, fmt.Errorf("noisygd accounting τ=%g: %w", tau, err)
		}
		out = append(out,
			obs{panel: panelID, xname: xname, x: x, series: "noisygd", metric: "overall_epsilon", v: g.EpsilonExact},
			obs{panel: panelID, xname: xname, x: x, series: "noisygd", metric: "overall_epsilon_rdp", v: g.EpsilonRDP},
			obs{panel: panelID, xname: xname, x: x, series: "noisygd", metric: "overall_epsilon_eq7", v: g.EpsilonRDPClassic},
			obs{panel: panelID, xname: xname, x: x, series: "all", metric: "epsilon_per_mechanism", v: eps})
		return out, nil
	}
}

func utilClaims(a *Aggregate, tabs []*table, kind regress.Kind, metric string) []Claim {
	var cl []Claim
	epsDone := false
	better := func(x, y float64) bool { // x better than y
		if kind == regress.Logistic {
			return x > y
		}
		return x < y
	}
	for _, t := range tabs {
		pN := t.Name + " vs N"
		np := a.series(pN, "nonprivate", metric)
		gf := a.series(pN, "gaussian-fm", metric)
		if len(np) == 0 || len(gf) == 0 || len(np) != len(gf) {
			continue
		}
		first, last := 0, len(gf)-1
		gapFirst := math.Abs(gf[first].Mean - np[first].Mean)
		gapLast := math.Abs(gf[last].Mean - np[last].Mean)
		holds := "yes"
		if !(gapLast < gapFirst) {
			holds = "no"
		}
		cl = append(cl, Claim{
			Paper: fmt.Sprintf("%s: gaussian-fm's error approaches nonprivate as N_train grows (ε = %g)", t.Name, utilEpsilon),
			Measured: fmt.Sprintf("%s at N=%g: gaussian-fm %s vs nonprivate %s; at N=%g: %s vs %s", metric, gf[first].X, meanSD(gf[first]), meanSD(np[first]),
				gf[last].X, meanSD(gf[last]), meanSD(np[last])),
			Holds: holds,
		})
		var others []string
		worse, ties := 0, 0
		g := gf[last]
		for _, m := range []string{"fm", "relaxed-fm", "objpert", NoisyGDMatched} {
			o, ok := a.at(pN, m, metric, g.X)
			if !ok {
				continue
			}
			// Within two standard errors of the difference: a tie.
			se := math.Sqrt(g.SD*g.SD/float64(g.N) + o.SD*o.SD/float64(o.N))
			switch {
			case math.Abs(g.Mean-o.Mean) <= 2*se:
				others = append(others, m+" "+fmtNum(o.Mean)+" (tie)")
				ties++
			case better(g.Mean, o.Mean):
				others = append(others, m+" "+fmtNum(o.Mean))
			default:
				others = append(others, m+" "+fmtNum(o.Mean)+" (better)")
				worse++
			}
		}
		all := "yes"
		switch {
		case worse > 0:
			all = "no"
		case ties > 0:
			all = "partly (ties)"
		}
		if o, ok := a.at(pN, "noisygd", metric, gf[last].X); ok {
			others = append(others, "noisygd at per-step ε (overall ε ≈ 20) "+fmtNum(o.Mean))
		}
		if len(others) > 0 {
			cl = append(cl, Claim{
				Paper:    fmt.Sprintf("%s: gaussian-fm beats fm, relaxed-fm, objpert and noisygd at full N_train (ε = %g)", t.Name, utilEpsilon),
				Measured: fmt.Sprintf("%s: gaussian-fm %s; %s", metric, fmtNum(gf[last].Mean), strings.Join(others, ", ")),
				Holds:    all + " (against the mechanisms at the same overall ε)",
			})
		}
		if r, ok := a.at(pN, "noisygd", "overall_epsilon", gf[last].X); ok && !epsDone {
			epsDone = true
			r7, _ := a.at(pN, "noisygd", "overall_epsilon_eq7", gf[last].X)
			h := "yes"
			switch {
			case r.Mean <= 20 && r7.Mean > 20:
				h = "yes by the seed's Eq. (7)-(8); the exact composition (Gaussian DP) gives under 20"
			case r.Mean <= 20:
				h = "no"
			}
			cl = append(cl, Claim{
				Paper:    fmt.Sprintf("noisygd's overall ε exceeds 20 at T = %d (per-step ε = %g, δ = %g)", NoisyGDSteps, utilEpsilon, utilDelta),
				Measured: fmt.Sprintf("overall ε = %s (exact, Gaussian DP); %s (seed's Eq. 7-8)", report.Up(r.Mean), report.Up(r7.Mean)),
				Holds:    h,
			})
		}
	}
	return cl
}
