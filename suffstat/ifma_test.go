package suffstat

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestIntegerPathExtremes runs every kernel on 8492 rows of width 20 whose
// values are ±1, ±0 and grid midpoints (products up to 2⁹⁴, carries out of
// every low half), and requires the same bytes from each; the integer
// kernels run twice, with their spills every intSpillPanels panels and
// every 40 (normalizations of lo between and across spills). Then a bad
// value inside the vector-converted prefix of a row must be reported at
// its row and column by every kernel.
func TestIntegerPathExtremes(t *testing.T) {
	const k = 20
	n := 2*4096 + 300
	rng := rand.New(rand.NewPCG(4, 4))
	rows := make([]float64, n*k)
	for i := range rows {
		switch rng.IntN(4) {
		case 0, 1:
			rows[i] = float64(2*rng.IntN(2) - 1)
		case 2:
			rows[i] = math.Copysign(0, float64(rng.IntN(2))-0.5)
		default:
			rows[i] = float64(2*rng.Int64N(1<<46)-(1<<46)+1) * 0x1p-47
		}
	}
	// The first 4400 rows hold u = 2²⁶ − 1 everywhere: every product's low
	// half is 2⁵² − 2²⁷ + 1, so 4096 rows of them overflow a 64-bit sum:
	// lo must be normalized in time (intNormPanels).
	worst := -1 + float64(1<<26-1)*0x1p-46
	for i := range rows[:4400*k] {
		rows[i] = worst
	}
	var want []byte
	for _, kn := range kernels() {
		spills := []int{0}
		if kn.itile != nil {
			spills = append(spills, 40)
		}
		for _, every := range spills {
			m := newWithKernel(k, kn)
			m.SetWorkers(1)
			m.spillEvery = every
			if err := m.AddRows(rows); err != nil {
				t.Fatal(err)
			}
			b, err := m.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			if want == nil {
				want = b
			} else if string(b) != string(want) {
				t.Fatalf("kernel %s (spill every %d panels): statistics differ from kernel %s", kn.name, every, kernels()[0].name)
			}
		}
	}
	for _, bad := range []float64{math.NaN(), 1.0000000000000002, math.Inf(-1)} {
		r := append([]float64(nil), rows[:300*k]...)
		r[137*k+9] = bad
		for _, kn := range kernels() {
			m := newWithKernel(k, kn)
			err := m.AddRows(r)
			if err == nil || !strings.Contains(err.Error(), "row 137, column 9") {
				t.Errorf("kernel %s: value %v at row 137, column 9: error %v", kn.name, bad, err)
			}
		}
	}
}
