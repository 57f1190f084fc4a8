package experiment

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/regress"
)

// TestShapesDesigns checks each utility-shapes design against what its
// name says, recomputed from the rows: N rows of d coefficients (the
// intercept column constant at s = 1/√d rounded down), every row inside
// the unit ball, a binary target for the logistic tasks and one in [−1, 1]
// for the linear ones, and the features' mean pairwise correlation near
// the stated one (0.95 or 0, within 0.05 on 2,000 rows). The linear and
// logistic tasks of a shape have the same features.
func TestShapesDesigns(t *testing.T) {
	const n = 2000
	for i, sh := range shapesShape {
		lin, logit := shapesLinear[i], shapesLogistic[i]
		if !strings.Contains(lin, sh.name) || lin+"-logistic" != logit {
			t.Fatalf("names %q %q for shape %q", lin, logit, sh.name)
		}
		if math.Abs(sh.rho+sh.rhoC-1) > 1e-15 {
			t.Fatalf("shape %s: ρ = %v with complement %v", sh.name, sh.rho, sh.rhoC)
		}
		var feats [][]float64
		for _, name := range []string{lin, logit} {
			ds := synthShapes[name]
			if ds.n != sh.n || ds.d != sh.d || ds.rho != sh.rho {
				t.Fatalf("%s: design %+v, want n=%d d=%d ρ=%g", name, ds, sh.n, sh.d, sh.rho)
			}
			ds.n = n
			tb, b := synthTable(name, ds)
			if tb.Name != name || tb.K != sh.d+1 || tb.N() != n {
				t.Fatalf("%s: table %s K=%d N=%d", name, tb.Name, tb.K, tb.N())
			}
			if b.s*b.s*float64(sh.d) > 1 || b.s != tb.Rows[0] {
				t.Errorf("%s: intercept column %v, scale %v", name, tb.Rows[0], b.s)
			}
			var x []float64
			for r := 0; r < n; r++ {
				row := tb.Rows[r*tb.K : (r+1)*tb.K]
				var sq float64
				for _, v := range row[:sh.d] {
					sq += v * v
				}
				if sq > 1 || row[0] != b.s {
					t.Fatalf("%s row %d: ‖x‖² = %v, intercept %v", name, r, sq, row[0])
				}
				y := row[sh.d]
				if (tb.Kind == regress.Logistic && y != 0 && y != 1) || math.Abs(y) > 1 {
					t.Fatalf("%s row %d: target %v", name, r, y)
				}
				x = append(x, row[:sh.d]...)
			}
			feats = append(feats, x)
			if got := meanCorrelation(x, n, sh.d); math.Abs(got-sh.rho) > 0.05 {
				t.Errorf("%s: mean pairwise correlation %.3f, want %g", name, got, sh.rho)
			}
		}
		for j := range feats[0] {
			if feats[0][j] != feats[1][j] {
				t.Fatalf("shape %s: linear and logistic features differ at %d", sh.name, j)
			}
		}
	}
}

// meanCorrelation is the mean Pearson correlation over pairs of the
// columns 1…d−1 of the n×d matrix x.
func meanCorrelation(x []float64, n, d int) float64 {
	col := func(j int) (m, s float64) {
		for i := 0; i < n; i++ {
			m += x[i*d+j]
		}
		m /= float64(n)
		for i := 0; i < n; i++ {
			s += (x[i*d+j] - m) * (x[i*d+j] - m)
		}
		return m, math.Sqrt(s)
	}
	var sum float64
	var pairs int
	for a := 1; a < d; a++ {
		ma, sa := col(a)
		for c := a + 1; c < d; c++ {
			mc, sc := col(c)
			var cov float64
			for i := 0; i < n; i++ {
				cov += (x[i*d+a] - ma) * (x[i*d+c] - mc)
			}
			sum += cov / (sa * sc)
			pairs++
		}
	}
	return sum / float64(pairs)
}

