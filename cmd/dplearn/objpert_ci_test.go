package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestObjPertLogisticIntervals: a logistic objpert fit through the CLI
// (the recommended logistic mechanism) gets an interval on every
// coefficient from its Hessian release (--ci-share, default 5% of the
// calibration), each printed estimate inside its interval and different
// from the ridge fit the model predicts with (de-ridged), rows read as
// log-odds (odds ratios), and the privacy report lists the Hessian among
// the releases. With --ci-share 0 there is no Hessian and no interval, and the table
// says the coefficients are the ridge-penalised fit.
func TestObjPertLogisticIntervals(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 3000)
	logSch := writeFile(t, dir, "logistic-schema.json", `{"target": {"name": "ethnicity", "positive": "afam"},
	 "features": [{"name": "education", "range": [0, 20]}]}`)
	model := filepath.Join(dir, "objpert.json")
	out, _, err := runCLIBoth(t, "fit", "--data", data, "--schema", logSch, "--model", "logistic", "--mechanism", "objpert",
		"--epsilon", "2", "--delta", "1e-6", "--seed", "1", "--out", model)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Hessian") {
		t.Errorf("the report does not list the Hessian release:\n%s", out)
	}
	inf, _ := loadInference(t, model)
	if len(inf.Rows) == 0 || inf.Unavailable != "" {
		t.Fatalf("no intervals: %q", inf.Unavailable)
	}
	for _, r := range inf.Rows {
		if !r.Identified || !(r.Lower <= r.Encoded && r.Encoded <= r.Upper) || !(r.OriginalLower <= r.Original && r.Original <= r.OriginalUpper) {
			t.Errorf("%s: %v not inside [%v, %v] (identified %v)", r.Name, r.Encoded, r.Lower, r.Upper, r.Identified)
		}
		if r.FittedEncoded == nil || *r.FittedEncoded == r.Encoded {
			t.Errorf("%s: printed estimate is not de-ridged (fitted %v)", r.Name, r.FittedEncoded)
		}
		if !strings.Contains(r.Meaning, "odds") || strings.Contains(r.Meaning, "surrogate") {
			t.Errorf("%s reads %q, want a log-odds (odds ratio) meaning", r.Name, r.Meaning)
		}
	}
	model0 := filepath.Join(dir, "objpert0.json")
	if _, _, err := runCLIBoth(t, "fit", "--data", data, "--schema", logSch, "--model", "logistic", "--mechanism", "objpert",
		"--epsilon", "2", "--delta", "1e-6", "--seed", "1", "--ci-share", "0", "--out", model0); err != nil {
		t.Fatal(err)
	}
	if inf0, _ := loadInference(t, model0); !strings.Contains(inf0.Unavailable, "ridge-penalised") {
		t.Errorf("--ci-share 0: want no intervals and the ridge caveat, got %q", inf0.Unavailable)
	}
}
