package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// runCLIBoth runs the command tree in-process and returns stdout and stderr.
func runCLIBoth(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

type storedInference struct {
	Level        float64   `json:"level"`
	Rows         []coefRow `json:"coefficients"`
	TargetMoment *float64  `json:"target_moment"`
	Unavailable  string    `json:"unavailable"`
	Method       string    `json:"method"`
}

func loadInference(t *testing.T, path string) (storedInference, map[string]json.RawMessage) {
	t.Helper()
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(readFile(t, path)), &raw); err != nil {
		t.Fatal(err)
	}
	var inf storedInference
	if err := json.Unmarshal(raw["inference"], &inf); err != nil {
		t.Fatalf("inference section: %v", err)
	}
	return inf, raw
}

// TestFitCoefficientTable checks the coefficient table of a private linear
// fit: printed after the forecast, stored in the model file, original units
// consistent with the encoded ones, and the intervals containing the
// coefficients the data were generated with (log wage = 5 + 0.1·education −
// 0.2·afam; fixed seeds, so deterministic; each interval is a 95% one).
func TestFitCoefficientTable(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 20000)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	model := filepath.Join(dir, "model.json")
	out, _, err := runCLIBoth(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm",
		"--epsilon", "1", "--delta", "1e-6", "--out", model, "--seed", "4")
	if err != nil {
		t.Fatal(err)
	}
	fc, fitted := strings.Index(out, "Forecast before fitting"), strings.Index(out, "Fitted linear regression")
	if fc < 0 || fitted < 0 || fc > fitted {
		t.Fatalf("forecast not printed before the fit:\n%s", out)
	}
	if rf := strings.Index(out, "Forecast on the released design"); rf < fitted {
		t.Fatalf("forecast on the released design not printed after the fit:\n%s", out)
	}
	for _, want := range []string{"95% CI (original units)", "P>|z|", "+1 education ≈ ×1.1", "ethnicity=afam instead of cauc", "Λ0 = (1/N)Σy²", "guarantee:     (1, 1e-06)-DP"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	inf, _ := loadInference(t, model)
	if inf.Level != 0.95 || len(inf.Rows) != 3 || inf.TargetMoment == nil {
		t.Fatalf("stored inference: %+v", inf)
	}
	truth := map[string]float64{"(intercept)": 5, "education": 0.1, "ethnicity=afam": -0.2}
	// B = 3: s = 1/√3; target half-range 2.5; education half-range 10.
	slope := map[string]float64{"education": 2.5 / math.Sqrt(3) / 10, "ethnicity=afam": 2.5 / math.Sqrt(3)}
	for _, r := range inf.Rows {
		if !r.Identified || !(r.OriginalLower < r.OriginalUpper) {
			t.Fatalf("%s: %+v", r.Name, r)
		}
		if tr := truth[r.Name]; tr < r.OriginalLower || tr > r.OriginalUpper {
			t.Errorf("%s: interval [%v, %v] misses %v", r.Name, r.OriginalLower, r.OriginalUpper, tr)
		}
		// issue 25 item 2: every effect here is many SEs from 0, so its
		// bootstrap p-value (stored with the row) is below 0.01.
		if r.PValue == nil || !(*r.PValue < 0.01) {
			t.Errorf("%s: p-value %v, want < 0.01 for an effect of %v", r.Name, r.PValue, truth[r.Name])
		}
		if sl, ok := slope[r.Name]; ok {
			if math.Abs(r.Original-sl*r.Encoded) > 1e-12 || math.Abs(r.OriginalLower-sl*r.Lower) > 1e-12 || math.Abs(r.OriginalSE-sl*r.SE) > 1e-12 {
				t.Errorf("%s: original units are not %v × encoded: %+v", r.Name, sl, r)
			}
		}
	}
}

