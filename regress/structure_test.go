package regress

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/exampledata"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// exampleStats loads an embedded example dataset with its schema.
func exampleStats(t *testing.T, file, name string) (*schema.Schema, *suffstat.Moments) {
	t.Helper()
	b, err := exampledata.Schema(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := exampledata.File(file)
	if err != nil {
		t.Fatal(err)
	}
	tb, _, err := dataset.LoadReader(context.Background(), bytes.NewReader(raw), file, s, dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	m := suffstat.New(tb.K)
	if err := m.AddRows(tb.Rows); err != nil {
		t.Fatal(err)
	}
	return s, m
}

// TestGramStructureHoldsOnData checks that the identities GramStructureFor
// reads off a schema hold on real data encoded with that schema (they are
// facts about the encoding, so they must hold on every dataset): the exact
// Λ2 of CPS1988 and SmokeBan is unchanged by the projection up to the
// floating-point error of the sums (relative 1e-12), for linear and
// logistic objectives. It also checks the counts for CPS1988 by hand: the
// intercept's diagonal, the three pairs of region indicators (known), and
// the six indicator diagonals (each equal to its intercept entry).
func TestGramStructureHoldsOnData(t *testing.T) {
	for _, c := range []struct {
		file, schema string
		known, equal int
	}{
		{"CPS1988.csv", "cps1988", 1 + 3, 6},
		{"SmokeBan.csv", "smokeban", 1 + 6, 8},
	} {
		s, m := exampleStats(t, c.file, c.schema)
		st, err := GramStructureFor(s)
		if err != nil {
			t.Fatal(err)
		}
		if len(st.Known) != c.known || len(st.Equal) != c.equal || st.D != s.Dim() {
			t.Fatalf("%s: %d known, %d equal pairs, d = %d; want %d, %d, %d", c.schema, len(st.Known), len(st.Equal), st.D, c.known, c.equal, s.Dim())
		}
		for _, kind := range []Kind{Linear, Logistic} {
			q, err := Objective(kind, m)
			if err != nil {
				t.Fatal(err)
			}
			a := 1.0
			if kind == Logistic {
				a = TaylorQuadratic.A2
			}
			p, err := st.Scaled(a).Project(q)
			if err != nil {
				t.Fatal(err)
			}
			for i := range q.Upper {
				if diff := math.Abs(p.Upper[i] - q.Upper[i]); diff > 1e-12*math.Max(q.Upper[0], 1e-300) {
					t.Errorf("%s %s: entry %d is %v on the data, %v after the projection", c.schema, kind, i, q.Upper[i], p.Upper[i])
				}
			}
			for i := range q.Lambda1 {
				if p.Lambda1[i] != q.Lambda1[i] {
					t.Errorf("%s %s: the projection changed Λ1[%d]", c.schema, kind, i)
				}
			}
		}
	}
}

// TestGramStructureFromSchema covers the schema cases: no intercept (no
// known diagonal and no equal pairs, only the within-group zeros), a column
// that drops records (its all-zero rows make the intercept's diagonal
// data-dependent: not known), only numeric features with no intercept (no
// structure at all).
func TestGramStructureFromSchema(t *testing.T) {
	for _, c := range []struct {
		name, json   string
		nil          bool
		known, equal int
	}{
		{"numeric and intercept", `{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "a", "range": [0, 1]}]}`, false, 1, 0},
		{"no intercept, numeric", `{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "a", "range": [0, 1]}], "intercept": false}`, true, 0, 0},
		{"no intercept, 3 levels", `{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "g", "categories": ["a", "b", "c"]}], "intercept": false}`, false, 1, 0},
		{"drop policy", `{"target": {"name": "y", "range": [0, 1], "missing": "drop"}, "features": [{"name": "g", "categories": ["a", "b", "c"]}]}`, false, 1, 2},
		{"two groups", `{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "g", "categories": ["a", "b", "c", "d"]}, {"name": "x", "range": [0, 1]}, {"name": "h", "categories": ["u", "v"]}]}`, false, 1 + 3, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := schema.Parse([]byte(c.json))
			if err != nil {
				t.Fatal(err)
			}
			st, err := GramStructureFor(s)
			if err != nil {
				t.Fatal(err)
			}
			if c.nil {
				if st != nil {
					t.Fatalf("want no structure, got %+v", st)
				}
				return
			}
			if st == nil || len(st.Known) != c.known || len(st.Equal) != c.equal {
				t.Fatalf("got %+v, want %d known and %d equal", st, c.known, c.equal)
			}
			if c.name == "drop policy" {
				for _, v := range st.Known {
					if v.I == 0 && v.J == 0 {
						t.Fatal("the intercept's diagonal is known although dropped records are kept as zero rows")
					}
				}
			}
		})
	}
}

// projectKKT is an independent computation of the least-squares projection
// of y onto {x : Ax = b}: y − Aᵀ(AAᵀ)⁺(Ay − b), with A the constraint rows
// (e_a − e_b for an equal pair, e_k for a known entry).
func projectKKT(t *testing.T, st *GramStructure, y []float64) []float64 {
	t.Helper()
	m := len(y)
	var rows [][]float64
	var rhs []float64
	for _, p := range st.Equal {
		r := make([]float64, m)
		r[packedIndex(st.D, p[0].I, p[0].J)] += 1
		r[packedIndex(st.D, p[1].I, p[1].J)] -= 1
		rows, rhs = append(rows, r), append(rhs, 0)
	}
	for _, v := range st.Known {
		r := make([]float64, m)
		r[packedIndex(st.D, v.I, v.J)] = 1
		rows, rhs = append(rows, r), append(rhs, v.Value)
	}
	a := mat.NewDense(len(rows), m, nil)
	for i, r := range rows {
		a.SetRow(i, r)
	}
	res := mat.NewVecDense(len(rows), nil)
	res.MulVec(a, mat.NewVecDense(m, y))
	res.SubVec(res, mat.NewVecDense(len(rhs), rhs))
	var aat mat.Dense
	aat.Mul(a, a.T())
	var z mat.VecDense
	if err := z.SolveVec(&aat, res); err != nil {
		t.Fatal(err)
	}
	var corr mat.VecDense
	corr.MulVec(a.T(), &z)
	out := make([]float64, m)
	for i := range out {
		out[i] = y[i] - corr.AtVec(i)
	}
	return out
}

// TestProjectIsLeastSquares checks Project against an independent
// computation of the projection (projectKKT), and its algebra: idempotent,
// commuting with fresh noise (Project(Project(q) + e) = Project(q + e), what
// the inference bootstrap relies on), and Λ1 untouched.
func TestProjectIsLeastSquares(t *testing.T) {
	s, err := schema.Parse([]byte(`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "g", "categories": ["a", "b", "c", "d"]}, {"name": "x", "range": [0, 1]}, {"name": "h", "categories": ["u", "v"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	st, err := GramStructureFor(s)
	if err != nil {
		t.Fatal(err)
	}
	st = st.Scaled(0.125)
	rng := rand.New(rand.NewPCG(3, 5))
	d := st.D
	randQ := func() *Quadratic {
		q := &Quadratic{D: d, Lambda1: make([]float64, d), Upper: make([]float64, d*(d+1)/2)}
		for i := range q.Lambda1 {
			q.Lambda1[i] = rng.NormFloat64()
		}
		for i := range q.Upper {
			q.Upper[i] = rng.NormFloat64()
		}
		return q
	}
	close := func(a, b []float64, what string) {
		t.Helper()
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-12 {
				t.Fatalf("%s: entry %d: %v vs %v", what, i, a[i], b[i])
			}
		}
	}
	for trial := 0; trial < 50; trial++ {
		q := randQ()
		p, err := st.Project(q)
		if err != nil {
			t.Fatal(err)
		}
		close(p.Upper, projectKKT(t, st, q.Upper), "against the KKT projection")
		close(p.Lambda1, q.Lambda1, "Λ1")
		pp, _ := st.Project(p)
		close(pp.Upper, p.Upper, "idempotent")
		e := randQ()
		sum := func(a, b *Quadratic) *Quadratic {
			c := &Quadratic{D: d, Lambda1: make([]float64, d), Upper: make([]float64, len(a.Upper))}
			for i := range c.Upper {
				c.Upper[i] = a.Upper[i] + b.Upper[i]
			}
			return c
		}
		l, _ := st.Project(sum(p, e))
		r, _ := st.Project(sum(q, e))
		close(l.Upper, r.Upper, "commutes with noise")
	}
}

// TestGramStructureErrors: a structure that does not fit the objective or
// contradicts itself is an error, never a silent wrong projection.
func TestGramStructureErrors(t *testing.T) {
	q := &Quadratic{D: 3, Lambda1: make([]float64, 3), Upper: make([]float64, 6)}
	for _, c := range []struct {
		name string
		st   *GramStructure
		want string
	}{
		{"wrong d", &GramStructure{D: 4, Known: []GramValue{{GramEntry{0, 0}, 1}}}, "for 4 features"},
		{"outside", &GramStructure{D: 3, Known: []GramValue{{GramEntry{1, 3}, 1}}}, "outside the upper triangle"},
		{"lower", &GramStructure{D: 3, Equal: [][2]GramEntry{{{2, 1}, {0, 0}}}}, "outside the upper triangle"},
		{"nan", &GramStructure{D: 3, Known: []GramValue{{GramEntry{0, 0}, math.NaN()}}}, "non-finite"},
		{"contradiction", &GramStructure{D: 3, Known: []GramValue{{GramEntry{0, 0}, 1}, {GramEntry{1, 1}, 2}}, Equal: [][2]GramEntry{{{0, 0}, {1, 1}}}}, "known to be both"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := c.st.validate()
			if err == nil {
				_, err = c.st.Project(q)
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
		})
	}
	// Through Config: a structure for another schema is refused by Fit.
	_, m := exampleStats(t, "SmokeBan.csv", "smokeban")
	other, err := GramStructureFor(mustSchema(t, `{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "g", "categories": ["a", "b", "c"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	_, err = gaussianFM{}.Fit(context.Background(), Data{Stats: m}, Config{Kind: Logistic, Epsilon: 1, Delta: 1e-5, Lambda: -1, Source: noise.NewInsecureSeeded(1), Structure: other})
	if err == nil || !strings.Contains(err.Error(), "Gram structure is for 3 encoded features") {
		t.Fatalf("fit with another schema's structure: %v", err)
	}
}

func mustSchema(t *testing.T, js string) *schema.Schema {
	t.Helper()
	s, err := schema.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStructuredFitIsPostProcessing checks that the structured fit is a
// function of the released values and public inputs only: for every
// FM-family mechanism and model, the coefficients equal, bit for bit, the
// minimiser of the released objective under Released.PostProcess (the
// recorded structure, ridge and floor), so nothing else from the data
// enters; the report lists the projection under post-processing; and on
// CPS1988 the projection changes the fit (it is not a no-op).
func TestStructuredFitIsPostProcessing(t *testing.T) {
	for _, c := range []struct {
		file, schema string
		kind         Kind
	}{
		{"CPS1988.csv", "cps1988", Linear},
		{"SmokeBan.csv", "smokeban", Logistic},
	} {
		s, m := exampleStats(t, c.file, c.schema)
		st, err := GramStructureFor(s)
		if err != nil {
			t.Fatal(err)
		}
		for _, mech := range []Estimator{fmEstimator{}, relaxedFM{}, gaussianFM{}} {
			cfg := Config{Kind: c.kind, Epsilon: 0.5, Delta: 1e-5, Lambda: -1, Source: noise.NewInsecureSeeded(9), Structure: st}
			res, err := mech.Fit(context.Background(), Data{Stats: m}, cfg)
			if err != nil {
				t.Fatal(err)
			}
			rel := res.Released
			if rel == nil || rel.Structure == nil {
				t.Fatalf("%s %s: no released structure", mech.Name(), c.kind)
			}
			if err := rel.Validate(); err != nil {
				t.Fatal(err)
			}
			w, _, err := rel.Objective.Minimize(rel.PostProcess())
			if err != nil {
				t.Fatal(err)
			}
			for i := range w {
				if w[i] != res.Coef[i] {
					t.Fatalf("%s %s: coefficient %d is %v, the released objective's post-processing gives %v", mech.Name(), c.kind, i, res.Coef[i], w[i])
				}
			}
			listed := false
			for _, l := range res.Privacy.PostProcessing {
				listed = listed || strings.HasPrefix(l, "public structure of Λ2")
			}
			if !listed {
				t.Errorf("%s %s: the projection is not listed under post-processing: %q", mech.Name(), c.kind, res.Privacy.PostProcessing)
			}
			// The same release without the structure gives another fit.
			pp := rel.PostProcess()
			pp.Structure = nil
			w0, _, err := rel.Objective.Minimize(pp)
			if err != nil {
				t.Fatal(err)
			}
			same := true
			for i := range w0 {
				same = same && w0[i] == w[i]
			}
			if same {
				t.Errorf("%s %s: the projection did not change the fit", mech.Name(), c.kind)
			}
		}
	}
}

// BenchmarkMinimizeStructure measures the cost of the projection inside
// Minimize on CPS1988's structure (d = 9), against the reference of the same
// Minimize without it (the inference bootstrap pays it once per replicate).
// Compare the two sub-benchmarks' ns/op in one run.
func BenchmarkMinimizeStructure(b *testing.B) {
	s := mustSchemaB(b, `{"target": {"name": "wage", "transform": "log", "range": [4, 9]}, "features": [{"name": "education", "range": [0, 20]}, {"name": "experience", "range": [0, 60]}, {"name": "ethnicity", "categories": ["cauc", "afam"]}, {"name": "smsa", "categories": ["no", "yes"]}, {"name": "region", "categories": ["northeast", "midwest", "south", "west"]}, {"name": "parttime", "categories": ["no", "yes"]}]}`)
	st, err := GramStructureFor(s)
	if err != nil {
		b.Fatal(err)
	}
	d := st.D
	rng := rand.New(rand.NewPCG(1, 1))
	q := &Quadratic{D: d, Lambda1: make([]float64, d), Upper: make([]float64, d*(d+1)/2)}
	for i := 0; i < d; i++ {
		q.Lambda1[i] = rng.NormFloat64()
		for j := i; j < d; j++ {
			v := 0.01 * rng.NormFloat64()
			if i == j {
				v += 1
			}
			q.Upper[packedIndex(d, i, j)] = v
		}
	}
	for _, c := range []struct {
		name string
		st   *GramStructure
	}{{"reference-no-structure", nil}, {"structure", st}} {
		b.Run(c.name, func(b *testing.B) {
			pp := NoisyPostProcess(0.01)
			pp.Structure = c.st
			for i := 0; i < b.N; i++ {
				if _, _, err := q.Minimize(pp); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func mustSchemaB(b *testing.B, js string) *schema.Schema {
	b.Helper()
	s, err := schema.Parse([]byte(js))
	if err != nil {
		b.Fatal(err)
	}
	return s
}
