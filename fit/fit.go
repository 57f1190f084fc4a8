// Package fit fits one regression model on one table and says what it
// spent: the one place where a request (model, mechanism and its typed
// options, ε, δ, the share of ε for confidence intervals, ...) becomes a
// model with its coefficient table and privacy report.
//
// Run owns everything between reading the data and writing the model:
// validation (the mechanism fits the model, the target suits the model,
// ε and δ are the ones the mechanism takes, δ < 1/N, no option the
// mechanism would ignore), the split of ε between the fit and the release
// the confidence intervals need, every noisy release, their composition
// into the privacy report (through package report) and the notes. Front
// ends (the dplearn CLI, the Beam pipeline, the experiments) map their
// inputs to a Request, load the data, call Run and print or write the
// result; none of them does privacy arithmetic.
package fit

import (
	"context"
	"fmt"
	"strings"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/inference"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
)

// DefaultCIShare is the share of ε that a linear FM-family fit spends on
// the target's second moment Λ0 (the residual variance of the confidence
// intervals needs it; the fit itself does not release Λ0), and an irls fit
// on its residual summary (regress.ReleaseRobustScale). Λ0's Laplace noise
// has standard deviation √2/(N·ε·share), next to residual variances of
// 10⁻³–10⁻¹ on the encoded scale, so 5% is plenty from N ≈ 10³; the fit
// keeps 95% of the budget (its noise grows by about 5%).
const DefaultCIShare = 0.05

// ForecastReplicates is the number of simulated designs of the forecast
// before fitting at the default size (inference.PlanBudget may give it
// fewer: Result.ForecastReplicates).
const ForecastReplicates = inference.ForecastReplicates

// Request is one fit: what to fit, by which mechanism, with which public
// parameters. Parameter names in errors are the CLI's flags (the
// registry's option names).
type Request struct {
	Kind      regress.Kind
	Mechanism string // a name of regress.Registry
	// Epsilon and Delta are the privacy parameters of the whole release
	// (the fit and, with CIShare, the intervals' release).
	Epsilon, Delta float64
	// Options holds values of the mechanism's options, by flag
	// (regress.Options): float64, int, string or bool, as the option's
	// Default. An absent option takes its default.
	Options map[string]any
	// Given names the parameters given explicitly: "epsilon", "delta" and
	// option flags; Run refuses a given parameter the mechanism would
	// ignore. nil: ε and δ count as given when non-zero, an option when it
	// differs from its default.
	Given map[string]bool
	// CIShare is the share of Epsilon spent on the release the confidence
	// intervals need (linear FM family: Λ0; irls: a residual summary;
	// auto: that of the mechanism its public rule chooses at the fit's ε,
	// planMechanism), in [0, 1); 0 means no intervals for those
	// mechanisms. DefaultCIShare is the CLI's default.
	CIShare float64
	// Intervals is IntervalsAuto ("" too), IntervalsOn or IntervalsOff:
	// whether the fit computes confidence intervals (and spends CIShare
	// on them). Auto computes them when inference.PlanBudget's
	// operation-count budget (≤ inference.InferenceShare of the fit's
	// cost, from the public N and d) allows at least
	// inference.MinReplicates replicates, else spends nothing on them and
	// says so; on computes them at the default size whatever they cost.
	Intervals string
	// Replicates, when > 0, is the bootstrap size of the intervals
	// (overrides the budget, as IntervalsOn does).
	Replicates int
	// Cov is the covariance of the nonprivate reference fit's classical
	// summary: regress.CovNonrobust ("" too) or regress.CovHC1.
	Cov string
	// NoStructure turns off the projection of the released Λ2 onto the
	// identities the schema's encoding implies (regress.GramStructureFor).
	NoStructure bool
	// Seeded selects the deterministic INSECURE generator with Seed
	// (experiments only; the report says so). Otherwise the noise comes
	// from crypto/rand.
	Seeded bool
	Seed   uint64
	// Source, when non-nil, is the noise source (overrides Seeded).
	Source noise.Source
	// SkipBadRows says that records that could not be read or encoded
	// entered the fit as all-zero rows (or, for Data.FromStatsFile, were
	// left out of the statistics file).
	SkipBadRows bool
	// NoForecast skips the forecast of the noise before fitting and its
	// repetition on the released design after it.
	NoForecast bool
	// BeforeFit, when non-nil, is called after the forecast and before the
	// fit with the Result so far (Forecast, ForecastErr, FitEpsilon), so
	// that a front end can show the forecast while the fit runs.
	BeforeFit func(*Result)
}

