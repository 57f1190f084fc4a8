package inference

import (
	"fmt"
	"math"
)

// The inference budget (issue 24: "the forecast and the intervals together
// ≤ 0.2× of the rest of the fit at every D ≤ 1000").
//
// The fit costs Θ(N·d²) (the Gram of N encoded rows), the inference
// Θ(R·d³) for R simulated releases (each a d×d noise draw and a Cholesky
// solve, some of them an eigen-decomposition): at N = 100,000 the default
// R ≈ 4000 (DefaultReplicates first-level replicates, the calibration's
// CalibrationOuter·CalibrationInner second-level ones and two forecasts
// of ForecastReplicates) costs 10× the fit at d = 50 and 100× at d = 500,
// and no exact 2000-replicate bootstrap can be 0.2× of it. So the
// inference gets a budget computed from public quantities only — N (public
// under replace-one neighbours) and d (from the schema) — by a
// deterministic operation-count model, never a clock: the same command
// gives the same output on every machine.
//
// Cost model (units: nanoseconds of one core of the calibration machine;
// only ratios matter). Measured by BenchmarkCostModel (bench_cost_test.go,
// 2-core AMD EPYC shared with other jobs, load 5–7, 2026-11-27; CPU time):
//
//	d                      10     20     50     100     200
//	Gram, ns per row·k(k+1)/2   0.609  0.375  0.171  0.119   0.101
//	fast replicate, µs     4.5    11.8   94     359     5669
//	eigen extra, µs        11.4   44     381    2599    10338
//
// fitted (rounded so that the fit is under- and the inference
// over-estimated where the fit is off, keeping the measured share below
// InferenceShare) as
//
//	FitCost(N, d)     = N·(gramMAC·k(k+1)/2 + gramRow·k),  k = d + 1
//	fastCost(d)       = fast0 + fast2·d² + fast3·d³  (noise draw d²/2
//	                    Gaussians + Cholesky d³/3 + overhead)
//	eigenCost(d)      = fastCost(d) + eig0 + eig2·d² + eig3·d³
//	                    (tridiagonal reduction and vectors)
//
// A fit that reads its rows from a table (CSV or Parquet) also pays for
// reading them: TableFitCost adds parseNum per number read (cols numbers
// per row, the schema's raw columns, not the encoded coefficients: a
// category column is read once however many coefficients it becomes).
// Measured on the quiet machine (bench, 2026-11-27 14:00 UTC, 500,000 × 50
// CSV): CSV → statistics 1.035 s of CPU, of which the Gram is 0.11 s by
// the model above, so 36 ns per number; parseNum is rounded down to 30 so
// the fit is under-estimated. A fit from a statistics file uses FitCost
// alone (its rows were read elsewhere), and so does the fit's own d×d
// solve, left out.
const (
	gramMAC = 0.085
	gramRow = 2.0
	fast0   = 2700
	fast2   = 13.4
	fast3   = 0.7
	eig0    = 5000
	eig2    = 50
	eig3    = 2.6
	// parseNum is the cost of reading one number of a table.
	parseNum = 30
)

// InferenceShare is the budget of the forecasts and the intervals as a
// share of FitCost.
const InferenceShare = 0.2

// MinReplicates is the fewest first-level replicates the budget gives the
// intervals; below it they are off unless requested. The interval ends are
// the 2.5% and 97.5% quantiles of B replicates, whose Monte Carlo standard
// error is √(p(1−p)/B)/φ(z) = 2.67/√B standard errors (p = 0.025,
// z = 1.96): 0.19 SE at B = 200 (0.06 at 2000). A random error s (in SE
// units) in each critical value lowers the coverage by about φ(z)·z·s²
// (the second-order term of Φ(z + e₁) − Φ(−z − e₂), E e² = s²): 0.41
// percentage points at B = 200, 0.04 at 2000. Measured
// (TestCoverageReducedBudget, same datasets): 93.6% pooled at B = 200
// against 94.6% at the default sizes, a loss of 1.0 point, since the
// median-bias correction and the SE come from the same 200 replicates;
// still inside issue 25's 93–97%.
const MinReplicates = 200

// FullD: fits with at most FullD coefficients always get the default
// inference, whose cost is then bounded by a constant (modelled at 0.06 s
// of one core, measured at 0.04 s), however small N is: ordinary tables
// (CPS1988, SmokeBan, the README demo) keep 2000 replicates. Between FullD
// and FadeD the budget is at least that constant fading linearly to 0 at
// FadeD, so a 24-coefficient design of N = 5·10⁴ rows (issue 25's) keeps
// 1171 replicates; from FadeD on it is InferenceShare·FitCost alone.
const (
	FullD = 20
	FadeD = 50
)

// FitCost is the cost model's cost of the rest of the fit: the Gram of n
// rows of d encoded coefficients and the target.
func FitCost(n int64, d int) float64 {
	k := float64(d + 1)
	return float64(n) * (gramMAC*k*(k+1)/2 + gramRow*k)
}

