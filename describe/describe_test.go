package describe

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/schema"
)

const testSchema = `{"target": {"name": "y", "range": [-1, 3]},
 "features": [{"name": "x", "range": [0, 10]},
              {"name": "g", "categories": ["a", "b", "c"]}]}`

func mustSchema(t testing.TB, js string) *schema.Schema {
	t.Helper()
	s, err := schema.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// rec is one record of the test schema: x, group, y.
type rec struct {
	x   float64
	g   int
	y   float64
	drp bool
}

// encode builds the encoded row of package schema's layout for testSchema:
// intercept, x, g=b, g=c, y.
func encode(s *schema.Schema, r rec) []float64 {
	sc := schema.UnitScale(s.Bound())
	u := (min(max(r.x, 0), 10) - 5) / 5
	row := []float64{sc, sc * u, 0, 0, (min(max(r.y, -1), 3) - 1) / 2}
	if r.g > 0 {
		row[1+r.g] = sc
	}
	if r.drp {
		return make([]float64, len(row))
	}
	return row
}

func synthData(rng *rand.Rand, n int) []rec {
	out := make([]rec, n)
	for i := range out {
		g := rng.IntN(3)
		x := 2 + 1.5*float64(g) + 2*rng.NormFloat64()
		out[i] = rec{x: math.Round(x*10) / 10, g: g, y: 0.3*x/10 + rng.NormFloat64()*0.5}
	}
	return out
}

func build(t testing.TB, s *schema.Schema, opt Options, recs []rec) *Data {
	t.Helper()
	d, err := New(s, opt)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		d.Add(encode(s, r), r.drp)
	}
	return d
}

// truth computes the exact statistics of the clipped values in group g
// (−1: all), independently of Data.
type truthStats struct {
	n        int
	mean, sd float64
	values   []float64
	hist     []int64
}

func truth(recs []rec, col string, g int, lo, hi float64, bins int) truthStats {
	var ts truthStats
	ts.hist = make([]int64, bins)
	for _, r := range recs {
		if r.drp || (g >= 0 && r.g != g) {
			continue
		}
		v := r.x
		if col == "y" {
			v = r.y
		}
		v = min(max(v, lo), hi)
		ts.values = append(ts.values, v)
		b := int(math.Floor((v - lo) / (hi - lo) * float64(bins)))
		ts.hist[min(max(b, 0), bins-1)]++
	}
	ts.n = len(ts.values)
	s := 0.0
	for _, v := range ts.values {
		s += v
	}
	ts.mean = s / float64(ts.n)
	q := 0.0
	for _, v := range ts.values {
		q += (v - ts.mean) * (v - ts.mean)
	}
	ts.sd = math.Sqrt(q / float64(ts.n))
	return ts
}

// snappedRankError is the rank distance of the released grid point from
// the target q·n in the data rounded to the grid.
func snappedRankError(values []float64, lo, hi float64, m int, q, v float64) float64 {
	step := (hi - lo) / float64(m-1)
	var lt, le int
	jv := int(math.Round((v - lo) / step))
	for _, x := range values {
		j := int(math.Round((x - lo) / step))
		if j < jv {
			lt++
		}
		if j <= jv {
			le++
		}
	}
	t := q * float64(len(values))
	switch {
	case t < float64(lt):
		return float64(lt) - t
	case t > float64(le):
		return t - float64(le)
	}
	return 0
}

