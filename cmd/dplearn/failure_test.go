package main

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/internal/atomicfile"
	"github.com/dplearn/dplearn/internal/filelock"
	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/report"
	"github.com/dplearn/dplearn/schema"
)

// TestFitRefusesWideSchema: fit with a schema of 100,000 features is
// refused, before anything is read or allocated, naming the memory limit
// (it crashed with "fatal error: out of memory", issue 23 item 8).
func TestFitRefusesWideSchema(t *testing.T) {
	const d = 100000
	dir := t.TempDir()
	var js, head, row strings.Builder
	js.WriteString(`{"target": {"name": "y", "range": [0, 1]}, "features": [`)
	head.WriteString("y")
	row.WriteString("0.5")
	for i := 0; i < d; i++ {
		if i > 0 {
			js.WriteString(",")
		}
		fmt.Fprintf(&js, `{"name": "x%d", "range": [0, 1]}`, i)
		fmt.Fprintf(&head, ",x%d", i)
		row.WriteString(",0.5")
	}
	js.WriteString("]}")
	sch := writeFile(t, dir, "wide.json", js.String())
	data := writeFile(t, dir, "wide.csv", head.String()+"\n"+row.String()+"\n")
	out := filepath.Join(dir, "m.json")
	_, err := runCLI(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm",
		"--epsilon", "1", "--delta", "1e-9", "--out", out)
	if !errors.Is(err, dataset.ErrTooWide) || !strings.Contains(err.Error(), "limit of") || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("100,000 features: %v", err)
	}
	if _, serr := os.Stat(out); serr == nil {
		t.Fatal("a model was written")
	}
}

// TestOutputSameAsInputRefused: an output that is the same file as an
// input (by name, through a symbolic link, through a hard link) is refused
// before anything is read or spent, and the input is untouched (issue 23
// item 3: fit --data d.csv --out d.csv replaced the private table).
func TestOutputSameAsInputRefused(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 200)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	ledger := filepath.Join(dir, "L.json")
	if _, err := runCLI(t, "ledger", "create", ledger, "--name", "x", "--epsilon", "5", "--delta", "1e-5"); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "m.json")
	if _, err := runCLI(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "nonprivate", "--out", model); err != nil {
		t.Fatal(err)
	}
	symlink := filepath.Join(dir, "alias.csv")
	if err := os.Symlink(data, symlink); err != nil {
		t.Fatal(err)
	}
	hardlink := filepath.Join(dir, "hard.csv")
	if err := os.Link(data, hardlink); err != nil {
		t.Fatal(err)
	}
	fit := []string{"fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm", "--epsilon", "1", "--delta", "1e-6"}
	cases := []struct {
		name string
		args []string
		want string // the flag named as the input
	}{
		{"fit data", append(fit, "--out", data), "--data"},
		{"fit data via symlink", append(fit, "--out", symlink), "--data"},
		{"fit data via hard link", append(fit, "--out", hardlink), "--data"},
		{"fit schema", append(fit, "--out", sch), "--schema"},
		{"fit ledger", append(fit, "--ledger", ledger, "--out", ledger), "--ledger"},
		{"predict model", []string{"predict", "--model", model, "--data", data, "--out", model}, "--model"},
		{"predict data", []string{"predict", "--model", model, "--data", data, "--out", data}, "--data"},
		{"schema init", []string{"schema", "init", "--data", data, "--out", data, "--force"}, "--data"},
		{"cape serve schema", []string{"cape", "serve", "--insecure", "--listen", "127.0.0.1:0", "--sites", "a,b,c", "--schema", sch,
			"--model", "linear", "--epsilon", "1", "--delta", "1e-5", "--join-timeout", "1s", "--out", sch}, "--schema"},
		{"dppp serve queries", []string{"dppp", "serve", "--insecure", "--listen", "127.0.0.1:0", "--teachers", "a,b,c",
			"--public-key", filepath.Join(dir, "pub.pem"), "--schema", sch, "--queries", data, "--out", data}, "--queries"},
		{"dppp train data", []string{"dppp", "train", "--data", data, "--schema", sch, "--model", "softmax", "--out", data}, "--data"},
		{"dppp student labels", []string{"dppp", "student", "--queries", data, "--labels", model, "--schema", sch, "--out", model}, "--labels"},
		{"cape simulate data", []string{"cape", "simulate", "--data", data, "--schema", sch, "--model", "linear", "--epsilon", "1", "--delta", "1e-5", "--out", data}, "--data"},
		{"dppp serve ledger", []string{"dppp", "serve", "--insecure", "--listen", "127.0.0.1:0", "--teachers", "a,b,c",
			"--public-key", filepath.Join(dir, "pub.pem"), "--schema", sch, "--queries", data, "--ledger", filepath.Join(dir, "q.csv.privacy.json"), "--out", filepath.Join(dir, "q.csv")}, "--ledger"},
	}
	before := map[string]string{data: readFile(t, data), sch: readFile(t, sch), ledger: readFile(t, ledger), model: readFile(t, model)}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := runCLI(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), "same file as "+c.want) {
				t.Fatalf("dplearn %s: %v", strings.Join(c.args, " "), err)
			}
			for p, b := range before {
				if readFile(t, p) != b {
					t.Fatalf("%s was changed", p)
				}
			}
		})
	}
}

