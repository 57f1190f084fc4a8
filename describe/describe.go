// Package describe releases differentially private descriptive statistics
// of a table (counts, means, standard deviations, quantiles and histograms
// per column, optionally by a categorical column) and suggests a schema
// with DP-estimated bounds. Every release has its noise scale and a 95%
// error bar, and the releases compose to the printed guarantee by basic
// composition (package accounting).
//
// # Neighbours and N
//
// As everywhere in dplearn, neighbouring tables differ in one record
// replaced by another (bounded DP): the number of records read, N, is
// public. Each value is first mapped into its column's public schema
// bound (a numeric value transformed and clipped to [lo, hi]; a category
// to its level index, as package schema encodes it), so one record changes
// each column by at most the bound's width. When statistics are split by a
// categorical column (By), or when the schema drops records with missing
// values, the number of records in a group is private and released with
// noise; otherwise N is used as is.
//
// # Releases and sensitivities (w = hi − lo, c = (lo + hi)/2, G groups)
//
//   - Group counts (only when private): integer vector, L1 sensitivity 1
//     (G = 1: a record dropped or not) or 2 (G ≥ 2: one count down, one
//     up); exact discrete Laplace of scale Δ/ε (ε-DP, no slack).
//   - Centred sums S_g = Σ (x − c) per group: |x − c| ≤ w/2, so replacing a
//     record inside a group moves S_g by at most w, and moving it between
//     groups moves two sums by at most w/2 each: L1 sensitivity w. Laplace
//     noise by noise.AddLaplace with accounting.LaplaceScale (grid slack
//     included).
//   - Centred sums of squares Q_g = Σ (x − c)²: each term in [0, w²/4], so
//     L1 sensitivity w²/4 for G = 1 and w²/2 for G ≥ 2.
//   - Quantiles: values are rounded to the nearest point of a public grid of
//     M evenly spaced points on [lo, hi]; the q-quantile is the exponential
//     mechanism with score −dist(q·n, [#{x < g}, #{x ≤ g}]) (sensitivity 1,
//     see quantileScores). With G ≥ 2 one record can change two groups,
//     so each group's mechanism runs at half the release's ε.
//   - Histograms: integer counts of (group, bin) cells, L1 sensitivity 2
//     (one cell down, one up), exact discrete Laplace of scale 2/ε. A
//     numeric column has Bins equal bins on [lo, hi]; a categorical one its
//     declared levels.
//
// # Error bars (95%)
//
// Counts: ± k with k the smallest integer such that P(|Z| > k) ≤ 5% for
// the discrete Laplace Z. A sum: ± g(k + ½) on the Laplace grid g. A mean
// with public N: c + S̃/N ± h_S/N. With private n, the mean's bar is the
// range of c + s/m over the box s ∈ S̃ ± h_S, m ∈ ñ ± h_n with each bar at
// 97.5% (union bound); the standard deviation's bar is the range of
// √(q/m − (s/m)²) over the box of S, Q (and n) with each side at
// 1 − 5%/3 (or 1 − 5%/2 with public N). A quantile's bar is in rank: with
// probability ≥ 95% the released grid point is a q′-quantile of the
// grid-rounded data for some |q′ − q| ≤ t/n, t = (2/ε)·ln(M/0.05) (the
// exponential mechanism's utility bound, Dwork & Roth Theorem 3.11).
//
// # Composition
//
// The total ε is split evenly over the releases (each share rounded down so
// the shares sum to at most ε) and the guarantee is their basic composition
// (accounting.BasicComposition): pure ε-DP, δ = 0.
package describe

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dplearn/dplearn/schema"
)

// Column is one schema column as describe sees it.
type Column struct {
	Name      string
	Target    bool
	Numeric   bool
	Transform schema.Transform
	Lo, Hi    float64  // numeric: the public range (transformed scale)
	Levels    []string // categorical: the levels, in encoding order
}

// Columns lists the schema's features, then its target, with their public
// bounds. A binary target has the levels (negative, positive).
func Columns(s *schema.Schema) []Column {
	var cols []Column
	for _, f := range s.Features {
		c := Column{Name: f.Name, Transform: f.Transform}
		if f.Categorical() {
			c.Levels = slices.Clone(f.Categories)
		} else {
			c.Numeric, c.Lo, c.Hi = true, f.Range[0], f.Range[1]
		}
		cols = append(cols, c)
	}
	t := s.Target
	c := Column{Name: t.Name, Target: true, Transform: t.Transform}
	switch {
	case t.Range != nil:
		c.Numeric, c.Lo, c.Hi = true, t.Range[0], t.Range[1]
	case t.Positive != "":
		neg := t.Negative
		if neg == "" {
			neg = "not " + t.Positive
		}
		c.Levels = []string{neg, t.Positive}
	case t.Above != nil:
		c.Levels = []string{fmt.Sprintf("≤ %g", *t.Above), fmt.Sprintf("> %g", *t.Above)}
	default:
		c.Levels = []string{"0", "1"}
	}
	return append(cols, c)
}

