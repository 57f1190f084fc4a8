package experiment

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/dplearn/dplearn/inference"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
)

// Issue 26's logistic goal for the recommended logistic default: test
// log-loss ≤ 1.05× DP-GD's and accuracy ≥ DP-GD's at every ε ∈ {0.1, 0.5,
// 1, 2} on the logistic tables of utility-refs, with the same splits,
// bounds and calibration as that experiment (refsJob's setting). Since
// issue 26's fifth pass the default for prediction is noisygd with each
// row's gradient clipped to norm ½ (regress.DefaultLogisticClip) and the
// step rule regress.NoisyGDLogisticClipIterationsFor; the claims are its.
// Beside it: noisygd with DP-GD's T rule, with a clip of ¼ and unclipped
// on its ball (the previous default), the sweep behind the default; objpert
// (the mechanism for inference, its estimand the MLE; Jacobian share
// regress.ObjPertJacobianShareAt) with fixed Jacobian shares J (the public
// Λ = β/(N(e^{Jε} − 1))), objpert with the CLI's Hessian share predicting
// with ω and with the de-ridged estimate (docs/mechanisms.md), and
// gaussian-fm.

// refsLogitShares are the Jacobian shares of the objpert variants: the
// series "objpert J=s" uses Λ = DefaultObjPertLambda's formula with the
// fixed share s.
var refsLogitShares = []float64{0.1, 0.05, 0.2}

func refsLogitSeries() []string {
	s := []string{"nonprivate", "objpert"}
	for _, j := range refsLogitShares {
		s = append(s, refsLogitShareName(j))
	}
	s = append(s, refsLogitHessName, refsLogitDeridgeName, "gaussian-fm", rDPGD)
	for _, c := range refsLogitNoisyGD {
		s = append(s, c.series)
	}
	return s
}

// refsLogitNoisyGD are noisygd's logistic configurations (issue 26, fifth
// pass): the default (each row's gradient clipped to norm
// regress.DefaultLogisticClip, no ball, T = min(C, max(25, ⌊Nε/4⌋)), C = min(4000, max(1000, ⌊Nε/20⌋))),
// the same with DP-GD's T rule ⌊Nε/8⌋ and with a clip of ¼, and the
// previous default (--huber -1: unclipped, on the ball 2√d, T = 100).
var refsLogitNoisyGD = []struct {
	series string
	huber  float64
	iters  func(n int, eps float64) int
}{
	{"noisygd", 0, nil},
	{"noisygd T=⌊Nε/8⌋", 0, refDPGDIters},
	{"noisygd c=0.25", 0.25, nil},
	{"noisygd unclipped (before)", -1, nil},
}

// The de-ridge candidate (issue 26): the default objpert with the CLI's
// interval share fit.DefaultCIShare given to the noisy Hessian
// (ObjPertOptions.HessianShare, what `dplearn fit` releases when the
// intervals are on), predicting with the released ridge fit ω
// (refsLogitHessName) or with the one-step de-ridged β = ω + ΛĤ⁻¹ω
// (regress.ObjPertDeridge with inference.ObjPertFloor, the printed
// estimate; refsLogitDeridgeName): post-processing of the same release.
const (
	refsLogitHessShare   = 0.05
	refsLogitHessName    = "objpert H=0.05"
	refsLogitDeridgeName = "objpert H=0.05 de-ridged"
)

// refsLogitDeridgeFit returns the ridge fit ω and the de-ridged β of one
// objpert release with the Hessian share refsLogitHessShare.
func refsLogitDeridgeFit(ctx context.Context, train *table, cfg regress.Config) (omega, beta []float64, err error) {
	st, err := moments(train)
	if err != nil {
		return nil, nil, err
	}
	est, err := regress.New("objpert")
	if err != nil {
		return nil, nil, err
	}
	cfg.ObjPert.HessianShare = refsLogitHessShare
	res, err := est.Fit(ctx, regress.Data{Stats: st, Rows: train.Rows}, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("objpert with a Hessian share on %s (ε=%g): %w", train.Name, cfg.Epsilon, err)
	}
	if res.ObjPert == nil {
		return nil, nil, fmt.Errorf("objpert with a Hessian share on %s (ε=%g): no Hessian released", train.Name, cfg.Epsilon)
	}
	beta, err = inference.ObjPertEstimate(res.ObjPert)
	if err != nil {
		return nil, nil, fmt.Errorf("objpert de-ridge on %s (ε=%g): %w", train.Name, cfg.Epsilon, err)
	}
	return res.Coef, beta, nil
}

