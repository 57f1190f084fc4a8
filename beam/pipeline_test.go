package dpbeam

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/ptest"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/exampledata"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/statsfile"
	"github.com/dplearn/dplearn/suffstat"
)

func TestMain(m *testing.M) {
	// Prism logs every job at INFO; beam.Init (in MainWithDefault) sets up
	// slog at this level.
	beamlog.LogLevel = "error"
	ptest.MainWithDefault(m, "prism")
}

// splitCSV writes the records of csv into parts files under dir (each with
// the header), gzip-compressing every third, and returns their glob.
func splitCSV(t testing.TB, dir string, csv []byte, parts int) string {
	t.Helper()
	lines := strings.SplitAfter(strings.TrimRight(string(csv), "\n")+"\n", "\n")
	header, recs := lines[0], lines[1:len(lines)-1] // the last is empty
	for p := 0; p < parts; p++ {
		var b bytes.Buffer
		b.WriteString(header)
		for _, r := range recs[p*len(recs)/parts : (p+1)*len(recs)/parts] {
			b.WriteString(r)
		}
		name := filepath.Join(dir, fmt.Sprintf("part-%03d.csv", p))
		data := b.Bytes()
		if p%3 == 1 {
			name += ".gz"
			var z bytes.Buffer
			zw := gzip.NewWriter(&z)
			zw.Write(data)
			zw.Close()
			data = z.Bytes()
		}
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "part-*")
}

// runStats runs the statistics pipeline on Prism, writes the statistics
// file, and returns its contents and the pipeline's result.
func runStats(t testing.TB, o Options) (statsfile.Stats, beam.PipelineResult, error) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "stats.json")
	p, s := beam.NewPipelineWithRoot()
	st, err := Statistics(s, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteStats(s, st, o, out); err != nil {
		t.Fatal(err)
	}
	res, err := prism.Execute(context.Background(), p)
	if err != nil {
		return statsfile.Stats{}, res, err
	}
	fi, err := os.Stat(out)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("statistics file mode %v, want 0600", fi.Mode().Perm())
	}
	got, err := statsfile.Read(out, o.Schema)
	if err != nil {
		t.Fatal(err)
	}
	return got, res, nil
}

