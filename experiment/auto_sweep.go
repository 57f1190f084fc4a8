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
// (regress.AutoPath) and noisygd's step rule on Huber's loss
// (regress.NoisyGDHuberIterationsFor): on the embedded linear tables and
// the collinear design, at ε from 0.1 to 32 (so that N·ε/d spans 3 to
// 80,000), auto against every candidate it could choose, each fitted alone
// with the whole (ε, δ) and its defaults: least squares by gaussian-fm,
// Huber's loss by noisygd (with its step rule and with the squared loss's
// rule T = min(1000, max(100, ⌊Nε/(2d)⌋))), objpert's pseudo-Huber fit,
// and Huber regression by irls's DP-IRLS with the residual floor
// max(irls's rule, 0.007·√(N·ε/d)) (auto's Huber path before noisygd's),
// beside SSP eig-clip and AdaSSP on the same splits.

// autoSweepEps are the sweep's budgets: utility-refs' four and two larger
// ones that put CPS1988 and the collinear design above the rule's upper
// bound.
var autoSweepEps = []float64{0.1, 0.5, 1, 2, 8, 32}

// The sweep's dplearn series; autoSweepSingles are the single mechanisms
// auto is measured against (the best of them in hindsight).
const (
	asAuto     = "auto"
	asFM       = "gaussian-fm"
	asGD       = "noisygd"
	asGDOldT   = "noisygd T=Nε/(2d)"
	asObjPert  = "objpert"
	asIRLSRule = "irls Huber (previous auto)"
)

var autoSweepSingles = []string{asFM, asGD, asObjPert, asIRLSRule}

var autoSweepSeries = append([]string{asAuto, asGDOldT}, append(autoSweepSingles, rSSPClip, rAdaSSP)...)

// previousAutoFloorScale is c of the residual floor η = max(irls's rule,
// c·√(N·ε/d)) of auto's DP-IRLS Huber path before issue 26's fifth pass,
// kept here to measure it against.
const previousAutoFloorScale = 0.007

func autoSweepSpec() spec {
	return spec{
		name: "auto-sweep", title: "--mechanism auto's public rule: least squares by gaussian-fm against Huber's loss by noisygd (and DP-IRLS, objpert) across N·ε/d",
		paper: "issue 26 (no paper figure)", runs: 100, quickRuns: 2,
		build: buildAutoSweep,
	}
}

func buildAutoSweep(ctx context.Context, e *env) (*plan, error) {
	tasks, jobs, fig, err := linearSweep(e, autoSweepJob, autoSweepSeries, "excess test RMSE",
		fmt.Sprintf("Linear tasks: excess test RMSE over the non-private least-squares fit, mean ± sd over 80/20 splits, δ = 1e-5; auto (its public rule picks Huber's loss by noisygd where N·ε/d is in [%d, %d], gaussian-fm elsewhere) against each candidate alone with its defaults, noisygd with the squared loss's step rule, and Huber regression by DP-IRLS as auto ran it before, beside SSP eig-clip and AdaSSP.", regress.AutoLow, regress.AutoHigh))
	if err != nil {
		return nil, err
	}
	p := &plan{jobs: jobs,
		figures: []figure{fig},
		notes: []string{"Same splits, bounds and calibration as utility-refs; every method on the same training rows, ε ∈ {0.1, 0.5, 1, 2, 8, 32}. The hindsight best is the best of gaussian-fm, noisygd, objpert and DP-IRLS's Huber fit in that cell's mean.",
			"auto is fitted on a tape of the split's noise and the mechanism it picks (gaussian-fm or noisygd) on a replay of that tape; the two fits are checked equal bit for bit, so auto's row is its pick's row on the same draws (common random numbers, experiment/tape.go) and auto ÷ the hindsight best measures the rule's choice, not the noise of two draws."},
	}
	p.claims = func(a *Aggregate) []Claim {
		var out []Claim
		for _, tk := range tasks {
			n, d := tk.t.N()*4/5, tk.t.K-1
			for _, eps := range autoSweepEps {
				best, bestS := math.Inf(1), ""
				for _, s := range autoSweepSingles {
					if st, ok := refsCell(a, tk.name, s, "excess_rmse", eps); ok && st.mean < best {
						best, bestS = st.mean, s
					}
				}
				ref := bestOfRefs(a, tk.name, eps, []string{rSSPClip, rAdaSSP})
				var parts []string
				for _, s := range autoSweepSeries {
					if st, ok := refsCell(a, tk.name, s, "excess_rmse", eps); ok {
						parts = append(parts, fmt.Sprintf("%s %.2f×", s, st.mean/best))
					}
				}
				holds := "no"
				au, ok := refsCell(a, tk.name, asAuto, "excess_rmse", eps)
				if ok && au.mean <= 1.1*best {
					holds = "yes"
				}
				out = append(out, Claim{
					Paper:    fmt.Sprintf("%s, ε = %g (N·ε/d ≈ %.0f, auto: %s): auto within 1.1× the best single mechanism in hindsight", tk.name, eps, float64(n)*eps/float64(d), regress.AutoPath(int64(n), d, eps)),
					Measured: fmt.Sprintf("hindsight best %s %.4g (%.2f× the best reference); ratios to it: %s", bestS, best, best/ref, strings.Join(parts, ", ")),
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
		n, d := int64(train.N()), train.K-1
		for _, eps := range autoSweepEps {
			// auto on a tape of the noise, its pick on the replay
			// (common random numbers, tape.go).
			tape, pick := newTape(src), regress.AutoPath(n, d, eps)
			wAuto, err := fitWith(ctx, asAuto, train, regress.Config{Kind: regress.Linear, Epsilon: eps, Delta: utilityDelta, Lambda: -1, Source: tape, Structure: tk.st})
			if err != nil {
				return nil, err
			}
			for _, s := range autoSweepSeries {
				cfg := regress.Config{Kind: regress.Linear, Epsilon: eps, Delta: utilityDelta, Lambda: -1, Source: src, Structure: tk.st}
				mech := s
				switch s {
				case asAuto:
					rec.add(eps, s, wAuto)
					continue
				case pick:
					cfg.Source = tape.replay()
				case rSSPClip, rAdaSSP:
					w, err := refsRun(s, train, refParams{Eps: eps, Delta: utilityDelta, Src: src, Bounds: tk.b}, rng)
					if err != nil {
						return nil, fmt.Errorf("%s on %s (ε=%g): %w", s, tk.name, eps, err)
					}
					rec.add(eps, s, w)
					continue
				case asGDOldT:
					mech = asGD
					cfg.NoisyGD.Iterations = regress.NoisyGDIterationsFor(regress.Linear, d, n, eps)
				case asIRLSRule:
					mech = "irls"
					cfg.Kind = regress.Robust
					cfg.IRLS.ResidualFloor = math.Max(regress.GradientIRLSResidualFloor(n, d, eps), previousAutoFloorScale*math.Sqrt(float64(n)*eps/float64(d)))
				}
				w, err := fitWith(ctx, mech, train, cfg)
				if err != nil {
					return nil, fmt.Errorf("%s on %s (ε=%g): %w", s, tk.name, eps, err)
				}
				if s == pick {
					if err := sameCoef("auto and its pick "+s+" on the same noise", wAuto, w); err != nil {
						return nil, err
					}
				}
				rec.add(eps, s, w)
			}
		}
		return rec.obs, nil
	}
}
