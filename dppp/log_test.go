package dppp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/internal/logx"
)

// publicAttrs are the attribute keys the Driver and Run may log (log.go),
// by kind: counts are integers bounded by public sizes; the others are
// names, reasons, errors, the parameters' hash and timings.
var (
	countAttrs  = []string{"batch", "members", "teachers", "queries", "votes", "contributors", "valid", "threshold"}
	stringAttrs = []string{"teacher", "reason", "err", "params", "what", "unsigned", "asked", "decryptors", "rejected", "type", "status", "timeout"}
	floatAttrs  = []string{"seconds"}
	sizeAttrs   = []string{"bytes"} // an encoding's length: unbounded
)

// logScan checks a JSON slog log of a run for private values and returns
// what it found: an attribute outside publicAttrs, an array or object
// value, a count above bound (a vote count or noise share is about
// coins/2, well above it), a run of 20 or more decimal digits outside the
// parameters' hash (a ciphertext or partial decryption), or any three
// consecutive entries of a teacher's plaintext share (its one-hot votes
// plus noise) or of a decrypted sum, as "a b c" (fmt) or "a,b,c" (JSON).
func logScan(t *testing.T, log []byte, bound int, secrets map[string][]int64) []string {
	t.Helper()
	var bad []string
	long := regexp.MustCompile(`[0-9]{20,}`)
	for line := range strings.Lines(string(log)) {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		for k, v := range r {
			switch {
			case k == slog.LevelKey || k == slog.MessageKey:
			case slices.Contains(countAttrs, k):
				if n, ok := v.(float64); !ok || n != float64(int(n)) || n < 0 || n > float64(bound) {
					bad = append(bad, fmt.Sprintf("%s: count %s = %v (bound %d)", r["msg"], k, v, bound))
				}
			case slices.Contains(stringAttrs, k):
				s, ok := v.(string)
				if !ok {
					bad = append(bad, fmt.Sprintf("%s: %s = %v is not a string", r["msg"], k, v))
				} else if k != "params" && long.MatchString(s) {
					bad = append(bad, fmt.Sprintf("%s: %s holds a long number: %q", r["msg"], k, s))
				}
			case slices.Contains(sizeAttrs, k):
				if n, ok := v.(float64); !ok || n != float64(int(n)) || n < 0 {
					bad = append(bad, fmt.Sprintf("%s: size %s = %v", r["msg"], k, v))
				}
			case slices.Contains(floatAttrs, k):
				if _, ok := v.(float64); !ok {
					bad = append(bad, fmt.Sprintf("%s: %s = %v is not a number", r["msg"], k, v))
				}
			default:
				bad = append(bad, fmt.Sprintf("%s: attribute %s = %v is not a public one", r["msg"], k, v))
			}
		}
	}
	for what, v := range secrets {
		for i := 0; i+3 <= len(v); i++ {
			for _, sep := range []string{" ", ","} {
				w := fmt.Sprintf("%d%s%d%s%d", v[i], sep, v[i+1], sep, v[i+2])
				if bytes.Contains(log, []byte(w)) {
					bad = append(bad, fmt.Sprintf("%s[%d:%d] = %s", what, i, i+3, w))
				}
			}
		}
	}
	slices.Sort(bad)
	return bad
}

