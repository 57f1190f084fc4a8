package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestEstimateInsideInterval fits over many seeds (gaussian-fm and fm,
// linear and logistic, N = 3000 so that the ridge shrinks visibly) and
// checks that every printed estimate with an interval lies inside it, in
// original units and encoded (issue 25 item 2: the table printed the
// ridge-shrunk fit next to an interval centred on the de-ridged one). It
// also checks that the ridge-regularised fit the model predicts with is
// kept (fitted_encoded) and differs from the printed estimate.
func TestEstimateInsideInterval(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 3000)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	logSch := writeFile(t, dir, "logistic-schema.json", `{"target": {"name": "ethnicity", "positive": "afam"},
	 "features": [{"name": "education", "range": [0, 20]}]}`)
	seeds := 25
	if testing.Short() {
		seeds = 8
	}
	checked, outside, deridged := 0, 0, 0
	for _, c := range []struct {
		name string
		args []string
	}{
		{"gaussian-fm-linear", []string{"--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm", "--epsilon", "1", "--delta", "1e-6"}},
		{"fm-linear", []string{"--schema", sch, "--model", "linear", "--mechanism", "fm", "--epsilon", "10"}},
		{"gaussian-fm-logistic", []string{"--schema", logSch, "--model", "logistic", "--mechanism", "gaussian-fm", "--epsilon", "2", "--delta", "1e-6"}},
	} {
		for seed := 1; seed <= seeds; seed++ {
			model := filepath.Join(dir, fmt.Sprintf("%s-%d.json", c.name, seed))
			args := append([]string{"fit", "--data", data, "--out", model, "--seed", fmt.Sprint(seed), "--format", "json"}, c.args...)
			if _, _, err := runCLIBoth(t, args...); err != nil {
				t.Fatal(err)
			}
			inf, _ := loadInference(t, model)
			for _, r := range inf.Rows {
				if !r.Identified {
					continue
				}
				checked++
				if !(r.OriginalLower <= r.Original && r.Original <= r.OriginalUpper) || !(r.Lower <= r.Encoded && r.Encoded <= r.Upper) {
					outside++
					t.Errorf("%s seed %d: %s = %v outside its interval [%v, %v] (encoded %v in [%v, %v])",
						c.name, seed, r.Name, r.Original, r.OriginalLower, r.OriginalUpper, r.Encoded, r.Lower, r.Upper)
				}
				if r.FittedEncoded == nil {
					t.Errorf("%s seed %d: %s has no fitted (ridged) coefficient", c.name, seed, r.Name)
				} else if *r.FittedEncoded != r.Encoded {
					deridged++
				}
			}
		}
	}
	if checked < seeds*6 || deridged == 0 {
		t.Errorf("only %d identified coefficients checked, %d de-ridged", checked, deridged)
	}
	t.Logf("%d identified coefficients, %d outside their interval, %d differ from the ridged fit", checked, outside, deridged)
}

// TestSurrogateLogisticLabels (issue 25 item 3): a gaussian-fm logistic
// fit estimates FM's quadratic surrogate, so its rows must not read as
// odds ratios and a note must say so; the nonprivate MLE's rows are odds
// ratios.
func TestSurrogateLogisticLabels(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 3000)
	logSch := writeFile(t, dir, "logistic-schema.json", `{"target": {"name": "ethnicity", "positive": "afam"},
	 "features": [{"name": "education", "range": [0, 20]}]}`)
	for _, c := range []struct {
		mech     string
		args     []string
		odds     bool
		wantText string
	}{
		{"gaussian-fm", []string{"--epsilon", "2", "--delta", "1e-6"}, false, "not log-odds: exp(b) is not an odds ratio"},
		{"truncated", nil, false, "not log-odds"},
		{"nonprivate", nil, true, "odds ratio"},
		// noisygd's clipped gradient (issue 26): log-odds of a
		// bounded-influence fit, said so, with no ball; --huber -1 and
		// --radius bring the ball back and the note says whose default.
		{"noisygd", []string{"--epsilon", "2", "--delta", "1e-6"}, true, "noisygd's clipped-gradient fit"},
		{"noisygd", []string{"--epsilon", "2", "--delta", "1e-6", "--radius", "3"}, true, "set by --radius (the default has none"},
		{"noisygd", []string{"--epsilon", "2", "--delta", "1e-6", "--huber", "-1"}, true, "the default 2√d for d = 2"},
	} {
		model := filepath.Join(dir, c.mech+strings.Join(c.args, "")+".json")
		out, _, err := runCLIBoth(t, append([]string{"fit", "--data", data, "--schema", logSch, "--model", "logistic", "--mechanism", c.mech, "--seed", "1", "--out", model}, c.args...)...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, c.wantText) {
			t.Errorf("%s: output lacks %q:\n%s", c.mech, c.wantText, out)
		}
		inf, _ := loadInference(t, model)
		for _, r := range inf.Rows {
			odds := strings.Contains(r.Meaning, "odds of") || strings.Contains(r.Meaning, "(odds ")
			if odds != c.odds {
				t.Errorf("%s: %s reads %q (odds ratio: %v, want %v)", c.mech, r.Name, r.Meaning, odds, c.odds)
			}
		}
	}
}
