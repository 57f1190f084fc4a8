package inference

import (
	"context"
	"fmt"
	"testing"

	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/suffstat"
)

// BenchmarkCostModel measures the constants of the cost model (budget.go)
// in CPU seconds on this machine: the Gram's cost per multiply-add
// (N·k(k+1)/2, k = D + 1), a forecast's per simulated fit (the fast
// path: noise draw and Cholesky solve) and the extra cost of an
// eigen-decomposed bootstrap replicate. Run with
// -bench CostModel -benchtime 1x; the metrics are ns per unit.
func BenchmarkCostModel(b *testing.B) {
	for _, d := range []int{10, 20, 50, 100, 200} {
		b.Run(fmt.Sprintf("D=%d", d), func(b *testing.B) {
			c := benchData(b, d)
			est, _ := regress.New("gaussian-fm")
			var gram, fast, eig float64
			for i := 0; i < b.N; i++ {
				t0 := processCPU()
				m := suffstat.New(c.k)
				m.SetWorkers(1)
				if err := m.AddRows(c.rows); err != nil {
					b.Fatal(err)
				}
				m.Flush()
				t1 := processCPU()
				fit, err := est.Fit(context.Background(), regress.Data{Stats: m}, benchConfig(c))
				if err != nil {
					b.Fatal(err)
				}
				r := 400
				if d >= 100 {
					r = 100
				}
				t2 := processCPU()
				if _, err := NoiseForecast("gaussian-fm", benchConfig(c), c.s, benchRows, Options{Replicates: r}); err != nil {
					b.Fatal(err)
				}
				t3 := processCPU()
				if _, err := NoiseForecast("gaussian-fm", benchConfig(c), c.s, benchRows, Options{Replicates: 2 * r}); err != nil {
					b.Fatal(err)
				}
				t4 := processCPU()
				y2 := &TargetMoment{Value: m.At(d, d) / benchRows}
				o := Options{Replicates: 2 * r, CalibrationOuter: 1, CalibrationInner: 1, CalibrationObserved: 1}
				if _, err := FM(fit.Released, y2, o); err != nil {
					b.Fatal(err)
				}
				t5 := processCPU()
				o.CalibrationObserved = r
				if _, err := FM(fit.Released, y2, o); err != nil {
					b.Fatal(err)
				}
				t6 := processCPU()
				k := float64(c.k)
				gram += (t1 - t0) / (benchRows * k * (k + 1) / 2)
				fast += (t4 - t3 - (t3 - t2)) / float64(r)
				eig += (t6 - t5 - (t5 - t4)) / float64(r-1)
			}
			n := float64(b.N) / 1e9
			b.ReportMetric(gram/n, "ns/gram-mac")
			b.ReportMetric(fast/n, "ns/fast-solve")
			b.ReportMetric(eig/n, "ns/eigen-extra")
		})
	}
}
