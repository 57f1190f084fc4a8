package fit_test

import (
	"context"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/fit"
	"github.com/dplearn/dplearn/inference"
	"github.com/dplearn/dplearn/regress"
)

// autoCase is one --mechanism auto fit and the mechanism its public rule
// must choose: the request's ε is r·d/N (r the requested N·ε/d), the fit
// gives up fitShare of it to the intervals' release (0 when the intervals
// are off or --ci-share is 0).
type autoCase struct {
	name      string
	r         float64 // N·ε/d at the requested ε
	share     float64 // --ci-share
	intervals string  // --intervals
	fitShare  float64 // the share the fit gives up: its ε is ε·(1 − fitShare)
	want      string  // the mechanism the rule chooses at the fit's ε
}

// runAutoAndChosen fits tc by auto and, independently, by the mechanism tc
// says the rule chooses, asked for directly with the same seed, ε, δ,
// share and interval settings (irls: --model robust with auto's residual
// floor at the fit's ε, computed here from ε·(1 − fitShare)), and checks
// that everything the fit package adds is the chosen mechanism's: the
// coefficients, the coefficient table (intervals, estimand, method), the
// composed guarantee and its releases, the notes, the fit's ε and both
// forecasts; auto's report differs only by its rule line.
func runAutoAndChosen(t *testing.T, tc autoCase) *fit.Result {
	t.Helper()
	data, s := load(t, "cps1988", 3000)
	n, d := data.Stats.N(), data.Stats.K()-1
	eps := tc.r * float64(d) / float64(n)
	fitEps := eps * (1 - tc.fitShare)
	if got := regress.AutoUsesHuber(n, d, fitEps); got != (tc.want == "irls") {
		t.Fatalf("test setup: at the fit's ε = %v (N·ε/d = %v) the rule uses Huber = %v, but the case wants %s", fitEps, float64(n)*fitEps/float64(d), got, tc.want)
	}
	base := fit.Request{Kind: regress.Linear, Mechanism: "auto", Epsilon: eps, Delta: 1e-6, CIShare: tc.share, Intervals: tc.intervals, Seeded: true, Seed: 11}
	got, err := fit.Run(context.Background(), base, data, s)
	if err != nil {
		t.Fatalf("auto: %v", err)
	}
	ref := base
	ref.Mechanism = tc.want
	if tc.want == "irls" {
		ref.Kind = regress.Robust
		ref.Options = map[string]any{"residual-floor": regress.AutoHuberResidualFloor(n, d, fitEps)}
	}
	want, err := fit.Run(context.Background(), ref, data, s)
	if err != nil {
		t.Fatalf("%s: %v", tc.want, err)
	}
	if got.FitEpsilon != want.FitEpsilon || got.FitEpsilon != fitEps {
		t.Errorf("auto's fit ε %v, %s's %v, want ε·(1 − %v) = %v", got.FitEpsilon, tc.want, want.FitEpsilon, tc.fitShare, fitEps)
	}
	if !slices.Equal(got.Model.Coefficients, want.Model.Coefficients) {
		t.Errorf("auto's coefficients %v, %s's %v", got.Model.Coefficients, tc.want, want.Model.Coefficients)
	}
	if !reflect.DeepEqual(got.Table, want.Table) {
		t.Errorf("auto's coefficient table differs from %s's:\nauto: %+v\n%s: %+v", tc.want, *got.Table, tc.want, *want.Table)
	}
	gp, wp := got.Model.Privacy, want.Model.Privacy
	if gp.Epsilon != wp.Epsilon || gp.Delta != wp.Delta || gp.Rho != wp.Rho || gp.Accountant != wp.Accountant || !reflect.DeepEqual(gp.Releases, wp.Releases) {
		t.Errorf("auto's guarantee (ε %v, δ %v, ρ %v, %d releases; %s) differs from %s's (ε %v, δ %v, ρ %v, %d releases; %s)",
			gp.Epsilon, gp.Delta, gp.Rho, len(gp.Releases), gp.Accountant, tc.want, wp.Epsilon, wp.Delta, wp.Rho, len(wp.Releases), wp.Accountant)
	}
	if math.Abs(gp.Epsilon-eps) > 1e-12*eps {
		t.Errorf("composed ε = %v, want the requested %v", gp.Epsilon, eps)
	}
	if !slices.Equal(gp.Notes, wp.Notes) || len(gp.PostProcessing) == 0 || !slices.Equal(gp.PostProcessing[1:], wp.PostProcessing) ||
		!strings.Contains(gp.PostProcessing[0], "public rule") {
		t.Errorf("auto's notes/post-processing %q / %q, want %s's %q / %q after the rule line", gp.Notes, gp.PostProcessing, tc.want, wp.Notes, wp.PostProcessing)
	}
	if !reflect.DeepEqual(got.Forecast, want.Forecast) || (got.ForecastErr == nil) != (want.ForecastErr == nil) {
		t.Errorf("auto's forecast %+v (error %v), %s's %+v (error %v)", got.Forecast, got.ForecastErr, tc.want, want.Forecast, want.ForecastErr)
	}
	if !reflect.DeepEqual(got.ReleasedForecast, want.ReleasedForecast) || (got.ReleasedForecastErr == nil) != (want.ReleasedForecastErr == nil) {
		t.Errorf("auto's released-design forecast %+v (error %v), %s's %+v (error %v)", got.ReleasedForecast, got.ReleasedForecastErr, tc.want, want.ReleasedForecast, want.ReleasedForecastErr)
	}
	return got
}