// TestErrorBarCoverage: over repeated releases (independent seeds) every
// kind of 95% error bar covers the true statistic of the clipped data at
// least at its nominal rate. Each bar's misses are tested against
// Binomial(runs, 0.05) with a false-alarm rate of 1e-4 per bar kind.
func TestErrorBarCoverage(t *testing.T) {
	s := mustSchema(t, testSchema)
	recs := synthData(rand.New(rand.NewPCG(3, 4)), 600)
	runs := 400
	if testing.Short() {
		runs = 150
	}
	for _, by := range []string{"", "g"} {
		misses := map[string]int{}
		for r := range runs {
			d := build(t, s, Options{Epsilon: 2, By: by}, recs)
			res, err := d.Release(noise.NewInsecureSeeded(uint64(r)))
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range res.Columns {
				g := -1
				if by != "" {
					for i, name := range res.Groups {
						if name == c.Group {
							g = i
						}
					}
				}
				if !c.Numeric {
					continue
				}
				lo, hi := 0.0, 10.0
				if c.Column == "y" {
					lo, hi = -1, 3
				}
				ts := truth(recs, c.Column, g, lo, hi, 10)
				if c.Column == "x" && (ts.mean < c.Mean.Lo || ts.mean > c.Mean.Hi) {
					misses["mean"]++
				}
				if c.Column == "x" && (ts.sd < c.SD.Lo || ts.sd > c.SD.Hi) {
					misses["sd"]++
				}
				for _, q := range c.Quantiles {
					if snappedRankError(ts.values, lo, hi, 101, q.Q, q.Value) > q.RankError {
						misses["quantile"]++
					}
				}
				for b, bin := range c.Histogram {
					if d := float64(bin.Count - ts.hist[b]); math.Abs(d) > float64(bin.Half) {
						misses["histogram"]++
					}
				}
			}
			if by != "" {
				for g, c := range res.Counts {
					n := 0
					for _, r := range recs {
						if r.g == g {
							n++
						}
					}
					if float64(n) < c.Lo || float64(n) > c.Hi {
						misses["count"]++
					}
				}
			}
		}
		// The bars counted within a kind have independent noise: one
		// column's mean and sd (x; y's group means share the count noise
		// with x's), independent quantile draws, independent histogram cells
		// and group counts. So a kind's misses are at most Binomial(bars,
		// 0.05) in the stochastic order, and more than the critical value has
		// probability below 1e-4.
		groups := 1
		if by != "" {
			groups = 3
		}
		k := map[string]int{"mean": groups, "sd": groups, "quantile": 2 * groups * 3, "histogram": 2 * groups * 10, "count": groups}
		for kind, m := range misses {
			c := binomialCritical(runs*k[kind], 0.05, 1e-4)
			t.Logf("by=%q %s: %d misses of %d bars (critical %d)", by, kind, m, runs*k[kind], c)
			if m > c {
				t.Errorf("by=%q: %s bars missed %d of %d times: more than %d has probability < 1e-4 at a 95%% rate", by, kind, m, runs*k[kind], c)
			}
		}
	}
}