func refsLogitSpec() spec {
	return spec{
		name: "utility-refs-logistic", title: "The logistic default (noisygd's clipped gradient) and objpert against DP-GD on the logistic tables of utility-refs",
		paper: "issues 25 and 26 (no paper figure)", runs: 20, quickRuns: 2,
		build: buildRefsLogit,
	}
}

// refsLogitShareName names the series of the fixed share s.
func refsLogitShareName(s float64) string { return fmt.Sprintf("objpert J=%g", s) }

// objPertLambdaShare is DefaultObjPertLambda with the fixed Jacobian share
// s (J* = min(sε, 1)) instead of regress.ObjPertJacobianShareAt.
func objPertLambdaShare(s, eps float64, n int) float64 {
	return 0.25 * (1 + 1e-9) / (float64(n) * math.Expm1(math.Min(s*eps, 1)))
}

func buildRefsLogit(ctx context.Context, e *env) (*plan, error) {
	tasks, err := refsTasks(e, refsLogisticTables)
	if err != nil {
		return nil, err
	}
	var jobs []job
	for run := 0; run < e.runs; run++ {
		for _, tk := range tasks {
			jobs = append(jobs, refsLogitJob(tk))
		}
	}
	series := refsLogitSeries()
	var pg []panel
	for _, tk := range tasks {
		pg = append(pg, panel{id: tk.name, title: tk.name + ": test log-loss", xlabel: "ε", ylabel: "test log-loss", logX: true, logY: true, metric: "logloss", series: series})
	}
	p := &plan{jobs: jobs,
		figures: []figure{{cols: 2, panels: pg, caption: "Logistic tasks: test log-loss, mean ± sd over 80/20 splits, δ = 1e-5; noisygd (the logistic default for prediction: gradients clipped to norm ½, T = min(C, max(25, ⌊Nε/4⌋)), C = min(4000, max(1000, ⌊Nε/20⌋))), with T = ⌊Nε/8⌋, with a clip of ¼ and unclipped on the ball 2√d (the previous default); objpert (the mechanism for inference, Jacobian share 0.1 at ε ≤ 0.5 growing to 0.2 at ε ≥ 1) and with fixed shares 0.1 (the previous default), 0.05 and 0.2, objpert with a 5% Hessian share predicting with the ridge fit ω and with the de-ridged estimate ω + ΛĤ⁻¹ω, gaussian-fm and DP-GD (refs.go) on the same rows."}},
		notes:   []string{"Same splits, bounds and calibration as utility-refs (refsJob). objpert J=s: Λ = β/(N(e^{min(sε, 1)} − 1)) with the fixed share s instead of the default's regress.ObjPertJacobianShareAt."},
	}
	p.claims = func(a *Aggregate) []Claim {
		p.notes = append(p.notes, "Tables per task:\n"+refsLogitMarkdown(a))
		return refsLogitClaims(a)
	}
	return p, nil
}

