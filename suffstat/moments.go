// Package suffstat accumulates the sufficient statistics of a stream of
// encoded rows z ∈ R^K: the row count N, the sums Σ z and the upper triangle
// of Σ z zᵀ. These are all that the Functional Mechanism family ever sees of
// the data. They are computed in one pass with O(K²) memory whatever N is,
// and are mergeable: threads, files, sites and cluster workers each
// accumulate a partial result and add them with Merge. MarshalBinary gives
// the versioned, length-checked encoding of a partial result that a site
// ships.
//
// # Speed
//
// Rows are packed into panels of 128 rows, padded with a constant-one column
// (so that Σ z is computed by the same kernel) and zeros. Each panel updates
// the upper triangle of the Gram matrix with a register-blocked rank-k
// kernel: in assembly with AVX-512 or AVX2+FMA on amd64 processors that have them
// (detected at run time), otherwise in pure Go. The hot loop does not
// allocate. Large AddRows calls are split across cores (see SetWorkers).
//
// # Accuracy
//
// Summation is blocked in three levels: each kernel call sums up to 128 rows
// in registers, a block accumulator sums up to 128 panels (16,384 rows), and
// blocks are added to the running total with doubly compensated summation
// (Neumaier's, with its correction term itself compensated: Klein 2006), as
// are partial results in Merge. ErrorBound gives a proven bound on the
// absolute error of every returned value: for rows in [−1, 1]ᴷ it is about
// (257 + 2)·u·N, u = 2⁻⁵³, whatever the order of AddRows, Merge and read
// calls, where plain running sums would lose up to N²u. The privacy
// mechanisms add it to their sensitivities (docs/numerics.md), because the
// statistic they release is the computed one.
package suffstat

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
)

const (
	panelRows   = 128 // rows per kernel call (summed in registers)
	blockPanels = 128 // panels per block before a compensated fold
	// parallelMin is the smallest AddRows call (in rows) split across cores.
	parallelMin = 32 * panelRows
)

// Moments holds N, Σ z and the upper triangle of Σ z zᵀ for rows z ∈ R^K.
// The zero value is not usable; call New. A Moments is not safe for
// concurrent use; accumulate per goroutine and Merge. (Once flushed, see
// Flush, it may be read concurrently.)
type Moments struct {
	k   int   // row width
	n   int64 // committed + pending rows
	ld  int   // panel row stride: K+1 rounded up to the kernel's column step
	ldc int   // Gram column stride (≥ ld, multiple of the kernel's row step)
	kn  kernel

	// Gram of the padded rows [z, 1], stored by columns: entry (i, j), i ≤ j,
	// is at j*ldc + i. Column K holds Σ z.
	tot, comp, comp2 []float64 // committed total, its compensation, and that one's
	blk              []float64 // block accumulator (kernel output)
	blkPanels        int       // panels in blk since the last fold

	panel []float64 // panelRows × ld packed rows, column K is 1, padding 0
	prow  int       // rows in panel

	workers  int
	children []*Moments // per-worker accumulators for parallel AddRows

	err error // sticky: set when AddRows rejected a value mid-stream
}

// New returns an empty accumulator for rows of width k (k ≥ 1).
// It panics if k < 1, which is a programming error.
func New(k int) *Moments {
	return newWithKernel(k, bestKernel())
}

