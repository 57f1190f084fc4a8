package describe

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/report"
	"github.com/dplearn/dplearn/schema"
)

// SuggestOptions configures Suggest. Everything here is public: column
// types, transforms, outer bounds and candidate levels come from the user,
// never from the data.
type SuggestOptions struct {
	Epsilon float64 // total ε
	Delta   float64 // total δ; needed only for categories without a public list
	Target  string  // the target column ("" leaves a placeholder)
	// Categorical names the categorical columns; every other column is
	// numeric (a non-number in it is an error).
	Categorical []string
	// Levels gives public candidate levels of categorical columns.
	Levels map[string][]string
	// Transforms applies a public transform to a numeric column first.
	Transforms map[string]schema.Transform
	// Outer gives a public outer bound [lo, hi] (in the column's own units)
	// that the quantile grid is restricted to.
	Outer map[string][2]float64
	// Coverage is the share of values the suggested range aims to hold
	// (default 0.995: the 0.25th and 99.75th percentiles).
	Coverage float64
	// Ignore lists columns to leave out of the schema (identifiers).
	Ignore []string
}

// Suggest weights: each bound of a numeric column spends 1 unit, and a
// numeric column without an outer bound ¼ more on its median (the anchor
// of the grid prior); a categorical column spends ¼.
const (
	weightMedian = 0.25
	weightBound  = 1.0
	weightCat    = 0.25
	// priorDecay is κ, the public log-weight per grid step away from the
	// DP median in a bound's exponential mechanism when the column has no
	// outer bound (a data-independent base measure given the released
	// median: it changes no sensitivity). It keeps the mechanism from
	// wandering to the many grid points of the default grid beyond the
	// data, which score only q·n below the best.
	priorDecay = 0.3
)

// NiceGrid returns the public default grid: 0 and ±{1, 1.2, 1.5, 2, 2.5,
// 3, 4, 5, 6, 8}·10^k for k = 0…8, and ±10^9, sorted. It depends on nothing
// but these constants. Columns on a finer scale (proportions) need an outer
// bound, whose grid adds evenly spaced points.
func NiceGrid() []float64 {
	mant := []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8}
	g := []float64{0}
	for k := 0; k <= 8; k++ {
		for _, m := range mant {
			v, _ := strconv.ParseFloat(fmt.Sprintf("%ge%d", m, k), 64)
			g = append(g, v, -v)
		}
	}
	g = append(g, 1e9, -1e9)
	sort.Float64s(g)
	return g
}

// gridFor returns the public grid of a column: the nice grid inside the
// outer bound [lo, hi] (transformed), plus 41 evenly spaced points and the
// ends; without an outer bound the nice grid.
func gridFor(outer *[2]float64) []float64 {
	if outer == nil {
		return NiceGrid()
	}
	lo, hi := outer[0], outer[1]
	g := []float64{lo, hi}
	for _, v := range NiceGrid() {
		if v > lo && v < hi {
			g = append(g, v)
		}
	}
	for j := 1; j < 40; j++ {
		g = append(g, lo+float64(j)*(hi-lo)/40)
	}
	sort.Float64s(g)
	return slices.Compact(g)
}

type numCol struct {
	name   string
	tr     schema.Transform
	counts *gridCounts
	outer  *[2]float64
}

type catCol struct {
	name   string
	counts map[string]int64
	levels []string // public candidates, or nil
}

// Suggester accumulates a table's columns for Suggest.
type Suggester struct {
	opt    SuggestOptions
	header []string
	kind   []int // per header column: index into nums (≥0), cats (−2−i), or ignored (−1)
	nums   []*numCol
	cats   []*catCol
	rows   int64
}

