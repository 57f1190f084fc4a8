package dppp

import (
	"fmt"
	"testing"
	"time"

	"github.com/dplearn/dplearn/accounting"
)

// BenchmarkCalibrateBudgetQueries: calibration to a total budget (10, 1e-5)
// over Q queries (--budget-queries Q), N = 20 at the defaults (H = 7), and
// the cost of the search in units of one accountant evaluation at the
// calibrated noise measured in the same run ("evals": the calibration's
// time over one SelfCompose(Q) + Epsilon on the requested grid), so that
// the figure does not depend on the machine's load. Issue 27: before the
// doubling steps and the bounded coarse grid, Q = 1,000 took 240 binomial
// evaluations on the requested grid (10 s); after, about 15.
func BenchmarkCalibrateBudgetQueries(b *testing.B) {
	for _, kind := range []NoiseKind{Binomial, DGauss} {
		for _, q := range []int{100, 1000, 20000} {
			b.Run(fmt.Sprintf("%v/Q=%d", kind, q), func(b *testing.B) {
				cfg := Config{Teachers: rosterOf(20), Classes: 10, Features: 1, Noise: kind, BudgetEpsilon: 10, BudgetDelta: 1e-5, Queries: q}
				var p *Params
				start := time.Now()
				for i := 0; i < b.N; i++ {
					c := cfg.withDefaults()
					p = &Params{Config: c}
					if _, _, err := p.calibrateNoise(); err != nil {
						b.Fatal(err)
					}
				}
				per := time.Since(start) / time.Duration(b.N)
				b.StopTimer()
				t0 := time.Now()
				var err error
				if kind == Binomial {
					_, err = accounting.BinomialHistogramEpsilon(int64(p.Honest)*p.Coins, q, p.BudgetDelta, p.pldOptions())
				} else {
					_, err = accounting.DGaussSumHistogramEpsilon(p.Sigma, p.Honest, q, p.BudgetDelta, p.pldOptions())
				}
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(per)/float64(time.Since(t0)), "evals")
			})
		}
	}
}
