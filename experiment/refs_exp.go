package experiment

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
)

// Issue 26's comparison: every reference of refs.go beside each of
// dplearn's private mechanisms, on the embedded tables and on synthetic
// collinear designs, at ε ∈ {0.1, 0.5, 1, 2}, δ = 1e-5. Each run draws a
// new 80/20 split; every method is fitted on the same training rows with
// the same public bounds and evaluated on the same test rows.

var refsEps = []float64{0.1, 0.5, 1, 2}

// Series of the references.
const (
	rAdaSSP  = "AdaSSP"
	rSSPClip = "SSP eig-clip"
	rDPGD    = "DP-GD"
	rDPL     = "diffprivlib (fixed)"
	rTukey   = "TukeyEM"
)

// refsLinearMechs and refsLogisticMechs are regress's private mechanisms
// (auto fitted on a tape of the noise and its pick on the replay: tape.go) (regress.Mechanisms() minus nonprivate, truncated, irls-wishart, which is
// not DP, and the histogram baselines dpme and filter-priority, which need
// the schema's grid and are compared in fm-figures); irls is fitted with
// Kind Robust (least absolute deviations) and scored on RMSE like the rest.
var (
	refsLinearMechs   = []string{"gaussian-fm", "auto", "fm", "relaxed-fm", "objpert", "noisygd", "irls"}
	refsLogisticMechs = []string{"gaussian-fm", "auto", "fm", "relaxed-fm", "objpert", "noisygd"}
	refsLinearRefs    = []string{rSSPClip, rAdaSSP, rDPL, rTukey}
	refsLogisticRefs  = []string{rDPGD, rDPL}
)

// refsTables are the tasks: embedded tables and the synthetic collinear
// designs.
var (
	refsLinearTables   = []string{"cps1988", "diabetes", "collinear"}
	refsLogisticTables = []string{"smokeban", "breast_cancer", "cps1988-highwage", "collinear-logistic"}
)

// Synthetic collinear design: d = 18 columns (intercept included), N =
// 4,125 rows (3,300 for training after the 80/20 split), pairwise feature
// correlation about 0.95.
const (
	collinearD    = 18
	collinearN    = 4125
	collinearRho  = 0.95
	collinearSeed = 26
)

// synthShape is one synthetic design of the reference experiments: n rows,
// d columns (intercept included), pairwise feature correlation rho before
// clipping and its complement rhoC = 1 − rho (given, not computed, so that
// a constant's 1 − 0.95 stays the float64 nearest 0.05), the model kind,
// and the second word of its PCG seed (the first is collinearSeed).
type synthShape struct {
	kind      regress.Kind
	n, d      int
	rho, rhoC float64
	seed      uint64
}

// synthShapes are the synthetic designs by task name: the collinear
// designs of utility-refs (their seed words keep the tables bit for bit
// what they were before the shapes were added) and the shapes of
// utility-shapes (shapes.go).
// It is written once, at package initialisation, and only read after.
var synthShapes = func() map[string]synthShape {
	m := shapesDesigns()
	m["collinear"] = synthShape{regress.Linear, collinearN, collinearD, collinearRho, 1 - collinearRho, uint64(len(regress.Linear))}
	m["collinear-logistic"] = synthShape{regress.Logistic, collinearN, collinearD, collinearRho, 1 - collinearRho, uint64(len(regress.Logistic))}
	return m
}()

// synthQuickRows caps a synthetic design's rows under --quick (the
// 229,000-row shapes of utility-shapes would otherwise take most of
// "experiment all --quick").
const synthQuickRows = 20000

// synthRows is the number of rows drawn for the design sh: tests' synthN
// when set, at most synthQuickRows under --quick, sh.n otherwise.
func (e *env) synthRows(sh synthShape) int {
	switch {
	case e.opt.synthN > 0:
		return e.opt.synthN
	case e.opt.Quick && sh.n > synthQuickRows:
		return synthQuickRows
	}
	return sh.n
}

// collinearTable is the collinear design of utility-refs with n rows.
func collinearTable(kind regress.Kind, n int) (*table, refBounds) {
	name := "collinear"
	if kind == regress.Logistic {
		name = "collinear-logistic"
	}
	sh := synthShapes[name]
	sh.n = n
	return synthTable(name, sh)
}

