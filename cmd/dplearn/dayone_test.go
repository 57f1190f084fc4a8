package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/report"
	"github.com/dplearn/dplearn/schema"
)

// runCLIIn runs the CLI with stdin and returns stdout and stderr.
func runCLIIn(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetIn(strings.NewReader(stdin))
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

// fitWage fits the wage schema on data and returns the model path.
func fitWage(t *testing.T, dir, data, schemaPath string, extra ...string) string {
	t.Helper()
	model := filepath.Join(dir, "model.json")
	args := append([]string{"fit", "--data", data, "--schema", schemaPath, "--model", "linear", "--mechanism", "gaussian-fm",
		"--epsilon", "1", "--delta", "1e-6", "--seed", "3", "--out", model}, extra...)
	if _, err := runCLI(t, args...); err != nil {
		t.Fatal(err)
	}
	return model
}

// TestPipes: fit reads its data from stdin and writes the model to stdout;
// predict reads the model from stdin and writes predictions to stdout.
func TestPipes(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 300)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	fileModel := fitWage(t, dir, data, sch)
	model, report, err := runCLIIn(t, readFile(t, data), "fit", "--data", "-", "--schema", sch, "--model", "linear",
		"--mechanism", "gaussian-fm", "--epsilon", "1", "--delta", "1e-6", "--seed", "3", "--out", "-")
	if err != nil {
		t.Fatal(err)
	}
	if model != readFile(t, fileModel) {
		t.Fatalf("model from stdin to stdout differs from the file fit")
	}
	if !strings.Contains(report, "Privacy report") || !strings.Contains(report, "model written to standard output") {
		t.Fatalf("report on stderr: %q", report)
	}
	preds, msg, err := runCLIIn(t, model, "predict", "--model", "-", "--data", data, "--out", "-")
	if err != nil {
		t.Fatal(err)
	}
	if lines := strings.Split(strings.TrimSpace(preds), "\n"); len(lines) != 301 || !strings.Contains(msg, "Wrote 300 predictions to standard output") {
		t.Fatalf("predict to stdout: %d lines, stderr %q", len(lines), msg)
	}
	if _, _, err := runCLIIn(t, "", "predict", "--model", "-", "--data", "-", "--out", "-"); err == nil {
		t.Fatal("--model - with --data - accepted")
	}
	// Semicolon-separated data from stdin with --delimiter.
	semi := strings.ReplaceAll(readFile(t, data), ",", ";")
	if _, _, err := runCLIIn(t, semi, "evaluate", "--model", fileModel, "--data", "-", "--delimiter", ";"); err != nil {
		t.Fatal(err)
	}
	tab := strings.ReplaceAll(readFile(t, data), ",", "\t")
	if _, _, err := runCLIIn(t, tab, "evaluate", "--model", fileModel, "--data", "-"); err == nil || !strings.Contains(err.Error(), "--delimiter tab") {
		t.Fatalf("tab-separated data read as commas: %v", err)
	}
}