// TestCollinearTableUnchanged pins utility-refs' collinear designs to the
// rows they had before synthTable generalised them: the sums of their
// first 600 rows' entries.
func TestCollinearTableUnchanged(t *testing.T) {
	for _, c := range []struct {
		kind regress.Kind
		sum  float64
	}{
		{regress.Linear, collinearLinearSum600},
		{regress.Logistic, collinearLogisticSum600},
	} {
		tb, _ := collinearTable(c.kind, 600)
		var s float64
		for _, v := range tb.Rows {
			s += v
		}
		if s != c.sum {
			t.Errorf("%s: sum of the rows %v, want %v", c.kind, s, c.sum)
		}
	}
}

// TestShapesExperiment runs `experiment utility-shapes` once on small
// designs (200 rows each) and checks what holds whatever the noise: every
// method has every metric at every ε on every shape, the claims are
// utility-refs' per shape (3 per linear task and ε, 2 per logistic), and
// the summary names every shape with its N and d.
func TestShapesExperiment(t *testing.T) {
	out := t.TempDir()
	opt := Options{Out: out, Runs: 1, Seeded: true, Seed: 5, Workers: 2, synthN: 200}
	res, err := Run(context.Background(), "utility-shapes", opt)
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	for _, task := range shapesLinear {
		for _, eps := range refsEps {
			for _, s := range append(append(append([]string{}, refsLinearMechs...), refsLinearRefs...), cPaired) {
				if v := rowMean(t, r, task, s, "excess_rmse", eps); math.IsNaN(v) {
					t.Errorf("%s %s ε=%g: NaN", task, s, eps)
				}
			}
		}
	}
	for _, task := range shapesLogistic {
		for _, eps := range refsEps {
			for _, s := range append(append([]string{"nonprivate"}, refsLogisticMechs...), refsLogisticRefs...) {
				if v := rowMean(t, r, task, s, "accuracy", eps); !(v >= 0 && v <= 1) {
					t.Errorf("%s %s ε=%g: accuracy %v", task, s, eps, v)
				}
			}
		}
	}
	if n := len(r.Claims); n != (4*len(shapesLinear)+2*len(shapesLogistic))*len(refsEps) {
		t.Errorf("%d claims", n)
	}
	md, err := os.ReadFile(filepath.Join(out, "utility-shapes.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range append(append([]string{}, shapesLinear...), shapesLogistic...) {
		if !strings.Contains(string(md), task+": N = 200, d = ") {
			t.Errorf("summary does not describe %s", task)
		}
	}
}

// The sums of the collinear designs' first 600 rows at the commit before
// synthTable (8c22083), printed with %v (shortest round-trip form).
const (
	collinearLinearSum600   = 735.8249241522227
	collinearLogisticSum600 = 646.2300459986528
)

// TestSynthRows checks the rows drawn per design: the design's own N, tests'
// synthN over everything, and --quick capping only the designs above
// synthQuickRows.
func TestSynthRows(t *testing.T) {
	big, small := synthShapes["shape-n229k-d24"], synthShapes["collinear"]
	for _, c := range []struct {
		opt  Options
		sh   synthShape
		want int
	}{
		{Options{}, big, 229000},
		{Options{}, small, collinearN},
		{Options{Quick: true}, big, synthQuickRows},
		{Options{Quick: true}, small, collinearN},
		{Options{Quick: true, synthN: 300}, big, 300},
		{Options{synthN: 300}, small, 300},
	} {
		e := &env{opt: c.opt}
		if got := e.synthRows(c.sh); got != c.want {
			t.Errorf("%+v, n=%d: %d rows, want %d", c.opt, c.sh.n, got, c.want)
		}
	}
}

// TestWithinFactor checks the claims' verdict, including a comparator whose
// excess error is negative (utility-shapes' irls), where v/best < 0 used
// to read as "yes".
func TestWithinFactor(t *testing.T) {
	for _, c := range []struct {
		v, best, f float64
		yes        bool
	}{
		{1, 1, 1, true},
		{1.1, 1, 1.1, true},
		{1.2, 1, 1.1, false},
		{0.002, -0.0003, 1.1, false},
		{-0.0004, -0.0003, 1.1, true},
		{0, 0, 1, true},
		{0.001, 0, 1, false},
	} {
		if got := withinFactor(c.v, c.best, c.f); (got == "yes") != c.yes {
			t.Errorf("withinFactor(%v, %v, %v) = %q", c.v, c.best, c.f, got)
		}
	}
}