// singlePass returns the exact state of dplearn's single-machine pass over
// the given files (a file's own pass, then merged: merging is exact).
func singlePass(t testing.TB, s *schema.Schema, paths ...string) []byte {
	t.Helper()
	var total *suffstat.Moments
	for _, path := range paths {
		m, _, err := dataset.Moments(context.Background(), path, s, dataset.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if total == nil {
			total = m
		} else if err := total.Merge(m); err != nil {
			t.Fatal(err)
		}
	}
	b, err := total.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func sameBits(t testing.TB, got *suffstat.Moments, want []byte) {
	t.Helper()
	b, err := got.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(b, want) {
		var w suffstat.Moments
		_ = w.UnmarshalBinary(want)
		t.Fatalf("pipeline statistics differ from the single pass: N %d vs %d, Σz₀ %v vs %v", got.N(), w.N(), got.Sum(0), w.Sum(0))
	}
}

func cps(t testing.TB) (exampledata.Dataset, *schema.Schema, string) {
	t.Helper()
	d, err := exampledata.Get("cps1988")
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Parse(d.Schema)
	if err != nil {
		t.Fatal(err)
	}
	whole := filepath.Join(t.TempDir(), "cps1988.csv")
	if err := os.WriteFile(whole, d.CSV, 0o600); err != nil {
		t.Fatal(err)
	}
	return d, s, whole
}

// TestCPS1988BitExact: CPS1988 split into 11 files (some gzip), read by
// the pipeline on Prism, gives the same statistics, to the last bit, as
// dplearn's single pass over the original file.
func TestCPS1988BitExact(t *testing.T) {
	d, s, whole := cps(t)
	glob := splitCSV(t, t.TempDir(), d.CSV, 11)
	got, _, err := runStats(t, Options{Inputs: []string{glob}, Schema: s})
	if err != nil {
		t.Fatal(err)
	}
	if got.Moments.N() != 28155 {
		t.Fatalf("N = %d, want 28155", got.Moments.N())
	}
	sameBits(t, got.Moments, singlePass(t, s, whole))
}

// synthetic writes an n × d table (numeric features in [−5, 5] with six
// decimals, a target in [−10, 10]) split across files, and its schema.
func synthetic(t testing.TB, dir string, n, d, files int, seed uint64) (*schema.Schema, []string) {
	t.Helper()
	var feats []string
	var head []string
	for j := 0; j < d-1; j++ {
		feats = append(feats, fmt.Sprintf(`{"name": "x%d", "range": [-5, 5]}`, j))
		head = append(head, fmt.Sprintf("x%d", j))
	}
	head = append(head, "y")
	s, err := schema.Parse([]byte(`{"target": {"name": "y", "range": [-10, 10]}, "features": [` + strings.Join(feats, ",") + `]}`))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(seed, 7))
	var paths []string
	var line []byte
	for f := 0; f < files; f++ {
		name := filepath.Join(dir, fmt.Sprintf("syn-%04d.csv", f))
		if f%4 == 3 {
			name += ".gz"
		}
		fh, err := os.Create(name)
		if err != nil {
			t.Fatal(err)
		}
		var w *bufio.Writer
		var zw *gzip.Writer
		if strings.HasSuffix(name, ".gz") {
			zw = gzip.NewWriter(fh)
			w = bufio.NewWriterSize(zw, 1<<20)
		} else {
			w = bufio.NewWriterSize(fh, 1<<20)
		}
		w.WriteString(strings.Join(head, ",") + "\n")
		for r := f * n / files; r < (f+1)*n/files; r++ {
			line = line[:0]
			y := 0.0
			for j := 0; j < d-1; j++ {
				x := rng.Float64()*10 - 5
				y += x * float64(j%3-1) * 0.3
				line = strconv.AppendFloat(line, x, 'f', 6, 64)
				line = append(line, ',')
			}
			line = strconv.AppendFloat(line, y+rng.NormFloat64(), 'f', 6, 64)
			line = append(line, '\n')
			w.Write(line)
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		if zw != nil {
			zw.Close()
		}
		if err := fh.Close(); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, name)
	}
	return s, paths
}

// TestSyntheticManyFilesBitExact: a synthetic 1M × 20 table (100k rows with
// -short) in 40 files; the pipeline's statistics equal the single pass bit
// for bit.
func TestSyntheticManyFilesBitExact(t *testing.T) {
	n := 1_000_000
	if testing.Short() {
		n = 100_000
	}
	dir := t.TempDir()
	s, paths := synthetic(t, dir, n, 20, 40, 1)
	got, _, err := runStats(t, Options{Inputs: []string{filepath.Join(dir, "syn-*")}, Schema: s})
	if err != nil {
		t.Fatal(err)
	}
	if got.Moments.N() != int64(n) {
		t.Fatalf("N = %d, want %d", got.Moments.N(), n)
	}
	sameBits(t, got.Moments, singlePass(t, s, paths...))
}

// TestMalformedFile: a bad value stops the pipeline with the file, line and
// column, as dplearn fit does; with SkipBadRows the row is skipped, counted
// in the metric, and the statistics equal those of the table without it.
func TestMalformedFile(t *testing.T) {
	d, s, _ := cps(t)
	dir := t.TempDir()
	glob := splitCSV(t, dir, d.CSV, 4)
	bad := filepath.Join(dir, "part-002.csv")
	b, err := os.ReadFile(bad)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(b), "\n")
	fields := strings.Split(lines[16], ",")
	fields[1] = "abc" // education, line 17, field 2
	lines[16] = strings.Join(fields, ",")
	if err := os.WriteFile(bad, []byte(strings.Join(lines, "")), 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err = runStats(t, Options{Inputs: []string{glob}, Schema: s})
	want := bad + `:17:2: column "education": value "abc": not a number`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want it to contain %q", err, want)
	}

	got, res, err := runStats(t, Options{Inputs: []string{glob}, Schema: s, SkipBadRows: true})
	if err != nil {
		t.Fatal(err)
	}
	if !got.SkipBadRows {
		t.Fatal("the statistics file does not record --skip-bad-rows")
	}
	var skipped int64
	for _, c := range res.Metrics().Query(func(r metrics.SingleResult) bool { return r.Name() == SkippedCounter }).Counters() {
		skipped += c.Result()
	}
	if skipped != 1 {
		t.Fatalf("skipped-rows counter = %d, want 1", skipped)
	}
	clean := filepath.Join(t.TempDir(), "clean.csv")
	all := strings.SplitAfter(string(d.CSV), "\n")
	// The bad record is the 16th data record of part 2 of 4.
	recs := all[1:]
	if recs[len(recs)-1] == "" {
		recs = recs[:len(recs)-1]
	}
	drop := 2*len(recs)/4 + 15
	cleaned := all[0] + strings.Join(recs[:drop], "") + strings.Join(recs[drop+1:], "")
	if err := os.WriteFile(clean, []byte(cleaned), 0o600); err != nil {
		t.Fatal(err)
	}
	sameBits(t, got.Moments, singlePass(t, s, clean))
}