// TestPredictIDsAndMissing: identifiers pass through; a missing value is an
// error under the default policy, NA with --missing drop, the declared
// value with "impute"; evaluate leaves dropped rows out and says how many.
func TestPredictIDsAndMissing(t *testing.T) {
	dir := t.TempDir()
	model := fitWage(t, dir, writeWageData(t, dir, 300), writeFile(t, dir, "schema.json", wageSchema))
	test := writeFile(t, dir, "test.csv", "id,wage,education,ethnicity\np1,100,12,cauc\np2,,NA,afam\n\"p,3\",150,16,\n")
	_, _, err := runCLIIn(t, "", "predict", "--model", model, "--data", test, "--out", "-")
	if err == nil || !strings.Contains(err.Error(), `test.csv:3:3: column "education"`) {
		t.Fatalf("missing value under the error policy: %v", err)
	}
	out, msg, err := runCLIIn(t, "", "predict", "--model", model, "--data", test, "--out", "-", "--id", "id", "--missing", "drop")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || lines[0] != "row,id,wage_predicted" || !strings.HasPrefix(lines[1], "1,p1,") ||
		lines[2] != "2,p2,NA" || lines[3] != `3,"p,3",NA` {
		t.Fatalf("predictions:\n%s", out)
	}
	if !strings.Contains(msg, "Wrote 1 prediction to standard output (and NA for 2 rows with a missing value)") {
		t.Fatalf("message %q", msg)
	}
	// The missing wage of p2 does not matter to predict: the target is
	// ignored; with an imputing schema p2 and p3 are scored.
	imp := `{"target": {"name": "wage", "transform": "log", "range": [4, 9]},
 "features": [{"name": "education", "range": [0, 20], "missing": "impute", "impute": 12},
              {"name": "ethnicity", "categories": ["cauc", "afam"], "missing": "impute", "impute": "cauc"}]}`
	model2 := fitWage(t, t.TempDir(), writeWageData(t, dir, 300), writeFile(t, dir, "imp.json", imp))
	out, msg, err = runCLIIn(t, "", "predict", "--model", model2, "--data", test, "--out", "-", "--id", "id")
	if err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || strings.Contains(out, "NA") {
		t.Fatalf("imputed predictions:\n%s", out)
	}
	// p2 imputes education 12 with afam: its prediction equals that of an
	// explicit row "p2b,,12,afam".
	explicit := writeFile(t, dir, "explicit.csv", "id,education,ethnicity\np2b,12,afam\n")
	out2, _, err := runCLIIn(t, "", "predict", "--model", model2, "--data", explicit, "--out", "-")
	if err != nil {
		t.Fatal(err)
	}
	if p2, p2b := strings.Split(lines[2], ",")[2], strings.Split(strings.Split(strings.TrimSpace(out2), "\n")[1], ",")[1]; p2 != p2b {
		t.Fatalf("imputed %s, explicit %s", p2, p2b)
	}
	if !strings.Contains(msg, "education") || !strings.Contains(msg, "shown on this console only") {
		t.Fatalf("counts not shown: %q", msg)
	}
	ev, _, err := runCLIIn(t, "", "evaluate", "--model", model, "--data", test, "--missing", "drop")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(ev, "on 1 row (2 rows with a missing value left out)") {
		t.Fatalf("evaluate: %q", ev)
	}
}

