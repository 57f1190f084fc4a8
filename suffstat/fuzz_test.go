package suffstat

import (
	"math"
	"testing"
)

// FuzzUnmarshal feeds arbitrary bytes to the partial-result decoder. It must
// never panic; whatever it accepts must re-encode and decode to the same
// statistics. Seed corpus: testdata/fuzz/FuzzUnmarshal.
func FuzzUnmarshal(f *testing.F) {
	m := New(3)
	m.AddRows([]float64{1, 0.2, 0.3, -0.5, 0.25, 1e-3})
	good, _ := m.MarshalBinary()
	f.Add(good)
	f.Add(good[:len(good)-1])
	f.Add([]byte("DPSS"))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		var got Moments
		if err := got.UnmarshalBinary(data); err != nil {
			return
		}
		b, err := got.MarshalBinary()
		if err != nil {
			t.Fatalf("re-encode: %v", err)
		}
		var again Moments
		if err := again.UnmarshalBinary(b); err != nil {
			t.Fatalf("decode of re-encoding: %v", err)
		}
		if again.N() != got.N() || again.K() != got.K() {
			t.Fatal("N or K changed")
		}
		for i := 0; i < got.K(); i++ {
			if again.Sum(i) != got.Sum(i) || math.IsNaN(got.Sum(i)) {
				t.Fatalf("Sum(%d) changed", i)
			}
			for j := 0; j < got.K(); j++ {
				if again.At(i, j) != got.At(i, j) {
					t.Fatalf("At(%d,%d) changed", i, j)
				}
			}
		}
	})
}
