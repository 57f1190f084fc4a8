package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/dplearn/dplearn/consortium/analyst"
	"github.com/dplearn/dplearn/consortium/node"
	"github.com/dplearn/dplearn/consortium/policy"
	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/internal/consortiumtest"
)

// TestConsortiumLoad: a `dplearn coordinator` process, 50 nodes in this
// process (each its own TLS connection over 127.0.0.1) and 200 capeFM
// tasks of 2 sites each submitted at once. No task is lost: every one ends
// done, and the nodes' ledgers hold exactly 2 × 200 charges. The
// coordinator's CPU time and peak memory (getrusage of the child) are
// logged, against the same coordinator idle with the 50 nodes connected
// (measured first, in the same run). Gated by DPLEARN_LONG_TESTS=1; bounded
// to 10 minutes.
func TestConsortiumLoad(t *testing.T) {
	if os.Getenv("DPLEARN_LONG_TESTS") != "1" {
		t.Skip("set DPLEARN_LONG_TESTS=1: 50 nodes and 200 capeFM tasks take a few minutes")
	}
	const nNodes, nTasks = 50, 200
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	var names []string
	for i := range nNodes {
		names = append(names, fmt.Sprintf("node%02d", i+1))
	}
	consortiumtest.Certs(t, pki, append([]string{"coordinator", "alice"}, names...)...)
	schemaPath := consortiumtest.Write(t, dir, "schema.json", consortiumtest.Schema)
	pol, err := policy.Parse([]byte(consortiumtest.Policy(50, []string{"x1", "x2", "y"}, 1000, map[string][2]float64{"alice": {1, 1000}})))
	if err != nil {
		t.Fatal(err)
	}
	measure := func(listen string, run func(addr string)) (cpu time.Duration, maxRSS int64) {
		p := startCProc(t, ctx, "coordinator", "coordinator", "--listen", listen, "--certs", filepath.Join(pki, "coordinator"),
			"--db", filepath.Join(dir, "c.db"), "--nodes", strings.Join(names, ","), "--analysts", "alice", "--round-timeout", "60s", "--max-running", "16")
		addr := strings.TrimPrefix(p.waitFor(t, `^listening on `, 20*time.Second), "listening on ")
		run(addr)
		p.cmd.Process.Signal(syscall.SIGTERM)
		<-p.done
		ru := p.cmd.ProcessState.SysUsage().(*syscall.Rusage)
		return p.cmd.ProcessState.UserTime() + p.cmd.ProcessState.SystemTime(), ru.Maxrss
	}
	startNodes := func(nctx context.Context, addr string) {
		for i, n := range names {
			ddir := filepath.Join(dir, n)
			os.MkdirAll(ddir, 0o700)
			data := filepath.Join(ddir, "data.csv")
			if _, err := os.Stat(data); err != nil {
				consortiumtest.Data(t, data, 200, uint64(i+1))
			}
			nd, err := node.New(nctx, node.Config{Identity: consortiumtest.Party(t, pki, n), Coordinator: addr,
				Datasets: []node.Dataset{{Name: "cohort", Path: data, Schema: schemaPath}}, Policy: pol,
				LedgerDir: filepath.Join(ddir, "ledgers"), AuditPath: filepath.Join(ddir, "audit.jsonl"), PeerTimeout: 5 * time.Second, MaxBackoff: time.Second})
			if err != nil {
				t.Fatal(err)
			}
			go nd.Run(nctx)
		}
	}
	waitOnline := func(a *analyst.Client) {
		for ctx.Err() == nil {
			bs, err := a.Budgets(ctx)
			if err == nil && len(bs) == nNodes {
				return
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	// Reference: the coordinator idle for 10 s with the 50 nodes connected.
	idleCPU, idleRSS := measure("127.0.0.1:0", func(addr string) {
		nctx, stop := context.WithCancel(ctx)
		defer stop()
		startNodes(nctx, addr)
		a, err := analyst.Dial(ctx, consortiumtest.Party(t, pki, "alice"), addr, "")
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		waitOnline(a)
		time.Sleep(10 * time.Second)
	})
	os.Remove(filepath.Join(dir, "c.db"))
	var elapsed time.Duration
	loadCPU, loadRSS := measure("127.0.0.1:0", func(addr string) {
		nctx, stop := context.WithCancel(ctx)
		defer stop()
		startNodes(nctx, addr)
		a, err := analyst.Dial(ctx, consortiumtest.Party(t, pki, "alice"), addr, "")
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close()
		waitOnline(a)
		start := time.Now()
		var ids []string
		for i := range nTasks {
			s1, s2 := names[i%nNodes], names[(i*7+1)%nNodes]
			if s1 == s2 {
				s2 = names[(i+1)%nNodes]
			}
			tk, err := a.Submit(ctx, wire.TaskSpec{Sites: map[string]string{s1: "cohort", s2: "cohort"}, Model: "linear", Mechanism: "capefm",
				Epsilon: 0.5, Delta: 1e-6, MinSites: 2, Schema: json.RawMessage(consortiumtest.Schema), Deadline: time.Now().Add(9 * time.Minute)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, tk.ID)
		}
		states := map[string]int{}
		for _, id := range ids {
			tk, err := a.Wait(ctx, id)
			if err != nil {
				t.Fatalf("task %s: %v", id, err)
			}
			states[tk.State]++
			if tk.State != "done" {
				t.Errorf("task %s: %s: %s", id, tk.State, tk.Error)
			}
		}
		elapsed = time.Since(start)
		t.Logf("%d tasks: %v in %v", nTasks, states, elapsed)
	})
	charges := 0
	for _, n := range names {
		cs := ledgerCharges(t, filepath.Join(dir, n, "ledgers"), "analyst", "alice")
		charges += len(cs)
	}
	if charges != 2*nTasks {
		t.Fatalf("the nodes' ledgers hold %d charges, want %d (2 per task)", charges, 2*nTasks)
	}
	t.Logf("coordinator, idle 10 s with %d nodes: CPU %v, peak RSS %d MiB", nNodes, idleCPU, idleRSS>>10)
	t.Logf("coordinator, %d nodes and %d tasks (%v): CPU %v (%.1f ms per task), peak RSS %d MiB (%.2f× idle)",
		nNodes, nTasks, elapsed.Round(time.Millisecond), loadCPU, float64(loadCPU.Milliseconds())/nTasks, loadRSS>>10, float64(loadRSS)/float64(idleRSS))
}