// TestCountsNeverInModel: data that encode to the same rows but differ in
// what was clipped, imputed or which column dropped a record give
// byte-identical model files, while the console shows the counts.
func TestCountsNeverInModel(t *testing.T) {
	dir := t.TempDir()
	sch := writeFile(t, dir, "s.json", `{"target": {"name": "wage", "transform": "log", "range": [4, 9]},
 "features": [{"name": "education", "range": [0, 20], "missing": "drop"},
              {"name": "ethnicity", "categories": ["cauc", "afam"], "missing": "impute", "impute": "cauc"}]}`)
	base := readFile(t, writeWageData(t, dir, 400))
	// A: a clipped education (25 → 20), an imputed ethnicity, a record
	// dropped by education. B: the same rows written plainly, the dropped
	// record dropped by... education too but with a different wage (a
	// dropped record contributes nothing).
	a := writeFile(t, dir, "a.csv", base+"500,25,cauc\n300,10,\n999,NA,afam\n")
	b := writeFile(t, dir, "b.csv", base+"500,20,cauc\n300,10,cauc\n12,,cauc\n")
	fit := func(data, out string) string {
		text, err := runCLI(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm",
			"--epsilon", "1", "--delta", "1e-6", "--seed", "7", "--out", out)
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	ma, mb := filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")
	textA, textB := fit(a, ma), fit(b, mb)
	if readFile(t, ma) != readFile(t, mb) {
		t.Fatal("model files differ: data-dependent counts reached the model")
	}
	var m struct {
		Training struct{ Rows int64 } `json:"training"`
	}
	if err := json.Unmarshal([]byte(readFile(t, ma)), &m); err != nil || m.Training.Rows != 403 {
		t.Fatalf("N = %d (want every record read, 403): %v", m.Training.Rows, err)
	}
	for _, want := range []string{"education", "ethnicity", "never written to the model", "1 record dropped for a missing value entered the fit as zero rows"} {
		if !strings.Contains(textA, want) {
			t.Fatalf("console lacks %q:\n%s", want, textA)
		}
	}
	if textA == textB {
		t.Fatal("the console shows the same counts for different data")
	}
	if !strings.Contains(readFile(t, ma), `all-zero row`) {
		t.Fatal("the report lacks the note on dropped records")
	}
}

// TestFitLedger: fits charge the ledger until it is spent; a fit past the
// budget is refused and writes no model; ledger show labels its figures.
func TestFitLedger(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 300)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	ledgerPath := filepath.Join(dir, "budget.json")
	if _, err := runCLI(t, "ledger", "create", ledgerPath, "--name", "study", "--epsilon", "1", "--delta", "1e-5"); err != nil {
		t.Fatal(err)
	}
	fit := func(out string) error {
		_, err := runCLI(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm",
			"--epsilon", "0.5", "--delta", "4e-6", "--ledger", ledgerPath, "--out", out)
		return err
	}
	for i := 0; i < 2; i++ {
		if err := fit(filepath.Join(dir, fmt.Sprintf("m%d.json", i))); err != nil {
			t.Fatalf("fit %d: %v", i, err)
		}
	}
	third := filepath.Join(dir, "m2.json")
	if err := fit(third); err == nil || !strings.Contains(err.Error(), "--ledger") || !strings.Contains(err.Error(), "spent ε = 1 of 1") {
		t.Fatalf("third fit: %v", err)
	}
	if _, err := os.Stat(third); !os.IsNotExist(err) {
		t.Fatal("a refused fit wrote its model")
	}
	out, err := runCLI(t, "ledger", "show", ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"budget:", "ε = 1, δ = 1e-05", "spent:", "ε = 1, δ = 8e-06", "remaining:", "ε = 0, δ = 2e-06", "charges:     2", "gaussian-fm --model linear"} {
		if !strings.Contains(out, want) {
			t.Fatalf("ledger show lacks %q:\n%s", want, out)
		}
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"ledger", "show", filepath.Join(dir, "none.json")}, "no such ledger (create it: dplearn ledger create"},
		{[]string{"ledger", "create", filepath.Join(dir, "two.json"), "--name", "x", "--epsilon", "1", "--rho", "1"}, "--rho with --epsilon/--delta"},
		{[]string{"ledger", "show"}, "missing the ledger file"},
	} {
		if _, err := runCLI(t, c.args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
	// A ρ ledger takes every fit whose guarantee states a ρ (irls's zCDP
	// accountant, a Gaussian mechanism's μ²/2) and is charged each
	// model's whole ρ, the intervals' Laplace release included; it
	// refuses an (ε, δ)-only mechanism before reading the data.
	rho := filepath.Join(dir, "rho.json")
	if _, err := runCLI(t, "ledger", "create", rho, "--name", "z", "--rho", "0.5"); err != nil {
		t.Fatal(err)
	}
	var models []string
	for _, c := range [][]string{{"robust", "irls", "1"}, {"linear", "gaussian-fm", "0.5"}} {
		m := filepath.Join(dir, c[1]+"-rho.json")
		if _, err := runCLI(t, "fit", "--data", data, "--schema", sch, "--model", c[0], "--mechanism", c[1], "--intervals", "on", "--ci-replicates", "200",
			"--epsilon", c[2], "--delta", "1e-6", "--ledger", rho, "--out", m); err != nil {
			t.Fatalf("%s on a ρ ledger: %v", c[1], err)
		}
		models = append(models, m)
	}
	out, err = runCLI(t, "ledger", "show", rho)
	if err != nil || !strings.Contains(out, "charges:     2") || !strings.Contains(out, "--mechanism irls") || !strings.Contains(out, "--mechanism gaussian-fm") {
		t.Fatalf("ρ ledger after irls and gaussian-fm (%v):\n%s", err, out)
	}
	rl, err := ledger.Open(rho)
	if err != nil {
		t.Fatal(err)
	}
	rst, err := rl.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range models {
		mod, err := regress.LoadModel(m)
		if err != nil {
			t.Fatal(err)
		}
		p := mod.Privacy
		laplace := false
		for _, r := range p.Releases {
			laplace = laplace || r.Noise == "laplace"
		}
		if c := rst.Charges[i]; p.Rho <= 0 || c.Rho != p.Rho || !laplace {
			t.Errorf("%s: charged ρ = %v, the model states ρ = %v (intervals' Laplace release present: %v)", m, c.Rho, p.Rho, laplace)
		}
	}
	if _, err := runCLI(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "objpert",
		"--epsilon", "0.1", "--delta", "1e-6", "--ledger", rho, "--out", third); err == nil || !strings.Contains(err.Error(), "zCDP (ρ) budget") {
		t.Fatalf("(ε, δ) fit on a ρ ledger: %v", err)
	}
	// The exact charge, made with the achieved guarantee after the fit:
	// 2e-6 of δ is left, a model claiming 3e-6 is refused and the ledger
	// is unchanged.
	l, err := ledger.Open(ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	m := &regress.Model{Kind: regress.Linear, Schema: &schema.Schema{Target: schema.Target{Name: "wage"}},
		Privacy: report.Privacy{Private: true, Epsilon: 1e-3, Delta: 3e-6}}
	_, err = chargeFit(context.Background(), l, fitOptions{ledger: ledgerPath, mechanism: "gaussian-fm", data: data, out: third}, m)
	if !errors.Is(err, ledger.ErrOverBudget) || !strings.Contains(err.Error(), "no model written") {
		t.Fatalf("exact charge: %v", err)
	}
	if st, _ := l.State(context.Background()); len(st.Charges) != 2 {
		t.Fatalf("refused charge recorded: %d charges", len(st.Charges))
	}
}

// TestSchemaInit writes a template from a header only, and fit refuses it
// until the placeholders are gone.
func TestSchemaInit(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 50)
	tmpl := filepath.Join(dir, "s.json")
	if _, err := runCLI(t, "schema", "init", "--data", data, "--target", "wage", "--out", tmpl); err != nil {
		t.Fatal(err)
	}
	text := readFile(t, tmpl)
	for _, col := range []string{"wage", "education", "ethnicity"} {
		if !strings.Contains(text, `"name":"`+col+`"`) {
			t.Fatalf("template lacks %s:\n%s", col, text)
		}
	}
	// Nothing read off the data: the template is the same for any rows.
	other := writeFile(t, t.TempDir(), "o.csv", "wage,education,ethnicity\n1,2,martian\n")
	if out, _, err := runCLIIn(t, "", "schema", "init", "--data", other, "--target", "wage"); err != nil || out != text {
		t.Fatalf("template depends on the rows: %v", err)
	}
	_, err := runCLI(t, "fit", "--data", data, "--schema", tmpl, "--model", "linear", "--mechanism", "nonprivate", "--out", filepath.Join(dir, "m.json"))
	if err == nil || !strings.Contains(err.Error(), "placeholder") || !strings.Contains(err.Error(), `"education"`) {
		t.Fatalf("fit with placeholders: %v", err)
	}
	if _, err := runCLI(t, "schema", "init", "--data", data, "--out", tmpl); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("overwrote a schema: %v", err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--target", "pay"}, `--target "pay" is not a column`},
		{[]string{"--data", writeFile(t, dir, "semi.csv", "a;b;c\n1;2;3\n")}, "--delimiter ';'"},
	} {
		args := append([]string{"schema", "init", "--data", data}, c.args...)
		if _, _, err := runCLIIn(t, "", args...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: %v, want %q", c.args, err, c.want)
		}
	}
}

// TestModelFlagErrors: a schema or a ledger given as --model is named as
// such, not as a Go unmarshalling error.
func TestModelFlagErrors(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 50)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	for _, c := range []struct{ model, want string }{
		{sch, "this is a schema file; --model wants the model file"},
		{writeFile(t, dir, "x.json", `{"name": "l", "budget": {}}`), `not a model file written by 'dplearn fit' (no "format"`},
		{writeFile(t, dir, "y.json", `[1, 2]`), "not a model file"},
		{filepath.Join(dir, "none.json"), "--model: open"},
	} {
		for _, cmd := range []string{"predict", "evaluate"} {
			_, _, err := runCLIIn(t, "", cmd, "--model", c.model, "--data", data, "--out", filepath.Join(dir, "p.csv"))
			if cmd == "evaluate" {
				_, _, err = runCLIIn(t, "", cmd, "--model", c.model, "--data", data)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "Go ") {
				t.Errorf("%s --model %s: %v, want %q", cmd, filepath.Base(c.model), err, c.want)
			}
		}
	}
	model := fitWage(t, dir, data, sch)
	_, err := runCLI(t, "fit", "--data", data, "--schema", model, "--model", "linear", "--mechanism", "nonprivate", "--out", filepath.Join(dir, "m2.json"))
	if err == nil || !strings.Contains(err.Error(), "this is a model file") {
		t.Errorf("model as --schema: %v", err)
	}
}

