// Package suffstat accumulates the sufficient statistics of a stream of
// encoded rows z ∈ [−1, 1]^K: the row count N, the sums Σ z and the upper
// triangle of Σ z zᵀ. These are all that the Functional Mechanism family ever
// sees of the data. They are computed in one pass with O(K²) memory whatever
// N is, and are mergeable: threads, files, sites and cluster workers each
// accumulate a partial result and add them with Merge. MarshalBinary gives
// the versioned, length-checked, exact encoding of a partial result that a
// site or a cluster worker ships.
//
// # Exact, order-independent totals
//
// Every value is first rounded to the fixed-point grid 2⁻⁴⁶ (q(z) =
// round-half-even(z·2⁴⁶)·2⁻⁴⁶, a deterministic function of the value), and
// the statistics of the rounded rows are accumulated exactly, in integers:
// Σ q(z_i) is held in units of 2⁻⁴⁶ and Σ q(z_i) q(z_j) in units of 2⁻⁹², in
// 192-bit two's-complement integers. Integer addition is associative and
// commutative, so the totals do not depend on how rows are split into
// AddRows calls, threads, files, cluster bundles or Merge trees, nor on the
// order of the merges: every way of accumulating the same multiset of rows
// gives the same bits, and the same bytes from MarshalBinary. A value is
// rounded to float64 once, when it is read. ErrorBound gives the (tiny)
// difference from the exact statistics of the unrounded rows.
//
// # Speed
//
// Each value splits exactly into two 23-bit integer slices, q(z)·2⁴⁶ =
// h₁·2²³ + h₂, with |h₁| ≤ 2²³ and |h₂| ≤ 2²². Rows are packed into panels of
// 128 rows of [h₁ | h₂ | 1], and each panel's Gram matrix is computed by a
// register-blocked floating-point rank-k kernel (in assembly with AVX-512 or
// AVX2+FMA on amd64 processors that have them, detected at run time,
// otherwise in pure Go). Every product of slices is an integer below 2⁴⁶ in
// magnitude and a panel sums 128 of them, so every partial sum is an integer
// below 2⁵³: the floating-point kernel computes the panel's Gram exactly. It
// is then added into 64-bit integers (which hold 1000 panels), and those into
// the 192-bit totals. The wide panel costs four times the multiply-adds of
// the plain Gram; the hot loop does not allocate, and large AddRows calls are
// split across cores (see SetWorkers).
//
// On processors with AVX-512 IFMA (52-bit integer multiply-add) the kernel
// works on integers instead (ifma.go): each value is one unsigned 47-bit
// integer, panels are [u | 1], half the width, and each product is added
// exactly as its low and high 52-bit halves. It computes the same integers,
// so the totals and their bytes are identical whichever kernel ran.
package suffstat

import (
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"sync"
	"sync/atomic"
)

const (
	panelRows = 128 // rows per kernel call
	// sliceBits is the width of each integer slice of a value; fracBits the
	// fixed-point grid of the values (2⁻⁴⁶).
	sliceBits = 23
	fracBits  = 2 * sliceBits
	// spillPanels is how many panels the int64 pending sums take before they
	// are added into the 192-bit totals: a panel adds at most 2⁵³ in
	// magnitude to an entry, and 1000·2⁵³ < 2⁶³.
	spillPanels = 1000
	// parallelMin is the smallest AddRows call (in rows) split across cores.
	parallelMin = 32 * panelRows
)

// acc is a 192-bit two's-complement integer, least significant word first.
type acc [3]uint64

// addShifted adds v·2^s (0 ≤ s < 64) to a.
func (a *acc) addShifted(v int64, s uint) {
	lo := uint64(v) << s
	mid := uint64(v >> (64 - s)) // s = 0: v>>64 is the sign fill
	top := uint64(v >> 63)
	var c uint64
	a[0], c = bits.Add64(a[0], lo, 0)
	a[1], c = bits.Add64(a[1], mid, c)
	a[2], _ = bits.Add64(a[2], top, c)
}

// add adds b to a.
func (a *acc) add(b *acc) {
	var c uint64
	a[0], c = bits.Add64(a[0], b[0], 0)
	a[1], c = bits.Add64(a[1], b[1], c)
	a[2], _ = bits.Add64(a[2], b[2], c)
}

func (a *acc) neg() bool { return int64(a[2]) < 0 }

