package experiment

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
)

// huber-sweep: the sweep that chose the Huber loss of objpert's and
// noisygd's linear fits and its scale η (regress.DefaultHuberScale; issue
// 26): on the embedded linear tables and the collinear design, each
// mechanism with the squared loss on its default parameter ball (the
// default before the Huber loss) against the Huber loss at fixed scales and
// at the default rule, beside SSP eig-clip and AdaSSP on the same splits.

// huberSweepCand is one configuration: mech with Config.Huber = huber (−1
// the squared loss on the ball, 0 the default, > 0 a fixed η) and, for
// noisygd, the ball: 0 its default, > 0 that factor times the squared
// loss's default radius, < 0 none (R = 10⁹).
type huberSweepCand struct {
	series string
	mech   string
	huber  float64
	ball   float64
}

var huberSweepCands = []huberSweepCand{
	{"noisygd squared", "noisygd", -1, 0},
	{"noisygd η=0.25", "noisygd", 0.25, 0},
	{"noisygd η=1", "noisygd", 1, 0},
	{"noisygd η=0.5 no ball", "noisygd", 0.5, -1},
	{"noisygd η=0.5 ball×1", "noisygd", 0.5, 1},
	{"noisygd default", "noisygd", 0, 0},
	{"objpert squared", "objpert", -1, 0},
	{"objpert η=0.25", "objpert", 0.25, 0},
	{"objpert η=1", "objpert", 1, 0},
	{"objpert η=2", "objpert", 2, 0},
	{"objpert default", "objpert", 0, 0},
}

var huberSweepSeries = seriesWithRefs(huberSweepCands, func(c huberSweepCand) string { return c.series })

func huberSweepSpec() spec {
	return spec{
		name: "huber-sweep", title: "objpert's and noisygd's linear loss: the squared loss on a ball against Huber's loss at fixed scales and the default",
		paper: "issue 26 (no paper figure)", runs: 100, quickRuns: 2,
		build: buildHuberSweep,
	}
}

func buildHuberSweep(ctx context.Context, e *env) (*plan, error) {
	tasks, jobs, fig, err := linearSweep(e, huberSweepJob, huberSweepSeries, "excess test RMSE",
		"Linear tasks: excess test RMSE over the non-private least-squares fit, mean ± sd over 80/20 splits, δ = 1e-5; objpert and noisygd with the squared loss on their default parameter ball and with Huber's loss (objpert: pseudo-Huber) at fixed scales η and at the default, beside SSP eig-clip and AdaSSP.")
	if err != nil {
		return nil, err
	}
	p := &plan{jobs: jobs, figures: []figure{fig},
		notes: []string{"Same splits, bounds and calibration as utility-refs; every method on the same training rows. The defaults: η = 0.5 (regress.DefaultHuberEta) for both; noisygd's ball twice the squared loss's default radius (regress.NoisyGDHuberBallFactor), post-processing with the Huber loss; objpert's pseudo-Huber fit has no ball."}}
	p.claims = func(a *Aggregate) []Claim {
		var out []Claim
		for _, tk := range tasks {
			n, d := tk.t.N()*4/5, tk.t.K-1
			for _, eps := range refsEps {
				best := bestOfRefs(a, tk.name, eps, []string{rSSPClip, rAdaSSP})
				for _, mech := range []string{"noisygd", "objpert"} {
					var parts []string
					holds := "no"
					for _, c := range huberSweepCands {
						if c.mech != mech {
							continue
						}
						st, ok := refsCell(a, tk.name, c.series, "excess_rmse", eps)
						if !ok {
							continue
						}
						parts = append(parts, fmt.Sprintf("%s %.2f×", c.series, st.mean/best))
						if c.series == mech+" default" && st.mean <= 1.5*best {
							holds = "yes"
						}
					}
					out = append(out, Claim{
						Paper:    fmt.Sprintf("%s, ε = %g (N·ε/d ≈ %.0f): %s's default (Huber, η = %g) within 1.5× the best reference", tk.name, eps, float64(n)*eps/float64(d), mech, regress.DefaultHuberScale(int64(n), d, eps)),
						Measured: fmt.Sprintf("best reference %.4g; ratios to it: %s", best, strings.Join(parts, ", ")),
						Holds:    holds,
					})
				}
			}
		}
		return out
	}
	return p, nil
}

func huberSweepJob(tk refsTask) job {
	return func(ctx context.Context, src noise.Source, rng *rand.Rand) ([]obs, error) {
		train, rec, err := newExcessRecorder(ctx, tk, rng)
		if err != nil {
			return nil, err
		}
		for _, eps := range refsEps {
			for _, c := range huberSweepCands {
				cfg := regress.Config{Kind: regress.Linear, Epsilon: eps, Delta: utilityDelta, Lambda: -1, Huber: c.huber, Source: src}
				switch {
				case c.mech != "noisygd":
				case c.ball > 0:
					cfg.NoisyGD.Radius = c.ball * regress.DefaultNoisyGDRadius(regress.Linear, train.K-1, int64(train.N()), eps)
				case c.ball < 0:
					cfg.NoisyGD.Radius = 1e9
				}
				w, err := fitWith(ctx, c.mech, train, cfg)
				if err != nil {
					return nil, err
				}
				rec.add(eps, c.series, w)
			}
			for _, r := range []string{rSSPClip, rAdaSSP} {
				w, err := refsRun(r, train, refParams{Eps: eps, Delta: utilityDelta, Src: src, Bounds: tk.b}, rng)
				if err != nil {
					return nil, fmt.Errorf("%s on %s (ε=%g): %w", r, tk.name, eps, err)
				}
				rec.add(eps, r, w)
			}
		}
		return rec.obs, nil
	}
}
