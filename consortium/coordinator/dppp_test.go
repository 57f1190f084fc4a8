package coordinator_test

import (
	"context"
	"crypto/sha256"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/classify"
	"github.com/dplearn/dplearn/consortium/analyst"
	"github.com/dplearn/dplearn/consortium/coordinator"
	"github.com/dplearn/dplearn/consortium/node"
	"github.com/dplearn/dplearn/consortium/policy"
	"github.com/dplearn/dplearn/consortium/store"
	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/internal/consortiumtest"
	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/paillier"
	"github.com/dplearn/dplearn/paillier/keyfile"
)

const dpppDeployment = `{"teachers": ["teacher1", "teacher2", "teacher3", "teacher4"], "threshold": 3,
 "epsilon": 2, "delta": 1e-5, "budget_epsilon": 50, "budget_delta": 1e-3}`

// TestConsortiumDPPP runs a DPPP deployment as consortium tasks over real
// sockets on 127.0.0.1: a coordinator (the aggregator) and four teacher
// nodes (threshold 3, N − A = 3) whose datasets are models.
//
//  1. alice's query task labels 6 rows: every teacher node's analyst and
//     deployment ledgers hold exactly ONE entry, the run's PLD total
//     RunCharge(6) (recomputed here from the deployment's dppp.Params;
//     basic composition would charge 6·ε = 12), the same entry as the
//     same teachers run standalone (dppp.Run, a ledger file per teacher
//     charged through dppp.RunLedger as `dppp teach --ledger` charges)
//     hold on the same rows, and the labels, in the rows' order, are the
//     teachers' plurality computed from their models (the nodes draw
//     their noise from a source of zero bytes, so every class count gets
//     the same noise: a known answer for the wiring; the noise itself is
//     dppp's, tested there);
//  2. bob's task: teacher4's policy refuses by rule max-query-epsilon (bob
//     may use at most ε = 1 per query there); the task runs with the other
//     three (one entry RunCharge(3) each), and teacher4's ledgers for bob
//     stay empty;
//  3. alice's second task of 6 rows costs another RunCharge(6) at every
//     teacher, past her budget of 6 (2·RunCharge(6) > 6 ≥ RunCharge(6)):
//     refused by analyst-budget at every node before any vote, nothing
//     charged.
func TestConsortiumDPPP(t *testing.T) {
	if testing.Short() {
		t.Skip("DPPP over the consortium: 2048-bit keys, 4 teachers")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	teachers := []string{"teacher1", "teacher2", "teacher3", "teacher4"}
	consortiumtest.Certs(t, pki, append([]string{"coordinator", "alice", "bob"}, teachers...)...)
	fx := consortiumtest.DPPPModels(t, dir, 4, 6)
	tpk, _, shares := consortiumtest.DPPPKeys(t, dir, 4, 3)
	deployFile := consortiumtest.Write(t, dir, "deployment.json", dpppDeployment)
	settings, err := wire.LoadDeployment(deployFile)
	if err != nil {
		t.Fatal(err)
	}
	st, err := store.Open(filepath.Join(dir, "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	c, err := coordinator.New(coordinator.Config{Identity: consortiumtest.Party(t, pki, "coordinator"), Address: "127.0.0.1:0",
		Nodes: teachers, Analysts: []string{"alice", "bob"}, Store: st, RoundTimeout: 5 * time.Second, JoinWait: 500 * time.Millisecond,
		AnswerTimeout: time.Minute, Logger: lineLogger(t, "coordinator: ", coordinator.ProgressLine),
		Deployments: map[string]coordinator.Deployment{"signs": {Settings: *settings, Key: tpk}}})
	if err != nil {
		t.Fatal(err)
	}
	cctx, stopC := context.WithCancel(ctx)
	cdone := make(chan error, 1)
	go func() { cdone <- c.Run(cctx); st.Close() }()
	defer func() { stopC(); <-cdone }()
	for c.Addr() == "" {
		time.Sleep(10 * time.Millisecond)
	}
	for i, name := range teachers {
		pol := consortiumtest.DPPPPolicy(map[string][2]float64{"alice": {2, 6}, "bob": {2, 20}})
		if name == "teacher4" {
			pol = consortiumtest.DPPPPolicy(map[string][2]float64{"alice": {2, 6}, "bob": {1, 20}})
		}
		p, err := policy.Parse([]byte(pol))
		if err != nil {
			t.Fatal(err)
		}
		n, err := node.New(ctx, node.Config{Identity: consortiumtest.Party(t, pki, name), Coordinator: c.Addr(),
			Models: []node.Model{{Name: "signs", Path: fx.Models[i], KeyShare: shares[i], Deployment: deployFile}},
			Policy: p, LedgerDir: filepath.Join(dir, name, "ledgers"), AuditPath: filepath.Join(dir, name+"-audit.jsonl"),
			Source:      func() noise.Source { return zeroSource{} },
			PeerTimeout: 3 * time.Second, MaxBackoff: time.Second, Logger: lineLogger(t, name+": ", node.ProgressLine)})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		nctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { n.Run(nctx); close(done) }()
		defer func() { stop(); <-done }()
	}
	// The deployment's per-query (ε, δ), as every teacher calibrates it.
	cfg, err := settings.Config(2, 2, [32]byte{})
	if err != nil {
		t.Fatal(err)
	}
	p, err := dppp.Calibrate(cfg, tpk)
	if err != nil {
		t.Fatal(err)
	}
	charge := func(k int) dppp.Guarantee {
		t.Helper()
		g, err := p.RunCharge(k)
		if err != nil {
			t.Fatal(err)
		}
		return g
	}
	g3, g6 := charge(3), charge(6)
	if !(g6.Epsilon <= 6 && 2*g6.Epsilon > 6) || !(g6.Epsilon < 6*p.Epsilon) {
		t.Fatalf("RunCharge(6) = %v: alice's budget of 6 no longer tests one task paid and a second refused", g6)
	}
	t.Logf("6 queries at (%v, %v): one entry of %v, basic composition ε = %v", p.Epsilon, p.Delta, g6, 6*p.Epsilon)
	submit := func(who string, rows [][]float64) *coordinator.Task {
		t.Helper()
		cl, err := analyst.Dial(ctx, consortiumtest.Party(t, pki, who), c.Addr(), "")
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		tk, err := cl.Submit(ctx, wire.TaskSpec{Kind: wire.KindDPPP, Deployment: "signs", Rows: rows, Deadline: time.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := cl.Wait(ctx, tk.ID)
		if err != nil {
			t.Fatal(err)
		}
		if got.State == "done" {
			if got, err = cl.Task(ctx, "result", tk.ID); err != nil {
				t.Fatal(err)
			}
		}
		return got
	}
	ledgers := func(name string) string { return filepath.Join(dir, name, "ledgers") }

	// 1. alice labels 6 rows.
	start := time.Now()
	got := submit("alice", fx.Queries)
	consortiumTime := time.Since(start)
	if got.State != "done" {
		t.Fatalf("alice's task: %s: %s\n%s", got.State, got.Error, strings.Join(got.Log, "\n"))
	}
	res := got.Result
	t.Logf("labels %v (%v), %s", res.Labels, res.ClassNames, res.Guarantee)
	if len(res.Labels) != len(fx.Queries) || len(res.ClassNames) != 2 {
		t.Fatalf("result: %+v", res)
	}
	// Zero noise (every count gets the same share of coins): the label is
	// the teachers' plurality, computed here from their models.
	decided := 0
	for q, l := range res.Labels {
		votes := [2]int{}
		for _, pr := range fx.Preds {
			votes[pr[q]]++
		}
		if votes[0] == votes[1] {
			continue
		}
		decided++
		want := 0
		if votes[1] > votes[0] {
			want = 1
		}
		if l != want {
			t.Errorf("query %d: the teachers vote %v, the label is %d", q, votes, l)
		}
	}
	if decided < 3 {
		t.Fatalf("only %d queries without a tie: the fixture does not test the labels", decided)
	}
	for _, name := range teachers {
		if s := got.Sites[name]; s.State != "included" {
			t.Fatalf("%s: %+v", name, s)
		}
		checkDPPPLedger(t, ctx, ledgers(name), "analyst", "alice", g6)
		checkDPPPLedger(t, ctx, ledgers(name), "dataset", "signs", g6)
	}

	// The reference: the same four teachers run standalone (dppp.Run, the
	// in-process runner, each teacher's Ledger a ledger file charged per
	// run through dppp.RunLedger as `dppp teach --ledger` does) on the
	// same rows: the nodes' ledgers hold exactly the entry the standalone
	// ledgers hold.
	start = time.Now()
	ref := standaloneCharges(t, ctx, dir, pki, teachers, fx, shares, settings, tpk)
	standaloneTime := time.Since(start)
	// Reported, not asserted (speed lives in benchmarks): the task from
	// submission to its end (join wait, offer and answers included) against
	// the same protocol in process.
	t.Logf("6 queries: consortium task %v (submission to result), standalone in-process run %v (with loading the models and keys): ratio %.2f",
		consortiumTime.Round(time.Millisecond), standaloneTime.Round(time.Millisecond), consortiumTime.Seconds()/standaloneTime.Seconds())
	for i, name := range teachers {
		for _, kind := range [][2]string{{"analyst", "alice"}, {"dataset", "signs"}} {
			l, err := ledger.Open(node.LedgerPath(ledgers(name), kind[0], kind[1]))
			if err != nil {
				t.Fatal(err)
			}
			st, err := l.State(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Charges) != len(ref[i]) {
				t.Fatalf("%s %s ledger: %d charges, standalone %d", name, kind[0], len(st.Charges), len(ref[i]))
			}
			for j, c := range st.Charges {
				if c.Epsilon != ref[i][j].Epsilon || c.Delta != ref[i][j].Delta {
					t.Fatalf("%s %s ledger charge %d: (%v, %v), standalone (%v, %v)", name, kind[0], j, c.Epsilon, c.Delta, ref[i][j].Epsilon, ref[i][j].Delta)
				}
			}
		}
	}
	t.Logf("standalone reference: %d charges per teacher, the nodes' ledgers the same", len(ref[0]))

	// 2. bob: teacher4 refuses by rule max-query-epsilon; the others run it.
	got = submit("bob", fx.Queries[:3])
	if got.State != "done" {
		t.Fatalf("bob's task: %s: %s\n%s", got.State, got.Error, strings.Join(got.Log, "\n"))
	}
	s4 := got.Sites["teacher4"]
	if s4.State != "refused" || s4.Rule != "max-query-epsilon" {
		t.Fatalf("teacher4 on bob's task: %+v", s4)
	}
	t.Logf("what bob sees of teacher4: refused by rule %s: %s", s4.Rule, s4.Reason)
	for _, name := range teachers[:3] {
		checkDPPPLedger(t, ctx, ledgers(name), "analyst", "bob", g3)
		checkDPPPLedger(t, ctx, ledgers(name), "dataset", "signs", g6, g3)
	}
	checkDPPPLedger(t, ctx, ledgers("teacher4"), "analyst", "bob")
	checkDPPPLedger(t, ctx, ledgers("teacher4"), "dataset", "signs", g6)

	// 3. alice again: another RunCharge(6) would pass her budget of 6.
	got = submit("alice", fx.Queries)
	if got.State != "failed" {
		t.Fatalf("alice past her budget: %s", got.State)
	}
	for _, name := range teachers {
		if s := got.Sites[name]; s.State != "refused" || s.Rule != policy.RuleAnalystBudget {
			t.Fatalf("%s on alice's second task: %+v", name, s)
		}
		checkDPPPLedger(t, ctx, ledgers(name), "analyst", "alice", g6)
	}
	t.Logf("what alice sees: %s", got.Error)
}

// checkDPPPLedger asserts that a node's ledger holds exactly the entries
// want (one per DPPP task: its run's PLD total), in order.
func checkDPPPLedger(t *testing.T, ctx context.Context, dir, kind, name string, want ...dppp.Guarantee) {
	t.Helper()
	l, err := ledger.Open(node.LedgerPath(dir, kind, name))
	if err != nil {
		if len(want) == 0 {
			return
		}
		t.Fatal(err)
	}
	st, err := l.State(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Charges) != len(want) {
		t.Fatalf("%s ledger %s %s: %d entries %+v, want %d", dir, kind, name, len(st.Charges), st.Charges, len(want))
	}
	for i, c := range st.Charges {
		if c.Epsilon != want[i].Epsilon || c.Delta != want[i].Delta {
			t.Fatalf("%s ledger %s %s: entry %d is (%v, %v), want the run's PLD total (%v, %v)", dir, kind, name, i, c.Epsilon, c.Delta, want[i].Epsilon, want[i].Delta)
		}
	}
}

// zeroSource is a noise.Source of zero bytes: binomial noise of no heads,
// the same for every count. TESTS ONLY (no privacy).
type zeroSource struct{}

func (zeroSource) Read(b []byte) (int, error) { clear(b); return len(b), nil }
func (zeroSource) Secure() bool               { return false }
func (zeroSource) String() string             { return "zero bytes (test)" }

// fileRun is a dppp.RunStore over a ledger file: what `dplearn dppp
// teach --ledger` raises (cmd/dplearn's runFile) through dppp.RunLedger.
type fileRun struct {
	ctx context.Context
	l   *ledger.Ledger
}

func (f fileRun) Raise(label string, eps, delta float64) error {
	_, err := f.l.Raise(f.ctx, label, ledger.Charge{Epsilon: eps, Delta: delta})
	return err
}

// standaloneCharges runs the deployment's teachers standalone on the
// fixture's queries (dppp.Run, each teacher with its certificate's signer
// and a fresh ledger file raised through dppp.RunLedger) and returns each
// teacher's charges.
func standaloneCharges(t *testing.T, ctx context.Context, dir, pki string, teachers []string, fx *consortiumtest.DPPPTeachers, shares []string,
	settings *wire.Deployment, tpk *paillier.ThresholdPublicKey) [][]ledger.Charge {
	t.Helper()
	cfg, err := settings.Config(2, 2, sha256.Sum256([]byte(fx.Spec.Fingerprint())))
	if err != nil {
		t.Fatal(err)
	}
	p0, err := dppp.Calibrate(cfg, tpk)
	if err != nil {
		t.Fatal(err)
	}
	p, err := p0.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	var ts []*dppp.Teacher
	var files []*ledger.Ledger
	for i, name := range teachers {
		key, err := keyfile.LoadKeyShare(shares[i])
		if err != nil {
			t.Fatal(err)
		}
		mf, err := classify.Load(fx.Models[i])
		if err != nil {
			t.Fatal(err)
		}
		pred, err := mf.Open(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer pred.Close()
		signer, err := certs.NewStatementSigner(consortiumtest.Party(t, pki, name))
		if err != nil {
			t.Fatal(err)
		}
		l, err := ledger.Create(ctx, filepath.Join(dir, "standalone-"+name+".json"), name, ledger.Budget{Epsilon: 20, Delta: 1e-2})
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, l)
		tt, err := dppp.NewTeacher(dppp.TeacherConfig{Name: name, Config: cfg, Key: key, Predict: pred.PredictBatch,
			Ledger: dppp.NewRunLedger(p0, "standalone run", fileRun{ctx, l}), Calibrated: p0, Signer: signer})
		if err != nil {
			t.Fatal(err)
		}
		ts = append(ts, tt)
	}
	res, err := dppp.Run(ctx, p, tpk, ts, fx.Queries, dppp.RunOptions{})
	if err != nil || len(res.Labels) != len(fx.Queries) {
		t.Fatalf("standalone run: %v", err)
	}
	var out [][]ledger.Charge
	for _, l := range files {
		st, err := l.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, st.Charges)
	}
	return out
}