// synthTable generates a synthetic design in the encoded space: x =
// s·(1, u_1, …, u_{d−1}), s = 1/√d rounded down, u_j = clip(v_j/3, −1, 1),
// v_j = √ρ·f + √(1−ρ)·e_j with f, e_j ~ N(0, 1) (correlation ρ before
// clipping, which at 3 sd barely changes it); θ ~ N(0, I) rescaled so
// that xᵀθ has standard deviation 0.4; linear y = clip(xᵀθ + N(0, 0.2²),
// −1, 1), logistic y ~ Bernoulli(σ(5·xᵀθ)). Fixed seed: the same table in
// every run, like the embedded ones.
func synthTable(name string, sh synthShape) (*table, refBounds) {
	kind, n, d := sh.kind, sh.n, sh.d
	rng := rand.New(rand.NewPCG(collinearSeed, sh.seed))
	s := 1 / math.Sqrt(float64(d))
	for s*s*float64(d) > 1 {
		s = math.Nextafter(s, 0)
	}
	X := make([]float64, n*d)
	for i := 0; i < n; i++ {
		f := rng.NormFloat64()
		X[i*d] = s
		for j := 1; j < d; j++ {
			v := math.Sqrt(sh.rho)*f + math.Sqrt(sh.rhoC)*rng.NormFloat64()
			X[i*d+j] = s * math.Max(-1, math.Min(1, v/3))
		}
	}
	theta := make([]float64, d)
	for j := range theta {
		theta[j] = rng.NormFloat64()
	}
	z := make([]float64, n)
	var m1, m2 float64
	for i := range z {
		for j := 0; j < d; j++ {
			z[i] += X[i*d+j] * theta[j]
		}
		m1 += z[i]
		m2 += z[i] * z[i]
	}
	m1 /= float64(n)
	sd := math.Sqrt(m2/float64(n) - m1*m1)
	t := &table{Name: name, Kind: kind, K: d + 1, Rows: make([]float64, 0, n*(d+1))}
	for i := 0; i < n; i++ {
		zi := z[i] * 0.4 / sd
		var y float64
		if kind == regress.Linear {
			y = math.Max(-1, math.Min(1, zi+0.2*rng.NormFloat64()))
		} else if rng.Float64() < 1/(1+math.Exp(-5*zi)) {
			y = 1
		}
		t.Rows = append(t.Rows, X[i*d:(i+1)*d]...)
		t.Rows = append(t.Rows, y)
	}
	what := "synthetic design"
	if sh.rho >= 0.9 {
		what = "synthetic collinear design"
	}
	t.Note = fmt.Sprintf("%s (N=%d, d=%d, feature correlation ≈ %g)", what, n, d, sh.rho)
	return t, numericBounds(d, s)
}

func refsSpec() spec {
	return spec{
		name: "utility-refs", title: "Reference methods beside dplearn's mechanisms: AdaSSP, eigenvalue-clipped SSP, DP-GD, diffprivlib, TukeyEM",
		paper: "issue 26 (no paper figure)", runs: 20, quickRuns: 2,
		build: buildRefs,
	}
}

// refsTask is one table with its public bounds.
type refsTask struct {
	name string
	t    *table
	b    refBounds
	// st is the public Gram structure of the encoding (what `dplearn
	// fit` projects the FM family's released Λ2 onto by default): the
	// schema's (regress.GramStructureFor) for the embedded tables, the
	// known intercept entry G[0,0] = s² for the synthetic designs.
	st *regress.GramStructure
}