// TestForecastIgnoresTheData fits two different datasets with the same
// public quantities (N, schema, mechanism, ε, δ) and checks that the
// forecasts printed before fitting are identical.
func TestForecastIgnoresTheData(t *testing.T) {
	dir := t.TempDir()
	a := writeWageData(t, dir, 3000)
	rng := rand.New(rand.NewPCG(9, 9))
	var b strings.Builder
	b.WriteString("wage,education,ethnicity\n")
	for i := 0; i < 3000; i++ {
		eth := []string{"cauc", "afam"}[rng.IntN(2)]
		fmt.Fprintf(&b, "%.2f,%d,%s\n", 100+900*rng.Float64(), rng.IntN(21), eth)
	}
	other := writeFile(t, dir, "other.csv", b.String())
	sch := writeFile(t, dir, "schema.json", wageSchema)
	var forecasts []string
	for i, data := range []string{a, other} {
		out, _, err := runCLIBoth(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "fm",
			"--epsilon", "0.5", "--out", filepath.Join(dir, fmt.Sprintf("m%d.json", i)), "--seed", fmt.Sprint(i+1))
		if err != nil {
			t.Fatal(err)
		}
		line, _, _ := strings.Cut(out, "\n")
		if !strings.HasPrefix(line, "Forecast before fitting") {
			t.Fatalf("first line is not the forecast: %q", line)
		}
		forecasts = append(forecasts, line)
	}
	if forecasts[0] != forecasts[1] {
		t.Errorf("forecasts differ between datasets with the same public quantities:\n%s\n%s", forecasts[0], forecasts[1])
	}
}

// TestOldModelFilesStillWork strips the new "inference" section from a model
// file (as written before it existed) and checks that evaluate and predict
// accept both the old and the new file.
func TestOldModelFilesStillWork(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 2000)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	model := filepath.Join(dir, "model.json")
	if _, _, err := runCLIBoth(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm",
		"--epsilon", "1", "--delta", "1e-6", "--out", model, "--seed", "1"); err != nil {
		t.Fatal(err)
	}
	_, raw := loadInference(t, model)
	delete(raw, "inference")
	old, err := json.Marshal(raw)
	if err != nil {
		t.Fatal(err)
	}
	oldModel := writeFile(t, dir, "old.json", string(old))
	for _, m := range []string{model, oldModel} {
		if _, _, err := runCLIBoth(t, "evaluate", "--model", m, "--data", data); err != nil {
			t.Fatalf("evaluate %s: %v", m, err)
		}
		if _, _, err := runCLIBoth(t, "predict", "--model", m, "--data", data, "--out", filepath.Join(dir, "p.csv")); err != nil {
			t.Fatalf("predict %s: %v", m, err)
		}
	}
}

