package regress

import (
	"context"
	"math"
	"regexp"
	"strconv"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
)

// TestAutoScoreSensitivity attacks the score release with the extremal
// pair of the derivation (regress/auto.go): a row whose loss is 0 under
// every candidate replaced by one whose loss is 1 under every candidate
// (y = 1 against y = −1 where every candidate predicts ≥ 1; the raw
// squared error 4 is clipped to b = AutoLossBound = ¼). The computed
// scores must move by exactly b/N each, b√m/N in L2, within
// AutoScoreSensitivity, which must itself be within 10⁻⁶ of b√m/N.
func TestAutoScoreSensitivity(t *testing.T) {
	const n, k = 1000, 3
	ws := [][]float64{{2, 0}, {5, 1}, {1.5, -1}}
	rows := make([]float64, n*k)
	for i := 0; i < n; i++ {
		rows[i*k], rows[i*k+1], rows[i*k+2] = 0.6, 0.2, 0.5
	}
	rows[0], rows[1], rows[2] = 1, 0, 1 // every candidate predicts ≥ 1: loss 0
	other := append([]float64(nil), rows...)
	other[2] = -1 // loss min(4, ¼) = ¼
	a, b := autoScores(rows, k, ws), autoScores(other, k, ws)
	l2 := 0.0
	for j := range a {
		if diff := b[j] - a[j]; math.Abs(diff-0.25/n) > 1e-12 {
			t.Errorf("candidate %d: score moved by %v, want b/N = %v", j, diff, 0.25/n)
		}
		l2 += (b[j] - a[j]) * (b[j] - a[j])
	}
	sens, err := AutoScoreSensitivity(n, len(ws))
	if err != nil {
		t.Fatal(err)
	}
	want := 0.25 * math.Sqrt(float64(len(ws))) / n
	if math.Sqrt(l2) > sens || sens < want || sens > want*(1+1e-6) {
		t.Errorf("L2 move %v, AutoScoreSensitivity %v, √m/N = %v", math.Sqrt(l2), sens, want)
	}
}

// TestAutoGuarantee recomputes auto's printed guarantee from the formula of
// its derivation, from the released noise scales alone: μ_FM =
// JointCalibrationSensitivity(τ1, τ2), μ_s = (Δ_s with grid slack and
// margin)/σ_s with Δ_s = ¼√m/N, μ = √(μ_FM² + μ_s²), and the analytic
// Gaussian δ at the printed ε must be ≤ the printed δ and use it up (≥ 0.99δ).
// The score share is AutoScoreShare of μ²; the release's τ are larger than
// gaussian-fm's alone by 1/√(1 − share).
func TestAutoGuarantee(t *testing.T) {
	for _, tc := range []struct {
		eps, delta float64
		n, d       int
	}{{0.1, 1e-5, 4000, 6}, {1, 1e-6, 1500, 9}, {2, 1e-5, 800, 12}} {
		rows, _ := xpRows(Linear, tc.n, tc.d, 3)
		data := xpData(t, rows, tc.d+1)
		cfg := Config{Kind: Linear, Epsilon: tc.eps, Delta: tc.delta, Lambda: -1, Source: noise.NewInsecureSeeded(2)}
		res, err := autoEstimator{}.Fit(context.Background(), data, cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := res.Privacy
		if p.Epsilon != tc.eps || p.Delta != tc.delta || len(p.Releases) != 3 {
			t.Fatalf("report (%v, %v) with %d releases", p.Epsilon, p.Delta, len(p.Releases))
		}
		tau1, tau2, sigma := p.Releases[0].Scale, p.Releases[1].Scale, p.Releases[2].Scale
		m := len(AutoFloorFactors)
		muFM, err := JointCalibrationSensitivity(Linear, tc.d, int64(tc.n), TaylorQuadratic, tau1, tau2)
		if err != nil {
			t.Fatal(err)
		}
		sens := 0.25 * math.Sqrt(float64(m)) / float64(tc.n) * (1 + 1e-6) // ≥ the fp-rounded bound
		muS := noise.GaussianCalibrationSensitivity(sens, sigma, m) / sigma
		mu := math.Hypot(muFM, muS)
		got, err := accounting.AnalyticGaussianDelta(tc.eps, 1, mu)
		if err != nil {
			t.Fatal(err)
		}
		if got > tc.delta || got < 0.99*tc.delta {
			t.Errorf("ε=%v: recomputed δ = %v for printed δ = %v (μ_FM %v, μ_s %v)", tc.eps, got, tc.delta, muFM, muS)
		}
		// The printed μ is the composition's (never smaller than recomputed).
		mm := regexp.MustCompile(`μ = √\(μ_FM² \+ μ_s²\) = ([0-9.e+-]+)`).FindStringSubmatch(p.Accountant)
		if mm == nil {
			t.Fatalf("no μ in the accountant line %q", p.Accountant)
		}
		if printed, _ := strconv.ParseFloat(mm[1], 64); printed < mu*(1-1e-5) {
			t.Errorf("ε=%v: printed μ = %v, recomputed %v", tc.eps, printed, mu)
		}
		if r := muS * muS / (mu * mu); math.Abs(r-AutoScoreShare) > 0.01 {
			t.Errorf("ε=%v: score share of μ² = %v, want %v", tc.eps, r, AutoScoreShare)
		}
		js, err := GaussianFMJointScales(Linear, tc.d, int64(tc.n), TaylorQuadratic, tc.eps, tc.delta, DefaultGaussianFMSplit)
		if err != nil {
			t.Fatal(err)
		}
		if r := tau2 / js.Tau2; math.Abs(r-1/math.Sqrt(1-AutoScoreShare)) > 0.01 {
			t.Errorf("ε=%v: τ2 is %v× gaussian-fm's, want 1/√(1 − share)", tc.eps, r)
		}
		// The coefficients are one candidate's, recomputed from the release.
		w, _, err := res.Released.Objective.Minimize(res.Released.PostProcess())
		if err != nil || math.Abs(w[0]-res.Coef[0]) > 0 {
			t.Errorf("coefficients not a candidate of the release: %v vs %v", w, res.Coef)
		}
	}
}

// TestAutoRefuses: auto is linear only, needs δ and the rows.
func TestAutoRefuses(t *testing.T) {
	rows, _ := xpRows(Linear, 500, 4, 1)
	data := xpData(t, rows, 5)
	for _, tc := range []struct {
		name string
		data Data
		cfg  Config
	}{
		{"logistic", data, Config{Kind: Logistic, Epsilon: 1, Delta: 1e-6, Source: noise.NewInsecureSeeded(1)}},
		{"no delta", data, Config{Kind: Linear, Epsilon: 1, Source: noise.NewInsecureSeeded(1)}},
		{"no rows", Data{Stats: data.Stats}, Config{Kind: Linear, Epsilon: 1, Delta: 1e-6, Source: noise.NewInsecureSeeded(1)}},
	} {
		if _, err := (autoEstimator{}).Fit(context.Background(), tc.data, tc.cfg); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
}
