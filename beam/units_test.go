package dpbeam

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/testing/passert"

	"github.com/dplearn/dplearn/regress"
)

// withUnits returns csv with a column "person" appended: each record's
// person drawn from persons IDs with a fixed generator, so persons have
// varied numbers of rows (about n/persons, Poisson) spread over the table.
func withUnits(csv []byte, persons int) []byte {
	rng := rand.New(rand.NewPCG(7, 7))
	lines := strings.Split(strings.TrimRight(string(csv), "\n"), "\n")
	var b bytes.Buffer
	b.WriteString(lines[0] + ",person\n")
	for _, l := range lines[1:] {
		fmt.Fprintf(&b, "%s,p%d\n", l, rng.IntN(persons))
	}
	return b.Bytes()
}

// TestSeededUnitFitEqualsCLI: with --privacy-unit person
// --max-rows-per-unit K and the same seed (the selection key and the noise
// both come from the seeded generator in both), the pipeline's unit-level
// fit of CPS1988 split into 5 files writes the same model file, byte for
// byte, as `dplearn fit --data` on the whole table: the same K rows of
// every person are kept, the same exact statistics, the same
// N = number of persons, the same calibration and report. Controls: another
// K, and the row-level fit, give different files (the test can fail).
func TestSeededUnitFitEqualsCLI(t *testing.T) {
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to build dplearn")
	}
	d, s, _ := cps(t)
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
	const persons = 6000
	csv := withUnits(d.CSV, persons)
	whole := filepath.Join(tmp, "cps-persons.csv")
	if err := os.WriteFile(whole, csv, 0o600); err != nil {
		t.Fatal(err)
	}
	glob := splitCSV(t, t.TempDir(), csv, 5)
	beamFit := func(t *testing.T, mech string, delta float64, k int, ciShare float64, out string) []byte {
		t.Helper()
		spec := FitSpec{Model: "linear", Mechanism: mech, Epsilon: 0.8, Delta: delta, Lambda: -1,
			LambdaFactor: 1, Seeded: true, Seed: 42, Out: out, CIShare: ciShare}
		o := Options{Inputs: []string{glob}, Schema: s, Unit: &Unit{Column: "person", MaxRows: k, Seeded: true, Seed: 42}}
		p, sc := beam.NewPipelineWithRoot()
		st, units, err := UnitStatistics(sc, o)
		if err != nil {
			t.Fatal(err)
		}
		if err := FitUnits(sc, st, units, o, spec); err != nil {
			t.Fatal(err)
		}
		if _, err := prism.Execute(context.Background(), p); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cliFit := func(t *testing.T, mech string, delta, ciShare float64, extra ...string) []byte {
		t.Helper()
		out := filepath.Join(tmp, mech+"-cli.json")
		args := []string{"fit", "--data", whole, "--schema", schemaPath, "--model", "linear", "--mechanism", mech,
			"--epsilon", "0.8", "--lambda-factor", "1", "--seed", "42", "--ci-share", fmt.Sprint(ciShare), "--out", out}
		if delta > 0 {
			args = append(args, "--delta", "1e-06")
		}
		cmd := exec.Command(cli, append(args, extra...)...)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("dplearn %v: %v\n%s", args, err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, mech := range []struct {
		name  string
		delta float64
		k     int
		ci    float64 // --ci-share: intervals under the unit when > 0
	}{{"gaussian-fm", 1e-6, 3, 0}, {"fm", 0, 2, 0}, {"gaussian-fm", 1e-6, 3, 0.05}} {
		t.Run(fmt.Sprintf("%s/K=%d/ci=%g", mech.name, mech.k, mech.ci), func(t *testing.T) {
			got := beamFit(t, mech.name, mech.delta, mech.k, mech.ci, filepath.Join(tmp, mech.name+"-beam.json"))
			want := cliFit(t, mech.name, mech.delta, mech.ci, "--privacy-unit", "person", "--max-rows-per-unit", fmt.Sprint(mech.k))
			if !bytes.Equal(got, want) {
				t.Fatalf("the pipeline's unit-level model differs from dplearn fit --privacy-unit:\n%s\nvs\n%s", got, want)
			}
			m, err := regress.LoadModel(filepath.Join(tmp, mech.name+"-beam.json"))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(m.Privacy.Neighbouring, "replace-one-unit") || !strings.Contains(m.Privacy.Neighbouring, fmt.Sprintf("K = %d", mech.k)) {
				t.Errorf("neighbouring = %q, want the unit-level relation with K = %d", m.Privacy.Neighbouring, mech.k)
			}
			if m.Training.Rows < persons*9/10 || m.Training.Rows > persons {
				t.Errorf("training rows %d, want the number of persons (≤ %d)", m.Training.Rows, persons)
			}
			// Controls: another K, and the row-level fit, differ.
			if mech.ci > 0 && (m.Inference == nil || len(m.Inference.Rows) == 0 || !strings.Contains(m.Inference.Method, "(K + 1)²/4")) {
				t.Errorf("ci-share %g under a unit: want intervals with the (K + 1)²/4 design-effect bound, got %+v", mech.ci, m.Inference)
			}
			other := beamFit(t, mech.name, mech.delta, mech.k+1, mech.ci, filepath.Join(tmp, mech.name+"-beam-other.json"))
			if bytes.Equal(other, want) {
				t.Errorf("K = %d gives the same model file as K = %d", mech.k+1, mech.k)
			}
			if rowLevel := cliFit(t, mech.name, mech.delta, mech.ci); bytes.Equal(rowLevel, want) {
				t.Error("the row-level fit gives the same model file")
			}
		})
	}
}

// TestUnitRefusals: the pipeline refuses what dplearn fit --privacy-unit
// refuses (a mechanism without a unit-level sensitivity, intervals where
// fit.CheckUnitIntervals refuses them, K < 1) and a statistics file of
// unit-bounded rows, before running.
func TestUnitRefusals(t *testing.T) {
	_, s, whole := cps(t)
	u := &Unit{Column: "person", MaxRows: 2}
	o := Options{Inputs: []string{whole}, Schema: s, Unit: u}
	for _, tc := range []struct {
		name string
		spec FitSpec
		unit *Unit
		skip bool // SkipBadRows
		want string
	}{
		{"nonprivate", FitSpec{Model: "linear", Mechanism: "nonprivate", Lambda: -1, Out: "m.json"}, u, false, "is not differentially private: a privacy unit has nothing to scale"},
		{"intervals-skip-bad-rows", FitSpec{Model: "linear", Mechanism: "fm", Epsilon: 1, Lambda: -1, CIShare: 0.05, Out: "m.json"}, u, true, "--skip-bad-rows) are not derived"},
		{"K=0", FitSpec{Model: "linear", Mechanism: "fm", Epsilon: 1, Lambda: -1, Out: "m.json"}, &Unit{Column: "person"}, false, "K ≥ 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			oo := o
			oo.Unit = tc.unit
			oo.SkipBadRows = tc.skip
			_, sc := beam.NewPipelineWithRoot()
			err := FitUnits(sc, beam.PCollection{}, beam.PCollection{}, oo, tc.spec)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := WriteStatsFile(context.Background(), o, filepath.Join(t.TempDir(), "s.json")); err == nil || !strings.Contains(err.Error(), "does not record the rows-per-unit bound") {
		t.Fatalf("WriteStatsFile with a unit: err = %v", err)
	}
	_, sc := beam.NewPipelineWithRoot()
	if _, err := Statistics(sc, o); err == nil {
		t.Fatal("Statistics with a unit: no error (it would fit at the row level)")
	}
}

// TestRemoteUnitFit: the unit-level pipeline reads through Beam's
// filesystem API (memfs://, standing in for gs://; each file copied to a
// local temporary file) and writes the same seeded model file, byte for
// byte, as from local copies of the same files.
func TestRemoteUnitFit(t *testing.T) {
	ctx := context.Background()
	d, s, _ := cps(t)
	csv := withUnits(d.CSV, 3000)
	local := t.TempDir()
	glob := splitCSV(t, local, csv, 3)
	paths, _ := filepath.Glob(glob)
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		r := "memfs://" + t.Name() + "/" + filepath.Base(p)
		fs, err := filesystem.New(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		w, err := fs.OpenWrite(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(b)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	var models [][]byte
	for _, in := range []string{glob, "memfs://" + t.Name() + "/part-*"} {
		out := filepath.Join(t.TempDir(), "m.json")
		spec := FitSpec{Model: "linear", Mechanism: "gaussian-fm", Epsilon: 1, Delta: 1e-6, Lambda: -1, Seeded: true, Seed: 3, Out: out}
		o := Options{Inputs: []string{in}, Schema: s, Unit: &Unit{Column: "person", MaxRows: 2, Seeded: true, Seed: 3}}
		if _, err := FitFile(ctx, o, spec); err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		models = append(models, b)
	}
	if !bytes.Equal(models[0], models[1]) {
		t.Fatalf("memfs and local unit-level fits differ:\n%s\nvs\n%s", models[1], models[0])
	}
	if !bytes.Contains(models[0], []byte("replace-one-unit")) {
		t.Fatal("no unit-level relation in the model's report")
	}
}

func init() { register.Function1x2(momentsRows) }

// momentsRows returns the row count of encoded statistics.
func momentsRows(b []byte) (int64, error) {
	m, err := decodeMoments(b)
	if err != nil {
		return 0, err
	}
	return m.N(), nil
}

// TestUnseededUnitBound: without a seed (each selecting step draws its key
// from crypto/rand) the pipeline still keeps exactly Σ_u min(n_u, K) rows
// and counts every unit once: the bound and the count do not depend on the
// key.
func TestUnseededUnitBound(t *testing.T) {
	d, s, _ := cps(t)
	csv := withUnits(d.CSV, 4000)
	glob := splitCSV(t, t.TempDir(), csv, 3)
	const k = 3
	perUnit := map[string]int{}
	lines := strings.Split(strings.TrimRight(string(csv), "\n"), "\n")[1:]
	for _, l := range lines {
		perUnit[l[strings.LastIndexByte(l, ',')+1:]]++
	}
	want := int64(0)
	for _, n := range perUnit {
		want += int64(min(n, k))
	}
	p, sc := beam.NewPipelineWithRoot()
	st, units, err := UnitStatistics(sc, Options{Inputs: []string{glob}, Schema: s, Unit: &Unit{Column: "person", MaxRows: k}})
	if err != nil {
		t.Fatal(err)
	}
	rows := beam.ParDo(sc, momentsRows, st)
	passert.Equals(sc, rows, want)
	passert.Equals(sc, units, len(perUnit))
	if _, err := prism.Execute(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	if want >= int64(len(lines)) {
		t.Fatalf("the bound keeps all %d rows: K = %d too large for the test", len(lines), k)
	}
}
