package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/classify"
	"github.com/dplearn/dplearn/exampledata"
)

// writeEmbedded writes an embedded classification table and its spec to a
// temporary directory.
func writeEmbedded(t *testing.T, name string) (data, spec string) {
	t.Helper()
	ds, err := exampledata.GetClassification(name)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	data, spec = filepath.Join(dir, name+".csv.gz"), filepath.Join(dir, name+".json")
	if err := os.WriteFile(data, ds.CSVGzip, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(spec, ds.Spec, 0o644); err != nil {
		t.Fatal(err)
	}
	return data, spec
}

func TestDPPPTrainDigitsTeacher(t *testing.T) {
	data, spec := writeEmbedded(t, "digits")
	dir := t.TempDir()
	var files [][]byte
	for run := range 2 {
		out := filepath.Join(dir, "teacher.json")
		stdout, _, err := runDPPP(t, "train", "--data", data, "--schema", spec, "--partition", "2/10",
			"--model", "softmax", "--out", out, "--format", "json")
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Rows     int     `json:"rows"`
			Accuracy float64 `json:"training_accuracy"`
			Classes  []string
		}
		if err := json.Unmarshal([]byte(stdout), &res); err != nil {
			t.Fatalf("%v: %s", err, stdout)
		}
		if res.Rows != 180 || res.Accuracy < 0.95 || len(res.Classes) != 10 {
			t.Fatalf("run %d: %+v", run, res)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, b)
		mf, err := classify.Load(out)
		if err != nil {
			t.Fatal(err)
		}
		if mf.Kind != "softmax" || mf.Input == nil || mf.Features != 64 || mf.Training.Rows != 180 {
			t.Fatalf("model file: %+v", mf)
		}
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Fatal("two runs with the same seed wrote different models")
	}
}

func TestDPPPTrainMLPTeacherText(t *testing.T) {
	data, spec := writeEmbedded(t, "breast_cancer")
	out := filepath.Join(t.TempDir(), "t.json")
	stdout, _, err := runDPPP(t, "train", "--data", data, "--schema", spec, "--test-data", data,
		"--model", "mlp", "--hidden", "16", "--epochs", "20", "--activation", "tanh", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Trained MLP (16 tanh units, adam) on 569 rows × 30 features", "training accuracy: 0.9", "test accuracy:     0.9", "mode 0600"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("output lacks %q:\n%s", want, stdout)
		}
	}
	mf, err := classify.Load(out)
	if err != nil || mf.Kind != "mlp" || mf.MLP.H != 16 || mf.ClassNames[1] != "1" {
		t.Fatalf("%v %+v", err, mf)
	}
}

