package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
)

// TestEvaluateStatistics: evaluate --format json reports, for a log-wage
// model, RMSE/MAE in wage units with the retransformation stated (larger
// than on the log scale by orders of magnitude), and for a logistic model
// AUC, Brier and ten calibration groups that cover every row, whose mean
// predictions average to the mean prediction, and whose Brier score is
// consistent with the log loss's model (Brier < 0.25 for an informative
// model); the text output names the same quantities.
func TestEvaluateStatistics(t *testing.T) {
	dir := t.TempDir()
	type out struct {
		N            int64    `json:"n"`
		RMSE         *float64 `json:"rmse"`
		RMSEOriginal *float64 `json:"rmse_original"`
		MAEOriginal  *float64 `json:"mae_original"`
		AUC          *float64 `json:"auc"`
		Brier        *float64 `json:"brier"`
		Calibration  []struct {
			N             int     `json:"n"`
			MeanPredicted float64 `json:"mean_predicted"`
			Observed      float64 `json:"observed"`
		} `json:"calibration"`
	}
	for _, tc := range []struct{ name, model string }{{"cps1988", "linear"}, {"smokeban", "logistic"}} {
		data, sch := writeExample(t, dir, tc.name)
		model := filepath.Join(dir, tc.name+"-model.json")
		if _, _, err := runCLIBoth(t, "fit", "--data", data, "--schema", sch, "--model", tc.model, "--mechanism", "nonprivate", "--out", model); err != nil {
			t.Fatal(err)
		}
		js, _, err := runCLIBoth(t, "evaluate", "--model", model, "--data", data, "--format", "json")
		if err != nil {
			t.Fatal(err)
		}
		var o out
		if err := json.Unmarshal([]byte(js), &o); err != nil {
			t.Fatalf("%v\n%s", err, js)
		}
		text, _, err := runCLIBoth(t, "evaluate", "--model", model, "--data", data)
		if err != nil {
			t.Fatal(err)
		}
		if tc.model == "linear" {
			if o.RMSEOriginal == nil || o.MAEOriginal == nil || !(*o.RMSEOriginal > 100**o.RMSE) || !(*o.MAEOriginal < *o.RMSEOriginal) {
				t.Errorf("linear: original units rmse %v mae %v (log-scale rmse %v)", o.RMSEOriginal, o.MAEOriginal, *o.RMSE)
			}
			if !strings.Contains(text, "original units") || !strings.Contains(text, "naive back-transform") || !strings.Contains(text, "no smearing") {
				t.Errorf("text lacks the original-units errors:\n%s", text)
			}
			continue
		}
		if o.AUC == nil || !(*o.AUC > 0.6 && *o.AUC < 0.7) || o.Brier == nil || !(*o.Brier > 0.1 && *o.Brier < 0.25) {
			t.Errorf("logistic: AUC %v Brier %v", o.AUC, o.Brier)
		}
		if len(o.Calibration) != 10 {
			t.Fatalf("%d calibration groups", len(o.Calibration))
		}
		rows, obs := 0, 0.0
		for g, b := range o.Calibration {
			rows += b.N
			obs += b.Observed * float64(b.N)
			if g > 0 && b.MeanPredicted < o.Calibration[g-1].MeanPredicted {
				t.Errorf("group %d's mean prediction %v below the previous group's", g, b.MeanPredicted)
			}
		}
		// The logistic MLE with an intercept matches the positive share
		// exactly: Σp = Σy, so the groups' observed and predicted totals agree.
		pred := 0.0
		for _, b := range o.Calibration {
			pred += b.MeanPredicted * float64(b.N)
		}
		if int64(rows) != o.N || math.Abs(pred-obs) > 1e-6*obs {
			t.Errorf("calibration covers %d of %d rows; predicted total %v, observed %v", rows, o.N, pred, obs)
		}
		for _, w := range []string{"auc", "brier", "calibration", "mean predicted"} {
			if !strings.Contains(text, w) {
				t.Errorf("text lacks %q:\n%s", w, text)
			}
		}
	}
}
