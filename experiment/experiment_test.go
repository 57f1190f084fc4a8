package experiment

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
)

// readRows parses an experiment CSV into records keyed by
// panel|series|metric|x.
func readRows(t *testing.T, path string) (header []string, rows map[string][]string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if len(recs) < 2 {
		t.Fatalf("%s: %d records", path, len(recs))
	}
	rows = map[string][]string{}
	for _, r := range recs[1:] {
		rows[r[0]+"|"+r[3]+"|"+r[4]+"|"+r[2]] = r
	}
	return recs[0], rows
}

func value(t *testing.T, rows map[string][]string, key string) float64 {
	t.Helper()
	r, ok := rows[key]
	if !ok {
		t.Fatalf("no CSV row %q", key)
	}
	v, err := strconv.ParseFloat(r[5], 64)
	if err != nil {
		t.Fatalf("row %q: mean %q: %v", key, r[5], err)
	}
	return v
}

func relErr(a, b float64) float64 { return math.Abs(a-b) / math.Abs(b) }

// Known answers for Figures A1-A2, computed independently of the code under
// test: the seed's as-published τ = Δ/ε·√(2 ln(1.25/δ)) and the Laplace
// standard deviation √2·Δ/ε (grid slack < 0.1%).
func TestNoiseStdKnownValues(t *testing.T) {
	const n, eps, delta = 10000, 0.5, 1e-5
	c := math.Sqrt(2*math.Log(1.25/delta)) / eps // 9.6896…
	tests := []struct {
		series string
		kind   regress.Kind
		j, d   int
		want   float64
		tol    float64
	}{
		{"gaussian-fm (as published)", regress.Linear, 0, 10, c / n, 1e-12},
		{"gaussian-fm (as published)", regress.Linear, 1, 10, 4 * c / n, 1e-12},
		{"gaussian-fm (as published)", regress.Linear, 2, 500, c / n, 1e-12},
		{"gaussian-fm (as published)", regress.Logistic, 2, 20, c / (8 * n), 1e-12},
		{"fm", regress.Linear, 2, 20, math.Sqrt2 * 2 * 21 * 21 / (n * eps), 1e-3},
		{"fm", regress.Logistic, 1, 50, math.Sqrt2 * (50*50/4.0 + 150) / (n * eps), 1e-3},
	}
	if got := c / n; math.Abs(got-9.6896e-4) > 1e-7 {
		t.Fatalf("classic multiplier: %v", got)
	}
	for _, tc := range tests {
		got, ok, err := NoiseStd(tc.series, tc.kind, tc.j, tc.d, n, eps, delta)
		if err != nil || !ok {
			t.Fatalf("%s %s j=%d: ok=%v err=%v", tc.series, tc.kind, tc.j, ok, err)
		}
		if relErr(got, tc.want) > tc.tol {
			t.Errorf("%s %s j=%d D=%d: τ = %v, want %v", tc.series, tc.kind, tc.j, tc.d, got, tc.want)
		}
	}
	if _, ok, _ := NoiseStd("gaussian-fm", regress.Linear, 0, 10, n, eps, delta); ok {
		t.Error("gaussian-fm must not release Λ0")
	}
}