// TestOutputCheckedBeforeSpending: the protocol commands check --out before
// they listen, so a bad --out costs no party anything (issue 23 item 4:
// cape serve ran the protocol, charged every site, then failed on --out).
func TestOutputCheckedBeforeSpending(t *testing.T) {
	dir := t.TempDir()
	sch := writeFile(t, dir, "schema.json", wageSchema)
	data := writeWageData(t, dir, 50)
	bad := filepath.Join(dir, "nonexistent", "m.json")
	for name, args := range map[string][]string{
		"cape serve": {"cape", "serve", "--insecure", "--listen", "127.0.0.1:0", "--sites", "a,b,c", "--schema", sch,
			"--model", "linear", "--epsilon", "1", "--delta", "1e-5", "--join-timeout", "1s", "--out", bad},
		"dppp serve": {"dppp", "serve", "--insecure", "--listen", "127.0.0.1:0", "--teachers", "a,b,c",
			"--public-key", filepath.Join(dir, "pub.pem"), "--schema", sch, "--queries", data, "--join-timeout", "1s", "--out", bad},
		"dppp query": {"dppp", "query", "--insecure", "--name", "c", "--server", "127.0.0.1:1", "--schema", sch, "--data", data, "--out", bad},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := runCLI(t, args...)
			if err == nil || !strings.Contains(err.Error(), "--out") || !strings.Contains(err.Error(), "does not exist") {
				t.Fatalf("%s with --out in a missing directory: %v", name, err)
			}
		})
	}
}

