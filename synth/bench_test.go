package synth

import (
	"fmt"
	"testing"

	"github.com/dplearn/dplearn/noise"
)

// BenchmarkFilterApply runs the filter on the same 10,000-row histogram
// over domains of 2^20, 2^40 and 2^60 cells (θ from ThresholdFor with
// target N, so about N empty cells pass). The reference is Build on the
// same rows: the ratio Apply/Build should not grow with the domain (the
// empty cells are never materialised).
func BenchmarkFilterApply(b *testing.B) {
	const n = 10000
	for _, bitsM := range []int{20, 40, 60} {
		m := uint64(1) << bitsM
		d := &Domain{Axes: []Axis{{Name: "u", Lo: 0, Hi: 1, Bins: 1 << (bitsM / 2)}, {Name: "v", Lo: 0, Hi: 1, Bins: 1 << (bitsM - bitsM/2)}}}
		rows := make([]float64, 0, 2*n)
		for i := 0; i < n; i++ {
			rows = append(rows, float64(i%97)/97, float64(i%89)/89)
		}
		b.Run(fmt.Sprintf("Build/M=2^%d", bitsM), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Build(d, rows); err != nil {
					b.Fatal(err)
				}
			}
		})
		h, err := Build(d, rows)
		if err != nil {
			b.Fatal(err)
		}
		f, err := NewFilter(1, ThresholdFor(1, m, n), m)
		if err != nil {
			b.Fatal(err)
		}
		src := noise.NewInsecureSeeded(1)
		b.Run(fmt.Sprintf("Apply/M=2^%d", bitsM), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := f.Apply(h, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
