package fit_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/fit"
	"github.com/dplearn/dplearn/inference"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// wide returns n synthetic rows of d − 1 numeric features in [−1, 1] (and
// the intercept) with a linear target, as fit.Data and its schema.
func wide(t testing.TB, n, d int) (fit.Data, *schema.Schema) {
	t.Helper()
	var fs []string
	for j := 1; j < d; j++ {
		fs = append(fs, fmt.Sprintf(`{"name": "x%d", "range": [-1, 1]}`, j))
	}
	s, err := schema.Parse([]byte(fmt.Sprintf(`{"target": {"name": "y", "range": [-1, 1]}, "features": [%s]}`, strings.Join(fs, ", "))))
	if err != nil {
		t.Fatal(err)
	}
	sc := 1 / math.Sqrt(float64(s.Bound()))
	k := d + 1
	rng := rand.New(rand.NewPCG(uint64(d), uint64(n)))
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
	m := suffstat.New(k)
	if err := m.AddRows(rows); err != nil {
		t.Fatal(err)
	}
	m.Flush()
	return fit.Data{Data: regress.Data{Stats: m}, N: int64(n)}, s
}

// TestRunIntervalsOffByBudget: at d = 50 on 2,000 rows the budget allows
// no intervals (inference.PlanBudget): the fit spends nothing on them
// (the whole ε goes to the fit, no Λ0 is released, the guarantee is the
// fit's alone and says so), the table and the notes carry the one-line
// note naming d, N, the cost ratio and --intervals=on, and the forecasts
// are skipped with the reason. --intervals on and --ci-replicates bring
// them back, at the requested size.
func TestRunIntervalsOffByBudget(t *testing.T) {
	data, s := wide(t, 2000, 50)
	const eps, delta = 1.0, 1e-6
	req := fit.Request{Kind: regress.Linear, Mechanism: "gaussian-fm", Epsilon: eps, Delta: delta, CIShare: fit.DefaultCIShare, Seeded: true, Seed: 3}
	res, err := fit.Run(context.Background(), req, data, s)
	if err != nil {
		t.Fatal(err)
	}
	b := inference.PlanTableBudget(2000, 50, 50) // 49 feature columns and the target
	if b.Replicates != 0 || res.Budget != b {
		t.Fatalf("budget %+v (Run's %+v), want intervals off", b, res.Budget)
	}
	p := res.Model.Privacy
	if res.FitEpsilon != eps || p.Epsilon != eps || p.Delta != delta {
		t.Errorf("fit ε %v, guarantee (%v, %v): want the whole (%v, %v) spent by the fit", res.FitEpsilon, p.Epsilon, p.Delta, eps, delta)
	}
	for _, r := range p.Releases {
		if strings.Contains(r.Name, "Λ0") {
			t.Errorf("release %+v: nothing may be released for intervals that are off", r)
		}
	}
	if !slices.Contains(p.PostProcessing, regress.Lambda0NotReleased) {
		t.Errorf("post-processing %q: want Λ0 not released", p.PostProcessing)
	}
	note := res.Table.Unavailable
	for _, want := range []string{"d = 50", "N = 2000", "--intervals=on", "the whole ε went to the fit", b.CostRatioText() + "× the fit's arithmetic"} {
		if !strings.Contains(note, want) {
			t.Errorf("note %q lacks %q", note, want)
		}
	}
	if strings.Contains(note, "\n") || !slices.Contains(p.Notes, note) {
		t.Errorf("note %q: want one line, also among the privacy notes %q", note, p.Notes)
	}
	if res.Forecast != nil || res.ForecastErr == nil || !strings.Contains(res.ForecastErr.Error(), "skipped") || res.ReleasedForecast != nil {
		t.Errorf("forecasts %v / %v (error %v): want skipped by the budget", res.Forecast, res.ReleasedForecast, res.ForecastErr)
	}

	on := req
	on.Intervals = fit.IntervalsOn
	res, err = fit.Run(context.Background(), on, data, s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Table.Level != 0.95 || res.Table.Replicates != inference.DefaultReplicates || res.FitEpsilon != eps*(1-fit.DefaultCIShare) ||
		math.Abs(res.Model.Privacy.Epsilon-eps) > 1e-12 || res.ReleasedForecast == nil || res.ForecastReplicates != fit.ForecastReplicates {
		t.Errorf("--intervals on: level %v, %d replicates, fit ε %v, total ε %v, forecast size %d: want intervals at the default size",
			res.Table.Level, res.Table.Replicates, res.FitEpsilon, res.Model.Privacy.Epsilon, res.ForecastReplicates)
	}

	reps := req
	reps.Replicates = 300
	res, err = fit.Run(context.Background(), reps, data, s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Table.Replicates != 300 || !strings.Contains(res.Table.Method, "300 replicates, fewer than the default 2000 (--ci-replicates)") {
		t.Errorf("--ci-replicates 300: %d replicates, method %q", res.Table.Replicates, res.Table.Method)
	}

	off := fit.Request{Kind: regress.Linear, Mechanism: "gaussian-fm", Epsilon: eps, Delta: delta, CIShare: fit.DefaultCIShare, Seeded: true, Seed: 3, Intervals: fit.IntervalsOff}
	small, ss := load(t, "cps1988", 3000)
	res, err = fit.Run(context.Background(), off, small, ss)
	if err != nil {
		t.Fatal(err)
	}
	if res.FitEpsilon != eps || res.Model.Privacy.Epsilon != eps || !strings.Contains(res.Table.Unavailable, "--intervals off") {
		t.Errorf("--intervals off: fit ε %v, total %v, table %q: want no intervals and the whole ε to the fit", res.FitEpsilon, res.Model.Privacy.Epsilon, res.Table.Unavailable)
	}
}

// TestRunReducedReplicates: at d = 30 on 100,000 rows the budget gives 527
// replicates; the table states them and their Monte Carlo error, the
// forecasts run at the budget's size.
func TestRunReducedReplicates(t *testing.T) {
	data, s := wide(t, 100000, 30)
	req := fit.Request{Kind: regress.Linear, Mechanism: "gaussian-fm", Epsilon: 1, Delta: 1e-7, CIShare: fit.DefaultCIShare, Seeded: true, Seed: 3}
	res, err := fit.Run(context.Background(), req, data, s)
	if err != nil {
		t.Fatal(err)
	}
	if res.Table.Replicates != 527 || res.ForecastReplicates != 131 || res.ReleasedForecastReplicates != 131 || res.Forecast == nil || res.ReleasedForecast == nil {
		t.Fatalf("%d replicates, forecasts of %d and %d (%v, %v): want the budget's 527 and 131", res.Table.Replicates, res.ForecastReplicates, res.ReleasedForecastReplicates, res.ForecastErr, res.ReleasedForecastErr)
	}
	want := fmt.Sprintf("527 replicates, fewer than the default 2000 (the inference budget at d = 30, N = 100000: the default forecasts and intervals would cost %s× the fit's arithmetic, the budget is 0.2×", res.Budget.CostRatioText())
	if !strings.Contains(res.Table.Method, want) || !strings.Contains(res.Table.Method, fmt.Sprintf("about %.2f SE", inference.QuantileMCError(527))) {
		t.Errorf("method %q lacks %q and the Monte Carlo error", res.Table.Method, want)
	}
}

// TestRunDefaultSizeKeepsFullInference: ordinary tables (the embedded
// CPS1988 and SmokeBan tables of the README demo, d ≤ inference.FullD) keep the default 2000 replicates
// and 500-fit forecasts, whatever N.
func TestRunDefaultSizeKeepsFullInference(t *testing.T) {
	for _, c := range []struct {
		name string
		kind regress.Kind
	}{{"cps1988", regress.Linear}, {"smokeban", regress.Logistic}} {
		name := c.name
		data, s := load(t, name, 0)
		req := fit.Request{Kind: c.kind, Mechanism: "gaussian-fm", Epsilon: 1, Delta: 1e-6, CIShare: fit.DefaultCIShare, Seeded: true, Seed: 1}
		if data.N <= 1e6 {
			req.Delta = 1 / (10 * float64(data.N))
		}
		res, err := fit.Run(context.Background(), req, data, s)
		if err != nil {
			t.Fatal(err)
		}
		if !res.Budget.Full || res.Table.Replicates != inference.DefaultReplicates || res.ForecastReplicates != fit.ForecastReplicates ||
			strings.Contains(res.Table.Method, "fewer than the default") {
			t.Errorf("%s (N = %d, d = %d): budget %+v, %d replicates: want the default inference", name, data.N, s.Dim(), res.Budget, res.Table.Replicates)
		}
	}
}