// NewSuggester checks the options against the header.
func NewSuggester(header []string, opt SuggestOptions) (*Suggester, error) {
	if !(opt.Epsilon > 0) || math.IsInf(opt.Epsilon, 0) {
		return nil, fmt.Errorf("suggest: ε = %v must be positive and finite", opt.Epsilon)
	}
	if !(opt.Delta >= 0 && opt.Delta < 1) {
		return nil, fmt.Errorf("suggest: δ = %v must be in [0, 1)", opt.Delta)
	}
	if opt.Coverage == 0 {
		opt.Coverage = 0.995
	}
	if !(opt.Coverage > 0 && opt.Coverage < 1) {
		return nil, fmt.Errorf("suggest: coverage %v must be in (0, 1)", opt.Coverage)
	}
	s := &Suggester{opt: opt}
	has := map[string]bool{}
	for _, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if has[h] {
			return nil, fmt.Errorf("suggest: the header names column %q twice", h)
		}
		has[h] = true
		s.header = append(s.header, h)
	}
	check := func(what string, names []string) error {
		for _, n := range names {
			if !has[n] {
				return fmt.Errorf("suggest: %s names %q, which is not a column of the data (it has %s)", what, n, strings.Join(s.header, ", "))
			}
		}
		return nil
	}
	if opt.Target != "" {
		if err := check("--target", []string{opt.Target}); err != nil {
			return nil, err
		}
	}
	if err := check("--categorical", opt.Categorical); err != nil {
		return nil, err
	}
	if err := check("--ignore", opt.Ignore); err != nil {
		return nil, err
	}
	for _, m := range []map[string]bool{keys(opt.Levels), keys(opt.Transforms), keys(opt.Outer)} {
		if err := check("an option", slices.Sorted(mapKeys(m))); err != nil {
			return nil, err
		}
	}
	for n := range opt.Levels {
		if !slices.Contains(opt.Categorical, n) {
			return nil, fmt.Errorf("suggest: levels are given for %q, which is not listed as categorical", n)
		}
	}
	for _, h := range s.header {
		switch {
		case slices.Contains(opt.Ignore, h):
			s.kind = append(s.kind, -1)
		case slices.Contains(opt.Categorical, h):
			if _, ok := opt.Transforms[h]; ok {
				return nil, fmt.Errorf("suggest: column %q is categorical and takes no transform", h)
			}
			if _, ok := opt.Outer[h]; ok {
				return nil, fmt.Errorf("suggest: column %q is categorical and takes no outer bound", h)
			}
			lv := opt.Levels[h]
			if lv == nil && opt.Delta == 0 {
				return nil, fmt.Errorf("suggest: categorical column %q has no public list of levels: give one (--levels %s=a,b,c), or a δ > 0 so that levels found in the data can be released by a thresholded noisy count", h, h)
			}
			s.kind = append(s.kind, -2-len(s.cats))
			s.cats = append(s.cats, &catCol{name: h, counts: map[string]int64{}, levels: lv})
		default:
			tr := opt.Transforms[h]
			var outer *[2]float64
			if o, ok := opt.Outer[h]; ok {
				lo, err1 := applyTransform(tr, o[0])
				hi, err2 := applyTransform(tr, o[1])
				if err1 != nil || err2 != nil || !(lo < hi) {
					return nil, fmt.Errorf("suggest: outer bound [%v, %v] of %q is not an interval on the %q scale", o[0], o[1], h, tr)
				}
				outer = &[2]float64{lo, hi}
			}
			s.kind = append(s.kind, len(s.nums))
			s.nums = append(s.nums, &numCol{name: h, tr: tr, counts: newGridCounts(gridFor(outer)), outer: outer})
		}
	}
	if len(s.nums)+len(s.cats) == 0 {
		return nil, fmt.Errorf("suggest: no columns left to describe")
	}
	return s, nil
}

func keys[V any](m map[string]V) map[string]bool {
	out := map[string]bool{}
	for k := range m {
		out[k] = true
	}
	return out
}

func mapKeys(m map[string]bool) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func applyTransform(t schema.Transform, v float64) (float64, error) {
	switch t {
	case schema.TransformNone:
		return v, nil
	case schema.TransformLog:
		if v <= 0 {
			return 0, fmt.Errorf("log of %v", v)
		}
		return math.Log(v), nil
	case schema.TransformLog1p:
		if v <= -1 {
			return 0, fmt.Errorf("log1p of %v", v)
		}
		return math.Log1p(v), nil
	case schema.TransformSqrt:
		if v < 0 {
			return 0, fmt.Errorf("sqrt of %v", v)
		}
		return math.Sqrt(v), nil
	}
	return 0, fmt.Errorf("unknown transform %q", t)
}

func isMissing(s string) bool {
	return slices.Contains(schema.MissingTokens, strings.TrimSpace(s))
}

