package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dplearn/dplearn/consortium/chain"
	"github.com/dplearn/dplearn/consortium/node"
	"github.com/dplearn/dplearn/internal/consortiumtest"
	"github.com/dplearn/dplearn/ledger"
)

// cproc is one dplearn process of the consortium test (the test binary
// re-executed as dplearn, as the cape tests do).
type cproc struct {
	name string
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  []string // stdout and stderr lines
	done chan struct{}
	err  error
}

func startCProc(t *testing.T, ctx context.Context, name string, args ...string) *cproc {
	t.Helper()
	p := &cproc{name: name, done: make(chan struct{})}
	p.cmd = exec.CommandContext(ctx, os.Args[0], args...)
	p.cmd.Env = append(os.Environ(), capeChildEnv+"=1")
	p.cmd.WaitDelay = 2 * time.Second
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stdout, p.cmd.Stderr = w, w
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			p.mu.Lock()
			p.out = append(p.out, sc.Text())
			p.mu.Unlock()
		}
	}()
	go func() {
		p.err = p.cmd.Wait()
		r.Close()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.cmd.Process.Kill()
		<-p.done
	})
	return p
}

// waitFor returns the first line matching re, waiting up to d.
func (p *cproc) waitFor(t *testing.T, re string, d time.Duration) string {
	t.Helper()
	rx := regexp.MustCompile(re)
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		p.mu.Lock()
		for _, l := range p.out {
			if m := rx.FindString(l); m != "" {
				p.mu.Unlock()
				return l
			}
		}
		p.mu.Unlock()
		select {
		case <-p.done:
			t.Fatalf("%s exited (%v) before %q:\n%s", p.name, p.err, re, p.log())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("%s: no line matching %q within %v:\n%s", p.name, re, d, p.log())
	return ""
}

func (p *cproc) log() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.Join(p.out, "\n")
}

func (p *cproc) kill() {
	p.cmd.Process.Kill()
	<-p.done
}