// TestAutoIntervalsMatchChosenMechanism checks that --mechanism auto gets
// exactly the intervals, split of ε, composed guarantee and forecasts of
// the mechanism its public rule chooses (runAutoAndChosen): irls's (the
// residual summary composed in, inference.IRLS, the Huber estimand) on
// the Huber path, gaussian-fm's (Λ0, inference.FM, the least-squares
// estimand) below and above it, and with --intervals off or --ci-share 0
// the chosen mechanism's "no intervals" with the whole ε in the fit.
func TestAutoIntervalsMatchChosenMechanism(t *testing.T) {
	for _, tc := range []autoCase{
		{name: "huber", r: 300, share: 0.05, fitShare: 0.05, want: "irls"},
		{name: "least squares below", r: 4, share: 0.05, fitShare: 0.05, want: "gaussian-fm"},
		{name: "least squares above", r: 6000, share: 0.05, fitShare: 0.05, want: "gaussian-fm"},
		{name: "huber intervals off", r: 300, share: 0.05, intervals: fit.IntervalsOff, want: "irls"},
		{name: "huber ci-share 0", r: 300, want: "irls"},
		{name: "least squares intervals off", r: 6000, share: 0.05, intervals: fit.IntervalsOff, want: "gaussian-fm"},
		{name: "least squares ci-share 0", r: 4, want: "gaussian-fm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runAutoAndChosen(t, tc)
			tab := res.Table
			on := tc.fitShare > 0
			switch {
			case !on && (tab.Unavailable == "" || tab.Level != 0):
				t.Errorf("intervals off: table %+v, want none and the reason", tab)
			case on && tc.want == "irls" && !strings.HasPrefix(tab.Estimand, inference.EstimandRobust):
				t.Errorf("Huber path: estimand %q, want irls's %q", tab.Estimand, inference.EstimandRobust)
			case on && tc.want == "gaussian-fm" && (!strings.HasPrefix(tab.Estimand, inference.EstimandLinear) || tab.TargetMoment == nil):
				t.Errorf("least-squares path: estimand %q (Λ0 %v), want gaussian-fm's %q with the released Λ0", tab.Estimand, tab.TargetMoment, inference.EstimandLinear)
			case on && tab.Unavailable != "":
				t.Errorf("no intervals: %s", tab.Unavailable)
			}
			if huber := strings.Contains(res.Model.Privacy.Mechanism, "Huber regression"); huber != (tc.want == "irls") {
				t.Errorf("auto's report says %q, want the %s path", res.Model.Privacy.Mechanism, tc.want)
			}
		})
	}
}

