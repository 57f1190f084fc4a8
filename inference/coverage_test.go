package inference

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
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
	// warm is irls's IRLSOptions.WarmStart: 0 the default warm start,
	// −1 the seed's cold start.
	warm float64
	// wide selects irls's wide-error design (wideRobustDesign) instead of
	// defaultRobustDesign.
	wide bool
	// form is irls's IRLSOptions.Form ("" the default).
	form string
}

// label names the case's mechanism in the table.
func (c coverageCase) label() string {
	if c.mechanism != "irls" {
		return c.mechanism
	}
	l := "irls (preconditioned form after a warm start, default)"
	if c.form != "" {
		l = "irls (" + c.form + " form after a warm start)"
	}
	if c.warm < 0 {
		l = "irls (cold start)"
	}
	if c.wide {
		l += ", wide errors"
	}
	return l
}

// robustDesign returns the case's irls design.
func (c coverageCase) robustDesign() robustDesign {
	if c.wide {
		return wideRobustDesign()
	}
	return defaultRobustDesign()
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
	return runCoverageOpt(t, c, reps, Options{Replicates: boot}, seed)
}

// runCoverageOpt is runCoverage with the bootstrap's options (Seed is set
// per dataset).
func runCoverageOpt(t testing.TB, c coverageCase, reps int, opt Options, seed uint64) coverageResult {
	dz := linearDesign()
	if c.kind == regress.Logistic {
		dz = logisticDesign()
	}
	truth := dz.truth()
	d := len(truth)
	res := coverageResult{covered: make([]int, d), total: make([]int, d), width: make([]float64, d), npWidth: make([]float64, d)}
	for i, se := range dz.nonPrivateSE(c.n) {
		res.npWidth[i] = 2 * NormalQuantile(0.975) * se
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
		o := opt
		o.Seed = uint64(r) + 1
		iv, err := FM(fit.Released, y2, o)
		if err != nil {
			t.Fatal(err)
		}
		for i, co := range iv.Coefficients {
			res.total[i]++
			if !co.Identified {
				continue // an unidentified coefficient counts as not covered (the conservative choice)
			}
			if co.Lower <= truth[i] && truth[i] <= co.Upper {
				res.covered[i]++
			}
			res.width[i] += (co.Upper - co.Lower) / float64(reps)
		}
	}
	return res
}

