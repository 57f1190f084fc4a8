package node

import (
	"context"
	"errors"
	"log/slog"
	"math"
	"path/filepath"
	"testing"

	"github.com/dplearn/dplearn/consortium/chain"
	"github.com/dplearn/dplearn/consortium/policy"
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

// TestDPPPTaskLimit: a DPPP task's charges stop at the policy's maximum
// per task even when the ledgers could pay more (a batch voted again after
// a lost contributor is charged again), exactly: charges of 2 under a
// limit of 6 pass three times and refuse the fourth, and neither ledger
// holds the refused charge. checkN refuses k queries the analyst's ledger
// cannot pay, exactly at the boundary.
func TestDPPPTaskLimit(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	audit, err := chain.OpenFile(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer audit.Close()
	n := &Node{log: slog.New(slog.DiscardHandler), name: "teacher1", audit: audit}
	a, err := ledger.Create(ctx, filepath.Join(dir, "a.json"), "analyst", ledger.Budget{Epsilon: 100, Delta: 1e-2})
	if err != nil {
		t.Fatal(err)
	}
	d, err := ledger.Create(ctx, filepath.Join(dir, "d.json"), "dataset", ledger.Budget{Epsilon: 100, Delta: 1e-2})
	if err != nil {
		t.Fatal(err)
	}
	tl := &taskLedger{n: n, ctx: ctx, task: "t1", analyst: a, dataset: d, analystN: "alice", datasetN: "signs"}
	if rule, err := tl.checkN(50, 2, 1e-5); err != nil {
		t.Fatalf("50 queries of ε = 2 on a budget of 100: %s %v", rule, err)
	}
	if rule, err := tl.checkN(51, 2, 1e-5); rule != policy.RuleAnalystBudget || !errors.Is(err, ledger.ErrOverBudget) {
		t.Fatalf("51 queries of ε = 2 on a budget of 100: %q %v", rule, err)
	}
	tl.limitE, tl.limitD = 6, 1e-3
	tl.taskE, tl.taskD = newRat(), newRat()
	for i := range 4 {
		err := tl.Charge("q", 2, 1e-5)
		if (err == nil) != (i < 3) {
			t.Fatalf("charge %d of ε = 2 under a task limit of 6: %v", i+1, err)
		}
	}
	for _, l := range []*ledger.Ledger{a, d} {
		st, err := l.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Charges) != 3 || st.Spent().Epsilon != 6 {
			t.Fatalf("ledger %s: %d charges, ε %v; want 3, 6", st.Name, len(st.Charges), st.Spent().Epsilon)
		}
	}
}

// TestDPPPRequest: the total a DPPP task asks the policy about is k times
// the per-query (ε, δ), exact and rounded up: 3 queries of ε = 0.1 total
// 3 × 0.1000000000000000055… = 0.3000000000000000166… > float64(0.3), so
// a maximum of 0.3 per task refuses them (max-epsilon), as the ledger's
// exact sum would exceed it.
func TestDPPPRequest(t *testing.T) {
	p, err := policy.Parse([]byte(`{"datasets": {"signs": {"budget": {"epsilon": 40, "delta": 1e-3}}},
 "analysts": {"alice": {"datasets": ["signs"], "mechanisms": ["dppp"], "max_epsilon": 0.3, "max_delta": 1e-4,
   "max_query_epsilon": 1, "max_query_delta": 1e-5, "budget": {"epsilon": 20, "delta": 1e-2}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		k          int
		eps, delta float64
		wantE      float64
		rule       string
	}{
		{2, 0.1, 1e-6, 0.2, ""},
		{3, 0.1, 1e-6, math.Nextafter(0.3, 1), "max-epsilon"},
		{1, 0.3, 1e-6, 0.3, ""},
		{5, 0.05, 1e-6, math.Nextafter(0.25, 1), ""}, // 0.05 is a hair above 1/20
		{7, 0.05, 1e-6, 0.35000000000000003, "max-epsilon"},
		{2, 0.1, 6e-5, 0.2, "max-delta"},
	}
	for _, c := range cases {
		r := dpppRequest("alice", "signs", c.k, c.eps, c.delta)
		if r.Epsilon != c.wantE || r.Queries != c.k {
			t.Errorf("%d × %v: total ε %v, want %v", c.k, c.eps, r.Epsilon, c.wantE)
		}
		got := p.Decide(r)
		if (c.rule == "") != (got == nil) || (got != nil && got.Rule != c.rule) {
			t.Errorf("%d × (%v, %v): want rule %q, got %v", c.k, c.eps, c.delta, c.rule, got)
		}
	}
}
