package regress

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/noise"
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
