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
)

func clipSeries(c float64) string { return fmt.Sprintf("clip c=%g", c) }

func utilityClipSpec() spec {
	return spec{
		name: "utility-clip", title: "gaussian-fm linear: eigenvalue clipping at c·τ2·√d against ridge rules and the SSP references",
		paper: "issue 26 (no paper figure)", runs: 30, quickRuns: 2,
		build: buildUtilityClip,
	}
}

func buildUtilityClip(ctx context.Context, e *env) (*plan, error) {
	tasks, err := refsTasks(e, refsLinearTables)
	if err != nil {
		return nil, err
	}
	var jobs []job
	for run := 0; run < e.runs; run++ {
		for _, tk := range tasks {
			jobs = append(jobs, clipJob(tk))
		}
	}
	series := []string{rSSPClip, rAdaSSP, cRidge4, cRidgeSqd}
	for _, c := range clipFactors {
		series = append(series, clipSeries(c))
	}
	var panels []panel
	for _, tk := range tasks {
		panels = append(panels, panel{id: tk.name, title: tk.name + ": excess test RMSE", xlabel: "ε", ylabel: "test RMSE − non-private's", logX: true, logY: true, metric: "excess_rmse", series: series})
	}
	p := &plan{jobs: jobs, figures: []figure{{cols: 3, panels: panels,
		caption: "gaussian-fm's linear release post-processed by each rule (the same release per split and ε), beside eigenvalue-clipped SSP and AdaSSP on the same training rows; excess test RMSE over the non-private fit, mean ± sd over 80/20 splits, δ = 1e-5."}},
		notes: []string{"Rules: clip c: every eigenvalue of the released Λ2 below c·τ2·√d raised to it, no ridge (regress.EigenFloor); ridge 4τ2 + trim: the default before issue 26 (λ = 4τ2, directions ≤ λ/4 trimmed); ridge τ2√d + trim: a ridge that grows with √d. τ2 is the per-entry noise std of Λ2, public."}}
	p.claims = func(a *Aggregate) []Claim {
		p.notes = append(p.notes, "Excess RMSE ÷ the better SSP reference's, per task and ε, and the worst cell per rule:\n"+clipMarkdown(a, series))
		return clipClaims(a)
	}
	return p, nil
}

func clipJob(tk refsTask) job {
	return func(ctx context.Context, src noise.Source, rng *rand.Rand) ([]obs, error) {
		train, test := tk.t.split(rng, 0.2, 0)
		var out []obs
		np, err := fitWith(ctx, "nonprivate", train, regress.Config{Kind: regress.Linear})
		if err != nil {
			return nil, err
		}
		ref := rmse(np, test)
		for _, eps := range refsEps {
			add := func(series string, w []float64) {
				out = append(out, obs{panel: tk.name, xname: "epsilon", x: eps, series: series, metric: "excess_rmse", v: rmse(w, test) - ref})
			}
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
			for _, r := range []string{rSSPClip, rAdaSSP} {
				w, err := refsRun(r, train, refParams{Eps: eps, Delta: utilityDelta, Src: src, Bounds: tk.b}, rng)
				if err != nil {
					return nil, err
				}
				add(r, w)
			}
		}
		return out, nil
	}
}

// clipRatio is a rule's mean excess RMSE over the better SSP reference's.
func clipRatio(a *Aggregate, task, series string, eps float64) (float64, bool) {
	s, ok := refsCell(a, task, series, "excess_rmse", eps)
	if !ok {
		return 0, false
	}
	best := math.Inf(1)
	for _, r := range []string{rSSPClip, rAdaSSP} {
		if c, ok := refsCell(a, task, r, "excess_rmse", eps); ok {
			best = math.Min(best, c.mean)
		}
	}
	return s.mean / best, true
}

func clipMarkdown(a *Aggregate, series []string) string {
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
				r, ok := clipRatio(a, task, s, eps)
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
