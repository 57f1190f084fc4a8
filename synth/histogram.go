package synth

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
)

// HistogramSensitivity is the L1 sensitivity of a histogram's count vector
// under the project's neighbouring relation (report.Neighbouring: replace
// one record, N fixed): the replaced record leaves one cell (−1) and the new
// one enters another (+1), so ‖h(D) − h(D′)‖₁ ≤ 2, with equality whenever
// the two records fall in different cells. (Under add/remove-one it would
// be 1.)
const HistogramSensitivity = 2

// Histogram is a sparse histogram: the non-empty cells in increasing order
// and their counts (all ≥ 1). Memory is O(non-empty cells), never O(domain).
type Histogram struct {
	Cells  []uint64
	Counts []int64
	// N is the number of rows counted.
	N int64
}

// Build counts the rows (row-major, d.Width() per row) into the domain's
// cells. A row outside the public domain is an error naming the axis.
func Build(d *Domain, rows []float64) (*Histogram, error) {
	if _, err := d.Cells(); err != nil {
		return nil, err
	}
	w := d.Width()
	if w == 0 || len(rows)%w != 0 {
		return nil, fmt.Errorf("synth: %d values are not whole rows of %d columns", len(rows), w)
	}
	n := len(rows) / w
	cells := make([]uint64, n)
	for i := 0; i < n; i++ {
		c, err := d.Cell(rows[i*w : (i+1)*w])
		if err != nil {
			return nil, fmt.Errorf("synth: row %d: %w", i+1, err)
		}
		cells[i] = c
	}
	slices.Sort(cells)
	h := &Histogram{N: int64(n)}
	for i := 0; i < n; {
		j := i
		for j < n && cells[j] == cells[i] {
			j++
		}
		h.Cells = append(h.Cells, cells[i])
		h.Counts = append(h.Counts, int64(j-i))
		i = j
	}
	return h, nil
}

// DefaultMaxDenseCells caps DPME's dense histogram: 2^22 cells (32 MiB of
// noisy counts). DPME's cost is Θ(cells) = Θ(Π axis sizes) time and memory,
// which grows as bins^p with the number p of binned axes (and ×2 per binary
// column); with LeiBins the grid has about N/ln N cells, but at least 2^p.
const DefaultMaxDenseCells = 1 << 22

// ErrTooManyCells is wrapped by the error PerturbDense returns when the grid
// exceeds its cell limit.
var ErrTooManyCells = errors.New("histogram grid exceeds the cell limit")

// Dense is a perturbed histogram over every cell of a domain (DPME).
type Dense struct {
	Counts []float64
	// Scale is the Laplace scale b of the noise added to each count.
	Scale float64
}

// PerturbDense is the perturbed histogram of Lei (2011): every cell of the
// domain, empty or not, gets independent Laplace noise of scale b, with b
// calibrated by accounting.LaplaceScale for L1 sensitivity
// HistogramSensitivity (2) at ε (grid-rounding slack of noise.AddLaplace
// included), so the noisy vector is ε-DP. maxCells bounds the dense vector;
// a larger grid is refused with ErrTooManyCells.
func PerturbDense(h *Histogram, d *Domain, epsilon float64, src noise.Source, maxCells int) (*Dense, error) {
	m, err := d.Cells()
	if err != nil {
		return nil, err
	}
	if maxCells <= 0 {
		maxCells = DefaultMaxDenseCells
	}
	if m > uint64(maxCells) {
		return nil, fmt.Errorf("synth: DPME's dense histogram would have %d cells (%s); the limit is %d (regress.HistogramOptions.MaxCells; default synth.DefaultMaxDenseCells = 2^22): use fewer bins or fewer attributes: %w",
			m, d.Describe(), maxCells, ErrTooManyCells)
	}
	b, err := accounting.LaplaceScale(epsilon, HistogramSensitivity)
	if err != nil {
		return nil, fmt.Errorf("synth: calibrate DPME's Laplace noise: %w", err)
	}
	counts := make([]float64, m)
	for i, c := range h.Cells {
		if c >= m {
			return nil, fmt.Errorf("synth: histogram cell %d is outside the %d-cell domain", c, m)
		}
		counts[c] = float64(h.Counts[i])
	}
	if err := noise.AddLaplace(src, counts, b); err != nil {
		return nil, fmt.Errorf("synth: DPME noise: %w", err)
	}
	return &Dense{Counts: counts, Scale: b}, nil
}

// Describe lists the axes and their sizes, e.g. "age 8 × colour 3".
func (d *Domain) Describe() string {
	s := ""
	for i, a := range d.Axes {
		if i > 0 {
			s += " × "
		}
		s += fmt.Sprintf("%s %d", a.Name, a.Size())
	}
	return s
}

// Synthetic is weighted synthetic data: representative rows of cells
// (row-major, Width() per row) with non-negative weights. A weighted row
// stands for Weight copies of itself.
type Synthetic struct {
	Width   int
	Rows    []float64
	Weights []float64
}

// TotalWeight is the sum of the weights.
func (s *Synthetic) TotalWeight() float64 {
	t := 0.0
	for _, w := range s.Weights {
		t += w
	}
	return t
}

// Synthesize turns noisy cell counts into synthetic data (Lei 2011's
// synthetic data set {(a_k, n̂_k)}: the representative a_k of each cell,
// weighted by its noisy count). Negative and zero counts are dropped (a
// negative count is not a meaningful weight; dropping it is post-processing
// of the released counts). Cells with non-zero weight are listed in
// increasing order.
func (d *Dense) Synthesize(dom *Domain) *Synthetic {
	w := dom.Width()
	s := &Synthetic{Width: w}
	row := make([]float64, w)
	for c, v := range d.Counts {
		if !(v > 0) || math.IsInf(v, 0) {
			continue
		}
		dom.Rep(uint64(c), row)
		s.Rows = append(s.Rows, row...)
		s.Weights = append(s.Weights, v)
	}
	return s
}

// SynthesizeEntries turns weighted cells (a sampled summary) into
// synthetic data, as Synthesize does for a dense histogram.
func SynthesizeEntries(dom *Domain, entries []Entry) *Synthetic {
	w := dom.Width()
	s := &Synthetic{Width: w}
	row := make([]float64, w)
	for _, e := range entries {
		if !(e.Weight > 0) {
			continue
		}
		dom.Rep(e.Cell, row)
		s.Rows = append(s.Rows, row...)
		s.Weights = append(s.Weights, e.Weight)
	}
	return s
}
