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

// runCLI runs the command tree in-process.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

const wageSchema = `{"target": {"name": "wage", "transform": "log", "range": [4, 9]},
 "features": [{"name": "education", "range": [0, 20]},
              {"name": "ethnicity", "categories": ["cauc", "afam"]}]}`

// writeWageData writes a CSV where log wage = 5 + 0.1·education − 0.2·afam + noise.
func writeWageData(t *testing.T, dir string, n int) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 1))
	var b strings.Builder
	b.WriteString("wage,education,ethnicity\n")
	for i := 0; i < n; i++ {
		ed := rng.IntN(19)
		eth, afam := "cauc", 0.0
		if rng.IntN(4) == 0 {
			eth, afam = "afam", 1
		}
		lw := 5 + 0.1*float64(ed) - 0.2*afam + 0.1*rng.NormFloat64()
		fmt.Fprintf(&b, "%.2f,%d,%s\n", math.Exp(lw), ed, eth)
	}
	return writeFile(t, dir, "wage.csv", b.String())
}

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestFitPredictEvaluate(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 4000)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	model := filepath.Join(dir, "model.json")

	out, err := runCLI(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm",
		"--epsilon", "1", "--delta", "1e-6", "--out", model, "--format", "json", "--seed", "3")
	if err != nil {
		t.Fatal(err)
	}
	var fit struct {
		Rows    int64 `json:"rows"`
		Privacy struct {
			Epsilon  float64 `json:"epsilon"`
			Delta    float64 `json:"delta"`
			Insecure bool    `json:"insecure_randomness"`
			Releases []struct {
				Sensitivity float64 `json:"sensitivity"`
			} `json:"releases"`
		} `json:"privacy"`
	}
	if err := json.Unmarshal([]byte(out), &fit); err != nil {
		t.Fatalf("fit JSON: %v\n%s", err, out)
	}
	if fit.Rows != 4000 || fit.Privacy.Epsilon != 1 || fit.Privacy.Delta != 1e-6 || !fit.Privacy.Insecure {
		t.Fatalf("fit report: %+v", fit)
	}
	// Gaussian FM's Δ1 = 4/N and Δ2 = √2/N plus the floating-point term
	// (regress/rounding.go): never below, at most a relative 1e-8 above.
	near := func(got, want float64) bool { return got >= want && got <= want*(1+1e-8) }
	// The third release is the target moment Λ0 for the confidence
	// intervals (--ci-share, sensitivity 1/N; coeftable.go).
	if len(fit.Privacy.Releases) != 3 || !near(fit.Privacy.Releases[0].Sensitivity, 4.0/4000) ||
		!near(fit.Privacy.Releases[1].Sensitivity, math.Sqrt2/4000) || !near(fit.Privacy.Releases[2].Sensitivity, 1.0/4000) {
		t.Fatalf("releases: %+v", fit.Privacy.Releases)
	}

	out, err = runCLI(t, "evaluate", "--model", model, "--data", data, "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]float64
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mse", "rmse", "r2", "mae", "n"} {
		if _, ok := m[k]; !ok {
			t.Fatalf("evaluate JSON lacks %q: %s", k, out)
		}
	}
	// The noise in log wage is 0.1: a good private fit has RMSE near it.
	if m["rmse"] > 0.2 || m["r2"] < 0.8 {
		t.Fatalf("private fit too poor: %v", m)
	}

	preds := filepath.Join(dir, "pred.csv")
	if _, err := runCLI(t, "predict", "--model", model, "--data", data, "--out", preds); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(readFile(t, preds)), "\n")
	if len(lines) != 4001 || lines[0] != "row,wage_predicted" || !strings.HasPrefix(lines[1], "1,") {
		t.Fatalf("predictions: %d lines, header %q, first %q", len(lines), lines[0], lines[1])
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestFitLogisticText(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	b.WriteString("smoker,age\n")
	rng := rand.New(rand.NewPCG(2, 2))
	for i := 0; i < 2000; i++ {
		age := 18 + rng.IntN(70)
		s := "no"
		if rng.Float64() < 1/(1+math.Exp(-(float64(age)-50)/10)) {
			s = "yes"
		}
		fmt.Fprintf(&b, "%s,%d\n", s, age)
	}
	data := writeFile(t, dir, "smoke.csv", b.String())
	sch := writeFile(t, dir, "s.json", `{"target":{"name":"smoker","positive":"yes","negative":"no"},"features":[{"name":"age","range":[18,90]}]}`)
	model := filepath.Join(dir, "m.json")
	out, err := runCLI(t, "fit", "--data", data, "--schema", sch, "--model", "logistic", "--mechanism", "nonprivate", "--out", model)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "non-private reference") || !strings.Contains(out, "age") {
		t.Fatalf("text output:\n%s", out)
	}
	out, err = runCLI(t, "evaluate", "--model", model, "--data", data, "--format", "json")
	if err != nil || !strings.Contains(out, `"accuracy"`) || !strings.Contains(out, `"log_loss"`) {
		t.Fatalf("evaluate: %v\n%s", err, out)
	}
	preds := filepath.Join(dir, "p.csv")
	if _, err := runCLI(t, "predict", "--model", model, "--data", data, "--out", preds); err != nil {
		t.Fatal(err)
	}
	if l := strings.SplitN(readFile(t, preds), "\n", 3); l[0] != "row,probability,predicted" || !(strings.HasSuffix(l[1], ",yes") || strings.HasSuffix(l[1], ",no")) {
		t.Fatalf("predictions start %q", l[:2])
	}
}