// refsTasks loads the named tables with their public bounds: the embedded
// tables by name (a fixed prefix under tests' synthN), the synthetic
// designs of synthShapes built by synthTable (synthN rows under tests).
func refsTasks(e *env, names []string) ([]refsTask, error) {
	var tasks []refsTask
	for _, n := range names {
		if sh, ok := synthShapes[n]; ok {
			sh.n = e.synthRows(sh)
			t, b := synthTable(n, sh)
			st := &regress.GramStructure{D: t.K - 1, Known: []regress.GramValue{{GramEntry: regress.GramEntry{I: 0, J: 0}, Value: b.s * b.s}}}
			tasks = append(tasks, refsTask{n, t, b, st})
			continue
		}
		t, err := e.real(n, nil)
		if err != nil {
			return nil, err
		}
		if e.opt.synthN > 0 && t.N() > 4*e.opt.synthN {
			// Tests: a fixed prefix keeps the run fast.
			t = &table{Name: t.Name, Kind: t.Kind, K: t.K, Rows: t.Rows[:4*e.opt.synthN*t.K], Note: t.Note}
		}
		s, err := loadSchema(realDatasets[n].schema)
		if err != nil {
			return nil, err
		}
		b, err := boundsForSchema(s)
		if err != nil {
			return nil, err
		}
		st, err := regress.GramStructureFor(s)
		if err != nil {
			return nil, err
		}
		tasks = append(tasks, refsTask{n, t, b, st})
	}
	return tasks, nil
}

func buildRefs(ctx context.Context, e *env) (*plan, error) {
	return refsPlan(e, refsLinearTables, refsLogisticTables)
}

// refsPlan is utility-refs' plan on the linear tasks lin and the logistic
// tasks logit: every dplearn mechanism and every reference on each split,
// the claims of refsClaims and the tables of refsMarkdown.
func refsPlan(e *env, lin, logit []string) (*plan, error) {
	tasks, err := refsTasks(e, append(append([]string{}, lin...), logit...))
	if err != nil {
		return nil, err
	}
	var jobs []job
	for run := 0; run < e.runs; run++ {
		for _, tk := range tasks {
			jobs = append(jobs, refsJob(tk))
		}
	}
	var pl, pg []panel
	linSeries := append(append(append([]string{}, refsLinearMechs...), refsLinearRefs...), cPaired)
	logitSeries := append(append([]string{}, refsLogisticMechs...), refsLogisticRefs...)
	for _, tk := range tasks {
		if tk.t.Kind == regress.Linear {
			pl = append(pl, panel{id: tk.name, title: tk.name + ": test RMSE ÷ non-private", xlabel: "ε", ylabel: "test RMSE ÷ non-private", logX: true, logY: true, metric: "rmse_ratio", series: linSeries})
		} else {
			pg = append(pg, panel{id: tk.name, title: tk.name + ": test log-loss", xlabel: "ε", ylabel: "test log-loss", logX: true, logY: true, metric: "logloss", series: logitSeries})
		}
	}
	figs := []figure{
		{cols: 3, panels: pl, caption: "Linear tasks: test RMSE divided by the non-private least-squares fit's on the same split, mean ± sd over 80/20 splits, δ = 1e-5, every method on the same rows with the same public bounds. dplearn's mechanisms by name (irls fits least absolute deviations), the references as named (refs.go)."},
		{cols: 2, panels: pg, caption: "Logistic tasks: test log-loss, mean ± sd over 80/20 splits, δ = 1e-5 (diffprivlib is pure ε-DP)."},
	}
	p := &plan{jobs: jobs, figures: figs, notes: []string{
		"excess_rmse = test RMSE − the non-private least-squares fit's test RMSE on the same split (encoded target scale [−1, 1], predictions clipped to it); rmse_ratio = their ratio; logloss and accuracy on the test rows.",
		"Calibration: the Gaussian references (SSP eig-clip, AdaSSP, DP-GD) by exact Gaussian-DP composition at (ε, 1e-5) with the grid slack of noise.AddGaussian, as dplearn's mechanisms; diffprivlib pure ε-DP (basic composition of Laplace releases) as in its source; TukeyEM (ε, δ)-DP by propose-test-release. Sensitivities are derived in experiment/refs.go.",
		"SSP eig-clip: noisy XᵀX (Δ = √2) and Xᵀy (Δ = 2), half of μ² each, eigenvalues floored at 2σ√d. AdaSSP: λ_min (Δ = 1), XᵀX, Xᵀy, a third of μ² each, Wang's ridge rule with ρ = 0.05. DP-GD: T = min(1000, max(25, ⌊Nε/8⌋)) full-batch steps (a public rule tuned on these tables, in the reference's favour; refDPGDIters), clipping C = 1, η = 4, mean of the last T/2 iterates.",
		"diffprivlib (fixed): LinearRegression with fit_intercept (private centring, Laplace on every coefficient of the quadratic objective), the diagonal sensitivity fixed to max(|lo|, |hi|)² (IBM issues #104 item 1 and #105: the released code uses the lower bound twice, so indicator columns get no noise) and the centring charged for X and y separately (#104 item 2); the noisy quadratic solved in its positive eigen-space instead of scipy's BFGS. LogisticRegression: Chaudhuri et al. objective perturbation through its Vector mechanism with C = 1, data norm 1 (the intercept is inside dplearn's ‖x‖ ≤ 1).",
		"TukeyEM: m = min(1000, ⌊N/(2d)⌋) OLS models on disjoint batches, PTR with ε/2 and the restricted exponential mechanism on the approximate Tukey depth with ε/2; when the PTR check fails the method outputs nothing and is scored as the zero model (ptr_fail = 1). The authors' code draws the PTR Laplace noise with scale ε/2 instead of 1/(ε/2); we use 1/(ε/2).",
		"SSP eig-clip, same noise: eigenvalue-clipped SSP on the same standard-normal noise draws as the split's gaussian-fm release, rescaled to the reference's σ_S, σ_b and floor (common random numbers; pairedSSPClip): the paired claim per cell compares the calibrations on one draw.",
		fmt.Sprintf("dplearn mechanisms with their defaults (regress.Config{Lambda: −1}) and the public Gram structure that dplearn fit projects onto by default (the schema's identities; the known intercept entry for the synthetic designs): linear gaussian-fm clips the released Λ2's eigenvalues at 2·τ2·√d (regress.EigenFloor); auto is, linear, Huber's loss by noisygd where N·ε/d is in [%d, %d] and gaussian-fm elsewhere and, logistic, noisygd's clipped gradient: a public rule with no privacy cost (regress.AutoPathFor); auto is fitted on a tape of the split's noise and the mechanism it picks on a replay of that tape, and the two fits are checked equal bit for bit, so auto's row is its pick's row on the same draws (common random numbers; experiment/tape.go); dpme and filter-priority are left out (they need the schema's grid; see fm-figures).", regress.AutoLow, regress.AutoHigh),
	}}
	// The per-task tables need the aggregate (max/median over draws), so
	// they are added as a note once the claims are computed.
	p.claims = func(a *Aggregate) []Claim {
		p.notes = append(p.notes, "Tables per task:\n"+refsMarkdown(a, lin, logit))
		return refsClaims(a, lin, logit)
	}
	return p, nil
}

