package experiment

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
)

// Issue 26's sweep of gaussian-fm's linear post-processing: one release per
// (split, ε) and every rule below applied to that same release (paired),
// beside the two SSP references on the same training rows. Embedded linear
// tables and the collinear synthetic design only; the rule it chose is
// regress.EigenFloor with c = regress.DefaultEigenFloorFactor.

// clipFactors are the eigenvalue-floor factors c (floor c·τ2·√d) swept.
var clipFactors = []float64{0.5, 0.75, 1, 1.5, 2, 2.5, 3, 4}

// Series of the sweep besides "clip c=…".
const (
	cRidge4   = "ridge 4τ2 + trim (before)"
	cRidgeSqd = "ridge τ2√d + trim"
	// cPaired is eigenvalue-clipped SSP on the same standard-normal noise
	// draws as this split's gaussian-fm release, rescaled to the
	// reference's own σ_S, σ_b (its floor 2σ_S√d): the reference with
	// common random numbers, so that the paired ratio isolates the
	// calibration from the draw.
	cPaired = "SSP eig-clip, same noise"
	// cStruct is the default clip with the public Gram structure
	// (refsTask.st) projected first, as `dplearn fit` does.
	cStruct = "clip c=2 + structure"
)

// Spectral filters swept besides clipping (filterSeries): the coefficient
// along the released Λ2's eigen-direction k is g_k·φ(λ_k) with g_k =
// v_kᵀ(−Λ1/2), t = c·τ2·√d:
//
//	trunc:    φ = 1/λ for λ > t, 0 below (truncation at the noise level);
//	tikhonov: φ = λ⁺/(λ⁺² + t²) (the minimiser of ‖Λ2ω + Λ1/2‖² + t²‖ω‖²
//	          on the positive part of the spectrum);
//	soft:     φ = 1/√(λ⁺² + t²) (a smooth clip: 1/t at 0, 1/λ above t);
//	soft4:    φ = (λ⁺⁴ + t⁴)^(−1/4) (between soft and the hard clip).
var filterRules = []struct {
	name string
	c    float64
}{{"trunc", 2}, {"tikhonov", 1}, {"tikhonov", 1.5}, {"tikhonov", 2}, {"soft", 1.5}, {"soft", 1.75}, {"soft", 2}, {"soft4", 2}, {"soft4", 2.5}}

func filterSeries(name string, c float64) string { return fmt.Sprintf("%s c=%g", name, c) }

// filterFit applies the spectral filter rule (filterRules) with t =
// c·τ2·√d to the released objective q.
func filterFit(q *regress.Quadratic, tau2 float64, rule string, c float64) ([]float64, error) {
	d := q.D
	vals, vecs, err := q.Eigen(0, true)
	if err != nil {
		return nil, err
	}
	t := regress.EigenFloor(d, tau2, c)
	w := make([]float64, d)
	for k, l := range vals {
		lp := math.Max(l, 0)
		var phi float64
		switch rule {
		case "trunc":
			if l > t {
				phi = 1 / l
			}
		case "tikhonov":
			phi = lp / (lp*lp + t*t)
		case "soft":
			phi = 1 / math.Hypot(lp, t)
		case "soft4":
			phi = 1 / math.Sqrt(math.Sqrt(lp*lp*lp*lp+t*t*t*t))
		default:
			return nil, fmt.Errorf("experiment: unknown spectral filter %q", rule)
		}
		var g float64
		for i := 0; i < d; i++ {
			g += vecs.At(i, k) * (-q.Lambda1[i] / 2)
		}
		for i := 0; i < d; i++ {
			w[i] += g * phi * vecs.At(i, k)
		}
	}
	return w, nil
}