// TestFitErrors checks that bad input gives an error naming the problem and
// leaves no model file behind.
func TestFitErrors(t *testing.T) {
	dir := t.TempDir()
	sch := writeFile(t, dir, "schema.json", wageSchema)
	good := writeWageData(t, dir, 50)
	cases := []struct {
		name   string
		csv    string // "" means use good data
		schema string // "" means the wage schema
		args   []string
		want   string
	}{
		{"missing column", "wage,education\n100,12\n", "", nil, `"ethnicity"`},
		{"not a number", "wage,education,ethnicity\n100,12,cauc\n100,twelve,cauc\n", "", nil, ":3:2:"},
		{"NaN", "wage,education,ethnicity\n100,NaN,cauc\n", "", nil, `"missing" policy is "error"`},
		{"Inf", "wage,education,ethnicity\n+Inf,12,cauc\n", "", nil, "not finite"},
		{"unknown category", "wage,education,ethnicity\n100,12,martian\n", "", nil, "martian"},
		{"empty file", "-", "", nil, "empty"},
		{"bad schema", "", `{"target": {"name": "wage",` + "\n" + `"range": [4, 9]]}`, nil, "line 2"},
		{"logistic on continuous target", "", "", []string{"--model", "logistic"}, "binary target"},
		{"no epsilon", "", "", []string{"--epsilon-unset"}, "needs --epsilon"},
		{"bad epsilon", "", "", []string{"--epsilon", "-1"}, "--epsilon must be"},
		{"gaussian without delta", "", "", []string{"--delta", "0"}, "--delta must be in (0, 1)"},
		{"unknown mechanism", "", "", []string{"--mechanism", "magic"}, "unknown mechanism"},
		// Issue 15: every error names the flag or schema key.
		{"robust by gaussian-fm", "", "", []string{"--model", "robust"}, "--model robust cannot be fitted by --mechanism gaussian-fm; for --model robust use --mechanism irls, irls-wishart, nonprivate"},
		{"delta 1", "", "", []string{"--delta", "1"}, "--delta must be in (0, 1)"},
		{"delta not below 1/N", "", "", []string{"--delta", "0.5"}, "--delta 0.5 is not below 1/N = 0.02 (N = 50 rows)"},
		{"epsilon with nonprivate", "", "", []string{"--mechanism", "nonprivate", "--epsilon", "-1", "--delta-unset"}, "--epsilon: --mechanism nonprivate adds no noise"},
		{"delta with fm", "", "", []string{"--mechanism", "fm"}, "--delta: --mechanism fm is pure ε-DP"},
		{"radius with gaussian-fm", "", "", []string{"--radius", "3"}, "--radius is read only by --mechanism noisygd, objpert, not by gaussian-fm"},
		{"numeric categories", "", `{"target": {"name": "wage", "transform": "log", "range": [4, 9]}, "features": [{"name": "education", "categories": [1, 2]}]}`, nil, `key "features.categories": got a JSON number, want a string`},
		{"target without range", "", `{"target": {"name": "wage"}, "features": [{"name": "education", "range": [0, 20]}]}`, nil, `target "wage" has no "range"`},
		{"schema placeholder", "", `{"target": {"name": "wage", "todo": "declare"}, "features": [{"name": "education", "todo": "declare"}]}`, nil, `placeholder from 'dplearn schema init' not filled in for "wage", "education"`},
		{"schema typo", "", `{"target": {"name": "wage", "rnage": [4, 9]}, "features": [{"name": "education", "range": [0, 20]}]}`, nil, `--schema`},
		{"header names", "Wage,Educ,Ethnicity\n1,2,cauc\n", "", nil, `the header has "Wage", "Educ", "Ethnicity"`},
		{"semicolons", "wage;education;ethnicity\n100;12;cauc\n", "", nil, "the file looks ';'-separated: pass --delimiter ';'"},
		{"bad delimiter flag", "", "", []string{"--delimiter", "x"}, `--delimiter "x"`},
		{"no data file", "", "", []string{"--data", "/nonexistent/d.csv"}, "--data: dataset: open /nonexistent/d.csv"},
		{"no ledger file", "", "", []string{"--ledger", "/nonexistent/l.json"}, "create it first: dplearn ledger create"},
		{"split out of range", "", "", []string{"--split", "1.5"}, "--split must be in (0, 1), got 1.5"},
		{"negative lambda factor", "", "", []string{"--lambda-factor", "-3"}, "--lambda-factor must be ≥ 0"},
		{"negative iterations", "", "", []string{"--mechanism", "noisygd", "--iterations", "-5"}, "--iterations must be from 1 to 10⁷"},
		{"bad intervals", "", "", []string{"--intervals", "maybe"}, `--intervals must be auto, on or off, got "maybe"`},
		{"few replicates", "", "", []string{"--ci-replicates", "50"}, "--ci-replicates must be at least 100"},
		{"replicates with intervals off", "", "", []string{"--ci-replicates", "500", "--intervals", "off"}, "--ci-replicates sizes intervals that --intervals off turns off"},
		{"negative workers", "", "", []string{"--workers", "-1"}, "--workers must be from 0"},
		{"out in a missing directory", "", "", []string{"--out", "/nonexistent/m.json"}, "--out: write /nonexistent/m.json: directory /nonexistent does not exist"},
		{"data is a directory", "", "", []string{"--data", "/tmp"}, "--data: dataset: /tmp: is a directory"},
		{"ledger with seed", "", "", []string{"--seed", "1", "--ledger", "x.json"}, "--ledger with --seed"},
		{"ledger with nonprivate", "", "", []string{"--mechanism", "nonprivate", "--epsilon-unset", "--delta-unset", "--ledger", "x.json"}, "--ledger: --mechanism nonprivate releases a model with no privacy guarantee"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			data := good
			switch c.csv {
			case "":
			case "-":
				data = writeFile(t, dir, fmt.Sprintf("d%d.csv", i), "")
			default:
				data = writeFile(t, dir, fmt.Sprintf("d%d.csv", i), c.csv)
			}
			s := sch
			if c.schema != "" {
				s = writeFile(t, dir, fmt.Sprintf("s%d.json", i), c.schema)
			}
			model := filepath.Join(dir, fmt.Sprintf("m%d.json", i))
			args := map[string]string{"--data": data, "--schema": s, "--model": "linear", "--mechanism": "gaussian-fm",
				"--epsilon": "1", "--delta": "1e-5", "--out": model}
			for j := 0; j < len(c.args); j++ {
				if c.args[j] == "--epsilon-unset" || c.args[j] == "--delta-unset" {
					delete(args, strings.TrimSuffix(c.args[j], "-unset"))
					continue
				}
				args[c.args[j]] = c.args[j+1]
				j++
			}
			argv := []string{"fit"}
			for k, v := range args {
				argv = append(argv, k, v)
			}
			_, err := runCLI(t, argv...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
			if _, statErr := os.Stat(model); !os.IsNotExist(statErr) {
				t.Fatalf("a model file was written despite the error")
			}
		})
	}
}