func newWithKernel(k int, kn kernel) *Moments {
	if k < 1 {
		panic(fmt.Sprintf("suffstat: New(%d): width must be at least 1", k))
	}
	ld := roundUp(k+1, kn.nr)
	ldc := roundUp(ld, kn.mr)
	m := &Moments{
		k: k, ld: ld, ldc: ldc, kn: kn,
		tot:     make([]float64, ld*ldc),
		comp:    make([]float64, ld*ldc),
		comp2:   make([]float64, ld*ldc),
		blk:     make([]float64, ld*ldc),
		workers: runtime.GOMAXPROCS(0),
	}
	// Slack of one kernel row step after the last row: the kernel may read
	// past the padded width of a row (into the next row or this slack); it
	// only affects Gram entries below the diagonal, which are never read.
	m.panel = make([]float64, panelRows*ld+kn.mr)
	for r := 0; r < panelRows; r++ {
		m.panel[r*ld+k] = 1
	}
	return m
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

// K returns the row width.
func (m *Moments) K() int { return m.k }

// N returns the number of rows added (including merged partial results).
func (m *Moments) N() int64 { return m.n }

// SetWorkers sets how many goroutines a large AddRows call may use
// (default GOMAXPROCS). Values below 1 mean 1.
func (m *Moments) SetWorkers(n int) {
	if n < 1 {
		n = 1
	}
	m.workers = n
}

// Err returns the error that poisoned m, if any: a non-finite value in
// AddRows, or sums that overflowed float64.
func (m *Moments) Err() error { return m.err }

// AddRows adds a row-major block of n×K values. It returns an error, naming
// the row and column, if len(rows) is not a multiple of K or a value is NaN
// or ±Inf. When the length is wrong nothing is added. A non-finite value is
// detected while streaming: the rows before it may already have been
// accumulated, so m is then poisoned: every later AddRows, Merge and
// MarshalBinary returns the same error and the accessors return NaN. Sums
// that overflow float64 (possible only for values above about 1e150; encoded
// rows are bounded by 1) poison m in the same way.
func (m *Moments) AddRows(rows []float64) error {
	if m.err != nil {
		return m.err
	}
	if m.k < 1 {
		return errors.New("suffstat: AddRows: accumulator not created with New")
	}
	if len(rows)%m.k != 0 {
		return fmt.Errorf("suffstat: AddRows: %d values is not a whole number of rows of width %d", len(rows), m.k)
	}
	n := len(rows) / m.k
	if n == 0 {
		return nil
	}
	w := m.workers
	if w > 1 && n >= parallelMin {
		if max := n / (parallelMin / 2); w > max {
			w = max
		}
		return m.addParallel(rows, n, w)
	}
	return m.addSerial(rows, 0)
}

// addSerial streams rows through the panel buffer. base is the index of the
// first row in the caller's block, for error messages.
func (m *Moments) addSerial(rows []float64, base int) error {
	k := m.k
	n := len(rows) / k
	for r := 0; r < n; {
		take := panelRows - m.prow
		if take > n-r {
			take = n - r
		}
		src := rows[r*k : (r+take)*k]
		if !finite(src) {
			i := firstNonFinite(src)
			m.err = fmt.Errorf("suffstat: AddRows: row %d, column %d: value %v is not finite", base+r+i/k, i%k, src[i])
			return m.err
		}
		dst := m.panel[m.prow*m.ld:]
		for t := 0; t < take; t++ {
			copy(dst[t*m.ld:t*m.ld+k], src[t*k:(t+1)*k])
		}
		m.prow += take
		m.n += int64(take)
		r += take
		if m.prow == panelRows {
			m.runPanel()
			if m.err != nil {
				return m.err
			}
		}
	}
	return nil
}

// finite reports whether every value of x is finite. v*0 is 0 for finite v
// and NaN otherwise; four independent sums keep the loop fast.
func finite(x []float64) bool {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += x[i] * 0
		s1 += x[i+1] * 0
		s2 += x[i+2] * 0
		s3 += x[i+3] * 0
	}
	for ; i < len(x); i++ {
		s0 += x[i] * 0
	}
	return s0+s1+s2+s3 == 0
}

func firstNonFinite(x []float64) int {
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return i
		}
	}
	return -1
}

// runPanel applies the kernel to the buffered rows and folds the block
// accumulator into the total when it holds blockPanels panels.
func (m *Moments) runPanel() {
	if m.prow == 0 {
		return
	}
	m.kn.gram(m.panel, m.prow, m.ld, m.blk, m.ldc, m.k+1)
	m.prow = 0
	m.blkPanels++
	m.checkOverflow(m.blk) // O(K²) per panel of 128 rows: under 1 % of the kernel
	if m.blkPanels >= blockPanels {
		m.fold()
	}
}

// fold adds the block accumulator into the compensated total and clears it.
func (m *Moments) fold() {
	kk := m.k + 1
	for j := 0; j < kk; j++ {
		off := j * m.ldc
		m.addComp(off, j+1, m.blk[off:off+j+1])
		clear(m.blk[off : off+m.ldc])
	}
	m.blkPanels = 0
	m.checkOverflow(m.tot, m.comp, m.comp2)
}

// checkOverflow poisons m if a sum overflowed float64 (finite inputs of
// magnitude above about 1e154 can do that), rather than return ±Inf.
func (m *Moments) checkOverflow(gs ...[]float64) {
	if m.err != nil {
		return
	}
	for _, g := range gs {
		for j := 0; j <= m.k; j++ {
			off := j * m.ldc
			if !finite(g[off : off+j+1]) {
				m.err = fmt.Errorf("suffstat: the sums overflow float64 (values too large; encoded rows should be bounded)")
				return
			}
		}
	}
}

// addComp adds x into the n entries of (tot, comp, comp2) starting at off,
// with doubly compensated summation (Klein 2006): the rounding error e of
// tot + x is computed exactly (Fast2Sum, with the larger operand first), e
// is added to comp the same way, and the error of that addition goes into
// comp2 by plain addition. So tot + comp + (exact sum of what comp2 was
// given) equals the exact sum of everything added, and only comp2's
// third-order sum rounds.
func (m *Moments) addComp(off, n int, x []float64) {
	s := m.tot[off : off+n]
	c := m.comp[off : off+n]
	c2 := m.comp2[off : off+n]
	x = x[:n]
	for i, v := range x {
		t := s[i] + v
		var e float64
		if math.Abs(s[i]) >= math.Abs(v) {
			e = (s[i] - t) + v
		} else {
			e = (v - t) + s[i]
		}
		s[i] = t
		t = c[i] + e
		if math.Abs(c[i]) >= math.Abs(e) {
			c2[i] += (c[i] - t) + e
		} else {
			c2[i] += (e - t) + c[i]
		}
		c[i] = t
	}
}

