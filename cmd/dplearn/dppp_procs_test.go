package main

import (
	"context"
	"fmt"
	"github.com/dplearn/dplearn/ledger"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/classify"
	"github.com/dplearn/dplearn/internal/pailliertest"
	"github.com/dplearn/dplearn/paillier"
	"github.com/dplearn/dplearn/paillier/keyfile"
)

// dpppProcNet is a deployment of separate processes on 127.0.0.1: a CA
// with the aggregator, the teachers and extra parties (clients), a (n, t)
// threshold key on the test primes written as key files, and the
// deployment flags every party is given.
type dpppProcNet struct {
	t                *testing.T
	dir, pki, pub    string
	names, sharePath []string
	common           []string
}

func newDPPPProcNet(t *testing.T, n, thr int, extra []string, flags ...string) *dpppProcNet {
	t.Helper()
	d := &dpppProcNet{t: t, dir: t.TempDir()}
	for i := range n {
		d.names = append(d.names, fmt.Sprintf("teacher%02d", i+1))
	}
	d.pki = filepath.Join(d.dir, "pki")
	if _, err := certs.Create(d.pki, append(append([]string{"aggregator"}, d.names...), extra...), certs.Options{}); err != nil {
		t.Fatal(err)
	}
	tpk, shares, err := pailliertest.ThresholdKey(2048, n, thr)
	if err != nil {
		t.Fatal(err)
	}
	if d.pub, d.sharePath, err = keyfile.WriteKeyFiles(filepath.Join(d.dir, "keys"), tpk, shares, false); err != nil {
		t.Fatal(err)
	}
	d.common = append([]string{"--teachers", strings.Join(d.names, ","), "--threshold", fmt.Sprint(thr)}, flags...)
	return d
}

// tpk loads the deployment's public key.
func (d *dpppProcNet) tpk() *paillier.ThresholdPublicKey {
	d.t.Helper()
	tpk, err := keyfile.LoadThresholdPublicKey(d.pub)
	if err != nil {
		d.t.Fatal(err)
	}
	return tpk
}

// serve starts the aggregator and returns it with its address.
func (d *dpppProcNet) serve(ctx context.Context, args ...string) (*dpppProc, string) {
	d.t.Helper()
	srv := startDPPP(d.t, ctx, "aggregator", append(append([]string{"serve", "--listen", "127.0.0.1:0", "--certs", filepath.Join(d.pki, "aggregator"),
		"--public-key", d.pub, "--round-timeout", "15s", "--join-timeout", "30s"}, d.common...), args...)...)
	select {
	case addr := <-srv.addr:
		return srv, addr
	case <-srv.done:
		d.t.Fatalf("serve exited: %v\n%s", srv.err, srv.stderr())
	case <-time.After(20 * time.Second):
		d.t.Fatalf("serve did not listen:\n%s", srv.stderr())
	}
	return nil, ""
}

// teach starts every teacher, teacher i with models[i] and the extra
// arguments extra(i) (if extra is not nil).
func (d *dpppProcNet) teach(ctx context.Context, addr string, models []string, extra func(i int) []string) []*dpppProc {
	var ps []*dpppProc
	for i, name := range d.names {
		args := append([]string{"teach", "--server", addr, "--certs", filepath.Join(d.pki, name),
			"--model", models[i], "--key-share", d.sharePath[i], "--idle-timeout", "60s"}, d.common...)
		if extra != nil {
			args = append(args, extra(i)...)
		}
		ps = append(ps, startDPPP(d.t, ctx, name, args...))
	}
	return ps
}

// wait waits for the aggregator and the teachers to exit successfully.
func (d *dpppProcNet) wait(srv *dpppProc, teachers []*dpppProc) {
	d.t.Helper()
	if err := srv.wait(d.t, 60*time.Second); err != nil {
		d.t.Fatalf("serve: %v\n%s", err, srv.stderr())
	}
	for _, tp := range teachers {
		if err := tp.wait(d.t, 15*time.Second); err != nil {
			d.t.Errorf("%s: %v\n%s", tp.name, err, tp.stderr())
		}
	}
}