// TestAutoPathAtBoundary sits at the rule's boundaries, where the
// requested ε and the fit's ε (less --ci-share's share) fall on different
// sides: N·ε/d = 8.2 is in the Huber range but 8.2·0.95 = 7.79 is not, and
// 3600 is above it but 3600·0.95 = 3420 is inside. The estimator decides
// from the ε it is given, so the intervals must be those of the mechanism
// chosen at the fit's ε (gaussian-fm at the lower edge, irls at the upper),
// and with nothing spent on intervals the rule at the whole ε decides
// (irls at 8.2, gaussian-fm at 3600). Deciding from the requested ε would
// plan one mechanism's intervals for the other's fit.
func TestAutoPathAtBoundary(t *testing.T) {
	for _, tc := range []autoCase{
		{name: "lower edge with intervals", r: 8.2, share: 0.05, fitShare: 0.05, want: "gaussian-fm"},
		{name: "lower edge ci-share 0", r: 8.2, want: "irls"},
		{name: "lower edge intervals off", r: 8.2, share: 0.05, intervals: fit.IntervalsOff, want: "irls"},
		{name: "upper edge with intervals", r: 3600, share: 0.05, fitShare: 0.05, want: "irls"},
		{name: "upper edge ci-share 0", r: 3600, want: "gaussian-fm"},
		{name: "upper edge intervals off", r: 3600, share: 0.05, intervals: fit.IntervalsOff, want: "gaussian-fm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if full := tc.r >= regress.AutoHuberLow && tc.r <= regress.AutoHuberHigh; tc.fitShare > 0 && full == (tc.want == "irls") {
				t.Fatalf("test setup: N·ε/d = %v must straddle the boundary", tc.r)
			}
			runAutoAndChosen(t, tc)
		})
	}
}

// TestAutoRefusesOptions: auto chooses its own configuration, so the
// options of one of its mechanisms (which the other would ignore) are
// refused by name, not silently dropped.
func TestAutoRefusesOptions(t *testing.T) {
	data, s := load(t, "cps1988", 700)
	for _, opt := range []string{"solve-radius", "split", "eigen-floor"} {
		req := fit.Request{Kind: regress.Linear, Mechanism: "auto", Epsilon: 1, Delta: 1e-6, CIShare: 0.05, Seeded: true, NoForecast: true,
			Options: map[string]any{opt: 0.3}, Given: map[string]bool{opt: true, "epsilon": true, "delta": true}}
		if _, err := fit.Run(context.Background(), req, data, s); err == nil || !strings.Contains(err.Error(), opt) {
			t.Errorf("--%s with auto: error %v, want a refusal naming it", opt, err)
		}
	}
}

// TestAutoRefusesUnits: auto has no unit-level guarantee
// (regress.UnitSupported), and Run says so for unit statistics whether or
// not intervals are asked for (the CLI and the Beam pipeline refuse before
// reading; a library caller must not get a row-level fit of unit data).
func TestAutoRefusesUnits(t *testing.T) {
	data, s := load(t, "cps1988", 700)
	st, err := regress.UnitStats(data.Stats, regress.PrivacyUnit{Column: "person", MaxRows: 1, Units: data.Stats.N()})
	if err != nil {
		t.Fatal(err)
	}
	data.Stats = st
	for _, share := range []float64{0, 0.05} {
		req := fit.Request{Kind: regress.Linear, Mechanism: "auto", Epsilon: 1, Delta: 1e-6, CIShare: share, Seeded: true, NoForecast: true}
		if _, err := fit.Run(context.Background(), req, data, s); err == nil || !strings.Contains(err.Error(), "--mechanism auto has no unit-level guarantee") {
			t.Errorf("--ci-share %v: error %v, want auto's unit refusal", share, err)
		}
	}
}
