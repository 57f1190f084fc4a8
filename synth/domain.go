package synth

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/dplearn/dplearn/schema"
)

// MaxDomainCells is the largest histogram domain (product of the axis
// sizes) a Domain may describe: cell indices are uint64 and the sparse
// filter counts empty cells in int64.
const MaxDomainCells = 1 << 62

// Axis is one dimension of the histogram's public domain. It covers Cols
// consecutive columns of an encoded row and has Size() cells:
//
//   - a binned axis (Levels nil) covers one column, the interval [Lo, Hi]
//     cut into Bins equal bins; a cell's representative is its centre;
//   - a level axis lists the public values the columns can take (Levels[i]
//     has Cols entries): an intercept, the indicator columns of one
//     categorical feature, a binary target. A row must match a level
//     exactly; the representative is the level itself.
//
// Every parameter is public: it comes from the schema or a data-independent
// rule, never from the data.
type Axis struct {
	Name   string
	Lo, Hi float64
	Bins   int
	Cols   int
	Levels [][]float64
}

// Size is the number of cells along the axis.
func (a Axis) Size() int {
	if a.Levels != nil {
		return len(a.Levels)
	}
	return a.Bins
}

// width is the number of columns the axis covers.
func (a Axis) width() int {
	if a.Levels != nil {
		return a.Cols
	}
	return 1
}

func (a Axis) validate() error {
	if a.Levels != nil {
		if a.Cols < 1 || len(a.Levels) < 1 {
			return fmt.Errorf("axis %q: a level axis needs at least one column and one level", a.Name)
		}
		for i, l := range a.Levels {
			if len(l) != a.Cols {
				return fmt.Errorf("axis %q: level %d has %d values, want %d", a.Name, i, len(l), a.Cols)
			}
			for _, v := range l {
				if math.IsNaN(v) || math.IsInf(v, 0) {
					return fmt.Errorf("axis %q: level %d is not finite", a.Name, i)
				}
			}
		}
		return nil
	}
	if a.Bins < 1 {
		return fmt.Errorf("axis %q: %d bins, need at least 1", a.Name, a.Bins)
	}
	if !(a.Lo < a.Hi) || math.IsInf(a.Lo, 0) || math.IsInf(a.Hi, 0) {
		return fmt.Errorf("axis %q: bad interval [%v, %v]", a.Name, a.Lo, a.Hi)
	}
	return nil
}

// index returns the cell of the axis holding the columns v (len v =
// width()). Values outside [Lo, Hi] or not among the levels are errors: the
// encoder's public clipping already keeps every valid row inside.
func (a Axis) index(v []float64) (int, error) {
	if a.Levels != nil {
	levels:
		for i, l := range a.Levels {
			for j := range l {
				if v[j] != l[j] {
					continue levels
				}
			}
			return i, nil
		}
		return 0, fmt.Errorf("axis %q: value %v is not one of its %d declared levels", a.Name, v, len(a.Levels))
	}
	x := v[0]
	if math.IsNaN(x) || x < a.Lo || x > a.Hi {
		return 0, fmt.Errorf("axis %q: value %v is outside its public range [%v, %v]", a.Name, x, a.Lo, a.Hi)
	}
	i := int((x - a.Lo) / (a.Hi - a.Lo) * float64(a.Bins))
	return min(max(i, 0), a.Bins-1), nil
}

// rep writes the representative of cell i into dst (len width()).
func (a Axis) rep(i int, dst []float64) {
	if a.Levels != nil {
		copy(dst, a.Levels[i])
		return
	}
	dst[0] = a.Lo + (float64(i)+0.5)*(a.Hi-a.Lo)/float64(a.Bins)
}

// Domain is the public grid of a histogram over encoded rows: its axes
// cover the row's columns in order. Cells are numbered in mixed radix, the
// first axis most significant.
type Domain struct {
	Axes []Axis
}

// Width is the number of columns a row has.
func (d *Domain) Width() int {
	w := 0
	for _, a := range d.Axes {
		w += a.width()
	}
	return w
}

// Cells returns the number of cells, or an error naming the limit when it
// exceeds MaxDomainCells.
func (d *Domain) Cells() (uint64, error) {
	if len(d.Axes) == 0 {
		return 0, fmt.Errorf("synth: the domain has no axes")
	}
	c := uint64(1)
	for _, a := range d.Axes {
		if err := a.validate(); err != nil {
			return 0, fmt.Errorf("synth: %w", err)
		}
		hi, lo := bits.Mul64(c, uint64(a.Size()))
		if hi != 0 || lo > MaxDomainCells {
			return 0, fmt.Errorf("synth: the histogram domain has more than MaxDomainCells = 2^62 cells; use fewer bins per axis")
		}
		c = lo
	}
	return c, nil
}

// Cell returns the cell index of one row (len Width()).
func (d *Domain) Cell(row []float64) (uint64, error) {
	var c uint64
	k := 0
	for _, a := range d.Axes {
		w := a.width()
		i, err := a.index(row[k : k+w])
		if err != nil {
			return 0, err
		}
		c = c*uint64(a.Size()) + uint64(i)
		k += w
	}
	return c, nil
}

