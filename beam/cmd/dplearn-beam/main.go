// Command dplearn-beam computes dplearn's sufficient statistics of a table
// too large for one machine on Apache Beam, and optionally finishes a
// private fit inside the pipeline.
//
//	dplearn-beam stats --input 'data/part-*.csv.gz' --schema s.json --out stats.json
//	dplearn-beam fit   --input 'data/part-*.csv.gz' --schema s.json --model linear \
//	    --mechanism gaussian-fm --epsilon 1 --delta 1e-5 --out model.json
//
// The runner is Prism, embedded (no Docker, no Java), unless --runner says
// otherwise (flink, spark, dataflow, universal) with Beam's usual flags
// (--endpoint, --environment_type, --project, --region, ...): see
// docs/beam.md. `stats` writes the PRIVATE statistics file (mode 0600) that
// `dplearn fit --stats` and `dplearn cape join --stats` take; `fit` writes
// the model file with its privacy report, and the un-noised statistics never
// leave the pipeline.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/core/metrics"
	beamlog "github.com/apache/beam/sdks/v2/go/pkg/beam/log"

	dpbeam "github.com/dplearn/dplearn/beam"
	"github.com/dplearn/dplearn/fit"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/statsfile"
)

type options struct {
	inputs      multiFlag
	schemaPath  string
	out         string
	skipBadRows bool
	readWorkers int
	spec        dpbeam.FitSpec
	unitColumn  string
	unitK       int
	unit        *dpbeam.Unit // set from --privacy-unit, --max-rows-per-unit
}

type multiFlag []string

func (m *multiFlag) String() string { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*m = append(*m, s)
		}
	}
	return nil
}

const usage = `usage:
  dplearn-beam stats --input GLOB[,GLOB...] --schema S.json --out STATS.json [--skip-bad-rows] [Beam flags]
  dplearn-beam fit   --input GLOB[,GLOB...] --schema S.json --model linear|logistic
                     --mechanism fm|gaussian-fm|relaxed-fm|truncated|nonprivate --epsilon E [--delta D]
                     --out MODEL.json [--ci-share S] [--seed N] [--skip-bad-rows]
                     [--privacy-unit COLUMN --max-rows-per-unit K] [Beam flags]

stats writes the PRIVATE, un-noised statistics file (mode 0600) for
'dplearn fit --stats' and 'dplearn cape join --stats'. fit runs the
mechanism inside the pipeline and writes only the model with its privacy report.
Runner: Prism (embedded) unless --runner flink|spark|dataflow|universal (docs/beam.md).
`

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "dplearn-beam:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	cmd := ""
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	var o options
	fs := flag.CommandLine // Beam's flags (--runner, --endpoint, ...) live here
	fs.Usage = func() { fmt.Fprint(stderr, usage); fs.PrintDefaults() }
	fs.Var(&o.inputs, "input", "input file glob(s), comma-separated or repeated (any Beam filesystem; CSV, CSV.gz, Parquet; each file has a header)")
	fs.StringVar(&o.schemaPath, "schema", "", "schema file (JSON) with the public bounds")
	fs.StringVar(&o.out, "out", "", "stats: the statistics file; fit: the model file")
	fs.BoolVar(&o.skipBadRows, "skip-bad-rows", false, "skip and count rows that cannot be encoded instead of failing (N becomes data-dependent; the report says so)")
	fs.IntVar(&o.readWorkers, "read-workers", 0, "parsing goroutines per file (0: all cores of the worker)")
	fs.StringVar(&o.spec.Model, "model", "", "fit: linear or logistic")
	fs.StringVar(&o.spec.Mechanism, "mechanism", "", "fit: a mechanism that needs only the statistics (fm, gaussian-fm, relaxed-fm, truncated, nonprivate)")
	fs.Float64Var(&o.spec.Epsilon, "epsilon", 0, "fit: privacy parameter ε (> 0)")
	fs.Float64Var(&o.spec.Delta, "delta", 0, "fit: privacy parameter δ for Gaussian mechanisms")
	fs.Float64Var(&o.spec.Lambda, "lambda", -1, "fit: ridge λ added to the noisy Λ2; negative: the mechanism's default")
	fs.Float64Var(&o.spec.LambdaFactor, "lambda-factor", regress.DefaultLambdaFactor, "fit: when --lambda is negative, λ = this × the per-entry noise std of Λ2")
	fs.Float64Var(&o.spec.Split, "split", regress.DefaultGaussianFMSplit, "fit: gaussian-fm's share of the budget given to Λ1")
	fs.Float64Var(&o.spec.CIShare, "ci-share", fit.DefaultCIShare, "fit: linear fm/relaxed-fm/gaussian-fm: share of --epsilon spent on the target's second moment for confidence intervals (0: no intervals), as dplearn fit --ci-share")
	fs.BoolVar(&o.spec.NoStructure, "no-schema-structure", false, "fit: do not project the released Λ2 onto the identities the schema's encoding implies (known intercept and indicator entries), as dplearn fit --no-schema-structure")
	fs.Uint64Var(&o.spec.Seed, "seed", 0, "fit: deterministic INSECURE noise with this seed (experiments only; the report says so)")
	fs.StringVar(&o.unitColumn, "privacy-unit", "", "fit: column identifying the privacy unit (a person ID): the guarantee protects all rows of one person; needs --max-rows-per-unit (fm, relaxed-fm, gaussian-fm), as dplearn fit --privacy-unit")
	fs.IntVar(&o.unitK, "max-rows-per-unit", 0, "fit: with --privacy-unit: keep at most K rows per unit (a uniformly random subset); sensitivities scale to K rows")
	verbose := fs.Bool("verbose", false, "show the runner's progress log (Prism logs every stage at INFO)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if !*verbose {
		beamlog.LogLevel = "warn" // beam.Init sets up slog with it
	}
	// On a cluster the same binary is the worker: Init takes over then.
	beam.Init()
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "seed" {
			o.spec.Seeded = true
		}
	})
	if err := o.setUnit(cmd); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	switch cmd {
	case "stats":
		return runStats(ctx, o, stdout, stderr)
	case "fit":
		return runFit(ctx, o, stdout, stderr)
	case "", "help":
		fs.Usage()
		return errors.New("give a command: stats or fit")
	}
	return fmt.Errorf("unknown command %q (want stats or fit)", cmd)
}

