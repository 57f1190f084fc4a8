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

// auto-sweep: the sweep that chose --mechanism auto's public rule
// (regress.AutoUsesHuber, regress.AutoHuberResidualFloor): on the embedded
// linear tables and the collinear design, least squares by Gaussian FM
// (gaussian-fm's default, and auto's own choice) against Huber regression
// by DP-IRLS at fixed residual floors and at the floor rule
// η = max(irls's rule, c·√(N·ε/d)) for three c, beside SSP eig-clip and
// AdaSSP on the same splits.

// autoSweepCand is one Huber configuration: a fixed floor eta > 0, the
// floor rule with scale −eta < 0, or irls's own default (eta = 0).
type autoSweepCand struct {
	series string
	eta    float64
}

var autoSweepCands = []autoSweepCand{
	{"irls (LAD default)", 0},
	{"Huber η=0.25", 0.25},
	{"Huber η=0.5", 0.5},
	{"Huber rule c=0.005", -0.005},
	{"Huber rule c=0.007 (auto's)", -regress.AutoHuberScale},
	{"Huber rule c=0.01", -0.01},
}

const autoSweepFM = "gaussian-fm"

var autoSweepSeries = func() []string {
	s := []string{autoSweepFM, "auto"}
	return append(s, seriesWithRefs(autoSweepCands, func(c autoSweepCand) string { return c.series })...)
}()

func autoSweepSpec() spec {
	return spec{
		name: "auto-sweep", title: "--mechanism auto's public rule: least squares by Gaussian FM against Huber regression by DP-IRLS across N·ε/d",
		paper: "issue 26 (no paper figure)", runs: 100, quickRuns: 2,
		build: buildAutoSweep,
	}
}

func buildAutoSweep(ctx context.Context, e *env) (*plan, error) {
	tasks, jobs, fig, err := linearSweep(e, autoSweepJob, autoSweepSeries, "excess test RMSE",
		"Linear tasks: excess test RMSE over the non-private least-squares fit, mean ± sd over 80/20 splits, δ = 1e-5; gaussian-fm (least squares, the linear default), auto (its public rule picks Huber regression where N·ε/d is in [8, 3500]), Huber regression by DP-IRLS at fixed residual floors and at the rule η = max(irls's rule, c·√(N·ε/d)), beside SSP eig-clip and AdaSSP.")
	if err != nil {
		return nil, err
	}
	p := &plan{jobs: jobs,
		figures: []figure{fig},
		notes:   []string{"Same splits, bounds and calibration as utility-refs; every method on the same training rows. irls (LAD default) is irls's own floor rule η = min(1, max(0.1, 1.5√(d/(Nε)))), tuned for MAE."},
	}
	p.claims = func(a *Aggregate) []Claim {
		var out []Claim
		for _, tk := range tasks {
			n, d := tk.t.N()*4/5, tk.t.K-1
			for _, eps := range refsEps {
				best := bestOfRefs(a, tk.name, eps, []string{rSSPClip, rAdaSSP})
				var parts []string
				for _, s := range autoSweepSeries[:len(autoSweepSeries)-2] {
					if st, ok := refsCell(a, tk.name, s, "excess_rmse", eps); ok {
						parts = append(parts, fmt.Sprintf("%s %.2f×", s, st.mean/best))
					}
				}
				holds := "no"
				if st, ok := refsCell(a, tk.name, "auto", "excess_rmse", eps); ok && st.mean <= best {
					holds = "yes"
				}
				path := "least squares (FM)"
				if regress.AutoUsesHuber(int64(n), d, eps) {
					path = "Huber"
				}
				out = append(out, Claim{
					Paper:    fmt.Sprintf("%s, ε = %g (N·ε/d ≈ %.0f, auto: %s): auto's excess RMSE ≤ the best reference's", tk.name, eps, float64(n)*eps/float64(d), path),
					Measured: fmt.Sprintf("best reference %.4g; ratios to it: %s", best, strings.Join(parts, ", ")),
					Holds:    holds,
				})
			}
		}
		return out
	}
	return p, nil
}

func autoSweepJob(tk refsTask) job {
	return func(ctx context.Context, src noise.Source, rng *rand.Rand) ([]obs, error) {
		train, rec, err := newExcessRecorder(ctx, tk, rng)
		if err != nil {
			return nil, err
		}
		add := rec.add
		n, d := int64(train.N()), train.K-1
		for _, eps := range refsEps {
			for _, m := range []string{autoSweepFM, "auto"} {
				cfg := regress.Config{Kind: regress.Linear, Epsilon: eps, Delta: utilityDelta, Lambda: -1, Source: src, Structure: tk.st}
				w, err := fitWith(ctx, m, train, cfg)
				if err != nil {
					return nil, err
				}
				add(eps, m, w)
			}
			for _, c := range autoSweepCands {
				cfg := regress.Config{Kind: regress.Robust, Epsilon: eps, Delta: utilityDelta, Lambda: -1, Source: src, Structure: tk.st}
				cfg.IRLS.ResidualFloor = c.eta
				if c.eta < 0 {
					cfg.IRLS.ResidualFloor = math.Max(regress.GradientIRLSResidualFloor(n, d, eps), -c.eta*math.Sqrt(float64(n)*eps/float64(d)))
				}
				w, err := fitWith(ctx, "irls", train, cfg)
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
