package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/fit"
	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// fitOptions are the flags of `dplearn fit`.
type fitOptions struct {
	data, schemaPath, model, mechanism, out string
	delimiter, ledger, stats                string
	epsilon, delta                          float64
	// mech holds the value of every mechanism option (regress.Options),
	// by flag: a *float64, *int, *string or *bool.
	mech         map[string]any
	ciShare      float64
	intervals    string
	ciReplicates int
	cov          string
	seed         uint64
	seeded       bool
	skipBadRows  bool
	noStructure  bool
	workers      int
	unit         unitFlags // --privacy-unit (privacyunit.go)
}

func newFitCmd() *cobra.Command {
	var o fitOptions
	cmd := &cobra.Command{
		Use:   "fit --data FILE --schema SCHEMA --model linear|logistic|robust --mechanism M --epsilon E [--delta D] --out MODEL.json",
		Short: "Fit a differentially private regression model on a CSV or Parquet file",
		Long: `Fit a linear, logistic or robust (L1) regression model on one table and write
the model with its privacy report.

The schema file declares the public bounds the privacy guarantee rests on:
feature ranges, category lists, and the target's range (linear) or positive
label (logistic). Values are clipped to them; nothing is read off the data.
See the README for the schema format.

Mechanisms:
` + regress.MechanismHelp() + `
--model robust fits least-absolute-deviations (L1) regression of a continuous
target; use it with nonprivate or irls.

Neighbouring datasets differ in one record, replaced (bounded DP; N is public).
Privacy noise comes from crypto/rand; --seed switches to a deterministic,
INSECURE generator for reproducible experiments, and the report says so.

Input: CSV with a header row (quoted fields, \r\n, .gz by extension, any
--delimiter) or Parquet; --data - reads standard input. A bad value stops the
fit with file:line:column and the reason, unless --skip-bad-rows is given:
each bad record then enters the fit as an all-zero row, as a dropped record
does (below), so N stays the number of records read and no sensitivity
depends on how many were bad; their count is printed on this console only
(it depends on the data, so it is never written to the model file or its
report).

Missing values follow each column's "missing" policy in the schema: "error"
(default), "impute" (a declared public value) or "drop". A dropped record
enters the fit as an all-zero row: it adds nothing to the sums the
mechanisms use but counts in N, which stays the number of records read (the
guarantee keeps treating it as public); the number dropped is printed on
this console only, and linear fm/relaxed-fm/gaussian-fm intervals release
it with Laplace noise (within --ci-share) to correct their standard errors.

--ledger FILE charges the fit's guarantee to a persistent privacy budget
(dplearn ledger create) before the model is written, and refuses the fit if
the budget would be exceeded.

The model file is written only when the fit succeeds (Ctrl-C leaves none);
--out - writes it to standard output (the report then goes to stderr).`,
		Example: `  dplearn fit --data CPS1988.csv --schema cps.json --model linear \
      --mechanism gaussian-fm --epsilon 0.5 --delta 1e-6 --out wage.json
  dplearn fit --data visits.csv --delimiter ';' --schema visits.json --model logistic \
      --mechanism objpert --epsilon 1 --delta 1e-7 --ledger budget.json --out visits-model.json`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&o.data, "data", "", "input table: CSV, CSV.gz or Parquet (- for standard input)")
	f.StringVar(&o.stats, "stats", "", statsFlagHelp)
	f.StringVar(&o.delimiter, "delimiter", ",", "CSV field delimiter: ',', ';', tab or '|'")
	f.StringVar(&o.ledger, "ledger", "", "privacy budget file to charge the fit to (dplearn ledger create); the fit is refused past the budget")
	f.StringVar(&o.schemaPath, "schema", "", "schema file (JSON) with the public bounds")
	f.StringVar(&o.model, "model", "", "linear, logistic or robust (L1)")
	f.StringVar(&o.mechanism, "mechanism", "", "one of "+strings.Join(regress.Mechanisms(), ", "))
	f.Float64Var(&o.epsilon, "epsilon", 0, "privacy parameter ε (> 0)")
	f.Float64Var(&o.delta, "delta", 0, "privacy parameter δ for (ε, δ) mechanisms, in (0, 1/N) (e.g. 1e-6; keep it well below 1/N)")
	f.StringVar(&o.out, "out", "", "where to write MODEL.json (- for standard output)")
	f.Float64Var(&o.ciShare, "ci-share", fit.DefaultCIShare, "linear fm/relaxed-fm/gaussian-fm, irls and auto (where its rule fits least squares): share of --epsilon spent on the target's second moment (irls: a residual summary) for confidence intervals (0: no intervals)")
	f.StringVar(&o.intervals, "intervals", fit.IntervalsAuto, fit.IntervalsHelp)
	f.IntVar(&o.ciReplicates, "ci-replicates", 0, "bootstrap replicates of the confidence intervals (≥ 100; 0: the budget's, see --intervals); a positive value computes them whatever they cost")
	f.StringVar(&o.cov, "cov", regress.CovNonrobust, "nonprivate: covariance of the classical summary: nonrobust or HC1 (heteroskedasticity-robust)")
	f.BoolVar(&o.noStructure, "no-schema-structure", false, "fm, relaxed-fm, gaussian-fm: do not project the released Λ2 onto the identities the schema's encoding implies (known intercept and indicator entries)")
	o.mech = addMechanismFlags(cmd)
	f.Uint64Var(&o.seed, "seed", 0, "use a deterministic INSECURE generator with this seed (experiments only)")
	f.BoolVar(&o.skipBadRows, "skip-bad-rows", false, "skip and count rows that cannot be encoded instead of stopping")
	f.IntVar(&o.workers, "workers", 0, "parsing goroutines (0: all cores)")
	addUnitFlags(cmd, &o.unit)
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		fm, err := format()
		if err != nil {
			return err
		}
		req, err := dataOrStats(cmd, []string{"data", "schema", "model", "mechanism", "out"})
		if err != nil {
			return err
		}
		if err := requireFlags(cmd, req...); err != nil {
			return err
		}
		o.seeded = cmd.Flags().Changed("seed")
		return runFit(cmd.Context(), cmd, o, fm)
	}
	return cmd
}

