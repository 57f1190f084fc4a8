package inference

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/exampledata"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
)

func longTests() bool { return os.Getenv("DPLEARN_LONG_TESTS") == "1" }

// realistic is the shape of issue 25 item 1's table: the intercept, six
// numeric columns that are strongly collinear (each is a common factor plus
// a little noise: pairwise correlation ≈ 0.95), and three categoricals with
// 5, 7 and 8 levels of unequal frequency (p_k ∝ 1/k, the rarest 4% of the rows),
// one of them tied to the common factor: 1 + 6 + 4 + 6 + 7 = 24 encoded
// coefficients. The target is linear in the encoded features plus bounded
// symmetric noise, so its least-squares coefficients are β exactly and the
// target never reaches its declared range's ends (no clipping).
type realistic struct {
	s      *schema.Schema
	sc     float64
	levels []int
	probs  [][]float64
	beta   []float64
	kind   regress.Kind
}

const realisticNumeric = 6

func newRealistic(t testing.TB, kind regress.Kind) *realistic {
	levels := []int{5, 7, 8}
	var fs []string
	for j := 0; j < realisticNumeric; j++ {
		fs = append(fs, fmt.Sprintf(`{"name": "u%d", "range": [-1, 1]}`, j))
	}
	r := &realistic{levels: levels, kind: kind}
	for c, l := range levels {
		var cats []string
		p := make([]float64, l)
		tot := 0.0
		for k := 0; k < l; k++ {
			cats = append(cats, fmt.Sprintf(`"c%d"`, k))
			p[k] = 1 / float64(k+1) // Zipf-like: the last level is rare
			tot += p[k]
		}
		for k := range p {
			p[k] /= tot
		}
		r.probs = append(r.probs, p)
		fs = append(fs, fmt.Sprintf(`{"name": "g%d", "categories": [%s]}`, c, strings.Join(cats, ", ")))
	}
	target := `{"name": "y", "range": [-1, 1]}`
	if kind == regress.Logistic {
		target = `{"name": "y", "positive": "yes", "negative": "no"}`
	}
	s, err := schema.Parse([]byte(fmt.Sprintf(`{"target": %s, "features": [%s]}`, target, strings.Join(fs, ", "))))
	if err != nil {
		t.Fatal(err)
	}
	r.s = s
	r.sc = 1 / math.Sqrt(float64(s.Bound()))
	d := s.Dim()
	if d != 24 {
		t.Fatalf("realistic design has %d coefficients, want 24", d)
	}
	r.beta = make([]float64, d)
	rng := rand.New(rand.NewPCG(25, 1))
	for i := range r.beta {
		r.beta[i] = 0.4 * (rng.Float64() - 0.5)
	}
	r.beta[0] = 0.1
	if kind == regress.Logistic {
		for i := range r.beta {
			r.beta[i] *= 3
		}
	}
	return r
}

// row writes one encoded row (features, then the target) into x.
func (r *realistic) row(rng *rand.Rand, x []float64) {
	for i := range x {
		x[i] = 0
	}
	x[0] = r.sc
	w := 2*rng.Float64() - 1
	for j := 0; j < realisticNumeric; j++ {
		x[1+j] = r.sc * math.Max(-1, math.Min(1, w+0.13*rng.NormFloat64()))
	}
	col := 1 + realisticNumeric
	for c, p := range r.probs {
		u := rng.Float64()
		if c == 0 {
			// tied to the common factor: higher w, higher levels
			u = math.Max(0, math.Min(0.999999, 0.7*u+0.3*(w+1)/2))
		}
		k, acc := 0, p[0]
		for u >= acc && k+1 < len(p) {
			k++
			acc += p[k]
		}
		if k > 0 {
			x[col+k-1] = r.sc
		}
		col += len(p) - 1
	}
	z := 0.0
	for i, b := range r.beta {
		z += x[i] * b
	}
	y := &x[len(x)-1]
	if r.kind == regress.Logistic {
		if rng.Float64() < 1/(1+math.Exp(-z)) {
			*y = 1
		}
		return
	}
	*y = z + 0.3*(2*rng.Float64()-1)
}

// sample returns the statistics of n rows.
func (r *realistic) sample(rng *rand.Rand, n int) *rowStats {
	k := r.s.Dim() + 1
	st := &rowStats{k: k, n: int64(n), sum: make([]float64, k), m: make([]float64, k*k)}
	x := make([]float64, k)
	for i := 0; i < n; i++ {
		r.row(rng, x)
		st.add(x)
	}
	st.mirror()
	return st
}

// truth is the estimand: β for the linear design; for the logistic one
// the surrogate minimiser 4·S⁻¹E[x(y − ½)], computed on a large sample.
func (r *realistic) truth() []float64 {
	if r.kind == regress.Linear {
		return r.beta
	}
	st := r.sample(rand.New(rand.NewPCG(99, 99)), 2_000_000)
	return surrogateTruth(st)
}

// surrogateTruth returns 4·S⁻¹E[x(y − ½)] of the statistics st.
func surrogateTruth(st *rowStats) []float64 {
	d := st.k - 1
	S := mat.NewDense(d, d, nil)
	rhs := mat.NewVecDense(d, nil)
	for i := 0; i < d; i++ {
		rhs.SetVec(i, st.At(i, d)-0.5*st.Sum(i))
		for j := 0; j < d; j++ {
			S.Set(i, j, st.At(i, j))
		}
	}
	var g mat.VecDense
	if err := g.SolveVec(S, rhs); err != nil {
		panic(err)
	}
	out := make([]float64, d)
	for i := range out {
		out[i] = 4 * g.AtVec(i)
	}
	return out
}

