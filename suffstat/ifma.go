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
// bits (< 2⁴²), into two 64-bit sums, lo and hi; after at most
// intSpillRows rows (4096·(2⁵² − 1) < 2⁶⁴) they are added into the 192-bit
// totals:
//
//	Σ u_i u_j = lo + hi·2⁵²,  Σ u_i = U_i (the product with the constant 1),
//	n = the count (1·1),
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
	// intSpillRows bounds the rows in lo and hi between spills:
	// 4096·(2⁵² − 1) < 2⁶⁴.
	intSpillRows   = 4096
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
	if m.pendPanels >= intSpillPanels {
		m.spillInt()
	}
}

// spillInt adds lo and hi into the totals (see the derivation above).
func (m *Moments) spillInt() {
	k, ldc := m.k, m.ldc
	one := k * ldc // column of the constant 1
	cnt := m.lo[one+k]
	for j := 0; j < k; j++ {
		uj := m.lo[one+j]
		for i := 0; i <= j; i++ {
			t := &m.tot[tri(i, j)]
			t.addU(m.lo[j*ldc+i], 0)
			t.addU(m.hi[j*ldc+i], 52)
			ui := m.lo[one+i]
			s, c := bits.Add64(ui, uj, 0) // < 2⁶⁰: c = 0
			_ = c
			t.subU(s, fracBits)
			t.addU(cnt, 2*fracBits)
		}
	}
	for i := 0; i < k; i++ {
		t := &m.tot[tri(i, k)]
		t.addU(m.lo[one+i], 0)
		t.subU(cnt, fracBits)
	}
	m.tot[tri(k, k)].addU(cnt, 0)
	clear(m.lo)
	clear(m.hi)
	m.pendPanels = 0
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
