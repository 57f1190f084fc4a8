package node

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/consortium/chain"
	"github.com/dplearn/dplearn/consortium/policy"
	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/internal/pailliertest"
	"github.com/dplearn/dplearn/ledger"
)

// TestSignedOnly: the teacher labels the rows the analyst signed (any
// subset, any order) and refuses a batch with any other row, even one
// differing from a signed row in the last bit.
func TestSignedOnly(t *testing.T) {
	signed := [][]float64{{0.5, -0.25}, {1, 0}}
	calls := 0
	pred := signedOnly(signed, "alice", func(_ context.Context, rows [][]float64) ([]int, error) {
		calls++
		return make([]int, len(rows)), nil
	})
	cases := []struct {
		name string
		rows [][]float64
		ok   bool
	}{
		{"all signed", [][]float64{{1, 0}, {0.5, -0.25}}, true},
		{"a subset", [][]float64{{1, 0}}, true},
		{"one foreign row", [][]float64{{1, 0}, {0.25, 0.25}}, false},
		{"one ulp off", [][]float64{{0.5, math.Nextafter(-0.25, 0)}}, false},
		{"a prefix of a signed row", [][]float64{{0.5}}, false},
	}
	for _, c := range cases {
		before := calls
		_, err := pred(context.Background(), c.rows)
		if (err == nil) != c.ok || (!c.ok && calls != before) {
			t.Errorf("%s: err %v, predictor called %d times", c.name, err, calls-before)
		}
	}
}

