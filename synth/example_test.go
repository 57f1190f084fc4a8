package synth_test

import (
	"fmt"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/synth"
)

// A histogram of encoded rows on a public grid: a binary column and a
// numeric column in four bins.
func ExampleBuild() {
	d := &synth.Domain{Axes: []synth.Axis{
		{Name: "smoker", Cols: 1, Levels: [][]float64{{0}, {1}}},
		{Name: "age", Lo: 0, Hi: 1, Bins: 4},
	}}
	h, err := synth.Build(d, []float64{0, 0.1, 0, 0.15, 1, 0.9})
	if err != nil {
		panic(err)
	}
	fmt.Println(h.Cells, h.Counts)
	// Output: [0 7] [2 1]
}

// Filter-Priority on a domain of 2^40 cells: the empty cells are never
// materialised. At ε = 200 the noise is negligible, so the published cells
// are those with count ≥ θ.
func ExampleFilter_Apply() {
	h := &synth.Histogram{Cells: []uint64{3, 1 << 39}, Counts: []int64{1, 4}, N: 5}
	f, err := synth.NewFilter(200, 2, 1<<40)
	if err != nil {
		panic(err)
	}
	out, err := f.Apply(h, noise.NewInsecureSeeded(1))
	if err != nil {
		panic(err)
	}
	sample, tau, err := synth.PrioritySample(out, 10, noise.NewInsecureSeeded(2))
	if err != nil {
		panic(err)
	}
	fmt.Println(sample, tau)
	// Output: [{549755813888 4 4}] 0
}
