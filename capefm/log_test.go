package capefm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// logRecord is one JSON line of slog's JSON handler.
type logRecord map[string]any

func parseLog(t *testing.T, b []byte) []logRecord {
	t.Helper()
	var out []logRecord
	for line := range strings.Lines(string(b)) {
		var r logRecord
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, r)
	}
	return out
}

// privateNumbers renders every value a site must keep to itself, as the
// strings that would betray it in a log: each input value, each entry of
// the site's sufficient statistics (Σ x xᵀ, Σ x y, Σ y², recomputed here
// from the rows) and the model's coefficients, as their first 5
// significant digits (truncated: any rendering with 5 or more digits,
// as slog's and fmt's %v are, contains them). Values with fewer than 5
// significant digits (0, ±1, the labels' clipping) are skipped: they occur
// in any log as counts.
func privateNumbers(parts [][]float64, d int, coef []float64) map[string]string {
	out := map[string]string{}
	add := func(what string, v float64) {
		s := strconv.FormatFloat(math.Abs(v), 'f', -1, 64)
		sig := 0 // significant digits kept
		for i, c := range s {
			if c >= '1' && c <= '9' || c == '0' && sig > 0 {
				sig++
			}
			if sig == 5 {
				out[s[:i+1]] = what
				return
			}
		}
	}
	k := d + 1
	for i, rows := range parts {
		xx := make([]float64, d*d)
		xy := make([]float64, d)
		yy := 0.0
		for r := 0; r+k <= len(rows); r += k {
			x, y := rows[r:r+d], rows[r+d]
			for a := range d {
				add(fmt.Sprintf("site-%d row %d value %d", i+1, r/k, a), x[a])
				xy[a] += x[a] * y
				for b := range d {
					xx[a*d+b] += x[a] * x[b]
				}
			}
			add(fmt.Sprintf("site-%d row %d label", i+1, r/k), y)
			yy += y * y
		}
		for j, v := range xx {
			add(fmt.Sprintf("site-%d Σxxᵀ[%d]", i+1, j), v)
		}
		for j, v := range xy {
			add(fmt.Sprintf("site-%d Σxy[%d]", i+1, j), v)
		}
		add(fmt.Sprintf("site-%d Σy²", i+1), yy)
	}
	for j, v := range coef {
		add(fmt.Sprintf("coefficient %d", j), v)
	}
	return out
}

// leaks returns the private values whose rendering occurs in log.
func leaks(log []byte, private map[string]string) []string {
	var out []string
	for s, what := range private {
		if bytes.Contains(log, []byte(s)) {
			out = append(out, what+" = "+s)
		}
	}
	slices.Sort(out)
	return out
}

// TestRunLogIsStructuredAndPrivate runs a capeFM fit in which site-3
// disconnects in round MaskedInput (so that the fit takes two attempts)
// with a JSON slog handler at Debug and checks (a) the records carry the
// attributes a monitor needs (attempt, sites, round, round_name, expected,
// answered, missing, site), and (b) nothing private is in the log: no
// input value, no entry of a site's sufficient statistics, no coefficient
// of the model, and no float-valued attribute besides the public τ. The
// scan is shown able to fail by a record that logs one input value.
func TestRunLogIsStructuredAndPrivate(t *testing.T) {
	f := smallFixture(t, fixtureOptions{seed: 7})
	var buf bytes.Buffer
	noTime := func(_ []string, a slog.Attr) slog.Attr { // a timestamp's digits are not a leak
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	logger := slog.New(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: noTime}))
	res, err := f.run(t, RunOptions{Logger: logger, Drop: map[string]Round{"site-3": RoundMaskedInput}})
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if len(res.Attempts) != 2 {
		t.Fatalf("%d attempts, want 2 (site-3 dropped in round MaskedInput)", len(res.Attempts))
	}
	recs := parseLog(t, buf.Bytes())

	// (a) Structure.
	find := func(msg string, match func(logRecord) bool) logRecord {
		for _, r := range recs {
			if r["msg"] == msg && match(r) {
				return r
			}
		}
		t.Errorf("no record %q with the expected attributes in\n%s", msg, buf.String())
		return nil
	}
	is := func(r logRecord, key string, want any) bool { return fmt.Sprint(r[key]) == fmt.Sprint(want) }
	find("capefm: attempt started", func(r logRecord) bool {
		return r["level"] == "INFO" && is(r, "attempt", 1) && is(r, "sites", []string{"site-1", "site-2", "site-3"}) && r["tau"].(float64) > 0
	})
	find("capefm: site disconnected", func(r logRecord) bool {
		return r["level"] == "WARN" && is(r, "attempt", 1) && is(r, "round", int(RoundMaskedInput)) && is(r, "round_name", "MaskedInput") && is(r, "site", "site-3")
	})
	find("capefm: attempt failed; retrying without the missing sites", func(r logRecord) bool {
		return r["level"] == "WARN" && is(r, "attempt", 1) && is(r, "missing", []string{"site-3"}) && is(r, "noise_fixed", false) && r["err"] != ""
	})
	find("capefm: attempt started", func(r logRecord) bool {
		return is(r, "attempt", 2) && is(r, "sites", []string{"site-1", "site-2"})
	})
	var rounds []int
	for _, r := range recs {
		if r["msg"] == "capefm: round closed" && is(r, "attempt", 2) {
			if r["level"] != "DEBUG" || !is(r, "expected", 2) || !is(r, "answered", 2) || r["missing"] != nil || r["elapsed"] == nil ||
				r["round_name"] != Round(r["round"].(float64)).String() {
				t.Errorf("round record %v: want DEBUG, expected 2, answered 2, missing null, elapsed, round_name of round", r)
			}
			rounds = append(rounds, int(r["round"].(float64)))
		}
	}
	if want := []int{0, 1, 2, 3, 4, 6}; !slices.Equal(rounds, want) {
		t.Errorf("attempt 2 closed rounds %v, want %v", rounds, want)
	}

	// (b) Privacy.
	private := privateNumbers(f.rows, f.template.D, res.Coef)
	if len(private) < 1000 {
		t.Fatalf("only %d private values to look for", len(private))
	}
	if l := leaks(buf.Bytes(), private); len(l) > 0 {
		t.Errorf("the log holds private values: %v", l)
	}
	var nonInteger func(v any) bool
	nonInteger = func(v any) bool {
		switch v := v.(type) {
		case float64:
			return v != math.Trunc(v)
		case []any:
			return slices.ContainsFunc(v, nonInteger)
		case map[string]any:
			for _, w := range v {
				if nonInteger(w) {
					return true
				}
			}
		}
		return false
	}
	for _, r := range recs {
		for k, v := range r {
			if k != "tau" && nonInteger(v) {
				t.Errorf("record %q: non-integer attribute %s = %v (only τ is a public float)", r["msg"], k, v)
			}
		}
	}
	// The scan can fail: a record holding one input value is found.
	var bad bytes.Buffer
	slog.New(slog.NewJSONHandler(&bad, &slog.HandlerOptions{ReplaceAttr: noTime})).Info("capefm: leak", "x", f.rows[1][5])
	if len(leaks(bad.Bytes(), private)) == 0 {
		t.Fatalf("the scan missed an input value %v in %s", f.rows[1][5], bad.String())
	}
}