// randomSource returns the secure source, or the insecure seeded one when
// the user asked for it.
func randomSource(seeded bool, seed uint64) noise.Source {
	if seeded {
		return noise.NewInsecureSeeded(seed)
	}
	return noise.NewSecure()
}

// loadFitInput reads what the fit needs: statistics always, rows when
// it needs them.
func loadFitInput(ctx context.Context, path string, s *schema.Schema, needsRows bool, opt dataset.Options) (regress.Data, dataset.Summary, error) {
	if !needsRows {
		m, sum, err := dataset.Moments(ctx, path, s, opt)
		if err != nil {
			return regress.Data{}, sum, err
		}
		return regress.Data{Stats: m}, sum, nil
	}
	t, sum, err := dataset.Load(ctx, path, s, opt)
	if err != nil {
		return regress.Data{}, sum, err
	}
	m := suffstat.New(t.K)
	if err := m.AddRows(t.Rows); err != nil {
		return regress.Data{}, sum, err
	}
	m.Flush()
	return regress.Data{Stats: m, Rows: t.Rows}, sum, nil
}

// fitWorkers is the number of goroutines that accumulate statistics for
// --workers n (0: all cores).
func fitWorkers(n int) int {
	if n <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return n
}

// checkModelTarget verifies that the schema's target suits the model.
func checkModelTarget(kind regress.Kind, s *schema.Schema) error { return fit.CheckTarget(kind, s) }

