package regress

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/synth"
)

// xpDomain is the public grid of xpRows: the intercept level 1/√d, d−1
// features binned over [−1/√d, 1/√d], and the target.
func xpDomain(kind Kind, d, bins int) *synth.Domain {
	s := 1 / math.Sqrt(float64(d))
	ax := []synth.Axis{{Name: "(intercept)", Cols: 1, Levels: [][]float64{{s}}}}
	for j := 1; j < d; j++ {
		ax = append(ax, synth.Axis{Name: "x", Lo: -s, Hi: s, Bins: bins})
	}
	if kind == Logistic {
		ax = append(ax, synth.Axis{Name: "y", Cols: 1, Levels: [][]float64{{0}, {1}}})
	} else {
		ax = append(ax, synth.Axis{Name: "y", Lo: -1, Hi: 1, Bins: bins})
	}
	return &synth.Domain{Axes: ax}
}

// exactHistogramFit fits the model on the synthetic data of the true
// (noiseless) histogram, keeping the cells with count ≥ minCount: what the
// baselines compute when the noise vanishes (DPME: minCount 1;
// Filter-Priority with θ = 2 and negligible noise: minCount 2).
func exactHistogramFit(t *testing.T, kind Kind, dom *synth.Domain, rows []float64, minCount int64) []float64 {
	t.Helper()
	h, err := synth.Build(dom, rows)
	if err != nil {
		t.Fatal(err)
	}
	var es []synth.Entry
	for i, c := range h.Cells {
		if h.Counts[i] >= minCount {
			es = append(es, synth.Entry{Cell: c, Value: h.Counts[i], Weight: float64(h.Counts[i])})
		}
	}
	w, _, err := fitSynthetic(context.Background(), kind, synth.SynthesizeEntries(dom, es))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestHistogramBaselinesKnownAnswer: at ε = 10⁴ the noise is negligible,
// so dpme must return the fit on the true histogram's synthetic data, and
// filter-priority (θ = 2, sample size N) the fit on the cells with count
// ≥ 2. Both are computed independently here from synth.Build.
func TestHistogramBaselinesKnownAnswer(t *testing.T) {
	const n, d, bins = 3000, 3, 6
	for _, kind := range []Kind{Linear, Logistic} {
		rows, _ := xpRows(kind, n, d, 5)
		dom := xpDomain(kind, d, bins)
		for _, c := range []struct {
			est      Estimator
			minCount int64
		}{
			{NewDPME(HistogramOptions{Domain: dom}), 1},
			{NewFilterPriority(HistogramOptions{Domain: dom}), 2},
		} {
			res, err := c.est.Fit(context.Background(), xpData(t, rows, d+1),
				Config{Kind: kind, Epsilon: 1e4, Source: noise.NewInsecureSeeded(3)})
			if err != nil {
				t.Fatalf("%s %s: %v", c.est.Name(), kind, err)
			}
			want := exactHistogramFit(t, kind, dom, rows, c.minCount)
			for j := range want {
				if math.Abs(res.Coef[j]-want[j]) > 1e-3*(1+math.Abs(want[j])) {
					t.Errorf("%s %s: coef %d = %.6f, want %.6f", c.est.Name(), kind, j, res.Coef[j], want[j])
				}
			}
			if g := res.Privacy.Guarantee(); g != "10000-DP (pure)" {
				t.Errorf("%s: guarantee %q", c.est.Name(), g)
			}
		}
	}
}

// TestHistogramBaselinesUseful: at a moderate ε and N the baselines' fits
// are closer to the truth than the zero model (they carry signal), and the
// report is public: identical for two datasets of the same size.
func TestHistogramBaselinesUseful(t *testing.T) {
	const n, d = 20000, 3
	for _, mech := range []string{"dpme", "filter-priority"} {
		var texts [2]string
		for i, seed := range []uint64{1, 2} {
			rows, beta := xpRows(Linear, n, d, seed)
			est, err := New(mech)
			if err != nil {
				t.Fatal(err)
			}
			est = NewWithDomain(est, xpDomain(Linear, d, 0))
			res, err := est.Fit(context.Background(), xpData(t, rows, d+1),
				Config{Kind: Linear, Epsilon: 2, Delta: 1e-6, Source: noise.NewInsecureSeeded(7)})
			if err != nil {
				t.Fatalf("%s: %v", mech, err)
			}
			var b strings.Builder
			if err := res.Privacy.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			texts[i] = b.String()
			rel := res.Privacy.Releases
			wantScale := 2 / 2.0 // filter-priority: geometric with α = e^{−ε/2}, scale 2/ε
			if mech == "dpme" {
				wantScale, _ = accounting.LaplaceScale(2, synth.HistogramSensitivity)
			}
			if len(rel) != 1 || rel[0].Sensitivity != 2 || rel[0].Norm != "L1" || rel[0].Scale != wantScale {
				t.Errorf("%s: releases %+v, want one L1 release with sensitivity 2 and scale %v", mech, rel, wantScale)
			}
			if !strings.Contains(texts[i], "2-DP (pure)") || !strings.Contains(texts[i], "δ given was not used") {
				t.Errorf("%s report:\n%s", mech, texts[i])
			}
			mse := func(w []float64) float64 {
				s := 0.0
				for r := 0; r < n; r++ {
					z := rows[r*(d+1) : (r+1)*(d+1)]
					e := z[d] - dot(z[:d], w)
					s += e * e
				}
				return s / n
			}
			if m, m0, mb := mse(res.Coef), mse(make([]float64, d)), mse(beta); !(m < m0) {
				t.Errorf("%s: MSE %.4f not below the zero model's %.4f (truth %.4f)", mech, m, m0, mb)
			}
		}
		if texts[0] != texts[1] {
			t.Errorf("%s: report depends on the data:\n%s\n---\n%s", mech, texts[0], texts[1])
		}
	}
}

// BenchmarkHistogramBaselines times dpme and filter-priority against the
// nonprivate logistic fit on the same rows (the reference: compare the
// ratios of ns/op within one run).
func BenchmarkHistogramBaselines(b *testing.B) {
	const n, d = 20000, 5
	rows, _ := xpRows(Logistic, n, d, 3)
	data := xpData(b, rows, d+1)
	for _, c := range []struct {
		name string
		est  Estimator
	}{
		{"nonprivate", nonPrivateAny{}},
		{"dpme", NewDPME(HistogramOptions{Domain: xpDomain(Logistic, d, 0)})},
		{"filter-priority", NewFilterPriority(HistogramOptions{Domain: xpDomain(Logistic, d, 0)})},
	} {
		b.Run(c.name, func(b *testing.B) {
			cfg := Config{Kind: Logistic, Epsilon: 0.8, Source: noise.NewInsecureSeeded(1)}
			if !c.est.Private() {
				cfg = Config{Kind: Logistic}
			}
			for i := 0; i < b.N; i++ {
				if _, err := c.est.Fit(context.Background(), data, cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestHistogramBaselinesErrors: bad input gets an error naming the
// problem, never a silent answer.
func TestHistogramBaselinesErrors(t *testing.T) {
	const n, d = 200, 3
	rows, _ := xpRows(Linear, n, d, 1)
	good := xpData(t, rows, d+1)
	cfg := Config{Kind: Linear, Epsilon: 1, Source: noise.NewInsecureSeeded(1)}
	wide := &synth.Domain{Axes: []synth.Axis{{Name: "a", Lo: -1, Hi: 1, Bins: 1 << 12}, {Name: "b", Lo: -1, Hi: 1, Bins: 1 << 12}, {Name: "c", Lo: -1, Hi: 1, Bins: 2}, {Name: "y", Lo: -1, Hi: 1, Bins: 2}}}
	bad := append([]float64(nil), rows...)
	bad[1] = 5 // outside the unit-ball bound of the encoding
	for _, c := range []struct {
		name string
		est  Estimator
		data Data
		cfg  Config
		want string
	}{
		{"no rows", NewDPME(HistogramOptions{}), Data{Stats: good.Stats}, cfg, "needs the encoded rows"},
		{"no rows fp", NewFilterPriority(HistogramOptions{}), Data{Stats: good.Stats}, cfg, "needs the encoded rows"},
		{"dense cap", NewDPME(HistogramOptions{Domain: wide}), good, cfg, "the limit is 4194304 (regress.HistogramOptions.MaxCells"},
		{"explicit cap", NewDPME(HistogramOptions{MaxCells: 10}), good, cfg, "would have 16 cells (x0 2 × x1 2 × x2 2 × y 2); the limit is 10"},
		{"grid width", NewDPME(HistogramOptions{Domain: xpDomain(Linear, d+1, 4)}), good, cfg, "covers 5 columns but the rows have 4"},
		// suffstat refuses such rows, so the statistics are the good rows'; the
		// histogram reads the rows and must refuse the bad one itself.
		{"out of range", NewDPME(HistogramOptions{Domain: xpDomain(Linear, d, 4)}), Data{Stats: good.Stats, Rows: bad}, cfg, "outside its public range"},
		{"ε", NewFilterPriority(HistogramOptions{}), good, Config{Kind: Linear, Epsilon: math.Inf(1), Source: cfg.Source}, "ε must be finite"},
		{"θ", NewFilterPriority(HistogramOptions{Theta: 1}), good, cfg, "θ must be ≥ 2"},
		{"robust", NewDPME(HistogramOptions{}), good, Config{Kind: Robust, Epsilon: 1, Source: cfg.Source}, "unknown model kind"},
	} {
		_, err := c.est.Fit(context.Background(), c.data, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
		if c.name == "dense cap" && !errors.Is(err, synth.ErrTooManyCells) {
			t.Errorf("dense cap: %v does not wrap ErrTooManyCells", err)
		}
	}
}

// TestUnitBallDefaultWarns: without a schema the grid is the unit-ball one,
// and the result says so.
func TestUnitBallDefaultWarns(t *testing.T) {
	rows, _ := xpRows(Logistic, 500, 3, 2)
	for _, mech := range []string{"dpme", "filter-priority"} {
		est, _ := New(mech)
		res, err := est.Fit(context.Background(), xpData(t, rows, 4), Config{Kind: Logistic, Epsilon: 1, Source: noise.NewInsecureSeeded(1)})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Warnings) == 0 || !strings.Contains(res.Warnings[0], "no schema given") {
			t.Errorf("%s: warnings %v", mech, res.Warnings)
		}
		if WithSchema(est, nil) == nil || WithSchema(fmEstimator{}, nil) != (fmEstimator{}) {
			t.Error("WithSchema changed a non-histogram estimator")
		}
	}
}

// TestHistogramBaselinesDroppedRecord fits dpme and filter-priority on two
// neighbouring tables from a schema (intercept and categorical axes with
// declared levels): one where the last record was dropped for a missing
// value (the all-zero row the reader keeps) and one where it is a real
// record. Both must give a model: before, the zero row had no cell and the
// first table was refused, so whether a model existed depended on one
// record.
func TestHistogramBaselinesDroppedRecord(t *testing.T) {
	s, err := schema.Parse([]byte(`{"target": {"name": "y", "range": [0, 1]},
	 "features": [{"name": "x", "range": [0, 1]}, {"name": "g", "categories": ["a", "b"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	k := s.Dim() + 1
	enc, err := s.NewEncoder([]string{"y", "x", "g"}, schema.EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	encode := func(y, x float64, g string) []float64 {
		dst := make([]float64, k)
		if err := enc.Encode([][]byte{[]byte(fmt.Sprint(y)), []byte(fmt.Sprint(x)), []byte(g)}, dst); err != nil {
			t.Fatal(err)
		}
		return dst
	}
	var rows []float64
	for i := 0; i < 400; i++ {
		x := float64(i%10) / 10
		g := []string{"a", "b"}[i%2]
		rows = append(rows, encode((x+float64(i%2))/2, x, g)...)
	}
	real := append(append([]float64(nil), rows...), encode(0.25, 0.5, "a")...)
	dropped := append(append([]float64(nil), rows...), make([]float64, k)...)
	for _, mech := range []string{"dpme", "filter-priority"} {
		for name, rs := range map[string][]float64{"real record": real, "dropped record": dropped} {
			est, _ := New(mech)
			est = WithSchema(est, s)
			res, err := est.Fit(context.Background(), xpData(t, rs, k), Config{Kind: Linear, Epsilon: 1, Source: noise.NewInsecureSeeded(1)})
			if err != nil {
				t.Fatalf("%s on the table with a %s: %v", mech, name, err)
			}
			if len(res.Coef) != k-1 {
				t.Fatalf("%s: %d coefficients", mech, len(res.Coef))
			}
		}
	}
	if got := withoutZeroRows(dropped, k); len(got) != len(rows) {
		t.Fatalf("withoutZeroRows kept %d values, want %d", len(got), len(rows))
	}
	if got := withoutZeroRows(rows, k); &got[0] != &rows[0] {
		t.Fatal("withoutZeroRows copied rows that have no zero row")
	}
}
