package regress

import (
	"context"
	"fmt"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
)

// TestAutoRule pins auto's public rule with known answers computed by hand
// from its formula (regress/auto.go): noisygd's Huber loss exactly where
// 8 ≤ N·ε/d ≤ 16000, gaussian-fm elsewhere and without a finite ε > 0.
func TestAutoRule(t *testing.T) {
	for _, tc := range []struct {
		n     int64
		d     int
		eps   float64
		huber bool
	}{
		{353, 11, 0.1, false},  // diabetes ε = 0.1: N·ε/d = 3.21
		{79, 10, 1, false},     // 7.9, just below
		{80, 10, 1, true},      // 8
		{353, 11, 0.5, true},   // 16.05
		{22522, 9, 2, true},    // CPS1988 ε = 2: 5005
		{160000, 10, 1, true},  // 16000
		{160001, 10, 1, false}, // just above
		{22522, 9, 8, false},   // CPS1988 ε = 8: 20020
		{1000, 5, 0, false},    // no ε
		{1000, 5, math.Inf(1), false},
	} {
		want := AutoLeastSquaresPath
		if tc.huber {
			want = AutoHuberPath
		}
		if got := AutoPath(tc.n, tc.d, tc.eps); got != want {
			t.Errorf("N=%d d=%d ε=%v: AutoPath = %q, want %q", tc.n, tc.d, tc.eps, got, want)
		}
	}
	if AutoHuberPath != "noisygd" || AutoLeastSquaresPath != "gaussian-fm" {
		t.Errorf("auto's paths are %q and %q", AutoHuberPath, AutoLeastSquaresPath)
	}
}

// TestAutoPaths checks that auto is exactly the mechanism its rule names,
// so that its printed guarantee is that mechanism's (a public rule costs
// nothing): on both sides of the Huber range auto's coefficients and
// releases equal gaussian-fm's with the same seed, and inside it noisygd's
// with its defaults (Huber's loss), bit for bit; the report names the rule
// and N·ε/d. On the least-squares path the guarantee is
// also recomputed from the printed noise scales: μ =
// JointCalibrationSensitivity(τ1, τ2) and the analytic Gaussian δ at the
// printed ε must be ≤ the printed δ and use it up (≥ 0.99δ). (noisygd's
// printed Huber guarantee is recomputed from its formula by
// TestPrintedGuaranteeIsExactProfile.)
func TestAutoPaths(t *testing.T) {
	for _, tc := range []struct {
		eps, delta float64
		n, d       int
		huber      bool
	}{{0.1, 1e-5, 300, 6, false}, {4, 1e-5, 30000, 6, false}, {1, 1e-6, 1500, 9, true}, {0.5, 1e-5, 4000, 12, true}} {
		rows, _ := xpRows(Linear, tc.n, tc.d, 3)
		data := xpData(t, rows, tc.d+1)
		cfg := Config{Kind: Linear, Epsilon: tc.eps, Delta: tc.delta, Lambda: -1, Source: noise.NewInsecureSeeded(2)}
		res, err := autoEstimator{}.Fit(context.Background(), data, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ref := cfg
		ref.Source = noise.NewInsecureSeeded(2)
		var want *Result
		if tc.huber {
			want, err = noisyGD{}.Fit(context.Background(), data, ref)
		} else {
			want, err = gaussianFM{}.Fit(context.Background(), data, ref)
		}
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res.Coef, want.Coef) {
			t.Errorf("N=%d ε=%v: coefficients %v, the chosen mechanism's %v", tc.n, tc.eps, res.Coef, want.Coef)
		}
		p, q := res.Privacy, want.Privacy
		if !reflect.DeepEqual(p.Releases, q.Releases) || p.Accountant != q.Accountant || p.Epsilon != q.Epsilon || p.Delta != q.Delta || p.WhitenedSensitivity != q.WhitenedSensitivity {
			t.Errorf("N=%d ε=%v: auto's guarantee differs from the chosen mechanism's:\n%+v\n%+v", tc.n, tc.eps, p, q)
		}
		path, mech := "least squares by ", AutoLeastSquaresPath
		if tc.huber {
			path, mech = "so Huber's loss by noisygd (", AutoHuberPath
		}
		r := float64(tc.n) * tc.eps / float64(tc.d)
		if !strings.HasPrefix(p.Mechanism, fmt.Sprintf("auto: N·ε/d = %.4g is ", r)) || !strings.Contains(p.Mechanism, path) || !strings.HasSuffix(p.Mechanism, q.Mechanism) {
			t.Errorf("N=%d ε=%v: mechanism line %q", tc.n, tc.eps, p.Mechanism)
		}
		if len(p.PostProcessing) == 0 || p.PostProcessing[0] != autoRuleLine(mech) {
			t.Errorf("N=%d ε=%v: no rule line first in %q", tc.n, tc.eps, p.PostProcessing)
		}
		if tc.huber {
			continue
		}
		if len(p.Releases) != 2 {
			t.Fatalf("least-squares path: %d releases", len(p.Releases))
		}
		mu, err := JointCalibrationSensitivity(Linear, tc.d, int64(tc.n), TaylorQuadratic, p.Releases[0].Scale, p.Releases[1].Scale)
		if err != nil {
			t.Fatal(err)
		}
		got, err := accounting.AnalyticGaussianDelta(tc.eps, 1, mu)
		if err != nil {
			t.Fatal(err)
		}
		if got > tc.delta || got < 0.99*tc.delta {
			t.Errorf("ε=%v: recomputed δ = %v for printed δ = %v (μ %v)", tc.eps, got, tc.delta, mu)
		}
	}
}

