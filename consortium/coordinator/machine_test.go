package coordinator

import (
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/consortium/store"
	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/internal/consortiumtest"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/transport"
)

// machineFixture is a Machine without any network: three nodes, alice.
func machineFixture(t *testing.T, maxRunning int) (*Machine, *certs.Party) {
	t.Helper()
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	consortiumtest.Certs(t, pki, "coordinator", "alice", "site-a", "site-b", "site-c")
	st, err := store.Open(filepath.Join(dir, "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	m, err := NewMachine(Config{Identity: consortiumtest.Party(t, pki, "coordinator"), Store: st, Nodes: []string{"site-a", "site-b", "site-c"},
		Analysts: []string{"alice"}, JoinWait: time.Second, AnswerTimeout: 5 * time.Second, MaxRunning: maxRunning, Logger: slog.New(logx.LineFunc(ProgressLine, func(l string) { t.Log(l) }))})
	if err != nil {
		t.Fatal(err)
	}
	return m, consortiumtest.Party(t, pki, "alice")
}

func env(t *testing.T, from, typ string, v any) transport.Envelope {
	t.Helper()
	e, err := wire.Encode(typ, v)
	if err != nil {
		t.Fatal(err)
	}
	e.Sender = from
	return e
}

func register(t *testing.T, m *Machine, nodes ...string) {
	for _, n := range nodes {
		m.Message(env(t, n, wire.TypeRegister, wire.Register{Datasets: []wire.Dataset{{Name: "cohort", N: 500}}}))
	}
}

func submit(t *testing.T, m *Machine, alice *certs.Party, minSites int, deadline time.Time) string {
	t.Helper()
	spec, _ := json.Marshal(wire.TaskSpec{Sites: map[string]string{"site-a": "cohort", "site-b": "cohort", "site-c": "cohort"}, Model: "linear",
		Mechanism: "capefm", Epsilon: 1, Delta: 1e-6, MinSites: minSites, Schema: json.RawMessage(consortiumtest.Schema), Deadline: deadline})
	cert, sig, err := certs.SignStatement(alice, wire.SpecDomain, spec)
	if err != nil {
		t.Fatal(err)
	}
	effs := m.Message(env(t, "alice", wire.TypeRequest, wire.Request{ID: 1, Op: "submit", Signed: &wire.Signed{Spec: spec, Cert: cert, Sig: sig}}))
	if len(effs) != 1 || effs[0].Send == nil || effs[0].Send.Type != wire.TypeReply {
		t.Fatalf("submit effects: %+v", effs)
	}
	rep := effs[0].Send.Msg.(wire.Reply)
	if rep.Error != "" {
		t.Fatal(rep.Error)
	}
	var tk Task
	json.Unmarshal(rep.Body, &tk)
	return tk.ID
}

func kinds(effs []Effect) string {
	var out []string
	for _, e := range effs {
		switch {
		case e.Send != nil:
			out = append(out, e.Send.Type+">"+e.Send.To)
		case e.Open != nil:
			out = append(out, "open:"+strings.Join(e.Open.Roster, ","))
		case e.Start != nil:
			out = append(out, "start")
		case e.Stop != "":
			out = append(out, "stop")
		}
	}
	return strings.Join(out, " ")
}

