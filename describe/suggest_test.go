package describe

import (
	"bytes"
	"context"
	"encoding/csv"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/exampledata"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/schema"
)

// cpsFile writes the embedded CPS1988 table to a temporary file.
func cpsFile(t testing.TB) (string, [][]string) {
	t.Helper()
	b, err := exampledata.File("CPS1988.csv")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "cps.csv")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	return p, recs
}

// cpsSuggestOptions are the public facts a user of CPS1988 states: which
// columns are categorical and their possible levels (from the survey's
// codebook), the log transform of the wage, outer bounds.
func cpsSuggestOptions(eps float64) SuggestOptions {
	return SuggestOptions{
		Epsilon: eps, Target: "wage",
		Categorical: []string{"ethnicity", "smsa", "region", "parttime"},
		Levels: map[string][]string{
			"ethnicity": {"cauc", "afam", "other"},
			"smsa":      {"no", "yes"},
			"region":    {"northeast", "midwest", "south", "west"},
			"parttime":  {"no", "yes"},
		},
		Transforms: map[string]schema.Transform{"wage": schema.TransformLog},
		// Generous outer bounds anyone can state without the data: a
		// weekly wage between $1 and $100,000, at most 30 years of
		// schooling, potential experience between −20 and 100 years.
		Outer: map[string][2]float64{"wage": {1, 1e5}, "education": {0, 30}, "experience": {-20, 100}},
	}
}

func suggestFile(t testing.TB, path string, opt SuggestOptions, src noise.Source) *Suggestion {
	t.Helper()
	var s *Suggester
	err := ReadRaw(context.Background(), path, dataset.Options{Workers: 1}, func(h, f []string) error {
		if f == nil {
			var err error
			s, err = NewSuggester(h, opt)
			return err
		}
		return s.Add(f)
	})
	if err != nil {
		t.Fatal(err)
	}
	sg, err := s.Suggest(src)
	if err != nil {
		t.Fatal(err)
	}
	return sg
}

// coverage returns the share of the column's (transformed) values inside r.
func coverage(recs [][]string, col int, tr schema.Transform, r [2]float64) float64 {
	in := 0
	for _, rec := range recs[1:] {
		v, _ := strconv.ParseFloat(rec[col], 64)
		v, _ = applyTransform(tr, v)
		if v >= r[0] && v <= r[1] {
			in++
		}
	}
	return float64(in) / float64(len(recs)-1)
}

// TestSuggestCPSCoverage: at ε = 0.1 the suggested ranges hold at least
// 98% of each numeric column's values. The mechanism is random, so the
// claim is that a run fails (some column below 98%) with probability at
// most pFail = 2%; the test rejects it when more runs fail than
// Binomial(runs, pFail) exceeds with probability 1e-4 (measured: 2 of
// 300 runs fail).
func TestSuggestCPSCoverage(t *testing.T) {
	path, recs := cpsFile(t)
	runs := 60
	if testing.Short() {
		runs = 5
	}
	cols := map[string]int{}
	for i, h := range recs[0] {
		cols[h] = i
	}
	worst := map[string]float64{}
	failed := 0
	for r := range runs {
		bad := false
		sg := suggestFile(t, path, cpsSuggestOptions(0.1), noise.NewInsecureSeeded(uint64(1000+r)))
		if sg.Epsilon > 0.1*(1+1e-12) || sg.Delta != 0 {
			t.Fatalf("run %d: spent (%v, %v), want ≤ (0.1, 0)", r, sg.Epsilon, sg.Delta)
		}
		check := func(name string, tr schema.Transform, rg *[2]float64) {
			c := coverage(recs, cols[name], tr, *rg)
			if c < 0.98 {
				bad = true
				t.Logf("run %d: %s range %v holds %.4f of the values (< 0.98)", r, name, *rg, c)
			}
			if w, ok := worst[name]; !ok || c < w {
				worst[name] = c
			}
			if r < 3 {
				t.Logf("run %d: %s %v coverage %.4f", r, name, *rg, c)
			}
		}
		check("wage", schema.TransformLog, sg.Schema.Target.Range)
		for _, f := range sg.Schema.Features {
			if f.Range != nil {
				check(f.Name, f.Transform, f.Range)
			}
		}
		if bad {
			failed++
		}
	}
	if c := binomialCritical(runs, 0.02, 1e-4); failed > c {
		t.Errorf("%d of %d runs gave a range holding < 98%% of a column; more than %d has probability < 1e-4 if runs fail at rate ≤ 2%%", failed, runs, c)
	}
	t.Logf("worst coverage over %d runs: %v", runs, worst)
}

