package inference

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// The benchmarks below measure the fit path at D coefficients on 100,000
// rows (issue 24, "Speed of the fit path"): BenchmarkFitD* is the rest of
// the fit (the exact statistics of the encoded rows with suffstat, then
// the gaussian-fm release and solve), BenchmarkForecastD* the forecast
// before fitting (500 simulated releases, as `dplearn fit` runs it) and
// BenchmarkIntervalsD* the confidence intervals (2000 replicates, the
// default). The goal is forecast + intervals ≤ 0.2 × the rest of the fit
// for D ≤ 1000; compare the ns/op of the three in one run.

const benchRows = 100_000

// reportCPU reports the CPU seconds per operation since start (the
// machine is shared: wall time counts other processes' load, CPU time
// does not; gonum's parallel products are counted on every core).
func reportCPU(b *testing.B, start float64) {
	b.ReportMetric((processCPU()-start)/float64(b.N), "cpu-s/op")
}

type benchCase struct {
	s    *schema.Schema
	rows []float64
	k    int
}

var benchCases = map[int]*benchCase{}

// benchData is D − 1 numeric features (uniform, the first two correlated)
// and the intercept, with a linear target.
func benchData(b testing.TB, d int) *benchCase { return benchDataN(b, d, benchRows) }

// benchDataN is benchData with n rows.
func benchDataN(b testing.TB, d, n int) *benchCase {
	key := d*10_000_000 + n
	if c := benchCases[key]; c != nil {
		return c
	}
	var fs []string
	for j := 1; j < d; j++ {
		fs = append(fs, fmt.Sprintf(`{"name": "x%d", "range": [-1, 1]}`, j))
	}
	s, err := schema.Parse([]byte(fmt.Sprintf(`{"target": {"name": "y", "range": [-1, 1]}, "features": [%s]}`, strings.Join(fs, ", "))))
	if err != nil {
		b.Fatal(err)
	}
	sc := 1 / math.Sqrt(float64(s.Bound()))
	k := d + 1
	rng := rand.New(rand.NewPCG(uint64(d), 24))
	rows := make([]float64, n*k)
	for r := 0; r < n; r++ {
		x := rows[r*k : (r+1)*k]
		x[0] = sc
		z := 0.1 * sc
		for j := 1; j < d; j++ {
			x[j] = sc * (2*rng.Float64() - 1)
			z += 0.3 * x[j] / math.Sqrt(float64(d))
		}
		x[k-1] = math.Max(-1, math.Min(1, z+0.2*(2*rng.Float64()-1)))
	}
	c := &benchCase{s: s, rows: rows, k: k}
	benchCases[key] = c
	return c
}

func benchConfig(c *benchCase) regress.Config {
	return regress.Config{Kind: regress.Linear, Epsilon: 0.95, Delta: 1e-6, Lambda: -1, Source: noise.NewInsecureSeeded(1)}
}

func benchFit(b *testing.B, d int) {
	c := benchData(b, d)
	est, err := regress.New("gaussian-fm")
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	defer reportCPU(b, processCPU())
	for i := 0; i < b.N; i++ {
		m := suffstat.New(c.k)
		m.SetWorkers(1)
		if err := m.AddRows(c.rows); err != nil {
			b.Fatal(err)
		}
		m.Flush()
		if _, err := est.Fit(context.Background(), regress.Data{Stats: m}, benchConfig(c)); err != nil {
			b.Fatal(err)
		}
	}
}

func benchForecast(b *testing.B, d int) {
	c := benchData(b, d)
	b.ResetTimer()
	defer reportCPU(b, processCPU())
	for i := 0; i < b.N; i++ {
		if _, err := NoiseForecast("gaussian-fm", benchConfig(c), c.s, benchRows, Options{Replicates: 500}); err != nil {
			b.Fatal(err)
		}
	}
}

