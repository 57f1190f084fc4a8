package main

import (
	"bytes"
	"log/slog"
	"regexp"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/consortium/coordinator"
	"github.com/dplearn/dplearn/consortium/node"
)

// TestConsortiumLogLevel checks the consortium commands' logging: by
// default only the progress lines (timestamped, as before the commands
// took a *slog.Logger), with --log-level also slog's text records at that
// level, and an unknown level refused before anything is loaded.
func TestConsortiumLogLevel(t *testing.T) {
	for _, c := range []struct {
		level       string
		line        func(slog.Record) (string, bool)
		wantLine    bool // the coordinator's record is a progress line
		wantRecords bool
	}{{"off", coordinator.ProgressLine, true, false}, {"debug", coordinator.ProgressLine, true, true}, {"error", node.ProgressLine, false, false}} {
		var b bytes.Buffer
		l := newConsortiumLogger(&b, c.level, c.line)
		l.Info("consortium: task submitted", "task", "t7", "analyst", "alice")
		l.Debug("transport: accepted", "party", "site-a", "bytes", 121)
		out := b.String()
		lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
		progress := regexp.MustCompile(`^\d\d:\d\d:\d\d\.\d\d\d task t7 submitted by alice$`)
		hasLine := false
		for _, l := range lines {
			hasLine = hasLine || progress.MatchString(l)
		}
		if hasLine != c.wantLine {
			t.Errorf("--log-level %s: progress line present %v, want %v:\n%s", c.level, hasLine, c.wantLine, out)
		}
		records := strings.Contains(out, `msg="transport: accepted"`) && strings.Contains(out, `msg="consortium: task submitted" task=t7 analyst=alice`)
		if records != c.wantRecords {
			t.Errorf("--log-level %s: slog records present %v, want %v:\n%s", c.level, records, c.wantRecords, out)
		}
	}
	for _, cmd := range [][]string{
		{"coordinator", "--certs", "nowhere", "--db", "x.db", "--nodes", "a", "--analysts", "b", "--log-level", "loud"},
		{"node", "--coordinator", "127.0.0.1:1", "--certs", "nowhere", "--policy", "p.json", "--ledgers", "l", "--audit", "a.jsonl", "--dataset", "d=x.csv:s.json", "--log-level", "loud"},
	} {
		if _, _, err := runCLIBoth(t, cmd...); err == nil || !strings.Contains(err.Error(), "--log-level") {
			t.Errorf("%s --log-level loud: %v", cmd[0], err)
		}
	}
}
