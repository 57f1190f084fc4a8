package node_test

import (
	"context"
	"crypto/sha256"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/dplearn/dplearn/consortium/analyst"
	"github.com/dplearn/dplearn/consortium/node"
	"github.com/dplearn/dplearn/consortium/policy"
	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/dpppnet"
	"github.com/dplearn/dplearn/internal/consortiumtest"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/transport"
)

// TestNodeDPPPForeignRows is an attack by the coordinator, the untrusted
// aggregator of a DPPP query task: it offers alice's signed task (3 rows)
// to two teacher nodes, which accept, and then runs the protocol on 3
// rows of its own. Every teacher refuses to vote, so nothing is labelled
// and nothing is charged to alice's or the deployment's ledgers. Control:
// the same coordinator running a second signed task on its signed rows
// gets 3 labels, charged at each teacher as one entry per ledger of the
// run's PLD total RunCharge(3) (so the refusal is the row check's, not a
// broken run).
func TestNodeDPPPForeignRows(t *testing.T) {
	if testing.Short() {
		t.Skip("2048-bit threshold decryption")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	teachers := []string{"teacher1", "teacher2"}
	consortiumtest.Certs(t, pki, "coordinator", "alice", "teacher1", "teacher2")
	fx := consortiumtest.DPPPModels(t, dir, 2, 6)
	tpk, _, shares := consortiumtest.DPPPKeys(t, dir, 2, 2)
	deploy := consortiumtest.Write(t, dir, "deployment.json", `{"teachers": ["teacher1", "teacher2"], "threshold": 2,
 "colluders": -1, "absent": -1, "epsilon": 2, "delta": 1e-5, "budget_epsilon": 50, "budget_delta": 1e-3}`)
	settings, err := wire.LoadDeployment(deploy)
	if err != nil {
		t.Fatal(err)
	}
	// The coordinator: a bare consortium hub driven by the test.
	srv, err := transport.Listen(ctx, transport.ServerConfig{HubConfig: transport.HubConfig{Session: wire.Session(), Roster: teachers,
		MaxPayload: wire.MaxPayload, AllowRepeats: true, InboxSize: 1024, QueueSize: 256, Resend: 64, Logger: slog.New(slog.DiscardHandler)},
		Address: "127.0.0.1:0", Identity: consortiumtest.Party(t, pki, "coordinator")})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	pol, err := policy.Parse([]byte(consortiumtest.DPPPPolicy(map[string][2]float64{"alice": {2, 20}})))
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range teachers {
		n, err := node.New(ctx, node.Config{Identity: consortiumtest.Party(t, pki, name), Coordinator: srv.Addr().String(),
			Models: []node.Model{{Name: "signs", Path: fx.Models[i], KeyShare: shares[i], Deployment: deploy}},
			Policy: pol, LedgerDir: filepath.Join(dir, name, "ledgers"), AuditPath: filepath.Join(dir, name+"-audit.jsonl"),
			PeerTimeout: 3 * time.Second, MaxBackoff: time.Second, Logger: slog.New(logx.LineFunc(node.ProgressLine, func(l string) { t.Log(name + ": " + l) }))})
		if err != nil {
			t.Fatal(err)
		}
		defer n.Close()
		nctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { n.Run(nctx); close(done) }()
		defer func() { stop(); <-done }()
	}
	var reg wire.Register
	for got := 0; got < 2; {
		env := <-srv.Inbox()
		if env.Type == wire.TypeRegister {
			got++
			if err := wire.Decode(env, &reg); err != nil {
				t.Fatal(err)
			}
		}
	}
	alice := consortiumtest.Party(t, pki, "alice")
	cfg, err := settings.Config(2, 2, sha256.Sum256([]byte(fx.Spec.Fingerprint())))
	if err != nil {
		t.Fatal(err)
	}
	p0, err := dppp.Calibrate(cfg, tpk)
	if err != nil {
		t.Fatal(err)
	}
	// run offers a task signed for signedRows and serves rows.
	run := func(task string, signedRows, rows [][]float64) (*dppp.RunResult, error) {
		sg, err := analyst.Sign(alice, wire.TaskSpec{Kind: wire.KindDPPP, Deployment: "signs", Rows: signedRows, Deadline: time.Now().Add(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		th := wire.NewTaskHub(task, teachers, srv)
		defer th.Close()
		for _, name := range teachers {
			env, _ := wire.Encode(wire.TypeOffer, wire.Offer{Task: task, Analyst: "alice", Dataset: "signs", Signed: sg})
			if err := srv.SendTo(ctx, name, env); err != nil {
				t.Fatal(err)
			}
		}
		for answered := 0; answered < 2; {
			env := <-srv.Inbox()
			var a wire.Answer
			if env.Type == wire.TypeAnswer && wire.Decode(env, &a) == nil && a.Task == task {
				if !a.Accept {
					t.Fatalf("%s refused %s: %s %s", env.Sender, task, a.Rule, a.Reason)
				}
				answered++
			}
		}
		rctx, stop := context.WithCancel(ctx)
		defer stop()
		go func() {
			for {
				select {
				case env := <-srv.Inbox():
					var c wire.Cape
					if env.Type == wire.TypeCape && wire.Decode(env, &c) == nil && c.Task == task {
						th.Deliver(env.Sender, c)
					}
				case ev := <-srv.Events():
					th.Event(ev)
				case <-rctx.Done():
					return
				}
			}
		}()
		p, err := p0.NewSession()
		if err != nil {
			t.Fatal(err)
		}
		return dpppnet.Serve(rctx, th, p, tpk, rows, dpppnet.ServeOptions{RoundTimeout: 3 * time.Second, FinishTimeout: time.Second})
	}
	charges := func(name, kind, ledgerName string) []ledger.Charge {
		l, err := ledger.Open(node.LedgerPath(filepath.Join(dir, name, "ledgers"), kind, ledgerName))
		if err != nil {
			t.Fatal(err)
		}
		st, err := l.State(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return st.Charges
	}

	res, err := run("t1", fx.Queries[:3], fx.Queries[3:])
	if err == nil || (res != nil && len(res.Labels) > 0) {
		t.Fatalf("the coordinator's own rows were labelled: %v, %+v", err, res)
	}
	t.Logf("attack: %v", err)
	for _, name := range teachers {
		if a, d := charges(name, "analyst", "alice"), charges(name, "dataset", "signs"); len(a) != 0 || len(d) != 0 {
			t.Fatalf("%s charged alice %+v and the deployment %+v for rows she did not sign", name, a, d)
		}
	}
	res, err = run("t2", fx.Queries[:3], fx.Queries[:3])
	if err != nil || len(res.Labels) != 3 {
		t.Fatalf("control: %v, %+v", err, res)
	}
	want, err := p0.RunCharge(3)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range teachers {
		for _, cs := range [][]ledger.Charge{charges(name, "analyst", "alice"), charges(name, "dataset", "signs")} {
			if len(cs) != 1 || cs[0].Epsilon != want.Epsilon || cs[0].Delta != want.Delta {
				t.Fatalf("control: %s charged %+v, want one entry of the run's PLD total %v", name, cs, want)
			}
		}
	}
}