// binomialTwoSided returns P(X < lo or X > hi) for X ~ Binomial(n, p): the
// false-alarm rate of accepting a coverage count in [lo, hi] when the true
// coverage is p.
func binomialTwoSided(n, lo, hi int, p float64) float64 {
	out := 0.0
	for k := 0; k <= n; k++ {
		if k >= lo && k <= hi {
			continue
		}
		lg, _ := math.Lgamma(float64(n + 1))
		l1, _ := math.Lgamma(float64(k + 1))
		l2, _ := math.Lgamma(float64(n - k + 1))
		out += math.Exp(lg - l1 - l2 + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
	}
	return out
}

// TestCoverage checks that nominal 95% intervals cover the known estimand
// 95% of the time, per coefficient, on synthetic data with exactly simulated
// sufficient statistics (so N = 10⁵ costs no more than N = 10⁴).
//
// Always-on version: 400 datasets per case, acceptance [366, 394] covered
// (91.5%–98.5%); if the true coverage is 95% a coefficient fails with
// probability 0.12% (binomialTwoSided, asserted below). An interval
// calibrated to 90% coverage passes one check with probability 18% (all
// three coefficients of a case 0.6%), one calibrated to 99% with
// probability 21%. The table below (1000 datasets, acceptance 93–97%) is
// the check of the 93–97% requirement; this one guards against
// regressions without alarming on noise (it was [369, 391], 0.84% per
// check and 18% over the 24 checks, and a change of the seeded noise draws
// alone tripped it at 367).
//
// The always-on cases are four FM ones and irls at ε = 1, N = 10⁴ with its
// default warm start and with the seed's cold start (--irls-warm-start −1),
// each on the narrow-error design (f ≈ 0: the iterations barely depend on
// their start) and the wide-error one (f ≈ 0.4: without the fixed-point
// extrapolation of IRLS the warm start covered 93%/66%/81%, the cold start
// 63%/19%/40% of the time there, per coefficient, in a 400-dataset run): 8 cases, 24 checks, false alarm
// ≤ 1 − (1 − 0.0012)²⁴ ≈ 2.8% for an arbitrary seed (the seeds are fixed,
// so the test is deterministic), in about 20 s.
//
// With -short only the first two cases run (6 checks, false alarm ≤ 0.7%).
// With DPLEARN_COVERAGE_TABLE=1 it runs the full table of docs/inference.md:
// ε ∈ {0.5, 1, 2}, N ∈ {10⁴, 10⁵}, five FM mechanism/model pairs and irls
// with the warm start and the cold start (robust; rows simulated, so the
// slowest part), 1000 datasets each, acceptance [930, 970] per coefficient
// (false alarm 0.31% per check at 95% true coverage), and prints the table;
// DPLEARN_COVERAGE_ONLY=irls restricts the table to the irls rows,
// DPLEARN_COVERAGE_ONLY=irls-gradient to the gradient form's (an option).
func TestCoverage(t *testing.T) {
	if fa := binomialTwoSided(400, 366, 394, 0.95); fa > 0.0012 {
		t.Fatalf("stated false-alarm rate of the quick check is wrong: %v", fa)
	}
	if p := 1 - binomialTwoSided(400, 366, 394, 0.90); p > 0.181 {
		t.Fatalf("the quick check would pass 90%% coverage with probability %v", p)
	}
	if fa := binomialTwoSided(1000, 930, 970, 0.95); fa > 0.004 {
		t.Fatalf("stated false-alarm rate of the table check is wrong: %v", fa)
	}
	cases := []coverageCase{
		{"gaussian-fm", regress.Linear, 1, 10000, 0, false, ""},
		{"fm", regress.Logistic, 2, 100000, 0, false, ""},
		{"relaxed-fm", regress.Linear, 0.5, 100000, 0, false, ""},
		{"gaussian-fm", regress.Logistic, 0.5, 10000, 0, false, ""},
	}
	reps, boot, lo, hi := 400, 600, 366, 394
	table := os.Getenv("DPLEARN_COVERAGE_TABLE") == "1"
	only := os.Getenv("DPLEARN_COVERAGE_ONLY")
	if only != "" && only != "irls" && only != "irls-gradient" {
		t.Fatalf("DPLEARN_COVERAGE_ONLY must be irls, irls-gradient or unset, got %q", only)
	}
	if table {
		cases = nil
		for _, m := range []struct {
			mech string
			kind regress.Kind
		}{{"gaussian-fm", regress.Linear}, {"fm", regress.Linear}, {"relaxed-fm", regress.Linear}, {"gaussian-fm", regress.Logistic}, {"fm", regress.Logistic}} {
			for _, n := range []int64{10000, 100000} {
				for _, eps := range []float64{0.5, 1, 2} {
					cases = append(cases, coverageCase{m.mech, m.kind, eps, n, 0, false, ""})
				}
			}
		}
		reps, boot, lo, hi = 1000, 1000, 930, 970
		fmt.Println("| mechanism | model | ε | N | coefficient | nominal | achieved | mean width | non-private width | ratio |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|---|")
	}
	if table {
		if only != "" {
			cases = nil
		}
		variants := []struct {
			warm float64
			form string
		}{{0, ""}, {-1, ""}}
		if only == "irls-gradient" { // the gradient form (an option), after a warm start
			variants = []struct {
				warm float64
				form string
			}{{0, regress.IRLSFormGradient}}
		}
		for _, wide := range []bool{false, true} {
			for _, v := range variants {
				for _, n := range []int64{10000, 100000} {
					for _, eps := range []float64{0.5, 1, 2} {
						cases = append(cases, coverageCase{"irls", regress.Robust, eps, n, v.warm, wide, v.form})
					}
				}
			}
		}
	} else if testing.Short() {
		// -short (CI's race run): the two cheapest cases, still able to fail.
		cases = cases[:2]
	} else {
		for _, wide := range []bool{false, true} {
			cases = append(cases, coverageCase{"irls", regress.Robust, 1, 10000, 0, wide, ""}, coverageCase{"irls", regress.Robust, 1, 10000, -1, wide, ""})
		}
	}
	for ci, c := range cases {
		var r coverageResult
		if c.kind == regress.Robust {
			r = runCoverageIRLS(t, c.robustDesign(), regress.IRLSOptions{WarmStart: c.warm, Form: c.form}, c.epsilon, c.n, reps, boot, uint64(ci)+11)
		} else {
			r = runCoverage(t, c, reps, boot, uint64(ci)+11)
		}
		for i := range r.covered {
			if table {
				fmt.Printf("| %s | %s | %g | %d | %d | 95%% | %.1f%% | %.4g | %.4g | %.2f |\n", c.label(), c.kind, c.epsilon, c.n, i,
					100*float64(r.covered[i])/float64(r.total[i]), r.width[i], r.npWidth[i], r.width[i]/r.npWidth[i])
			}
			t.Logf("%s %s ε=%g N=%d coefficient %d: %d of %d intervals covered the truth", c.label(), c.kind, c.epsilon, c.n, i, r.covered[i], r.total[i])
			if r.covered[i] < lo || r.covered[i] > hi {
				t.Errorf("%s %s ε=%g N=%d coefficient %d: %d of %d intervals covered the truth, want %d–%d",
					c.label(), c.kind, c.epsilon, c.n, i, r.covered[i], r.total[i], lo, hi)
			}
		}
	}
}