// TestCapeServeFlagsBeforeListening: every flag of cape serve the protocol
// would refuse after the sites joined, or replace silently by a default, is
// refused at once, naming the flag (issue 23 item 9); and ledger charge
// refuses an empty --label.
func TestCapeServeFlagsBeforeListening(t *testing.T) {
	dir := t.TempDir()
	sch := writeFile(t, dir, "schema.json", wageSchema)
	base := []string{"cape", "serve", "--insecure", "--listen", "127.0.0.1:0", "--schema", sch, "--model", "linear",
		"--epsilon", "1", "--delta", "1e-5", "--join-timeout", "1s", "--out", filepath.Join(dir, "m.json")}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--sites", "a,,b"}, "--sites: name 2 of 3 is empty"},
		{[]string{"--sites", "a,b,c", "--split", "0"}, "--split must be in (0, 1)"},
		{[]string{"--sites", "a,b,c", "--split", "1.5"}, "--split must be in (0, 1)"},
		{[]string{"--sites", "a,b,c", "--noise-ratio", "0"}, "--noise-ratio must be in"},
		{[]string{"--sites", "a,b,c", "--colluders", "3"}, "--colluders 3"},
		{[]string{"--sites", "a,b,c", "--colluders", "-2"}, "--colluders must be at least -1"},
		{[]string{"--sites", "a,b,c", "--max-attempts", "0"}, "--max-attempts must be at least 1"},
		{[]string{"--sites", "a,b,c", "--round-timeout", "-1s"}, "--round-timeout must be > 0"},
		{[]string{"--sites", "a,b,c", "--reconnect-grace", "0s"}, "--reconnect-grace must be > 0"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			_, err := runCLI(t, append(append([]string(nil), base...), c.args...)...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("want %q, got %v", c.want, err)
			}
		})
	}
	ledger := filepath.Join(dir, "L.json")
	if _, err := runCLI(t, "ledger", "create", ledger, "--name", "x", "--epsilon", "1"); err != nil {
		t.Fatal(err)
	}
	for _, label := range []string{"", "   "} {
		if _, err := runCLI(t, "ledger", "charge", ledger, "--label", label, "--epsilon", "0.5"); err == nil || !strings.Contains(err.Error(), "--label is empty") {
			t.Fatalf("ledger charge --label %q: %v", label, err)
		}
	}
	if _, err := runCLI(t, "ledger", "create", filepath.Join(dir, "M.json"), "--name", "", "--epsilon", "1"); err == nil {
		t.Fatal("ledger create --name \"\" accepted")
	}
}

// enospcWriter fails every write as a full disk does.
type enospcWriter struct{}

func (enospcWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestPublishModelOrder checks the order write-temp → fsync → charge →
// rename (issue 23 item 7) at each failure: a write that fails (a full
// disk) charges nothing and leaves no temporary file; a charge refused
// leaves no model and no temporary file; a rename that fails after the
// charge keeps the model in the temporary file and the message says what
// was charged and where the model is.
func TestPublishModelOrder(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	model := &regress.Model{Format: regress.ModelFormat, Kind: regress.Linear, Schema: &schema.Schema{Target: schema.Target{Name: "y"}},
		Privacy: report.Privacy{Private: true, Epsilon: 0.5, Delta: 1e-6}}
	newLedger := func(t *testing.T, eps float64) (*ledger.Ledger, string) {
		p := filepath.Join(t.TempDir(), "L.json")
		l, err := ledger.Create(ctx, p, "x", ledger.Budget{Epsilon: eps, Delta: 1e-5})
		if err != nil {
			t.Fatal(err)
		}
		return l, p
	}
	charges := func(t *testing.T, l *ledger.Ledger) int {
		st, err := l.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(st.Charges)
	}
	temps := func(t *testing.T, target string) []string {
		m, _ := filepath.Glob(filepath.Join(filepath.Dir(target), "."+filepath.Base(target)+".tmp*"))
		return m
	}
	t.Run("full disk", func(t *testing.T) {
		l, lp := newLedger(t, 1)
		target := filepath.Join(dir, "full.json")
		out, err := createOutput(target, nil)
		if err != nil {
			t.Fatal(err)
		}
		out.w = enospcWriter{}
		err = publishModel(ctx, model, out, l, fitOptions{ledger: lp, out: target})
		if !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "nothing was charged") {
			t.Fatalf("full disk: %v", err)
		}
		if n := charges(t, l); n != 0 {
			t.Fatalf("a failed write charged the ledger (%d charges)", n)
		}
		if left := temps(t, target); len(left) != 0 {
			t.Fatalf("temporary files left: %v", left)
		}
	})
	t.Run("over budget", func(t *testing.T) {
		l, lp := newLedger(t, 0.25)
		target := filepath.Join(dir, "over.json")
		out, err := createOutput(target, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = publishModel(ctx, model, out, l, fitOptions{ledger: lp, out: target})
		if !errors.Is(err, ledger.ErrOverBudget) {
			t.Fatalf("over budget: %v", err)
		}
		if _, serr := os.Stat(target); serr == nil {
			t.Fatal("a model was written past the budget")
		}
		if left := temps(t, target); len(left) != 0 {
			t.Fatalf("temporary files left: %v", left)
		}
	})
	t.Run("rename fails after the charge", func(t *testing.T) {
		l, lp := newLedger(t, 1)
		target := filepath.Join(dir, "busy.json")
		out, err := createOutput(target, nil)
		if err != nil {
			t.Fatal(err)
		}
		// The target becomes a non-empty directory after the output was
		// opened: the rename fails, as a vanished directory would.
		if err := os.MkdirAll(filepath.Join(target, "x"), 0o700); err != nil {
			t.Fatal(err)
		}
		err = publishModel(ctx, model, out, l, fitOptions{ledger: lp, out: target})
		if err == nil || !strings.Contains(err.Error(), "was charged ε = 0.5, δ = 1e-06") || !strings.Contains(err.Error(), "the content is in") {
			t.Fatalf("failed rename: %v", err)
		}
		if n := charges(t, l); n != 1 {
			t.Fatalf("%d charges, want the one the message names", n)
		}
		left := temps(t, target)
		if len(left) != 1 || !strings.Contains(err.Error(), left[0]) {
			t.Fatalf("the paid-for model should stay in the temporary file the message names: %v", left)
		}
		if b, err := os.ReadFile(left[0]); err != nil || !strings.Contains(string(b), `"format": "`+regress.ModelFormat+`"`) {
			t.Fatalf("the temporary file does not hold the model: %v\n%s", err, b)
		}
	})
}

// TestFitFullDeviceSaysWhatWasCharged: an output written through (here
// /dev/full, which fails every write with ENOSPC) is charged before it is
// written, so that nothing is released unpaid; the failure then says what
// was charged.
func TestFitFullDeviceSaysWhatWasCharged(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full")
	}
	dir := t.TempDir()
	data := writeWageData(t, dir, 300)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	ledger := filepath.Join(dir, "L.json")
	if _, err := runCLI(t, "ledger", "create", ledger, "--name", "x", "--epsilon", "2", "--delta", "1e-5"); err != nil {
		t.Fatal(err)
	}
	_, err := runCLI(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm",
		"--epsilon", "1", "--delta", "1e-6", "--ledger", ledger, "--out", "/dev/full")
	if err == nil || !strings.Contains(err.Error(), "no space left on device") || !strings.Contains(err.Error(), "was charged ε = 1") {
		t.Fatalf("fit --out /dev/full: %v", err)
	}
}