// abs returns |a| as an unsigned 192-bit magnitude (a ≥ −2¹⁹¹ + 1 here).
func (a *acc) abs() acc {
	if !a.neg() {
		return *a
	}
	var r acc
	var c uint64
	r[0], c = bits.Add64(^a[0], 1, 0)
	r[1], c = bits.Add64(^a[1], 0, c)
	r[2], _ = bits.Add64(^a[2], 0, c)
	return r
}

// float returns a·2^(−e) rounded to the nearest float64 (ties to even): one
// rounding of the exact value.
func (a *acc) float(e int) float64 {
	m := a.abs()
	var top int // index of the most significant set bit, −1 if zero
	switch {
	case m[2] != 0:
		top = 128 + 63 - bits.LeadingZeros64(m[2])
	case m[1] != 0:
		top = 64 + 63 - bits.LeadingZeros64(m[1])
	case m[0] != 0:
		top = 63 - bits.LeadingZeros64(m[0])
	default:
		return 0
	}
	var mant uint64
	exp := 0
	if top <= 52 {
		mant = m[0]
	} else {
		sh := top - 52 // bits dropped below the 53-bit mantissa
		mant = shiftRight(m, sh)
		half := bitAt(m, sh-1)
		sticky := anyBelow(m, sh-1)
		if half && (sticky || mant&1 == 1) {
			mant++ // may carry to 2⁵³, which is still exact in float64
		}
		exp = sh
	}
	f := math.Ldexp(float64(mant), exp-e)
	if a.neg() {
		f = -f
	}
	return f
}

// shiftRight returns the low 64 bits of m >> s (the caller keeps the result
// below 2⁵³).
func shiftRight(m acc, s int) uint64 {
	w, b := s/64, uint(s%64)
	lo := m[w] >> b
	if b != 0 && w+1 < 3 {
		lo |= m[w+1] << (64 - b)
	}
	return lo
}

func bitAt(m acc, i int) bool { return m[i/64]>>(uint(i)%64)&1 == 1 }

// anyBelow reports whether any bit of m below position i is set.
func anyBelow(m acc, i int) bool {
	for w := 0; w < 3; w++ {
		lo := w * 64
		switch {
		case i >= lo+64:
			if m[w] != 0 {
				return true
			}
		case i > lo:
			if m[w]&(1<<uint(i-lo)-1) != 0 {
				return true
			}
		}
	}
	return false
}

// Moments holds N, Σ z and the upper triangle of Σ z zᵀ for rows z ∈
// [−1, 1]^K, exactly (see the package doc). The zero value is not usable;
// call New. A Moments is not safe for concurrent use; accumulate per
// goroutine and Merge. (Once flushed, see Flush, it may be read
// concurrently.)
type Moments struct {
	k  int   // row width
	n  int64 // committed + pending rows
	w  int   // wide panel width: 2K slices + the constant column
	ld int   // panel row stride: w rounded up to the kernel's column step
	// ldc is the wide Gram's column stride (≥ ld, a multiple of the
	// kernel's row step).
	ldc int
	kn  kernel

	// tot holds the committed totals of the padded statistics, entry (i, j),
	// i ≤ j ≤ K, at j(j+1)/2 + i: Σ q_i q_j in units of 2⁻⁹² (j < K), Σ q_i in
	// units of 2⁻⁴⁶ (j = K), and the row count (i = j = K).
	tot []acc
	// blk is the kernel's output for one panel: the wide Gram of [h₁|h₂|1],
	// by columns ((i, j) at j*ldc + i). pend holds the sum of up to
	// spillPanels of them as integers.
	blk        []float64
	pend       []int64
	pendPanels int
	panel      []float64 // panelRows × ld packed slices, column 2K is 1, padding 0
	prow       int       // rows in panel
	workers    int
	children   []*Moments // per-worker accumulators for parallel AddRows
	err        error      // sticky: set when AddRows rejected a value mid-stream

	// The integer path (ifma.go): panel of [u | 1] and the low and high
	// 64-bit sums of the products.
	upanel []uint64
	lo, hi []uint64
	// spillEvery, when positive, replaces intSpillPanels (tests).
	spillEvery int
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
	w := 2*k + 1
	if kn.itile != nil {
		w = k + 1 // ifma.go
	}
	ld := roundUp(w, kn.nr)
	ldc := roundUp(ld, kn.mr)
	return &Moments{
		k: k, w: w, ld: ld, ldc: ldc, kn: kn,
		tot:     make([]acc, (k+1)*(k+2)/2),
		workers: runtime.GOMAXPROCS(0),
	}
}

