package experiment

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUtilityExperiment runs `experiment utility` once on the real example
// data (skipped with -short or without ../shared/data) and checks what does
// not depend on the noise: every panel and series is there; noise-free, the
// Chebyshev quadratic at the default range R = 4 is closer to the MLE than
// Taylor on SmokeBan and CPS1988 (0.13 vs 0.31 and 0.15 vs 0.37 measured);
// the exact LAD fit's MAE ratio is 1; the goals are stated as claims.
func TestUtilityExperiment(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "data")
	if _, err := os.Stat(dir); err != nil || testing.Short() {
		t.Skip("example data not available or -short")
	}
	out := t.TempDir()
	res, err := Run(context.Background(), "utility", Options{Out: out, DataDir: dir, Runs: 1, Seeded: true, Seed: 5, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	get := func(panel, series, metric string, x float64) float64 {
		t.Helper()
		return rowMean(t, r, panel, series, metric, x)
	}
	for _, ds := range []string{"smokeban", "cps1988-highwage"} {
		tay, cheb := get("range "+ds, uTaylor, "relerr", 4), get("range "+ds, uCheb, "relerr", 4)
		if !(cheb < 0.6*tay) {
			t.Errorf("%s: noise-free relative error Chebyshev %v, Taylor %v: want Chebyshev < 0.6×", ds, cheb, tay)
		}
		for _, eps := range utilityEps {
			get("logit "+ds, uGFMCheb, "logloss", eps)
			get("logit "+ds, uGFMTay, "accuracy", eps)
		}
	}
	for _, ds := range []string{"cps1988", "cps1988+outliers", "diabetes"} {
		for _, eps := range utilityEps {
			if v := get("robust "+ds, uLAD, "mae_ratio", eps); v != 1 {
				t.Errorf("%s: LAD's ratio to itself is %v", ds, v)
			}
			for _, s := range []string{uGFM, uIRLSOld, uIRLSWarm, uIRLSNew, uLS} {
				if v := get("robust "+ds, s, "mae_ratio", eps); !(v > 0.8 && v < 5) {
					t.Errorf("%s %s ε=%v: MAE ratio %v out of any plausible range", ds, s, eps, v)
				}
			}
		}
	}
	for _, p := range []string{"ridge", "split", "ball"} {
		get(p, epsName(0.1), "mse_ratio", map[string]float64{"ridge": 4, "split": 0.5, "ball": 0}[p])
	}
	// The DP-IRLS sweeps around the defaults, and the rules' own points on
	// diabetes.
	for p, x := range map[string]float64{"floor": 0.1, "warm": 0.3, "iters": 8, "irls-split": 0.8, "floor diabetes": 0.01, "iters diabetes": 0.5} {
		get(p, epsName(1), "mae_ratio", x)
	}
	claims := 0
	for _, c := range r.Claims {
		if strings.HasPrefix(c.Paper, "goal:") {
			claims++
		}
	}
	if claims < 7 {
		t.Errorf("%d goal claims, want the issue's goals on every dataset", claims)
	}
	for _, f := range []string{"utility.csv", "utility.md", "utility-1.png", "utility-2.png", "utility-3.png"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing output %s", f)
		}
	}
}

// rowMean returns the mean of the result's row at (panel, series, metric,
// x), failing the test when there is none.
func rowMean(t testing.TB, r *Result, panel, series, metric string, x float64) float64 {
	t.Helper()
	for _, row := range r.Rows {
		if row.Panel == panel && row.Series == series && row.Metric == metric && row.X == x {
			return row.Mean
		}
	}
	t.Fatalf("no row %s / %s / %s at %v", panel, series, metric, x)
	return 0
}