// TestSensitivitiesExtremal: for extremal neighbouring pairs (one record
// moved from one end of its range to the other, from one group to
// another, or from kept to dropped) the L1 change of every released vector
// reaches, and never exceeds, the sensitivity the release is calibrated to.
func TestSensitivitiesExtremal(t *testing.T) {
	s := mustSchema(t, `{"target": {"name": "y", "range": [-1, 3]},
 "features": [{"name": "x", "range": [0, 10], "missing": "drop"},
              {"name": "g", "categories": ["a", "b", "c"]}]}`)
	base := synthData(rand.New(rand.NewPCG(5, 6)), 200)
	base[0] = rec{x: 0, g: 0, y: -1}
	type pair struct {
		name string
		by   string
		to   rec
	}
	pairs := []pair{
		{"x low to high", "", rec{x: 10, g: 0, y: 3}},
		{"x low to high across groups", "g", rec{x: 10, g: 1, y: 3}},
		{"same value across groups", "g", rec{x: 0, g: 2, y: -1}},
		{"kept to dropped", "", rec{drp: true}},
		{"kept to dropped by group", "g", rec{drp: true}},
	}
	l1 := func(a, b []float64) float64 {
		s := 0.0
		for i := range a {
			s += math.Abs(a[i] - b[i])
		}
		return s
	}
	l1i := func(a, b []int64) float64 {
		s := 0.0
		for i := range a {
			s += math.Abs(float64(a[i] - b[i]))
		}
		return s
	}
	maxSeen := map[string]float64{}
	for _, p := range pairs {
		other := append([]rec(nil), base...)
		other[0] = p.to
		d1 := build(t, s, Options{Epsilon: 1, By: p.by}, base)
		d2 := build(t, s, Options{Epsilon: 1, By: p.by}, other)
		G := d1.groups
		for _, i := range d1.use {
			c := d1.cols[i]
			if i == d1.by {
				continue
			}
			if hs := l1i(d1.hist[i], d2.hist[i]); hs > histSens {
				t.Errorf("%s: histogram of %s changed by %v > %v", p.name, c.Name, hs, histSens)
			} else {
				maxSeen["hist"] = max(maxSeen["hist"], hs/histSens)
			}
			if !c.Numeric {
				continue
			}
			w := c.Hi - c.Lo
			if v := l1(d1.sum[i], d2.sum[i]); v > sumSens(w)*(1+1e-12) {
				t.Errorf("%s: sum of %s changed by %v > %v", p.name, c.Name, v, sumSens(w))
			} else {
				maxSeen["sum"] = max(maxSeen["sum"], v/sumSens(w))
			}
			if v := l1(d1.sq[i], d2.sq[i]); v > sqSens(w, G)*(1+1e-12) {
				t.Errorf("%s: sum of squares of %s changed by %v > %v", p.name, c.Name, v, sqSens(w, G))
			} else {
				maxSeen[map[bool]string{true: "sq G>1", false: "sq G=1"}[G > 1]] = max(maxSeen[map[bool]string{true: "sq G>1", false: "sq G=1"}[G > 1]], v/sqSens(w, G))
			}
			for g := range G {
				for _, q := range []float64{0.01, 0.5, 0.99} {
					a := quantileScores(d1.gridByG[i][g], q, d1.gridByG[i][g].n())
					b := quantileScores(d2.gridByG[i][g], q, d2.gridByG[i][g].n())
					for j := range a {
						diff := new(big.Rat).Sub(a[j], b[j])
						df, _ := diff.Float64()
						if math.Abs(df) > 1 {
							t.Errorf("%s: quantile %v score of %s at grid %d changed by %v > 1", p.name, q, c.Name, j, df)
						}
						maxSeen["score"] = max(maxSeen["score"], math.Abs(df))
					}
				}
			}
		}
		cn := make([]float64, G)
		cm := make([]float64, G)
		for g := range G {
			cn[g], cm[g] = float64(d1.n[g]), float64(d2.n[g])
		}
		if v := l1(cn, cm); v > float64(countSens(G)) {
			t.Errorf("%s: counts changed by %v > %v", p.name, v, countSens(G))
		} else {
			key := map[bool]string{true: "count G>1", false: "count G=1"}[G > 1]
			maxSeen[key] = max(maxSeen[key], v/float64(countSens(G)))
		}
	}
	// Each bound is reached by some pair (so none is loose by a factor).
	for _, k := range []string{"hist", "sum", "sq G=1", "sq G>1", "count G=1", "count G>1", "score"} {
		if maxSeen[k] < 1-1e-9 {
			t.Errorf("%s: the largest change over the extremal pairs is %v of the declared sensitivity, want it reached", k, maxSeen[k])
		}
	}
}