// TestPlurals: counts of one read "1 row", never "1 rows".
func TestPlurals(t *testing.T) {
	dir := t.TempDir()
	data := writeFile(t, dir, "d.csv", readFile(t, writeWageData(t, dir, 50))+"100,twelve,cauc\n")
	sch := writeFile(t, dir, "schema.json", wageSchema)
	out, err := runCLI(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "nonprivate",
		"--skip-bad-rows", "--out", filepath.Join(dir, "m.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "(1 bad row entered as a zero row;") || !strings.Contains(out, "education  0        0        0                    0                       1") {
		t.Fatalf("fit output:\n%s", out)
	}
	one := writeFile(t, dir, "one.csv", "education,ethnicity\n12,cauc\n")
	out, err = runCLI(t, "predict", "--model", filepath.Join(dir, "m.json"), "--data", one, "--out", filepath.Join(dir, "p.csv"))
	if err != nil || !strings.Contains(out, "Wrote 1 prediction to") {
		t.Fatalf("predict: %v\n%s", err, out)
	}
	if strings.Contains(out, " 1 predictions") || strings.Contains(out, " 1 rows") {
		t.Fatalf("plural after 1:\n%s", out)
	}
}

// TestDropEqualsKeptRows: a dropped record enters the fit as a zero row,
// so the non-private fit equals the fit of the kept records (a known
// answer), while N counts every record read.
func TestDropEqualsKeptRows(t *testing.T) {
	dir := t.TempDir()
	base := readFile(t, writeWageData(t, dir, 300))
	lin := `{"target": {"name": "wage", "transform": "log", "range": [4, 9], "missing": "drop"},
 "features": [{"name": "education", "range": [0, 20], "missing": "drop"}, {"name": "ethnicity", "categories": ["cauc", "afam"]}]}`
	logi := `{"target": {"name": "wage", "above": 300, "missing": "drop"},
 "features": [{"name": "education", "range": [0, 20], "missing": "drop"}, {"name": "ethnicity", "categories": ["cauc", "afam"]}]}`
	withNA := writeFile(t, dir, "na.csv", base+"NA,12,cauc\n250,,afam\n")
	kept := writeFile(t, dir, "kept.csv", base)
	for _, c := range []struct{ model, schema string }{{"linear", lin}, {"logistic", logi}} {
		sch := writeFile(t, dir, c.model+".json", c.schema)
		coef := func(data string) ([]float64, int64) {
			out, err := runCLI(t, "fit", "--data", data, "--schema", sch, "--model", c.model, "--mechanism", "nonprivate",
				"--out", filepath.Join(dir, "m.json"), "--format", "json")
			if err != nil {
				t.Fatal(err)
			}
			var r struct {
				Rows int64     `json:"rows"`
				Coef []float64 `json:"coefficients"`
			}
			if err := json.Unmarshal([]byte(out), &r); err != nil {
				t.Fatal(err)
			}
			return r.Coef, r.Rows
		}
		a, na := coef(withNA)
		b, nb := coef(kept)
		if na != 302 || nb != 300 {
			t.Fatalf("%s: N = %d and %d, want 302 (every record read) and 300", c.model, na, nb)
		}
		for i := range a {
			if d := a[i] - b[i]; d > 1e-9 || d < -1e-9 {
				t.Fatalf("%s: coefficient %d: %v with dropped records, %v without", c.model, i, a[i], b[i])
			}
		}
	}
}