func refsLogitJob(tk refsTask) job {
	return func(ctx context.Context, src noise.Source, rng *rand.Rand) ([]obs, error) {
		train, test := tk.t.split(rng, 0.2, 0)
		var out []obs
		score := func(eps float64, series string, w []float64) {
			out = append(out,
				obs{panel: tk.name, xname: "epsilon", x: eps, series: series, metric: "logloss", v: logLoss(w, test)},
				obs{panel: tk.name, xname: "epsilon", x: eps, series: series, metric: "accuracy", v: evaluate(regress.Logistic, w, test)})
		}
		np, err := fitWith(ctx, "nonprivate", train, regress.Config{Kind: regress.Logistic})
		if err != nil {
			return nil, err
		}
		for _, eps := range refsEps {
			score(eps, "nonprivate", np)
			cfg := regress.Config{Kind: regress.Logistic, Epsilon: eps, Delta: utilityDelta, Lambda: -1, Source: src}
			for _, m := range []string{"objpert", "gaussian-fm"} {
				w, err := fitWith(ctx, m, train, cfg)
				if err != nil {
					return nil, err
				}
				score(eps, m, w)
			}
			for _, s := range refsLogitShares {
				c := cfg
				c.ObjPert.Lambda = objPertLambdaShare(s, eps, train.N())
				w, err := fitWith(ctx, "objpert", train, c)
				if err != nil {
					return nil, err
				}
				score(eps, refsLogitShareName(s), w)
			}
			w, err := refsRun(rDPGD, train, refParams{Eps: eps, Delta: utilityDelta, Src: src, Bounds: tk.b}, rng)
			if err != nil {
				return nil, fmt.Errorf("%s on %s (ε=%g): %w", rDPGD, tk.name, eps, err)
			}
			score(eps, rDPGD, w)
		}
		// After every other series, so that a seeded run draws the same
		// noise for them as before these series existed.
		for _, eps := range refsEps {
			cfg := regress.Config{Kind: regress.Logistic, Epsilon: eps, Delta: utilityDelta, Lambda: -1, Source: src}
			om, be, err := refsLogitDeridgeFit(ctx, train, cfg)
			if err != nil {
				return nil, err
			}
			score(eps, refsLogitHessName, om)
			score(eps, refsLogitDeridgeName, be)
		}
		for _, eps := range refsEps {
			for _, c := range refsLogitNoisyGD {
				cfg := regress.Config{Kind: regress.Logistic, Epsilon: eps, Delta: utilityDelta, Lambda: -1, Huber: c.huber, Source: src}
				if c.iters != nil {
					cfg.NoisyGD.Iterations = c.iters(train.N(), eps)
				}
				w, err := fitWith(ctx, "noisygd", train, cfg)
				if err != nil {
					return nil, fmt.Errorf("%s on %s (ε=%g): %w", c.series, tk.name, eps, err)
				}
				score(eps, c.series, w)
			}
		}
		return out, nil
	}
}

// refsLogitClaims states the goal per task and ε for objpert and each
// variant: log-loss ratio to DP-GD (of means) and the accuracy difference.
func refsLogitClaims(a *Aggregate) []Claim {
	var out []Claim
	for _, task := range refsLogisticTables {
		for _, eps := range refsEps {
			dl, ok1 := refsCell(a, task, rDPGD, "logloss", eps)
			da, ok2 := refsCell(a, task, rDPGD, "accuracy", eps)
			if !ok1 || !ok2 {
				continue
			}
			var parts []string
			holds := "yes"
			for _, s := range refsLogitSeries()[1:] {
				if s == rDPGD {
					continue
				}
				l, _ := refsCell(a, task, s, "logloss", eps)
				ac, _ := refsCell(a, task, s, "accuracy", eps)
				parts = append(parts, fmt.Sprintf("%s log-loss %.4g ± %.2g (%.3f× DP-GD's), accuracy %.4g ± %.2g (%+.4f)", s, l.mean, l.se, l.mean/dl.mean, ac.mean, ac.se, ac.mean-da.mean))
				if s == "noisygd" {
					var why []string
					if r := l.mean / dl.mean; r > 1.05 {
						why = append(why, fmt.Sprintf("log-loss %.3g×", r))
					}
					if ac.mean < da.mean {
						why = append(why, fmt.Sprintf("accuracy %.4g < %.4g (%.1f se)", ac.mean, da.mean, (da.mean-ac.mean)/math.Max(math.Hypot(ac.se, da.se), 1e-12)))
					}
					if len(why) > 0 {
						holds = "no (" + strings.Join(why, "; ") + ")"
					}
				}
			}
			out = append(out, Claim{
				Paper:    fmt.Sprintf("%s, ε = %g: noisygd (logistic default for prediction) log-loss ≤ 1.05× DP-GD's and accuracy ≥ DP-GD's", task, eps),
				Measured: fmt.Sprintf("DP-GD log-loss %.4g ± %.2g, accuracy %.4g ± %.2g; %s", dl.mean, dl.se, da.mean, da.se, strings.Join(parts, "; ")),
				Holds:    holds,
			})
		}
	}
	return out
}