// dpppParams calibrates the consortium tests' deployment (4 teachers,
// threshold 3, ε = 2 and δ = 1e-5 per query, budget (50, 1e-3) per run) on
// a test key.
func dpppParams(t *testing.T) *dppp.Params {
	t.Helper()
	var d wire.Deployment
	if err := json.Unmarshal([]byte(`{"teachers": ["teacher1", "teacher2", "teacher3", "teacher4"], "threshold": 3,
 "epsilon": 2, "delta": 1e-5, "budget_epsilon": 50, "budget_delta": 1e-3}`), &d); err != nil {
		t.Fatal(err)
	}
	cfg, err := d.Config(2, 2, [32]byte{})
	if err != nil {
		t.Fatal(err)
	}
	tpk, _, err := pailliertest.ThresholdKey(2048, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	p, err := dppp.Calibrate(cfg, tpk)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// runCharge is p.RunCharge(k), the test's own call on the deployment's
// Params (not the node's output).
func runCharge(t *testing.T, p *dppp.Params, k int) dppp.Guarantee {
	t.Helper()
	g, err := p.RunCharge(k)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// testLedgers is a taskLedger over fresh (or, reopened, existing) ledger
// files in dir with the given ε budgets (δ budget 1e-2 each).
func testLedgers(t *testing.T, n *Node, dir, task string, analystE, datasetE float64) *taskLedger {
	t.Helper()
	ctx := context.Background()
	open := func(name string, e float64) *ledger.Ledger {
		path := filepath.Join(dir, name+".json")
		if l, err := ledger.Open(path); err == nil {
			if _, err := l.State(ctx); err == nil {
				return l
			}
		}
		l, err := ledger.Create(ctx, path, name, ledger.Budget{Epsilon: e, Delta: 1e-2})
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	return &taskLedger{n: n, ctx: ctx, task: task, analyst: open("analyst", analystE), dataset: open("dataset", datasetE),
		analystN: "alice", datasetN: "signs", limitE: 30, limitD: 1e-3}
}

// entries returns the charges of a ledger file.
func entries(t *testing.T, l *ledger.Ledger) []ledger.Charge {
	t.Helper()
	st, err := l.State(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st.Charges
}

// wantEntries asserts that both of tl's ledgers hold exactly want (ε, δ).
func wantEntries(t *testing.T, tl *taskLedger, what string, want ...dppp.Guarantee) {
	t.Helper()
	for _, l := range []*ledger.Ledger{tl.analyst, tl.dataset} {
		cs := entries(t, l)
		if len(cs) != len(want) {
			t.Fatalf("%s: ledger %s holds %d entries %+v, want %d", what, l.Path(), len(cs), cs, len(want))
		}
		for i, c := range cs {
			if c.Epsilon != want[i].Epsilon || c.Delta != want[i].Delta {
				t.Fatalf("%s: ledger %s entry %d is (%v, %v), want the run's PLD total (%v, %v)", what, l.Path(), i, c.Epsilon, c.Delta, want[i].Epsilon, want[i].Delta)
			}
		}
	}
}

// TestDPPPRunCharge: a DPPP task's charges to the node's ledgers, through
// the teacher's dppp.RunLedger over taskLedger.Raise (as decideDPPP wires
// them), without the network:
//   - after each batch (2, 3, then 1 queries) the analyst's and the
//     dataset's ledgers each hold ONE entry, equal to RunCharge of the
//     queries answered so far, recomputed here from dppp.Params; after 6
//     queries it is RunCharge(6), well below the 6·ε = 12 of basic
//     composition;
//   - an analyst budget that pays RunCharge(4) but not RunCharge(5): the
//     fifth query is refused (partial run), both ledgers keep RunCharge(4);
//     and a task of 6 is refused before any vote by rule analyst-budget;
//   - a dataset budget too small: the raise is refused by rule
//     dataset-budget and the analyst's ledger is not charged either;
//   - the policy's maximum per task between RunCharge(3) and RunCharge(4)
//     stops the run after 3 queries;
//   - a restart (ledgers reopened from their files, a new task): the first
//     task's entry is kept, unchanged, beside the new task's own entry, and
//     a run under the first task's label is refused as not fresh.
func TestDPPPRunCharge(t *testing.T) {
	p := dpppParams(t)
	g3, g4, g5, g6 := runCharge(t, p, 3), runCharge(t, p, 4), runCharge(t, p, 5), runCharge(t, p, 6)
	t.Logf("per query (%v, %v), 6 queries: PLD total %v against basic composition ε = %v", p.Epsilon, p.Delta, g6, 6*p.Epsilon)
	if !(g6.Epsilon < 6*p.Epsilon) {
		t.Fatalf("RunCharge(6) = %v is not below 6·ε = %v: the test cannot tell the two apart", g6, 6*p.Epsilon)
	}
	labels := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("q%d", i))
		}
		return out
	}
	newNode := func(dir string) *Node {
		audit, err := chain.OpenFile(filepath.Join(dir, "audit.jsonl"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { audit.Close() })
		return &Node{log: slog.New(slog.DiscardHandler), name: "teacher1", audit: audit}
	}

	t.Run("one entry per run", func(t *testing.T) {
		dir := t.TempDir()
		tl := testLedgers(t, newNode(dir), dir, "t1", 20, 40)
		run := dppp.NewRunLedger(p, dpppLabel("t1", "d1"), tl)
		done := 0
		for _, b := range []int{2, 3, 1} {
			if err := run.ChargeQueries(labels(done, done+b), p.Epsilon, p.Delta); err != nil {
				t.Fatal(err)
			}
			done += b
			wantEntries(t, tl, fmt.Sprintf("after %d queries", done), runCharge(t, p, done))
		}
		wantEntries(t, tl, "after the run", g6)

		// Restart: the ledgers reopened from their files by a new node, a
		// new task: the first entry is kept as it was, the new task's is
		// its own.
		tl2 := testLedgers(t, newNode(dir), dir, "t2", 20, 40)
		// At the entry's own total (which Raise itself would accept: not
		// lower, within the budget), so only the freshness rule refuses it.
		if rule, err := tl2.checkRaise(dpppLabel("t1", "d1"), g6.Epsilon, g6.Delta, true); err == nil || !strings.Contains(err.Error(), "already holds a charge labelled") {
			t.Fatalf("a new run under the first task's label: not refused as not fresh (%q, %v)", rule, err)
		}
		run2 := dppp.NewRunLedger(p, dpppLabel("t2", "d2"), tl2)
		if err := run2.ChargeQueries(labels(0, 3), p.Epsilon, p.Delta); err != nil {
			t.Fatal(err)
		}
		wantEntries(t, tl2, "after a restart and a second task of 3", g6, g3)
	})

	t.Run("analyst budget", func(t *testing.T) {
		dir := t.TempDir()
		budget := (g4.Epsilon + g5.Epsilon) / 2
		tl := testLedgers(t, newNode(dir), dir, "t1", budget, 40)
		if rule, err := tl.checkRaise(dpppLabel("t0", "d0"), g6.Epsilon, g6.Delta, true); rule != policy.RuleAnalystBudget || !errors.Is(err, ledger.ErrOverBudget) {
			t.Fatalf("6 queries on a budget of ε = %v: %q %v", budget, rule, err)
		}
		if rule, err := tl.checkRaise(dpppLabel("t0", "d0"), g4.Epsilon, g4.Delta, true); err != nil {
			t.Fatalf("4 queries on a budget of ε = %v: %q %v", budget, rule, err)
		}
		run := dppp.NewRunLedger(p, dpppLabel("t1", "d1"), tl)
		for i := range 5 {
			err := run.Charge(fmt.Sprintf("q%d", i), p.Epsilon, p.Delta)
			if (err == nil) != (i < 4) {
				t.Fatalf("query %d on a budget of ε = %v: %v", i+1, budget, err)
			}
		}
		wantEntries(t, tl, "after the refused fifth query", g4)
	})

	t.Run("dataset budget", func(t *testing.T) {
		dir := t.TempDir()
		tl := testLedgers(t, newNode(dir), dir, "t1", 20, (g3.Epsilon+g4.Epsilon)/2)
		if rule, _ := tl.checkRaise(dpppLabel("t0", "d0"), g6.Epsilon, g6.Delta, true); rule != policy.RuleDatasetBudget {
			t.Fatalf("6 queries past the dataset's budget: rule %q", rule)
		}
		run := dppp.NewRunLedger(p, dpppLabel("t1", "d1"), tl)
		if err := run.ChargeQueries(labels(0, 3), p.Epsilon, p.Delta); err != nil {
			t.Fatal(err)
		}
		if err := run.Charge("q3", p.Epsilon, p.Delta); !errors.Is(err, ledger.ErrOverBudget) {
			t.Fatalf("the fourth query past the dataset's budget: %v", err)
		}
		wantEntries(t, tl, "after the dataset refused", g3)
	})

	t.Run("task limit", func(t *testing.T) {
		dir := t.TempDir()
		tl := testLedgers(t, newNode(dir), dir, "t1", 20, 40)
		tl.limitE = (g3.Epsilon + g4.Epsilon) / 2
		run := dppp.NewRunLedger(p, dpppLabel("t1", "d1"), tl)
		if err := run.ChargeQueries(labels(0, 3), p.Epsilon, p.Delta); err != nil {
			t.Fatal(err)
		}
		if err := run.Charge("q3", p.Epsilon, p.Delta); !errors.Is(err, ledger.ErrOverBudget) {
			t.Fatalf("the fourth query past the task's maximum ε = %v: %v", tl.limitE, err)
		}
		wantEntries(t, tl, "after the task limit", g3)
	})
}

// TestDPPPRequest: the total a DPPP task of k queries asks the policy
// about is the run's PLD total p.RunCharge(k) (what its ledger entry is
// raised to at most), not k·ε: a maximum per task of exactly RunCharge(6)
// allows 6 queries at ε = 2 (basic composition: 12), the next float below
// it refuses them by rule max-epsilon.
func TestDPPPRequest(t *testing.T) {
	p := dpppParams(t)
	g6 := runCharge(t, p, 6)
	for _, c := range []struct {
		maxE float64
		rule string
	}{
		{g6.Epsilon, ""},
		{math.Nextafter(g6.Epsilon, 0), "max-epsilon"},
	} {
		pol, err := policy.Parse([]byte(fmt.Sprintf(`{"datasets": {"signs": {"budget": {"epsilon": 40, "delta": 1e-2}}},
 "analysts": {"alice": {"datasets": ["signs"], "mechanisms": ["dppp"], "max_epsilon": %v, "max_delta": 1e-3,
   "max_query_epsilon": 2, "max_query_delta": 1e-5, "budget": {"epsilon": 20, "delta": 1e-2}}}}`, c.maxE)))
		if err != nil {
			t.Fatal(err)
		}
		r, g, err := dpppRequest("alice", "signs", 6, p)
		if err != nil {
			t.Fatal(err)
		}
		if r.Epsilon != g6.Epsilon || r.Delta != g6.Delta || g != g6 || r.Queries != 6 || r.QueryEpsilon != p.Epsilon {
			t.Fatalf("request %+v (total %v), want the run's total %v", r, g, g6)
		}
		got := pol.Decide(r)
		if (c.rule == "") != (got == nil) || (got != nil && got.Rule != c.rule) {
			t.Errorf("max_epsilon %v: want rule %q, got %v", c.maxE, c.rule, got)
		}
	}
}
