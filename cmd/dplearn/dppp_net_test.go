package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dplearn/dplearn/classify"
	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/paillier"
	"github.com/spf13/cobra"
)

// dpppNetFiles: n softmax teachers trained by 'dppp train' on disjoint
// parts of digits, the spec, and a query table of the first q rows.
type dpppNetFiles struct {
	dir, spec, queries string
	models             []string
}

// trainedModels holds the model files newDPPPNetFiles trained, by
// partition (i, n), for the later tests of this binary: 'dppp train' is
// deterministic, and the tests ask for the same ten teachers many times.
// Each test still gets its own copies.
var trainedModels = struct {
	sync.Mutex
	files map[[2]int][]byte
}{files: map[[2]int][]byte{}}

func newDPPPNetFiles(t *testing.T, n, q int) *dpppNetFiles {
	t.Helper()
	data, spec := writeEmbedded(t, "digits")
	f := &dpppNetFiles{dir: t.TempDir(), spec: spec}
	trainedModels.Lock()
	defer trainedModels.Unlock()
	for i := 1; i <= n; i++ {
		out := filepath.Join(f.dir, fmt.Sprintf("t%d.json", i))
		key := [2]int{i, n}
		if b, ok := trainedModels.files[key]; ok {
			if err := os.WriteFile(out, b, 0o644); err != nil {
				t.Fatal(err)
			}
		} else {
			if _, stderr, err := runDPPP(t, "train", "--data", data, "--schema", spec, "--partition", fmt.Sprintf("%d/%d", i, n),
				"--model", "softmax", "--max-iterations", "30", "--out", out); err != nil {
				t.Fatalf("train %d: %v\n%s", i, err, stderr)
			}
			b, err := os.ReadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			trainedModels.files[key] = b
		}
		f.models = append(f.models, out)
	}
	f.queries = filepath.Join(f.dir, "queries.csv")
	digitsLines(t, f.queries, 0, q)
	return f
}

func checkLabels(t *testing.T, path string, q int, hist bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != q+1 {
		t.Fatalf("%d lines in %s, want %d:\n%s", len(lines), path, q+1, b)
	}
	cols := 2
	if hist {
		cols += 10
	}
	if got := len(strings.Split(lines[0], ",")); got != cols {
		t.Fatalf("header %q: %d columns, want %d", lines[0], got, cols)
	}
}

func TestDPPPSimulateCLI(t *testing.T) {
	f := newDPPPNetFiles(t, 10, 20)
	out := filepath.Join(f.dir, "labels.csv")
	stdout, stderr, err := runDPPP(t, "simulate", "--models", strings.Join(f.models, ","), "--schema", f.spec,
		"--queries", f.queries, "--out", out, "--histogram", "--insecure-test-keys", "--round-timeout", "20s", "--budget-epsilon", "100")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "labelled 20 queries") || !strings.Contains(stdout, "t = 6") {
		t.Fatalf("stdout:\n%s", stdout)
	}
	checkLabels(t, out, 20, true)
	t.Log(stdout)
}

func TestDPPPSimulateRefusesMissingKeyChoice(t *testing.T) {
	_, _, err := runDPPP(t, "simulate", "--models", "a.json", "--schema", "s.json", "--queries", "q.csv", "--out", "o.csv", "--gamma", "3/2")
	if err == nil {
		t.Fatal("accepted one teacher")
	}
	// --gamma is refused: the trust model is --colluders and --absent.
	if _, err := (&dpppDeployFlags{gamma: "2/3", colluders: -1, absent: -1}).config([]string{"a", "b", "c"}, 2, 1, [32]byte{}); err == nil || !strings.Contains(err.Error(), "--gamma was removed") {
		t.Fatalf("--gamma: %v", err)
	}
	// --colluders 0 and --absent 0 mean none (dppp.NoneAssumed), -1 the
	// defaults.
	cfg, err := (&dpppDeployFlags{colluders: 0, absent: -1, noise: "binomial"}).config([]string{"a", "b", "c"}, 2, 1, [32]byte{})
	if err != nil || cfg.Colluders != dppp.NoneAssumed || cfg.Absent != 0 {
		t.Fatalf("--colluders 0: %+v, %v", cfg, err)
	}
	if _, _, err := runDPPP(t, "serve", "--teachers", "a,b"); err == nil || !strings.Contains(err.Error(), "--public-key") {
		t.Fatalf("serve without flags: %v", err)
	}
}