func refsLogitMarkdown(a *Aggregate) string {
	var b strings.Builder
	head := "| method | ε = 0.1 | ε = 0.5 | ε = 1 | ε = 2 |\n| --- | --- | --- | --- | --- |\n"
	for _, task := range refsLogisticTables {
		for _, metric := range []string{"logloss", "accuracy"} {
			fmt.Fprintf(&b, "\n%s, test %s, mean ± se (max/median):\n\n%s", task, metric, head)
			for _, s := range refsLogitSeries() {
				cells := []string{s}
				for _, eps := range refsEps {
					st, ok := refsCell(a, task, s, metric, eps)
					if !ok {
						cells = append(cells, "–")
						continue
					}
					cells = append(cells, fmt.Sprintf("%.4g ± %.2g (%.1f)", st.mean, st.se, st.maxMed))
				}
				b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
			}
		}
	}
	return b.String()
}

// The radius sweep of issue 26's third goal (objpert and noisygd on linear
// models within 1.5× the best reference): on the linear tables of
// utility-refs, objpert and noisygd with their defaults (the radius rule
// R = (√d/2)·max(1, (Nε/(1000d))^(1/4)) of regress.DefaultObjPertRadius,
// and for noisygd the iteration rule regress.NoisyGDIterationsFor), with
// the previous defaults (R = √d/2, T = 100), with each rule alone, with
// other constants of the radius rule, objpert with a Jacobian share of 0.2,
// and at an oracle radius 1.1·‖ω_np‖ (the non-private fit's norm: not a
// DP rule, the best any radius rule could do); beside SSP eig-clip and
// AdaSSP. The metric is the excess test RMSE over the non-private fit, as
// in utility-refs.

// refsRadiusCand is one objpert or noisygd configuration of the sweep:
// radius R = rf·√d (rf = 0: the default rule; rf = −1: the oracle; rf =
// −c < −1: the rule (√d/2)·max(1, (Nε/(c·d))^js)), Jacobian share js of ε
// for objpert's Λ (0: the default; only when rf ≥ −1), and noisygd's
// iteration count from iters (nil: the default rule).
type refsRadiusCand struct {
	series, mech string
	rf, js       float64
	iters        func(n, d int, eps float64) int
}

// itersHalfNEpsD is regress.NoisyGDIterationsFor's linear rule T =
// min(1000, max(100, ⌊Nε/(2d)⌋)).
func itersHalfNEpsD(n, d int, eps float64) int {
	return int(math.Min(1000, math.Max(100, math.Floor(float64(n)*eps/(2*float64(d))))))
}

func iters100(n, d int, eps float64) int { return 100 }

var refsRadiusCands = []refsRadiusCand{
	{"objpert (default)", "objpert", 0, 0, nil},
	{"objpert R=√d/2", "objpert", 0.5, 0, nil},
	{"objpert R=oracle", "objpert", -1, 0, nil},
	{"objpert R=rule c=300", "objpert", -300, 0.25, nil},
	{"objpert R=rule p=1/2", "objpert", -1000, 0.5, nil},
	{"objpert J=0.2", "objpert", 0, 0.2, nil},
	{"noisygd (default)", "noisygd", 0, 0, nil},
	{"noisygd T=100 R=√d/2", "noisygd", 0.5, 0, iters100},
	{"noisygd T=rule R=√d/2", "noisygd", 0.5, 0, itersHalfNEpsD},
	{"noisygd T=100 R=rule", "noisygd", 0, 0, iters100},
}

var refsRadiusSeries = seriesWithRefs(refsRadiusCands, func(c refsRadiusCand) string { return c.series })

func refsRadiusSpec() spec {
	return spec{
		name: "radius-sweep", title: "objpert and noisygd on linear tables: the radius and iteration rules against the previous defaults and an oracle radius, beside SSP eig-clip and AdaSSP",
		paper: "issue 26 (no paper figure)", runs: 10, quickRuns: 2,
		build: buildRefsRadius,
	}
}

