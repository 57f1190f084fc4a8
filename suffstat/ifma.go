package suffstat

import (
	"math"
	"math/bits"
)

// # The integer path (AVX-512 IFMA)
//
// With an integer kernel (kernel.itile) a value is held as one unsigned
// integer u = q(z)·2⁴⁶ + 2⁴⁶ ∈ [0, 2⁴⁷] (q as in the package doc: z
// rounded half-even to the grid 2⁻⁴⁶), and rows are packed into panels of
// [u | 1] (width K+1, half of [h₁ | h₂ | 1]). The kernel adds each product
// u_i·u_j < 2⁹⁴, split exactly into its low 52 bits (< 2⁵²) and its high
// bits (< 2⁴²), into two 64-bit sums, lo and hi. Every intNormPanels
// panels (at most 4095 rows, so lo < 2⁵² + 4095·(2⁵² − 1) < 2⁶⁴) the carries
// of lo move into hi (normalizeInt: hi += lo >> 52, lo &= 2⁵² − 1, which
// keeps lo + hi·2⁵²); after at most intSpillRows rows (2²¹: hi ≤ 2²¹·(2⁴² +
// 1) < 2⁶⁴, the +1 bounding the carries) they are added into the 192-bit
// totals:
//
//	Σ u_i u_j = lo + hi·2⁵²,  Σ u_i = U_i = lo + hi·2⁵² of the product
//	with the constant 1, n = the count (1·1, < 2⁵²: always in lo),
//	Σ q_i q_j·2⁹² = Σ u_i u_j − 2⁴⁶(U_i + U_j) + n·2⁹²,
//	Σ q_i·2⁴⁶ = U_i − n·2⁴⁶,
//
// all in exact integer arithmetic, so the totals are the very integers the
// floating-point path computes: the same bits whatever the kernel, split or
// merge order (tested in exact_test.go across every kernel of the machine).
// It computes the K+1 wide Gram instead of the 2K+1 wide one: a quarter of
// the lanes, two integer multiply-adds per lane instead of one FMA.

const (
	intBias = 1 << fracBits // 2⁴⁶: u = q·2⁴⁶ + intBias
	// intNormPanels bounds the panels between normalizations of lo:
	// 2⁵² − 1 left after one, plus 31·128 = 3968 rows of products of low
	// halves below 2⁵² each, is below 4096·(2⁵² − 1) < 2⁶⁴.
	intNormPanels = 31
	// intSpillRows bounds the rows in lo and hi between spills into the
	// totals: hi gains at most 2⁴² + 1 per row (high half and carry).
	intSpillRows   = 1 << 21
	intSpillPanels = intSpillRows / panelRows
	// intMagic rounds a float64 of magnitude below 2⁵¹ to the nearest
	// integer, ties to even, in its low mantissa bits: bits(s + 1.5·2⁵²) −
	// bits(1.5·2⁵²) = round(s) as a two's-complement integer.
	intMagicBits = 0x4338000000000000
)

func (m *Moments) allocPanelInt() {
	m.lo = make([]uint64, m.ld*m.ldc)
	m.hi = make([]uint64, m.ld*m.ldc)
	m.upanel = make([]uint64, panelRows*m.ld+m.kn.mr)
	for r := 0; r < panelRows; r++ {
		m.upanel[r*m.ld+m.k] = 1
	}
}

// addSerialInt is addSerial for an integer kernel.
func (m *Moments) addSerialInt(rows []float64, base int) error {
	if m.upanel == nil {
		m.allocPanelInt()
	}
	k := m.k
	n := len(rows) / k
	for r := 0; r < n; r++ {
		src := rows[r*k : (r+1)*k : (r+1)*k]
		dst := m.upanel[m.prow*m.ld : m.prow*m.ld+k : m.prow*m.ld+k]
		c0 := 0
		if m.kn.quant != nil {
			var ok bool
			if c0, ok = m.kn.quant(dst, src); !ok {
				c0 = 0 // the scalar loop finds the bad value
			}
		}
		for c := c0; c < k; c++ {
			z := src[c]
			if !(z >= -1 && z <= 1) {
				return m.badValue(base+r, c, z)
			}
			// z·2⁴⁶ is exact; adding 1.5·2⁵² rounds it half-even to an
			// integer held in the low mantissa bits (|z·2⁴⁶| ≤ 2⁴⁶ < 2⁵¹).
			// The conversion forbids a fused operation.
			s := float64(z*0x1p46) + roundMagic
			dst[c] = float64bits(s) - intMagicBits + intBias
		}
		m.prow++
		m.n++
		if m.prow == panelRows {
			m.runPanelInt()
		}
	}
	return nil
}

