package coordinator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/dplearn/dplearn/consortium/wire"
)

// goldenReplies is the SHA-256 of the coordinator's replies to an analyst
// (envelope type, a NUL, the JSON payload, as consortium/wire's
// TestGoldenWire hashes), built by reply from fixed inputs: a finished
// capeFM task with its model, a finished DPPP task with its labels, a task
// refused by a site's rule, a cancelled one, a task list, the budgets, an
// empty list and an error. The reply bodies (Task, Result, SiteStatus,
// Budget) are what `dplearn consortium` and package analyst decode, and
// what the coordinator's store keeps. A changed digest means their
// encoding changed (a field renamed, a tag dropped, a number or time
// encoded differently): explain it in the commit that updates the
// constant; old analysts would misread it. Regenerate with
// `go test ./consortium/coordinator -run TestGoldenReplies -v`, which
// prints the new digest.
const goldenReplies = "8e2746fe117f3386cb7d04d20bbf532dd3953e54f8b432dadbe58ea536a8c37a"

// goldenBodies are the fixed reply bodies of TestGoldenReplies.
func goldenBodies(t *testing.T) (tasks []Task, budgets []Budget) {
	t.Helper()
	at := time.Date(2026, 11, 27, 9, 30, 0, 123456789, time.UTC)
	fitSpec := wire.TaskSpec{Sites: map[string]string{"site-a": "cohort", "site-b": "cohort"},
		Model: "linear", Mechanism: "capefm", Epsilon: 0.8, Delta: 1e-6, Split: 0.5, NoiseRatio: 1, Colluders: 1, MinSites: 2,
		Schema:   json.RawMessage(`{"target":{"name":"wage","range":[4,9]},"features":[{"name":"education","range":[0,20]}]}`),
		Deadline: at.Add(time.Hour), Nonce: "n-0001"}
	spec, err := json.Marshal(fitSpec)
	if err != nil {
		t.Fatal(err)
	}
	signed := wire.Signed{Spec: spec, Cert: []byte{0x30, 0x82, 1, 2}, Sig: []byte{0x30, 0x45, 9}}
	dpppSpec := wire.TaskSpec{Kind: wire.KindDPPP, Deployment: "triage", Rows: [][]float64{{0.25, -1, 3e-9}},
		Sites: map[string]string{"teacher1": "triage", "teacher2": "triage"}, Epsilon: 0.1, Delta: 1e-7, MinSites: 2,
		Schema: json.RawMessage("null"), Deadline: at.Add(time.Hour), Nonce: "n-0002"}
	tasks = []Task{
		{ID: "t-1", Analyst: "alice", Spec: fitSpec, Signed: signed, State: "done",
			Sites: map[string]*SiteStatus{"site-a": {Dataset: "cohort", State: "included", N: 6000},
				"site-b": {Dataset: "cohort", State: "included", N: 4000}},
			Submitted: at, Started: at.Add(time.Second), Ended: at.Add(time.Minute),
			Result: &Result{Features: []string{"intercept", "education"}, Coef: []float64{4.5, 0.125, -1e-300},
				Guarantee: "(0.8, 1e-06)-DP per record", Attempts: 1, N: 10000, Sites: []string{"site-a", "site-b"}},
			Log: []string{"offered to site-a, site-b", "fit done"}},
		{ID: "t-2", Analyst: "alice", Spec: dpppSpec, State: "done",
			Sites: map[string]*SiteStatus{"teacher1": {Dataset: "triage", State: "included"},
				"teacher2": {Dataset: "triage", State: "lost"}},
			Submitted: at, Ended: at.Add(2 * time.Minute),
			Result: &Result{Labels: []int{2, 0}, ClassNames: []string{"low", "mid", "high"}}},
		{ID: "t-3", Analyst: "bob", Spec: fitSpec, State: "failed", Error: "too few sites accepted (1 of 2)",
			Sites: map[string]*SiteStatus{"site-a": {Dataset: "cohort", State: "refused", Rule: "max-epsilon",
				Reason: "ε = 0.8 per task exceeds analyst \"bob\"'s maximum 0.5"},
				"site-b": {Dataset: "cohort", State: "absent"}},
			Submitted: at},
		{ID: "t-4", Analyst: "alice", Spec: fitSpec, State: "cancelled", Error: "cancelled by alice",
			Sites: map[string]*SiteStatus{}, Submitted: at, Ended: at},
	}
	budgets = []Budget{
		{Node: "site-a", Report: wire.BudgetReport{Ledgers: []wire.LedgerState{{Kind: "analyst", Name: "alice",
			BudgetEpsilon: 5, BudgetDelta: 1e-5, SpentEpsilon: 0.8, SpentDelta: 1e-6, Charges: 1},
			{Kind: "dataset", Name: "cohort", BudgetEpsilon: 10, BudgetDelta: 1e-4}}, Time: at}},
		{Node: "site-b", Report: wire.BudgetReport{Ledgers: []wire.LedgerState{}, Time: at}},
	}
	return tasks, budgets
}

// TestGoldenReplies checks that the coordinator's replies to an analyst
// are encoded as before (one digest over many outputs, as crypto/mlkem's
// TestAccumulated), and that each body decodes back to itself.
func TestGoldenReplies(t *testing.T) {
	tasks, budgets := goldenBodies(t)
	type answer struct {
		body any
		err  error
		into any // what the analyst decodes the body into
	}
	var answers []answer
	for i := range tasks {
		answers = append(answers, answer{&tasks[i], nil, new(Task)})
	}
	answers = append(answers,
		answer{tasks[:2], nil, new([]Task)},
		answer{budgets, nil, new([]Budget)},
		answer{[]Task(nil), nil, new([]Task)},
		answer{nil, errors.New(`status: no task "t-9" of analyst alice`), nil},
	)
	h := sha256.New()
	for i, a := range answers {
		rep := reply(uint64(40+i), a.body, a.err)
		if (a.err != nil) != (rep.Error != "") {
			t.Fatalf("reply %d: error %q, want %v", i, rep.Error, a.err)
		}
		env, err := wire.Encode(wire.TypeReply, rep)
		if err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		h.Write([]byte(env.Type + "\x00"))
		h.Write(env.Payload)
		var back wire.Reply
		if err := wire.Decode(env, &back); err != nil {
			t.Fatalf("reply %d: %v", i, err)
		}
		if a.into == nil {
			continue
		}
		if err := json.Unmarshal(back.Body, a.into); err != nil {
			t.Fatalf("reply %d: body: %v", i, err)
		}
		want := a.body
		if reflect.TypeOf(want).Kind() == reflect.Pointer {
			want = reflect.ValueOf(want).Elem().Interface()
		}
		if got := reflect.ValueOf(a.into).Elem().Interface(); !reflect.DeepEqual(got, want) {
			t.Errorf("reply %d: decoded %+v, sent %+v", i, got, want)
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != goldenReplies {
		t.Errorf("coordinator replies changed: digest %s, want %s (see goldenReplies: explain the change in the commit)", got, goldenReplies)
	}
}