// Our gaussian-fm scales must (a) not depend on D, (b) keep the equal split
// of the whitened budget, τ2/τ1 = Δ2/Δ1, and (c) meet (ε, δ) by the analytic
// Gaussian as one whitened mechanism (joint supremum).
func TestGaussianFMNoiseMeetsBudget(t *testing.T) {
	const n, eps, delta = 10000, 0.5, 1e-5
	for _, kind := range []regress.Kind{regress.Linear, regress.Logistic} {
		t1a, _, _ := NoiseStd("gaussian-fm", kind, 1, 5, n, eps, delta)
		t1, _, _ := NoiseStd("gaussian-fm", kind, 1, 200, n, eps, delta)
		t2, _, _ := NoiseStd("gaussian-fm", kind, 2, 200, n, eps, delta)
		if relErr(t1a, t1) > 1e-3 {
			t.Errorf("%s: τ1 depends on D: %v vs %v", kind, t1a, t1)
		}
		s, _ := regress.SensitivitiesFor(kind, 200, n)
		if relErr(t2/t1, s.Lambda2/s.Lambda1) > 1e-3 {
			t.Errorf("%s: τ2/τ1 = %v, want Δ2/Δ1 = %v", kind, t2/t1, s.Lambda2/s.Lambda1)
		}
		// One whitened mechanism, by the joint supremum (regress/joint.go).
		w, err := regress.JointCalibrationSensitivity(kind, 200, n, regress.TaylorQuadratic, t1, t2)
		if err != nil {
			t.Fatal(err)
		}
		d, err := accounting.AnalyticGaussianDelta(eps, 1, w)
		if err != nil || d > delta {
			t.Errorf("%s: whitened sensitivity %v gives δ = %v (err %v), want ≤ %v", kind, w, d, err, delta)
		}
		if d < delta/2 {
			t.Errorf("%s: calibration wastes budget: δ = %v for target %v", kind, d, delta)
		}
	}
}