// rmse returns the test RMSE on the encoded scale.
func rmse(coef []float64, test *table) float64 {
	return math.Sqrt(evaluate(regress.Linear, coef, test))
}

// refsRun fits one reference.
func refsRun(name string, train *table, p refParams, rng *rand.Rand) ([]float64, error) {
	switch name {
	case rSSPClip:
		return refSSPClip(train.Rows, train.K, p)
	case rAdaSSP:
		return refAdaSSP(train.Rows, train.K, p)
	case rDPGD:
		return refDPGD(train.Rows, train.K, p)
	case rDPL:
		if train.Kind == regress.Logistic {
			return refDiffprivlibLogistic(train.Rows, train.K, p)
		}
		return refDiffprivlibLinear(train.Rows, train.K, p)
	case rTukey:
		return refTukeyEM(train.Rows, train.K, p, rng)
	}
	return nil, fmt.Errorf("experiment: unknown reference %q", name)
}

func refsJob(tk refsTask) job {
	return func(ctx context.Context, src noise.Source, rng *rand.Rand) ([]obs, error) {
		train, test := tk.t.split(rng, 0.2, 0)
		kind := tk.t.Kind
		var out []obs
		add := func(eps float64, series, metric string, v float64) {
			out = append(out, obs{panel: tk.name, xname: "epsilon", x: eps, series: series, metric: metric, v: v})
		}
		np, err := fitWith(ctx, "nonprivate", train, regress.Config{Kind: kind})
		if err != nil {
			return nil, err
		}
		ref := rmse(np, test)
		score := func(eps float64, series string, w []float64) {
			if kind == regress.Linear {
				r := rmse(w, test)
				add(eps, series, "excess_rmse", r-ref)
				add(eps, series, "rmse_ratio", r/ref)
				return
			}
			add(eps, series, "logloss", logLoss(w, test))
			add(eps, series, "accuracy", evaluate(regress.Logistic, w, test))
		}
		mechs, refs := refsLinearMechs, refsLinearRefs
		if kind == regress.Logistic {
			mechs, refs = refsLogisticMechs, refsLogisticRefs
		}
		for _, eps := range refsEps {
			score(eps, "nonprivate", np)
			// auto on a tape of the noise, its pick on the replay
			// (common random numbers, tape.go).
			var (
				tape  *tapeSource
				wAuto []float64
				pick  string
			)
			tape, pick = newTape(src), regress.AutoPathFor(kind, int64(train.N()), train.K-1, eps)
			cfg := regress.Config{Kind: kind, Epsilon: eps, Delta: utilityDelta, Lambda: -1, Source: tape, Structure: tk.st}
			if wAuto, err = fitWith(ctx, "auto", train, cfg); err != nil {
				return nil, err
			}
			for _, m := range mechs {
				cfg := regress.Config{Kind: kind, Epsilon: eps, Delta: utilityDelta, Lambda: -1, Source: src, Structure: tk.st}
				if m == "auto" {
					score(eps, m, wAuto)
					continue
				}
				if m == pick {
					cfg.Source = tape.replay()
				}
				if m == "irls" {
					cfg.Kind = regress.Robust
				}
				if m == "fm" {
					cfg.Delta = 0
				}
				if m == "gaussian-fm" && kind == regress.Linear {
					// The default, and eigenvalue-clipped SSP on the
					// same noise draws (cPaired, utility_clip.go).
					res, err := gfmRelease(ctx, m, train, cfg)
					if err != nil {
						return nil, err
					}
					if m == pick {
						if err := sameCoef("auto and its pick "+m+" on the same noise", wAuto, res.Coef); err != nil {
							return nil, err
						}
					}
					score(eps, m, res.Coef)
					wp, err := pairedSSPClip(train, res.Released, eps)
					if err != nil {
						return nil, err
					}
					score(eps, cPaired, wp)
					continue
				}
				w, err := fitWith(ctx, m, train, cfg)
				if err != nil {
					return nil, err
				}
				if m == pick {
					if err := sameCoef("auto and its pick "+m+" on the same noise", wAuto, w); err != nil {
						return nil, err
					}
				}
				score(eps, m, w)
			}
			for _, r := range refs {
				w, err := refsRun(r, train, refParams{Eps: eps, Delta: utilityDelta, Src: src, Bounds: tk.b}, rng)
				fail := 0.0
				if errors.Is(err, ErrTukeyPTR) {
					fail, err = 1, nil
				}
				if err != nil {
					return nil, fmt.Errorf("%s on %s (ε=%g): %w", r, tk.name, eps, err)
				}
				if r == rTukey {
					add(eps, r, "ptr_fail", fail)
				}
				score(eps, r, w)
			}
		}
		return out, nil
	}
}