// TableFitCost is FitCost plus reading n rows of cols numbers from a
// table (cols ≤ 0: the rows were not read by this fit).
func TableFitCost(n int64, d, cols int) float64 {
	return FitCost(n, d) + float64(n)*float64(max(cols, 0))*parseNum
}

// fastCost is one simulated release solved by Cholesky.
func fastCost(d int) float64 {
	x := float64(d)
	return fast0 + fast2*x*x + fast3*x*x*x
}

// eigenCost is one simulated release solved by eigen-decomposition.
func eigenCost(d int) float64 {
	x := float64(d)
	return fastCost(d) + eig0 + eig2*x*x + eig3*x*x*x
}

// Budget is the plan of the inference work for one fit.
type Budget struct {
	// Replicates is the first-level bootstrap size B; 0 means no intervals
	// (the budget allows fewer than MinReplicates).
	Replicates int `json:"replicates"`
	// CalibrationOuter, CalibrationInner and CalibrationObserved size the
	// calibration (Options).
	CalibrationOuter    int `json:"calibration_outer"`
	CalibrationInner    int `json:"calibration_inner"`
	CalibrationObserved int `json:"calibration_observed"`
	// ForecastReplicates is the size of the forecast before fitting and
	// ReleasedForecastReplicates that of the forecast on the released
	// design; 0 means it does not fit the budget (when only one does, it
	// is the one before fitting, whose warning comes before any ε is
	// spent).
	ForecastReplicates         int `json:"forecast_replicates"`
	ReleasedForecastReplicates int `json:"released_forecast_replicates"`
	// Full says the default inference fits the budget.
	Full bool `json:"full"`
	// CostRatio is the modelled cost of the default inference (forecasts
	// and intervals) ÷ FitCost.
	CostRatio float64 `json:"cost_ratio"`
	// D and N are the inputs, and Columns the numbers read per row from
	// a table (0: a fit from statistics).
	D       int   `json:"d"`
	N       int64 `json:"n"`
	Columns int   `json:"columns,omitempty"`
}

// forecastEigen counts the eigen-decompositions of a forecast besides its
// simulated fits (the reference or released design, and the shrinkage),
// fixedEigen those outside the replicates: the released objective's and
// the two forecasts'.
const (
	forecastEigen = 2
	fixedEigen    = 1 + 2*forecastEigen
)

// cost is the modelled cost of an inference of the given sizes.
func cost(d, reps, outer, inner, observed, forecast int) float64 {
	fast := reps - observed + outer*inner + 2*forecast
	return float64(fast)*fastCost(d) + float64(observed+fixedEigen)*eigenCost(d)
}

// defaultCost is the modelled cost of the default inference.
func defaultCost(d int) float64 {
	return cost(d, DefaultReplicates, CalibrationOuter, CalibrationInner, calibrationObserved, ForecastReplicates)
}

// ForecastReplicates is the number of simulated designs of each forecast
// at the default size.
const ForecastReplicates = 500

// Allowance is the cost the budget allows the inference of a fit with d
// coefficients on n rows: the default inference's for d ≤ FullD, else
// InferenceShare·FitCost(n, d), at least defaultCost(FullD) fading
// linearly to 0 between FullD and FadeD.
func Allowance(n int64, d int) float64 { return allowance(n, d, 0) }

// allowance is Allowance for a fit that reads cols numbers per row from a
// table (TableFitCost).
func allowance(n int64, d, cols int) float64 {
	if d <= FullD {
		return math.Max(defaultCost(d), InferenceShare*TableFitCost(n, d, cols))
	}
	floor := defaultCost(FullD) * math.Max(0, float64(FadeD-d)/float64(FadeD-FullD))
	return math.Max(InferenceShare*TableFitCost(n, d, cols), floor)
}

// scaled returns the sizes at scale s ∈ (0, 1] of the default: B and the
// forecasts ×s, the calibration's outer and inner counts ×√s (at least
// calibrationMinKept each, so its factors still have centres).
func scaled(s float64) (reps, outer, inner, observed, forecast int) {
	reps = int(math.Floor(DefaultReplicates * s))
	r := math.Sqrt(s)
	outer = max(calibrationMinKept, int(math.Round(CalibrationOuter*r)))
	inner = max(calibrationMinKept, int(math.Round(CalibrationInner*r)))
	observed = max(outer, int(math.Round(calibrationObserved*s)))
	forecast = int(math.Floor(ForecastReplicates * s))
	return
}

// PlanBudget sizes the inference of a fit with d coefficients on n rows
// (both public) so that its modelled cost is within Allowance(n, d): the
// default sizes when they fit; else every size scaled by the largest
// s that fits (scaled), as long as B ≥ MinReplicates; else no intervals
// and the whole allowance to the two forecasts (each at most
// ForecastReplicates, none below MinForecastReplicates; the one before
// fitting alone when both do not fit). It is a pure
// function of (n, d).
func PlanBudget(n int64, d int) Budget { return PlanTableBudget(n, d, 0) }

