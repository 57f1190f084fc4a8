package suffstat

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestIntegerPathExtremes runs every kernel on 2·intSpillRows + 300 rows of
// width 20 (the vector conversion and two spills of the integer path) whose
// values are ±1, ±0 and grid midpoints, and requires the same bytes from
// each; then a bad value inside the vector-converted prefix of a row must
// be reported at its row and column by every kernel.
func TestIntegerPathExtremes(t *testing.T) {
	const k = 20
	n := 2*intSpillRows + 300
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
	var want []byte
	for _, kn := range kernels() {
		m := newWithKernel(k, kn)
		m.SetWorkers(1)
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
			t.Fatalf("kernel %s: statistics differ from kernel %s", kn.name, kernels()[0].name)
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