// refsStat summarises one (task, ε, series, metric) cell: mean, standard
// error, and the largest draw over the median (blow-ups).
type refsStat struct {
	mean, se, maxMed float64
	// over3 is the share of draws above 3× the median.
	over3 float64
	n     int
}

func refsCell(a *Aggregate, task, series, metric string, eps float64) (refsStat, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w, ok := a.m[aggKey{panel: task, xname: "epsilon", x: eps, series: series, metric: metric}]
	if !ok {
		return refsStat{}, false
	}
	st := refsStat{mean: w.mean, n: w.n}
	if w.n > 1 {
		st.se = math.Sqrt(w.s/float64(w.n-1)) / math.Sqrt(float64(w.n))
	}
	if len(w.vals) > 0 {
		v := append([]float64(nil), w.vals...)
		sort.Float64s(v)
		med := v[len(v)/2]
		if len(v)%2 == 0 {
			med = (v[len(v)/2-1] + v[len(v)/2]) / 2
		}
		st.maxMed = v[len(v)-1] / med
		for _, x := range v {
			if x > 3*med {
				st.over3++
			}
		}
		st.over3 /= float64(len(v))
	} else {
		st.maxMed = math.NaN()
	}
	return st, true
}

// withinFactor is a claim's verdict on "v ≤ f× best" for an error v and
// the comparator's error best: "yes", or "no (ratio×)". An excess error can
// be negative (a robust fit beating least squares on its own test rows);
// against a comparator at or below 0 a ratio means nothing, and v holds
// only if it is no larger (before this, v/best < 0 read as "yes").
func withinFactor(v, best, f float64) string {
	if best <= 0 {
		if v <= best {
			return "yes"
		}
		return fmt.Sprintf("no (%.3g against %.3g ≤ 0)", v, best)
	}
	if r := v / best; r > f {
		return fmt.Sprintf("no (%.3g×)", r)
	}
	return "yes"
}