// TestNoRows: only empty shards give an error, not an empty statistics file.
func TestNoRows(t *testing.T) {
	_, s, _ := cps(t)
	dir := t.TempDir()
	d, _ := exampledata.Get("cps1988")
	header := strings.SplitAfter(string(d.CSV), "\n")[0]
	for i := 0; i < 3; i++ {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("e%d.csv", i)), []byte(header), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	_, _, err := runStats(t, Options{Inputs: []string{filepath.Join(dir, "*.csv")}, Schema: s})
	if err == nil || !strings.Contains(err.Error(), "no data rows") {
		t.Fatalf("err = %v, want no data rows", err)
	}
}

// TestSeededFitEqualsCLI: the pipeline's seeded fit writes the same model
// file, byte for byte, as `dplearn fit --data` on the original table with
// the same seed, and as `dplearn fit --stats` on the pipeline's statistics
// file.
func TestSeededFitEqualsCLI(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build dplearn")
	}
	d, s, whole := cps(t)
	tmp := t.TempDir()
	cli := filepath.Join(tmp, "dplearn")
	build := exec.Command(goBin, "build", "-o", cli, "./cmd/dplearn")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build dplearn: %v\n%s", err, out)
	}
	schemaPath := filepath.Join(tmp, "cps.json")
	if err := os.WriteFile(schemaPath, d.Schema, 0o600); err != nil {
		t.Fatal(err)
	}
	glob := splitCSV(t, t.TempDir(), d.CSV, 5)
	for _, mech := range []struct {
		name    string
		delta   float64
		ciShare string
	}{{"gaussian-fm", 1e-6, "0"}, {"fm", 0, "0"}, {"gaussian-fm", 1e-6, "0.05"}, {"fm", 0, "0.1"}} {
		t.Run(mech.name+"/ci-share="+mech.ciShare, func(t *testing.T) {
			share, err := strconv.ParseFloat(mech.ciShare, 64)
			if err != nil {
				t.Fatal(err)
			}
			spec := FitSpec{Model: "linear", Mechanism: mech.name, Epsilon: 0.8, Delta: mech.delta, Lambda: -1,
				LambdaFactor: 1, CIShare: share, Seeded: true, Seed: 42, Out: filepath.Join(tmp, mech.name+mech.ciShare+"-beam.json")}
			o := Options{Inputs: []string{glob}, Schema: s}
			p, sc := beam.NewPipelineWithRoot()
			st, err := Statistics(sc, o)
			if err != nil {
				t.Fatal(err)
			}
			if err := Fit(sc, st, o, spec); err != nil {
				t.Fatal(err)
			}
			if _, err := prism.Execute(context.Background(), p); err != nil {
				t.Fatal(err)
			}
			statsPath := filepath.Join(tmp, mech.name+"-stats.json")
			if _, err := WriteStatsFile(context.Background(), o, statsPath); err != nil {
				t.Fatal(err)
			}
			args := []string{"fit", "--schema", schemaPath, "--model", "linear", "--mechanism", mech.name,
				"--epsilon", "0.8", "--lambda-factor", "1", "--seed", "42", "--ci-share", mech.ciShare}
			if mech.delta > 0 {
				args = append(args, "--delta", "1e-06")
			}
			beamModel, err := os.ReadFile(spec.Out)
			if err != nil {
				t.Fatal(err)
			}
			for _, in := range [][]string{{"--data", whole}, {"--stats", statsPath}} {
				out := filepath.Join(tmp, mech.name+"-cli.json")
				cmd := exec.Command(cli, append(append(args, in...), "--out", out)...)
				if b, err := cmd.CombinedOutput(); err != nil {
					t.Fatalf("dplearn %v: %v\n%s", in, err, b)
				}
				want, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				// Both run fit.Run: the whole file agrees, the coefficient
				// table (with its intervals when --ci-share > 0) included.
				if !bytes.Equal(beamModel, want) {
					t.Fatalf("the pipeline's model differs from dplearn fit %s:\n%s\nvs\n%s", in[0], beamModel, want)
				}
			}
		})
	}
}