// setUnit maps --privacy-unit and --max-rows-per-unit to o.unit, refusing
// what dplearn fit refuses with them (intervals under a unit are checked
// by dpbeam.FitUnits with fit's rule, as dplearn fit does).
func (o *options) setUnit(cmd string) error {
	if o.unitColumn == "" {
		if o.unitK != 0 {
			return errors.New("--max-rows-per-unit needs --privacy-unit COLUMN")
		}
		return nil
	}
	if o.unitK < 1 {
		return fmt.Errorf("--privacy-unit %s needs --max-rows-per-unit K ≥ 1", o.unitColumn)
	}
	if cmd == "stats" {
		return errors.New("--privacy-unit: a statistics file does not record the rows-per-unit bound or the number of units; use dplearn-beam fit --privacy-unit")
	}
	o.unit = &dpbeam.Unit{Column: o.unitColumn, MaxRows: o.unitK, Seeded: o.spec.Seeded, Seed: o.spec.Seed}
	return nil
}

func (o *options) common() (*schema.Schema, error) {
	var missing []string
	if len(o.inputs) == 0 {
		missing = append(missing, "--input")
	}
	if o.schemaPath == "" {
		missing = append(missing, "--schema")
	}
	if o.out == "" {
		missing = append(missing, "--out")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing required flag(s): %s", strings.Join(missing, ", "))
	}
	return schema.Load(o.schemaPath)
}

func (o *options) pipelineOptions(s *schema.Schema) dpbeam.Options {
	return dpbeam.Options{Inputs: o.inputs, Schema: s, SkipBadRows: o.skipBadRows, ReadWorkers: o.readWorkers, Unit: o.unit}
}

// reportSkipped prints the skipped-rows count (on this console only: it
// is data-dependent).
func reportSkipped(res beam.PipelineResult, o options, stderr io.Writer) {
	if o.skipBadRows && res != nil {
		var skipped int64
		for _, c := range res.Metrics().Query(func(r metrics.SingleResult) bool {
			return r.Namespace() == "dplearn" && r.Name() == dpbeam.SkippedCounter
		}).Counters() {
			skipped += c.Result()
		}
		fmt.Fprintf(stderr, "%d bad rows skipped (this count is shown on this console only)\n", skipped)
	}
}

func runStats(ctx context.Context, o options, stdout, stderr io.Writer) error {
	s, err := o.common()
	if err != nil {
		return err
	}
	res, err := dpbeam.WriteStatsFile(ctx, o.pipelineOptions(s), o.out)
	if err != nil {
		return err
	}
	reportSkipped(res, o, stderr)
	if strings.Contains(o.out, "://") {
		fmt.Fprintf(stdout, "wrote the PRIVATE statistics file %s (restrict its bucket: docs/beam.md)\n", o.out)
		return nil
	}
	st, err := statsfile.Read(o.out, s)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote the PRIVATE statistics of %d rows (%d columns) to %s (mode 0600): fit it with dplearn fit --stats %s\n",
		st.Moments.N(), st.Moments.K(), o.out, o.out)
	return nil
}

func runFit(ctx context.Context, o options, stdout, stderr io.Writer) error {
	s, err := o.common()
	if err != nil {
		return err
	}
	o.spec.Out = o.out
	res, err := dpbeam.FitFile(ctx, o.pipelineOptions(s), o.spec)
	if err != nil {
		return err
	}
	reportSkipped(res, o, stderr)
	if strings.Contains(o.out, "://") {
		fmt.Fprintf(stdout, "model written to %s\n", o.out)
		return nil
	}
	m, err := regress.LoadModel(o.out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "Fitted %s regression of %q on %d rows; model written to %s\n\n", m.Kind, m.Schema.Target.Name, m.Training.Rows, o.out)
	tw := tabwriter.NewWriter(stdout, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "feature (encoded)\tcoefficient")
	for i, name := range m.Features {
		fmt.Fprintf(tw, "%s\t%+.5f\n", name, m.Coefficients[i])
	}
	tw.Flush()
	fmt.Fprintln(stdout)
	if err := m.Privacy.WriteText(stdout); err != nil {
		return err
	}
	for _, w := range m.Training.Warnings {
		fmt.Fprintf(stdout, "warning: %s\n", w)
	}
	return nil
}
