package coordinator_test

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/dplearn/dplearn/consortium/analyst"
	"github.com/dplearn/dplearn/consortium/coordinator"
	"github.com/dplearn/dplearn/consortium/node"
	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/internal/consortiumtest"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/internal/syncbuf"
)

// consortiumPrivate renders every value a site keeps to itself, as the
// strings that would betray it in a log: each feature and target value of
// the site's CSV (as written, six decimals), each entry of its statistics
// (Σx, Σy, Σxxᵀ, Σxy, Σy² over the schema's columns x1, x2, y, recomputed
// here from the file) and the published model's coefficients, each as its
// first 6 significant digits (truncated, so that any rendering with 6 or
// more digits, as slog's and fmt's %v, contains it). Values with fewer
// than 5 significant digits are skipped: they are too short to tell a
// leak from a count.
func consortiumPrivate(t *testing.T, paths map[string]string, coef []float64) map[string]string {
	t.Helper()
	out := map[string]string{}
	add := func(what string, v float64) {
		s := strconv.FormatFloat(math.Abs(v), 'f', -1, 64)
		sig, end := 0, 0
		for i, c := range s {
			if c >= '1' && c <= '9' || c == '0' && sig > 0 {
				sig++
				end = i + 1
			}
			if sig == 6 {
				break
			}
		}
		if sig >= 5 {
			out[s[:end]] = what
		}
	}
	for site, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		recs, err := csv.NewReader(bytes.NewReader(b)).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		cols := map[string]int{}
		for i, h := range recs[0] {
			cols[h] = i
		}
		var sx [3]float64
		var sxx [9]float64
		for r, rec := range recs[1:] {
			var v [3]float64
			for j, c := range []string{"x1", "x2", "y"} {
				if v[j], err = strconv.ParseFloat(rec[cols[c]], 64); err != nil {
					t.Fatal(err)
				}
				add(fmt.Sprintf("%s row %d %s", site, r, c), v[j])
				sx[j] += v[j]
			}
			for a := range 3 {
				for c := range 3 {
					sxx[3*a+c] += v[a] * v[c]
				}
			}
		}
		for j, v := range sx {
			add(fmt.Sprintf("%s Σ column %d", site, j), v)
			add(fmt.Sprintf("%s mean of column %d", site, j), v/float64(len(recs)-1))
		}
		for j, v := range sxx {
			add(fmt.Sprintf("%s Σ products [%d]", site, j), v)
		}
	}
	for j, v := range coef {
		add(fmt.Sprintf("coefficient %d", j), v)
	}
	return out
}

// number is a decimal number as a log renders one.
var number = regexp.MustCompile(`[0-9][0-9.]*`)

// consortiumLeaks returns the private values whose rendering occurs in
// log: every substring of every number in the log is looked up.
func consortiumLeaks(log []byte, private map[string]string) []string {
	seen := map[string]bool{}
	for _, n := range number.FindAll(log, -1) {
		for i := range n {
			for j := i + 1; j <= len(n); j++ {
				seen[string(n[i:j])] = true
			}
		}
	}
	var out []string
	for s, what := range private {
		if seen[s] {
			out = append(out, what+" = "+s)
		}
	}
	slices.Sort(out)
	return out
}