// allocPanel allocates the buffers of AddRows on first use, so that an
// accumulator that only merges or decodes partial results (an aggregator,
// a cluster's combiner) holds just its totals.
func (m *Moments) allocPanel() {
	m.blk = make([]float64, m.ld*m.ldc)
	m.pend = make([]int64, m.ld*m.ldc)
	// Slack of one kernel row step after the last row: the kernel may read
	// past the padded width of a row (into the next row or this slack); it
	// only affects Gram entries below the diagonal, which are never read.
	m.panel = make([]float64, panelRows*m.ld+m.kn.mr)
	for r := 0; r < panelRows; r++ {
		m.panel[r*m.ld+2*m.k] = 1
	}
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

func tri(i, j int) int { return j*(j+1)/2 + i }

// K returns the row width.
func (m *Moments) K() int { return m.k }

// N returns the number of rows added (including merged partial results).
func (m *Moments) N() int64 { return m.n }

// SetWorkers sets how many goroutines a large AddRows call may use
// (default GOMAXPROCS). Values below 1 mean 1. The result does not depend on
// it, to the last bit.
func (m *Moments) SetWorkers(n int) {
	if n < 1 {
		n = 1
	}
	m.workers = n
}

// Err returns the error that poisoned m, if any: a value in AddRows that is
// not finite or lies outside [−1, 1].
func (m *Moments) Err() error { return m.err }

// AddRows adds a row-major block of n×K values, each in [−1, 1] (encoded
// rows: see package schema). It returns an error, naming the row and column,
// if len(rows) is not a multiple of K or a value is NaN, ±Inf or outside
// [−1, 1]. When the length is wrong nothing is added. A bad value is
// detected while streaming: the rows before it may already have been
// accumulated, so m is then poisoned: every later AddRows, Merge and
// MarshalBinary returns the same error and the accessors return NaN.
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

const (
	sliceScale = 0x1p23
	// roundMagic rounds a float64 of magnitude below 2⁵¹ to the nearest
	// integer, ties to even: (x + 1.5·2⁵²) − 1.5·2⁵².
	roundMagic = 0x1.8p52
)

// addSerial streams rows through the panel buffer. base is the index of the
// first row in the caller's block, for error messages.
func (m *Moments) addSerial(rows []float64, base int) error {
	if m.kn.itile != nil {
		return m.addSerialInt(rows, base)
	}
	if m.panel == nil {
		m.allocPanel()
	}
	k := m.k
	n := len(rows) / k
	for r := 0; r < n; r++ {
		src := rows[r*k : (r+1)*k : (r+1)*k]
		dst := m.panel[m.prow*m.ld : m.prow*m.ld+2*k : m.prow*m.ld+2*k]
		hi, lo := dst[:k:k], dst[k:]
		for c, z := range src {
			if !(z >= -1 && z <= 1) {
				return m.badValue(base+r, c, z)
			}
			// s is exact (a power-of-two scaling); h1 its nearest
			// integer; s − h1 is exact (|s − h1| ≤ ½ and both are
			// multiples of ulp(s)); h2 the nearest integer of (s−h1)·2²³.
			// So h1·2²³ + h2 = round-half-even(z·2⁴⁶), as h1·2²³ is even.
			// The conversions forbid fused operations.
			s := float64(z * sliceScale)
			h1 := float64(s+roundMagic) - roundMagic
			rem := float64(float64(s-h1) * sliceScale)
			hi[c] = h1
			lo[c] = float64(rem+roundMagic) - roundMagic
		}
		m.prow++
		m.n++
		if m.prow == panelRows {
			m.runPanel()
		}
	}
	return nil
}

func (m *Moments) badValue(row, col int, z float64) error {
	if math.IsNaN(z) || math.IsInf(z, 0) {
		m.err = fmt.Errorf("suffstat: AddRows: row %d, column %d: value %v is not finite", row, col, z)
	} else {
		m.err = fmt.Errorf("suffstat: AddRows: row %d, column %d: value %v is outside [-1, 1] (rows must be encoded by a schema)", row, col, z)
	}
	return m.err
}

// runPanel applies the kernel to the buffered rows and adds the (exact)
// panel Gram into the pending integer sums.
func (m *Moments) runPanel() {
	if m.prow == 0 {
		return
	}
	m.kn.gram(m.panel, m.prow, m.ld, m.blk, m.ldc, m.w)
	m.prow = 0
	for j := 0; j < m.w; j++ {
		off := j * m.ldc
		b := m.blk[off : off+j+1 : off+j+1]
		p := m.pend[off : off+j+1 : off+j+1]
		for i, v := range b {
			p[i] += int64(v)
			b[i] = 0
		}
	}
	m.pendPanels++
	if m.pendPanels >= spillPanels {
		m.spill()
	}
}

// spill adds the pending wide-Gram integers into the 192-bit totals:
// q_i q_j·2⁹² = h1_i h1_j·2⁴⁶ + (h1_i h2_j + h2_i h1_j)·2²³ + h2_i h2_j and
// q_i·2⁴⁶ = h1_i·2²³ + h2_i.
func (m *Moments) spill() {
	k, ldc, p := m.k, m.ldc, m.pend
	one := 2 * k
	for j := 0; j < k; j++ {
		for i := 0; i <= j; i++ {
			t := &m.tot[tri(i, j)]
			t.addShifted(p[j*ldc+i], 2*sliceBits)
			t.addShifted(p[(k+j)*ldc+i], sliceBits)
			t.addShifted(p[(k+i)*ldc+j], sliceBits)
			t.addShifted(p[(k+j)*ldc+k+i], 0)
		}
	}
	for i := 0; i < k; i++ {
		t := &m.tot[tri(i, k)]
		t.addShifted(p[one*ldc+i], sliceBits)
		t.addShifted(p[one*ldc+k+i], 0)
	}
	m.tot[tri(k, k)].addShifted(p[one*ldc+one], 0)
	clear(m.pend)
	m.pendPanels = 0
}

// Flush folds the rows buffered by AddRows into the totals. The read
// methods (N, Sum, At, Sums, Gram, MarshalBinary) and Merge's argument flush
// on demand, which modifies m; after Flush, and until the next AddRows, they
// do not, so a flushed Moments may be read from several goroutines at once.
func (m *Moments) Flush() { m.flush() }

func (m *Moments) flush() {
	if m.kn.itile != nil {
		m.runPanelInt()
		if m.pendPanels > 0 {
			m.spillInt()
		}
		return
	}
	m.runPanel()
	if m.pendPanels > 0 {
		m.spill()
	}
}

// addParallel splits rows into blocks that w goroutines take in turn, each
// into its own accumulator (m for the first), then merges them into m. A
// goroutine that the machine slows down takes fewer blocks instead of
// holding up the others (on a shared machine a static split waits for the
// slowest core). Totals are integers, so the result does not depend on
// which goroutine took which block.
func (m *Moments) addParallel(rows []float64, n, w int) error {
	for len(m.children) < w-1 {
		c := newWithKernel(m.k, m.kn)
		c.workers = 1
		m.children = append(m.children, c)
	}
	// About 8 blocks per goroutine, each at least parallelMin/2 rows.
	block := max(parallelMin/2, n/(8*w))
	var next atomic.Int64
	var failed atomic.Bool
	errs := make([]error, w)
	var wg sync.WaitGroup
	for t := 0; t < w; t++ {
		acc := m
		if t > 0 {
			acc = m.children[t-1]
		}
		wg.Add(1)
		go func(t int, acc *Moments) {
			defer wg.Done()
			for !failed.Load() {
				lo := int(next.Add(int64(block))) - block
				if lo >= n {
					return
				}
				hi := min(lo+block, n)
				if err := acc.addSerial(rows[lo*m.k:hi*m.k], lo); err != nil {
					errs[t] = err
					failed.Store(true)
					return
				}
			}
		}(t, acc)
	}
	wg.Wait()
	for t, c := range m.children[:w-1] {
		if errs[t+1] == nil && errs[0] == nil {
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
	clear(m.blk)
	clear(m.pend)
	clear(m.lo)
	clear(m.hi)
	m.pendPanels, m.prow, m.n, m.err = 0, 0, 0, nil
}

// Merge adds the partial result o into m (o is flushed but otherwise
// unchanged). It returns an error if the widths differ or o is poisoned.
// Merging is exact: any order and grouping of merges gives the same bits.
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
	for t := range m.tot {
		m.tot[t].add(&o.tot[t])
	}
	m.n += o.n
	return nil
}

// value returns entry (i, j), 0 ≤ i ≤ j ≤ K, of the padded statistics,
// rounded once to float64.
func (m *Moments) value(i, j int) float64 {
	if m.err != nil {
		return math.NaN()
	}
	if m.prow > 0 || m.pendPanels > 0 {
		m.flush()
	}
	e := 2 * fracBits
	if j == m.k {
		e = fracBits
	}
	return m.tot[tri(i, j)].float(e)
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
