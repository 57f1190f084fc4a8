package fit_test

import (
	"bytes"
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/exampledata"
	"github.com/dplearn/dplearn/fit"
	"github.com/dplearn/dplearn/inference"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// load returns the first n rows of an embedded dataset (all when n ≤ 0),
// with statistics and rows.
func load(t testing.TB, name string, n int) (fit.Data, *schema.Schema) {
	t.Helper()
	ds, err := exampledata.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Parse(ds.Schema)
	if err != nil {
		t.Fatal(err)
	}
	csv := ds.CSV
	if n > 0 {
		lines := bytes.SplitAfter(csv, []byte("\n"))
		csv = bytes.Join(lines[:n+1], nil)
	}
	tab, sum, err := dataset.LoadReader(context.Background(), bytes.NewReader(csv), name+".csv", s, dataset.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := suffstat.New(tab.K)
	if err := m.AddRows(tab.Rows); err != nil {
		t.Fatal(err)
	}
	m.Flush()
	return fit.Data{Data: regress.Data{Stats: m, Rows: tab.Rows}, N: sum.Rows}, s
}

// TestRunComposesTheIntervalsRelease checks the budget split and the
// composition of a linear gaussian-fm fit with intervals against an
// independent recomputation: the fit alone, run directly by regress with
// ε·(1 − share), must give the same coefficients (same seed, same
// structure) and guarantee; Run's report must add exactly the Laplace
// release of Λ0 with ε·share, so that the composed ε is the ε requested.
func TestRunComposesTheIntervalsRelease(t *testing.T) {
	data, s := load(t, "cps1988", 3000)
	const eps, delta, share = 1.0, 1e-6, 0.05
	req := fit.Request{Kind: regress.Linear, Mechanism: "gaussian-fm", Epsilon: eps, Delta: delta, CIShare: share, Seeded: true, Seed: 7}
	res, err := fit.Run(context.Background(), req, data, s)
	if err != nil {
		t.Fatal(err)
	}
	est, err := regress.New("gaussian-fm")
	if err != nil {
		t.Fatal(err)
	}
	st, err := regress.GramStructureFor(s)
	if err != nil {
		t.Fatal(err)
	}
	alone, err := est.Fit(context.Background(), data.Data, regress.Config{Kind: regress.Linear, Epsilon: eps * (1 - share), Delta: delta,
		Lambda: -1, Structure: st, Source: noise.NewInsecureSeeded(7)})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Model.Coefficients, alone.Coef) {
		t.Fatalf("Run's coefficients %v differ from the fit alone at ε(1 − share): %v", res.Model.Coefficients, alone.Coef)
	}
	p := res.Model.Privacy
	if want := alone.Privacy.Epsilon + (eps - eps*(1-share)); p.Epsilon != want || p.Delta != alone.Privacy.Delta {
		t.Errorf("composed guarantee (%v, %v), want the fit's (%v, %v) plus ε = %v", p.Epsilon, p.Delta, alone.Privacy.Epsilon, alone.Privacy.Delta, eps*share)
	}
	if math.Abs(p.Epsilon-eps) > 1e-12 {
		t.Errorf("composed ε = %v, want the requested %v", p.Epsilon, eps)
	}
	if len(p.Releases) != len(alone.Privacy.Releases)+1 {
		t.Fatalf("%d releases, want the fit's %d and Λ0", len(p.Releases), len(alone.Privacy.Releases))
	}
	if last := p.Releases[len(p.Releases)-1]; last.Noise != "laplace" || !strings.Contains(last.Name, "Λ0") {
		t.Errorf("extra release %+v, want Laplace noise on Λ0", last)
	}
	if slices.Contains(p.PostProcessing, regress.Lambda0NotReleased) {
		t.Errorf("the report still says Λ0 is not released: %q", p.PostProcessing)
	}
	if !strings.Contains(p.Accountant, "; then basic composition with the Laplace release of the target moment Λ0") {
		t.Errorf("accountant %q does not state the composition", p.Accountant)
	}
	if res.Table == nil || res.Model.Inference != res.Table || res.Table.TargetMoment == nil || res.Table.Level != 0.95 {
		t.Fatalf("table %+v: want the model's, with the released Λ0 and 95%% intervals", res.Table)
	}
	for _, r := range res.Table.Rows {
		if r.Identified && !(r.Lower <= r.Encoded && r.Encoded <= r.Upper) {
			t.Errorf("%s: estimate %v outside its interval [%v, %v]", r.Name, r.Encoded, r.Lower, r.Upper)
		}
	}
	if res.FitEpsilon != eps*(1-share) || res.Forecast == nil {
		t.Errorf("FitEpsilon %v, forecast %v: want %v and a forecast", res.FitEpsilon, res.Forecast, eps*(1-share))
	}
	// The forecast on the released design (issue 25 item 1) is the one of
	// the fit's own release: recomputed from the fit alone's.
	want, err := inference.ReleasedForecast("gaussian-fm", alone.Released, s, inference.Options{Replicates: fit.ForecastReplicates})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.ReleasedForecast; res.ReleasedForecastErr != nil || got == nil || got.Reference != inference.ReleasedDesign ||
		!slices.Equal(got.CoefSD, want.CoefSD) || got.PredictionRMS != want.PredictionRMS {
		t.Errorf("released-design forecast %+v (error %v), want %+v", got, res.ReleasedForecastErr, want)
	}
	req.NoForecast = true
	if res, err := fit.Run(context.Background(), req, data, s); err != nil || res.Forecast != nil || res.ReleasedForecast != nil {
		t.Errorf("NoForecast: forecasts %v, %v (error %v), want none", res.Forecast, res.ReleasedForecast, err)
	}
}

// TestRunDeltaAgainstN checks the one rule for δ against N at its edge:
// δ = 1/N is refused, the float64 just below it is accepted.
func TestRunDeltaAgainstN(t *testing.T) {
	data, s := load(t, "cps1988", 600)
	for _, tc := range []struct {
		delta float64
		ok    bool
	}{{1.0 / 600, false}, {math.Nextafter(1.0/600, 0), true}, {0.5, false}} {
		req := fit.Request{Kind: regress.Linear, Mechanism: "gaussian-fm", Epsilon: 1, Delta: tc.delta, Seeded: true, NoForecast: true}
		_, err := fit.Run(context.Background(), req, data, s)
		if (err == nil) != tc.ok {
			t.Errorf("δ = %v with N = 600: error %v, want ok = %v", tc.delta, err, tc.ok)
		}
		if err != nil && !strings.Contains(err.Error(), "not below 1/N") {
			t.Errorf("δ = %v: %v, want the 1/N refusal", tc.delta, err)
		}
	}
}

// TestCheck checks the refusals made before any data is read, with the
// library's default for Given (a parameter is given when it is not its
// zero value or default).
func TestCheck(t *testing.T) {
	base := fit.Request{Kind: regress.Linear, Mechanism: "gaussian-fm", Epsilon: 1, Delta: 1e-6}
	for _, tc := range []struct {
		name string
		edit func(*fit.Request)
		want string // "" means accepted
	}{
		{"ok", func(*fit.Request) {}, ""},
		{"unknown mechanism", func(r *fit.Request) { r.Mechanism = "nope" }, "--mechanism"},
		{"model", func(r *fit.Request) { r.Kind = regress.Robust }, "cannot be fitted by --mechanism gaussian-fm"},
		{"no epsilon", func(r *fit.Request) { r.Epsilon = 0 }, "needs --epsilon"},
		{"infinite epsilon", func(r *fit.Request) { r.Epsilon = math.Inf(1) }, "finite number > 0"},
		{"no delta", func(r *fit.Request) { r.Delta = 0 }, "needs --delta"},
		{"delta 1", func(r *fit.Request) { r.Delta = 1 }, "--delta must be in (0, 1)"},
		{"delta for fm", func(r *fit.Request) { r.Mechanism = "fm" }, "pure ε-DP and takes no δ"},
		{"epsilon for nonprivate", func(r *fit.Request) { r.Mechanism, r.Delta = "nonprivate", 0 }, "adds no noise"},
		{"ignored option", func(r *fit.Request) { r.Options = map[string]any{"iterations": 5} }, "--iterations is read only by --mechanism noisygd"},
		{"default option is not given", func(r *fit.Request) { r.Options = map[string]any{"iterations": 0} }, ""},
		{"option range", func(r *fit.Request) { r.Options = map[string]any{"split": 1.5} }, "--split must be in (0, 1)"},
		{"explicit given", func(r *fit.Request) { r.Given = map[string]bool{"epsilon": true, "delta": true, "split": true} }, ""},
		{"ci share", func(r *fit.Request) { r.CIShare = 1 }, "--ci-share must be in [0, 1)"},
		{"ci share ignored without intervals", func(r *fit.Request) { r.Mechanism, r.CIShare = "noisygd", 1 }, ""},
		{"HC1 private", func(r *fit.Request) { r.Cov = regress.CovHC1 }, "--cov HC1 is for the classical summary"},
		{"cov", func(r *fit.Request) { r.Cov = "HC3" }, "--cov must be nonrobust or HC1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := base
			tc.edit(&r)
			err := fit.Check(r)
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

// TestRunNotesDependOnRequestOnly checks that the zero-row notes follow
// the request and the schema, not the number of zero rows (a
// data-dependent count that must not reach the report).
func TestRunNotesDependOnRequestOnly(t *testing.T) {
	data, s := load(t, "cps1988", 1000)
	var reports []string
	for _, zero := range []int64{0, 17} {
		d := data
		d.ZeroRows = zero
		req := fit.Request{Kind: regress.Linear, Mechanism: "fm", Epsilon: 1, SkipBadRows: true, Seeded: true, NoForecast: true}
		res, err := fit.Run(context.Background(), req, d, s)
		if err != nil {
			t.Fatal(err)
		}
		reports = append(reports, strings.Join(res.Model.Privacy.Notes, "\n"))
	}
	if reports[0] != reports[1] || !strings.Contains(reports[0], "--skip-bad-rows") {
		t.Errorf("notes depend on the number of zero rows or miss the --skip-bad-rows note:\n%s\n---\n%s", reports[0], reports[1])
	}
}