func TestRunNoiseExperimentFiles(t *testing.T) {
	dir := t.TempDir()
	res, err := Run(context.Background(), "gfm-noise-vs-dim", Options{Out: dir, Seeded: true, Seed: 7, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || len(res[0].Files) != 4 {
		t.Fatalf("results: %+v", res)
	}
	for _, ext := range []string{".csv", ".png", ".svg", ".md"} {
		st, err := os.Stat(filepath.Join(dir, "gfm-noise-vs-dim"+ext))
		if err != nil || st.Size() == 0 {
			t.Errorf("%s: %v", ext, err)
		}
	}
	header, rows := readRows(t, filepath.Join(dir, "gfm-noise-vs-dim.csv"))
	if strings.Join(header, ",") != strings.Join(CSVHeader, ",") {
		t.Fatalf("header %v", header)
	}
	// The CSV carries the calibration regress uses.
	js, err := regress.GaussianFMJointScales(regress.Linear, 20, NoiseN, regress.TaylorQuadratic, NoiseEpsilon, NoiseDelta, regress.DefaultGaussianFMSplit)
	if err != nil {
		t.Fatal(err)
	}
	if got := value(t, rows, "linear j=2|gaussian-fm|noise_std|20"); relErr(got, js.Tau2) > 1e-7 {
		t.Errorf("CSV τ2 = %v, GaussianFMJointScales = %v", got, js.Tau2)
	}
	if got := value(t, rows, "linear j=1|gaussian-fm|noise_std|20"); relErr(got, js.Tau1) > 1e-7 {
		t.Errorf("CSV τ1 = %v, GaussianFMJointScales = %v", got, js.Tau1)
	}
	if got := value(t, rows, "linear j=2|gaussian-fm (as published)|noise_std|20"); relErr(got, 9.6896e-4) > 1e-4 {
		t.Errorf("as-published τ2 = %v", got)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "gfm-noise-vs-dim.md"))
	if !strings.Contains(string(md), "insecure") || !strings.Contains(string(md), "gfm-noise-vs-dim.png") {
		t.Errorf("summary does not mark insecure randomness or embed the figure:\n%s", md)
	}
	if len(res[0].Claims) == 0 || res[0].Claims[0].Holds != "yes" {
		t.Errorf("claims: %+v", res[0].Claims)
	}

	// --replot reads the CSV back: same rows, same randomness mark, same claims.
	before, _ := os.ReadFile(filepath.Join(dir, "gfm-noise-vs-dim.csv"))
	res2, err := Run(context.Background(), "gfm-noise-vs-dim", Options{Out: dir, Replot: true, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, "gfm-noise-vs-dim.csv"))
	if string(before) != string(after) {
		t.Error("replot changed the CSV")
	}
	if !res2[0].Insecure || fmt.Sprint(res2[0].Claims) != fmt.Sprint(res[0].Claims) {
		t.Errorf("replot: insecure=%v claims %v, want %v", res2[0].Insecure, res2[0].Claims, res[0].Claims)
	}
}

// writeFakeData writes small CSVs with the example files' columns (values
// drawn inside the declared ranges) so the harness runs without
// ../shared/data.
func writeFakeData(t *testing.T, dir string, n int) {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	u := func(lo, hi float64) float64 { return lo + (hi-lo)*rng.Float64() }
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	var b strings.Builder
	b.WriteString(`"wage","education","experience","ethnicity","smsa","region","parttime"` + "\n")
	for i := 0; i < n; i++ {
		ed, ex := math.Round(u(0, 18)), math.Round(u(0, 50))
		w := math.Exp(4.5 + 0.08*ed + 0.02*ex + 0.3*rng.NormFloat64())
		fmt.Fprintf(&b, "%.2f,%g,%g,%q,%q,%q,%q\n", w, ed, ex, pick("cauc", "afam"), pick("yes", "no"),
			pick("northeast", "midwest", "south", "west"), pick("no", "yes"))
	}
	os.WriteFile(filepath.Join(dir, "CPS1988.csv"), []byte(b.String()), 0o644)
	b.Reset()
	b.WriteString("age,sex,bmi,bp,tc,ldl,hdl,tch,ltg,glu,progression\n")
	for i := 0; i < n; i++ {
		bmi := u(18, 40)
		fmt.Fprintf(&b, "%g,%g,%.1f,%.0f,%.0f,%.1f,%.0f,%.1f,%.3f,%.0f,%.0f\n", math.Round(u(20, 80)), float64(1+rng.IntN(2)), bmi,
			u(70, 120), u(120, 300), u(50, 200), u(30, 90), u(2, 8), u(3.5, 6), u(60, 130), 25+10*(bmi-18)+u(0, 80))
	}
	os.WriteFile(filepath.Join(dir, "diabetes.csv"), []byte(b.String()), 0o644)
}

func TestRunUtilityTinyDeterministic(t *testing.T) {
	data := t.TempDir()
	writeFakeData(t, data, 250)
	run := func(workers int) (string, []*Result) {
		out := t.TempDir()
		res, err := Run(context.Background(), "gfm-linear", Options{Out: out, DataDir: data, Runs: 1, Quick: true,
			Seeded: true, Seed: 3, Workers: workers, synthN: 400})
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(out, "gfm-linear.csv"))
		if err != nil {
			t.Fatal(err)
		}
		return string(b), res
	}
	a, res := run(2)
	if !testing.Short() {
		if b, _ := run(1); a != b {
			t.Error("same seed, different worker count: CSVs differ (results depend on scheduling)")
		}
	}
	path := filepath.Join(t.TempDir(), "x.csv")
	os.WriteFile(path, []byte(a), 0o644)
	_, rows := readRows(t, path)
	// Every available mechanism has an MSE at the default ε on every dataset.
	for _, ds := range []string{"cps1988", "diabetes", "synth-linear"} {
		for _, m := range utilMechs {
			if !available(m) {
				continue
			}
			found := false
			for k := range rows {
				if strings.HasPrefix(k, ds+" vs N|"+m+"|mse|") {
					found = true
				}
			}
			if !found {
				t.Errorf("%s: no mse rows for %s", ds, m)
			}
		}
	}
	// noisygd's overall ε at the seed's setting: T = 1000, τ for ε = 0.5.
	g, err := accounting.GaussianSteps(classicMultiplier(0.5, 1e-5), 1, NoisyGDSteps, 1e-5)
	if err != nil {
		t.Fatal(err)
	}
	for k, r := range rows {
		if strings.HasPrefix(k, "cps1988 vs N|noisygd|overall_epsilon|") {
			v, _ := strconv.ParseFloat(r[5], 64)
			if relErr(v, g.EpsilonExact) > 1e-7 {
				t.Errorf("overall ε %v, want the exact composition's %v", v, g.EpsilonExact)
			}
		}
		if strings.HasPrefix(k, "cps1988 vs N|noisygd|overall_epsilon_eq7|") {
			v, _ := strconv.ParseFloat(r[5], 64)
			if v <= 20 {
				t.Errorf("seed's Eq. 7-8 overall ε = %v, the seed reports > 20", v)
			}
		}
		if r[8] != "insecure-seeded(3)" {
			t.Fatalf("randomness column %q", r[8])
		}
	}
	if len(res[0].Claims) == 0 {
		t.Error("no claims")
	}
}