// TestAutoLogistic: on logistic models auto is noisygd with its defaults
// (the clipped gradient) at every N, d and ε: the same coefficients bit
// for bit and the same guarantee, its report naming the rule.
func TestAutoLogistic(t *testing.T) {
	for _, tc := range []struct {
		eps float64
		n   int
	}{{0.1, 300}, {1, 3000}, {8, 20000}} {
		rows, _ := xpRows(Logistic, tc.n, 4, 5)
		data := xpData(t, rows, 5)
		cfg := Config{Kind: Logistic, Epsilon: tc.eps, Delta: 1e-6, Lambda: -1, Source: noise.NewInsecureSeeded(3)}
		res, err := autoEstimator{}.Fit(context.Background(), data, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ref := cfg
		ref.Source = noise.NewInsecureSeeded(3)
		want, err := noisyGD{}.Fit(context.Background(), data, ref)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(res.Coef, want.Coef) {
			t.Errorf("N=%d ε=%v: coefficients %v, noisygd's %v", tc.n, tc.eps, res.Coef, want.Coef)
		}
		p, q := res.Privacy, want.Privacy
		if !reflect.DeepEqual(p.Releases, q.Releases) || p.Accountant != q.Accountant || p.Epsilon != q.Epsilon || p.Delta != q.Delta {
			t.Errorf("N=%d ε=%v: auto's guarantee differs from noisygd's:\n%+v\n%+v", tc.n, tc.eps, p, q)
		}
		if p.Mechanism != "auto: logistic regression by "+q.Mechanism || !strings.Contains(q.Mechanism, "clipped to norm c = 0.5") {
			t.Errorf("N=%d ε=%v: mechanism line %q", tc.n, tc.eps, p.Mechanism)
		}
		if len(p.PostProcessing) == 0 || p.PostProcessing[0] != autoLogisticRuleLine {
			t.Errorf("N=%d ε=%v: no rule line first in %q", tc.n, tc.eps, p.PostProcessing)
		}
		if got := AutoPathFor(Logistic, int64(tc.n), 4, tc.eps); got != "noisygd" {
			t.Errorf("AutoPathFor(logistic) = %q", got)
		}
	}
}

// TestAutoRefuses: auto fits linear and logistic models, needs δ and the
// rows (every path) and takes none of its mechanisms' options.
func TestAutoRefuses(t *testing.T) {
	rows, _ := xpRows(Linear, 500, 4, 1)
	data := xpData(t, rows, 5)
	lrows, _ := xpRows(Logistic, 500, 4, 1)
	ldata := xpData(t, lrows, 5)
	for _, tc := range []struct {
		name string
		data Data
		cfg  Config
	}{
		{"robust", data, Config{Kind: Robust, Epsilon: 1, Delta: 1e-6, Source: noise.NewInsecureSeeded(1)}},
		{"logistic clip", ldata, Config{Kind: Logistic, Epsilon: 1, Delta: 1e-6, Huber: 0.2, Source: noise.NewInsecureSeeded(1)}},
		{"logistic no delta", ldata, Config{Kind: Logistic, Epsilon: 1, Source: noise.NewInsecureSeeded(1)}},
		{"no delta", data, Config{Kind: Linear, Epsilon: 1, Source: noise.NewInsecureSeeded(1)}},
		{"no rows", Data{Stats: data.Stats}, Config{Kind: Linear, Epsilon: 1, Delta: 1e-6, Source: noise.NewInsecureSeeded(1)}},
		{"split", data, Config{Kind: Linear, Epsilon: 1, Delta: 1e-6, Split: 0.3, Source: noise.NewInsecureSeeded(1)}},
		{"solve radius", data, Config{Kind: Linear, Epsilon: 1, Delta: 1e-6, SolveRadius: 2, Source: noise.NewInsecureSeeded(1)}},
		{"eigen floor", data, Config{Kind: Linear, Epsilon: 1, Delta: 1e-6, EigenFloor: 1, Source: noise.NewInsecureSeeded(1)}},
		{"huber", data, Config{Kind: Linear, Epsilon: 1, Delta: 1e-6, Huber: 0.3, Source: noise.NewInsecureSeeded(1)}},
		{"squared loss", data, Config{Kind: Linear, Epsilon: 1, Delta: 1e-6, Huber: -1, Source: noise.NewInsecureSeeded(1)}},
		{"iterations", data, Config{Kind: Linear, Epsilon: 1, Delta: 1e-6, NoisyGD: NoisyGDOptions{Iterations: 50}, Source: noise.NewInsecureSeeded(1)}},
	} {
		if _, err := (autoEstimator{}).Fit(context.Background(), tc.data, tc.cfg); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