// Data is the input of Run.
type Data struct {
	// Data holds the statistics, and the rows when NeedsRows says so.
	regress.Data
	// N is the number of records read, public by the neighbouring
	// relation; 0 means Stats.N().
	N int64
	// ZeroRows is the number of records that entered as all-zero rows:
	// dropped for a missing value (the schema's "missing": "drop") and,
	// with SkipBadRows, bad records kept as zero rows. It is
	// data-dependent: Run releases it only through Laplace noise (linear
	// FM-family intervals) and never writes it.
	ZeroRows int64
	// FromStatsFile says the statistics come from a statistics file, which
	// does not record ZeroRows.
	FromStatsFile bool
}

// Result is a fitted model with its coefficient table and privacy report.
type Result struct {
	// Model holds the coefficients, the privacy report (Model.Privacy,
	// with its notes) and the coefficient table (Model.Inference, the same
	// value as Table).
	Model *regress.Model
	Table *regress.CoefTable
	// Forecast is the forecast of the noise made before fitting from
	// public quantities only (nil when the mechanism has none);
	// ForecastErr says why it could not be made.
	Forecast    *inference.Forecast
	ForecastErr error
	// ReleasedForecast is the same forecast simulated after the fit on the
	// released design (inference.ReleasedForecast: the released Λ2 after
	// its structure, eigenvalues raised to the trimming floor), so it sees
	// the data's collinear columns and rare levels (issue 25 item 1); a
	// function of released values only. nil for mechanisms without it (irls
	// and the non-FM mechanisms) or with NoForecast;
	// ReleasedForecastErr says why it could not be made.
	ReleasedForecast    *inference.Forecast
	ReleasedForecastErr error
	// FitEpsilon is the ε the fit itself spent (Epsilon less the
	// intervals' share).
	FitEpsilon float64
	// Budget is the inference budget of the fit (inference.PlanBudget of
	// the public N and d); ForecastReplicates and
	// ReleasedForecastReplicates are the sizes the forecasts ran at (0:
	// skipped by the budget).
	Budget                                         inference.Budget
	ForecastReplicates, ReleasedForecastReplicates int
	// ConsoleWarnings depend on the fitted values: show them to the
	// analyst, never write them into a released file (PRIVACY-NOTES
	// item 23).
	ConsoleWarnings []string
}

// estimator returns the mechanism's estimator and registry entry.
func estimator(name string) (regress.Estimator, regress.Mechanism, error) {
	est, err := regress.New(name)
	if err != nil {
		return nil, regress.Mechanism{}, fmt.Errorf("--mechanism: %w", err)
	}
	u, ok := regress.LookupMechanism(name)
	if !ok {
		return nil, regress.Mechanism{}, fmt.Errorf("--mechanism %q: want one of %s", name, strings.Join(regress.Mechanisms(), ", "))
	}
	return est, u, nil
}

// Private reports whether the request's mechanism releases a
// differentially private model (false for reference fits and unknown
// mechanisms).
func (r Request) Private() bool {
	est, err := regress.New(r.Mechanism)
	return err == nil && est.Private()
}

// NeedsRows reports whether Run needs Data.Rows, not only the statistics:
// the mechanism needs them, or the nonprivate reference fit's HC1
// covariance does.
func (r Request) NeedsRows() bool {
	est, err := regress.New(r.Mechanism)
	if err != nil {
		return false
	}
	cfg, err := r.optionConfig()
	if err != nil {
		return est.NeedsRows(r.Kind) // Run refuses the options
	}
	return regress.NeedsRowsFor(est, cfg) || (r.Mechanism == "nonprivate" && r.Cov == regress.CovHC1)
}

// source returns the noise source the request asks for.
func (r Request) source() noise.Source {
	switch {
	case r.Source != nil:
		return r.Source
	case r.Seeded:
		return noise.NewInsecureSeeded(r.Seed)
	}
	return noise.NewSecure()
}

