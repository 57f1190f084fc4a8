package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/exampledata"
)

// writeExample writes an embedded table and its schema to dir.
func writeExample(t *testing.T, dir, name string) (data, sch string) {
	t.Helper()
	ds, err := exampledata.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	data, sch = filepath.Join(dir, name+".csv"), filepath.Join(dir, name+".json")
	if err := os.WriteFile(data, ds.CSV, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(sch, ds.Schema, 0o644); err != nil {
		t.Fatal(err)
	}
	return data, sch
}

// TestNonprivateClassicalSummary: the reference fit prints and stores
// statsmodels' summary quantities (the numbers themselves are checked
// against statsmodels in regress.TestClassicalMatchesStatsmodels); each
// stored row is self-consistent (stat = b/SE, the interval is b ± q·SE with
// the t or normal quantile), HC1 changes the SEs and not the estimates,
// and --cov is refused for a private mechanism.
func TestNonprivateClassicalSummary(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, model, stat string
		wants             []string
	}{
		{"cps1988", "linear", "t", []string{"P>|", "R² 0.4136, adjusted R² 0.4135", "Log-likelihood", "AIC", "BIC"}},
		{"smokeban", "logistic", "z", []string{"P>|z|", "LL-null", "pseudo-R² (McFadden) 0.0517", "deviance", "odds ratio"}},
	} {
		data, sch := writeExample(t, dir, tc.name)
		var ses [2][]float64
		for i, cov := range []string{"nonrobust", "HC1"} {
			model := filepath.Join(dir, tc.name+cov+".json")
			out, _, err := runCLIBoth(t, "fit", "--data", data, "--schema", sch, "--model", tc.model, "--mechanism", "nonprivate", "--cov", cov, "--out", model)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range append(tc.wants, "covariance "+cov) {
				if !strings.Contains(out, w) {
					t.Errorf("%s %s: output lacks %q:\n%s", tc.name, cov, w, out)
				}
			}
			var raw struct {
				Inference coefReport `json:"inference"`
			}
			if err := json.Unmarshal([]byte(readFile(t, model)), &raw); err != nil {
				t.Fatal(err)
			}
			c := raw.Inference.Classical
			if c == nil || c.Stat != tc.stat && cov == "nonrobust" {
				t.Fatalf("%s: stored classical summary %+v", tc.name, c)
			}
			q := 1.959963984540054
			if c.Stat == "t" {
				q = 1.960065 // t(28146), 0.975: within 1e-6 of the normal's
			}
			for _, r := range raw.Inference.Rows {
				if r.Stat == nil || r.PValue == nil {
					t.Fatalf("%s: row %s has no statistic", tc.name, r.Name)
				}
				if math.Abs(*r.Stat-r.Original/r.OriginalSE) > 1e-9*math.Abs(*r.Stat) {
					t.Errorf("%s: %s stat %v ≠ b/SE %v", tc.name, r.Name, *r.Stat, r.Original/r.OriginalSE)
				}
				if math.Abs((r.OriginalUpper-r.Original)/r.OriginalSE-q) > 1e-4 || math.Abs((r.Original-r.OriginalLower)/r.OriginalSE-q) > 1e-4 {
					t.Errorf("%s: %s interval [%v, %v] is not b ± %v·SE", tc.name, r.Name, r.OriginalLower, r.OriginalUpper, q)
				}
				ses[i] = append(ses[i], r.OriginalSE)
			}
		}
		for j := range ses[0] {
			if ses[0][j] == ses[1][j] {
				t.Errorf("%s: HC1 left SE %d unchanged (%v)", tc.name, j, ses[0][j])
			}
		}
	}
	data, sch := writeExample(t, dir, "cps1988")
	_, _, err := runCLIBoth(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm",
		"--epsilon", "1", "--delta", "1e-6", "--cov", "HC1", "--out", filepath.Join(dir, "x.json"))
	if err == nil || !strings.Contains(err.Error(), "--cov HC1") {
		t.Errorf("--cov HC1 with gaussian-fm: %v", err)
	}
}