// fitRequest maps the flags of `dplearn fit` to a fit.Request.
func fitRequest(cmd *cobra.Command, o fitOptions, kind regress.Kind) (fit.Request, error) {
	req := fit.Request{Kind: kind, Mechanism: o.mechanism, Epsilon: o.epsilon, Delta: o.delta,
		CIShare: o.ciShare, Intervals: o.intervals, Replicates: o.ciReplicates, Cov: o.cov, NoStructure: o.noStructure, Seeded: o.seeded, Seed: o.seed,
		SkipBadRows: o.skipBadRows, Options: map[string]any{}, Given: map[string]bool{}}
	changed := cmd.Flags().Changed
	req.Given["epsilon"], req.Given["delta"] = changed("epsilon"), changed("delta")
	for _, op := range regress.Options() {
		req.Given[op.Flag] = changed(op.Flag)
		switch p := o.mech[op.Flag].(type) {
		case *float64:
			req.Options[op.Flag] = *p
		case *int:
			req.Options[op.Flag] = *p
		case *string:
			req.Options[op.Flag] = *p
		case *bool:
			req.Options[op.Flag] = *p
		default:
			return fit.Request{}, fmt.Errorf("--%s: no value", op.Flag)
		}
	}
	return req, nil
}

func runFit(ctx context.Context, cmd *cobra.Command, o fitOptions, format outputFormat) error {
	kind, err := regress.ParseKind(o.model)
	if err != nil {
		return fmt.Errorf("--model: %w", err)
	}
	est, err := regress.New(o.mechanism)
	if err != nil {
		return fmt.Errorf("--mechanism: %w", err)
	}
	if o.unit.column != "" && !cmd.Flags().Changed("ci-share") {
		// no intervals by default under a unit (only an explicit
		// --ci-share asks for them): before fitRequest copies the share
		// into the request (else Λ0 is released and charged)
		o.ciShare = 0
	}
	req, err := fitRequest(cmd, o, kind)
	if err != nil {
		return err
	}
	if err := fit.Check(req); err != nil {
		return err
	}
	if err := checkWorkersFlag(cmd); err != nil {
		return err
	}
	if err := o.unit.check(cmd, est, kind, o.stats); err != nil {
		return err
	}
	sep, err := parseDelimiter(o.delimiter)
	if err != nil {
		return err
	}
	if o.schemaPath == "-" && o.data == "-" {
		return fmt.Errorf("--schema - and --data - cannot both read standard input")
	}
	if err := refuseSameFile([]fileFlag{{"--out", o.out}},
		[]fileFlag{{"--data", o.data}, {"--stats", o.stats}, {"--schema", o.schemaPath}, {"--ledger", o.ledger}}); err != nil {
		return err
	}
	s, err := loadSchemaFlag(o.schemaPath, cmd.InOrStdin())
	if err != nil {
		return err
	}
	if err := fit.CheckTarget(kind, s); err != nil {
		return err
	}
	if err := dataset.CheckWidth(s.Dim()+1, fitWorkers(o.workers), 0); err != nil {
		return fmt.Errorf("--schema %s: %w", o.schemaPath, err) // before anything is allocated
	}
	var ledger *ledger.Ledger
	if o.ledger != "" {
		if ledger, err = openFitLedger(ctx, o, req); err != nil {
			return err
		}
	}
	// Open the destination before the fit, so that a bad --out costs no
	// fit and no budget; nothing appears there until the model is written.
	out, err := createOutput(o.out, cmd.OutOrStdout())
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			out.Abort()
		}
	}()
	opt := dataset.Options{Workers: o.workers, SkipBadRows: o.skipBadRows, KeepBadRows: o.skipBadRows, Progress: stderrProgress(cmd),
		Delimiter: sep, Stdin: cmd.InOrStdin(), KeepDropped: true}
	data, sum, err := regress.Data{}, dataset.Summary{}, error(nil)
	if o.stats != "" {
		data, sum, req.SkipBadRows, err = loadStatsInput(o.stats, s, est, req)
		if err != nil {
			return err
		}
	} else if o.unit.column != "" {
		var us dataset.UnitSummary
		data, us, err = loadUnitInput(ctx, o.data, s, o.unit, randomSource(o.seeded, o.seed), opt, req.NeedsRows())
		sum = us.Summary
		sum.Rows = us.Units // N is the public number of units; rows per unit are not released
	} else {
		data, sum, err = loadFitInput(ctx, o.data, s, req.NeedsRows(), opt)
	}
	if err != nil {
		return readErr("--data", err)
	}
	// Zero rows: records dropped for a missing value and, with
	// --skip-bad-rows, bad records kept as zero rows (KeepBadRows).
	in := fit.Data{Data: data, N: sum.Rows, ZeroRows: sum.Dropped, FromStatsFile: o.stats != ""}
	if o.skipBadRows && o.stats == "" {
		in.ZeroRows += sum.Skipped
	}
	forecastOut := cmd.OutOrStdout()
	if format == formatJSON || toStdout(o.out) {
		forecastOut = cmd.ErrOrStderr() // stdout holds the JSON summary or the model
	}
	req.BeforeFit = func(r *fit.Result) { printForecast(forecastOut, r, sum.Rows) }
	res, err := fit.Run(ctx, req, in, s)
	if err != nil {
		return err
	}
	for _, warn := range res.ConsoleWarnings {
		fmt.Fprintf(cmd.ErrOrStderr(), "warning: %s\n", warn)
	}
	model := res.Model
	if err := ctx.Err(); err != nil {
		return err // interrupted: write nothing
	}
	committed = true // publishModel commits or discards
	if err := publishModel(ctx, model, out, ledger, o); err != nil {
		return err
	}
	w := cmd.OutOrStdout()
	if toStdout(o.out) {
		w = cmd.ErrOrStderr() // stdout holds the model
	}
	if format == formatJSON {
		return writeJSON(w, map[string]any{
			"model_file":        o.out,
			"model":             model.Kind,
			"mechanism":         o.mechanism,
			"rows":              sum.Rows,
			"skipped_rows":      sum.Skipped, // console only, like the text
			"dropped_rows":      sum.Dropped,
			"features":          model.Features,
			"coefficients":      model.Coefficients,
			"privacy":           model.Privacy,
			"warnings":          model.Training.Warnings,
			"inference":         res.Table,
			"forecast":          res.Forecast,
			"released_forecast": res.ReleasedForecast,
			"inference_budget":  res.Budget,
		})
	}
	if err := printFitText(w, model, o.out, sum.Skipped); err != nil {
		return err
	}
	if sum.Dropped > 0 {
		fmt.Fprintf(w, "\n%s dropped for a missing value entered the fit as zero rows (N counts them; this count is shown on this console only).\n", dataset.Plural(sum.Dropped, "record"))
	}
	printDataCounts(w, sum)
	printReleasedForecast(w, res)
	return nil
}

// printFitText prints the fit for the local console. skipped (the number of
// bad rows skipped) is data-dependent: it is printed here and nowhere else.
func printFitText(w io.Writer, m *regress.Model, path string, skipped int64) error {
	fmt.Fprintf(w, "Fitted %s regression of %q on %s", m.Kind, m.Schema.Target.Name, dataset.Plural(m.Training.Rows, "row"))
	if skipped > 0 {
		as := "zero rows"
		if skipped == 1 {
			as = "a zero row"
		}
		fmt.Fprintf(w, " (%s entered as %s; this count is shown on this console only)", dataset.Plural(skipped, "bad row"), as)
	}

	if path == "-" {
		path = "standard output"
	}
	fmt.Fprintf(w, "; model written to %s\n\n", path)
	if err := writeModelCoefTable(w, m); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if err := m.Privacy.WriteText(w); err != nil {
		return err
	}
	for _, warn := range m.Training.Warnings {
		fmt.Fprintf(w, "warning: %s\n", warn)
	}
	return nil
}