func TestDPPPNetHelp(t *testing.T) {
	for _, c := range []string{"serve", "teach", "query", "simulate", "student"} {
		stdout, _, err := runDPPP(t, c, "--help")
		if err != nil || !strings.Contains(stdout, "Examples:") || !strings.Contains(stdout, "dplearn dppp "+c) {
			t.Fatalf("%s --help: %v\n%s", c, err, stdout)
		}
	}
}

// dpppProc is a child process running dplearn (the test binary re-executed
// through capeChildEnv).
type dpppProc struct {
	name   string
	cmd    *exec.Cmd
	stdout bytes.Buffer
	mu     sync.Mutex
	lines  []string
	addr   chan string
	done   chan struct{}
	err    error
}

func startDPPP(t *testing.T, ctx context.Context, name string, args ...string) *dpppProc {
	t.Helper()
	p := &dpppProc{name: name, addr: make(chan string, 1), done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, os.Args[0], append([]string{"dppp"}, args...)...)
	p.cmd.Env = append(os.Environ(), capeChildEnv+"=1")
	p.cmd.Stdout = &p.stdout
	p.cmd.WaitDelay = 2 * time.Second
	pipe, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done
	})
	go func() {
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			p.mu.Lock()
			p.lines = append(p.lines, line)
			p.mu.Unlock()
			if _, rest, ok := strings.Cut(line, "listening on "); ok {
				a, _, _ := strings.Cut(rest, ";")
				select {
				case p.addr <- a:
				default:
				}
			}
		}
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	return p
}

func (p *dpppProc) stderr() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.lines, "\n")
}

func (p *dpppProc) wait(t *testing.T, d time.Duration) error {
	t.Helper()
	select {
	case <-p.done:
		return p.err
	case <-time.After(d):
		_ = p.cmd.Process.Kill()
		<-p.done
		t.Fatalf("%s did not finish within %v; stderr:\n%s", p.name, d, p.stderr())
		return nil
	}
}

// TestDPPPRealProcesses: the aggregator and 10 teachers as separate
// processes on 127.0.0.1 with mutual TLS, t = 6, 50 digits queries (3
// batches). teacher01 exits after its vote of batch 1: it cannot sign the
// contributor set, so batch 1 is abandoned (nothing decrypted) and its
// rows are voted again by the nine others, as are the later batches. The teachers draw reproducible noise
// (--test-noise-seed), so the test recomputes every share in plaintext and
// checks that the decrypted noisy histograms and labels are exactly the
// plaintext path's.
func TestDPPPRealProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const n, thr, q = 10, 6, 50
	f := newDPPPNetFiles(t, n, q)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := newDPPPProcNet(t, n, thr, nil, "--epsilon", "1", "--delta", "1e-5", "--budget-epsilon", "100", "--budget-delta", "1e-3")
	out := filepath.Join(f.dir, "labels.csv")
	srv, addr := d.serve(ctx, "--schema", f.spec, "--queries", f.queries, "--out", out, "--histogram")
	teachers := d.teach(ctx, addr, f.models, func(i int) []string {
		a := []string{"--ledger", filepath.Join(f.dir, d.names[i]+"-ledger.json"), "--test-noise-seed", fmt.Sprint(1000 + i)}
		if i == 0 {
			a = append(a, "--test-exit-after-vote", "1")
		}
		return a
	})
	if err := srv.wait(t, 60*time.Second); err != nil {
		for _, tp := range teachers {
			t.Logf("%s:\n%s", tp.name, tp.stderr())
		}
		t.Fatalf("serve: %v\n%s", err, srv.stderr())
	}
	for i, tp := range teachers {
		err := tp.wait(t, 15*time.Second)
		if (i == 0) != (err != nil) {
			t.Errorf("%s: exit %v\n%s", tp.name, err, tp.stderr())
		}
	}
	checkLabels(t, out, q, true)
	if !strings.Contains(srv.stdout.String(), fmt.Sprintf("labelled %d queries", q)) {
		t.Fatalf("serve's stdout:\n%s", srv.stdout.String())
	}
	// teacher01 is either noticed gone before the decryption requests (not
	// asked) or asked and then rejected as lost; either way it decrypts
	// nothing.
	if !strings.Contains(srv.stderr(), "teacher01 disconnected") || strings.Contains(srv.stderr(), "decrypted by [teacher01") {
		t.Errorf("teacher01's exit not handled:\n%s", srv.stderr())
	}
	t.Logf("aggregator:\n%s\n%s", srv.stderr(), srv.stdout.String())
	t.Logf("teacher02:\n%s\n%s", teachers[1].stderr(), teachers[1].stdout.String())
	// Batch 1 is abandoned (teacher01 never signs its set): every teacher drew
	// its shares for it; its rows are voted again by the nine others.
	want := dpppPlaintextPath(t, ctx, dpppInputFlags{spec: f.spec}, f.queries, f.models, d.common, d.tpk(), func(batch, teacher int) bool { return teacher > 0 || batch == 0 }, map[int]bool{0: true})
	checkPlaintextPath(t, out, want)
}

