package main

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/internal/consortiumtest"
)

// TestConsortiumDPPPProcesses runs a DPPP deployment as a consortium task
// with real processes on 127.0.0.1: `dplearn coordinator --deployment`,
// four `dplearn node --model` teachers (threshold 3, 2048-bit test keys)
// and `dplearn task submit --kind dppp --wait` as the analyst. The task
// ends done with one label (a class name) per query row, and every
// teacher's ledgers for the analyst and the deployment hold exactly one
// entry, the run's PLD total RunCharge(5) (recomputed here from the
// deployment's dppp.Params, below the 5·2 = 10 of basic composition), as
// `dplearn dppp teach --ledger` charges.
func TestConsortiumDPPPProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: six processes and 2048-bit threshold decryption")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	pki := filepath.Join(dir, "pki")
	teachers := []string{"teacher1", "teacher2", "teacher3", "teacher4"}
	consortiumtest.Certs(t, pki, append([]string{"coordinator", "alice"}, teachers...)...)
	fx := consortiumtest.DPPPModels(t, dir, 4, 5)
	tpk, pub, shares := consortiumtest.DPPPKeys(t, dir, 4, 3)
	deploy := consortiumtest.Write(t, dir, "deployment.json", `{"teachers": ["teacher1", "teacher2", "teacher3", "teacher4"], "threshold": 3,
 "epsilon": 2, "delta": 1e-5, "budget_epsilon": 50, "budget_delta": 1e-3}`)
	pol := consortiumtest.Write(t, dir, "policy.json", consortiumtest.DPPPPolicy(map[string][2]float64{"alice": {2, 20}}))
	coord := startCProc(t, ctx, "coordinator", "coordinator", "--listen", "127.0.0.1:0", "--certs", filepath.Join(pki, "coordinator"),
		"--db", filepath.Join(dir, "c.db"), "--nodes", strings.Join(teachers, ","), "--analysts", "alice", "--round-timeout", "10s",
		"--join-wait", "500ms", "--deployment", "signs="+deploy+":"+pub)
	addr := strings.TrimPrefix(coord.waitFor(t, `^listening on `, 20*time.Second), "listening on ")
	for i, name := range teachers {
		os.MkdirAll(filepath.Join(dir, name), 0o700)
		p := startCProc(t, ctx, name, "node", "--coordinator", addr, "--certs", filepath.Join(pki, name), "--policy", pol,
			"--model", "signs="+fx.Models[i]+":"+shares[i]+":"+deploy, "--ledgers", filepath.Join(dir, name, "ledgers"),
			"--audit", filepath.Join(dir, name, "audit.jsonl"), "--peer-timeout", "2s", "--max-backoff", "500ms")
		p.waitFor(t, "registered 1 dataset", 20*time.Second)
	}
	out, err := runDplearn(t, ctx, "task", "submit", "--kind", "dppp", "--deployment", "signs", "--schema", fx.WriteSpec(t, dir),
		"--queries", fx.WriteQueries(t, dir), "--deadline", "1m", "--wait", "--coordinator", addr, "--certs", filepath.Join(pki, "alice"))
	if err != nil {
		t.Fatalf("submit: %v\n%s\n%s", err, out, coord.log())
	}
	t.Logf("what alice sees:\n%s", out)
	if !strings.Contains(out, "(alice): done") {
		t.Fatalf("the task did not end done:\n%s\n%s", out, coord.log())
	}
	labels := regexp.MustCompile(`(?m)^  (\d+),(neg|pos)$`).FindAllStringSubmatch(out, -1)
	if len(labels) != len(fx.Queries) {
		t.Fatalf("%d label lines for %d queries:\n%s", len(labels), len(fx.Queries), out)
	}
	settings, err := wire.LoadDeployment(deploy)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := settings.Config(2, 2, [32]byte{})
	if err != nil {
		t.Fatal(err)
	}
	dp, err := dppp.Calibrate(cfg, tpk)
	if err != nil {
		t.Fatal(err)
	}
	want, err := dp.RunCharge(len(fx.Queries))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range teachers {
		for _, l := range [][2]string{{"analyst", "alice"}, {"dataset", "signs"}} {
			cs := ledgerCharges(t, filepath.Join(dir, name, "ledgers"), l[0], l[1])
			if len(cs) != 1 || cs[0].Epsilon != want.Epsilon || cs[0].Delta != want.Delta {
				t.Fatalf("%s ledger %s %s: entries %+v, want one of the run's PLD total %v", name, l[0], l[1], cs, want)
			}
		}
	}
}