func benchIntervals(b *testing.B, d int) {
	c := benchData(b, d)
	m := suffstat.New(c.k)
	if err := m.AddRows(c.rows); err != nil {
		b.Fatal(err)
	}
	m.Flush()
	est, _ := regress.New("gaussian-fm")
	fit, err := est.Fit(context.Background(), regress.Data{Stats: m}, benchConfig(c))
	if err != nil {
		b.Fatal(err)
	}
	y2 := &TargetMoment{Value: m.At(d, d) / benchRows}
	b.ResetTimer()
	defer reportCPU(b, processCPU())
	for i := 0; i < b.N; i++ {
		if _, err := FM(fit.Released, y2, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// benchReleasedForecast is the forecast repeated after the fit on the
// released design (fit.Result.ReleasedForecast, 500 simulated fits).
func benchReleasedForecast(b *testing.B, d int) {
	c := benchData(b, d)
	m := suffstat.New(c.k)
	if err := m.AddRows(c.rows); err != nil {
		b.Fatal(err)
	}
	m.Flush()
	est, _ := regress.New("gaussian-fm")
	fit, err := est.Fit(context.Background(), regress.Data{Stats: m}, benchConfig(c))
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	defer reportCPU(b, processCPU())
	for i := 0; i < b.N; i++ {
		if _, err := ReleasedForecast("gaussian-fm", fit.Released, c.s, Options{Replicates: 500}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReleasedForecastD50(b *testing.B)  { benchReleasedForecast(b, 50) }
func BenchmarkReleasedForecastD100(b *testing.B) { benchReleasedForecast(b, 100) }
func BenchmarkReleasedForecastD200(b *testing.B) { benchReleasedForecast(b, 200) }
func BenchmarkFitD400(b *testing.B)              { benchFit(b, 400) }
func BenchmarkForecastD400(b *testing.B)         { benchForecast(b, 400) }
func BenchmarkIntervalsD400(b *testing.B)        { benchIntervals(b, 400) }
func BenchmarkReleasedForecastD400(b *testing.B) { benchReleasedForecast(b, 400) }

func BenchmarkFitD50(b *testing.B)        { benchFit(b, 50) }
func BenchmarkForecastD50(b *testing.B)   { benchForecast(b, 50) }
func BenchmarkIntervalsD50(b *testing.B)  { benchIntervals(b, 50) }
func BenchmarkFitD100(b *testing.B)       { benchFit(b, 100) }
func BenchmarkForecastD100(b *testing.B)  { benchForecast(b, 100) }
func BenchmarkIntervalsD100(b *testing.B) { benchIntervals(b, 100) }
func BenchmarkFitD200(b *testing.B)       { benchFit(b, 200) }
func BenchmarkForecastD200(b *testing.B)  { benchForecast(b, 200) }
func BenchmarkIntervalsD200(b *testing.B) { benchIntervals(b, 200) }

// BenchmarkInferenceShare reports, in one run per D, the CPU time of what
// `dplearn fit` adds for inference — the forecast before fitting, the
// forecast on the released design and the intervals (with the
// calibration's second level) — divided by the CPU time of the rest of
// the fit (statistics of N rows and the gaussian-fm release and solve),
// before and after the inference budget (issue 24's goal: ≤ 0.2 for every
// D ≤ 1000):
//
//   - "before/fit": the default sizes (ForecastReplicates = 500 each,
//     DefaultReplicates = 2000, CalibrationOuter×CalibrationInner),
//     as `dplearn fit --intervals=on` still runs them. For D ≥ 500 they
//     run at 1/scale of the default sizes and the time is multiplied by
//     scale (the work is linear in the replicate count; stated in the
//     metric "before-scale").
//   - "after/fit": the sizes of PlanBudget(N, D), as `dplearn fit` runs
//     them by default (B = 0: no intervals; forecasts 0: skipped).
//   - "model-before/fit": the cost model's ratio (Budget.CostRatio), to
//     compare with the measured before/fit.
//
// N is 100,000 except at D = 1000 (20,000 rows: 160 MB of rows); the
// ratios are those at the stated N. Per replicate the inference costs
// O(d³) and the fit O(N·d²), so at fixed sizes the ratio grows about
// linearly in d. D = 1000 takes minutes; run single D values with
// -bench 'InferenceShare/D=200$'.
func BenchmarkInferenceShare(b *testing.B) {
	for _, d := range []int{20, 30, 50, 100, 200, 500, 1000} {
		n := benchRows
		if d == 1000 {
			n = 20_000
		}
		b.Run(fmt.Sprintf("D=%d", d), func(b *testing.B) {
			c := benchDataN(b, d, n)
			est, err := regress.New("gaussian-fm")
			if err != nil {
				b.Fatal(err)
			}
			bud := PlanBudget(int64(n), d)
			scale := 1
			switch {
			case d >= 1000:
				scale = 20
			case d >= 500:
				scale = 10
			}
			defF := ForecastReplicates / scale
			defFM := Options{Replicates: DefaultReplicates / scale, CalibrationOuter: CalibrationOuter, CalibrationInner: max(1, CalibrationInner/scale), CalibrationObserved: max(CalibrationOuter, calibrationObserved/scale)}
			if scale > 1 {
				defF = max(MinForecastReplicates, defF)
				defFM.CalibrationOuter = CalibrationOuter / min(scale, 5)
				defFM.CalibrationInner = max(1, CalibrationOuter*CalibrationInner/scale/defFM.CalibrationOuter)
				defFM.CalibrationObserved = defFM.CalibrationOuter
			}
			inference := func(f, rf int, opt Options, fit *regress.Result, y2 *TargetMoment) {
				if f > 0 {
					if _, err := NoiseForecast("gaussian-fm", benchConfig(c), c.s, int64(n), Options{Replicates: f}); err != nil {
						b.Fatal(err)
					}
				}
				if rf > 0 {
					if _, err := ReleasedForecast("gaussian-fm", fit.Released, c.s, Options{Replicates: rf}); err != nil {
						b.Fatal(err)
					}
				}
				if opt.Replicates > 0 {
					if _, err := FM(fit.Released, y2, opt); err != nil {
						b.Fatal(err)
					}
				}
			}
			var fitS, beforeS, afterS float64
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				// Collections between the phases are charged to none
				// (the rows' generation, the phase before's garbage).
				runtime.GC()
				t0 := processCPU()
				m := suffstat.New(c.k)
				m.SetWorkers(1)
				if err := m.AddRows(c.rows); err != nil {
					b.Fatal(err)
				}
				m.Flush()
				fit, err := est.Fit(context.Background(), regress.Data{Stats: m}, benchConfig(c))
				if err != nil {
					b.Fatal(err)
				}
				y2 := &TargetMoment{Value: m.At(d, d) / float64(n)}
				runtime.GC()
				t1 := processCPU()
				inference(bud.ForecastReplicates, bud.ReleasedForecastReplicates, bud.Options(), fit, y2)
				t2 := processCPU()
				runtime.GC()
				t3 := processCPU()
				inference(defF, defF, defFM, fit, y2)
				t4 := processCPU()
				fitS, afterS, beforeS = fitS+t1-t0, afterS+t2-t1, beforeS+float64(scale)*(t4-t3)
			}
			nb := float64(b.N)
			b.ReportMetric(float64(n), "rows")
			b.ReportMetric(fitS/nb, "fit-cpu-s")
			b.ReportMetric(beforeS/fitS, "before/fit")
			b.ReportMetric(afterS/fitS, "after/fit")
			b.ReportMetric(bud.CostRatio, "model-before/fit")
			b.ReportMetric(float64(bud.Replicates), "B")
			b.ReportMetric(float64(bud.ForecastReplicates), "forecast-reps")
			b.ReportMetric(float64(scale), "before-scale")
			delete(benchCases, d*10_000_000+n) // free the rows
		})
	}
}
