package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/regress"
)

func newEvaluateCmd() *cobra.Command {
	var modelPath, data, delimiter, missing string
	var workers int
	cmd := &cobra.Command{
		Use:   "evaluate --model MODEL.json --data FILE [--format json]",
		Short: "Measure a fitted model's error on a labelled table",
		Long: `Evaluate a model written by 'dplearn fit' on a table that has the target column.

Linear models:
  mse       mean squared error on the encoded target scale [−1, 1], as the papers report
  rmse      root mean squared error on the target's declared scale (after its
            transform: log wage units for a log-transformed wage)
  mae       mean absolute error on the same scale as rmse
  r2        coefficient of determination
  rmse_original, mae_original (targets with a transform)
            the same errors in the target's original units (wage, not log
            wage): predictions are retransformed naively (exp of the log
            prediction, no smearing), which estimates the conditional
            median, not the mean; the observed target is as encoded
            (clipped to its declared range)
Logistic models:
  accuracy  share of rows whose predicted label (probability ≥ 0.5) is right
  log_loss  mean negative log-likelihood (probabilities clipped to [1e-15, 1−1e-15])
  auc       area under the ROC curve (ties count ½)
  brier     Brier score, the mean of (probability − label)²
  calibration  rows sorted by predicted probability in ten equal groups
            (deciles): mean predicted probability against observed share

Predictions of linear models are clipped to the declared target range.
Missing values follow the model schema's "missing" policies; --missing drop
leaves out every row with a missing value (in any column, the target too),
and the number left out is printed. --data - reads standard input.
Evaluating on the training data spends no privacy budget only if that data is
not private; evaluate on held-out or public data.`,
		Example: `  dplearn evaluate --model wage.json --data test.csv --format json
  dplearn evaluate --model wage.json --data test.csv --missing drop`,
		Args: cobra.NoArgs,
	}
	cmd.Flags().StringVar(&modelPath, "model", "", "model file written by 'dplearn fit' (- for standard input)")
	cmd.Flags().StringVar(&data, "data", "", "labelled table: CSV, CSV.gz or Parquet (- for standard input)")
	cmd.Flags().StringVar(&missing, "missing", "schema", "missing values: schema (the model schema's policies) or drop (leave out rows with a missing value)")
	cmd.Flags().StringVar(&delimiter, "delimiter", ",", "CSV field delimiter of --data: ',', ';', tab or '|'")
	cmd.Flags().IntVar(&workers, "workers", 0, "parsing goroutines (0: all cores)")
	format := addFormatFlag(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		fm, err := format()
		if err != nil {
			return err
		}
		if err := requireFlags(cmd, "model", "data"); err != nil {
			return err
		}
		if modelPath == "-" && data == "-" {
			return fmt.Errorf("--model - and --data - cannot both read standard input")
		}
		sep, err := parseDelimiter(delimiter)
		if err != nil {
			return err
		}
		m, err := loadModel(modelPath, cmd.InOrStdin())
		if err != nil {
			return err
		}
		s, err := missingOverride(m.Schema, missing)
		if err != nil {
			return err
		}
		ev := regress.NewEvaluation(m)
		opt := dataset.Options{Workers: workers, Progress: stderrProgress(cmd), Delimiter: sep, Stdin: cmd.InOrStdin(), SkipDropped: true}
		sum, err := dataset.Stream(cmd.Context(), data, s, opt, func(rows []float64) error {
			ev.Add(rows)
			return nil
		})
		if err != nil {
			return readErr("--data", err)
		}
		metrics := ev.Metrics()
		if fm == formatJSON {
			// The JSON goes to stdout for scripts; the data-dependent
			// counts stay on the console (stderr).
			if sum.Dropped > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%s with a missing value left out\n", dataset.Plural(sum.Dropped, "row"))
			}
			printDataCounts(cmd.ErrOrStderr(), sum)
			return writeJSON(cmd.OutOrStdout(), metrics)
		}
		if err := printMetrics(cmd.OutOrStdout(), m, metrics, sum.Dropped); err != nil {
			return err
		}
		printDataCounts(cmd.OutOrStdout(), sum)
		return nil
	}
	return cmd
}

func printMetrics(w io.Writer, m *regress.Model, x regress.EvalMetrics, dropped int64) error {
	fmt.Fprintf(w, "%s model of %q (%s) on %s", m.Kind, m.Schema.Target.Name, m.Privacy.Guarantee(), dataset.Plural(int64(x.N), "row"))
	if dropped > 0 {
		fmt.Fprintf(w, " (%s with a missing value left out)", dataset.Plural(dropped, "row"))
	}
	fmt.Fprintln(w)
	line := func(name string, v *float64, note string) {
		if v != nil {
			fmt.Fprintf(w, "  %-9s %.6g  %s\n", name, *v, note)
		}
	}
	line("mse", x.MSE, "(encoded target scale [−1, 1])")
	line("rmse", x.RMSE, "(target scale after its transform)")
	line("mae", x.MAE, "(target scale after its transform)")
	line("r2", x.R2, "")
	if o := x.OriginalUnits; o != nil {
		fmt.Fprintf(w, "  %-9s %.6g  (%s, original units)\n", "rmse", o.RMSEOriginal, m.Schema.Target.Name)
		fmt.Fprintf(w, "  %-9s %.6g  (%s, original units)\n", "mae", o.MAEOriginal, m.Schema.Target.Name)
		fmt.Fprintf(w, "  retransformation: %s\n", o.Retransformation)
	}
	line("accuracy", x.Accuracy, "")
	line("log_loss", x.LogLoss, "")
	line("auc", x.AUC, "(area under the ROC curve)")
	line("brier", x.Brier, "(mean squared error of the probability)")
	if len(x.Calibration) > 0 {
		fmt.Fprintf(w, "  calibration (rows sorted by predicted probability, %d equal groups):\n", len(x.Calibration))
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "    group\trows\tpredicted range\tmean predicted\tobserved")
		for g, b := range x.Calibration {
			fmt.Fprintf(tw, "    %d\t%d\t[%.3f, %.3f]\t%.4f\t%.4f\n", g+1, b.N, b.MinPredicted, b.MaxPredicted, b.MeanPredicted, b.Observed)
		}
		return tw.Flush()
	}
	return nil
}
