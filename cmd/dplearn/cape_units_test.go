package main

import (
	"encoding/json"
	"fmt"
	"math"
	mrand "math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/regress"
)

// TestCapeUnitFlagsRefused: cape simulate refuses --privacy-unit (it
// splits one table by row, putting a person at several sites), cape join
// refuses it with a mechanism that has no unit-level sensitivity, with
// --part and without K, all before touching the network.
func TestCapeUnitFlagsRefused(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 50)
	sp := filepath.Join(dir, "s.json")
	if err := os.WriteFile(sp, []byte(wageSchema), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"--data", data, "--schema", sp, "--model", "linear", "--epsilon", "1", "--delta", "1e-5"}
	join := []string{"cape", "join", "--insecure", "--name", "s1", "--server", "127.0.0.1:1"}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"simulate", append([]string{"cape", "simulate", "--sites", "2", "--privacy-unit", "education", "--max-rows-per-unit", "2"}, common...),
			"--privacy-unit is not available for cape simulate: it splits one table among the sites by row"},
		{"simulate-k-only", append([]string{"cape", "simulate", "--sites", "2", "--max-rows-per-unit", "2"}, common...),
			"--privacy-unit is not available for cape simulate"},
		{"join-objpert", append(append(join, "--mechanism", "objpert-local", "--privacy-unit", "education", "--max-rows-per-unit", "2"), common...),
			"--mechanism objpert-local has no sensitivity derived for a unit of K rows"},
		{"join-part", append(append(join, "--part", "1/2", "--privacy-unit", "education", "--max-rows-per-unit", "2"), common...),
			"--privacy-unit cannot be used with --part"},
		{"join-no-k", append(append(join, "--privacy-unit", "education"), common...),
			"needs --max-rows-per-unit K"},
		{"serve-k-only", []string{"cape", "serve", "--insecure", "--sites", "a,b", "--schema", sp, "--model", "linear", "--epsilon", "1", "--out", filepath.Join(dir, "m.json"), "--max-rows-per-unit", "2"},
			"--max-rows-per-unit needs --privacy-unit COLUMN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCLI(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
}

const panelSchema = `{"target": {"name": "y", "range": [-1, 1]},
 "features": [{"name": "x1", "range": [-1, 1]}, {"name": "x2", "range": [-1, 1]}]}`

