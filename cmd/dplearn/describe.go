package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/describe"
	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/report"
)

type describeFlags struct {
	data, schema, by, format, plot, ledger, delimiter string
	epsilon                                           float64
	quantiles                                         []float64
	bins, grid                                        int
	columns                                           []string
	seed                                              uint64
	unit                                              unitFlags // privacyunit.go
}

func newDescribeCmd() *cobra.Command {
	var o describeFlags
	cmd := &cobra.Command{
		Use:   "describe --data FILE --schema SCHEMA.json --epsilon E [--by COLUMN] [--format text|json] [--plot out.png] [--ledger L]",
		Short: "DP counts, means, standard deviations, quantiles and histograms of a table",
		Long: `describe releases, with differential privacy, per column of the schema (and per
level of --by): the mean, standard deviation and quantiles of each numeric
column and the histogram of every column, each with its noise scale and a 95%
error bar. Values are first clipped to the schema's public bounds, so the
statistics are of the clipped values. The budget --epsilon is split evenly
over the releases (basic composition, pure ε-DP), charged to --ledger, and a
privacy report is printed. See docs/describe.md for the derivations.`,
		Example: `  dplearn describe --data cps.csv --schema cps.json --epsilon 1
  dplearn describe --data cps.csv --schema cps.json --epsilon 1 --by region --format json --plot cps.png`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDescribe(cmd, o) },
	}
	f := cmd.Flags()
	f.StringVar(&o.data, "data", "", "table: CSV, CSV.gz or Parquet (- for standard input)")
	f.StringVar(&o.schema, "schema", "", "schema with the public bounds of every column")
	f.Float64Var(&o.epsilon, "epsilon", 0, "privacy budget ε of the whole description")
	f.StringVar(&o.by, "by", "", "a categorical column to split every statistic by")
	f.StringVar(&o.format, "format", "text", "output: text or json")
	f.StringVar(&o.plot, "plot", "", "also draw the histograms into this PNG file")
	f.StringVar(&o.ledger, "ledger", "", "privacy ledger to charge (see 'dplearn ledger')")
	f.Float64SliceVar(&o.quantiles, "quantiles", []float64{0.25, 0.5, 0.75}, "quantiles of each numeric column")
	f.IntVar(&o.bins, "bins", 10, "histogram bins of a numeric column")
	f.IntVar(&o.grid, "grid", 101, "quantile grid points on each numeric range")
	addUnitFlags(cmd, &o.unit)
	f.StringSliceVar(&o.columns, "columns", nil, "describe only these columns (default all)")
	f.StringVar(&o.delimiter, "delimiter", ",", "CSV field delimiter: ',', ';', tab or '|'")
	f.Uint64Var(&o.seed, "seed", 0, "use a deterministic INSECURE generator with this seed (tests only)")
	return cmd
}

func runDescribe(cmd *cobra.Command, o describeFlags) error {
	ctx := cmd.Context()
	if err := requireFlags(cmd, "data", "schema", "epsilon"); err != nil {
		return err
	}
	if o.format != "text" && o.format != "json" {
		return fmt.Errorf("--format %q: want text or json", o.format)
	}
	seeded := cmd.Flags().Changed("seed")
	s, err := loadSchemaFlag(o.schema, cmd.InOrStdin())
	if err != nil {
		return err
	}
	sep, err := parseDelimiter(o.delimiter)
	if err != nil {
		return err
	}
	if o.unit.column != "" && o.unit.k < 1 || o.unit.column == "" && cmd.Flags().Changed("max-rows-per-unit") {
		return fmt.Errorf("--privacy-unit COLUMN and --max-rows-per-unit K ≥ 1 go together")
	}
	d, err := describe.New(s, describe.Options{Epsilon: o.epsilon, By: o.by, Quantiles: o.quantiles, Bins: o.bins, Grid: o.grid, Columns: o.columns,
		PrivacyUnit: o.unit.column, MaxRowsPerUnit: o.unit.k})
	if err != nil {
		return err
	}
	inputs := []fileFlag{{"--data", o.data}, {"--schema", o.schema}, {"--ledger", o.ledger}}
	var l *ledger.Ledger
	if o.ledger != "" {
		if l, err = openSpendLedger(ctx, o.ledger, o.epsilon, 0, seeded); err != nil {
			return err
		}
	}
	var plotOut *outputFile
	if o.plot != "" {
		if o.plot == "-" {
			return fmt.Errorf("--plot: give a file name (standard output carries the statistics)")
		}
		if plotOut, err = openCheckedOutput("--plot", o.plot, cmd.OutOrStdout(), inputs...); err != nil {
			return err
		}
	}
	abort := func() {
		if plotOut != nil {
			plotOut.Abort()
		}
	}
	read := func() error {
		_, err := d.Read(ctx, o.data, s, dataset.Options{Delimiter: sep, Stdin: cmd.InOrStdin()})
		return err
	}
	if o.unit.column != "" {
		read = func() error {
			_, err := d.ReadUnits(ctx, o.data, s, dataset.Options{Delimiter: sep}, randomSource(seeded, o.seed))
			return err
		}
	}
	if err := read(); err != nil {
		abort()
		return readErr("--data", err)
	}
	res, err := d.Release(randomSource(seeded, o.seed))
	if err != nil {
		abort()
		return err
	}
	var text []byte
	if o.format == "json" {
		if text, err = json.MarshalIndent(res, "", "  "); err != nil {
			abort()
			return err
		}
		text = append(text, '\n')
	}
	label := fmt.Sprintf("dplearn describe of %s (%s)", displayPath(o.data), dataset.Plural(res.Rows, "row"))
	if plotOut != nil {
		png, err := res.PNG()
		if err != nil {
			abort()
			return fmt.Errorf("--plot: %w", err)
		}
		if err := publishCharged(ctx, plotOut, png, l, o.ledger, label, res.Epsilon, res.Delta); err != nil {
			return err
		}
	} else if l != nil {
		if _, err := l.Charge(ctx, label, ledger.Charge{Epsilon: res.Epsilon, Delta: res.Delta}); err != nil {
			return fmt.Errorf("--ledger %s: refused, nothing released: %w", o.ledger, err)
		}
	}
	w := cmd.OutOrStdout()
	if o.format == "json" {
		if _, err := w.Write(text); err != nil {
			return err
		}
		res.WritePrivacy(cmd.ErrOrStderr())
	} else {
		res.WriteText(w)
	}
	if l != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "Charged ε = %s, δ = %s to the ledger %s.\n", report.Up(res.Epsilon), report.Up(res.Delta), o.ledger)
	}
	if plotOut != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "Wrote the histograms to %s.\n", o.plot)
	}
	return nil
}
