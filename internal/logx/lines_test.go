package logx

import (
	"bytes"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"
)

func TestTemplatesLine(t *testing.T) {
	tm := Templates{
		"m: plain":   "nothing to fill",
		"m: fill":    "batch {batch}: {who} voted on {n} queries ({s:%.2f} s), ε = {eps}, δ = {delta}, {d}, {err}",
		"m: missing": "{absent} and {quoted:%q}",
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 6e6, time.UTC)
	rec := func(msg string, args ...any) slog.Record {
		r := slog.NewRecord(at, slog.LevelInfo, msg, 0)
		r.Add(args...)
		return r
	}
	for _, c := range []struct {
		r    slog.Record
		want string
		ok   bool
	}{
		{rec("m: plain"), "nothing to fill", true},
		{rec("m: fill", "batch", uint64(3), "who", "teacher01", "n", 5, "s", 1.5, "eps", 1e-5, "delta", 0.25, "d", 1500*time.Millisecond, Err(errors.New("boom"))),
			"batch 3: teacher01 voted on 5 queries (1.50 s), ε = 1e-05, δ = 0.25, 1.5s, boom", true},
		{rec("m: missing", "quoted", "vote"), `{absent} and "vote"`, true},
		{rec("m: unknown", "x", 1), "", false},
	} {
		got, ok := tm.Line(c.r)
		if got != c.want || ok != c.ok {
			t.Errorf("Line(%q) = %q, %v; want %q, %v", c.r.Message, got, ok, c.want, c.ok)
		}
	}
}

func TestLineHandler(t *testing.T) {
	tm := Templates{"m: hello": "hello {who} from {site}"}
	var b bytes.Buffer
	l := slog.New(LineHandler(&b, "site-1: ", tm.Line)).With("site", "s1")
	l.Info("m: hello", "who", "bob")
	l.Warn("m: hello", "who", "eve")
	l.Debug("m: hello", "who", "debug") // below Info: dropped
	l.Info("m: diagnostic", "who", "x") // no template: dropped
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	want := []string{"site-1: hello bob from s1", "site-1: hello eve from s1"}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), b.String())
	}
	for i, line := range lines {
		// "15:04:05.000 " then the prefixed line.
		if len(line) < 13 || line[2] != ':' || line[8] != '.' || line[13:] != want[i] {
			t.Errorf("line %d = %q, want a timestamp and %q", i, line, want[i])
		}
	}
}

// TestPrintf: Printf writes exactly the line the CLI's lineLogger wrote
// before it (fmt.Fprintf(w, "%s %s%s\n", time.Now().Format("15:04:05.000"),
// prefix, fmt.Sprintf(format, args...))), one line per call, the text
// verbatim (a %, braces and a template-looking key included), and its
// clock time taken at the call.
func TestPrintf(t *testing.T) {
	var b bytes.Buffer
	logf := Printf(&b, "teacher01: ")
	before := time.Now()
	logf("model %s (%d classes); {eps} 100%%", "m.json", 3)
	logf("%s", "second line")
	after := time.Now()
	got := b.String()
	want := []string{"teacher01: model m.json (3 classes); {eps} 100%", "teacher01: second line"}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if !strings.HasSuffix(got, "\n") || len(lines) != len(want) {
		t.Fatalf("wrote %q, want %d newline-terminated lines", got, len(want))
	}
	for i, line := range lines {
		stamp, text, _ := strings.Cut(line, " ")
		if text != want[i] {
			t.Errorf("line %d: text %q, want %q", i, text, want[i])
		}
		// time.Now().Format("15:04:05.000") taken between the calls
		// (unless the clock passed midnight meanwhile).
		lo, hi := before.Format("15:04:05.000"), after.Format("15:04:05.000")
		if len(stamp) != 12 || stamp[2] != ':' || stamp[5] != ':' || stamp[8] != '.' || (lo <= hi && (stamp < lo || stamp > hi)) {
			t.Errorf("line %d: stamp %q, want a 15:04:05.000 time in [%s, %s]", i, stamp, lo, hi)
		}
	}
}

func TestLineFunc(t *testing.T) {
	tm := Templates{"m: hello": "hello {who}"}
	var got []string
	l := slog.New(LineFunc(tm.Line, func(s string) { got = append(got, s) }))
	l.Info("m: hello", "who", "bob")
	l.Debug("m: hello", "who", "debug")
	l.Info("m: other")
	if strings.Join(got, "|") != "hello bob" {
		t.Errorf("emitted %q, want [hello bob]", got)
	}
}