// writeSitePanels writes one CSV per site of persons (pid) with 1 to 7 rows
// each, disjoint across sites, and their concatenation; it returns the
// site files, the pooled file and the number of persons.
func writeSitePanels(t *testing.T, dir string, persons []int) ([]string, string, int) {
	t.Helper()
	rng := mrand.New(mrand.NewPCG(3, 30))
	var all strings.Builder
	all.WriteString("pid,x1,x2,y\n")
	var files []string
	id, total := 0, 0
	for s, np := range persons {
		var b strings.Builder
		b.WriteString("pid,x1,x2,y\n")
		for range np {
			id++
			for range 1 + rng.IntN(7) {
				x1, x2 := rng.Float64()*2-1, rng.Float64()*2-1
				y := math.Max(-1, math.Min(1, 0.5*x1-0.3*x2+0.1*rng.NormFloat64()))
				fmt.Fprintf(&b, "p%d,%.4f,%.4f,%.4f\n", id, x1, x2, y)
			}
		}
		total += np
		all.WriteString(strings.TrimPrefix(b.String(), "pid,x1,x2,y\n"))
		p := filepath.Join(dir, fmt.Sprintf("site-%d.csv", s+1))
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, p)
	}
	pooled := filepath.Join(dir, "pooled.csv")
	if err := os.WriteFile(pooled, []byte(all.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return files, pooled, total
}

// TestCapeProcessesUnitFit: an aggregator and three site processes over
// mutual TLS fit a person-level capeFM model (--privacy-unit pid
// --max-rows-per-unit 2), every site bounding its own table with the
// dataset code; the model's report states the unit, K, the person-level
// neighbouring relation and the one-site assumption, counts units (the
// training count is U = Σ U_s, not rows) and prints the sensitivities of
// the central unit-level gaussian-fm fit of the pooled table
// ('dplearn fit --privacy-unit', the same U). A site whose K differs is
// refused by the aggregator naming K.
func TestCapeProcessesUnitFit(t *testing.T) {
	ctx := capeCtx(t)
	dir := t.TempDir()
	persons := []int{120, 150, 90}
	files, pooled, U := writeSitePanels(t, dir, persons)
	n := &capeNet{t: t, dir: dir, pki: filepath.Join(dir, "pki"), schema: filepath.Join(dir, "panel.json"), model: "linear",
		sites: []string{"site-1", "site-2", "site-3"}, parts: files}
	if err := os.WriteFile(n.schema, []byte(panelSchema), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := certs.Create(n.pki, append([]string{"aggregator"}, n.sites...), certs.Options{}); err != nil {
		t.Fatal(err)
	}
	unit := []string{"--privacy-unit", "pid", "--max-rows-per-unit", "2"}
	siteFlags := map[int][]string{}
	for i := range n.sites {
		siteFlags[i] = unit
	}
	// site-3 bounds to K = 3: refused by name, the fit goes on with two.
	siteFlags[2] = []string{"--privacy-unit", "pid", "--max-rows-per-unit", "3"}
	srv, sites, err := n.fit(ctx, append([]string{"--min-sites", "2"}, unit...), siteFlags)
	if err != nil {
		t.Fatalf("serve: %v\n%s", err, srv.stderr())
	}
	if srv.event("announce-refused", "max rows per unit K = 3 differs from the fit's K = 2") == nil {
		t.Errorf("no refusal of site-3's K; log:\n%s", srv.stderr())
	}
	if sites[2].err == nil {
		t.Errorf("site-3 with K = 3 exited 0:\n%s", sites[2].stderr())
	}
	var printed map[string]any
	if err := json.Unmarshal(srv.stdout.Bytes(), &printed); err != nil {
		t.Fatalf("serve's output: %v\n%s", err, srv.stdout.String())
	}
	if printed["units"] != float64(persons[0]+persons[1]) || printed["rows"] != nil || printed["privacy_unit"] != "pid" || printed["max_rows_per_unit"] != float64(2) {
		t.Errorf("serve's JSON: units %v, rows %v, unit %v, K %v", printed["units"], printed["rows"], printed["privacy_unit"], printed["max_rows_per_unit"])
	}
	m, err := regress.LoadModel(filepath.Join(n.dir, "model.json"))
	if err != nil {
		t.Fatalf("no model: %v\n%s", err, srv.stderr())
	}
	U2 := int64(persons[0] + persons[1])
	if m.Training.Rows != U2 {
		t.Errorf("training count %d, want the %d units of site-1 and site-2", m.Training.Rows, U2)
	}
	for _, want := range []string{`privacy unit "pid"`, "at most K = 2 rows per unit kept at each site",
		"neighbouring datasets differ in all rows of one person", fmt.Sprintf("N = U = %d are public", U2),
		"every person has rows at one site only"} {
		if !strings.Contains(m.Privacy.Neighbouring, want) {
			t.Errorf("neighbouring %q lacks %q", m.Privacy.Neighbouring, want)
		}
	}
	// The central unit-level fit of the two sites' persons prints the same
	// sensitivities (both at N = U units).
	var both strings.Builder
	for _, f := range files[:2] {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if both.Len() > 0 {
			s = strings.TrimPrefix(s, "pid,x1,x2,y\n")
		}
		both.WriteString(s)
	}
	two := filepath.Join(dir, "two.csv")
	if err := os.WriteFile(two, []byte(both.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "central.json")
	if _, err := runCLI(t, "fit", "--data", two, "--schema", n.schema, "--model", "linear", "--mechanism", "gaussian-fm",
		"--epsilon", "1", "--delta", "1e-5", "--privacy-unit", "pid", "--max-rows-per-unit", "2", "--seed", "1", "--out", out); err != nil {
		t.Fatal(err)
	}
	c, err := regress.LoadModel(out)
	if err != nil {
		t.Fatal(err)
	}
	if c.Training.Rows != U2 {
		t.Errorf("central fit counts %d units, want %d", c.Training.Rows, U2)
	}
	if len(c.Privacy.Releases) < 2 || len(m.Privacy.Releases) != 2 {
		t.Fatalf("releases: central %d, capeFM %d", len(c.Privacy.Releases), len(m.Privacy.Releases))
	}
	for i := range 2 {
		a, b := m.Privacy.Releases[i].Sensitivity, c.Privacy.Releases[i].Sensitivity
		if math.Abs(a-b) > 1e-12*b {
			t.Errorf("release %d: capeFM sensitivity %v, central unit-level %v", i, a, b)
		}
	}
	_, _ = pooled, U
}