// writeIDX writes an IDX file of uint8 values with the given dimensions.
func writeIDX(t *testing.T, path string, dims []uint32, body []byte) {
	t.Helper()
	b := []byte{0, 0, 8, byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	if err := os.WriteFile(path, append(b, body...), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDPPPTrainIDXTeacher(t *testing.T) {
	dir := t.TempDir()
	// 60 images of 2×2 pixels: class 0 bright on top, class 1 at the
	// bottom, class 2 dark.
	images, labels, _ := writeIDXSet(t, dir, "train", 60, 0)
	out := filepath.Join(dir, "t.json")
	stdout, _, err := runDPPP(t, "train", "--idx-images", images, "--idx-labels", labels, "--classes", "3",
		"--class-names", "top,bottom,dark", "--test-idx-images", images, "--test-idx-labels", labels,
		"--model", "softmax", "--solver", "sgd", "--epochs", "50", "--out", out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "training accuracy: 1.0000") || !strings.Contains(stdout, "test accuracy:     1.0000") {
		t.Fatalf("output:\n%s", stdout)
	}
	mf, err := classify.Load(out)
	if err != nil || mf.Input != nil || !strings.Contains(mf.InputNote, "2×2 pixels") || mf.ClassNames[2] != "dark" {
		t.Fatalf("%v %+v", err, mf)
	}
	// A label beyond the declared classes.
	if _, _, err := runDPPP(t, "train", "--idx-images", images, "--idx-labels", labels, "--classes", "2",
		"--model", "softmax", "--out", out); err == nil || !strings.Contains(err.Error(), "label") {
		t.Fatalf("label 2 with 2 classes: %v", err)
	}
}

func TestDPPPTrainExternalTeacher(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	data, spec := writeEmbedded(t, "breast_cancer")
	dir := t.TempDir()
	script := filepath.Join(dir, "always-malignant.sh")
	body := `echo '{"dplearn_teacher": 1, "classes": 2, "features": 30}'
while read line; do echo '{"label": 1}'; done
`
	if err := os.WriteFile(script, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "ext.json")
	stdout, _, err := runDPPP(t, "train", "--model", "external", "--data", data, "--schema", spec,
		"--request-timeout", "20s", "--out", out, "--format", "json", "--", sh, script)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Accuracy float64 `json:"training_accuracy"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil || res.Accuracy != 212.0/569 {
		t.Fatalf("accuracy %v (want 212/569): %v", res.Accuracy, err)
	}
	mf, err := classify.Load(out)
	if err != nil || mf.Kind != "external" || mf.External.Command[1] != script || mf.External.RequestTimeout != "20s" {
		t.Fatalf("%v %+v", err, mf)
	}
	p, err := mf.Open(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	got, err := p.PredictBatch(t.Context(), [][]float64{make([]float64, 30)})
	if err != nil || got[0] != 1 {
		t.Fatalf("%v %v", got, err)
	}
	// A handshake that does not match the spec.
	if _, _, err := runDPPP(t, "train", "--model", "external", "--schema", spec, "--out", out,
		"--", sh, "-c", `echo '{"dplearn_teacher": 1, "classes": 3, "features": 30}'; exec sleep 5`); err == nil || !strings.Contains(err.Error(), "expected 2") {
		t.Fatalf("class mismatch: %v", err)
	}
}

func TestDPPPTrainTeacherErrors(t *testing.T) {
	data, spec := writeEmbedded(t, "digits")
	dir := t.TempDir()
	out := filepath.Join(dir, "t.json")
	bad := filepath.Join(dir, "bad.csv")
	var h, r []string
	for i := range 64 {
		h = append(h, "p"+strconv.Itoa(i))
		r = append(r, "1")
	}
	csv := strings.Join(append(h, "digit"), ",") + "\n" + strings.Join(append(r, "3"), ",") + "\n" + strings.Join(append(r, "eleven"), ",") + "\n"
	if err := os.WriteFile(bad, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	nan := filepath.Join(dir, "nan.csv")
	csv = strings.Join(append(h, "digit"), ",") + "\n" + strings.Join(append(r[:63], "NaN", "3"), ",") + "\n"
	if err := os.WriteFile(nan, []byte(csv), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--data", data, "--schema", spec, "--out", out}, "--model"},
		{[]string{"--data", data, "--schema", spec, "--model", "tree", "--out", out}, `--model "tree"`},
		{[]string{"--model", "softmax", "--out", out}, "no training data"},
		{[]string{"--data", data, "--model", "softmax", "--out", out}, "--data needs --schema"},
		{[]string{"--schema", spec, "--model", "softmax", "--out", out}, "--schema needs --data"},
		{[]string{"--idx-images", data, "--model", "softmax", "--out", out}, "go together"},
		{[]string{"--data", data, "--schema", spec, "--idx-images", data, "--idx-labels", data, "--model", "softmax", "--out", out}, "not both"},
		{[]string{"--data", bad, "--schema", spec, "--model", "softmax", "--out", out}, `bad.csv:3:65: column "digit": value "eleven"`},
		{[]string{"--data", nan, "--schema", spec, "--model", "softmax", "--out", out}, `"NaN": missing value`},
		{[]string{"--data", data, "--schema", spec, "--model", "softmax", "--partition", "11/10", "--out", out}, "1 ≤ I ≤ N"},
		{[]string{"--data", data, "--schema", spec, "--model", "softmax", "--partition", "1/5000", "--out", out}, "cannot fill"},
		{[]string{"--data", data, "--schema", spec, "--model", "softmax", "--solver", "newton", "--out", out}, "solver"},
		{[]string{"--data", data, "--schema", spec, "--model", "mlp", "--activation", "sigmoid", "--out", out}, "activation"},
		{[]string{"--data", data, "--schema", spec, "--model", "softmax", "--classes", "3", "--out", out}, "apply to IDX"},
		{[]string{"--data", data, "--schema", spec, "--model", "external", "--out", out}, "after --"},
		{[]string{"--data", data, "--schema", spec, "--model", "softmax", "--out", out, "--", "python3"}, "for --model external"},
		{[]string{"--data", data, "--schema", spec, "--model", "softmax", "--out", out, "stray"}, "unexpected argument"},
		{[]string{"--data", data, "--schema", spec, "--model", "softmax", "--out", filepath.Join(dir, "no", "such", "dir.json")}, "no such file"},
	}
	for _, c := range cases {
		_, _, err := runDPPP(t, append([]string{"train"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v: err = %v, want it to mention %q", c.args, err, c.want)
		}
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("a failed run left %s", out)
	}
}

func TestDPPPTrainTeacherHelp(t *testing.T) {
	stdout, _, err := runDPPP(t, "train", "--help")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"--partition I/N", "docs/teachers.md", "Example", "dataset-fashion-mnist", "--idx-images", `"classes"`} {
		if !strings.Contains(stdout, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}
