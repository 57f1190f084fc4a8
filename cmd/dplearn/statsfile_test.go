package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/statsfile"
)

// writeStats writes the statistics file of data under schemaPath, as
// dplearn-beam stats would (same package, same bytes).
func writeStats(t *testing.T, dir, data, schemaPath string, skip bool) string {
	t.Helper()
	s, err := schema.Load(schemaPath)
	if err != nil {
		t.Fatal(err)
	}
	m, _, err := dataset.Moments(context.Background(), data, s, dataset.Options{SkipBadRows: skip})
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "stats.json")
	if err := statsfile.Write(p, s, statsfile.Stats{Moments: m, SkipBadRows: skip}); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestFitStatsEqualsData: `fit --stats` on the table's statistics file
// writes the same model file, byte for byte, as `fit --data` with the same
// seed, for each statistics-only mechanism.
func TestFitStatsEqualsData(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 3000)
	sch := writeFile(t, dir, "s.json", wageSchema)
	stats := writeStats(t, dir, data, sch, false)
	// objpert's squared loss (--huber -1) fits from the statistics; its
	// default, the pseudo-Huber loss, reads the rows (TestFitStatsRefusals).
	for _, mech := range []string{"gaussian-fm", "fm", "relaxed-fm", "nonprivate", "objpert"} {
		args := []string{"fit", "--schema", sch, "--model", "linear", "--mechanism", mech, "--seed", "9"}
		switch mech { // flags a mechanism does not read are refused
		case "fm":
			args = append(args, "--epsilon", "1")
		case "gaussian-fm", "relaxed-fm":
			args = append(args, "--epsilon", "1", "--delta", "1e-6")
		case "objpert":
			args = append(args, "--epsilon", "1", "--delta", "1e-6", "--huber", "-1")
		}
		var outs []string
		for _, in := range [][]string{{"--data", data}, {"--stats", stats}} {
			out := filepath.Join(dir, mech+in[0]+".json")
			if _, err := runCLI(t, append(append(args, in...), "--out", out)...); err != nil {
				t.Fatalf("%s %s: %v", mech, in[0], err)
			}
			outs = append(outs, readFile(t, out))
		}
		if outs[0] != outs[1] {
			t.Errorf("%s: the model from --stats differs from the model from --data:\n%s\nvs\n%s", mech, outs[1], outs[0])
		}
	}
}

func TestFitStatsRefusals(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 500)
	sch := writeFile(t, dir, "s.json", wageSchema)
	stats := writeStats(t, dir, data, sch, false)
	other := writeFile(t, dir, "other.json", strings.Replace(wageSchema, "[0, 20]", "[0, 25]", 1))
	readable := filepath.Join(dir, "readable.json")
	b, err := os.ReadFile(stats)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(readable, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(readable, 0o644); err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(dir, "corrupt.json")
	if err := os.WriteFile(corrupt, []byte(strings.Replace(string(b), `"moments": "`, `"moments": "AAAA`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	base := []string{"fit", "--model", "linear", "--mechanism", "gaussian-fm", "--epsilon", "1", "--delta", "1e-6", "--out", filepath.Join(dir, "m.json")}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"both", []string{"--stats", stats, "--data", data, "--schema", sch}, "--data and --stats"},
		{"readable", []string{"--stats", readable, "--schema", sch}, "readable by other users"},
		{"schema", []string{"--stats", stats, "--schema", other}, "different schema"},
		{"corrupt", []string{"--stats", corrupt, "--schema", sch}, "corrupt"},
		{"rows mechanism", []string{"--stats", stats, "--schema", sch, "--model", "robust", "--mechanism", "irls"}, "needs the rows"},
		{"objpert's Huber loss", []string{"--stats", stats, "--schema", sch, "--mechanism", "objpert"}, "--huber -1 fits the squared loss from the statistics"},
		{"missing", []string{"--stats", filepath.Join(dir, "nope.json"), "--schema", sch}, "no such file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCLI(t, append(slicesClone(base), tc.args...)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// TestSkipBadRowsStatsCaveat: a statistics file computed with
// --skip-bad-rows carries the caveat into the fit's report, and a capeFM
// site refuses it (it announces N as public).
func TestSkipBadRowsStatsCaveat(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 500)
	sch := writeFile(t, dir, "s.json", wageSchema)
	stats := writeStats(t, dir, data, sch, true)
	out := filepath.Join(dir, "m.json")
	if _, err := runCLI(t, "fit", "--stats", stats, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm",
		"--epsilon", "1", "--delta", "1e-6", "--out", out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(readFile(t, out), "fitted with --skip-bad-rows") {
		t.Error("the report lacks the --skip-bad-rows caveat")
	}
	_, err := runCLI(t, "cape", "join", "--insecure", "--name", "site-1", "--server", "127.0.0.1:1", "--stats", stats,
		"--schema", sch, "--model", "linear", "--epsilon", "1", "--delta", "1e-5")
	if err == nil || !strings.Contains(err.Error(), "computed with --skip-bad-rows") {
		t.Fatalf("cape join err = %v", err)
	}
}

// TestCapeJoinStats: one site of a three-site capeFM fit joins with its
// statistics file instead of its table; the fit publishes a model and the
// site announces the same N as its table has.
func TestCapeJoinStats(t *testing.T) {
	ctx := capeCtx(t)
	n := newCapeNet(t, "cps1988", 3)
	stats := writeStats(t, n.dir, n.parts[0], n.schema, false)
	srv, addr := n.serve(ctx)
	var sites []*proc
	for i := range n.sites {
		in := []string{"--data", n.parts[i]}
		if i == 0 {
			in = []string{"--stats", stats}
		}
		args := append([]string{"cape", "join", "--server", addr, "--certs", filepath.Join(n.pki, n.sites[i]),
			"--schema", n.schema, "--model", n.model, "--epsilon", "1", "--delta", "1e-5", "--idle-timeout", "30s", "--format", "json"}, in...)
		sites = append(sites, n.start(ctx, n.sites[i], args...))
	}
	if err := srv.wait(t, 45*time.Second); err != nil {
		t.Fatalf("serve: %v\n%s", err, srv.stderr())
	}
	n.checkModel(srv, 3)
	for i, s := range sites {
		if err := s.wait(t, 15*time.Second); err != nil {
			t.Errorf("%s: %v\n%s", n.sites[i], err, s.stderr())
		}
	}
	ev := sites[0].event("loaded", "")
	want := sites[1].event("loaded", "")
	if ev == nil || want == nil {
		t.Fatalf("no loaded events:\n%s", sites[0].stderr())
	}
	s, _ := schema.Load(n.schema)
	m, _, err := dataset.Moments(ctx, n.parts[0], s, dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := ev["n"]; got != float64(m.N()) {
		t.Errorf("site-1 announced N = %v, its table has %d rows", got, m.N())
	}
}