// TestStaleTemporariesRemoved: temporary files of a killed fit (unlocked,
// older than atomicfile.StaleAge) are removed by the next fit to the same --out; a
// live writer's (locked) and a fresh one are kept (issue 23 item 7: 79
// .m.json.tmp* files were left behind).
func TestStaleTemporariesRemoved(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 200)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	out := filepath.Join(dir, "m.json")
	old := time.Now().Add(-2 * atomicfile.StaleAge)
	mk := func(name string, age time.Time) string {
		p := writeFile(t, dir, name, "{")
		if err := os.Chtimes(p, age, age); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dead1, dead2 := mk(".m.json.tmp111", old), mk(".m.json.tmp222", old)
	fresh := mk(".m.json.tmp333", time.Now())
	live := mk(".m.json.tmp444", old)
	f, err := os.Open(live)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if ok, err := filelock.TryLock(f); !ok || err != nil {
		t.Fatalf("lock: %v %v", ok, err)
	}
	other := mk(".other.json.tmp555", old)
	if _, err := runCLI(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "nonprivate", "--out", out); err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]bool{dead1: false, dead2: false, fresh: true, live: true, other: true} {
		if _, err := os.Stat(p); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(p), err == nil, want)
		}
	}
}

// TestFitKilledAtRandomInstants runs fit --ledger in a child process and
// kills it (SIGKILL) at uniformly random instants over a fit's duration,
// 40 times. After every run: a model on disk was charged (nothing released
// unpaid), and a charge without a model leaves the complete, paid-for model
// in the output's temporary file (the one instant between charge and
// rename; issue 23 item 7).
func TestFitKilledAtRandomInstants(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns and kills 40 processes")
	}
	dir := t.TempDir()
	data := writeWageData(t, dir, 3000)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	ledgerPath := filepath.Join(dir, "L.json")
	if _, err := runCLI(t, "ledger", "create", ledgerPath, "--name", "x", "--epsilon", "1000", "--delta", "1e-3"); err != nil {
		t.Fatal(err)
	}
	run := func(k int, kill time.Duration) {
		cmd := exec.Command(os.Args[0], "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm",
			"--epsilon", "0.5", "--delta", "1e-6", "--ledger", ledgerPath, "--out", filepath.Join(dir, fmt.Sprintf("m%d.json", k)))
		cmd.Env = append(os.Environ(), capeChildEnv+"=1")
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		if kill > 0 {
			time.AfterFunc(kill, func() { cmd.Process.Kill() })
		}
		cmd.Wait()
	}
	start := time.Now()
	run(0, 0)
	full := time.Since(start)
	rng := rand.New(rand.NewPCG(7, 7))
	const runs = 40
	for k := 1; k <= runs; k++ {
		run(k, time.Duration(rng.Float64()*1.2*float64(full)))
	}
	l, err := ledger.Open(ledgerPath)
	if err != nil {
		t.Fatalf("ledger after kills: %v", err)
	}
	st, err := l.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var models, charged, paidTemps int
	for k := 0; k <= runs; k++ {
		name := fmt.Sprintf("m%d.json", k)
		c := 0
		for _, ch := range st.Charges {
			if strings.HasSuffix(ch.Label, "→ "+name) {
				c++
			}
		}
		_, merr := os.Stat(filepath.Join(dir, name))
		temps, _ := filepath.Glob(filepath.Join(dir, "."+name+".tmp*"))
		switch {
		case c > 1:
			t.Errorf("%s charged %d times", name, c)
		case merr == nil && c == 0:
			t.Errorf("%s was written without a charge", name)
		case merr != nil && c == 1:
			if len(temps) != 1 {
				t.Errorf("%s charged, no model and %d temporary files", name, len(temps))
				continue
			}
			if _, err := loadModel(temps[0], nil); err != nil {
				t.Errorf("%s charged; its temporary file does not hold the model: %v", name, err)
			}
			paidTemps++
		}
		if merr == nil {
			models++
		}
		charged += c
	}
	t.Logf("%d runs (a full fit %v): %d models, %d charges, %d charges whose model is in the temporary file", runs+1, full.Round(time.Millisecond), models, charged, paidTemps)
}