// TestDPPPServeLedgerRestart: 'dppp serve --ledger FILE' keeps the
// aggregator's spend across runs, one entry per run (the run's PLD total,
// dppp.Params.RunCharge), runs composed by basic composition. Per-query
// (1, 1e-5), budget (3, 1e-3): one run may answer K = 13 queries; a run of
// k is charged (ε_k, 1e-3·k/13) with ε_2 = 1.1719, ε_5 = 1.8228. After a
// run of 2, this run could have answered 11 more but a new run only 5
// (1.1719 + ε_5 = 2.9947 ≤ 3 < 1.1719 + ε_6): a restart serving a client that asks
// for 7 labels the first 5 and tells the client so, and then restarts
// asking for 1 query, or serving clients only, are refused at start.
func TestDPPPServeLedgerRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	f := newDPPPNetFiles(t, 3, 2)
	one, six, seven := filepath.Join(f.dir, "one.csv"), filepath.Join(f.dir, "six.csv"), filepath.Join(f.dir, "seven.csv")
	digitsLines(t, one, 2, 3)
	digitsLines(t, six, 10, 16)
	digitsLines(t, seven, 20, 27)
	d := newDPPPProcNet(t, 3, 2, []string{"client"}, "--epsilon", "1", "--delta", "1e-5", "--budget-epsilon", "3", "--budget-delta", "1e-3")
	ledgerPath := filepath.Join(d.dir, "aggregator-ledger.json")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	refused := func(n, left int, args ...string) {
		t.Helper()
		_, _, err := runDPPP(t, append(append([]string{"serve", "--listen", "127.0.0.1:0", "--certs", filepath.Join(d.pki, "aggregator"),
			"--public-key", d.pub}, d.common...), append([]string{"--schema", f.spec, "--ledger", ledgerPath}, args...)...)...)
		if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("cannot pay for %d queries, %d remain", n, left)) {
			t.Fatalf("serve %v past the ledger's budget: %v", args, err)
		}
		t.Log(err)
	}
	srv, addr := d.serve(ctx, "--schema", f.spec, "--queries", f.queries, "--out", filepath.Join(f.dir, "labels.csv"), "--ledger", ledgerPath)
	d.wait(srv, d.teach(ctx, addr, f.models, nil))
	if s, want := srv.stdout.String(), "spent ε = 1.17193, δ = 1.53847e-04 of (3, 0.001) in 1 runs; 11 more queries remain in this run; a new run could answer 5"; !strings.Contains(s, want) {
		t.Fatalf("serve's stdout lacks %q:\n%s", want, s)
	}
	// (A restart asking for 6 gets 5 labelled: TestDPPPServeQueriesPartial.)
	// A client asking for 7: the first 5 labelled, and told so.
	srv, addr = d.serve(ctx, "--schema", f.spec, "--clients", "client", "--ledger", ledgerPath)
	teachers := d.teach(ctx, addr, f.models, nil)
	client := startDPPP(t, ctx, "client", "query", "--server", addr, "--certs", filepath.Join(d.pki, "client"), "--schema", f.spec,
		"--data", seven, "--out", filepath.Join(f.dir, "c.csv"), "--timeout", "60s")
	if err := client.wait(t, 60*time.Second); err != nil || !strings.Contains(client.stdout.String(), "5 labels written") ||
		!strings.Contains(client.stdout.String(), "labelled 5 of 7 requested: budget allows 5 more") {
		t.Fatalf("the client's request past the ledger: %v\n%s\n%s", err, client.stdout.String(), client.stderr())
	}
	if err := srv.wait(t, 30*time.Second); err == nil || !strings.Contains(srv.stdout.String(), "in 2 runs; 0 more queries remain in this run") ||
		strings.Contains(srv.stdout.String(), "a new run could") {
		t.Fatalf("serve: %v\n%s", err, srv.stdout.String())
	}
	for _, tp := range teachers {
		tp.wait(t, 15*time.Second)
	}
	st, err := ledger.Open(ledgerPath)
	if err != nil {
		t.Fatal(err)
	}
	state, err := st.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(state.Charges) != 2 {
		t.Errorf("the ledger holds %d entries after two runs of 2 and 5 queries, want 2: %+v", len(state.Charges), state.Charges)
	}
	refused(1, 0, "--queries", one, "--out", filepath.Join(f.dir, "x.csv"))
	// Serving clients only, past the budget: refused at start too, before
	// any teacher is asked (issue 27).
	refused(1, 0, "--clients", "client")
}

// writeIDXSet writes n 2×2 images of 3 classes (bright top, bright bottom,
// dark) and their labels, and returns the paths and the labels.
func writeIDXSet(t *testing.T, dir, prefix string, n int, seed byte) (images, labels string, truth []int) {
	t.Helper()
	var pix, lab []byte
	for i := range n {
		c := i % 3
		v := byte(100+i) + seed
		switch c {
		case 0:
			pix = append(pix, v, v, 0, 3)
		case 1:
			pix = append(pix, 2, 0, v, v)
		default:
			pix = append(pix, 0, 9, 1, 4)
		}
		lab = append(lab, byte(c))
		truth = append(truth, c)
	}
	images, labels = filepath.Join(dir, prefix+"-images.idx"), filepath.Join(dir, prefix+"-labels.idx")
	writeIDX(t, images, []uint32{uint32(n), 2, 2}, pix)
	writeIDX(t, labels, []uint32{uint32(n)}, lab)
	return images, labels, truth
}