// Add adds one record's fields (in header order). Missing values are left
// out of their column (a column's number of values is private and only
// enters through its scores, whose sensitivity allows it).
func (s *Suggester) Add(fields []string) error {
	if len(fields) != len(s.header) {
		return fmt.Errorf("suggest: record %d has %d fields, the header %d", s.rows+1, len(fields), len(s.header))
	}
	s.rows++
	for i, f := range fields {
		k := s.kind[i]
		switch {
		case k == -1:
		case k >= 0:
			c := s.nums[k]
			if isMissing(f) {
				continue
			}
			v, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("suggest: record %d, column %q: %q is not a finite number; list the column with --categorical if it is categorical, or fix the value", s.rows, c.name, f)
			}
			if v, err = applyTransform(c.tr, v); err != nil {
				return fmt.Errorf("suggest: record %d, column %q: %v outside the domain of its transform (%v)", s.rows, c.name, f, err)
			}
			if c.outer != nil {
				v = min(max(v, c.outer[0]), c.outer[1])
			}
			c.counts.add(v)
		default:
			c := s.cats[-2-k]
			if isMissing(f) {
				continue
			}
			c.counts[strings.TrimSpace(f)]++
		}
	}
	return nil
}

// SuggestPart is the spend of one column.
type SuggestPart struct {
	Column  string  `json:"column"`
	What    string  `json:"what"`
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Scale is the discrete Laplace scale of a categorical column's counts
	// (0 for the exponential mechanism).
	Scale float64 `json:"noise_scale,omitempty"`
}

// Suggestion is the result of Suggest.
type Suggestion struct {
	Schema     *schema.Schema
	Parts      []SuggestPart
	Epsilon    float64
	Delta      float64
	Accountant string
	Noise      string
}

