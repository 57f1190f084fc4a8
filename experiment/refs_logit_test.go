package experiment

import (
	"context"
	"math"
	"testing"
)

// TestRefsLogitExperiments runs `experiment utility-refs-logistic` and
// `experiment radius-sweep` once on small tables (real tables cut to 800
// rows, synthetic ones of 200) and checks what holds whatever the noise:
// every series has its metrics at every ε on every task (no NaN), log-loss
// is positive and accuracy in [0, 1], and every claim is stated (4 tasks ×
// 4 ε logistic, 3 × 4 linear).
func TestRefsLogitExperiments(t *testing.T) {
	opt := Options{Out: t.TempDir(), Runs: 1, Seeded: true, Seed: 11, Workers: 2, synthN: 200}
	res, err := Run(context.Background(), "utility-refs-logistic", opt)
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	for _, task := range refsLogisticTables {
		for _, eps := range refsEps {
			for _, s := range refsLogitSeries() {
				if v := rowMean(t, r, task, s, "logloss", eps); !(v > 0) {
					t.Errorf("%s %s ε=%g: log-loss %v", task, s, eps, v)
				}
				if v := rowMean(t, r, task, s, "accuracy", eps); !(v >= 0 && v <= 1) {
					t.Errorf("%s %s ε=%g: accuracy %v", task, s, eps, v)
				}
			}
		}
	}
	if len(r.Claims) != len(refsLogisticTables)*len(refsEps) {
		t.Errorf("%d logistic claims, want %d", len(r.Claims), len(refsLogisticTables)*len(refsEps))
	}
	res, err = Run(context.Background(), "radius-sweep", opt)
	if err != nil {
		t.Fatal(err)
	}
	r = res[0]
	for _, task := range refsLinearTables {
		for _, eps := range refsEps {
			for _, s := range refsRadiusSeries {
				if v := rowMean(t, r, task, s, "excess_rmse", eps); math.IsNaN(v) {
					t.Errorf("%s %s ε=%g: NaN", task, s, eps)
				}
			}
		}
	}
	if len(r.Claims) != len(refsLinearTables)*len(refsEps) {
		t.Errorf("%d radius claims, want %d", len(r.Claims), len(refsLinearTables)*len(refsEps))
	}
}