// binomialCritical returns the smallest c with P(Binomial(n, p) > c) ≤ alpha.
func binomialCritical(n int, p, alpha float64) int {
	pmf := make([]float64, n+1)
	for k := 0; k <= n; k++ {
		lg, _ := math.Lgamma(float64(n + 1))
		l1, _ := math.Lgamma(float64(k + 1))
		l2, _ := math.Lgamma(float64(n - k + 1))
		pmf[k] = math.Exp(lg - l1 - l2 + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
	}
	for c := 0; c <= n; c++ {
		tail := 0.0
		for k := c + 1; k <= n; k++ {
			tail += pmf[k]
		}
		if tail <= alpha {
			return c
		}
	}
	return n
}

// TestLevelThreshold: τ is the least threshold with P(1 + Z ≥ τ) ≤ δ for
// the discrete Laplace Z of scale t (P(Z ≥ k) = α^k/(1+α)), recomputed in
// big-float-free closed form.
func TestLevelThreshold(t *testing.T) {
	for _, tc := range []struct{ t, delta float64 }{{1, 1e-6}, {13.3, 1e-9}, {560, 2.5e-7}, {2, 0.1}} {
		tau := levelThreshold(tc.t, tc.delta)
		alpha := math.Exp(-1 / tc.t)
		p := func(k int64) float64 { return math.Pow(alpha, float64(k)) / (1 + alpha) }
		if p(tau-1) > tc.delta {
			t.Errorf("t=%v δ=%v: τ=%d releases a singleton with probability %v > δ", tc.t, tc.delta, tau, p(tau-1))
		}
		if tau > 1 && p(tau-2) <= tc.delta {
			t.Errorf("t=%v δ=%v: τ=%d is not the least threshold", tc.t, tc.delta, tau)
		}
	}
}

// TestSuggestAccounting: the spend per part is recomputed: a numeric
// column with an outer bound spends 2u, without one 2.25u, a categorical
// one ¼u, u = ε / total weight; the parts compose to at most ε (and within
// 1e-12 of it), δ to the given δ split over the thresholded columns, and
// the level counts' noise scale is levelSens/ε_c = 2/ε_c.
func TestSuggestAccounting(t *testing.T) {
	path, _ := cpsFile(t)
	opt := cpsSuggestOptions(0.3)
	delete(opt.Outer, "education") // this column also spends on a median
	delete(opt.Levels, "region")   // thresholded
	opt.Delta = 1e-6
	sg := suggestFile(t, path, opt, noise.NewInsecureSeeded(1))
	units := 2.0 + 2 + 2.25 + 4*0.25
	u := 0.3 / units
	sum, dsum := 0.0, 0.0
	for _, p := range sg.Parts {
		want := u
		if strings.HasPrefix(p.What, "median") || strings.HasPrefix(p.What, "levels") {
			want = u / 4
		}
		if p.Epsilon > want || p.Epsilon < want*(1-1e-12) {
			t.Errorf("%s %s: ε = %v, want %v", p.Column, p.What, p.Epsilon, want)
		}
		if strings.HasPrefix(p.What, "levels") {
			if r := p.Scale * p.Epsilon / 2; math.Abs(r-1) > 1e-12 {
				t.Errorf("%s: count noise scale %v, want 2/ε = %v", p.Column, p.Scale, 2/p.Epsilon)
			}
		}
		sum += p.Epsilon
		dsum += p.Delta
	}
	if len(sg.Parts) != 11 || sum > 0.3 || sum < 0.3*(1-1e-12) || sg.Epsilon != sum || dsum > 1e-6 || dsum < 1e-6*(1-1e-12) || sg.Delta != dsum {
		t.Errorf("%d parts, Σε = %v (reported %v), Σδ = %v (reported %v)", len(sg.Parts), sum, sg.Epsilon, dsum, sg.Delta)
	}
}
