package synth

import (
	"errors"
	"math"
	"math/big"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/schema"
)

// Statistical tests here use a per-assertion false-alarm rate of 1e-3
// (two-sided z critical value 3.2905, χ² and KS critical values at 1e-3)
// and fixed seeds, so CI is deterministic.
const zCrit = 3.2905

// tiny is a two-axis domain: a level axis {0, 1} and [0, 1] in 4 bins.
func tiny() *Domain {
	return &Domain{Axes: []Axis{
		{Name: "a", Cols: 1, Levels: [][]float64{{0}, {1}}},
		{Name: "b", Lo: 0, Hi: 1, Bins: 4},
	}}
}

func TestBuildKnownAnswer(t *testing.T) {
	d := tiny()
	rows := []float64{0, 0.1, 0, 0.1, 1, 0.9, 0, 0.3, 1, 1.0}
	h, err := Build(d, rows)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(h.Cells, []uint64{0, 1, 7}) || !slices.Equal(h.Counts, []int64{2, 1, 2}) || h.N != 5 {
		t.Fatalf("histogram %v %v N=%d, want cells [0 1 7] counts [2 1 2] N=5", h.Cells, h.Counts, h.N)
	}
	rep := make([]float64, 2)
	for _, c := range []struct {
		cell uint64
		want []float64
	}{{0, []float64{0, 0.125}}, {1, []float64{0, 0.375}}, {7, []float64{1, 0.875}}, {4, []float64{1, 0.125}}} {
		d.Rep(c.cell, rep)
		if !slices.Equal(rep, c.want) {
			t.Errorf("Rep(%d) = %v, want %v", c.cell, rep, c.want)
		}
		got, err := d.Cell(rep)
		if err != nil || got != c.cell {
			t.Errorf("Cell(Rep(%d)) = %d, %v", c.cell, got, err)
		}
	}
	for _, c := range []struct {
		name string
		rows []float64
		want string
	}{
		{"undeclared level", []float64{0.5, 0.1}, `axis "a": value [0.5] is not one of its 2 declared levels`},
		{"above range", []float64{0, 1.5}, `axis "b": value 1.5 is outside its public range [0, 1]`},
		{"NaN", []float64{1, math.NaN()}, `axis "b": value NaN is outside`},
		{"ragged", []float64{0, 0.1, 1}, "not whole rows"},
	} {
		if _, err := Build(d, c.rows); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

// TestHistogramSensitivityExhaustive enumerates every dataset of 3 rows on a
// 3-cell domain and every replace-one neighbour: the largest L1 distance of
// the count vectors is exactly HistogramSensitivity.
func TestHistogramSensitivityExhaustive(t *testing.T) {
	const cells, n = 3, 3
	worst := 0
	var rec func(ds []int)
	rec = func(ds []int) {
		if len(ds) == n {
			for i := range ds {
				for v := 0; v < cells; v++ {
					nb := slices.Clone(ds)
					nb[i] = v
					var h1, h2 [cells]int
					for j := range ds {
						h1[ds[j]]++
						h2[nb[j]]++
					}
					l1 := 0
					for c := range h1 {
						l1 += max(h1[c]-h2[c], h2[c]-h1[c])
					}
					worst = max(worst, l1)
				}
			}
			return
		}
		for v := 0; v < cells; v++ {
			rec(append(ds, v))
		}
	}
	rec(nil)
	if worst != HistogramSensitivity {
		t.Fatalf("worst L1 distance %d, HistogramSensitivity %d", worst, HistogramSensitivity)
	}
}

func TestFromSchemaMatchesEncoder(t *testing.T) {
	s, err := schema.Parse([]byte(`{
	  "target": {"name": "y", "positive": "yes"},
	  "features": [
	    {"name": "age", "range": [0, 100]},
	    {"name": "colour", "categories": ["red", "green", "blue"]}
	  ]}`))
	if err != nil {
		t.Fatal(err)
	}
	d, err := FromSchema(s, func(binned int, levels float64) int {
		if binned != 1 || levels != 1*3*2 {
			t.Errorf("bins rule called with %d binned axes and %v level cells, want 1 and 6", binned, levels)
		}
		return 5
	})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := d.Cells(); m != 1*5*3*2 {
		t.Fatalf("cells %d, want 30", m)
	}
	enc, err := s.NewEncoder([]string{"age", "colour", "y"}, schema.EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	row := make([]float64, enc.Width())
	rep := make([]float64, enc.Width())
	seen := map[uint64]bool{}
	for _, rec := range [][]string{{"0", "red", "no"}, {"100", "blue", "yes"}, {"37", "green", "yes"}, {"250", "red", "no"}} {
		f := make([][]byte, len(rec))
		for i := range rec {
			f[i] = []byte(rec[i])
		}
		if err := enc.Encode(f, row); err != nil {
			t.Fatal(err)
		}
		c, err := d.Cell(row)
		if err != nil {
			t.Fatalf("record %v: %v", rec, err)
		}
		seen[c] = true
		d.Rep(c, rep)
		// Level columns (intercept, indicators, target) are reproduced
		// exactly; the numeric column is within half a bin.
		for j := range row {
			tol := 0.0
			if j == 1 {
				tol = (d.Axes[1].Hi - d.Axes[1].Lo) / 10
			}
			if math.Abs(rep[j]-row[j]) > tol {
				t.Errorf("record %v column %d: representative %v, encoded %v", rec, j, rep[j], row[j])
			}
		}
	}
	if len(seen) != 4 { // 250 is clipped to 100: a different age bin from 0
		t.Errorf("cells seen: %v, want 4 distinct", seen)
	}
}

func TestLeiBins(t *testing.T) {
	for _, c := range []struct {
		n      int64
		binned int
		levels float64
		want   int
	}{
		{25000, 1, 1, 2469}, {25000, 2, 1, 50}, {25000, 3, 32, 4}, {25000, 10, 1, 2}, {100, 2, 1, 5}, {2, 1, 1, 2},
	} {
		if got := LeiBins(c.n, c.binned, c.levels); got != c.want {
			t.Errorf("LeiBins(%d, %d, %v) = %d, want %d", c.n, c.binned, c.levels, got, c.want)
		}
	}
}

// TestPerturbDense: the noise is calibrated to sensitivity 2 (the printed
// ε is the privacy loss of the worst neighbouring histograms, grid slack
// included, and not looser than 0.1%), and the noise on 2^14 cells has
// mean 0 and mean absolute value b (z-tests at 1e-3).
func TestPerturbDense(t *testing.T) {
	d := &Domain{Axes: []Axis{{Name: "u", Lo: 0, Hi: 1, Bins: 1 << 14}}}
	h := &Histogram{Cells: []uint64{3, 9}, Counts: []int64{5, 2}, N: 7}
	const eps = 1.0
	dense, err := PerturbDense(h, d, eps, noise.NewInsecureSeeded(4), 0)
	if err != nil {
		t.Fatal(err)
	}
	b := dense.Scale
	if want, _ := accounting.LaplaceScale(eps, 2); b != want {
		t.Fatalf("scale %v, want LaplaceScale(ε, 2) = %v", b, want)
	}
	loss := (HistogramSensitivity + noise.LaplaceGridSlack(b, len(dense.Counts))) / b
	if loss > eps || HistogramSensitivity/b < eps*(1-1e-3) {
		t.Errorf("privacy loss of the worst neighbours %v, want ≤ ε = %v and within 0.1%%", loss, eps)
	}
	var sum, sumAbs float64
	for c, v := range dense.Counts {
		z := v
		switch c {
		case 3:
			z -= 5
		case 9:
			z -= 2
		}
		sum += z
		sumAbs += math.Abs(z)
	}
	n := float64(len(dense.Counts))
	if z := sum / n / (math.Sqrt2 * b / math.Sqrt(n)); math.Abs(z) > zCrit {
		t.Errorf("noise mean z = %.2f", z)
	}
	if z := (sumAbs/n - b) / (b / math.Sqrt(n)); math.Abs(z) > zCrit {
		t.Errorf("noise mean |·| z = %.2f (want b = %v)", z, b)
	}
	_, err = PerturbDense(h, d, eps, noise.NewInsecureSeeded(4), 1000)
	if !errors.Is(err, ErrTooManyCells) || !strings.Contains(err.Error(), "MaxCells") || !strings.Contains(err.Error(), "16384 cells") {
		t.Errorf("over the cell limit: %v", err)
	}
}

// TestFilterKnownAnswer: at ε = 200 (α = e^-100) the geometric noise is 0
// except with probability < 10^-40, so the filter publishes exactly the
// cells with count ≥ θ, with their counts, and no empty cell.
func TestFilterKnownAnswer(t *testing.T) {
	h := &Histogram{Cells: []uint64{2, 5, 11, 40}, Counts: []int64{1, 3, 2, 7}, N: 13}
	for _, c := range []struct {
		theta int64
		want  []Entry
	}{
		{2, []Entry{{5, 3, 3}, {11, 2, 2}, {40, 7, 7}}},
		{3, []Entry{{5, 3, 3}, {40, 7, 7}}},
		{8, nil},
	} {
		f, err := NewFilter(200, c.theta, 1<<40)
		if err != nil {
			t.Fatal(err)
		}
		got, err := f.Apply(h, noise.NewInsecureSeeded(9))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("θ=%d: %v, want %v", c.theta, got, c.want)
		}
	}
}

// TestFilterEmptyCells checks the thresholded-zero sampling in distribution
// on a 10^12-cell domain (never materialised): the number of passing empty
// cells against Binomial(M₀, p′) (z-test), p′ against p = α^θ/(1+α)
// (relative 10⁻¹²), their values θ + Geometric(α) (χ²), their positions
// uniform over the empty cells (KS), never on a non-empty cell. Each
// assertion has false-alarm rate 1e-3.
func TestFilterEmptyCells(t *testing.T) {
	const eps = 1.0
	const m = uint64(1_000_000_000_000)
	alpha := math.Exp(-eps / 2)
	theta := ThresholdFor(eps, m, 3000)
	f, err := NewFilter(eps, theta, m)
	if err != nil {
		t.Fatal(err)
	}
	p := math.Pow(alpha, float64(theta)) / (1 + alpha)
	if math.Abs(f.PZero/p-1) > 1e-12 {
		t.Fatalf("p′ = %v, p = %v", f.PZero, p)
	}
	// Non-empty cells at both ends and in the middle, counts 1 (they pass
	// only with probability α^{θ−1}/(1+α), tiny at this θ).
	nonEmpty := []uint64{0, 1, 2, 500_000_000_000, m - 2, m - 1}
	h := &Histogram{Cells: nonEmpty, Counts: []int64{1, 1, 1, 1, 1, 1}, N: 6}
	isNonEmpty := map[uint64]bool{}
	for _, c := range nonEmpty {
		isNonEmpty[c] = true
	}
	const runs = 8
	var total float64
	var vals []int64
	var pos []float64
	src := noise.NewInsecureSeeded(21)
	for r := 0; r < runs; r++ {
		out, err := f.Apply(h, src)
		if err != nil {
			t.Fatal(err)
		}
		prev := int64(-1)
		for _, e := range out {
			if isNonEmpty[e.Cell] {
				continue
			}
			if e.Cell >= m || int64(e.Cell) <= prev {
				t.Fatalf("empty-cell survivors not increasing inside the domain: %d after %d", e.Cell, prev)
			}
			prev = int64(e.Cell)
			total++
			vals = append(vals, e.Value-theta)
			pos = append(pos, float64(e.Cell)/float64(m))
		}
	}
	m0 := float64(m) - float64(len(nonEmpty))
	mean := runs * m0 * f.PZero
	if z := (total - mean) / math.Sqrt(mean*(1-f.PZero)); math.Abs(z) > zCrit {
		t.Errorf("passing empty cells: %v, expected %.1f (z = %.2f)", total, mean, z)
	}
	// χ² of the excess over θ against Geometric(α), tail pooled at 12.
	const top = 12
	obs := make([]float64, top+1)
	for _, v := range vals {
		obs[min(v, top)]++
	}
	var chi float64
	for k := 0; k <= top; k++ {
		pk := (1 - alpha) * math.Pow(alpha, float64(k))
		if k == top {
			pk = math.Pow(alpha, top)
		}
		e := total * pk
		chi += (obs[k] - e) * (obs[k] - e) / e
	}
	if crit := 32.91; chi > crit { // χ²(12) at 1e-3
		t.Errorf("values: χ² = %.1f > %.1f", chi, crit)
	}
	sort.Float64s(pos)
	var dks float64
	for i, x := range pos {
		dks = math.Max(dks, math.Max(x-float64(i)/total, float64(i+1)/total-x))
	}
	if crit := math.Sqrt(-math.Log(1e-3/2)/2) / math.Sqrt(total); dks > crit {
		t.Errorf("positions: KS D = %.4f > %.4f", dks, crit)
	}
}

// cellLaws returns one cell's output law for true counts 0..cmax: the
// probability of ⊥ (not published) and of each value θ..θ+vmax, for the
// geometric noise with parameter a and the empty cell surviving with pz.
func cellLaws(a, pz float64, theta int64, cmax, vmax int) (bot []float64, val [][]float64) {
	geo := func(x int64) float64 { return (1 - a) / (1 + a) * math.Pow(a, math.Abs(float64(x))) }
	for c := 0; c <= cmax; c++ {
		v := make([]float64, vmax+1)
		pass := 0.0
		for i := range v {
			x := theta + int64(i)
			if c == 0 {
				v[i] = pz * (1 - a) * math.Pow(a, float64(i))
			} else {
				v[i] = geo(x - int64(c))
			}
			pass += v[i]
		}
		// P(published) in closed form, so that ⊥ is exact.
		if c == 0 {
			pass = pz
		} else if t := theta - int64(c); t >= 1 {
			pass = math.Pow(a, float64(t)) / (1 + a) // P(X ≥ t)
		} else {
			pass = 1 - math.Pow(a, float64(1-t))/(1+a) // 1 − P(X ≥ 1 − t)
		}
		bot = append(bot, 1-pass)
		val = append(val, v)
	}
	return bot, val
}

// worstLoss is the largest privacy loss between the laws of counts c and
// c+1 (either direction, over every outcome), times 2: replace-one moves
// two cells by one.
func worstLoss(bot []float64, val [][]float64) float64 {
	w := 0.0
	for c := 0; c+1 < len(bot); c++ {
		w = math.Max(w, math.Abs(math.Log(bot[c]/bot[c+1])))
		for i := range val[c] {
			w = math.Max(w, math.Abs(math.Log(val[c][i]/val[c+1][i])))
		}
	}
	return 2 * w
}

// TestFilterPrivacyLossIsExact evaluates the implemented per-cell laws (the
// empty cell with the implemented p′) and checks that the worst
// neighbouring pair loses exactly the printed ε, for several (ε, θ), and
// that noise calibrated to sensitivity 1 (the add/remove relation: α =
// e^{−ε}) would lose 2ε under replace-one: the check can fail.
func TestFilterPrivacyLossIsExact(t *testing.T) {
	for _, c := range []struct {
		eps   float64
		theta int64
	}{{0.1, 2}, {0.8, 2}, {0.8, 9}, {3.2, 4}, {1, 30}} {
		f, err := NewFilter(c.eps, c.theta, 1<<30)
		if err != nil {
			t.Fatal(err)
		}
		a := math.Exp(-c.eps / 2)
		bot, val := cellLaws(a, f.PZero, c.theta, int(c.theta)+6, 60)
		if l := worstLoss(bot, val); math.Abs(l-c.eps) > 1e-9*c.eps {
			t.Errorf("ε=%v θ=%d: worst loss %.12g, want the printed ε", c.eps, c.theta, l)
		}
		a1 := math.Exp(-c.eps)
		bot, val = cellLaws(a1, math.Pow(a1, float64(c.theta))/(1+a1), c.theta, int(c.theta)+6, 60)
		if l := worstLoss(bot, val); l < 1.99*c.eps {
			t.Errorf("ε=%v θ=%d: sensitivity-1 noise loses %.6g, want 2ε", c.eps, c.theta, l)
		}
	}
	if _, err := NewFilter(1, 1, 100); err == nil {
		t.Error("θ = 1 accepted")
	}
}

func TestThresholdFor(t *testing.T) {
	for _, c := range []struct {
		eps    float64
		m      uint64
		target float64
	}{{0.8, 1 << 20, 25000}, {0.8, 1e12, 25000}, {0.1, 1e12, 1000}, {3.2, 1 << 40, 10}, {1, 10, 100}} {
		th := ThresholdFor(c.eps, c.m, c.target)
		a := math.Exp(-c.eps / 2)
		exp := func(th int64) float64 { return float64(c.m) * math.Pow(a, float64(th)) / (1 + a) }
		if th < 2 || exp(th) > c.target*(1+1e-12) || (th > 2 && exp(th-1) <= c.target) {
			t.Errorf("ThresholdFor(%v, %d, %v) = %d: expected survivors %.4g (θ−1: %.4g)", c.eps, c.m, c.target, th, exp(th), exp(th-1))
		}
	}
}

// TestCertifiedBounds: the interval bounds bracket the float64 values and
// are far tighter than float64.
func TestCertifiedBounds(t *testing.T) {
	for _, x := range []float64{0, 1e-9, 0.3, 0.5, 1, 5, 50, 700} {
		lo, hi := expBounds(newF().SetFloat64(x))
		l, _ := lo.Float64()
		h, _ := hi.Float64()
		e := math.Exp(x)
		if !(l <= e*(1+3e-16) && h >= e*(1-3e-16)) {
			t.Errorf("exp(%v): [%v, %v] misses %v", x, l, h, e)
		}
		w := new(big.Float).Sub(hi, lo)
		w.Quo(w, lo)
		if r, _ := w.Float64(); r > 1e-60 {
			t.Errorf("exp(%v): relative width %g", x, r)
		}
	}
	for _, p := range []float64{1e-12, 1e-3, 0.2, 0.5} {
		u, _ := negLog1mUpper(newF().SetFloat64(p)).Float64()
		if want := -math.Log1p(-p); u < want*(1-3e-16) || u > want*(1+1e-14) {
			t.Errorf("−ln(1−%v): upper %v, want ≈ %v", p, u, want)
		}
	}
}

func TestPrioritySample(t *testing.T) {
	few := []Entry{{9, 3, 3}, {2, 5, 5}}
	got, tau, err := PrioritySample(few, 2, noise.NewInsecureSeeded(1))
	if err != nil || tau != 0 || !slices.Equal(got, []Entry{{2, 5, 5}, {9, 3, 3}}) {
		t.Fatalf("≤ s entries: %v τ=%v %v", got, tau, err)
	}
	if _, _, err := PrioritySample([]Entry{{1, 0, 0}}, 1, noise.NewInsecureSeeded(1)); err == nil {
		t.Error("zero weight accepted")
	}
	// Unbiased subset sums: 12 entries, s = 4, the subset of the first six
	// (true sum 21); mean over 20,000 samples, z-test at 1e-3.
	var es []Entry
	for i := 1; i <= 12; i++ {
		w := float64(i)
		if i == 12 {
			w = 100
		}
		es = append(es, Entry{Cell: uint64(i), Value: int64(w), Weight: w})
	}
	src := noise.NewInsecureSeeded(33)
	const reps = 20000
	var s1, s2 float64
	for r := 0; r < reps; r++ {
		got, tau, err := PrioritySample(es, 4, src)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 4 {
			t.Fatalf("kept %d, want 4", len(got))
		}
		sub := 0.0
		for _, e := range got {
			if e.Weight < tau || e.Weight < float64(e.Value) {
				t.Fatalf("adjusted weight %v below τ = %v or the weight %d", e.Weight, tau, e.Value)
			}
			if e.Cell <= 6 {
				sub += e.Weight
			}
		}
		s1 += sub
		s2 += sub * sub
	}
	mean := s1 / reps
	sd := math.Sqrt((s2/reps - mean*mean) / reps)
	if z := (mean - 21) / sd; math.Abs(z) > zCrit {
		t.Errorf("subset-sum estimate mean %.3f, want 21 (z = %.2f)", mean, z)
	}
}

// TestBadParameters: every refused parameter gets an error naming it.
func TestBadParameters(t *testing.T) {
	huge := &Domain{Axes: []Axis{{Name: "a", Lo: 0, Hi: 1, Bins: 1 << 31}, {Name: "b", Lo: 0, Hi: 1, Bins: 1 << 31}, {Name: "c", Lo: 0, Hi: 1, Bins: 2}}}
	for _, c := range []struct {
		name string
		err  error
		want string
	}{
		{"domain too large", func() error { _, err := huge.Cells(); return err }(), "MaxDomainCells = 2^62"},
		{"no axes", func() error { _, err := (&Domain{}).Cells(); return err }(), "no axes"},
		{"zero bins", func() error { _, err := (&Domain{Axes: []Axis{{Name: "z", Lo: 0, Hi: 1}}}).Cells(); return err }(), `axis "z": 0 bins`},
		{"bad interval", func() error {
			_, err := (&Domain{Axes: []Axis{{Name: "z", Lo: 1, Hi: 1, Bins: 2}}}).Cells()
			return err
		}(), "bad interval"},
		{"ragged level", func() error {
			_, err := (&Domain{Axes: []Axis{{Name: "l", Cols: 2, Levels: [][]float64{{0, 0}, {1}}}}}).Cells()
			return err
		}(), "level 1 has 1 values, want 2"},
		{"θ = 1", func() error { _, err := NewFilter(1, 1, 10); return err }(), "θ must be ≥ 2"},
		{"ε = 0", func() error { _, err := NewFilter(0, 2, 10); return err }(), "ε must be finite and > 0"},
		{"no cells", func() error { _, err := NewFilter(1, 2, 0); return err }(), "outside [1, 2^62]"},
		{"sample size", func() error { _, _, err := PrioritySample(nil, 0, noise.NewInsecureSeeded(1)); return err }(), "sample size must be ≥ 1"},
		{"unsorted histogram", func() error {
			f, _ := NewFilter(1, 2, 100)
			_, err := f.Apply(&Histogram{Cells: []uint64{5, 3}, Counts: []int64{1, 1}}, noise.NewInsecureSeeded(1))
			return err
		}(), "not sorted"},
		{"unit ball", func() error { _, err := UnitBall(1, false, func(int, float64) int { return 2 }); return err }(), "at least one feature"},
	} {
		if c.err == nil || !strings.Contains(c.err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to contain %q", c.name, c.err, c.want)
		}
	}
}

// TestUnitBall: the default grid bins every feature over [−1, 1] and has
// the target's levels when it is binary.
func TestUnitBall(t *testing.T) {
	d, err := UnitBall(4, true, func(binned int, levels float64) int {
		if binned != 3 || levels != 2 {
			t.Errorf("rule called with %d, %v; want 3 binned axes and 2 level cells", binned, levels)
		}
		return 3
	})
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := d.Cells(); m != 3*3*3*2 || d.Width() != 4 || d.Describe() != "x0 3 × x1 3 × x2 3 × y 2" {
		t.Errorf("grid %s, width %d", d.Describe(), d.Width())
	}
}

// TestFilterNonEmptyCells checks the filter on non-empty cells in
// distribution: 20,000 cells of count 3 in a domain with no empty cell,
// θ = 2, ε = 1. Each cell is published with value 3 + X (X two-sided
// geometric, α = e^{−1/2}) when that is ≥ 2, else dropped (probability
// P(X ≤ −2) = α²/(1+α)). χ² over {dropped, 2, …, 11, ≥ 12} at 1e-3.
func TestFilterNonEmptyCells(t *testing.T) {
	const n, c, theta = 20000, 3, 2
	h := &Histogram{N: n * c}
	for i := 0; i < n; i++ {
		h.Cells = append(h.Cells, uint64(i))
		h.Counts = append(h.Counts, c)
	}
	f, err := NewFilter(1, theta, n)
	if err != nil {
		t.Fatal(err)
	}
	out, err := f.Apply(h, noise.NewInsecureSeeded(44))
	if err != nil {
		t.Fatal(err)
	}
	a := math.Exp(-0.5)
	geo := func(x int) float64 { return (1 - a) / (1 + a) * math.Pow(a, math.Abs(float64(x))) }
	const top = 12
	obs := make([]float64, top+1) // index 0..1: dropped; v in 2..top
	exp := make([]float64, top+1)
	obs[0] = float64(n - len(out))
	for _, e := range out {
		if e.Value < theta {
			t.Fatalf("published value %d below θ", e.Value)
		}
		obs[min(e.Value, top)]++
	}
	exp[0] = n * a * a / (1 + a)
	for v := theta; v < top; v++ {
		exp[v] = n * geo(v-c)
	}
	exp[top] = n * math.Pow(a, top-c) / (1 + a)
	var chi float64
	df := -1
	for i := range exp {
		if exp[i] == 0 {
			continue
		}
		chi += (obs[i] - exp[i]) * (obs[i] - exp[i]) / exp[i]
		df++
	}
	if crit := 31.26; chi > crit { // χ²(11) at 1e-3
		t.Errorf("χ² = %.1f > %.1f (df %d); observed %v", chi, crit, df, obs)
	}
}

// TestSynthesizeKnownAnswer: noisy counts become weighted representatives;
// non-positive counts are dropped.
func TestSynthesizeKnownAnswer(t *testing.T) {
	d := tiny()
	dense := &Dense{Counts: []float64{2.5, -1, 0, 0, 0, 0, 0, 4}}
	s := dense.Synthesize(d)
	if !slices.Equal(s.Rows, []float64{0, 0.125, 1, 0.875}) || !slices.Equal(s.Weights, []float64{2.5, 4}) || s.Width != 2 || s.TotalWeight() != 6.5 {
		t.Errorf("dense: rows %v weights %v", s.Rows, s.Weights)
	}
	e := SynthesizeEntries(d, []Entry{{Cell: 5, Value: 3, Weight: 3.5}, {Cell: 2, Value: 2, Weight: 0}})
	if !slices.Equal(e.Rows, []float64{1, 0.375}) || !slices.Equal(e.Weights, []float64{3.5}) {
		t.Errorf("entries: rows %v weights %v", e.Rows, e.Weights)
	}
}

// fixedSource returns the same 8-byte word pattern: u_i = (k_i + 1)/2^53
// for the given k_i, in order.
type fixedSource struct{ words []uint64 }

func (f *fixedSource) Read(p []byte) (int, error) {
	for i := 0; i+8 <= len(p); i += 8 {
		w := f.words[0] << 11
		f.words = f.words[1:]
		for j := 0; j < 8; j++ {
			p[i+j] = byte(w >> (8 * j))
		}
	}
	return len(p), nil
}
func (*fixedSource) Secure() bool   { return false }
func (*fixedSource) String() string { return "fixed" }

// TestPrioritySampleKnownAnswer: with u = (½, ¼, 1, ¼) the weights
// (1, 3, 8, 1) have priorities w/u = (2, 12, 8, 4); s = 2 keeps cells 1 and
// 2, τ = 4 (the third priority), adjusted weights max(w, τ) = (4, 8).
func TestPrioritySampleKnownAnswer(t *testing.T) {
	const two53 = 1 << 53
	src := &fixedSource{words: []uint64{two53/2 - 1, two53/4 - 1, two53 - 1, two53/4 - 1}}
	es := []Entry{{0, 1, 1}, {1, 3, 3}, {2, 8, 8}, {3, 1, 1}}
	got, tau, err := PrioritySample(es, 2, src)
	if err != nil {
		t.Fatal(err)
	}
	if tau != 4 || !slices.Equal(got, []Entry{{1, 3, 4}, {2, 8, 8}}) {
		t.Errorf("sample %v τ = %v, want [{1 3 4} {2 8 8}] and τ = 4", got, tau)
	}
}