// Suggest releases the bounds and levels and returns the schema.
//
// A numeric column spends ε_m = ½u on its median and ε_b = u on each bound
// (u the budget unit): each is the exponential mechanism over the column's
// public grid with score −dist(q·n, [#{x < g}, #{x ≤ g}]) (sensitivity 1
// under replace-one, also with n the private number of non-missing values,
// see quantileScores), so each is ε-DP. The bounds' mechanisms add a
// public base measure −κ·|j − j_m| (grid steps from the released median
// j_m), which does not depend on the data beyond the released median and
// so changes no sensitivity (adaptive composition); it keeps the
// mechanism from wandering to the many grid points beyond the data that
// score only q·n below the best.
//
// A categorical column spends ε_c = ½u: with a public list of candidate
// levels, one noisy count per candidate (exact discrete Laplace of scale
// 2/ε_c: replacing one record moves two counts by 1) keeps the candidates
// whose noisy count exceeds the 95% half-width (ε_c-DP). Without a list,
// the levels present in the data get the same noisy counts and a level is
// released when its noisy count is at least τ = 1 + k with k the smallest
// integer such that P(Z ≥ k) = α^k/(1+α) ≤ δ_c (α = e^(−ε_c/2)): a level
// that holds one record in one table and none in its neighbour is
// released with probability at most δ_c, and all other levels behave as
// in the ε_c-DP histogram (the stability-based histogram: Korolova et al.
// 2009, Bun, Nissim & Stemmer 2016), so the column is (ε_c, δ_c)-DP with
// δ_c = δ/(number of such columns). Released levels are ordered by noisy
// count (the first, the most frequent, is the reference level) and the
// column gets "unknown": "reference" so that a suppressed rare level is
// read as the reference level.
//
// The guarantee is the basic composition of the parts (accounting.BasicComposition).
func (s *Suggester) Suggest(src noise.Source) (*Suggestion, error) {
	if s.rows == 0 {
		return nil, errNoRows
	}
	units := 0.0
	thresholded := 0
	for _, c := range s.nums {
		units += 2 * weightBound
		if c.outer == nil {
			units += weightMedian
		}
	}
	for _, c := range s.cats {
		units += weightCat
		if c.levels == nil {
			thresholded++
		}
	}
	unit := s.opt.Epsilon / units
	epsM := math.Nextafter(unit*weightMedian, 0)
	epsB := math.Nextafter(unit*weightBound, 0)
	epsC := math.Nextafter(unit*weightCat, 0)
	spentNow := func() float64 {
		t := 0.0
		for _, c := range s.nums {
			t += 2 * epsB
			if c.outer == nil {
				t += epsM
			}
		}
		for range s.cats {
			t += epsC
		}
		return t
	}
	for i := 0; spentNow() > s.opt.Epsilon; i++ {
		if i == 64 {
			return nil, fmt.Errorf("suggest: internal error: the budget split %v exceeds ε = %v", spentNow(), s.opt.Epsilon)
		}
		epsM, epsB, epsC = math.Nextafter(epsM, 0), math.Nextafter(epsB, 0), math.Nextafter(epsC, 0)
	}
	deltaC := 0.0
	if thresholded > 0 {
		deltaC = s.opt.Delta / float64(thresholded)
		for deltaC*float64(thresholded) > s.opt.Delta {
			deltaC = math.Nextafter(deltaC, 0)
		}
	}
	out := &Suggestion{Schema: &schema.Schema{}, Noise: src.String()}
	feats := map[string]schema.Feature{}
	qlo, qhi := (1-s.opt.Coverage)/2, (1+s.opt.Coverage)/2
	for _, c := range s.nums {
		n := c.counts.n()
		grid := c.counts.grid
		jm := -1
		if c.outer == nil {
			var err error
			if jm, err = ExpMech(src, quantileScores(c.counts, 0.5, n), epsM, 1); err != nil {
				return nil, err
			}
			out.Parts = append(out.Parts, SuggestPart{Column: c.name, What: "median (exponential mechanism; anchors the default grid)", Epsilon: epsM})
		}
		bound := func(q float64) (int, error) {
			u := quantileScores(c.counts, q, n)
			if jm >= 0 {
				// Fold the prior into the scores: u_j − (2/ε_b)·κ·|j − j_m|
				// gives weights exp(ε_b u_j/2 − κ|j − j_m|).
				k := new(big.Rat).SetFloat64(2 * priorDecay / epsB)
				for j := range u {
					d := new(big.Rat).SetInt64(int64(abs(j - jm)))
					u[j].Sub(u[j], d.Mul(d, k))
				}
			}
			return ExpMech(src, u, epsB, 1)
		}
		jl, err := bound(qlo)
		if err != nil {
			return nil, err
		}
		jh, err := bound(qhi)
		if err != nil {
			return nil, err
		}
		if jl > jh {
			jl, jh = jh, jl
		}
		if jl == jh {
			if jh+1 < len(grid) {
				jh++
			} else {
				jl--
			}
		}
		lo, hi := grid[jl], grid[jh]
		spent, gridName := 2*epsB, "the public outer bound's grid"
		if jm >= 0 {
			spent, gridName = spent+epsM, "the default public grid, anchored at a DP median"
		}
		note := fmt.Sprintf("DP-estimated by dplearn schema suggest: the %s and %s percentiles, exponential mechanism on %s, ε = %s",
			pct(qlo), pct(qhi), gridName, report.Up(spent))
		out.Parts = append(out.Parts,
			SuggestPart{Column: c.name, What: "lower bound (exponential mechanism)", Epsilon: epsB},
			SuggestPart{Column: c.name, What: "upper bound (exponential mechanism)", Epsilon: epsB})
		feats[c.name] = schema.Feature{Name: c.name, Transform: c.tr, Range: &[2]float64{lo, hi}, Estimated: note}
	}
	for _, c := range s.cats {
		levels, scale, err := releaseLevels(src, c, epsC, deltaC)
		if err != nil {
			return nil, err
		}
		d := 0.0
		how := "noisy counts of the public candidate levels"
		if c.levels == nil {
			d = deltaC
			how = "stability-based histogram (thresholded noisy counts)"
		}
		out.Parts = append(out.Parts, SuggestPart{Column: c.name, What: "levels: " + how, Epsilon: epsC, Delta: d, Scale: scale})
		if len(levels) == 0 {
			out.Parts[len(out.Parts)-1].What += " (none released: column left out)"
			continue
		}
		note := fmt.Sprintf("DP-estimated by dplearn schema suggest: %s, ordered by noisy count, ε = %s", how, report.Up(epsC))
		if d > 0 {
			note += ", δ = " + report.Up(d)
		}
		feats[c.name] = schema.Feature{Name: c.name, Categories: levels, Unknown: "reference", Estimated: note}
	}
	// Assemble in header order.
	for _, h := range s.header {
		f, ok := feats[h]
		if !ok {
			continue
		}
		if h == s.opt.Target {
			t := schema.Target{Name: h, Transform: f.Transform, Range: f.Range, Estimated: f.Estimated}
			if f.Categorical() {
				if len(f.Categories) != 2 {
					return nil, fmt.Errorf("suggest: target %q: %d levels released; a binary target needs exactly two", h, len(f.Categories))
				}
				t.Negative, t.Positive = f.Categories[0], f.Categories[1]
			}
			out.Schema.Target = t
			continue
		}
		out.Schema.Features = append(out.Schema.Features, f)
	}
	var parts []accounting.EpsDelta
	for _, p := range out.Parts {
		parts = append(parts, accounting.EpsDelta{Epsilon: p.Epsilon, Delta: p.Delta})
	}
	total, err := accounting.BasicComposition(parts...)
	if err != nil {
		return nil, err
	}
	out.Epsilon, out.Delta = total.Epsilon, total.Delta
	out.Accountant = fmt.Sprintf("basic composition of %d releases (ε = Σ εᵢ, δ = Σ δᵢ)", len(parts))
	return out, nil
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

func pct(q float64) string {
	return strconv.FormatFloat(100*q, 'g', 4, 64) + "th"
}

// levelThreshold returns τ = 1 + k, k the smallest integer with
// P(Z ≥ k) = α^k/(1+α) ≤ δ for the discrete Laplace of scale t.
func levelThreshold(t, delta float64) int64 {
	alpha := math.Exp(-1 / t)
	k := int64(math.Ceil(t * math.Log(1/(delta*(1+alpha)))))
	if k < 0 {
		k = 0
	}
	for k > 0 && math.Pow(alpha, float64(k-1))/(1+alpha) <= delta {
		k--
	}
	for math.Pow(alpha, float64(k))/(1+alpha) > delta {
		k++
	}
	return 1 + k
}

func releaseLevels(src noise.Source, c *catCol, eps, delta float64) ([]string, float64, error) {
	cands := c.levels
	if cands == nil {
		for l := range c.counts {
			cands = append(cands, l)
		}
		sort.Strings(cands) // the order of noise draws must not depend on map order
	}
	if len(cands) == 0 {
		return nil, 0, nil
	}
	counts := make([]int64, len(cands))
	for i, l := range cands {
		counts[i] = c.counts[l]
	}
	scale, half, err := countRelease(src, counts, eps, levelSens)
	if err != nil {
		return nil, 0, err
	}
	_ = half
	var thr int64 = 1 // public list: keep candidates with a positive noisy count
	if c.levels == nil {
		thr = levelThreshold(scale, delta)
	}
	type lc struct {
		l string
		c int64
	}
	var keep []lc
	for i, l := range cands {
		if counts[i] >= thr {
			keep = append(keep, lc{l, counts[i]})
		}
	}
	sort.SliceStable(keep, func(a, b int) bool { return keep[a].c > keep[b].c })
	var out []string
	for _, k := range keep {
		out = append(out, k.l)
	}
	return out, scale, nil
}

// levelSens is the L1 sensitivity of a column's level counts: replacing one
// record moves one count down and another up.
const levelSens = 2

// Marshal writes the suggested schema as JSON, one column per line.
func (s *Suggestion) Marshal() ([]byte, error) {
	line := func(v any) (string, error) {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(v); err != nil {
			return "", err
		}
		return strings.TrimSpace(b.String()), nil
	}
	var buf bytes.Buffer
	t, err := line(s.Schema.Target)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(&buf, "{\n \"target\": %s,\n \"features\": [\n", t)
	for i, f := range s.Schema.Features {
		l, err := line(f)
		if err != nil {
			return nil, err
		}
		sep := ","
		if i == len(s.Schema.Features)-1 {
			sep = ""
		}
		fmt.Fprintf(&buf, "  %s%s\n", l, sep)
	}
	buf.WriteString(" ]\n}\n")
	return buf.Bytes(), nil
}