// pairedSSPClip is cPaired: the exact objective of the training rows
// plus the release's noise rescaled from gaussian-fm's (τ1, τ2) to the
// reference's (σ_b, σ_S) in Λ units (Λ2 = S/N, Λ1 = −2b/N), then clipped
// at the reference's floor 2σ_S√d/N. Its output is refSSPClip's estimator
// on noise draws Z = (gaussian-fm's noise)/τ.
func pairedSSPClip(train *table, rel *regress.Released, eps float64) ([]float64, error) {
	st, err := moments(train)
	if err != nil {
		return nil, err
	}
	ex, err := regress.ObjectiveApprox(regress.Linear, st, regress.TaylorQuadratic)
	if err != nil {
		return nil, err
	}
	d, n := rowsDim(train.Rows, train.K)
	sig, err := gaussCalibrate(eps, utilityDelta, []float64{sspSensS, sspSensB}, []int{d * (d + 1) / 2, d}, []float64{0.5, 0.5}, nil)
	if err != nil {
		return nil, err
	}
	N := float64(n)
	tau1, tau2 := math.Sqrt(rel.VarLambda1), math.Sqrt(rel.VarLambda2)
	r1, r2 := 2*sig[1]/N/tau1, sig[0]/N/tau2
	q := &regress.Quadratic{D: d, Lambda1: make([]float64, d), Upper: make([]float64, len(ex.Upper))}
	for i := range q.Lambda1 {
		q.Lambda1[i] = ex.Lambda1[i] + r1*(rel.Objective.Lambda1[i]-ex.Lambda1[i])
	}
	for i := range q.Upper {
		q.Upper[i] = ex.Upper[i] + r2*(rel.Objective.Upper[i]-ex.Upper[i])
	}
	w, _, err := q.Minimize(regress.PostProcess{Floor: 2 * sig[0] / N * math.Sqrt(float64(d))})
	return w, err
}

func clipSeries(c float64) string { return fmt.Sprintf("clip c=%g", c) }

func utilityClipSpec() spec {
	return spec{
		name: "utility-clip", title: "gaussian-fm linear: eigenvalue clipping at c·τ2·√d against ridge rules and the SSP references",
		paper: "issue 26 (no paper figure)", runs: 30, quickRuns: 2,
		build: buildUtilityClip,
	}
}

func buildUtilityClip(ctx context.Context, e *env) (*plan, error) {
	series := []string{rSSPClip, rAdaSSP, cPaired, cStruct, cRidge4, cRidgeSqd}
	for _, c := range clipFactors {
		series = append(series, clipSeries(c))
	}
	for _, f := range filterRules {
		series = append(series, filterSeries(f.name, f.c))
	}
	_, jobs, fig, err := linearSweep(e, clipJob, series, "test RMSE − non-private's",
		"gaussian-fm's linear release post-processed by each rule (the same release per split and ε), beside eigenvalue-clipped SSP and AdaSSP on the same training rows; excess test RMSE over the non-private fit, mean ± sd over 80/20 splits, δ = 1e-5.")
	if err != nil {
		return nil, err
	}
	p := &plan{jobs: jobs, figures: []figure{fig},
		notes: []string{"Rules: clip c: every eigenvalue of the released Λ2 below c·τ2·√d raised to it, no ridge (regress.EigenFloor); ridge 4τ2 + trim: the default before issue 26 (λ = 4τ2, directions ≤ λ/4 trimmed); ridge τ2√d + trim: a ridge that grows with √d. τ2 is the per-entry noise std of Λ2, public."}}
	p.claims = func(a *Aggregate) []Claim {
		p.notes = append(p.notes, "Excess RMSE ÷ the better SSP reference's, per task and ε, and the worst cell per rule:\n"+clipMarkdown(a, series))
		return clipClaims(a)
	}
	return p, nil
}