// run runs a short-lived dplearn command and returns its output.
func runDplearn(t *testing.T, ctx context.Context, args ...string) (string, error) {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = append(os.Environ(), capeChildEnv+"=1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// ledgerCharges returns a node ledger's charges (none if it does not exist).
func ledgerCharges(t *testing.T, dir, kind, name string) []ledger.Charge {
	t.Helper()
	l, err := ledger.Open(node.LedgerPath(dir, kind, name))
	if err != nil {
		return nil
	}
	st, err := l.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Charges
}

func chargesOf(cs []ledger.Charge, task string) int {
	n := 0
	for _, c := range cs {
		if strings.HasPrefix(c.Label, "task "+task+":") {
			n++
		}
	}
	return n
}

// auditCount counts a node audit log's entries of one action for a task.
func auditCount(t *testing.T, path, action, task string) int {
	t.Helper()
	es, err := chain.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range es {
		if e.Action == action && e.Task == task {
			n++
		}
	}
	return n
}

// TestConsortiumProcesses is the consortium with real processes on
// 127.0.0.1: `dplearn coordinator`, three `dplearn node`s with different
// policies, two analysts using `dplearn task` and `dplearn budget`.
//
//  1. alice's capeFM task runs at the three sites (a model, every node's
//     alice ledger charged ε = 1 exactly once);
//  2. bob's task at ε = 0.8 is refused by site-c's max-epsilon rule: bob sees
//     the rule and reason, and nothing is charged anywhere;
//  3. bob's ε = 0.5 task runs; his next one is past his budget and refused
//     by rule analyst-budget at every node, nothing charged;
//  4. site-b is killed (SIGKILL) in the middle of alice's task, before its
//     masked input, and restarted: capeFM redoes the attempt without it and
//     site-b's ledger holds no charge for the task (as its audit log says);
//     killed again after charging its release and before sending it:
//     capeFM aborts, and site-b's ledger holds exactly that one charge
//     (audit: one charge, no release); restarted, the next task charges it
//     exactly once more;
//  5. the coordinator is killed (SIGKILL) and restarted on the same file:
//     the tasks, the model and the budgets are intact, the nodes reconnect,
//     and a new task runs;
//  6. every audit chain verifies with `dplearn audit verify`.
func TestConsortiumProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: the consortium process test runs a dozen processes for about a minute")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	sites := []string{"site-a", "site-b", "site-c"}
	consortiumtest.Certs(t, pki, append([]string{"coordinator", "alice", "bob"}, sites...)...)
	schemaPath := consortiumtest.Write(t, dir, "schema.json", consortiumtest.Schema)
	cols := []string{"x1", "x2", "y"}
	pols := map[string]string{
		"site-a": consortiumtest.Policy(100, cols, 20, map[string][2]float64{"alice": {1, 6}, "bob": {1, 0.8}}),
		"site-b": consortiumtest.Policy(100, cols, 20, map[string][2]float64{"alice": {1, 6}, "bob": {1, 0.8}}),
		"site-c": consortiumtest.Policy(100, cols, 20, map[string][2]float64{"alice": {1, 6}, "bob": {0.5, 0.5}}),
	}
	for i, s := range sites {
		consortiumtest.Data(t, filepath.Join(dir, s+".csv"), 2000, uint64(10+i))
		consortiumtest.Write(t, dir, s+"-policy.json", pols[s])
	}
	db := filepath.Join(dir, "coordinator.db")
	startCoord := func(listen string) (*cproc, string) {
		p := startCProc(t, ctx, "coordinator", "coordinator", "--listen", listen, "--certs", filepath.Join(pki, "coordinator"), "--db", db,
			"--nodes", strings.Join(sites, ","), "--analysts", "alice,bob", "--round-timeout", "5s", "--join-wait", "500ms", "--answer-timeout", "10s")
		line := p.waitFor(t, `^listening on `, 20*time.Second)
		return p, strings.TrimPrefix(line, "listening on ")
	}
	coord, addr := startCoord("127.0.0.1:0")
	nodeArgs := func(s string) []string {
		return []string{"node", "--coordinator", addr, "--certs", filepath.Join(pki, s), "--policy", filepath.Join(dir, s+"-policy.json"),
			"--dataset", "cohort=" + filepath.Join(dir, s+".csv") + ":" + schemaPath, "--ledgers", filepath.Join(dir, s, "ledgers"),
			"--audit", filepath.Join(dir, s, "audit.jsonl"), "--peer-timeout", "2s", "--max-backoff", "500ms"}
	}
	nodes := map[string]*cproc{}
	for _, s := range sites {
		os.MkdirAll(filepath.Join(dir, s), 0o700)
		nodes[s] = startCProc(t, ctx, s, nodeArgs(s)...)
		nodes[s].waitFor(t, "registered 1 dataset", 20*time.Second)
	}
	as := func(who string, args ...string) (string, error) {
		return runDplearn(t, ctx, append(append([]string{}, args...), "--coordinator", addr, "--certs", filepath.Join(pki, who))...)
	}
	submit := func(who string, eps string, sites []string, extra ...string) string {
		t.Helper()
		args := []string{"task", "submit", "--schema", schemaPath, "--model", "linear", "--epsilon", eps, "--delta", "1e-6", "--deadline", "1m"}
		for _, s := range sites {
			args = append(args, "--site", s+"=cohort")
		}
		out, err := as(who, append(args, extra...)...)
		if err != nil {
			t.Fatalf("%s submit: %v\n%s", who, err, out)
		}
		return strings.TrimSpace(out)
	}
	wait := func(who, id string) string {
		t.Helper()
		for {
			out, err := as(who, "task", "status", id)
			if err != nil {
				t.Fatalf("status %s: %v\n%s", id, err, out)
			}
			if regexp.MustCompile(`: (done|failed|cancelled)\n`).MatchString(out) {
				return out
			}
			if ctx.Err() != nil {
				t.Fatalf("task %s did not end:\n%s\n%s", id, out, coord.log())
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	ledgers := func(s string) string { return filepath.Join(dir, s, "ledgers") }

	// 1. alice's task runs at three sites.
	t1 := submit("alice", "1", sites)
	out := wait("alice", t1)
	if !strings.Contains(out, ": done") || !strings.Contains(out, "model (3 sites, N = 6000") {
		t.Fatalf("alice's task:\n%s\n%s", out, coord.log())
	}
	res1, err := as("alice", "task", "result", t1)
	if err != nil {
		t.Fatal(err, res1)
	}
	for _, s := range sites {
		if cs := ledgerCharges(t, ledgers(s), "analyst", "alice"); len(cs) != 1 || cs[0].Epsilon != 1 || cs[0].Delta != 1e-6 {
			t.Fatalf("%s alice ledger after t1: %+v", s, cs)
		}
	}

	// 2. bob at ε = 0.8: site-c's max-epsilon rule.
	t2 := submit("bob", "0.8", sites)
	out = wait("bob", t2)
	t.Logf("what bob sees for a refused task:\n%s", out)
	if !strings.Contains(out, ": failed") || !strings.Contains(out, "site site-c (cohort): refused by rule max-epsilon: ε = 0.8 per task exceeds analyst \"bob\"'s maximum 0.5") {
		t.Fatalf("bob's ε = 0.8 task:\n%s", out)
	}
	for _, s := range sites {
		if cs := ledgerCharges(t, ledgers(s), "analyst", "bob"); len(cs) != 0 {
			t.Fatalf("%s charged bob for a refused task: %+v", s, cs)
		}
	}

	// 3. bob at ε = 0.5 runs; the next is past his budget at every node.
	t3 := submit("bob", "0.5", sites)
	if out = wait("bob", t3); !strings.Contains(out, ": done") {
		t.Fatalf("bob's ε = 0.5 task:\n%s", out)
	}
	t4 := submit("bob", "0.5", sites)
	out = wait("bob", t4)
	t.Logf("what bob sees past his budget:\n%s", out)
	for _, s := range sites {
		if !strings.Contains(out, "site "+s+" (cohort): refused by rule analyst-budget") {
			t.Fatalf("past budget, %s did not refuse by analyst-budget:\n%s", s, out)
		}
		if cs := ledgerCharges(t, ledgers(s), "analyst", "bob"); len(cs) != 1 || cs[0].Epsilon != 0.5 {
			t.Fatalf("%s bob ledger: %+v", s, cs)
		}
	}

	// 4. site-b killed mid-task (stalled before its masked input, in the
	// middle of secure aggregation), restarted.
	nodes["site-b"].kill()
	nodes["site-b"] = startCProc(t, ctx, "site-b", append(nodeArgs("site-b"), "--test-stall-before", "masked-input")...)
	nodes["site-b"].waitFor(t, "registered 1 dataset", 20*time.Second)
	t5 := submit("alice", "1", sites, "--min-sites", "2")
	nodes["site-b"].waitFor(t, "task "+t5+": stalling before masked-input", 30*time.Second)
	nodes["site-b"].kill()
	out = wait("alice", t5)
	t.Logf("task with site-b killed:\n%s", out)
	if !strings.Contains(out, ": done") || !strings.Contains(out, "site site-b (cohort): lost") || !strings.Contains(out, "attempt 2") {
		t.Fatalf("capeFM redoes without a site lost before the noise was fixed:\n%s", out)
	}
	auditB := filepath.Join(dir, "site-b", "audit.jsonl")
	bCharged := chargesOf(ledgerCharges(t, ledgers("site-b"), "analyst", "alice"), t5)
	if rec := auditCount(t, auditB, "charge", t5); bCharged != rec || bCharged > 1 {
		t.Fatalf("site-b's ledger holds %d charge(s) for %s, its audit log records %d", bCharged, t5, rec)
	}
	if strings.Contains(out, "site site-b (cohort): included") != (bCharged == 1) && strings.Contains(out, ": done") {
		t.Fatalf("site-b included in the model iff it was charged: charged %d\n%s", bCharged, out)
	}
	// site-b killed after it charged its release and before sending it:
	// the noise was fixed, so capeFM aborts (no redo by default); site-b's
	// ledger holds the charge (charged, never released: the safe side) and
	// its audit log says so.
	nodes["site-b"] = startCProc(t, ctx, "site-b", append(nodeArgs("site-b"), "--test-stall-before", "release")...)
	nodes["site-b"].waitFor(t, "registered 1 dataset", 20*time.Second)
	tx := submit("alice", "1", sites, "--min-sites", "2")
	nodes["site-b"].waitFor(t, "task "+tx+": stalling before release", 30*time.Second)
	nodes["site-b"].kill()
	out = wait("alice", tx)
	t.Logf("task with site-b killed after its charge:\n%s", out)
	if !strings.Contains(out, ": failed") || !strings.Contains(out, "site site-b (cohort): lost") {
		t.Fatalf("capeFM aborts when a site is lost after the noise was fixed:\n%s", out)
	}
	if c, rec, rel := chargesOf(ledgerCharges(t, ledgers("site-b"), "analyst", "alice"), tx), auditCount(t, auditB, "charge", tx), auditCount(t, auditB, "release", tx); c != 1 || rec != 1 || rel != 0 {
		t.Fatalf("site-b for %s: %d ledger charge(s), %d audit charge(s), %d release(s); want 1, 1, 0", tx, c, rec, rel)
	}
	for _, s := range []string{"site-a", "site-c"} {
		if c := chargesOf(ledgerCharges(t, ledgers(s), "analyst", "alice"), tx); c != 1 {
			t.Fatalf("%s: %d charges for %s (it released)", s, c, tx)
		}
	}
	nodes["site-b"] = startCProc(t, ctx, "site-b", nodeArgs("site-b")...)
	nodes["site-b"].waitFor(t, "registered 1 dataset", 20*time.Second)
	before := len(ledgerCharges(t, ledgers("site-b"), "analyst", "alice"))
	t6 := submit("alice", "1", sites)
	if out = wait("alice", t6); !strings.Contains(out, "site site-b (cohort): included") {
		t.Fatalf("after its restart site-b is not in the model:\n%s", out)
	}
	if after := len(ledgerCharges(t, ledgers("site-b"), "analyst", "alice")); after != before+1 {
		t.Fatalf("site-b alice ledger: %d charges before t6, %d after", before, after)
	}

	// 5. the coordinator killed and restarted on the same file and port.
	budgetBefore, err := as("alice", "budget")
	if err != nil {
		t.Fatal(err, budgetBefore)
	}
	coord.kill()
	coord, _ = startCoord(addr)
	for _, s := range sites {
		nodes[s].waitFor(t, "reconnecting", 30*time.Second)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		out, _ := as("alice", "task", "status", t6)
		if strings.Contains(out, ": done") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after restart: %s\n%s", out, coord.log())
		}
		time.Sleep(200 * time.Millisecond)
	}
	if res, err := as("alice", "task", "result", t1); err != nil || res != res1 {
		t.Fatalf("t1's result after the restart differs:\n%s\nwas\n%s (%v)", res, res1, err)
	}
	if out, _ := as("bob", "task", "status", t4); !strings.Contains(out, "refused by rule analyst-budget") {
		t.Fatalf("t4 after the restart:\n%s", out)
	}
	if b, _ := as("alice", "budget"); b != budgetBefore {
		t.Fatalf("budgets after the restart:\n%s\nwere\n%s", b, budgetBefore)
	}
	t7 := submit("alice", "1", sites)
	if out = wait("alice", t7); !strings.Contains(out, ": done") {
		t.Fatalf("a task after the coordinator's restart:\n%s\n%s", out, coord.log())
	}
	// alice's ledgers: t1, t5 (not at site-b, lost before releasing), tx, t6, t7.
	for _, s := range sites {
		want, want5 := 5, 1
		if s == "site-b" {
			want, want5 = 4, 0
		}
		cs := ledgerCharges(t, ledgers(s), "analyst", "alice")
		if len(cs) != want || chargesOf(cs, t5) != want5 {
			t.Fatalf("%s alice ledger: %d charges, want %d: %+v", s, len(cs), want, cs)
		}
	}

	// 6. the audit chains.
	coord.kill()
	for _, s := range sites {
		nodes[s].kill()
	}
	if out, err := runDplearn(t, ctx, "audit", "verify", "--db", db); err != nil || !strings.Contains(out, "chain intact") {
		t.Fatalf("audit verify --db: %v\n%s", err, out)
	}
	for _, s := range sites {
		if out, err := runDplearn(t, ctx, "audit", "verify", "--log", filepath.Join(dir, s, "audit.jsonl")); err != nil || !strings.Contains(out, "chain intact") {
			t.Fatalf("audit verify %s: %v\n%s", s, err, out)
		}
	}
	// a tampered node log is caught
	b, _ := os.ReadFile(auditB)
	os.WriteFile(auditB, []byte(strings.Replace(string(b), "ε = 1,", "ε = 0.1,", 1)), 0o600)
	if out, err := runDplearn(t, ctx, "audit", "verify", "--log", auditB); err == nil {
		t.Fatalf("a tampered audit log verified:\n%s", out)
	}
}
