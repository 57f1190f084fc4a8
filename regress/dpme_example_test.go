package regress_test

import (
	"context"
	"fmt"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/suffstat"
	"github.com/dplearn/dplearn/synth"
)

// DPME on four encoded rows (intercept 1, one feature in [−1, 1], target in
// [−1, 1]) with an explicit public grid; the report states the guarantee.
func ExampleNewDPME() {
	rows := []float64{
		1, -0.5, -0.4,
		1, 0.5, 0.6,
		1, 0.25, 0.2,
		1, -0.75, -0.8,
	}
	m := suffstat.New(3)
	if err := m.AddRows(rows); err != nil {
		panic(err)
	}
	dom := &synth.Domain{Axes: []synth.Axis{
		{Name: "(intercept)", Cols: 1, Levels: [][]float64{{1}}},
		{Name: "x", Lo: -1, Hi: 1, Bins: 4},
		{Name: "y", Lo: -1, Hi: 1, Bins: 4},
	}}
	est := regress.NewDPME(regress.HistogramOptions{Domain: dom})
	res, err := est.Fit(context.Background(), regress.Data{Stats: m, Rows: rows},
		regress.Config{Kind: regress.Linear, Epsilon: 1, Source: noise.NewInsecureSeeded(1)})
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Privacy.Guarantee(), len(res.Coef))
	// Output: 1-DP (pure) 2
}