// rowStats are exact sufficient statistics of encoded rows (upper
// triangle accumulated, mirrored once).
type rowStats struct {
	k   int
	n   int64
	sum []float64
	m   []float64
}

func (s *rowStats) K() int              { return s.k }
func (s *rowStats) N() int64            { return s.n }
func (s *rowStats) Sum(i int) float64   { return s.sum[i] }
func (s *rowStats) At(i, j int) float64 { return s.m[i*s.k+j] }

func (s *rowStats) add(x []float64) {
	k := s.k
	for i := 0; i < k; i++ {
		xi := x[i]
		if xi == 0 {
			continue
		}
		s.sum[i] += xi
		row := s.m[i*k:]
		for j := i; j < k; j++ {
			row[j] += xi * x[j]
		}
	}
}

func (s *rowStats) mirror() {
	for i := 0; i < s.k; i++ {
		for j := 0; j < i; j++ {
			s.m[i*s.k+j] = s.m[j*s.k+i]
		}
	}
}

func statsOf(rows []float64, k int) *rowStats {
	st := &rowStats{k: k, n: int64(len(rows) / k), sum: make([]float64, k), m: make([]float64, k*k)}
	for r := 0; r < len(rows); r += k {
		st.add(rows[r : r+k])
	}
	st.mirror()
	return st
}

// smokeBan returns the embedded SmokeBan table's encoded rows and schema.
func smokeBan(t testing.TB) (*dataset.Table, *schema.Schema) {
	b, err := exampledata.Schema("smokeban")
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Parse(b)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := exampledata.File("SmokeBan.csv")
	if err != nil {
		t.Fatal(err)
	}
	tb, _, err := dataset.LoadReader(context.Background(), bytes.NewReader(raw), "SmokeBan.csv", s, dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tb, s
}

// fitWithIntervals runs gaussian-fm at ε (5% of it on Λ0 for linear fits)
// with the schema's Gram structure, as `dplearn fit` does, and returns the
// intervals.
func fitWithIntervals(t testing.TB, st regress.Stats, s *schema.Schema, kind regress.Kind, eps float64, src noise.Source, opt Options) (*regress.Result, *Intervals) {
	gs, err := regress.GramStructureFor(s)
	if err != nil {
		t.Fatal(err)
	}
	cfg := regress.Config{Kind: kind, Epsilon: eps, Delta: 1e-6, Lambda: -1, Source: src, Structure: gs}
	var y2 *TargetMoment
	if kind == regress.Linear {
		cfg.Epsilon = eps * (1 - testShare)
		v, _, err := regress.ReleaseTargetMoment(st, eps*testShare, src)
		if err != nil {
			t.Fatal(err)
		}
		y2 = &TargetMoment{Value: v}
	}
	est, err := regress.New("gaussian-fm")
	if err != nil {
		t.Fatal(err)
	}
	fit, err := est.Fit(context.Background(), regress.Data{Stats: st}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	iv, err := FM(fit.Released, y2, opt)
	if err != nil {
		t.Fatal(err)
	}
	return fit, iv
}

// TestIntervalsExistOnRealisticDesigns is issue 25 item 1: at ε = 1,
// gaussian-fm intervals must exist for every coefficient of the embedded
// SmokeBan table (logistic, N = 10,000, 10 coefficients) and of the
// realistic synthetic design (linear, N = 50,000, 24 coefficients with
// collinear numeric columns and 5-8-level categoricals), each containing
// its estimate, with no failed replicate. On the starting commit (ef46a52)
// every coefficient was unidentified on both: the bootstrap applied the
// fit's trimming floor ¼λ to the un-ridged Λ2 (the fit applies it after
// adding λ), so the realistic design's released Λ2 was "trimmed", and on
// SmokeBan 3-8% of the replicates dipped below it and "failed".
func TestIntervalsExistOnRealisticDesigns(t *testing.T) {
	tb, sb := smokeBan(t)
	rd := newRealistic(t, regress.Linear)
	type fitCase struct {
		name string
		st   func(seed uint64) regress.Stats
		s    *schema.Schema
		kind regress.Kind
	}
	sbStats := statsOf(tb.Rows, tb.K)
	cases := []fitCase{
		{"smokeban", func(uint64) regress.Stats { return sbStats }, sb, regress.Logistic},
		{"realistic", func(seed uint64) regress.Stats { return rd.sample(rand.New(rand.NewPCG(seed, 3)), 50_000) }, rd.s, regress.Linear},
	}
	seeds := 4
	if testing.Short() {
		seeds = 2
	}
	for _, c := range cases {
		for seed := uint64(1); seed <= uint64(seeds); seed++ {
			_, iv := fitWithIntervals(t, c.st(seed), c.s, c.kind, 1, noise.NewInsecureSeeded(seed), Options{Replicates: 1000})
			if iv.Failed != 0 || iv.Diagnosis != nil {
				t.Errorf("%s seed %d: %d of %d replicates failed, diagnosis %+v", c.name, seed, iv.Failed, iv.Replicates, iv.Diagnosis)
			}
			for i, co := range iv.Coefficients {
				if !co.Identified {
					t.Errorf("%s seed %d: coefficient %d unidentified", c.name, seed, i)
					continue
				}
				if !(co.Lower <= co.Estimate && co.Estimate <= co.Upper) {
					t.Errorf("%s seed %d: coefficient %d estimate %v outside [%v, %v]", c.name, seed, i, co.Estimate, co.Lower, co.Upper)
				}
			}
			t.Logf("%s seed %d: %d identified of %d, %d replicates dropped a direction", c.name, seed, countIdentified(iv), len(iv.Coefficients), iv.Dropped)
		}
	}
}

func countIdentified(iv *Intervals) int {
	n := 0
	for _, c := range iv.Coefficients {
		if c.Identified {
			n++
		}
	}
	return n
}
