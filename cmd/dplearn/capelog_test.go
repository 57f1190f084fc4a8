package main

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestCapeLogLevel runs `cape simulate` in process with --format json:
// without --log-level stderr holds only the event log (as before the
// commands took a logger); with --log-level debug it also holds slog JSON
// records from capefm (rounds, with attempt and round), capenet (messages,
// with site, type and bytes) and the transport (attachments, with party),
// none holding a digit string of the published coefficients; a bad level
// is refused.
// logTimeField matches a JSON log record's "time" attribute.
var logTimeField = regexp.MustCompile(`"time":"[^"]*",?`)

func TestCapeLogLevel(t *testing.T) {
	n := newCapeNet(t, "smokeban", 1)
	base := []string{"cape", "simulate", "--data", n.parts[0], "--schema", n.schema, "--model", "logistic", "--epsilon", "1", "--delta", "1e-5",
		"--sites", "3", "--format", "json", "--round-timeout", "10s", "--seed", "5"}
	type split struct {
		events, records []map[string]any
		recordLines     []string
		coef            []float64
	}
	run := func(t *testing.T, extra ...string) split {
		t.Helper()
		stdout, stderr, err := runCLIBoth(t, append(base, extra...)...)
		if err != nil {
			t.Fatalf("%v\n%s", err, stderr)
		}
		var s split
		for line := range strings.Lines(stderr) {
			var m map[string]any
			if err := json.Unmarshal([]byte(line), &m); err != nil {
				t.Fatalf("stderr line %q: %v", line, err)
			}
			switch {
			case m["event"] != nil:
				s.events = append(s.events, m)
			case m["msg"] != nil:
				s.records = append(s.records, m)
				s.recordLines = append(s.recordLines, line)
			default:
				t.Errorf("stderr line neither an event nor a record: %q", line)
			}
		}
		var out struct{ Coefficients []float64 }
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("%v\n%s", err, stdout)
		}
		s.coef = out.Coefficients
		return s
	}

	quiet := run(t)
	if len(quiet.events) == 0 || len(quiet.records) != 0 {
		t.Errorf("without --log-level: %d events, %d slog records (want events only)", len(quiet.events), len(quiet.records))
	}

	loud := run(t, "--log-level", "debug")
	if len(loud.events) != len(quiet.events) {
		t.Errorf("--log-level changed the event log: %d events, %d without", len(loud.events), len(quiet.events))
	}
	has := func(msg string, ok func(map[string]any) bool) {
		for _, r := range loud.records {
			if r["msg"] == msg && ok(r) {
				return
			}
		}
		t.Errorf("no record %q with the expected attributes among\n%s", msg, strings.Join(loud.recordLines, ""))
	}
	has("capefm: round closed", func(r map[string]any) bool {
		return r["level"] == "DEBUG" && r["party"] == "aggregator" && r["attempt"] == 1.0 && r["round_name"] == "Release" && r["answered"] == 3.0
	})
	has("capenet: received", func(r map[string]any) bool {
		return r["party"] == "aggregator" && r["site"] == "site-2" && r["type"] == "release" && r["bytes"].(float64) > 0
	})
	has("capenet: send", func(r map[string]any) bool {
		return r["party"] == "site-1" && r["type"] == "hello" && r["attempt"] == 1.0 && r["bytes"].(float64) > 0
	})
	has("transport: party attached", func(r map[string]any) bool { return r["party"] == "site-3" })
	for _, c := range loud.coef {
		s := strconv.FormatFloat(c, 'f', -1, 64)
		s = strings.TrimLeft(s, "-0.")
		if len(s) < 5 {
			continue
		}
		for _, line := range loud.recordLines {
			// The timestamp's nanoseconds are digits too: scan the
			// record without it, or a chance match fails the test
			// (it did: "…956854685Z" holds 54685 of -0.5468561…).
			line = logTimeField.ReplaceAllString(line, "")
			if strings.Contains(line, s[:5]) {
				t.Errorf("coefficient %v in a log record: %s", c, line)
			}
		}
	}

	if _, _, err := runCLIBoth(t, append(base, "--log-level", "loud")...); err == nil || !strings.Contains(err.Error(), "--log-level") {
		t.Errorf("--log-level loud: %v", err)
	}
}
