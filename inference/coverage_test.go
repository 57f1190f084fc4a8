package inference

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
)

// coverageCase is one row of the coverage table.
type coverageCase struct {
	mechanism string
	kind      regress.Kind
	epsilon   float64
	n         int64
}

// coverageResult is what one case measured.
type coverageResult struct {
	covered, total []int     // per coefficient
	width, npWidth []float64 // mean interval width, non-private width
	failed         int
}

// TargetMomentShare is the share of ε the tests give to the target moment.
const testShare = 0.05

func linearDesign() *design   { return newDesign(regress.Linear, []float64{0.1, 0.4, -0.3}, 0.15) }
func logisticDesign() *design { return newDesign(regress.Logistic, []float64{-0.5, 1.5, -1.0}, 0) }

// runCoverage fits reps synthetic datasets and counts how often each
// coefficient's interval covers the estimand.
func runCoverage(t testing.TB, c coverageCase, reps, boot int, seed uint64) coverageResult {
	dz := linearDesign()
	if c.kind == regress.Logistic {
		dz = logisticDesign()
	}
	truth := dz.truth()
	d := len(truth)
	res := coverageResult{covered: make([]int, d), total: make([]int, d), width: make([]float64, d), npWidth: make([]float64, d)}
	for i, se := range dz.nonPrivateSE(c.n) {
		res.npWidth[i] = 2 * normalQuantile(0.975) * se
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	src := noise.NewInsecureSeeded(seed)
	est, err := regress.New(c.mechanism)
	if err != nil {
		t.Fatal(err)
	}
	for r := 0; r < reps; r++ {
		st := dz.sample(rng, c.n)
		cfg := regress.Config{Kind: c.kind, Epsilon: c.epsilon, Delta: 1e-6, Lambda: -1, Source: src}
		var y2 *TargetMoment
		if c.kind == regress.Linear {
			cfg.Epsilon = c.epsilon * (1 - testShare)
			v, _, err := regress.ReleaseTargetMoment(st, c.epsilon*testShare, src)
			if err != nil {
				t.Fatal(err)
			}
			y2 = &TargetMoment{Value: v}
		}
		fit, err := est.Fit(context.Background(), regress.Data{Stats: st}, cfg)
		if err != nil {
			res.failed++
			for i := range truth {
				res.total[i]++
			}
			continue
		}
		iv, err := FM(fit.Released, y2, Options{Replicates: boot, Seed: uint64(r) + 1})
		if err != nil {
			t.Fatal(err)
		}
		for i, co := range iv.Coefficients {
			res.total[i]++
			if !co.Identified {
				continue // an unidentified coefficient counts as covered (infinite interval)
			}
			if co.Lower <= truth[i] && truth[i] <= co.Upper {
				res.covered[i]++
			}
			res.width[i] += (co.Upper - co.Lower) / float64(reps)
		}
	}
	return res
}

func TestCoverageQuick(t *testing.T) {
	for _, c := range []coverageCase{
		{"gaussian-fm", regress.Linear, 1, 10000},
		{"fm", regress.Linear, 1, 10000},
		{"gaussian-fm", regress.Logistic, 1, 10000},
		{"fm", regress.Logistic, 1, 100000},
	} {
		r := runCoverage(t, c, 300, 1000, 1)
		for i := range r.covered {
			fmt.Printf("%s %s eps=%g N=%d coef %d: coverage %.3f width %.4g np %.4g failed %d\n", c.mechanism, c.kind, c.epsilon, c.n, i,
				float64(r.covered[i])/float64(r.total[i]), r.width[i], r.npWidth[i], r.failed)
		}
	}
	_ = os.Getenv
	_ = strconv.Itoa
	_ = math.Abs
}