// runPanelInt applies the integer kernel to the buffered rows.
func (m *Moments) runPanelInt() {
	if m.prow == 0 {
		return
	}
	m.kn.gramInt(m.upanel, m.prow, m.ld, m.lo, m.hi, m.ldc, m.w)
	m.prow = 0
	m.pendPanels++
	if m.pendPanels >= m.intSpill() {
		m.spillInt()
	} else if m.pendPanels%intNormPanels == 0 {
		normalizeInt(m.lo, m.hi)
	}
}

// intSpill is the number of panels between spills of the integer path
// (intSpillPanels; tests lower it to spill often).
func (m *Moments) intSpill() int {
	if m.spillEvery > 0 {
		return m.spillEvery
	}
	return intSpillPanels
}

// normalizeInt moves the bits of lo above 2⁵² into hi: lo + hi·2⁵² is
// unchanged.
func normalizeInt(lo, hi []uint64) {
	hi = hi[:len(lo)]
	for x, v := range lo {
		hi[x] += v >> 52
		lo[x] = v & (1<<52 - 1)
	}
}

// spillInt adds lo and hi into the totals (see the derivation above).
func (m *Moments) spillInt() {
	k, ldc := m.k, m.ldc
	one := k * ldc // column of the constant 1
	if m.hi[one+k] != 0 {
		panic("suffstat: row count of the integer path beyond 2⁵²")
	}
	cnt := m.lo[one+k]
	// v[i] = 2⁴⁶·U_i, and c = n·2⁹².
	v := make([]acc, k)
	for i := range v {
		v[i].addU(m.lo[one+i], fracBits)
		v[i].addU(m.hi[one+i], fracBits+52)
	}
	c := shiftedU(cnt, 2*fracBits)
	for j := 0; j < k; j++ {
		for i := 0; i <= j; i++ {
			t := &m.tot[tri(i, j)]
			t.addU(m.lo[j*ldc+i], 0)
			t.addU(m.hi[j*ldc+i], 52)
			t.sub(&v[i])
			t.sub(&v[j])
			t.add(&c)
		}
	}
	for i := 0; i < k; i++ {
		t := &m.tot[tri(i, k)]
		t.addU(m.lo[one+i], 0)
		t.addU(m.hi[one+i], 52)
		t.subU(cnt, fracBits)
	}
	m.tot[tri(k, k)].addU(cnt, 0)
	clear(m.lo)
	clear(m.hi)
	m.pendPanels = 0
}

// sub subtracts b from a.
func (a *acc) sub(b *acc) {
	var c uint64
	a[0], c = bits.Sub64(a[0], b[0], 0)
	a[1], c = bits.Sub64(a[1], b[1], c)
	a[2], _ = bits.Sub64(a[2], b[2], c)
}

// shiftedU returns v·2^s (s < 128) as a 192-bit integer.
func shiftedU(v uint64, s uint) acc {
	var x acc
	w, b := s/64, s%64
	x[w] = v << b
	if b != 0 {
		x[w+1] = v >> (64 - b)
	}
	return x
}

// addU adds v·2^s (s < 128) to a.
func (a *acc) addU(v uint64, s uint) {
	x := shiftedU(v, s)
	a.add(&x)
}

// subU subtracts v·2^s (s < 128) from a.
func (a *acc) subU(v uint64, s uint) {
	x := shiftedU(v, s)
	var b uint64
	a[0], b = bits.Sub64(a[0], x[0], 0)
	a[1], b = bits.Sub64(a[1], x[1], b)
	a[2], _ = bits.Sub64(a[2], x[2], b)
}

func float64bits(f float64) uint64 { return math.Float64bits(f) }