// checkPlaintextPath compares a LABELS.csv (without its header) with the
// plaintext path's lines.
func checkPlaintextPath(t *testing.T, path, want string) {
	t.Helper()
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if g := strings.Join(strings.Split(strings.TrimSpace(string(got)), "\n")[1:], "\n"); g != want {
		t.Fatalf("labels and histograms differ from the plaintext path:\ngot\n%s\nwant\n%s", g, want)
	}
}

// dpppPlaintextPath recomputes the teachers' shares from their seeds and
// models without encryption, sums those of the contributors of each batch
// (contributed(batch, teacher), 0-based; batches numbered as voted, the
// abandoned ones included: their shares are drawn, then dropped and their
// rows voted again) and tallies them like the aggregator: the lines
// "row,label,votes..." that serve writes.
func dpppPlaintextPath(t *testing.T, ctx context.Context, in dpppInputFlags, queries string, models []string, common []string, tpk *paillier.ThresholdPublicKey, contributed func(batch, teacher int) bool, abandoned map[int]bool) string {
	t.Helper()
	var d dpppDeployFlags
	cmd := &cobra.Command{}
	d.register(cmd, true)
	if err := cmd.ParseFlags(common); err != nil {
		t.Fatal(err)
	}
	input, rows, err := in.load(ctx, queries)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := d.config(trimAll(d.teachers), len(input.classNames), input.features, input.fingerprint)
	if err != nil {
		t.Fatal(err)
	}
	p, err := dppp.Calibrate(cfg, tpk)
	if err != nil {
		t.Fatal(err)
	}
	var srcs []noise.Source
	var preds [][]int
	for i, path := range models {
		mf, err := classify.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		pr, err := mf.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		labels, err := pr.PredictBatch(ctx, rows)
		pr.Close()
		if err != nil {
			t.Fatal(err)
		}
		preds = append(preds, labels)
		srcs = append(srcs, noise.NewInsecureSeeded(uint64(1000+i)))
	}
	names := input.classNames
	var lines []string
	for b, start := 0, 0; start < len(rows); b++ {
		end := min(start+p.QPC, len(rows))
		raw := make([]int64, p.QPC*p.Classes)
		contributors := 0
		for i := range models {
			if !contributed(b, i) {
				continue
			}
			share, err := p.Share(srcs[i], preds[i][start:end])
			if err != nil {
				t.Fatal(err)
			}
			for j, v := range share {
				raw[j] += v
			}
			contributors++
		}
		if abandoned[b] {
			continue
		}
		hist, labels, err := p.Tally(raw, contributors, end-start)
		if err != nil {
			t.Fatal(err)
		}
		for j, l := range labels {
			rec := []string{strconv.Itoa(start + j + 1), names[l]}
			for _, v := range hist[j] {
				rec = append(rec, strconv.FormatFloat(v, 'g', -1, 64))
			}
			lines = append(lines, strings.Join(rec, ","))
		}
		start += p.QPC
	}
	return strings.Join(lines, "\n")
}