// decoder maps an encoded row (package schema's layout: intercept,
// features, target last) back to each column's clipped value or level.
type decoder struct {
	cols  []Column
	slots []int // first encoded slot of each column
	scale float64
}

func newDecoder(s *schema.Schema, cols []Column) *decoder {
	d := &decoder{cols: cols, scale: schema.UnitScale(s.Bound())}
	slot := 0
	if s.HasIntercept() {
		slot = 1
	}
	for _, c := range cols {
		if c.Target {
			d.slots = append(d.slots, s.Dim())
			continue
		}
		d.slots = append(d.slots, slot)
		if c.Numeric {
			slot++
		} else {
			slot += len(c.Levels) - 1
		}
	}
	return d
}

// value returns column i of the encoded row: a numeric value in [lo, hi]
// or a level index (as a float).
func (d *decoder) value(row []float64, i int) float64 {
	c := d.cols[i]
	x := row[d.slots[i]]
	if c.Numeric {
		u := x / d.scale
		if c.Target {
			u = x
		}
		v := c.Lo + (u+1)/2*(c.Hi-c.Lo)
		return min(max(v, c.Lo), c.Hi)
	}
	if c.Target {
		if x > 0.5 {
			return 1
		}
		return 0
	}
	for k := 1; k < len(c.Levels); k++ {
		if row[d.slots[i]+k-1] != 0 {
			return float64(k)
		}
	}
	return 0
}

// Options chooses what to release.
type Options struct {
	// Epsilon is the total privacy budget (pure ε-DP).
	Epsilon float64
	// By names a categorical column to split every statistic by ("" for none).
	By string
	// Quantiles to release per numeric column (default 0.25, 0.5, 0.75).
	Quantiles []float64
	// Bins is the number of histogram bins of a numeric column (default 10).
	Bins int
	// Grid is the number of quantile grid points on [lo, hi] (default 101).
	Grid int
	// Columns restricts the description to these columns (default all).
	Columns []string
	// PrivacyUnit and MaxRowsPerUnit, when set, make the guarantee per
	// person: the caller feeds at most MaxRowsPerUnit = K records of each
	// unit (dataset.UnitStreamBatches; ReadUnits does) and every
	// sensitivity is K times the per-record one (Data.unitFactor). The
	// number of records is then private: counts are released with noise
	// and only the number of units (SetUnits) is public.
	PrivacyUnit    string
	MaxRowsPerUnit int
}

func (o *Options) defaults() {
	if o.Quantiles == nil {
		o.Quantiles = []float64{0.25, 0.5, 0.75}
	}
	if o.Bins == 0 {
		o.Bins = 10
	}
	if o.Grid == 0 {
		o.Grid = 101
	}
}

func (o *Options) validate(cols []Column) error {
	if !(o.Epsilon > 0) || math.IsInf(o.Epsilon, 0) {
		return fmt.Errorf("describe: ε = %v must be positive and finite", o.Epsilon)
	}
	for _, q := range o.Quantiles {
		if !(q > 0 && q < 1) {
			return fmt.Errorf("describe: quantile %v must be in (0, 1)", q)
		}
	}
	if o.Bins < 1 || o.Bins > 1000 {
		return fmt.Errorf("describe: %d bins (want 1 to 1000)", o.Bins)
	}
	if o.Grid < 2 || o.Grid > 100000 {
		return fmt.Errorf("describe: %d grid points (want 2 to 100000)", o.Grid)
	}
	if (o.PrivacyUnit == "") != (o.MaxRowsPerUnit == 0) || o.MaxRowsPerUnit < 0 {
		return fmt.Errorf("describe: a privacy unit needs both its column and K ≥ 1 rows per unit (got %q, %d)", o.PrivacyUnit, o.MaxRowsPerUnit)
	}
	names := map[string]Column{}
	for _, c := range cols {
		names[c.Name] = c
	}
	if o.By != "" {
		c, ok := names[o.By]
		if !ok {
			return fmt.Errorf("describe: --by %q is not a column of the schema", o.By)
		}
		if c.Numeric {
			return fmt.Errorf("describe: --by %q is numeric; split by a categorical column (one with \"categories\")", o.By)
		}
	}
	for _, n := range o.Columns {
		if _, ok := names[n]; !ok {
			return fmt.Errorf("describe: column %q is not in the schema", n)
		}
	}
	return nil
}

var errNoRows = errors.New("describe: no rows")
