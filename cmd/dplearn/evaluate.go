package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/regress"
)

func newEvaluateCmd() *cobra.Command {
	var modelPath, data string
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
Logistic models:
  accuracy  share of rows whose predicted label (probability ≥ 0.5) is right
  log_loss  mean negative log-likelihood (probabilities clipped to [1e-15, 1−1e-15])

Predictions of linear models are clipped to the declared target range.
Evaluating on the training data spends no privacy budget only if that data is
not private; evaluate on held-out or public data.`,
		Example: `  dplearn evaluate --model wage.json --data test.csv --format json`,
		Args:    cobra.NoArgs,
	}
	cmd.Flags().StringVar(&modelPath, "model", "", "model file written by 'dplearn fit'")
	cmd.Flags().StringVar(&data, "data", "", "labelled table (CSV, CSV.gz or Parquet)")
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
		m, err := regress.LoadModel(modelPath)
		if err != nil {
			return err
		}
		ev := regress.NewEvaluator(m)
		opt := dataset.Options{Workers: workers, Progress: stderrProgress(cmd)}
		if _, err := dataset.Stream(cmd.Context(), data, m.Schema, opt, func(rows []float64) error {
			ev.Add(rows)
			return nil
		}); err != nil {
			return err
		}
		metrics := ev.Metrics()
		if fm == formatJSON {
			return writeJSON(cmd.OutOrStdout(), metrics)
		}
		return printMetrics(cmd.OutOrStdout(), m, metrics)
	}
	return cmd
}

func printMetrics(w io.Writer, m *regress.Model, x regress.Metrics) error {
	fmt.Fprintf(w, "%s model of %q (%s) on %d rows\n", m.Kind, m.Schema.Target.Name, m.Privacy.Guarantee(), x.N)
	line := func(name string, v *float64, note string) {
		if v != nil {
			fmt.Fprintf(w, "  %-9s %.6g  %s\n", name, *v, note)
		}
	}
	line("mse", x.MSE, "(encoded target scale [−1, 1])")
	line("rmse", x.RMSE, "(target scale after its transform)")
	line("mae", x.MAE, "(target scale after its transform)")
	line("r2", x.R2, "")
	line("accuracy", x.Accuracy, "")
	line("log_loss", x.LogLoss, "")
	return nil
}