func TestRunErrors(t *testing.T) {
	dir := t.TempDir()
	_, err := Run(context.Background(), "gfm-linear", Options{Out: dir, DataDir: filepath.Join(dir, "missing")})
	if !errors.Is(err, ErrNoData) || !strings.Contains(err.Error(), "--data-dir") {
		t.Errorf("missing data: %v", err)
	}
	if _, err := Run(context.Background(), "nope", Options{Out: dir}); err == nil || !strings.Contains(err.Error(), "gfm-noise-vs-dim") {
		t.Errorf("unknown experiment: %v", err)
	}
	if _, err := Run(context.Background(), "all", Options{Out: dir, Runs: -1}); err == nil {
		t.Error("negative runs accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	writeFakeData(t, dir, 50)
	if _, err := Run(ctx, "gfm-linear", Options{Out: dir, DataDir: dir, Quick: true, synthN: 100}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

func TestPerReleaseEpsilon(t *testing.T) {
	for _, k := range []int{2, 8, 40} {
		e0, err := perReleaseEpsilon(0.9, 1e-6, k, true)
		if err != nil {
			t.Fatal(err)
		}
		r, _ := accounting.AdvancedComposition(e0, 0, k, 1e-6)
		if math.Abs(r.Epsilon-0.9) > 1e-9 || r.Epsilon > 0.9 {
			t.Errorf("k=%d: advanced composition of %v gives %v", k, e0, r.Epsilon)
		}
		if b, _ := perReleaseEpsilon(0.9, 1e-6, k, false); math.Abs(b*float64(k)-0.9) > 1e-12 {
			t.Errorf("basic: %v", b)
		}
	}
}

func TestTicks(t *testing.T) {
	tests := []struct {
		lo, hi float64
		labels []string
	}{
		{0.045, 0.14, []string{"0.05", "0.06", "0.07", "0.08", "0.09", "0.1"}},
		{0.01, 0.5, []string{"0.01", "0.02", "0.05", "0.1", "0.2", "0.5"}},
		{1, 1e5, []string{"1", "10", "100", "1000", "10000", "100000"}},
	}
	for _, tc := range tests {
		var got []string
		for _, tk := range (logTicks{}).Ticks(tc.lo, tc.hi) {
			if tk.Label != "" {
				got = append(got, tk.Label)
			}
		}
		if strings.Join(got, " ") != strings.Join(tc.labels, " ") {
			t.Errorf("[%v, %v]: labels %v, want %v", tc.lo, tc.hi, got, tc.labels)
		}
	}
	s := symlog{}
	prev := -1.0
	for _, v := range []float64{-5000, -10, -1, 0, 0.5, 1, 100} {
		n := s.Normalize(-5000, 100, v)
		if n <= prev || n < 0 || n > 1 {
			t.Errorf("symlog not monotone in [0, 1] at %v: %v", v, n)
		}
		prev = n
	}
}

func TestSyntheticRowsInUnitBall(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, tb := range []*table{synthetic(regress.Linear, 20, 500, rng), synthetic(regress.Logistic, 50, 500, rng), irlsData(500, 10, make([]float64, 10), rng)} {
		for i := 0; i < tb.N(); i++ {
			r := tb.row(i)
			nn := 0.0
			for _, v := range r[:tb.K-1] {
				nn += v * v
			}
			y := r[tb.K-1]
			if nn > 1+1e-12 || y < -1 || y > 1 || (tb.Kind == regress.Logistic && y != 0 && y != 1) {
				t.Fatalf("%s row %d: ‖x‖² = %v, y = %v", tb.Name, i, nn, y)
			}
		}
	}
}

func ExampleNoiseStd() {
	// The Gaussian FM seed's as-published τ for Λ2 (linear, N = 10,000,
	// ε = 0.5, δ = 1e-5) and ours (Frobenius sensitivity, joint budget).
	pub, _, _ := NoiseStd("gaussian-fm (as published)", regress.Linear, 2, 20, 10000, 0.5, 1e-5)
	ours, _, _ := NoiseStd("gaussian-fm", regress.Linear, 2, 20, 10000, 0.5, 1e-5)
	fmt.Printf("as published %.3g, ours %.3g\n", pub, ours)
	// Output: as published 0.000969, ours 0.00124
}

func ExampleRun() {
	out, _ := os.MkdirTemp("", "dplearn-experiment")
	defer os.RemoveAll(out)
	// The analytic experiment needs no data; the others read opt.DataDir.
	res, err := Run(context.Background(), "gfm-noise-vs-dim", Options{Out: out, DataDir: out})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, f := range res[0].Files {
		fmt.Println(filepath.Base(f))
	}
	fmt.Println(res[0].Claims[0].Holds)
	// Output:
	// gfm-noise-vs-dim.csv
	// gfm-noise-vs-dim.png
	// gfm-noise-vs-dim.svg
	// gfm-noise-vs-dim.md
	// yes
}

func ExampleNames() {
	fmt.Println(strings.Join(Names(), " "))
	// Output: gfm-noise-vs-dim gfm-linear gfm-logistic fm-figures irls-vs-n utility utility-gfm utility-refs utility-clip utility-refs-logistic radius-sweep auto-sweep huber-sweep utility-shapes capefm-linear capefm-logistic capefm-sites dppp-digits dppp-breast-cancer dppp-smokeban dppp-fashion
}

func TestEmbeddedSchemas(t *testing.T) {
	for name, ds := range realDatasets {
		s, err := loadSchema(ds.schema)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if s.Target.Binary() != (ds.kind == regress.Logistic) {
			t.Errorf("%s: binary target %v for kind %s", name, s.Target.Binary(), ds.kind)
		}
	}
	if _, err := loadSchema("nope"); err == nil {
		t.Error("unknown schema accepted")
	}
	if _, _, err := NoiseStd("nope", regress.Linear, 1, 5, 100, 1, 1e-5); err == nil {
		t.Error("unknown noise series accepted")
	}
}

// The embedded schemas read the real example files (skipped when
// ../shared/data is not there): every row encodes, inside the unit ball.
func TestRealDataLoads(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "data")
	if _, err := os.Stat(dir); err != nil || testing.Short() {
		t.Skip("example data not available or -short")
	}
	want := map[string]int{"cps1988": 28155, "diabetes": 442, "smokeban": 10000, "breast_cancer": 569, "cps1988-highwage": 28155}
	for name, n := range want {
		tb, err := loadReal(dir, name, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if tb.N() != n {
			t.Errorf("%s: %d rows, want %d", name, tb.N(), n)
		}
		for i := 0; i < tb.N(); i++ {
			r := tb.row(i)
			nn := 0.0
			for _, v := range r[:tb.K-1] {
				nn += v * v
			}
			if nn > 1+1e-12 {
				t.Fatalf("%s row %d: ‖x‖² = %v", name, i, nn)
			}
		}
	}
	sub, err := loadReal(dir, "cps1988", fmSubsets[0])
	if err != nil || sub.K != 4 {
		t.Errorf("subset: K = %d, err %v (want intercept + 2 features + target)", sub.K, err)
	}
	if _, err := loadReal(dir, "cps1988", []string{"nosuch"}); err == nil {
		t.Error("unknown subset column accepted")
	}
}

// A panel without data (a mechanism missing from the build) must render, not
// panic on its log axes.
func TestRenderEmptyPanel(t *testing.T) {
	a := newAggregate()
	a.add([]obs{{panel: "p", xname: "x", series: "fm", metric: "m", x: 1, v: 2}, {panel: "p", xname: "x", series: "fm", metric: "m", x: 10, v: 3}})
	fig := figure{cols: 2, panels: []panel{
		{id: "p", title: "data", logX: true, logY: true, metric: "m", series: []string{"fm"}, right: "m", rightSeries: "fm", rightLabel: "ε"},
		{id: "q", title: "empty", logX: true, logY: true, symlogY: true, metric: "m", series: []string{"fm"}},
	}}
	base := filepath.Join(t.TempDir(), "f")
	files, err := render(fig, "title", a, base)
	if err != nil || len(files) != 2 {
		t.Fatalf("render: %v %v", files, err)
	}
}

// The L1 sensitivities of laplaceIRLS bound the change of A and of B's upper
// triangle for random and extreme replace-one pairs, and are attained up to
// a small factor by the extreme pair (so they are not loose by much).
func TestIRLSL1Sensitivities(t *testing.T) {
	const d, eta, n = 6, 0.1, 100.0
	sa, sb := irlsL1Sensitivities(d, eta, n)
	contrib := func(x []float64, y, s float64) (a, up []float64) {
		for k := range x {
			a = append(a, s*y*x[k]/n)
			for l := k; l < d; l++ {
				up = append(up, s*x[k]*x[l]/n)
			}
		}
		return a, up
	}
	l1diff := func(u, v []float64) float64 {
		t := 0.0
		for i := range u {
			t += math.Abs(u[i] - v[i])
		}
		return t
	}
	rng := rand.New(rand.NewPCG(11, 12))
	randRow := func() ([]float64, float64, float64) {
		x := make([]float64, d)
		nn := 0.0
		for k := range x {
			x[k] = rng.NormFloat64()
			nn += x[k] * x[k]
		}
		r := rng.Float64()
		for k := range x {
			x[k] *= r / math.Sqrt(nn)
		}
		return x, 2*rng.Float64() - 1, 1 / math.Max(eta, rng.Float64())
	}
	worstA, worstB := 0.0, 0.0
	check := func(x1 []float64, y1, s1 float64, x2 []float64, y2, s2 float64) {
		a1, u1 := contrib(x1, y1, s1)
		a2, u2 := contrib(x2, y2, s2)
		da, db := l1diff(a1, a2), l1diff(u1, u2)
		if da > sa*(1+1e-12) || db > sb*(1+1e-12) {
			t.Fatalf("ΔA₁ = %v > %v or ΔB₁ = %v > %v", da, sa, db, sb)
		}
		worstA, worstB = math.Max(worstA, da), math.Max(worstB, db)
	}
	for i := 0; i < 20000; i++ {
		x1, y1, s1 := randRow()
		x2, y2, s2 := randRow()
		check(x1, y1, s1, x2, y2, s2)
	}
	// Extreme pair: flat vectors of opposite sign and label, s = 1/η.
	p, m := make([]float64, d), make([]float64, d)
	for k := range p {
		p[k], m[k] = 1/math.Sqrt(d), -1/math.Sqrt(d)
	}
	check(p, 1, 1/eta, m, 1, 1/eta) // ΔA attains 2√d/(ηN)
	zero := make([]float64, d)
	check(p, 1, 1/eta, zero, 0, 1/eta)
	// The B bound adds the two rows' triangles (triangle inequality); their
	// diagonals never cancel fully, so it is conservative by up to 2×.
	if worstA < 0.99*sa || worstB < 0.45*sb {
		t.Errorf("bounds loose: worst ΔA₁ %v of %v, ΔB₁ %v of %v", worstA, sa, worstB, sb)
	}
}

func TestEvaluateAndSplit(t *testing.T) {
	// Known answers: rows (x, y) with coef 1 on one feature.
	lin := &table{Kind: regress.Linear, K: 2, Rows: []float64{0.5, 0.5, 0.2, 0.0, -0.4, -1}}
	// predictions 0.5, 0.2, -0.4: squared errors 0, 0.04, 0.36.
	if got := evaluate(regress.Linear, []float64{1}, lin); math.Abs(got-0.4/3) > 1e-15 {
		t.Errorf("mse %v, want %v", got, 0.4/3)
	}
	logi := &table{Kind: regress.Logistic, K: 2, Rows: []float64{1, 1, -1, 0, 1, 0, -1, 1}}
	if got := evaluate(regress.Logistic, []float64{2}, logi); got != 0.5 {
		t.Errorf("accuracy %v, want 0.5", got)
	}
	// split: disjoint, complete, sizes as asked.
	tb := &table{K: 2}
	for i := 0; i < 100; i++ {
		tb.Rows = append(tb.Rows, float64(i), 0)
	}
	tr, te := tb.split(rand.New(rand.NewPCG(1, 1)), 0.1, 0)
	if tr.N() != 90 || te.N() != 10 {
		t.Fatalf("sizes %d/%d", tr.N(), te.N())
	}
	seen := map[float64]bool{}
	for _, x := range []*table{tr, te} {
		for i := 0; i < x.N(); i++ {
			if seen[x.row(i)[0]] {
				t.Fatal("row in both parts")
			}
			seen[x.row(i)[0]] = true
		}
	}
	if len(seen) != 100 {
		t.Fatalf("%d rows after split", len(seen))
	}
	if tr, _ := tb.split(rand.New(rand.NewPCG(1, 1)), 0.1, 30); tr.N() != 30 {
		t.Errorf("trainN: %d rows", tr.N())
	}
}

// With a huge budget the conventional-composition Laplace DP-IRLS approaches
// the non-private LAD fit (its noise and ridge vanish).
func TestLaplaceIRLSConverges(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	theta := make([]float64, irlsDim)
	for j := range theta {
		theta[j] = rng.NormFloat64()
	}
	train := irlsData(4000, irlsDim, theta, rng)
	test := irlsData(2000, irlsDim, theta, rng)
	st, _ := moments(train)
	est, _ := regress.New("nonprivate")
	res, err := est.Fit(context.Background(), regress.Data{Stats: st, Rows: train.Rows}, regress.Config{Kind: regress.Robust, Lambda: -1})
	if err != nil {
		t.Fatal(err)
	}
	ref := medianAbsErr(res.Coef, test)
	coef, err := laplaceIRLS(train, 1e5, 1e-6, false, noise.NewInsecureSeeded(5))
	if err != nil {
		t.Fatal(err)
	}
	if got := medianAbsErr(coef, test); got > 1.5*ref {
		t.Errorf("conventional: median |residual| %v, nonprivate %v", got, ref)
	}
	// Advanced composition caps the per-release ε near ln(ε/k), so it
	// cannot reach the noiseless fit; it must still improve with ε.
	lo, err := laplaceIRLS(train, 1, 1e-6, true, noise.NewInsecureSeeded(6))
	if err != nil {
		t.Fatal(err)
	}
	hi, err := laplaceIRLS(train, 1000, 1e-6, true, noise.NewInsecureSeeded(7))
	if err != nil {
		t.Fatal(err)
	}
	if a, b := medianAbsErr(lo, test), medianAbsErr(hi, test); !(b < a/3) {
		t.Errorf("advanced: median |residual| %v at ε=1, %v at ε=1000, nonprivate %v", a, b, ref)
	}
}

// TestHighWageThresholdDeclared keeps the constant shown in the figures equal
// to the threshold the schema declares.
func TestHighWageThresholdDeclared(t *testing.T) {
	s, err := loadSchema("cps1988-highwage")
	if err != nil {
		t.Fatal(err)
	}
	if s.Target.Above == nil || *s.Target.Above != HighWageThreshold {
		t.Fatalf("schema threshold %v, constant %v", s.Target.Above, HighWageThreshold)
	}
}