// TestCoefficientTableVariants covers logistic fits (no extra release), --ci-share 0
// (no intervals, the fit keeps the whole ε), irls and mechanisms without intervals.
func TestCoefficientTableVariants(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 3000)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	logSch := writeFile(t, dir, "logistic-schema.json", `{"target": {"name": "ethnicity", "positive": "afam"},
	 "features": [{"name": "education", "range": [0, 20]}]}`)
	for _, c := range []struct {
		name         string
		args         []string
		releases     int
		intervals    bool
		unavailable  string
		targetMoment bool
		epsilon      float64 // the composed ε must be exactly the --epsilon given
		method       string  // a part of the stored method
	}{
		{"logistic", []string{"--schema", logSch, "--model", "logistic", "--mechanism", "gaussian-fm", "--epsilon", "1", "--delta", "1e-6"}, 2, true, "", false, 1, ""},
		{"ci-share-0", []string{"--schema", sch, "--model", "linear", "--mechanism", "relaxed-fm", "--epsilon", "1", "--delta", "1e-6", "--ci-share", "0"}, 1, false, "--ci-share 0", false, 1, ""},
		// fm's noise at N = 3000 needs a large ε for identified intervals
		// (at ε = 1 they are reported as unidentified).
		{"fm", []string{"--schema", sch, "--model", "linear", "--mechanism", "fm", "--epsilon", "10"}, 2, true, "", true, 10, ""},
		// the reference fit: statsmodels' classical summary (issue 25).
		{"nonprivate", []string{"--schema", sch, "--model", "linear", "--mechanism", "nonprivate"}, 0, true, "", false, 0, "classical inference for the non-private reference fit"},
		{"nonprivate-robust", []string{"--schema", sch, "--model", "robust", "--mechanism", "nonprivate"}, 0, false, "no classical summary for robust", false, 0, ""},
		// irls: the warm start's Λ1 and Λ2, A, B and the residual summary.
		{"irls", []string{"--schema", sch, "--model", "robust", "--mechanism", "irls", "--epsilon", "2", "--delta", "1e-6"}, 5, true, "", false, 2, "fixed point extrapolated from the warm start"},
		// the seed's cold start: A, B and the residual summary.
		{"irls-cold", []string{"--schema", sch, "--model", "robust", "--mechanism", "irls", "--epsilon", "2", "--delta", "1e-6", "--irls-warm-start", "-1"}, 3, true, "", false, 2, "fixed point extrapolated from the cold start"},
		// issue 16's options: the fit runs, the intervals are refused (they
		// model the Taylor objective and the unconstrained minimiser) and
		// no budget goes to them.
		{"chebyshev", []string{"--schema", logSch, "--model", "logistic", "--mechanism", "gaussian-fm", "--epsilon", "1", "--delta", "1e-6", "--logistic-approx", "chebyshev"}, 2, false, "--logistic-approx chebyshev", false, 1, ""},
		{"solve-radius", []string{"--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm", "--epsilon", "1", "--delta", "1e-6", "--solve-radius", "1"}, 2, false, "--solve-radius", false, 1, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			model := filepath.Join(dir, c.name+".json")
			args := append([]string{"fit", "--data", data, "--out", model, "--seed", "2", "--format", "json"}, c.args...)
			out, _, err := runCLIBoth(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			var res struct {
				Privacy struct {
					Epsilon  float64           `json:"epsilon"`
					Releases []json.RawMessage `json:"releases"`
				} `json:"privacy"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if len(res.Privacy.Releases) != c.releases {
				t.Errorf("%d releases, want %d", len(res.Privacy.Releases), c.releases)
			}
			inf, _ := loadInference(t, model)
			if got := len(inf.Rows) > 0 && inf.Rows[0].Identified; got != c.intervals {
				t.Errorf("intervals %v, want %v: %+v", got, c.intervals, inf)
			}
			if (inf.TargetMoment != nil) != c.targetMoment || !strings.Contains(inf.Unavailable, c.unavailable) {
				t.Errorf("stored inference: %+v", inf)
			}
			if !strings.Contains(inf.Method, c.method) {
				t.Errorf("stored method %q does not say %q", inf.Method, c.method)
			}
			if res.Privacy.Epsilon != c.epsilon {
				t.Errorf("composed ε = %v, want exactly %v", res.Privacy.Epsilon, c.epsilon)
			}
		})
	}
}

// TestRadiusStatedAndBoundaryWarned checks that objpert and noisygd state
// their radius in --help and in the report, and that a fit stuck on a small
// radius is warned about on the console only, never in the model file.
func TestRadiusStatedAndBoundaryWarned(t *testing.T) {
	help, _, err := runCLIBoth(t, "fit", "--help")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(help, "default √d/2 for linear, none for noisygd's clipped logistic gradient and 2√d without the clip") {
		t.Errorf("--help does not state the default radius")
	}
	dir := t.TempDir()
	data := writeWageData(t, dir, 3000)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	for _, c := range []struct {
		mech, radius, note string
		warn               bool
	}{
		{"objpert", "", "the default √d/2 for d = 3", false},
		{"objpert", "0.05", "set by --radius", true},
		{"noisygd", "0.05", "set by --radius", true},
	} {
		model := filepath.Join(dir, c.mech+c.radius+".json")
		args := []string{"fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", c.mech,
			"--epsilon", "2", "--delta", "1e-6", "--out", model, "--seed", "3"}
		if c.mech == "noisygd" {
			args = append(args, "--iterations", "30") // refused for objpert
		} else {
			args = append(args, "--huber", "-1") // the squared loss has the ball
		}
		if c.radius != "" {
			args = append(args, "--radius", c.radius)
		}
		out, errOut, err := runCLIBoth(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, c.note) {
			t.Errorf("%s --radius %q: report lacks %q:\n%s", c.mech, c.radius, c.note, out)
		}
		if got := strings.Contains(errOut, "on the boundary of the public ball"); got != c.warn {
			t.Errorf("%s --radius %q: boundary warning %v, want %v (stderr %q)", c.mech, c.radius, got, c.warn, errOut)
		}
		if strings.Contains(readFile(t, model), "boundary") {
			t.Errorf("%s: the data-dependent boundary warning reached the model file", c.mech)
		}
	}
	// noisygd really uses --radius now: its report names the ball.
	b, _ := os.ReadFile(filepath.Join(dir, "noisygd0.05.json"))
	if !bytes.Contains(b, []byte("‖ω‖ ≤ 0.05")) {
		t.Errorf("noisygd did not use --radius 0.05")
	}
}