// refsClaims states issue 26's goals per task and ε: the dplearn default
// (gaussian-fm) against the best reference, mean ± se with the max/median
// ratio, and the best dplearn mechanism, on the linear tasks lin and the
// logistic tasks logit.
func refsClaims(a *Aggregate, lin, logit []string) []Claim {
	var out []Claim
	fmtS := func(s refsStat) string {
		return fmt.Sprintf("%.4g ± %.2g (max/med %.2g)", s.mean, s.se, s.maxMed)
	}
	for i, task := range append(append([]string{}, lin...), logit...) {
		linear := i < len(lin)
		metric, mechs, refs := "excess_rmse", refsLinearMechs, refsLinearRefs
		if !linear {
			metric, mechs, refs = "logloss", refsLogisticMechs, refsLogisticRefs
		}
		// The recommended mechanism of the model: gaussian-fm for linear
		// regression, noisygd (its clipped gradient) for logistic
		// prediction (README, regress.Registry).
		defName := "gaussian-fm"
		if !linear {
			defName = "noisygd"
		}
		for _, eps := range refsEps {
			def, ok := refsCell(a, task, defName, metric, eps)
			if !ok {
				continue
			}
			best, bestName := refsStat{mean: math.Inf(1)}, ""
			for _, r := range refs {
				if s, ok := refsCell(a, task, r, metric, eps); ok && s.mean < best.mean {
					best, bestName = s, r
				}
			}
			bm, bmName := refsStat{mean: math.Inf(1)}, ""
			for _, m := range mechs {
				if s, ok := refsCell(a, task, m, metric, eps); ok && s.mean < bm.mean {
					bm, bmName = s, m
				}
			}
			holds := withinFactor(def.mean, best.mean, 1)
			goal := "excess RMSE ≤ 1.0× the best reference's"
			if !linear {
				goal = "log-loss ≤ 1.05× DP-GD's and accuracy ≥ DP-GD's"
				dg, _ := refsCell(a, task, rDPGD, metric, eps)
				ratio := def.mean / dg.mean
				acc, _ := refsCell(a, task, defName, "accuracy", eps)
				dacc, _ := refsCell(a, task, rDPGD, "accuracy", eps)
				var why []string
				if ratio > 1.05 {
					why = append(why, fmt.Sprintf("log-loss %.3g×", ratio))
				}
				if acc.mean < dacc.mean {
					why = append(why, fmt.Sprintf("accuracy %.4g < %.4g", acc.mean, dacc.mean))
				}
				holds = "yes"
				if len(why) > 0 {
					holds = "no (" + strings.Join(why, "; ") + ")"
				}
			}
			if au, ok := refsCell(a, task, "auto", metric, eps); ok {
				what := "excess RMSE"
				if !linear {
					what = "log-loss"
				}
				single, singleName := refsStat{mean: math.Inf(1)}, ""
				for _, m := range mechs {
					if s, ok := refsCell(a, task, m, metric, eps); ok && m != "auto" && s.mean < single.mean {
						single, singleName = s, m
					}
				}
				h := withinFactor(au.mean, single.mean, 1.1)
				out = append(out, Claim{
					Paper:    fmt.Sprintf("%s, ε = %g: auto's %s ≤ 1.1× the best single dplearn mechanism's in hindsight, guarantee included", task, eps, what),
					Measured: fmt.Sprintf("auto %s (%.3g× %s %s)", fmtS(au), au.mean/single.mean, singleName, fmtS(single)),
					Holds:    h,
				})
			}
			if p, ok := refsCell(a, task, cPaired, metric, eps); ok && linear {
				h := withinFactor(def.mean, p.mean, 1)
				out = append(out, Claim{
					Paper:    fmt.Sprintf("%s, ε = %g: gaussian-fm excess RMSE ≤ 1.0× SSP eig-clip's on the same noise draws (paired)", task, eps),
					Measured: fmt.Sprintf("%.3g× (gaussian-fm %s; SSP eig-clip, same noise %s)", def.mean/p.mean, fmtS(def), fmtS(p)),
					Holds:    h,
				})
			}
			if r, ok := refsCell(a, task, defName, "rmse_ratio", eps); ok && linear {
				// The benchmark's blow-up measure, on the test RMSE itself
				// (its draws are ratios to the split's non-private RMSE).
				h := "yes"
				if !(r.maxMed <= 3) {
					h = fmt.Sprintf("no (%.2f×)", r.maxMed)
				}
				out = append(out, Claim{
					Paper:    fmt.Sprintf("%s, ε = %g: no draw of gaussian-fm's test RMSE above 3× the median draw (no blow-ups)", task, eps),
					Measured: fmt.Sprintf("largest ÷ median %.2f over %d draws (of the test RMSE ÷ the split's non-private RMSE)", r.maxMed, r.n),
					Holds:    h,
				})
			}
			out = append(out, Claim{
				Paper:    fmt.Sprintf("%s, ε = %g: %s %s", task, eps, defName, goal),
				Measured: fmt.Sprintf("%s %s; best reference %s %s; best dplearn %s %s", defName, fmtS(def), bestName, fmtS(best), bmName, fmtS(bm)),
				Holds:    holds,
			})
		}
	}
	return out
}