// config returns the mechanism's configuration: ε, δ, the options, the
// schema's structure and the noise source.
func (r Request) config(s *schema.Schema) (regress.Config, error) {
	cfg, err := r.optionConfig()
	if err != nil {
		return regress.Config{}, err
	}
	cfg.Source = r.source()
	if !r.NoStructure {
		var err error
		if cfg.Structure, err = regress.GramStructureFor(s); err != nil {
			return regress.Config{}, err
		}
	}
	return cfg, nil
}

// optionConfig is the request's model, budget and mechanism options as a
// regress.Config, without the schema's structure or the randomness.
func (r Request) optionConfig() (regress.Config, error) {
	cfg := regress.Config{Kind: r.Kind, Epsilon: r.Epsilon, Delta: r.Delta}
	for _, op := range regress.Options() {
		v, ok := r.Options[op.Flag]
		if !ok {
			v = op.Default
		}
		if err := op.Apply(&cfg, v); err != nil {
			return regress.Config{}, fmt.Errorf("--%s: %w", op.Flag, err)
		}
	}
	return cfg, nil
}

// Run fits the request on data and returns the model, its coefficient
// table and its privacy report. It refuses, before fitting, what Check and
// CheckTarget refuse and a δ that is not below 1/N.
func Run(ctx context.Context, req Request, data Data, s *schema.Schema) (*Result, error) {
	if err := Check(req); err != nil {
		return nil, err
	}
	if err := CheckTarget(req.Kind, s); err != nil {
		return nil, err
	}
	est, _, err := estimator(req.Mechanism)
	if err != nil {
		return nil, err
	}
	if data.Stats == nil {
		return nil, fmt.Errorf("fit: no statistics")
	}
	if c, err := req.optionConfig(); err == nil && regress.NeedsRowsFor(est, c) && data.Rows == nil {
		return nil, fmt.Errorf("--mechanism %s needs the rows, not only their statistics%s", req.Mechanism, regress.RowsHint(est, req.Kind))
	}
	n := data.N
	if n == 0 {
		n = data.Stats.N()
	}
	if _, ok := regress.UnitOf(data.Stats); ok {
		// The CLI and the Beam pipeline refuse these before reading; a
		// library caller gets the same rule here (auto has no unit-level
		// guarantee).
		if err := regress.UnitSupported(est, req.Kind); err != nil {
			return nil, fmt.Errorf("privacy unit: %w", err)
		}
	}
	est = regress.WithSchema(est, s) // the histogram baselines' public grid
	if est.Private() {
		if err := accounting.CheckDeltaN(req.Delta, n); err != nil {
			return nil, err
		}
	}
	cfg, err := req.config(s)
	if err != nil {
		return nil, err
	}
	radius, radiusDefault, hasRadius := setupRadius(req.Mechanism, &cfg, s.Dim(), n)
	if err := checkUnitIntervals(req, data, s.DropsRecords() || req.SkipBadRows); err != nil {
		return nil, err // units.go
	}
	cols := 0 // numbers read per row from a table (public: the schema's)
	if !data.FromStatsFile {
		cols = len(s.Features) + 1
	}
	bud := inference.PlanTableBudget(n, s.Dim(), cols) // public: N, d, columns
	share, off := intervalShare(req, bud)              // intervals.go
	// auto's rule is in the N and d the estimator reads from the
	// statistics (public), so its path is known before the fit.
	statsN, statsD := data.Stats.N(), data.Stats.K()-1
	plan, err := planMechanism(req.Mechanism, &cfg, share, statsN, statsD)
	if err != nil {
		return nil, err
	}
	// mech is the mechanism whose intervals and forecasts the fit gets
	// (auto's: the one its rule chose at the fit's ε, cfg.Epsilon).
	mech := plan.mechanism
	if req.Mechanism == "auto" && mech != req.Mechanism {
		// The chosen mechanism's ball, for its note and warning only:
		// auto takes no options, so its estimator computes the same
		// default itself from cfg.
		c := cfg
		radius, radiusDefault, hasRadius = setupRadius(mech, &c, s.Dim(), n)
	}
	if off != "" && plan.why == "" {
		plan.why = off // share was 0: the fit keeps the whole ε
	}
	plan.opt = intervalOptions(req, bud)
	plan.fewerWhy = fmt.Sprintf("the inference budget at d = %d, N = %d: the default forecasts and intervals would cost %s× the fit's arithmetic, the budget is %g× (--intervals=on uses the default)", bud.D, bud.N, bud.CostRatioText(), inference.InferenceShare)
	if req.Replicates > 0 {
		plan.fewerWhy = "--ci-replicates"
	}
	if err := plan.setClassical(req.Cov, data.ZeroRows, !data.FromStatsFile, s.DropsRecords() || req.SkipBadRows); err != nil {
		return nil, err
	}
	out := &Result{FitEpsilon: cfg.Epsilon, Budget: bud}
	out.ForecastReplicates, out.ReleasedForecastReplicates = forecastSizes(req, bud)
	if !req.NoForecast && inference.Forecaster(mech) {
		// Public quantities only: mechanism, ε, δ, N, the schema.
		if out.ForecastReplicates == 0 {
			out.ForecastErr = forecastSkipped(bud)
		} else {
			out.Forecast, out.ForecastErr = inference.NoiseForecast(mech, cfg, s, n, inference.Options{Replicates: out.ForecastReplicates})
		}
		if out.ForecastErr != nil {
			out.Forecast = nil
		}
	}
	if req.BeforeFit != nil {
		req.BeforeFit(out)
	}
	res, err := est.Fit(ctx, data.Data, cfg)
	if err != nil {
		return nil, err
	}
	if err := checkPath(req.Mechanism, mech, res); err != nil {
		return nil, err
	}
	table, err := plan.finish(ctx, data.Data, cfg, res, s)
	if err != nil {
		return nil, err
	}
	if !req.NoForecast && res.Released != nil && inference.ReleasedForecaster(mech) && out.ReleasedForecastReplicates == 0 {
		out.ReleasedForecastErr = forecastSkipped(bud)
	} else if !req.NoForecast && res.Released != nil && inference.ReleasedForecaster(mech) {
		out.ReleasedForecast, out.ReleasedForecastErr = inference.ReleasedForecast(mech, res.Released, s, inference.Options{Replicates: out.ReleasedForecastReplicates})
		if out.ReleasedForecastErr != nil {
			out.ReleasedForecast = nil
		}
	}
	if hasRadius && radiusDefault && res.Radius > 0 {
		radius = res.Radius // noisygd's noise-walk ball: the R the fit used
	}
	if hasRadius {
		res.Privacy.Notes = append(res.Privacy.Notes, radiusNote(req.Mechanism, mech, cfg, s.Dim(), n, radius, radiusDefault))
		if warn := radiusWarning(res.Coef, radius); warn != "" {
			out.ConsoleWarnings = append(out.ConsoleWarnings, warn)
		}
	}
	if off != "" && est.Private() && hasIntervals(mech) {
		res.Privacy.Notes = append(res.Privacy.Notes, off)
	}
	if est.Private() {
		res.Privacy.Notes = append(res.Privacy.Notes, zeroRowNotes(req.SkipBadRows, data.FromStatsFile, s.DropsRecords())...)
	}
	model, err := regress.NewModel(req.Kind, s, res, regress.Training{Rows: n})
	if err != nil {
		return nil, err
	}
	model.Inference = table
	out.Model, out.Table = model, table
	return out, nil
}

// Estimate runs only the mechanism on a pre-encoded table without a
// schema (the experiments that reproduce the papers' figures): Check's
// refusals and the request's configuration (options, noise source; no
// structure, since there is no schema), then the fit. It releases
// nothing, so it writes no report, computes no intervals and leaves δ
// against N to the caller (a figure may use its paper's δ).
func Estimate(ctx context.Context, req Request, data regress.Data) (*regress.Result, error) {
	if err := Check(req); err != nil {
		return nil, err
	}
	est, _, err := estimator(req.Mechanism)
	if err != nil {
		return nil, err
	}
	req.NoStructure = true
	cfg, err := req.config(nil)
	if err != nil {
		return nil, err
	}
	return est.Fit(ctx, data, cfg)
}