// TestDPPPIDXTeachers: teachers trained on IDX images serve an IDX
// deployment: 'serve --idx --idx-shape 2x2 --clients', 'teach' with the
// IDX models (reproducible noise), 'query --idx' sending 30 images, whose
// labels and histograms are exactly the plaintext path's; then 'student
// --idx' on them.
func TestDPPPIDXTeachers(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	dir := t.TempDir()
	names := "top,bottom,dark"
	trImages, trLabels, _ := writeIDXSet(t, dir, "train", 90, 0)
	qImages, _, _ := writeIDXSet(t, dir, "query", 30, 7)
	teImages, teLabels, _ := writeIDXSet(t, dir, "test", 30, 3)
	var models []string
	for i := 1; i <= 3; i++ {
		out := filepath.Join(dir, fmt.Sprintf("t%d.json", i))
		if _, stderr, err := runDPPP(t, "train", "--idx-images", trImages, "--idx-labels", trLabels, "--classes", "3", "--class-names", names,
			"--partition", fmt.Sprintf("%d/3", i), "--model", "softmax", "--out", out); err != nil {
			t.Fatalf("train: %v\n%s", err, stderr)
		}
		models = append(models, out)
	}
	d := newDPPPProcNet(t, 3, 2, []string{"client"}, "--epsilon", "8", "--budget-epsilon", "1000")
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	srv, addr := d.serve(ctx, "--idx", "--idx-shape", "2x2", "--class-names", names, "--clients", "client", "--max-requests", "1")
	teachers := d.teach(ctx, addr, models, func(i int) []string { return []string{"--test-noise-seed", fmt.Sprint(1000 + i)} })
	labels := filepath.Join(dir, "labels.csv")
	client := startDPPP(t, ctx, "client", "query", "--server", addr, "--certs", filepath.Join(d.pki, "client"), "--idx", "--class-names", names,
		"--data", qImages, "--out", labels, "--timeout", "60s", "--histogram")
	if err := client.wait(t, 60*time.Second); err != nil {
		t.Fatalf("query: %v\n%s\naggregator:\n%s", err, client.stderr(), srv.stderr())
	}
	d.wait(srv, teachers)
	if s := client.stdout.String(); !strings.Contains(s, "30 labels written") || !strings.Contains(s, "queries remain") {
		t.Fatalf("the client does not report the labels' guarantee and the aggregator's budget:\n%s", s)
	}
	for _, tp := range teachers {
		if !strings.Contains(tp.stdout.String(), "this run: spent") {
			t.Errorf("%s does not report its spend:\n%s", tp.name, tp.stdout.String())
		}
	}
	// Labels and noisy histograms are exactly the plaintext path's for
	// the same noise draws.
	in := dpppInputFlags{idx: true, classNames: names}
	checkPlaintextPath(t, labels, dpppPlaintextPath(t, ctx, in, qImages, models, d.common, d.tpk(), func(int, int) bool { return true }, nil))
	out := filepath.Join(dir, "student.json")
	stdout, stderr, err := runDPPP(t, "student", "--idx", "--class-names", names, "--queries", qImages, "--labels", labels,
		"--model", "softmax", "--solver", "sgd", "--epochs", "100", "--out", out, "--test-idx-images", teImages, "--test-idx-labels", teLabels)
	if err != nil {
		t.Fatalf("student: %v\n%s", err, stderr)
	}
	mf, err := classify.Load(out)
	if err != nil || mf.Privacy == nil || mf.Privacy.Labels != 30 || !strings.Contains(mf.InputNote, "2×2") {
		t.Fatalf("%v %+v", err, mf)
	}
	t.Log(stdout)
}

// TestDPPPQueryBadInput: bad query rows are refused before anything is
// sent, naming the file, row and column: a NaN in a table; IDX images of
// another size than the deployment's.
func TestDPPPQueryBadInput(t *testing.T) {
	dir := t.TempDir()
	_, spec := writeEmbedded(t, "digits")
	queries := filepath.Join(dir, "q.csv")
	digitsLines(t, queries, 0, 3)
	b, err := os.ReadFile(queries)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(b), "\n")
	lines[2] = "0,Inf" + lines[2][3:]
	nan := filepath.Join(dir, "nan.csv")
	if err := os.WriteFile(nan, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	images, _, _ := writeIDXSet(t, dir, "q", 6, 0)
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"Inf in a table", []string{"query", "--server", "127.0.0.1:1", "--insecure", "--name", "c", "--schema", spec, "--data", nan, "--out", filepath.Join(dir, "o.csv")}, "nan.csv:3:2"},
		{"IDX of another size", []string{"serve", "--insecure", "--teachers", "a,b", "--public-key", "k.pem", "--idx", "--idx-shape", "3x3", "--queries", images, "--out", filepath.Join(dir, "o.csv")}, "images of 2×2 pixels, --idx-shape says 3x3"},
		{"table and IDX", []string{"query", "--server", "127.0.0.1:1", "--insecure", "--name", "c", "--schema", spec, "--idx", "--data", images, "--out", filepath.Join(dir, "o.csv")}, "choose one"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := runDPPP(t, c.args...)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}
