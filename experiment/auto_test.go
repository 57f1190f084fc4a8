package experiment

import (
	"context"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
)

// TestAutoNearBestSingle measures --mechanism auto against the best single
// dplearn mechanism in hindsight among the two its public rule chooses
// between and objpert, each fitted alone with the whole (ε, δ) and its
// defaults: gaussian-fm (least squares), noisygd and objpert (Huber's
// loss; the hindsight winners of utility-refs wherever gaussian-fm is
// not), on the same seeded splits of the embedded linear tables and the
// collinear design. It logs auto's mean excess test RMSE ÷
// the best single mechanism's per table and ε, and requires the geometric
// mean over the twelve cells ≤ 1.1 (issue 26's goal for auto, guarantee
// included: auto's guarantee is the chosen mechanism's) and no cell above
// 1.5× the best plus 5·10⁻⁴ (a rule that picks the wrong mechanism; the
// absolute term is 3-4 standard errors of the near-zero excess RMSE on
// CPS1988 at ε ≥ 1, whose ratios are noise). Seeded: the same numbers
// every run (20 splits; 6 with -short, where only the per-cell bound
// applies, at 2×).
func TestAutoNearBestSingle(t *testing.T) {
	if raceEnabled {
		t.Skip("sequential arithmetic, about 25 min under the race detector (thousands of noisygd steps on CPS1988); run without -race")
	}
	runs := 20
	if testing.Short() {
		runs = 6
	}
	ctx := context.Background()
	singles := []string{"gaussian-fm", "noisygd", "objpert"}
	logSum, cells := 0.0, 0
	worst := 0.0
	for _, name := range refsLinearTables {
		var tb *table
		if name == "collinear" {
			tb, _ = collinearTable(regress.Linear, collinearN)
		} else {
			var err error
			if tb, err = loadReal("", name, nil); err != nil {
				t.Fatal(err)
			}
		}
		// The splits run on all cores; each split's excesses are summed
		// in split order afterwards, so the numbers are the sequential
		// loop's bit for bit.
		res := make([]autoSplitResult, runs)
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		var wg sync.WaitGroup
		for run := 0; run < runs; run++ {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				res[run] = autoSplit(ctx, tb, run, singles)
			}()
		}
		wg.Wait()
		auto := make([]float64, len(refsEps))
		single := make([][]float64, len(singles))
		for i := range single {
			single[i] = make([]float64, len(refsEps))
		}
		for _, r := range res {
			if r.err != nil {
				t.Fatal(r.err)
			}
			for e := range refsEps {
				auto[e] += r.auto[e] / float64(runs)
				for i := range singles {
					single[i][e] += r.single[i][e] / float64(runs)
				}
			}
		}
		for e, eps := range refsEps {
			best, bestM := math.Inf(1), ""
			for i, m := range singles {
				if single[i][e] < best {
					best, bestM = single[i][e], m
				}
			}
			r := auto[e] / best
			t.Logf("%s ε = %g: auto %.4g, best single %s %.4g: ratio %.3f", name, eps, auto[e], bestM, best, r)
			logSum += math.Log(r)
			cells++
			worst = math.Max(worst, r)
			limit := 1.5
			if testing.Short() {
				limit = 2
			}
			if auto[e] > limit*best+5e-4 {
				t.Errorf("%s ε = %g: auto %.4g > %g × the best single %.4g + 5e-4", name, eps, auto[e], limit, best)
			}
		}
	}
	gm := math.Exp(logSum / float64(cells))
	t.Logf("geometric mean of the ratios %.3f, worst cell %.3f (%d splits)", gm, worst, runs)
	if !testing.Short() && gm > 1.1 {
		t.Errorf("auto ÷ best single mechanism: geometric mean %.3f > 1.1", gm)
	}
}

// autoSplitResult is one split's excess test RMSEs: auto's by ε, the
// single mechanisms' by mechanism and ε.
type autoSplitResult struct {
	auto   []float64
	single [][]float64
	err    error
}

// autoSplit fits split run of tb with auto and each of singles at every ε
// of refsEps and returns their excess test RMSEs over the non-private
// fit's. Common random numbers: every fit of a cell draws the same seeded
// noise stream, so auto's fit is its chosen mechanism's fit itself.
func autoSplit(ctx context.Context, tb *table, run int, singles []string) (out autoSplitResult) {
	rng := rand.New(rand.NewPCG(uint64(run), 26))
	train, test := tb.split(rng, 0.2, 0)
	np, err := fitWith(ctx, "nonprivate", train, regress.Config{Kind: regress.Linear})
	if err != nil {
		out.err = err
		return out
	}
	ref := rmse(np, test)
	out.auto = make([]float64, len(refsEps))
	out.single = make([][]float64, len(singles))
	for i := range singles {
		out.single[i] = make([]float64, len(refsEps))
	}
	for e, eps := range refsEps {
		src := func() noise.Source { return noise.NewInsecureSeeded(uint64(1000*run + e)) }
		w, err := fitWith(ctx, "auto", train, regress.Config{Kind: regress.Linear, Epsilon: eps, Delta: utilityDelta, Lambda: -1, Source: src()})
		if err != nil {
			out.err = err
			return out
		}
		out.auto[e] = rmse(w, test) - ref
		for i, m := range singles {
			cfg := regress.Config{Kind: regress.Linear, Epsilon: eps, Delta: utilityDelta, Lambda: -1, Source: src()}
			w, err := fitWith(ctx, m, train, cfg)
			if err != nil {
				out.err = err
				return out
			}
			out.single[i][e] = rmse(w, test) - ref
		}
	}
	return out
}