func buildRefsRadius(ctx context.Context, e *env) (*plan, error) {
	_, jobs, fig, err := linearSweep(e, refsRadiusJob, refsRadiusSeries, "excess test RMSE",
		"Linear tasks: excess test RMSE over the non-private fit, mean ± sd over 80/20 splits, δ = 1e-5; objpert and noisygd with the squared loss (--huber -1; their default is now the Huber loss, huber-sweep) and its defaults (radius rule R = (√d/2)·max(1, (Nε/(1000d))^(1/4)); noisygd T = min(1000, max(100, ⌊Nε/(2d)⌋))), the previous defaults (R = √d/2, T = 100), each rule alone, other rule constants and an oracle radius (the non-private norm × 1.1, not private).")
	if err != nil {
		return nil, err
	}
	p := &plan{jobs: jobs,
		figures: []figure{fig},
		notes:   []string{"Same splits, bounds and calibration as utility-refs. R=rule c=300: (√d/2)·max(1, (Nε/(300d))^(1/4)); R=rule p=1/2: (√d/2)·max(1, (Nε/(1000d))^(1/2)). R = oracle: 1.1 × the non-private fit's norm on the training rows (the best a radius rule could reach; not DP)."},
	}
	p.claims = func(a *Aggregate) []Claim {
		var out []Claim
		for _, task := range refsLinearTables {
			for _, eps := range refsEps {
				best := bestOfRefs(a, task, eps, []string{rSSPClip, rAdaSSP})
				var parts []string
				holds := "yes"
				for _, s := range refsRadiusSeries[:len(refsRadiusCands)] {
					st, ok := refsCell(a, task, s, "excess_rmse", eps)
					if !ok {
						continue
					}
					parts = append(parts, fmt.Sprintf("%s %.2f×", s, st.mean/best))
				}
				for _, s := range []string{"objpert (default)", "noisygd (default)"} {
					if st, ok := refsCell(a, task, s, "excess_rmse", eps); ok && st.mean > 1.5*best {
						holds = "no"
					}
				}
				out = append(out, Claim{
					Paper:    fmt.Sprintf("%s, ε = %g: objpert and noisygd (squared loss, its radius and iteration rules) within 1.5× the best reference's excess RMSE", task, eps),
					Measured: fmt.Sprintf("best reference %.4g; ratios to it: %s", best, strings.Join(parts, ", ")),
					Holds:    holds,
				})
			}
		}
		return out
	}
	return p, nil
}

func refsRadiusJob(tk refsTask) job {
	return func(ctx context.Context, src noise.Source, rng *rand.Rand) ([]obs, error) {
		train, rec, err := newExcessRecorder(ctx, tk, rng)
		if err != nil {
			return nil, err
		}
		d := train.K - 1
		oracle := 1.1 * math.Sqrt(dotSelf(rec.np))
		add := rec.add
		for _, eps := range refsEps {
			for _, c := range refsRadiusCands {
				// The squared loss, whose ball this sweeps (the Huber
				// default's η and ball: huber-sweep).
				cfg := regress.Config{Kind: regress.Linear, Epsilon: eps, Delta: utilityDelta, Lambda: -1, Huber: -1, Source: src}
				r := c.rf * math.Sqrt(float64(d))
				switch {
				case c.rf == -1:
					r = oracle
				case c.rf < -1:
					r = math.Sqrt(float64(d)) / 2 * math.Max(1, math.Pow(float64(train.N())*eps/(-c.rf*float64(d)), c.js))
				}
				cfg.ObjPert.Radius, cfg.NoisyGD.Radius = r, r
				if c.js > 0 && c.rf >= -1 {
					cfg.ObjPert.Lambda = 2 * (1 + 1e-9) / (float64(train.N()) * math.Expm1(math.Min(c.js*eps, 1)))
				}
				if c.iters != nil {
					cfg.NoisyGD.Iterations = c.iters(train.N(), d, eps)
				}
				w, err := fitWith(ctx, c.mech, train, cfg)
				if err != nil {
					return nil, err
				}
				add(eps, c.series, w)
			}
			for _, r := range []string{rSSPClip, rAdaSSP} {
				w, err := refsRun(r, train, refParams{Eps: eps, Delta: utilityDelta, Src: src, Bounds: tk.b}, rng)
				if err != nil {
					return nil, fmt.Errorf("%s on %s (ε=%g): %w", r, tk.name, eps, err)
				}
				add(eps, r, w)
			}
		}
		return rec.obs, nil
	}
}

func dotSelf(v []float64) float64 {
	s := 0.0
	for _, x := range v {
		s += x * x
	}
	return s
}