// TestMachineLifecycle drives the coordinator's state machine without a
// network: when a task starts (all sites online at once; MinSites after
// the join wait; never before), what is offered to whom, refusals and
// absences, the deadline, MaxRunning, and that a queued task waits.
func TestMachineLifecycle(t *testing.T) {
	now := time.Now()
	t.Run("all online: offered at once, started on the answers", func(t *testing.T) {
		m, alice := machineFixture(t, 16)
		register(t, m, "site-a", "site-b", "site-c")
		id := submit(t, m, alice, 3, now.Add(time.Minute))
		if got := kinds(m.Tick(now)); got != "open:site-a,site-b,site-c offer>site-a offer>site-b offer>site-c" {
			t.Fatalf("tick: %s", got)
		}
		m.Message(env(t, "site-a", wire.TypeAnswer, wire.Answer{Task: id, Accept: true}))
		m.Message(env(t, "site-b", wire.TypeAnswer, wire.Answer{Task: id, Accept: true}))
		if got := kinds(m.Message(env(t, "site-c", wire.TypeAnswer, wire.Answer{Task: id, Accept: true}))); got != "start" {
			t.Fatalf("last answer: %s", got)
		}
		if m.tasks[id].State != "running" {
			t.Fatal(m.tasks[id].State)
		}
	})
	t.Run("one refuses below min sites: failed, accepted sites cancelled", func(t *testing.T) {
		m, alice := machineFixture(t, 16)
		register(t, m, "site-a", "site-b", "site-c")
		id := submit(t, m, alice, 3, now.Add(time.Minute))
		m.Tick(now)
		m.Message(env(t, "site-a", wire.TypeAnswer, wire.Answer{Task: id, Accept: true}))
		m.Message(env(t, "site-b", wire.TypeAnswer, wire.Answer{Task: id, Accept: true}))
		got := kinds(m.Message(env(t, "site-c", wire.TypeAnswer, wire.Answer{Task: id, Rule: "max-epsilon", Reason: "too much"})))
		if got != "stop cancel>site-a cancel>site-b" {
			t.Fatalf("refusal: %s", got)
		}
		tk := m.tasks[id]
		if tk.State != "failed" || !strings.Contains(tk.Error, "site-c refused (rule max-epsilon: too much)") {
			t.Fatalf("%s: %s", tk.State, tk.Error)
		}
	})
	t.Run("min sites online: waits for the join wait, then starts without the absent", func(t *testing.T) {
		m, alice := machineFixture(t, 16)
		register(t, m, "site-a", "site-b")
		id := submit(t, m, alice, 2, now.Add(time.Minute))
		if got := kinds(m.Tick(time.Now())); got != "" {
			t.Fatalf("before the join wait: %s", got)
		}
		if got := kinds(m.Tick(time.Now().Add(1100 * time.Millisecond))); got != "open:site-a,site-b offer>site-a offer>site-b" {
			t.Fatalf("after the join wait: %s", got)
		}
		if st := m.tasks[id].Sites["site-c"]; st.State != "absent" {
			t.Fatalf("site-c: %+v", st)
		}
	})
	t.Run("too few online: fails at the deadline naming the absent", func(t *testing.T) {
		m, alice := machineFixture(t, 16)
		register(t, m, "site-a")
		id := submit(t, m, alice, 2, now.Add(30*time.Second))
		if got := kinds(m.Tick(now.Add(29 * time.Second))); got != "" {
			t.Fatalf("before the deadline: %s", got)
		}
		m.Tick(now.Add(31 * time.Second))
		tk := m.tasks[id]
		if tk.State != "failed" || !strings.Contains(tk.Error, "absent: site-b, site-c") {
			t.Fatalf("%s: %s", tk.State, tk.Error)
		}
	})
	t.Run("no answer: absent after the answer timeout", func(t *testing.T) {
		m, alice := machineFixture(t, 16)
		register(t, m, "site-a", "site-b", "site-c")
		id := submit(t, m, alice, 2, now.Add(time.Minute))
		m.Tick(now)
		m.Message(env(t, "site-a", wire.TypeAnswer, wire.Answer{Task: id, Accept: true}))
		m.Message(env(t, "site-b", wire.TypeAnswer, wire.Answer{Task: id, Accept: true}))
		if got := kinds(m.Tick(time.Now().Add(6 * time.Second))); got != "start" {
			t.Fatalf("after the answer timeout: %s", got)
		}
		if st := m.tasks[id].Sites["site-c"]; st.State != "absent" || st.Reason != "no answer to the offer" {
			t.Fatalf("site-c: %+v", st)
		}
	})
	t.Run("max running: the second task waits", func(t *testing.T) {
		m, alice := machineFixture(t, 1)
		register(t, m, "site-a", "site-b", "site-c")
		a := submit(t, m, alice, 3, now.Add(time.Minute))
		b := submit(t, m, alice, 3, now.Add(time.Minute))
		m.Tick(now)
		if m.tasks[a].State != "offered" || m.tasks[b].State != "queued" {
			t.Fatalf("%s %s", m.tasks[a].State, m.tasks[b].State)
		}
		m.ProtocolEnd(a, nil, errString("boom"))
		if got := kinds(m.Tick(now)); !strings.HasPrefix(got, "open:") || m.tasks[b].State != "offered" {
			t.Fatalf("after a ended: %s, %s", got, m.tasks[b].State)
		}
	})
	t.Run("a node offline is not offered; a detached node goes offline", func(t *testing.T) {
		m, alice := machineFixture(t, 16)
		register(t, m, "site-a", "site-b", "site-c")
		m.Connection(transport.Event{Party: "site-c", Kind: transport.Detached, Time: now})
		id := submit(t, m, alice, 2, now.Add(time.Minute))
		if got := kinds(m.Tick(time.Now().Add(2 * time.Second))); got != "open:site-a,site-b offer>site-a offer>site-b" {
			t.Fatalf("offers: %s", got)
		}
		if m.tasks[id].Sites["site-c"].State != "absent" {
			t.Fatal(m.tasks[id].Sites["site-c"])
		}
	})
}

type errString string

func (e errString) Error() string { return string(e) }
