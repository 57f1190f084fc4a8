package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestDPPPSimulateQueriesPastBudget: 'dppp simulate' with a --queries file
// of 8 rows and a budget calibrated to 5 queries (--budget-queries 5)
// labels the first 5, writes them and says "labelled 5 of 8 requested:
// budget allows 5 more" instead of refusing the file (issue 27).
func TestDPPPSimulateQueriesPastBudget(t *testing.T) {
	f := newDPPPNetFiles(t, 3, 8)
	out := filepath.Join(f.dir, "labels.csv")
	stdout, stderr, err := runDPPP(t, "simulate", "--models", strings.Join(f.models, ","), "--schema", f.spec,
		"--queries", f.queries, "--out", out, "--insecure-test-keys", "--round-timeout", "20s",
		"--budget-epsilon", "10", "--budget-delta", "1e-5", "--budget-queries", "5")
	if err != nil {
		t.Fatalf("%v\n%s\n%s", err, stdout, stderr)
	}
	for _, want := range []string{"labelled 5 queries", "--queries: labelled 5 of 8 requested: budget allows 5 more", "0 of 5 queries remain"} {
		if !strings.Contains(stdout, want) {
			t.Fatalf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	checkLabels(t, out, 5, false)
}

// TestDPPPServeQueriesPartial: the restart of TestDPPPServeLedgerRestart
// (budget (3, 1e-3), per-query (1, 1e-5); after a run of 2 a new run may
// answer 5) with a --queries file of 6: the restarted 'serve --ledger'
// labels the first 5, writes them and says so; a further restart asking
// for 1 query is refused before any teacher is asked (0 remain).
func TestDPPPServeQueriesPartial(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	f := newDPPPNetFiles(t, 3, 2)
	six, one := filepath.Join(f.dir, "six.csv"), filepath.Join(f.dir, "one.csv")
	digitsLines(t, six, 10, 16)
	digitsLines(t, one, 2, 3)
	d := newDPPPProcNet(t, 3, 2, nil, "--epsilon", "1", "--delta", "1e-5", "--budget-epsilon", "3", "--budget-delta", "1e-3")
	ledgerPath := filepath.Join(d.dir, "aggregator-ledger.json")
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	srv, addr := d.serve(ctx, "--schema", f.spec, "--queries", f.queries, "--out", filepath.Join(f.dir, "labels.csv"), "--ledger", ledgerPath)
	d.wait(srv, d.teach(ctx, addr, f.models, nil))
	out := filepath.Join(f.dir, "six-labels.csv")
	srv, addr = d.serve(ctx, "--schema", f.spec, "--queries", six, "--out", out, "--ledger", ledgerPath)
	d.wait(srv, d.teach(ctx, addr, f.models, nil))
	for _, want := range []string{"labelled 5 queries", "--queries: labelled 5 of 6 requested: budget allows 5 more", "in 2 runs; 0 more queries remain in this run"} {
		if !strings.Contains(srv.stdout.String(), want) {
			t.Fatalf("serve's stdout lacks %q:\n%s", want, srv.stdout.String())
		}
	}
	checkLabels(t, out, 5, false)
	_, _, err := runDPPP(t, append(append([]string{"serve", "--listen", "127.0.0.1:0", "--certs", filepath.Join(d.pki, "aggregator"),
		"--public-key", d.pub}, d.common...), "--schema", f.spec, "--ledger", ledgerPath, "--queries", one, "--out", filepath.Join(f.dir, "x.csv"))...)
	if err == nil || !strings.Contains(err.Error(), "cannot pay for 1 queries, 0 remain") {
		t.Fatalf("a restart with nothing left: %v", err)
	}
}
