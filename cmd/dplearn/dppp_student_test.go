package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/classify"
	"github.com/dplearn/dplearn/report"
)

// digitsLines writes the header and data lines [from, to) (0-based) of the
// embedded digits table to path.
func digitsLines(t *testing.T, path string, from, to int) {
	t.Helper()
	data, _ := writeEmbedded(t, "digits")
	raw, err := os.ReadFile(data)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	var lines []string
	for i := -1; i < to && sc.Scan(); i++ { // i: data line of the text scanned (-1: the header)
		if i < 0 || i >= from {
			lines = append(lines, sc.Text())
		}
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDPPPStudent: 10 digits teachers label 80 queries (dppp simulate, ε =
// 8 per query: with 10 teachers, ε = 1 leaves most labels wrong);
// dppp student trains on them, its held-out accuracy is printed, and the
// model file carries the labels' composed guarantee, equal to an
// independent computation with the accounting package (binomial noise:
// the exact privacy-loss distribution of the implemented histogram,
// bracketed on a finer grid), rounded up.
func TestDPPPStudent(t *testing.T) {
	if testing.Short() {
		t.Skip("short: a full simulated run")
	}
	const q = 80
	f := newDPPPNetFiles(t, 10, q)
	labels := filepath.Join(f.dir, "labels.csv")
	if _, stderr, err := runDPPP(t, "simulate", "--models", strings.Join(f.models, ","), "--schema", f.spec,
		"--queries", f.queries, "--out", labels, "--insecure-test-keys", "--epsilon", "8", "--budget-epsilon", "1000", "--round-timeout", "20s"); err != nil {
		t.Fatalf("simulate: %v\n%s", err, stderr)
	}
	heldout := filepath.Join(f.dir, "heldout.csv")
	digitsLines(t, heldout, q, q+400)
	out := filepath.Join(f.dir, "student.json")
	stdout, stderr, err := runDPPP(t, "student", "--schema", f.spec, "--queries", f.queries, "--labels", labels,
		"--model", "softmax", "--max-iterations", "50", "--out", out, "--test-data", heldout, "--format", "json")
	if err != nil {
		t.Fatalf("student: %v\n%s", err, stderr)
	}
	var res struct {
		Labels       int     `json:"labels"`
		Epsilon      string  `json:"epsilon"`
		Delta        string  `json:"delta"`
		Agreement    float64 `json:"label_agreement"`
		TestAccuracy float64 `json:"test_accuracy"`
		TestRows     int     `json:"test_rows"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatalf("%v\n%s", err, stdout)
	}
	t.Logf("%+v", res)
	if res.Labels != q || res.TestRows != 400 {
		t.Fatalf("labels %d, test rows %d", res.Labels, res.TestRows)
	}
	// A 64-feature softmax on 80 noisy labels: well above the 0.1 of
	// guessing on 400 held-out rows (guessing exceeds 0.4 with probability
	// below 1e-40). Since issue 22 the default trust model sizes the noise
	// for H = 3 honest shares of 10, so the labels are noisier than before:
	// measured 0.59-0.69, where 0.6 was the old floor.
	if res.TestAccuracy < 0.4 || res.Agreement < 0.8 {
		t.Errorf("student accuracy %.3f, agreement with its labels %.3f", res.TestAccuracy, res.Agreement)
	}
	// Independent computation: the labels compose by the exact privacy-loss
	// distribution of the implemented histogram (H honest shares of Coins
	// coins per class, both moved counts together), q = 80 queries at the
	// budget's δ = 1e-3 (simulate's default). The printed ε must lie between
	// the optimistic and pessimistic brackets on a grid 10× finer than
	// dppp's (so the truth is covered), over-charging at most the
	// accountant's stated slack (q·10⁻³ for dppp's grid).
	mf, err := classify.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	pr := mf.Privacy
	if pr == nil || pr.Labels != q || res.Epsilon != pr.Epsilon || pr.Delta != report.Up(1e-3) {
		t.Fatalf("privacy report %+v, printed ε %s; want %d labels at δ = 1e-3", pr, res.Epsilon, q)
	}
	params, k, err := readLabelsMeta(labels)
	if err != nil || k != q {
		t.Fatalf("privacy record: %v (%d labels)", err, k)
	}
	coins := int64(params.Honest) * params.Coins
	lo, err := accounting.BinomialHistogramEpsilon(coins, q, 1e-3, accounting.PLDOptions{Grid: 1e-4, Optimistic: true})
	if err != nil {
		t.Fatal(err)
	}
	hi, err := accounting.BinomialHistogramEpsilon(coins, q, 1e-3, accounting.PLDOptions{Grid: 1e-4})
	if err != nil {
		t.Fatal(err)
	}
	if e := mustFloat(t, pr.Epsilon); e < lo || e < hi-float64(q)*1e-4 || e > hi+float64(q)*1e-3+1e-3 {
		t.Fatalf("printed ε %s for %d coins × %d queries; the exact PLD gives [%v, %v] on a 1e-4 grid", pr.Epsilon, coins, q, lo, hi)
	}
	t.Logf("printed ε %s; exact PLD bracket [%.4f, %.4f] (%d coins, %d queries)", pr.Epsilon, lo, hi, coins, q)
	// Fewer labels than the privacy record counts: another file.
	short := filepath.Join(f.dir, "short.csv")
	lb := strings.SplitAfter(string(must(os.ReadFile(labels))), "\n")
	if err := os.WriteFile(short, []byte(strings.Join(lb[:11], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(short+".privacy.json", must(os.ReadFile(labels+".privacy.json")), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := runDPPP(t, "student", "--schema", f.spec, "--queries", f.queries, "--labels", short, "--out", out); err == nil || !strings.Contains(err.Error(), "its privacy record 80") {
		t.Fatalf("10 labels under a record of 80: %v", err)
	}
	// The text output says the same.
	text, _, err := runDPPP(t, "student", "--schema", f.spec, "--queries", f.queries, "--labels", labels,
		"--model", "softmax", "--max-iterations", "5", "--out", out)
	if err != nil || !strings.Contains(text, "("+pr.Epsilon+", "+pr.Delta+")-DP with respect to the teachers' data") {
		t.Fatalf("%v\n%s", err, text)
	}
}

func mustFloat(t *testing.T, s string) float64 {
	t.Helper()
	var x float64
	if err := json.Unmarshal([]byte(s), &x); err != nil || math.IsNaN(x) {
		t.Fatalf("%q: %v", s, err)
	}
	return x
}

// TestDPPPStudentBadInput: malformed labels name the file, line and
// column; labels without their privacy record, or a record for another
// number of labels, are refused.
func TestDPPPStudentBadInput(t *testing.T) {
	dir := t.TempDir()
	_, spec := writeEmbedded(t, "digits")
	queries := filepath.Join(dir, "q.csv")
	digitsLines(t, queries, 0, 5)
	write := func(name, s string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	nan := write("nan.csv", strings.Replace(string(must(os.ReadFile(queries))), "\n0,", "\nNaN,", 1))
	cases := []struct {
		name, queries, labels, want string
	}{
		{"unknown class", queries, write("l1.csv", "row,label\n1,3\n2,eleven\n"), "l1.csv:3:2: column \"label\": \"eleven\""},
		{"rows out of order", queries, write("l2.csv", "row,label\n1,3\n3,4\n"), "l2.csv:3:1: column \"row\""},
		{"not a labels file", queries, write("l3.csv", "a,b\n1,2\n"), "want row,label"},
		{"no privacy record", queries, write("l4.csv", "row,label\n1,3\n"), "privacy record"},
		{"NaN in the queries", nan, write("l5.csv", "row,label\n1,3\n"), "nan.csv:2:1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := runDPPP(t, "student", "--schema", spec, "--queries", c.queries, "--labels", c.labels, "--out", filepath.Join(dir, "s.json"))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func must[T any](x T, err error) T {
	if err != nil {
		panic(err)
	}
	return x
}
