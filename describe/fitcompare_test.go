package describe

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/exampledata"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// fitRMSE fits gaussian-fm (ε = 1, δ = 1e-6) on the training rows of the
// CPS table encoded with s and returns the test RMSE of log(wage), in log
// dollars (the same units for every schema), for each split.
func fitRMSE(t *testing.T, s *schema.Schema, logWage []float64, splits int, seed uint64) []float64 {
	t.Helper()
	b, _ := exampledata.File("CPS1988.csv")
	tab, _, err := dataset.LoadReader(context.Background(), bytes.NewReader(b), "CPS1988.csv", s, dataset.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	n, k := tab.N(), tab.K
	est, err := regress.New("gaussian-fm")
	if err != nil {
		t.Fatal(err)
	}
	lo, hi := s.Target.Range[0], s.Target.Range[1]
	var out []float64
	for sp := range splits {
		rng := rand.New(rand.NewPCG(seed, uint64(sp)))
		perm := rng.Perm(n)
		nTest := n / 5
		m := suffstat.New(k)
		m.SetWorkers(1)
		var train []float64
		for _, r := range perm[nTest:] {
			train = append(train, tab.Row(r)...)
		}
		if err := m.AddRows(train); err != nil {
			t.Fatal(err)
		}
		res, err := est.Fit(context.Background(), regress.Data{Stats: m, Rows: train}, regress.Config{
			Kind: regress.Linear, Epsilon: 1, Delta: 1e-6, Lambda: -1, Source: noise.NewInsecureSeeded(seed*1000 + uint64(sp)),
		})
		if err != nil {
			t.Fatal(err)
		}
		se := 0.0
		for _, r := range perm[:nTest] {
			p := regress.Score(regress.Linear, res.Coef, tab.Row(r))
			pred := lo + (p+1)/2*(hi-lo)
			d := pred - logWage[r]
			se += d * d
		}
		out = append(out, math.Sqrt(se/float64(nTest)))
	}
	return out
}

func mean(x []float64) float64 {
	s := 0.0
	for _, v := range x {
		s += v
	}
	return s / float64(len(x))
}

// TestSuggestCPSFit: a gaussian-fm fit (ε = 1) with the schema suggested
// at ε = 0.1 has a test RMSE within 1.1× that of the fit with the
// hand-written schema, averaged over the same splits, for each of several
// suggestions.
func TestSuggestCPSFit(t *testing.T) {
	path, recs := cpsFile(t)
	var logWage []float64
	for _, r := range recs[1:] {
		v, _ := strconv.ParseFloat(r[0], 64)
		logWage = append(logWage, math.Log(v))
	}
	hb, _ := exampledata.Schema("cps1988")
	hand, err := schema.Parse(hb)
	if err != nil {
		t.Fatal(err)
	}
	splits, suggestions := 10, 5
	if testing.Short() {
		splits, suggestions = 4, 2
	}
	ref := mean(fitRMSE(t, hand, logWage, splits, 7))
	for r := range suggestions {
		sg := suggestFile(t, path, cpsSuggestOptions(0.1), noise.NewInsecureSeeded(uint64(500+r)))
		if err := sg.Schema.Validate(); err != nil {
			t.Fatalf("suggestion %d: %v", r, err)
		}
		got := mean(fitRMSE(t, sg.Schema, logWage, splits, 7))
		b, _ := sg.Marshal()
		t.Logf("suggestion %d: RMSE %.4f vs hand-written %.4f (ratio %.3f)\n%s", r, got, ref, got/ref, b)
		if got > 1.1*ref {
			t.Errorf("suggestion %d: RMSE %.4f > 1.1 × %.4f (hand-written schema)", r, got, ref)
		}
	}
}