func clipJob(tk refsTask) job {
	return func(ctx context.Context, src noise.Source, rng *rand.Rand) ([]obs, error) {
		train, rec, err := newExcessRecorder(ctx, tk, rng)
		if err != nil {
			return nil, err
		}
		for _, eps := range refsEps {
			add := func(series string, w []float64) { rec.add(eps, series, w) }
			res, err := gfmRelease(ctx, "gaussian-fm", train, regress.Config{Kind: regress.Linear, Epsilon: eps, Delta: utilityDelta, Lambda: -1, Source: src})
			if err != nil {
				return nil, err
			}
			q, tau2 := res.Released.Objective, math.Sqrt(res.Released.VarLambda2)
			d := q.D
			add(cRidge4, ridgeFit(q, tau2, 4, nil))
			add(cRidgeSqd, ridgeFit(q, tau2, math.Sqrt(float64(d)), nil))
			for _, c := range clipFactors {
				w, _, err := q.Minimize(regress.PostProcess{Floor: regress.EigenFloor(d, tau2, c)})
				if err != nil {
					return nil, err
				}
				add(clipSeries(c), w)
			}
			for _, f := range filterRules {
				w, err := filterFit(q, tau2, f.name, f.c)
				if err != nil {
					return nil, err
				}
				add(filterSeries(f.name, f.c), w)
			}
			ws, _, err := q.Minimize(regress.PostProcess{Floor: regress.EigenFloor(d, tau2, regress.DefaultEigenFloorFactor), Structure: tk.st})
			if err != nil {
				return nil, err
			}
			add(cStruct, ws)
			w, err := pairedSSPClip(train, res.Released, eps)
			if err != nil {
				return nil, err
			}
			add(cPaired, w)
			for _, r := range []string{rSSPClip, rAdaSSP} {
				w, err := refsRun(r, train, refParams{Eps: eps, Delta: utilityDelta, Src: src, Bounds: tk.b}, rng)
				if err != nil {
					return nil, err
				}
				add(r, w)
			}
		}
		return rec.obs, nil
	}
}

// clipRatio is a rule's mean excess RMSE over the better SSP reference's.
func clipRatio(a *Aggregate, task, series string, eps float64) (float64, bool) {
	return clipRatioTo(a, task, series, eps, []string{rSSPClip, rAdaSSP})
}

// clipRatioTo is a rule's mean excess RMSE over the best of refs'.
func clipRatioTo(a *Aggregate, task, series string, eps float64, refs []string) (float64, bool) {
	s, ok := refsCell(a, task, series, "excess_rmse", eps)
	if !ok {
		return 0, false
	}
	return s.mean / bestOfRefs(a, task, eps, refs), true
}

// bestOfRefs is the smallest mean excess RMSE among refs in a cell (+Inf
// when none ran there).
func bestOfRefs(a *Aggregate, task string, eps float64, refs []string) float64 {
	best := math.Inf(1)
	for _, r := range refs {
		if c, ok := refsCell(a, task, r, "excess_rmse", eps); ok {
			best = math.Min(best, c.mean)
		}
	}
	return best
}

// excessRecorder records one split of a linear sweep: the non-private
// least-squares fit on the training rows (np) and each fit's excess test
// RMSE over it.
type excessRecorder struct {
	panel string
	test  *table
	np    []float64
	ref   float64
	obs   []obs
}

// newExcessRecorder draws the run's 80/20 split of tk and fits the
// non-private reference on it.
func newExcessRecorder(ctx context.Context, tk refsTask, rng *rand.Rand) (*table, *excessRecorder, error) {
	train, test := tk.t.split(rng, 0.2, 0)
	np, err := fitWith(ctx, "nonprivate", train, regress.Config{Kind: regress.Linear})
	if err != nil {
		return nil, nil, err
	}
	return train, &excessRecorder{panel: tk.name, test: test, np: np, ref: rmse(np, test)}, nil
}

// add records the excess test RMSE of w for series at eps.
func (r *excessRecorder) add(eps float64, series string, w []float64) {
	r.obs = append(r.obs, obs{panel: r.panel, xname: "epsilon", x: eps, series: series, metric: "excess_rmse", v: rmse(w, r.test) - r.ref})
}

func clipMarkdown(a *Aggregate, series []string) string {
	return clipMarkdownTo(a, series, []string{rSSPClip, rAdaSSP}) +
		"\nThe same, ÷ SSP eig-clip on the same noise draws (cPaired):\n" +
		clipMarkdownTo(a, series, []string{cPaired}) +
		"\nLargest draw ÷ median draw per cell, and in parentheses the share of draws above 3× the median:\n" +
		clipBlowups(a, series)
}