// TestFitLedgerThroughSymlink: two ε = 1 fits against a budget of ε = 1,
// once through link.json and once through real/budget.json: the second is
// refused and writes no model (issue 23 item 2: both passed).
func TestFitLedgerThroughSymlink(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 500)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	if err := os.Mkdir(filepath.Join(dir, "real"), 0o700); err != nil {
		t.Fatal(err)
	}
	realPath := filepath.Join(dir, "real", "budget.json")
	if _, err := runCLI(t, "ledger", "create", realPath, "--name", "x", "--epsilon", "1", "--delta", "1e-5"); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.json")
	if err := os.Symlink(realPath, link); err != nil {
		t.Fatal(err)
	}
	fit := func(ledger, out string) error {
		_, err := runCLI(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "fm",
			"--epsilon", "1", "--ledger", ledger, "--out", filepath.Join(dir, out))
		return err
	}
	if err := fit(link, "a.json"); err != nil {
		t.Fatal(err)
	}
	err := fit(realPath, "b.json")
	if err == nil || !strings.Contains(err.Error(), "spent ε = 1 of 1") {
		t.Fatalf("second ε = 1 fit through the real path: %v (the budget was spent twice)", err)
	}
	if _, serr := os.Stat(filepath.Join(dir, "b.json")); serr == nil {
		t.Fatal("the refused fit wrote a model")
	}
	if st, err := os.Lstat(link); err != nil || st.Mode()&os.ModeSymlink == 0 {
		t.Fatalf("link.json is no longer a symbolic link: %v", err)
	}
}
