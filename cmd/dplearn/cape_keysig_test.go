package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dplearn/dplearn/regress"
)

// TestCapeInsecureUnsignedKeys: with --insecure there are no certificates,
// so the sites cannot sign or check their secure-aggregation keys: the fit
// runs (loopback only), every party's warning says the keys are not signed,
// and so does the model's report.
func TestCapeInsecureUnsignedKeys(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three processes")
	}
	ctx := capeCtx(t)
	n := newCapeNet(t, "cps1988", 2)
	srv := n.start(ctx, "aggregator", "cape", "serve", "--listen", "127.0.0.1:0", "--insecure",
		"--sites", strings.Join(n.sites, ","), "--schema", n.schema, "--model", n.model, "--epsilon", "1", "--delta", "1e-5",
		"--round-timeout", "10s", "--join-timeout", "10s", "--out", filepath.Join(n.dir, "model.json"), "--format", "json")
	var addr string
	select {
	case addr = <-srv.addr:
	case <-srv.done:
		t.Fatalf("serve exited: %v\n%s", srv.err, srv.stderr())
	case <-time.After(20 * time.Second):
		t.Fatalf("serve did not listen; stderr:\n%s", srv.stderr())
	}
	sites := make([]*proc, len(n.sites))
	for i, name := range n.sites {
		sites[i] = n.start(ctx, name, "cape", "join", "--server", addr, "--insecure", "--name", name, "--data", n.parts[i],
			"--schema", n.schema, "--model", n.model, "--epsilon", "1", "--delta", "1e-5", "--idle-timeout", "30s", "--workers", "1")
	}
	if err := srv.wait(t, 45*time.Second); err != nil {
		t.Fatalf("serve: %v\n%s", err, srv.stderr())
	}
	for _, s := range sites {
		if err := s.wait(t, 15*time.Second); err != nil {
			t.Errorf("%s: %v\n%s", s.name, err, s.stderr())
		}
		if !strings.Contains(s.stderr(), "SECURE-AGGREGATION KEYS ARE NOT SIGNED OR CHECKED") {
			t.Errorf("%s's warning does not say the keys are unsigned:\n%s", s.name, s.stderr())
		}
	}
	m, err := regress.LoadModel(filepath.Join(n.dir, "model.json"))
	if err != nil {
		t.Fatalf("no model: %v\n%s", err, srv.stderr())
	}
	if !strings.Contains(strings.Join(m.Privacy.Notes, "\n"), "secure-aggregation keys were neither signed nor checked") {
		t.Errorf("the report does not say the keys were unsigned: %q", m.Privacy.Notes)
	}
}

// TestCapeKeySignedWithAnotherCertificate: site-2 signs its
// secure-aggregation keys with site-3's certificate (as an aggregator or a
// site forging site-2's keys would have to). The aggregator's check refuses
// the advertisement, naming site-2 and the certificate's name; site-2
// counts as missing and the other four fit without it.
func TestCapeKeySignedWithAnotherCertificate(t *testing.T) {
	ctx := capeCtx(t)
	n := newCapeNet(t, "cps1988", 5)
	srv, _, err := n.fit(ctx, []string{"--min-sites", "4"},
		map[int][]string{1: {"--test-fault", "sign-keys-with=" + filepath.Join(n.pki, "site-3")}})
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, srv.stderr())
	}
	n.checkModel(srv, 4)
	found := false
	srv.mu.Lock()
	for _, e := range srv.events {
		msg := fmt.Sprint(e["message"])
		if e["event"] == "refused" && e["site"] == "site-2" && e["reason"] == "key-signature" &&
			strings.Contains(msg, "site site-2's key advertisement fails its signature check") && strings.Contains(msg, `signed by "site-3"'s certificate`) {
			found = true
		}
	}
	srv.mu.Unlock()
	if !found {
		t.Errorf("no refusal naming site-2 and site-3's certificate in the log:\n%s", srv.stderr())
	}
}