func TestDemoJSON(t *testing.T) {
	out, err := runCLI(t, "demo", "--runs", "2", "--epsilon", "1", "--seed", "1", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Insecure bool `json:"insecure_randomness"`
		Datasets []struct {
			Dataset string `json:"dataset"`
			Results []struct {
				Mechanism string  `json:"mechanism"`
				Mean      float64 `json:"mean"`
			} `json:"results"`
		} `json:"datasets"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil {
		t.Fatal(err)
	}
	if !d.Insecure || len(d.Datasets) != 2 || len(d.Datasets[0].Results) != 4 {
		t.Fatalf("demo JSON: %s", out)
	}
	for _, ds := range d.Datasets {
		np, gfm := ds.Results[0], ds.Results[3]
		if np.Mechanism != "nonprivate" || gfm.Mechanism != "gaussian-fm" {
			t.Fatalf("order: %+v", ds.Results)
		}
		// At ε = 1 Gaussian FM is within 5% of the non-private error.
		if math.Abs(gfm.Mean-np.Mean) > 0.05*np.Mean {
			t.Errorf("%s: gaussian-fm %v vs nonprivate %v", ds.Dataset, gfm.Mean, np.Mean)
		}
	}
}

// TestFitEveryMechanism runs each mechanism through the CLI on the wage
// data and checks the reported guarantee.
func TestFitEveryMechanism(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 1500)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	cases := []struct {
		model, mechanism string
		args             []string
		private          bool
		wantDelta        bool
	}{
		{"linear", "nonprivate", nil, false, false},
		{"linear", "truncated", nil, false, false},
		{"linear", "fm", []string{"--epsilon", "1"}, true, false},
		{"linear", "relaxed-fm", []string{"--epsilon", "1", "--delta", "1e-6"}, true, true},
		{"linear", "objpert", []string{"--epsilon", "1", "--delta", "1e-6"}, true, true},
		{"linear", "noisygd", []string{"--epsilon", "2", "--delta", "1e-6", "--iterations", "20"}, true, true},
		{"linear", "noisygd", []string{"--sigma", "3", "--delta", "1e-6", "--iterations", "20"}, true, true},
		{"robust", "nonprivate", nil, false, false},
		{"robust", "irls", []string{"--epsilon", "1", "--delta", "1e-6", "--laplace-first-moment"}, true, true},
	}
	for i, c := range cases {
		t.Run(c.model+"/"+c.mechanism, func(t *testing.T) {
			model := filepath.Join(dir, fmt.Sprintf("m%d.json", i))
			args := append([]string{"fit", "--data", data, "--schema", sch, "--model", c.model, "--mechanism", c.mechanism,
				"--out", model, "--format", "json", "--seed", "1"}, c.args...)
			out, err := runCLI(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			var res struct {
				Coef    []float64 `json:"coefficients"`
				Privacy struct {
					Private bool    `json:"private"`
					Epsilon float64 `json:"epsilon"`
					Delta   float64 `json:"delta"`
				} `json:"privacy"`
			}
			if err := json.Unmarshal([]byte(out), &res); err != nil {
				t.Fatal(err)
			}
			if len(res.Coef) != 3 || res.Privacy.Private != c.private || (c.private && !(res.Privacy.Epsilon > 0)) ||
				(res.Privacy.Delta > 0) != c.wantDelta {
				t.Fatalf("%s", out)
			}
			if _, err := runCLI(t, "evaluate", "--model", model, "--data", data); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestSkipBadRowsCaveat checks that --skip-bad-rows keeps N the number of
// records read (issue 23 item 10): a bad record enters the fit as a zero
// row, so the table with one bad record and its neighbour where that record
// is valid have the same N and the same sensitivities and noise scales
// (before, the bad row was left out and N, every sensitivity and every
// noise scale depended on how many rows were bad). The number of bad rows
// (data-dependent, PRIVACY-NOTES item 23) reaches the local console but
// never the model file, whose note depends on the flag only.
func TestSkipBadRowsCaveat(t *testing.T) {
	dir := t.TempDir()
	sch := writeFile(t, dir, "schema.json", wageSchema)
	var b strings.Builder
	b.WriteString("wage,education,ethnicity\n")
	for i := 0; i < 300; i++ {
		fmt.Fprintf(&b, "%d,%d,cauc\n", 100+i, i%19)
	}
	clean := writeFile(t, dir, "clean.csv", b.String()+"100,3,cauc\n")
	data := writeFile(t, dir, "d.csv", b.String()+"100,NaN,cauc\n")
	fit := func(in, out string) (skipped int64, model string) {
		args := []string{"fit", "--data", in, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm",
			"--epsilon", "1", "--delta", "1e-6", "--out", out, "--format", "json", "--seed", "1", "--skip-bad-rows"}
		stdout, err := runCLI(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Skipped int64 `json:"skipped_rows"`
		}
		if err := json.Unmarshal([]byte(stdout), &r); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return r.Skipped, string(raw)
	}
	skipped, withBad := fit(data, filepath.Join(dir, "m.json"))
	if skipped != 1 {
		t.Fatalf("console says %d rows skipped, want 1", skipped)
	}
	if !strings.Contains(withBad, "entered the fit as an all-zero row") {
		t.Fatalf("model lacks the note:\n%s", withBad)
	}
	if strings.Contains(withBad, "skipped_rows") {
		t.Fatalf("model file records the skipped count:\n%s", withBad)
	}
	fit(clean, filepath.Join(dir, "c.json"))
	mb, err := loadModel(filepath.Join(dir, "m.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	mg, err := loadModel(filepath.Join(dir, "c.json"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if mb.Training.Rows != 301 || mg.Training.Rows != 301 {
		t.Fatalf("N = %d with a bad record, %d with it valid; want 301 records read in both", mb.Training.Rows, mg.Training.Rows)
	}
	rb, _ := json.Marshal(mb.Privacy.Releases)
	rg, _ := json.Marshal(mg.Privacy.Releases)
	if len(mb.Privacy.Releases) == 0 || string(rb) != string(rg) {
		t.Fatalf("the releases (sensitivities, noise scales) depend on whether a record was bad:\n%s\n%s", rb, rg)
	}
	if _, err := runCLI(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm",
		"--epsilon", "1", "--delta", "1e-6", "--out", filepath.Join(dir, "m2.json")); err == nil {
		t.Fatal("a strict fit accepted a NaN row")
	}
}