// TestRunLogIsStructuredAndPrivate runs DPPP in process on 5 digits
// queries with teacher03 vanishing after its vote (the batch is
// abandoned and voted again by the 9 others), logging JSON at Debug, and
// checks (a) the records carry the attributes a monitor needs (the
// agreement with the parameters' hash, each batch voted and answered
// with its counts, the abandoned batch, the lost teacher by name, each
// query sent at Debug), each record at Info or above rendered by
// ProgressLine as the former progress line; and (b) nothing
// private is in the log (logScan: no teacher's plaintext share, so no
// vote and no noise share; no decrypted sum; no ciphertext). The scan is
// shown able to fail on records that log a share.
func TestRunLogIsStructuredAndPrivate(t *testing.T) {
	skipCryptoUnderRace(t)
	f := getFixture(t)
	d := f.deploy(t, f.config(Binomial), nil)
	rows := f.Rows[:5]
	var buf bytes.Buffer
	noTime := func(_ []string, a slog.Attr) slog.Attr { // a timestamp's digits are not a leak
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	h := slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: noTime})
	var lines bytes.Buffer
	logger := slog.New(slog.NewMultiHandler(h, logx.LineHandler(&lines, "", ProgressLine)))
	res, err := Run(context.Background(), d.p, f.TPK, d.teachers, rows, RunOptions{Logger: logger,
		Faults: Faults{KillAfterVote: map[string]bool{"teacher03": true}}})
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	d.checkReference(t, res)
	log := buf.Bytes()
	t.Logf("%d bytes of log; progress lines:\n%s", len(log), lines.String())

	// (a) The records a monitor needs, with their attributes.
	type rec = map[string]any
	var recs []rec
	for line := range strings.Lines(string(log)) {
		var r rec
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	find := func(msg string, want rec) rec {
		t.Helper()
		for _, r := range recs {
			if r["msg"] != msg {
				continue
			}
			ok := true
			for k, v := range want {
				ok = ok && fmt.Sprint(r[k]) == fmt.Sprint(v)
			}
			if ok {
				return r
			}
		}
		t.Errorf("no record %q with %v", msg, want)
		return nil
	}
	n := d.p.N()
	find(msgAgreed, rec{"level": "INFO", "members": n, "teachers": n, "params": fmt.Sprintf("%x", d.p.Hash())})
	find(msgVoted, rec{"level": "INFO", "batch": 1, "queries": len(rows), "votes": n, "teachers": n})
	find(msgRevote, rec{"level": "WARN", "queries": len(rows)})
	find(msgTeacherLost, rec{"level": "WARN", "teacher": "teacher03"})
	br := res.Batches[0]
	find(msgAnswered, rec{"level": "INFO", "batch": br.Batch, "contributors": len(br.Contributors)})
	for _, r := range recs {
		if msg, _ := r["msg"].(string); !strings.HasPrefix(msg, "dppp: ") {
			t.Errorf("record %v: message without the package prefix", r)
		}
	}
	// Every record at Info or above is a progress line, rendered from its
	// attributes alone; Debug records count the messages and their sizes.
	info, sent := 0, 0
	for _, r := range recs {
		if r["level"] != "DEBUG" {
			info++
		} else if r["msg"] == msgSent && r["type"] == "query" {
			sent++
		}
	}
	if got := strings.Count(lines.String(), "\n"); got != info {
		t.Errorf("%d progress lines for %d records at Info or above", got, info)
	}
	if want := 2*n - 1; sent != want { // batch 1 to all, batch 2 to all but the lost teacher03
		t.Errorf("%d Debug records of a query sent, want %d", sent, want)
	}
	for _, want := range []string{
		fmt.Sprintf("%d of %d teachers agreed to parameters %x…", n, n, d.p.Hash()),
		fmt.Sprintf("batch 1: %d queries, %d of %d teachers voted (", len(rows), n, n),
		"teacher teacher03 lost",
		fmt.Sprintf("voting the %d queries again in a new batch (new noise, charged again)", len(rows)),
		fmt.Sprintf("batch %d: answered: %d contributors, decrypted by [", br.Batch, len(br.Contributors)),
	} {
		if !strings.Contains(lines.String(), want) {
			t.Errorf("progress lines lack %q", want)
		}
	}
	if strings.Contains(lines.String(), "{") {
		t.Errorf("a template placeholder was left unfilled:\n%s", lines.String())
	}

	// (b) Nothing private.
	secrets := map[string][]int64{}
	d.mu.Lock()
	for batch, byName := range d.shares {
		for name, v := range byName {
			secrets[fmt.Sprintf("batch %d share of %s", batch, name)] = v
		}
	}
	d.mu.Unlock()
	for _, b := range res.Batches {
		secrets[fmt.Sprintf("batch %d decrypted sum", b.Batch)] = b.Raw
	}
	if len(secrets) < n {
		t.Fatalf("only %d secret vectors recorded", len(secrets))
	}
	// Noise shares are Binomial(coins, ½): about coins/2, far above the
	// public counts, so that a share logged as a count exceeds the bound.
	bound := max(n, len(rows), int(d.p.Threshold), int(br.Batch))
	if c := d.p.Coins / 2; c <= int64(bound) {
		t.Fatalf("coins/2 = %d not above the count bound %d: the bound check could not catch a share", c, bound)
	}
	if leaks := logScan(t, log, bound, secrets); len(leaks) > 0 {
		t.Errorf("the log holds private values:\n%s\n%s", strings.Join(leaks, "\n"), log)
	}

	// The scan can fail: records logging a share (as a count, as a list,
	// as the fmt rendering of the vector) are caught.
	var share []int64
	for _, v := range d.shares[br.Batch] {
		share = v
		break
	}
	var bad bytes.Buffer
	leak := slog.New(slog.NewJSONHandler(&bad, &slog.HandlerOptions{ReplaceAttr: noTime}))
	leak.Info(msgVoted, "batch", 1, "votes", share[0])
	leak.Info(msgVoted, "batch", 1, "shares", share[:3])
	leak.Info(msgRefused, "batch", 1, "reason", fmt.Sprint(share))
	if got := logScan(t, bad.Bytes(), bound, secrets); len(got) < 3 {
		t.Errorf("the scan found %d leaks in 3 leaking records: %v\n%s", len(got), got, bad.String())
	}
}
