package coordinator_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dplearn/dplearn/consortium/analyst"
	"github.com/dplearn/dplearn/consortium/coordinator"
	"github.com/dplearn/dplearn/consortium/node"
	"github.com/dplearn/dplearn/consortium/policy"
	"github.com/dplearn/dplearn/consortium/store"
	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/internal/consortiumtest"
	"github.com/dplearn/dplearn/ledger"
)

type fixture struct {
	t     *testing.T
	dir   string
	pki   string
	addr  string
	nodes map[string]*node.Node
	stop  map[string]context.CancelFunc
	// logger, if set, is each party's logger (by name); the default
	// writes their progress lines to the test's log.
	logger func(name string) *slog.Logger
}

// log returns the logger of the party name.
func (f *fixture) log(name string, line func(slog.Record) (string, bool)) *slog.Logger {
	if f.logger != nil {
		return f.logger(name)
	}
	return lineLogger(f.t, name+": ", line)
}

func startCoordinator(t *testing.T, ctx context.Context, pki, db string, nodes, analysts []string, logger *slog.Logger) (string, context.CancelFunc, chan error) {
	t.Helper()
	st, err := store.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordinator.New(coordinator.Config{Identity: consortiumtest.Party(t, pki, "coordinator"), Address: "127.0.0.1:0",
		Nodes: nodes, Analysts: analysts, Store: st, RoundTimeout: 10 * time.Second, JoinWait: 500 * time.Millisecond,
		AnswerTimeout: 5 * time.Second, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		done <- c.Run(cctx)
		st.Close()
	}()
	deadline := time.Now().Add(10 * time.Second)
	for c.Addr() == "" && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return c.Addr(), cancel, done
}

func (f *fixture) startNode(ctx context.Context, name, pol string) {
	f.t.Helper()
	p, err := policy.Parse([]byte(pol))
	if err != nil {
		f.t.Fatal(err)
	}
	dir := filepath.Join(f.dir, name)
	n, err := node.New(ctx, node.Config{Identity: consortiumtest.Party(f.t, f.pki, name), Coordinator: f.addr,
		Datasets: []node.Dataset{{Name: "cohort", Path: filepath.Join(f.dir, name+".csv"), Schema: filepath.Join(f.dir, "schema.json")}},
		Policy:   p, LedgerDir: filepath.Join(dir, "ledgers"), AuditPath: filepath.Join(dir + "-audit.jsonl"),
		PeerTimeout: 3 * time.Second, MaxBackoff: time.Second, Logger: f.log(name, node.ProgressLine)})
	if err != nil {
		f.t.Fatal(err)
	}
	nctx, cancel := context.WithCancel(ctx)
	f.stop[name] = cancel
	f.nodes[name] = n
	go n.Run(nctx)
}

// runToDone submits spec as a, waits for the task and returns its result;
// a task that does not end "done" fails the test.
func runToDone(t *testing.T, ctx context.Context, a *analyst.Client, spec wire.TaskSpec) *coordinator.Task {
	t.Helper()
	tk, err := a.Submit(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	done, err := a.Wait(ctx, tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	if done.State != "done" {
		t.Fatalf("task %s: %s: %s\n%s", done.ID, done.State, done.Error, strings.Join(done.Log, "\n"))
	}
	res, err := a.Task(ctx, "result", tk.ID)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// TestConsortiumInProcess runs a coordinator, three nodes with different
// policies and two analysts over real sockets: a capeFM task that runs (the
// coefficients near the truth, each node's ledgers charged exactly once
// with the task's ε, δ), a task refused by one node's max-ε rule (the
// analyst sees that node's rule and reason), and an analyst past their
// budget refused at every node (nothing charged).
func TestConsortiumInProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	f := &fixture{t: t, dir: dir, pki: filepath.Join(dir, "pki"), nodes: map[string]*node.Node{}, stop: map[string]context.CancelFunc{}}
	sites := []string{"site-a", "site-b", "site-c"}
	consortiumtest.Certs(t, f.pki, append([]string{"coordinator", "alice", "bob"}, sites...)...)
	consortiumtest.Write(t, dir, "schema.json", consortiumtest.Schema)
	for i, s := range sites {
		consortiumtest.Data(t, filepath.Join(dir, s+".csv"), 3000, uint64(i+1))
	}
	var stopC context.CancelFunc
	f.addr, stopC, _ = startCoordinator(t, ctx, f.pki, filepath.Join(dir, "c.db"), sites, []string{"alice", "bob"}, f.log("coordinator", coordinator.ProgressLine))
	defer stopC()
	cols := []string{"x1", "x2", "y"}
	// site-c allows bob only ε ≤ 0.5 per task; bob's budget is ε = 1.2 at a and b, 0.9 at c.
	f.startNode(ctx, "site-a", consortiumtest.Policy(100, cols, 10, map[string][2]float64{"alice": {1, 3}, "bob": {1, 1.2}}))
	f.startNode(ctx, "site-b", consortiumtest.Policy(100, cols, 10, map[string][2]float64{"alice": {1, 3}, "bob": {1, 1.2}}))
	f.startNode(ctx, "site-c", consortiumtest.Policy(100, cols, 10, map[string][2]float64{"alice": {1, 3}, "bob": {0.5, 0.9}}))

	alice, err := analyst.Dial(ctx, consortiumtest.Party(t, f.pki, "alice"), f.addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	bob, err := analyst.Dial(ctx, consortiumtest.Party(t, f.pki, "bob"), f.addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer bob.Close()
	spec := func(eps float64) wire.TaskSpec {
		return wire.TaskSpec{Sites: map[string]string{"site-a": "cohort", "site-b": "cohort", "site-c": "cohort"}, Model: "linear",
			Mechanism: "capefm", Epsilon: eps, Delta: 1e-6, MinSites: 3, Schema: json.RawMessage(consortiumtest.Schema), Deadline: time.Now().Add(time.Minute)}
	}
	// 1. a task that runs
	res := runToDone(t, ctx, alice, spec(1))
	t.Logf("model %v %v, %s", res.Result.Features, res.Result.Coef, res.Result.Guarantee)
	if len(res.Result.Sites) != 3 || res.Result.N != 9000 {
		t.Fatalf("result sites %v N %d", res.Result.Sites, res.Result.N)
	}
	for _, s := range sites {
		checkLedger(t, ctx, filepath.Join(dir, s, "ledgers"), "analyst", "alice", 1, 1)
		checkLedger(t, ctx, filepath.Join(dir, s, "ledgers"), "dataset", "cohort", 1, 1)
	}
	// bob cannot read alice's task
	if _, err := bob.Task(ctx, "status", res.ID); err == nil {
		t.Fatal("bob read alice's task")
	}
	// 2. bob at ε = 0.8: site-c's max-epsilon rule refuses; min sites 3 → the task fails naming it
	tb, err := bob.Submit(ctx, spec(0.8))
	if err != nil {
		t.Fatal(err)
	}
	got, err := bob.Wait(ctx, tb.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.State != "failed" || got.Sites["site-c"].State != "refused" || got.Sites["site-c"].Rule != "max-epsilon" {
		t.Fatalf("bob's ε = 0.8 task: %s %s, site-c %+v", got.State, got.Error, got.Sites["site-c"])
	}
	if !strings.Contains(got.Error, "site-c refused (rule max-epsilon") {
		t.Fatalf("the analyst does not see the rule: %s", got.Error)
	}
	t.Logf("what bob sees: %s", got.Error)
	for _, s := range []string{"site-a", "site-b"} {
		if got.Sites[s].State != "accepted" {
			t.Fatalf("%s: %+v", s, got.Sites[s])
		}
		checkLedger(t, ctx, filepath.Join(dir, s, "ledgers"), "analyst", "bob", 0, 0)
	}
	// 3. bob twice at ε = 0.5 at a and b only (min 2): 1.0 ≤ 1.2, 1.5 > 1.2; a third is past bob's budget everywhere
	two := spec(0.5)
	two.Sites = map[string]string{"site-a": "cohort", "site-b": "cohort"}
	two.MinSites = 2
	for i := range 3 {
		tk, err := bob.Submit(ctx, two)
		if err != nil {
			t.Fatal(err)
		}
		got, err := bob.Wait(ctx, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("bob task %d: %s %s", i, got.State, got.Error)
		if i < 2 && got.State != "done" {
			t.Fatalf("bob's task %d: %s %s", i, got.State, got.Error)
		}
		if i == 2 {
			for _, s := range []string{"site-a", "site-b"} {
				if st := got.Sites[s]; st.State != "refused" || st.Rule != policy.RuleAnalystBudget {
					t.Fatalf("past budget: %s %+v", s, st)
				}
			}
		}
	}
	for _, s := range []string{"site-a", "site-b"} {
		checkLedger(t, ctx, filepath.Join(dir, s, "ledgers"), "analyst", "bob", 1.0, 2)
		checkLedger(t, ctx, filepath.Join(dir, s, "ledgers"), "dataset", "cohort", 2.0, 3)
	}
	// budgets as the nodes report them
	time.Sleep(300 * time.Millisecond)
	bs, err := alice.Budgets(ctx)
	if err != nil || len(bs) != 3 {
		t.Fatalf("budgets: %v %v", bs, err)
	}
}

// checkLedger asserts a node ledger's exact spent ε and number of charges.
func checkLedger(t *testing.T, ctx context.Context, dir, kind, name string, eps float64, charges int) {
	t.Helper()
	l, err := ledger.Open(node.LedgerPath(dir, kind, name))
	if err != nil {
		if charges == 0 {
			return
		}
		t.Fatal(err)
	}
	st, err := l.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Spent().Epsilon; len(st.Charges) != charges || got != eps {
		t.Fatalf("%s ledger %s %s: %d charges, ε spent %v; want %d, %v", dir, kind, name, len(st.Charges), got, charges, eps)
	}
}