// TestConsortiumLogHasNoPrivateValues runs a coordinator and three nodes
// with every party's records at Debug (slog's JSON, the transport's
// records included) and its progress lines captured, runs a capeFM task
// to the end, and checks that no log holds a site's input values, the
// statistics of its dataset or the model's coefficients; and that the
// records carry the task's ID and the node's name as attributes. The scan
// is shown able to fail by a record that logs one input value.
func TestConsortiumLogHasNoPrivateValues(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dir := t.TempDir()
	var records, lines syncbuf.Buffer
	noTime := func(_ []string, a slog.Attr) slog.Attr { // a timestamp's digits are not a leak
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}
	logger := func(name string) *slog.Logger {
		line := node.ProgressLine
		if name == "coordinator" {
			line = coordinator.ProgressLine
		}
		return slog.New(slog.NewMultiHandler(
			slog.NewJSONHandler(&records, &slog.HandlerOptions{Level: slog.LevelDebug, ReplaceAttr: noTime}),
			logx.LineFunc(line, func(l string) { fmt.Fprintf(&lines, "%s: %s\n", name, l) }))).With("who", name)
	}
	f := &fixture{t: t, dir: dir, pki: filepath.Join(dir, "pki"), nodes: map[string]*node.Node{}, stop: map[string]context.CancelFunc{}, logger: logger}
	sites := []string{"site-a", "site-b", "site-c"}
	consortiumtest.Certs(t, f.pki, append([]string{"coordinator", "alice"}, sites...)...)
	consortiumtest.Write(t, dir, "schema.json", consortiumtest.Schema)
	paths := map[string]string{}
	for i, s := range sites {
		paths[s] = filepath.Join(dir, s+".csv")
		consortiumtest.Data(t, paths[s], 300, uint64(i+11))
	}
	var stopC context.CancelFunc
	f.addr, stopC, _ = startCoordinator(t, ctx, f.pki, filepath.Join(dir, "c.db"), sites, []string{"alice"}, logger("coordinator"))
	defer stopC()
	for _, s := range sites {
		f.startNode(ctx, s, consortiumtest.Policy(100, []string{"x1", "x2", "y"}, 10, map[string][2]float64{"alice": {1, 3}}))
	}
	alice, err := analyst.Dial(ctx, consortiumtest.Party(t, f.pki, "alice"), f.addr, "")
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	res := runToDone(t, ctx, alice, wire.TaskSpec{Sites: map[string]string{"site-a": "cohort", "site-b": "cohort", "site-c": "cohort"},
		Model: "linear", Mechanism: "capefm", Epsilon: 1, Delta: 1e-6, MinSites: 3,
		Schema: json.RawMessage(consortiumtest.Schema), Deadline: time.Now().Add(time.Minute)})

	// Let the nodes log the task's end and their ledger reports.
	time.Sleep(300 * time.Millisecond)
	for _, s := range sites {
		f.stop[s]()
	}
	stopC()
	time.Sleep(100 * time.Millisecond)

	private := consortiumPrivate(t, paths, res.Result.Coef)
	if len(private) < 2000 {
		t.Fatalf("only %d private values to look for", len(private))
	}
	rec, lin := records.Bytes(), lines.Bytes()
	for what, log := range map[string][]byte{"records": rec, "progress lines": lin} {
		if l := consortiumLeaks(log, private); len(l) > 0 {
			t.Errorf("%s hold private values:\n  %s", what, strings.Join(l, "\n  "))
		}
	}
	// The records are structured: the task's and the node's progress
	// carry the task ID and the node's name as attributes.
	for _, want := range []string{
		`"msg":"consortium: task submitted","who":"coordinator","task":"` + res.ID + `","analyst":"alice"`,
		`"msg":"consortium: task running","who":"coordinator","task":"` + res.ID + `"`,
		`"msg":"consortium: task accepted","who":"site-a","node":"site-a","task":"` + res.ID + `","analyst":"alice","mechanism":"capefm","dataset":"cohort"`,
		`"msg":"consortium: task event","who":"site-b","node":"site-b","task":"` + res.ID + `"`,
	} {
		if !bytes.Contains(rec, []byte(want)) {
			t.Errorf("no record %s", want)
		}
	}
	if !bytes.Contains(lin, []byte("site-b: task "+res.ID+" from alice: accepted (capefm on cohort, ε = 1, δ = 1e-06)")) {
		t.Errorf("progress lines lack site-b's acceptance:\n%s", lin)
	}
	t.Logf("%d private values; %d bytes of records, %d of progress lines, none found", len(private), len(rec), len(lin))

	// The scan can fail: one input value logged is found.
	var one []byte
	for s := range private {
		if strings.HasPrefix(s, "0.") {
			one = []byte(`{"msg":"planted","value":` + s + `7}`)
			break
		}
	}
	if len(consortiumLeaks(append(rec, one...), private)) != 1 {
		t.Errorf("a planted value %s was not found", one)
	}
}
