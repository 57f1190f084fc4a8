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
// share and interval settings, and checks that everything the fit package
// adds is the chosen mechanism's: the coefficients, the coefficient table
// (intervals, estimand, method), the composed guarantee and its releases,
// the notes (noisygd's ball included), the fit's ε and both forecasts;
// auto's report differs only by its rule line and, on the noisygd path,
// by the reason it has no intervals (which names the rule).
func runAutoAndChosen(t *testing.T, tc autoCase) *fit.Result {
	t.Helper()
	data, s := load(t, "cps1988", 3000)
	n, d := data.Stats.N(), data.Stats.K()-1
	eps := tc.r * float64(d) / float64(n)
	fitEps := eps * (1 - tc.fitShare)
	if got := regress.AutoPath(n, d, fitEps); got != tc.want {
		t.Fatalf("test setup: at the fit's ε = %v (N·ε/d = %v) the rule chooses %s, but the case wants %s", fitEps, float64(n)*fitEps/float64(d), got, tc.want)
	}
	base := fit.Request{Kind: regress.Linear, Mechanism: "auto", Epsilon: eps, Delta: 1e-6, CIShare: tc.share, Intervals: tc.intervals, Seeded: true, Seed: 11}
	got, err := fit.Run(context.Background(), base, data, s)
	if err != nil {
		t.Fatalf("auto: %v", err)
	}
	ref := base
	ref.Mechanism = tc.want
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
	gt, wt := got.Table, want.Table
	if tc.want == regress.AutoHuberPath && gt != nil && wt != nil {
		if !strings.HasPrefix(gt.Unavailable, "no confidence intervals: auto's rule chose Huber's loss by noisygd") {
			t.Errorf("noisygd path: the table says %q, want the rule's reason for no intervals", gt.Unavailable)
		}
		g, w := *gt, *wt
		g.Unavailable, w.Unavailable = "", ""
		gt, wt = &g, &w
	}
	if !reflect.DeepEqual(gt, wt) {
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
	// The one difference in the notes: auto takes no --radius, so its
	// note on noisygd's ball says how to set one.
	gotNotes := slices.Clone(gp.Notes)
	for i, n := range gotNotes {
		if tc.want == regress.AutoHuberPath && strings.Contains(n, "public parameter ball") {
			if !strings.Contains(n, "--mechanism noisygd --radius sets another") {
				t.Errorf("auto's ball note %q does not say how to set a radius", n)
			}
			gotNotes[i] = strings.Replace(n, "--mechanism noisygd --radius sets another", "--radius changes it", 1)
		}
	}
	if !slices.Equal(gotNotes, wp.Notes) || len(gp.PostProcessing) == 0 || !slices.Equal(gp.PostProcessing[1:], wp.PostProcessing) ||
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
// the mechanism its public rule chooses (runAutoAndChosen): noisygd's (no
// intervals, the whole ε in the fit) on the Huber path, gaussian-fm's (Λ0,
// inference.FM, the least-squares estimand) below and above it, and with
// --intervals off or --ci-share 0 gaussian-fm's "no intervals" with the
// whole ε in the fit.
func TestAutoIntervalsMatchChosenMechanism(t *testing.T) {
	for _, tc := range []autoCase{
		{name: "huber", r: 300, share: 0.05, want: "noisygd"},
		{name: "least squares below", r: 4, share: 0.05, fitShare: 0.05, want: "gaussian-fm"},
		{name: "least squares above", r: 20000, share: 0.05, fitShare: 0.05, want: "gaussian-fm"},
		{name: "huber intervals off", r: 300, share: 0.05, intervals: fit.IntervalsOff, want: "noisygd"},
		{name: "huber ci-share 0", r: 300, want: "noisygd"},
		{name: "least squares intervals off", r: 20000, share: 0.05, intervals: fit.IntervalsOff, want: "gaussian-fm"},
		{name: "least squares ci-share 0", r: 4, want: "gaussian-fm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := runAutoAndChosen(t, tc)
			tab := res.Table
			on := tc.fitShare > 0
			switch {
			case !on && (tab.Unavailable == "" || tab.Level != 0):
				t.Errorf("intervals off: table %+v, want none and the reason", tab)
			case on && (!strings.HasPrefix(tab.Estimand, inference.EstimandLinear) || tab.TargetMoment == nil):
				t.Errorf("least-squares path: estimand %q (Λ0 %v), want gaussian-fm's %q with the released Λ0", tab.Estimand, tab.TargetMoment, inference.EstimandLinear)
			case on && tab.Unavailable != "":
				t.Errorf("no intervals: %s", tab.Unavailable)
			}
			if huber := strings.Contains(res.Model.Privacy.Mechanism, "so Huber's loss by noisygd"); huber != (tc.want == "noisygd") {
				t.Errorf("auto's report says %q, want the %s path", res.Model.Privacy.Mechanism, tc.want)
			}
		})
	}
}

// TestAutoPathAtBoundary sits at the rule's boundaries, where the
// requested ε and the fit's ε (less --ci-share's share) may fall on
// different sides. The estimator decides from the ε it is given, so the
// plan must be that of the mechanism chosen at the fit's ε. At the lower
// edge (N·ε/d = 8.2, in the Huber range; 8.2·0.95 = 7.79 is not) noisygd
// takes the whole ε, so the rule at 8.2 decides: noisygd, with or without
// intervals asked for. At the upper edge (16800 is above the range,
// 16800·0.95 = 15960 inside) gaussian-fm with its share would run at an ε
// where the rule chooses noisygd, and noisygd at one where it chooses
// gaussian-fm: neither plan is a fixed point, so gaussian-fm fits with the
// whole ε and no intervals, and the table says why. Deciding from the
// requested ε would plan one mechanism's intervals for the other's fit.
func TestAutoPathAtBoundary(t *testing.T) {
	for _, tc := range []autoCase{
		{name: "lower edge with intervals", r: 8.2, share: 0.05, want: "noisygd"},
		{name: "lower edge ci-share 0", r: 8.2, want: "noisygd"},
		{name: "upper edge with intervals", r: 16800, share: 0.05, want: "gaussian-fm"},
		{name: "upper edge ci-share 0", r: 16800, want: "gaussian-fm"},
		{name: "upper edge intervals off", r: 16800, share: 0.05, intervals: fit.IntervalsOff, want: "gaussian-fm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name != "upper edge with intervals" {
				runAutoAndChosen(t, tc)
				return
			}
			// No mechanism asked for directly takes this plan, so it is
			// checked against the rule and the formula: the whole ε, no
			// intervals, the reason.
			data, s := load(t, "cps1988", 3000)
			n, d := data.Stats.N(), data.Stats.K()-1
			eps := tc.r * float64(d) / float64(n)
			if regress.AutoPath(n, d, eps) != regress.AutoLeastSquaresPath || regress.AutoPath(n, d, eps*(1-tc.share)) != regress.AutoHuberPath {
				t.Fatalf("test setup: N·ε/d = %v must straddle the upper boundary", tc.r)
			}
			req := fit.Request{Kind: regress.Linear, Mechanism: "auto", Epsilon: eps, Delta: 1e-6, CIShare: tc.share, Seeded: true, Seed: 11}
			res, err := fit.Run(context.Background(), req, data, s)
			if err != nil {
				t.Fatal(err)
			}
			if res.FitEpsilon != eps || res.Model.Privacy.Epsilon > eps {
				t.Errorf("fit ε %v, composed ε %v, want the whole ε %v", res.FitEpsilon, res.Model.Privacy.Epsilon, eps)
			}
			if !strings.Contains(res.Model.Privacy.Mechanism, "so least squares by gaussian-fm") || res.Table.Level != 0 || !strings.Contains(res.Table.Unavailable, "with --ci-share's share taken out of ε it would choose noisygd") {
				t.Errorf("upper edge: mechanism %q, table %+v", res.Model.Privacy.Mechanism, *res.Table)
			}
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
