package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/dpppnet"
)

// TestDPPPSimulateLogLevel: with --log-level debug --log-format json,
// dppp simulate writes the protocol's records as JSON lines, each carrying
// self = the party that logged it, beside the progress lines, which read
// as without the flag; a bad level or format is refused before any work.
func TestDPPPSimulateLogLevel(t *testing.T) {
	for _, c := range []struct{ args []string }{
		{[]string{"--log-level", "loud"}},
		{[]string{"--log-format", "xml"}},
	} {
		_, _, err := runDPPP(t, append([]string{"simulate", "--models", "a,b", "--queries", "q", "--out", "o"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.args[0]) {
			t.Errorf("%v: err = %v, want a refusal naming %s", c.args, err, c.args[0])
		}
	}
	f := newDPPPNetFiles(t, 4, 4)
	out := filepath.Join(f.dir, "labels.csv")
	stdout, stderr, err := runDPPP(t, "simulate", "--models", strings.Join(f.models, ","), "--schema", f.spec,
		"--queries", f.queries, "--out", out, "--insecure-test-keys", "--round-timeout", "20s", "--budget-epsilon", "100",
		"--log-level", "debug", "--log-format", "json")
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr)
	}
	if !strings.Contains(stdout, "labelled 4 queries") {
		t.Fatalf("stdout:\n%s", stdout)
	}
	// self → messages logged.
	seen := map[string]map[string]bool{}
	var progress []string
	for line := range strings.Lines(stderr) {
		if !strings.HasPrefix(line, "{") {
			progress = append(progress, line)
			continue
		}
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		self, _ := r["self"].(string)
		msg, _ := r["msg"].(string)
		if seen[self] == nil {
			seen[self] = map[string]bool{}
		}
		seen[self][msg] = true
	}
	for self, msg := range map[string]string{
		dpppnet.DefaultHubName: "dppp: batch answered",
		"teacher01":            "dpppnet: voted",
		"teacher04":            "dpppnet: accepted the parameters",
	} {
		if !seen[self][msg] {
			t.Errorf("no JSON record %q with self %q; seen %v", msg, self, seen)
		}
	}
	decrypted := false
	for self, msgs := range seen {
		decrypted = decrypted || strings.HasPrefix(self, "teacher") && msgs["dpppnet: partially decrypted"]
	}
	if !decrypted {
		t.Errorf("no teacher logged a partial decryption; seen %v", seen)
	}
	all := strings.Join(progress, "")
	for _, want := range []string{"4 of 4 teachers agreed to parameters ", "batch 1: 4 queries, 4 of 4 teachers voted (",
		"teacher01: batch 1: voted on 4 queries (charged before voting: 4 queries so far)", "teacher02: accepted parameters "} {
		if !strings.Contains(all, want) {
			t.Errorf("progress lines lack %q:\n%s", want, all)
		}
	}
}
