package describe

import (
	"bytes"
	"context"
	"encoding/csv"
	"os"
	"path/filepath"
	"strconv"
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
// 98% of each numeric column's values, in every one of several runs.
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
	for r := range runs {
		sg := suggestFile(t, path, cpsSuggestOptions(0.1), noise.NewInsecureSeeded(uint64(1000+r)))
		if sg.Epsilon > 0.1*(1+1e-12) || sg.Delta != 0 {
			t.Fatalf("run %d: spent (%v, %v), want ≤ (0.1, 0)", r, sg.Epsilon, sg.Delta)
		}
		check := func(name string, tr schema.Transform, rg *[2]float64) {
			c := coverage(recs, cols[name], tr, *rg)
			if c < 0.98 {
				t.Errorf("run %d: %s range %v holds %.4f of the values, want ≥ 0.98", r, name, *rg, c)
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
	}
	t.Logf("worst coverage over %d runs: %v", runs, worst)
}