// refsMarkdown renders one table per task: rows are methods, columns ε,
// cells mean ± se (max/median) of the task's metric (excess RMSE for
// linear tasks lin, log-loss and accuracy for the logistic ones logit).
func refsMarkdown(a *Aggregate, lin, logit []string) string {
	var b strings.Builder
	// cellsRow renders one method's cells of metric across ε by cell.
	cellsRow := func(task, series, metric string, cell func(refsStat) string) string {
		cells := []string{series}
		for _, eps := range refsEps {
			s, ok := refsCell(a, task, series, metric, eps)
			if !ok {
				cells = append(cells, "–")
				continue
			}
			cells = append(cells, cell(s))
		}
		return "| " + strings.Join(cells, " | ") + " |\n"
	}
	row := func(task, series, metric string) string {
		return cellsRow(task, series, metric, func(s refsStat) string {
			return fmt.Sprintf("%.3g ± %.2g (%.1f)", s.mean, s.se, s.maxMed)
		})
	}
	blowups := func(task, series string) string {
		return cellsRow(task, series, "rmse_ratio", func(s refsStat) string {
			return fmt.Sprintf("%.2f (%.0f%%)", s.maxMed, 100*s.over3)
		})
	}
	head := "| method | ε = 0.1 | ε = 0.5 | ε = 1 | ε = 2 |\n| --- | --- | --- | --- | --- |\n"
	for _, task := range lin {
		fmt.Fprintf(&b, "\n%s, excess test RMSE over non-private, mean ± se (max/median):\n\n%s", task, head)
		for _, s := range append(append(append([]string{}, refsLinearMechs...), refsLinearRefs...), cPaired) {
			b.WriteString(row(task, s, "excess_rmse"))
		}
		// The outside benchmark's blow-up measure is on the test RMSE
		// itself ("RMSE 0.94 in some draws against a median of 0.45"):
		// the excess's max/median above is that of a small difference,
		// and grows with the number of draws (docs/experiments.md).
		fmt.Fprintf(&b, "\n%s, test RMSE ÷ the non-private fit's on the same split: largest draw ÷ median draw (share of draws above 3× the median):\n\n%s", task, head)
		for _, s := range append(append([]string{}, refsLinearMechs...), refsLinearRefs...) {
			b.WriteString(blowups(task, s))
		}
	}
	for _, task := range logit {
		for _, metric := range []string{"logloss", "accuracy"} {
			fmt.Fprintf(&b, "\n%s, test %s, mean ± se (max/median):\n\n%s", task, metric, head)
			for _, s := range append(append([]string{"nonprivate"}, refsLogisticMechs...), refsLogisticRefs...) {
				b.WriteString(row(task, s, metric))
			}
		}
	}
	return b.String()
}
