package classify

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as a fake external teacher: with
// DPLEARN_FAKE_TEACHER=mode it speaks (or breaks) the protocol.
func TestMain(m *testing.M) {
	if mode := os.Getenv("DPLEARN_FAKE_TEACHER"); mode != "" {
		fakeTeacher(mode)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func fakeTeacher(mode string) {
	out := bufio.NewWriter(os.Stdout)
	send := func(s string) {
		out.WriteString(s + "\n")
		out.Flush()
	}
	switch mode {
	case "no-handshake":
		time.Sleep(time.Minute)
	case "bad-handshake":
		send(`{"classes": 2, "features": 3}`)
	case "version-2":
		send(`{"dplearn_teacher": 2, "classes": 2, "features": 3}`)
	case "chatty-start":
		send("loading model...")
	case "die-at-start":
		fmt.Fprintln(os.Stderr, "Traceback: ModuleNotFoundError: No module named 'sklearn'")
		os.Exit(1)
	case "single":
		send(`{"dplearn_teacher": 1, "classes": 2, "features": 3}`)
	default:
		send(`{"dplearn_teacher": 1, "classes": 2, "features": 3, "batch": true}`)
	}
	label := func(x []float64) int {
		s := 0.0
		for _, v := range x {
			s += v
		}
		if s > 0 {
			return 1
		}
		return 0
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<24)
	n := 0
	for in.Scan() {
		n++
		var req struct {
			X     []float64   `json:"x"`
			Batch [][]float64 `json:"batch"`
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			send(`{"error": "bad request"}`)
			continue
		}
		switch mode {
		case "single":
			p := 0.25
			if label(req.X) == 1 {
				p = 0.75
			}
			send(fmt.Sprintf(`{"proba": [%v, %v]}`, 1-p, p))
			continue
		case "garbage":
			send("hello")
		case "nan":
			send(`{"labels": [NaN]}`)
		case "bad-label":
			send(`{"labels": [7]}`)
		case "float-label":
			send(`{"labels": [1.5]}`)
		case "wrong-count":
			send(`{"labels": []}`)
		case "proba-sum":
			send(`{"probas": [[0.2, 0.2]]}`)
		case "proba-len":
			send(`{"probas": [[1]]}`)
		case "extra-key":
			send(`{"labels": [1], "confidence": [0.9]}`)
		case "two-kinds":
			send(`{"labels": [1], "probas": [[0, 1]]}`)
		case "single-reply":
			send(`{"label": 1}`)
		case "slow":
			time.Sleep(time.Minute)
		case "exit":
			fmt.Fprintln(os.Stderr, "model crashed: out of memory")
			os.Exit(3)
		case "error-once":
			if n == 1 {
				send(`{"error": "model still warming up"}`)
				continue
			}
			fallthrough
		case "chatty":
			if mode == "chatty" {
				send(`{"labels": [0]}`)
				send("debug: answered")
				continue
			}
			fallthrough
		default:
			labels := make([]int, len(req.Batch))
			for i, x := range req.Batch {
				labels[i] = label(x)
			}
			b, _ := json.Marshal(map[string][]int{"labels": labels})
			send(string(b))
		}
	}
}

func startFake(t *testing.T, mode string, opt ExternalOptions) (*External, error) {
	t.Helper()
	opt.Env = append(os.Environ(), "DPLEARN_FAKE_TEACHER="+mode)
	e, err := StartExternal(ctx, []string{os.Args[0]}, opt)
	if err == nil {
		t.Cleanup(func() { e.Close() })
	}
	return e, err
}

var queryRows = [][]float64{{1, 2, 3}, {-1, -2, 0}, {0, 0, 0.5}}

func TestExternalFake(t *testing.T) {
	for _, mode := range []string{"batch", "single"} {
		e, err := startFake(t, mode, ExternalOptions{MaxBatch: 2, Classes: 2, Features: 3})
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.PredictBatch(ctx, queryRows)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != "[1 0 1]" {
			t.Fatalf("%s: labels %v", mode, got)
		}
		if _, err := e.PredictBatch(ctx, [][]float64{{1, 2}}); !errors.Is(err, ErrWidth) {
			t.Fatalf("short row: %v", err)
		}
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := e.PredictBatch(ctx, queryRows); err == nil {
			t.Fatal("closed predictor answered")
		}
	}
	// An error reply fails that request only.
	e, err := startFake(t, "error-once", ExternalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.PredictBatch(ctx, queryRows); err == nil || !strings.Contains(err.Error(), "warming up") {
		t.Fatalf("error reply: %v", err)
	}
	if got, err := e.PredictBatch(ctx, queryRows); err != nil || fmt.Sprint(got) != "[1 0 1]" {
		t.Fatalf("after an error reply: %v %v", got, err)
	}
}

func TestExternalMalformed(t *testing.T) {
	starts := map[string]string{
		"no-handshake":  "no handshake line",
		"bad-handshake": "lacks dplearn_teacher",
		"version-2":     "protocol version 2",
		"chatty-start":  "handshake \"loading model...\"",
		"die-at-start":  "No module named 'sklearn'",
	}
	for mode, want := range starts {
		_, err := startFake(t, mode, ExternalOptions{StartTimeout: 300 * time.Millisecond})
		if err == nil || !errors.Is(err, ErrExternal) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to mention %q", mode, err, want)
		}
	}
	if _, err := startFake(t, "batch", ExternalOptions{Classes: 10}); err == nil || !strings.Contains(err.Error(), "expected 10") {
		t.Errorf("class mismatch: %v", err)
	}
	replies := map[string]string{
		"garbage":      `reply "hello" is not a JSON reply object`,
		"nan":          "not a JSON reply object",
		"bad-label":    "label 7 is not an integer from 0 to 1",
		"float-label":  "label 1.5",
		"wrong-count":  "0 labels for 3 rows",
		"chatty":       "write logs to stderr", // on the second request
		"proba-sum":    "sum to 0.4",
		"proba-len":    "1 probabilities for 2 classes",
		"extra-key":    "unknown field",
		"two-kinds":    "exactly one of",
		"single-reply": "to a batch request",
		"slow":         "no reply within",
		"exit":         "out of memory",
	}
	for mode, want := range replies {
		e, err := startFake(t, mode, ExternalOptions{RequestTimeout: 300 * time.Millisecond})
		if err != nil {
			t.Fatalf("%s: %v", mode, err)
		}
		rows := queryRows[:1]
		if mode == "wrong-count" {
			rows = queryRows
		}
		_, err = e.PredictBatch(ctx, rows)
		if mode == "chatty" && err == nil {
			_, err = e.PredictBatch(ctx, rows)
		}
		if err == nil || !errors.Is(err, ErrExternal) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v, want it to mention %q", mode, err, want)
			continue
		}
		// The program was killed: every later call fails the same way.
		if _, err2 := e.PredictBatch(ctx, queryRows); err2 == nil {
			t.Errorf("%s: a broken predictor answered", mode)
		}
	}
	if _, err := StartExternal(ctx, []string{filepath.Join(t.TempDir(), "missing")}, ExternalOptions{}); !errors.Is(err, ErrExternal) {
		t.Errorf("missing program: %v", err)
	}
}

// pythonTeacher is the example of docs/teachers.md.
const pythonTeacher = `import json, sys

CLASSES, FEATURES = 2, 3          # what your model predicts, and from how many numbers

def predict(x):                   # e.g. return int(clf.predict([x])[0]) with scikit-learn
    return 1 if sum(x) > 0 else 0

def send(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()

send({"dplearn_teacher": 1, "classes": CLASSES, "features": FEATURES, "batch": True})
for line in sys.stdin:            # one request per line, until dplearn closes stdin
    req = json.loads(line)
    try:
        if "batch" in req:
            send({"labels": [predict(x) for x in req["batch"]]})
        else:
            send({"label": predict(req["x"])})
    except Exception as e:        # report the failure and keep serving
        send({"error": repr(e)})
`

// TestTeachersDocExample checks that docs/teachers.md shows exactly the
// program TestExternalPython runs.
func TestTeachersDocExample(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "docs", "teachers.md"))
	if err != nil {
		t.Skipf("docs not beside the package: %v", err)
	}
	_, after, ok := strings.Cut(string(doc), "```python\n")
	block, _, ok2 := strings.Cut(after, "```")
	if !ok || !ok2 || block != pythonTeacher {
		t.Fatalf("docs/teachers.md's Python example differs from the tested one:\n%s", block)
	}
}

func TestExternalPython(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 not installed: the documented example is not run")
	}
	path := filepath.Join(t.TempDir(), "teacher.py")
	if err := os.WriteFile(path, []byte(pythonTeacher), 0o644); err != nil {
		t.Fatal(err)
	}
	// Through a model file, as `dplearn dppp teach` would open it.
	f := &ModelFile{Format: FileFormat, Version: FileVersion, Kind: KindExternal, ClassNames: []string{"no", "yes"}, Features: 3,
		External: &ExternalConfig{Command: []string{py, path}, RequestTimeout: "20s"}}
	mpath := filepath.Join(t.TempDir(), "teacher.json")
	if err := f.Save(mpath); err != nil {
		t.Fatal(err)
	}
	f2, err := Load(mpath)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f2.Open(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	rows := make([][]float64, 600) // three batch requests
	for i := range rows {
		rows[i] = []float64{float64(i%3) - 1, 0.5, -0.5}
	}
	got, err := p.PredictBatch(ctx, rows)
	if err != nil {
		t.Fatal(err)
	}
	for i, g := range got {
		if want := btoi(i%3 == 2); g != want {
			t.Fatalf("row %d: label %d, want %d", i, g, want)
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
}