func TestFitSpecRefusesRowMechanisms(t *testing.T) {
	_, s, _ := cps(t)
	for _, tc := range []struct {
		spec FitSpec
		want string
	}{
		{FitSpec{Model: "robust", Mechanism: "irls", Epsilon: 1, Out: "m.json"}, "needs the rows"},
		{FitSpec{Model: "linear", Mechanism: "objpert", Epsilon: 1, Delta: 1e-6, Out: "m.json"}, "needs the rows"}, // its pseudo-Huber default
		{FitSpec{Model: "logistic", Mechanism: "fm", Epsilon: 1, Out: "m.json"}, "needs a binary target"},
		{FitSpec{Model: "linear", Mechanism: "fm", Epsilon: 0, Out: "m.json"}, "--epsilon"},
		{FitSpec{Model: "linear", Mechanism: "fm", Epsilon: 1}, "--out"},
		{FitSpec{Model: "linear", Mechanism: "nope", Epsilon: 1, Out: "m.json"}, "--mechanism"},
	} {
		if _, _, err := tc.spec.Validate(s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: err = %v, want %q", tc.spec, err, tc.want)
		}
	}
	if _, err := WriteStatsFile(context.Background(), Options{Schema: s}, "x.json"); err == nil || !strings.Contains(err.Error(), "no input files") {
		t.Errorf("no inputs: err = %v", err)
	}
}

// runStatsRead reads a statistics file written by the pipeline and returns
// its exact state.
func runStatsRead(path string, o Options) ([]byte, statsfile.Stats, error) {
	st, err := statsfile.Read(path, o.Schema)
	if err != nil {
		return nil, st, err
	}
	b, err := st.Moments.MarshalBinary()
	return b, st, err
}

func schemaOf(t testing.TB, js string) (*schema.Schema, error) {
	t.Helper()
	s, err := schema.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return s, nil
}

// TestFitModelRefusesDeltaAboveOneOverN: the pipeline's fit applies the
// CLI's rule for δ against N (accounting.CheckDeltaN): δ = 1/N is refused (the
// pipeline used to fit and only warn), δ just below it is accepted.
func TestFitModelRefusesDeltaAboveOneOverN(t *testing.T) {
	_, s, whole := cps(t)
	m, _, err := dataset.Moments(context.Background(), whole, s, dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	n := float64(m.N())
	for _, tc := range []struct {
		delta float64
		ok    bool
	}{{1 / n, false}, {math.Nextafter(1/n, 0), true}} {
		spec := FitSpec{Model: "linear", Mechanism: "gaussian-fm", Epsilon: 1, Delta: tc.delta, Lambda: -1, Seeded: true, Out: "m.json"}
		_, err := FitModel(context.Background(), s, m, spec, false)
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "not below 1/N")) {
			t.Errorf("δ = %v, N = %v: error %v, want ok = %v", tc.delta, n, err, tc.ok)
		}
	}
}