// Rep writes the representative row of a cell into dst (len Width()).
func (d *Domain) Rep(cell uint64, dst []float64) {
	k := d.Width()
	for ai := len(d.Axes) - 1; ai >= 0; ai-- {
		a := d.Axes[ai]
		s := uint64(a.Size())
		w := a.width()
		k -= w
		a.rep(int(cell%s), dst[k:k+w])
		cell /= s
	}
}

// LeiBins returns the bins per binned axis of the DPME grid for n rows:
// the grid has about n/ln n cells in total, shared equally by the binned
// axes after the level axes (whose sizes the schema fixes) take theirs,
//
//	m = max(2, round((n / (ln n · L))^{1/c})),
//
// for c binned axes and L the product of the level-axis sizes. It follows
// the perturbed-histogram analysis of Lei (2011): the cells must shrink as n
// grows (the discretisation bias is of the order of the bin width h) while
// the expected count per cell, n·h^p for p dimensions, must outgrow the
// Laplace noise (scale 2/ε, constant in n, with maxima over cells of order
// ln n). We take n·h^p = ln n, i.e. h = (ln n/n)^{1/p}. This is our reading
// of Lei's recommendation; the paper's exact rate constants were not
// available to us offline (docs/mechanisms.md).
func LeiBins(n int64, binned int, levelCells float64) int {
	if binned < 1 || n < 3 {
		return 2
	}
	target := float64(n) / math.Log(float64(n)) / math.Max(levelCells, 1)
	m := int(math.Round(math.Pow(target, 1/float64(binned))))
	return max(m, 2)
}

// FromSchema returns the public domain of rows encoded by s: one level axis
// for the intercept (its single value), one level axis per categorical
// feature (its indicator columns, all c levels), one binned axis per numeric
// feature over the encoded range [−1/√B, 1/√B] (schema package doc), and the
// target: a binned axis over [−1, 1] (continuous) or the levels {0, 1}
// (binary). Binned axes get bins(c, L) bins, where c is the number of binned
// axes and L the product of the level-axis sizes (LeiBins for DPME, a fixed
// resolution for Filter-Priority).
func FromSchema(s *schema.Schema, bins func(binned int, levelCells float64) int) (*Domain, error) {
	scale := schema.UnitScale(s.Bound())
	var axes []Axis
	if s.HasIntercept() {
		axes = append(axes, Axis{Name: "(intercept)", Cols: 1, Levels: [][]float64{{scale}}})
	}
	var binned []int
	for _, f := range s.Features {
		if f.Categorical() {
			c := len(f.Categories)
			if c < 2 {
				continue
			}
			lv := make([][]float64, c)
			for i := range lv {
				lv[i] = make([]float64, c-1)
				if i > 0 {
					lv[i][i-1] = scale
				}
			}
			axes = append(axes, Axis{Name: f.Name, Cols: c - 1, Levels: lv})
			continue
		}
		binned = append(binned, len(axes))
		axes = append(axes, Axis{Name: f.Name, Lo: -scale, Hi: scale})
	}
	if s.Target.Binary() {
		axes = append(axes, Axis{Name: s.Target.Name, Cols: 1, Levels: [][]float64{{0}, {1}}})
	} else {
		binned = append(binned, len(axes))
		axes = append(axes, Axis{Name: s.Target.Name, Lo: -1, Hi: 1})
	}
	levels := 1.0
	for _, a := range axes {
		if a.Levels != nil {
			levels *= float64(len(a.Levels))
		}
	}
	m := bins(len(binned), levels)
	for _, i := range binned {
		axes[i].Bins = m
	}
	d := &Domain{Axes: axes}
	if _, err := d.Cells(); err != nil {
		return nil, err
	}
	return d, nil
}

// UnitBall returns the domain the estimators use when no schema is given:
// every one of the k−1 feature columns binned over [−1, 1] (the only public
// bound: ‖x‖₂ ≤ 1), and the target binned over [−1, 1] (continuous) or the
// levels {0, 1} (binary). It does not know which column is the intercept or
// an indicator, so those are binned too and their representatives are bin
// centres: prefer FromSchema.
func UnitBall(k int, binary bool, bins func(binned int, levelCells float64) int) (*Domain, error) {
	if k < 2 {
		return nil, fmt.Errorf("synth: rows need at least one feature and the target, got %d columns", k)
	}
	axes := make([]Axis, 0, k)
	for j := 0; j < k-1; j++ {
		axes = append(axes, Axis{Name: fmt.Sprintf("x%d", j), Lo: -1, Hi: 1})
	}
	levels := 1.0
	if binary {
		axes = append(axes, Axis{Name: "y", Cols: 1, Levels: [][]float64{{0}, {1}}})
		levels = 2
	} else {
		axes = append(axes, Axis{Name: "y", Lo: -1, Hi: 1})
	}
	nb := k - 1
	if !binary {
		nb++
	}
	m := bins(nb, levels)
	for i := range axes {
		if axes[i].Levels == nil {
			axes[i].Bins = m
		}
	}
	d := &Domain{Axes: axes}
	if _, err := d.Cells(); err != nil {
		return nil, err
	}
	return d, nil
}