// TestDPPPQueryClientProcess: 'dppp query' as a separate client process
// with its own certificate asks a 'serve --clients' aggregator of 5
// teachers (t = 3) for 6 labels with histograms.
func TestDPPPQueryClientProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	const n, thr, q = 5, 3, 6
	f := newDPPPNetFiles(t, n, q)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	d := newDPPPProcNet(t, n, thr, []string{"client"}, "--budget-epsilon", "20")
	srv, addr := d.serve(ctx, "--schema", f.spec, "--clients", "client", "--max-requests", "1")
	teachers := d.teach(ctx, addr, f.models, nil)
	out := filepath.Join(f.dir, "client-labels.csv")
	client := startDPPP(t, ctx, "client", "query", "--server", addr, "--certs", filepath.Join(d.pki, "client"), "--schema", f.spec,
		"--data", f.queries, "--out", out, "--histogram", "--timeout", "60s")
	if err := client.wait(t, 60*time.Second); err != nil {
		t.Fatalf("query: %v\n%s\naggregator:\n%s", err, client.stderr(), srv.stderr())
	}
	d.wait(srv, teachers)
	checkLabels(t, out, q, true)
	t.Logf("client:\n%s\n%s\naggregator:\n%s", client.stderr(), client.stdout.String(), srv.stderr())
}

// TestDPPPSimulateProcesses: 'dppp simulate --processes' runs the
// aggregator and 5 teachers as separate processes over mutual TLS on
// 127.0.0.1 (certificates and key shares made for the run), labels 12
// queries and reports the budget; every teacher process logs its own
// spend.
func TestDPPPSimulateProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	f := newDPPPNetFiles(t, 5, 12)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	out := filepath.Join(f.dir, "labels.csv")
	p := startDPPP(t, ctx, "simulate", "simulate", "--models", strings.Join(f.models, ","), "--schema", f.spec,
		"--queries", f.queries, "--out", out, "--histogram", "--insecure-test-keys", "--processes", "--round-timeout", "20s", "--budget-epsilon", "50")
	if err := p.wait(t, 75*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, p.stderr())
	}
	checkLabels(t, out, 12, true)
	stdout, stderr := p.stdout.String(), p.stderr()
	if !strings.Contains(stdout, "labelled 12 queries") || !strings.Contains(stdout, "queries remain") {
		t.Fatalf("stdout:\n%s", stdout)
	}
	for _, want := range []string{"listening on 127.0.0.1:", "mutual TLS", "teacher03: ", "teacher05: this run: spent"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if _, err := os.Stat(out + ".privacy.json"); err != nil {
		t.Error(err)
	}
}

// TestDPPPSimulateBudgetQueries: --budget-queries Q sizes the noise for the
// total budget and prints the derived per-query guarantee; the budget then
// allows at least Q queries, and --epsilon beside it is refused.
func TestDPPPSimulateBudgetQueries(t *testing.T) {
	f := newDPPPNetFiles(t, 10, 20)
	out := filepath.Join(f.dir, "labels.csv")
	stdout, stderr, err := runDPPP(t, "simulate", "--models", strings.Join(f.models, ","), "--schema", f.spec,
		"--queries", f.queries, "--out", out, "--insecure-test-keys", "--round-timeout", "20s",
		"--budget-epsilon", "10", "--budget-delta", "1e-5", "--budget-queries", "20")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	both := stdout + stderr
	for _, want := range []string{"labelled 20 queries", "for the total budget (10, 1e-05) over 20 queries", "one query alone: (", "exact privacy-loss distribution", "of the budget (10, 1e-05); 0 of 20 queries remain"} {
		if !strings.Contains(both, want) {
			t.Errorf("output lacks %q:\n%s", want, both)
		}
	}
	t.Log(both)
	_, _, err = runDPPP(t, "simulate", "--models", strings.Join(f.models, ","), "--schema", f.spec,
		"--queries", f.queries, "--out", filepath.Join(f.dir, "x.csv"), "--insecure-test-keys", "--epsilon", "1", "--budget-queries", "20")
	if err == nil || !strings.Contains(err.Error(), "drop --epsilon/--delta") {
		t.Fatalf("--epsilon with --budget-queries: %v", err)
	}
}