// TestPrivacyReportRecomputed: the reported ε is recomputed independently
// from the list of releases: k = (private counts) + Σ over numeric columns
// (sum, sum of squares, histogram, one per quantile) + one histogram per
// categorical column (the By column's histogram is the counts); each
// share is at most ε/k and they sum to at most ε and within 1e-12 of it.
// The Laplace scale of each sum is at least Δ/ε_i.
func TestPrivacyReportRecomputed(t *testing.T) {
	s := mustSchema(t, testSchema)
	recs := synthData(rand.New(rand.NewPCG(1, 2)), 100)
	for _, tc := range []struct {
		by   string
		qs   []float64
		eps  float64
		want int
	}{
		{"", nil, 1, 2*(3+3) + 1},
		{"g", nil, 0.3, 1 + 2*(3+3)},
		{"", []float64{0.5}, 7, 2*(3+1) + 1},
	} {
		d := build(t, s, Options{Epsilon: tc.eps, By: tc.by, Quantiles: tc.qs}, recs)
		res, err := d.Release(noise.NewInsecureSeeded(9))
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Parts) != tc.want {
			t.Errorf("by=%q: %d releases, want %d", tc.by, len(res.Parts), tc.want)
		}
		sum := 0.0
		for _, p := range res.Parts {
			if p.Epsilon > tc.eps/float64(tc.want) {
				t.Errorf("share %v > ε/k = %v", p.Epsilon, tc.eps/float64(tc.want))
			}
			sum += p.Epsilon
		}
		if sum > tc.eps || sum < tc.eps*(1-1e-12) || res.Epsilon != sum || res.Delta != 0 {
			t.Errorf("by=%q: reported ε = %v, δ = %v; recomputed Σεᵢ = %v of %v", tc.by, res.Epsilon, res.Delta, sum, tc.eps)
		}
		share := res.Parts[0].Epsilon
		for _, c := range res.Columns {
			if !c.Numeric {
				continue
			}
			w := 10.0
			if c.Column == "y" {
				w = 4
			}
			if c.Mean.Scale < w/share {
				t.Errorf("%s: sum noise scale %v < Δ/ε = %v", c.Column, c.Mean.Scale, w/share)
			}
			b, _ := accounting.LaplaceScale(share, w)
			if c.Mean.Scale != b {
				t.Errorf("%s: sum noise scale %v, want LaplaceScale = %v", c.Column, c.Mean.Scale, b)
			}
			if c.HistScale != 2/share*(1-1e-12) && math.Abs(c.HistScale-2/share) > 1e-9*2/share {
				t.Errorf("%s: histogram scale %v, want 2/ε = %v", c.Column, c.HistScale, 2/share)
			}
		}
	}
}

// TestExpMechDistribution: the sampler's frequencies match
// exp(ε u_j / 2Δ) / Σ (a chi-square test at false-alarm rate 1e-4).
func TestExpMechDistribution(t *testing.T) {
	u := []*big.Rat{big.NewRat(0, 1), big.NewRat(-1, 1), big.NewRat(-3, 1), big.NewRat(-1, 2), big.NewRat(-8, 1)}
	eps := 1.0
	src := noise.NewInsecureSeeded(42)
	n := 20000
	if testing.Short() {
		n = 5000
	}
	counts := make([]int, len(u))
	for range n {
		j, err := ExpMech(src, u, eps, 1)
		if err != nil {
			t.Fatal(err)
		}
		counts[j]++
	}
	w := make([]float64, len(u))
	tot := 0.0
	for j, v := range u {
		f, _ := v.Float64()
		w[j] = math.Exp(eps * f / 2)
		tot += w[j]
	}
	chi := 0.0
	for j := range u {
		e := float64(n) * w[j] / tot
		chi += (float64(counts[j]) - e) * (float64(counts[j]) - e) / e
	}
	// χ²(4) exceeds 23.51 with probability 1e-4.
	if chi > 23.51 {
		t.Errorf("χ² = %.2f > 23.51 (df 4, false alarm 1e-4): counts %v, weights %v", chi, counts, w)
	}
}

// TestBadInput: a --by or --columns name not in the schema, or a numeric
// --by, is refused with a clear error.
func TestBadInput(t *testing.T) {
	s := mustSchema(t, testSchema)
	for _, tc := range []struct {
		opt  Options
		want string
	}{
		{Options{Epsilon: 1, By: "nope"}, `--by "nope" is not a column of the schema`},
		{Options{Epsilon: 1, By: "x"}, `--by "x" is numeric`},
		{Options{Epsilon: 1, Columns: []string{"zz"}}, `column "zz" is not in the schema`},
		{Options{Epsilon: 0}, `ε = 0 must be positive`},
		{Options{Epsilon: 1, Quantiles: []float64{1.5}}, `quantile 1.5 must be in (0, 1)`},
	} {
		_, err := New(s, tc.opt)
		if err == nil || !contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.opt, err, tc.want)
		}
	}
}

func contains(s, sub string) bool {
	return len(sub) == 0 || (len(s) >= len(sub) && indexOf(s, sub) >= 0)
}

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}
