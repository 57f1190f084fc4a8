package suffstat

import "math"

// legacy is the accumulator this package used before its totals were made
// exact (compensated floating-point blocks of 128 panels, order-dependent in
// the last bits), kept only as the reference of BenchmarkGram and
// BenchmarkAddRows so that the cost of exactness is measured in the same
// run. It streams rows serially and has no error handling.
type legacy struct {
	k, ld, ldc       int
	kn               kernel
	tot, comp, comp2 []float64
	blk              []float64
	blkPanels        int
	panel            []float64
	prow             int
}

const legacyBlockPanels = 128

func newLegacy(k int, kn kernel) *legacy {
	ld := roundUp(k+1, kn.nr)
	ldc := roundUp(ld, kn.mr)
	m := &legacy{k: k, ld: ld, ldc: ldc, kn: kn,
		tot: make([]float64, ld*ldc), comp: make([]float64, ld*ldc),
		comp2: make([]float64, ld*ldc), blk: make([]float64, ld*ldc),
		panel: make([]float64, panelRows*ld+kn.mr)}
	for r := 0; r < panelRows; r++ {
		m.panel[r*ld+k] = 1
	}
	return m
}

func (m *legacy) addRows(rows []float64) {
	k := m.k
	n := len(rows) / k
	for r := 0; r < n; {
		take := min(panelRows-m.prow, n-r)
		src := rows[r*k : (r+take)*k]
		if !legacyFinite(src) {
			panic("legacy: non-finite value")
		}
		dst := m.panel[m.prow*m.ld:]
		for t := 0; t < take; t++ {
			copy(dst[t*m.ld:t*m.ld+k], src[t*k:(t+1)*k])
		}
		m.prow += take
		r += take
		if m.prow == panelRows {
			m.runPanel()
		}
	}
}

func legacyFinite(x []float64) bool {
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

func (m *legacy) runPanel() {
	if m.prow == 0 {
		return
	}
	m.kn.gram(m.panel, m.prow, m.ld, m.blk, m.ldc, m.k+1)
	m.prow = 0
	m.blkPanels++
	if m.blkPanels >= legacyBlockPanels {
		m.fold()
	}
}

func (m *legacy) fold() {
	for j := 0; j <= m.k; j++ {
		off := j * m.ldc
		s, c, c2 := m.tot[off:off+j+1], m.comp[off:off+j+1], m.comp2[off:off+j+1]
		for i, v := range m.blk[off : off+j+1] {
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
		clear(m.blk[off : off+m.ldc])
	}
	m.blkPanels = 0
}

func (m *legacy) flush() {
	m.runPanel()
	if m.blkPanels > 0 {
		m.fold()
	}
}