// PlanTableBudget is PlanBudget for a fit that reads its n rows, cols
// numbers each (the schema's raw columns, public), from a table: the
// allowance is InferenceShare·TableFitCost. cols ≤ 0 is PlanBudget.
func PlanTableBudget(n int64, d, cols int) Budget {
	b := Budget{D: d, N: n, Columns: max(cols, 0), CostRatio: defaultCost(d) / TableFitCost(n, d, cols)}
	allow := allowance(n, d, cols)
	if defaultCost(d) <= allow {
		b.Full = true
		b.Replicates, b.ForecastReplicates, b.ReleasedForecastReplicates = DefaultReplicates, ForecastReplicates, ForecastReplicates
		b.CalibrationOuter, b.CalibrationInner, b.CalibrationObserved = CalibrationOuter, CalibrationInner, calibrationObserved
		return b
	}
	// Largest s on a grid of 1/DefaultReplicates whose cost fits
	// (cost is non-decreasing in s).
	lo, hi := 0, DefaultReplicates
	for lo < hi {
		mid := (lo + hi + 1) / 2
		r, o, i, ob, f := scaled(float64(mid) / DefaultReplicates)
		if cost(d, r, o, i, ob, f) <= allow {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo >= MinReplicates { // B = lo at scale lo/DefaultReplicates
		b.Replicates, b.CalibrationOuter, b.CalibrationInner, b.CalibrationObserved, b.ForecastReplicates = scaled(float64(lo) / DefaultReplicates)
		b.ReleasedForecastReplicates = b.ForecastReplicates
		return b
	}
	// No intervals: the forecasts alone (each one eigen-decomposition
	// besides its fast solves), both if each gets MinForecastReplicates,
	// else the one before fitting alone.
	f := int(math.Floor((allow/2 - forecastEigen*eigenCost(d)) / fastCost(d)))
	if f >= MinForecastReplicates {
		b.ForecastReplicates = min(ForecastReplicates, f)
		b.ReleasedForecastReplicates = b.ForecastReplicates
		return b
	}
	if f := int(math.Floor((allow - forecastEigen*eigenCost(d)) / fastCost(d))); f >= MinForecastReplicates {
		b.ForecastReplicates = min(ForecastReplicates, f)
	}
	return b
}

// Options returns the interval options of the budget (zero sizes: the
// defaults).
func (b Budget) Options() Options {
	return Options{Replicates: b.Replicates, CalibrationOuter: b.CalibrationOuter, CalibrationInner: b.CalibrationInner, CalibrationObserved: b.CalibrationObserved}
}

// QuantileMCError is the Monte Carlo standard error, in standard errors
// of the estimate, of the α/2 and 1 − α/2 quantiles of B normal bootstrap
// replicates at level 0.95: √(p(1−p)/B)/φ(z) with p = 0.025.
func QuantileMCError(b int) float64 {
	const p = 0.025
	z := NormalQuantile(1 - p)
	phi := math.Exp(-z*z/2) / math.Sqrt(2*math.Pi)
	return math.Sqrt(p*(1-p)/float64(b)) / phi
}

// CoverageLoss is the expected loss of coverage of a 95% interval whose
// two ends each carry a Monte Carlo error of QuantileMCError(b): φ(z)·z·s².
func CoverageLoss(b int) float64 {
	z := NormalQuantile(0.975)
	s := QuantileMCError(b)
	return math.Exp(-z*z/2) / math.Sqrt(2*math.Pi) * z * s * s
}

// CostRatioText is CostRatio for a sentence: three significant digits,
// without an exponent.
func (b Budget) CostRatioText() string {
	if b.CostRatio >= 100 {
		return fmt.Sprintf("%.0f", b.CostRatio)
	}
	return fmt.Sprintf("%.3g", b.CostRatio)
}

// Note is the one-line statement of a budget below the default: for
// intervals computed with fewer replicates, their count and Monte Carlo
// error; for intervals off, why and the flag that requests them.
func (b Budget) Note() string {
	switch {
	case b.Full:
		return ""
	case b.Replicates > 0:
		return fmt.Sprintf("%d bootstrap replicates, not the default %d: at d = %d, N = %d the default forecasts and intervals would cost %s× the fit's arithmetic (counted from N and d) and their budget is %g× (inference.PlanBudget); the interval ends carry a Monte Carlo error of about %.2f SE (coverage about %.2f points below nominal from the ends alone); --intervals=on uses the default %d",
			b.Replicates, DefaultReplicates, b.D, b.N, b.CostRatioText(), InferenceShare, QuantileMCError(b.Replicates), 100*CoverageLoss(b.Replicates), DefaultReplicates)
	}
	return fmt.Sprintf("no confidence intervals by default at d = %d, N = %d: the forecasts and intervals would cost %s× the fit's arithmetic (counted from N and d; budget %g×, under %d replicates); nothing was spent on them, the whole ε went to the fit; --intervals=on computes them anyway",
		b.D, b.N, b.CostRatioText(), InferenceShare, MinReplicates)
}