// clipBlowups tabulates, per rule, task and ε, the largest excess RMSE
// over the median and the share of draws above 3× the median.
func clipBlowups(a *Aggregate, series []string) string {
	var b strings.Builder
	b.WriteString("\n| rule |")
	for _, task := range refsLinearTables {
		for _, eps := range refsEps {
			fmt.Fprintf(&b, " %s %g |", task, eps)
		}
	}
	b.WriteString("\n|---|")
	for range len(refsLinearTables) * len(refsEps) {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, s := range series {
		fmt.Fprintf(&b, "| %s |", s)
		for _, task := range refsLinearTables {
			for _, eps := range refsEps {
				c, ok := refsCell(a, task, s, "excess_rmse", eps)
				if !ok {
					b.WriteString(" – |")
					continue
				}
				fmt.Fprintf(&b, " %.1f (%.0f%%) |", c.maxMed, 100*c.over3)
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func clipMarkdownTo(a *Aggregate, series []string, refs []string) string {
	var b strings.Builder
	b.WriteString("\n| rule |")
	for _, task := range refsLinearTables {
		for _, eps := range refsEps {
			fmt.Fprintf(&b, " %s %g |", task, eps)
		}
	}
	b.WriteString(" worst | max/median (worst) |\n|---|")
	for range len(refsLinearTables) * len(refsEps) {
		b.WriteString("---|")
	}
	b.WriteString("---|---|\n")
	for _, s := range series {
		fmt.Fprintf(&b, "| %s |", s)
		worst, blow := 0.0, 0.0
		for _, task := range refsLinearTables {
			for _, eps := range refsEps {
				r, ok := clipRatioTo(a, task, s, eps, refs)
				if !ok {
					b.WriteString(" – |")
					continue
				}
				worst = math.Max(worst, r)
				if c, ok := refsCell(a, task, s, "excess_rmse", eps); ok {
					blow = math.Max(blow, c.maxMed)
				}
				fmt.Fprintf(&b, " %.2f |", r)
			}
		}
		fmt.Fprintf(&b, " %.2f | %.1f |\n", worst, blow)
	}
	return b.String()
}

// clipClaims states the goal for the chosen rule per task and ε.
func clipClaims(a *Aggregate) []Claim {
	var out []Claim
	chosen := clipSeries(regress.DefaultEigenFloorFactor)
	for _, task := range refsLinearTables {
		for _, eps := range refsEps {
			r, ok := clipRatio(a, task, chosen, eps)
			if !ok {
				continue
			}
			s, _ := refsCell(a, task, chosen, "excess_rmse", eps)
			h := "yes"
			if r > 1 || s.maxMed > 3 {
				h = fmt.Sprintf("no (%.3g×, max/median %.2g)", r, s.maxMed)
			}
			out = append(out, Claim{
				Paper:    fmt.Sprintf("%s, ε = %g: %s excess RMSE ≤ 1.0× the better SSP reference's, no draw above 3× the median", task, eps, chosen),
				Measured: fmt.Sprintf("%.3g× (%.4g ± %.2g, max/median %.2g)", r, s.mean, s.se, s.maxMed),
				Holds:    h,
			})
		}
	}
	return out
}

// linearSweep is the scaffolding the linear sweeps of issue 26 share
// (utility-clip, radius-sweep, auto-sweep): the linear tables of
// utility-refs, one job per run and table from mk, and one figure with an
// excess-RMSE panel per table showing series.
// seriesWithRefs names a linear sweep's series: its candidates', then the
// two SSP references every sweep plots beside them.
func seriesWithRefs[C any](cands []C, name func(C) string) []string {
	s := make([]string, 0, len(cands)+2)
	for _, c := range cands {
		s = append(s, name(c))
	}
	return append(s, rSSPClip, rAdaSSP)
}

func linearSweep(e *env, mk func(refsTask) job, series []string, ylabel, caption string) ([]refsTask, []job, figure, error) {
	tasks, err := refsTasks(e, refsLinearTables)
	if err != nil {
		return nil, nil, figure{}, err
	}
	var jobs []job
	for run := 0; run < e.runs; run++ {
		for _, tk := range tasks {
			jobs = append(jobs, mk(tk))
		}
	}
	var panels []panel
	for _, tk := range tasks {
		panels = append(panels, panel{id: tk.name, title: tk.name + ": excess test RMSE", xlabel: "ε", ylabel: ylabel, logX: true, logY: true, metric: "excess_rmse", series: series})
	}
	return tasks, jobs, figure{cols: 3, panels: panels, caption: caption}, nil
}
