package node

import (
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/consortium/chain"
	"github.com/dplearn/dplearn/consortium/policy"
	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/internal/consortiumtest"
	"github.com/dplearn/dplearn/ledger"
)

func newTestNode(t *testing.T) (*Node, string) {
	t.Helper()
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	consortiumtest.Certs(t, pki, "coordinator", "site-a", "alice", "bob")
	schema := consortiumtest.Write(t, dir, "schema.json", consortiumtest.Schema)
	consortiumtest.Data(t, filepath.Join(dir, "a.csv"), 500, 1)
	pol, err := policy.Parse([]byte(consortiumtest.Policy(100, []string{"x1", "x2", "y"}, 1.5, map[string][2]float64{"alice": {1, 1}, "bob": {1, 5}})))
	if err != nil {
		t.Fatal(err)
	}
	n, err := New(context.Background(), Config{Identity: consortiumtest.Party(t, pki, "site-a"), Coordinator: "127.0.0.1:1",
		Datasets: []Dataset{{Name: "cohort", Path: filepath.Join(dir, "a.csv"), Schema: schema}}, Policy: pol,
		LedgerDir: filepath.Join(dir, "ledgers"), AuditPath: filepath.Join(dir, "audit.jsonl")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	return n, pki
}

func signedOffer(t *testing.T, p *certs.Party, claimed string, eps float64) wire.Offer {
	t.Helper()
	spec, _ := json.Marshal(wire.TaskSpec{Sites: map[string]string{"site-a": "cohort", "site-b": "cohort"}, Model: "linear", Mechanism: "capefm",
		Epsilon: eps, Delta: 1e-6, MinSites: 2, Schema: json.RawMessage(consortiumtest.Schema), Deadline: time.Now().Add(time.Minute)})
	cert, sig, err := certs.SignStatement(p, wire.SpecDomain, spec)
	if err != nil {
		t.Fatal(err)
	}
	return wire.Offer{Task: "t1", Analyst: claimed, Dataset: "cohort", Signed: wire.Signed{Spec: spec, Cert: cert, Sig: sig}}
}

// TestNodeChecksWhoAsked: the analyst a node's policy sees is the signer
// of the task. A task signed by bob but offered as alice's (what a
// coordinator would do to spend alice's budget, or to use alice's wider
// rights) is refused by rule signature; so is a specification changed
// after signing, and one the node already accepted (rule replay, also
// after the node restarts).
func TestNodeChecksWhoAsked(t *testing.T) {
	n, pki := newTestNode(t)
	ctx := context.Background()
	bob := consortiumtest.Party(t, pki, "bob")
	allowed := signedOffer(t, consortiumtest.Party(t, pki, "alice"), "alice", 1)
	cases := []struct {
		name string
		o    wire.Offer
		rule string
	}{
		{"signed by bob, claimed alice", signedOffer(t, bob, "alice", 1), "signature"},
		{"altered spec", func() wire.Offer {
			o := signedOffer(t, consortiumtest.Party(t, pki, "alice"), "alice", 0.5)
			o.Signed.Spec = []byte(string(o.Signed.Spec[:len(o.Signed.Spec)-1]) + ` `)
			return o
		}(), "signature"},
		{"alice over max ε", signedOffer(t, consortiumtest.Party(t, pki, "alice"), "alice", 2), "max-epsilon"},
		{"alice allowed", allowed, ""},
		{"the same signed task again", allowed, "replay"},
	}
	for _, c := range cases {
		site, _, ans := n.decide(ctx, nil, c.o)
		if c.rule == "" {
			if !ans.Accept || site == nil {
				t.Errorf("%s: refused: %+v", c.name, ans)
			}
			continue
		}
		if ans.Accept || ans.Rule != c.rule {
			t.Errorf("%s: want rule %s, got %+v", c.name, c.rule, ans)
		}
	}
	// the replay guard survives a restart (it is read from the audit log)
	n.Close()
	n2, err := New(ctx, n.cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n2.Close()
	if _, _, ans := n2.decide(ctx, nil, allowed); ans.Accept || ans.Rule != "replay" {
		t.Errorf("after a restart the same signed task: %+v", ans)
	}
}

// TestNodeChargesBothLedgers: a release is charged to the analyst's and
// the dataset's ledgers or to neither, exactly at the budgets (alice ε 1,
// dataset ε 1.5), and every charge is in the audit chain.
func TestNodeChargesBothLedgers(t *testing.T) {
	n, _ := newTestNode(t)
	ctx := context.Background()
	la, err := n.ledgers(ctx, "alice", "cohort", "t1")
	if err != nil {
		t.Fatal(err)
	}
	lb, err := n.ledgers(ctx, "bob", "cohort", "t2")
	if err != nil {
		t.Fatal(err)
	}
	steps := []struct {
		l    *taskLedger
		eps  float64
		rule string
	}{
		{la, 0.75, ""},
		{la, 0.5, policy.RuleAnalystBudget},  // alice 1.25 > 1
		{la, 0.25, ""},                       // alice exactly 1
		{lb, 0.75, policy.RuleDatasetBudget}, // dataset 1.75 > 1.5
		{lb, 0.5, ""},                        // dataset exactly 1.5
		{lb, 0x1p-50, policy.RuleDatasetBudget},
	}
	for i, s := range steps {
		rule, cerr := s.l.check(s.eps, 0)
		err := s.l.Charge("release", s.eps, 0)
		if rule != s.rule || (err == nil) != (s.rule == "") {
			t.Fatalf("step %d: rule %q (%v), charge %v; want rule %q", i, rule, cerr, err, s.rule)
		}
		if err != nil && !errors.Is(err, ledger.ErrOverBudget) {
			t.Fatalf("step %d: %v", i, err)
		}
	}
	spent := func(kind, name string) (float64, int) {
		l, _ := ledger.Open(LedgerPath(n.cfg.LedgerDir, kind, name))
		st, _ := l.State(ctx)
		return st.Spent().Epsilon, len(st.Charges)
	}
	for _, w := range []struct {
		kind, name string
		eps        float64
		n          int
	}{{"analyst", "alice", 1, 2}, {"analyst", "bob", 0.5, 1}, {"dataset", "cohort", 1.5, 3}} {
		if e, c := spent(w.kind, w.name); e != w.eps || c != w.n {
			t.Errorf("%s %s: spent %v in %d charges, want %v in %d", w.kind, w.name, e, c, w.eps, w.n)
		}
	}
	es, _ := chain.ReadFile(n.cfg.AuditPath)
	charges := 0
	for _, e := range es {
		if e.Action == "charge" {
			charges++
		}
	}
	if charges != 3 || chain.Verify(es) != nil {
		t.Errorf("audit chain: %d charge entries, %v", charges, chain.Verify(es))
	}
}