// Flush folds the rows buffered by AddRows into the totals. The read
// methods (N, Sum, At, Sums, Gram, MarshalBinary) and Merge's argument flush
// on demand, which modifies m; after Flush, and until the next AddRows, they
// do not, so a flushed Moments may be read from several goroutines at once.
func (m *Moments) Flush() { m.flush() }

// flush pushes every pending row into the compensated total.
func (m *Moments) flush() {
	m.runPanel()
	if m.blkPanels > 0 {
		m.fold()
	}
}

func (m *Moments) addParallel(rows []float64, n, w int) error {
	for len(m.children) < w-1 {
		c := newWithKernel(m.k, m.kn)
		c.workers = 1
		m.children = append(m.children, c)
	}
	errs := make([]error, w)
	var wg sync.WaitGroup
	for t := 0; t < w; t++ {
		lo, hi := t*n/w, (t+1)*n/w
		acc := m
		if t > 0 {
			acc = m.children[t-1]
		}
		wg.Add(1)
		go func(t int, acc *Moments) {
			defer wg.Done()
			errs[t] = acc.addSerial(rows[lo*m.k:hi*m.k], lo)
		}(t, acc)
	}
	wg.Wait()
	for t, c := range m.children[:w-1] {
		if errs[t+1] == nil {
			errs[t+1] = m.Merge(c)
		}
		c.reset()
	}
	if err := errors.Join(errs...); err != nil {
		m.err = err
		return err
	}
	return nil
}

// reset empties m, keeping its buffers.
func (m *Moments) reset() {
	clear(m.tot)
	clear(m.comp)
	clear(m.comp2)
	clear(m.blk)
	m.blkPanels, m.prow, m.n, m.err = 0, 0, 0, nil
}

// Merge adds the partial result o into m (o is flushed but otherwise
// unchanged). It returns an error if the widths differ or o is poisoned.
func (m *Moments) Merge(o *Moments) error {
	if m.err != nil {
		return m.err
	}
	if o.err != nil {
		return fmt.Errorf("suffstat: Merge: other accumulator failed: %w", o.err)
	}
	if o.k != m.k || m.k < 1 {
		return fmt.Errorf("suffstat: Merge: width %d into width %d", o.k, m.k)
	}
	if o == m {
		return errors.New("suffstat: Merge: cannot merge an accumulator into itself")
	}
	if m.n > math.MaxInt64-o.n {
		return fmt.Errorf("suffstat: Merge: row count overflows (%d + %d)", m.n, o.n)
	}
	o.flush()
	kk := m.k + 1
	for j := 0; j < kk; j++ {
		mo, oo := j*m.ldc, j*o.ldc
		m.addComp(mo, j+1, o.tot[oo:oo+j+1])
		m.addComp(mo, j+1, o.comp[oo:oo+j+1])
		m.addComp(mo, j+1, o.comp2[oo:oo+j+1])
	}
	m.n += o.n
	m.checkOverflow(m.tot, m.comp, m.comp2)
	return m.err
}

// value returns entry (i, j), 0 ≤ i ≤ j ≤ K, of the padded Gram.
func (m *Moments) value(i, j int) float64 {
	if m.err != nil {
		return math.NaN()
	}
	if m.prow > 0 || m.blkPanels > 0 {
		m.flush()
		if m.err != nil {
			return math.NaN()
		}
	}
	p := j*m.ldc + i
	return m.tot[p] + (m.comp[p] + m.comp2[p])
}

// Sum returns Σ z_i. It panics if i is out of range.
func (m *Moments) Sum(i int) float64 {
	if i < 0 || i >= m.k {
		panic(fmt.Sprintf("suffstat: Sum(%d) out of range [0,%d)", i, m.k))
	}
	return m.value(i, m.k)
}

// At returns Σ z_i z_j (At(i, j) == At(j, i)). It panics if i or j is out
// of range.
func (m *Moments) At(i, j int) float64 {
	if i < 0 || i >= m.k || j < 0 || j >= m.k {
		panic(fmt.Sprintf("suffstat: At(%d, %d) out of range [0,%d)", i, j, m.k))
	}
	if i > j {
		i, j = j, i
	}
	return m.value(i, j)
}

// Sums returns Σ z as a new K-vector.
func (m *Moments) Sums() []float64 {
	s := make([]float64, m.k)
	for i := range s {
		s[i] = m.Sum(i)
	}
	return s
}

// Gram returns Σ z zᵀ as a new row-major K×K symmetric matrix.
func (m *Moments) Gram() []float64 {
	g := make([]float64, m.k*m.k)
	for j := 0; j < m.k; j++ {
		for i := 0; i <= j; i++ {
			v := m.value(i, j)
			g[i*m.k+j], g[j*m.k+i] = v, v
		}
	}
	return g
}

// Reset empties m for reuse, keeping its buffers and settings.
func (m *Moments) Reset() { m.reset() }
