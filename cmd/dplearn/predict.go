package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/regress"
)

func newPredictCmd() *cobra.Command {
	var modelPath, data, out string
	var workers int
	cmd := &cobra.Command{
		Use:   "predict --model MODEL.json --data FILE --out PREDICTIONS.csv",
		Short: "Predict with a fitted model",
		Long: `Score every row of a table with a model written by 'dplearn fit'.

The table needs the schema's feature columns; the target column may be absent.
Rows are encoded exactly as in training (clipped to the declared bounds).

Output CSV columns:
  linear:   row, <target>_predicted (original units: the target's transform
            is undone, e.g. wage rather than log wage; the prediction is
            clipped to the declared target range)
  logistic: row, probability (of the positive label), predicted (the label)
'row' is the 1-based data row of the input. The file is written only when
every row was scored: a bad row or Ctrl-C leaves no partial output.`,
		Example: `  dplearn predict --model wage.json --data new.csv --out predictions.csv`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "model", "data", "out"); err != nil {
				return err
			}
			m, err := regress.LoadModel(modelPath)
			if err != nil {
				return err
			}
			return writePredictions(cmd, m, data, out, workers)
		},
	}
	cmd.Flags().StringVar(&modelPath, "model", "", "model file written by 'dplearn fit'")
	cmd.Flags().StringVar(&data, "data", "", "table to score (CSV, CSV.gz or Parquet)")
	cmd.Flags().StringVar(&out, "out", "", "where to write the predictions (CSV)")
	cmd.Flags().IntVar(&workers, "workers", 0, "parsing goroutines (0: all cores)")
	return cmd
}

func writePredictions(cmd *cobra.Command, m *regress.Model, data, out string, workers int) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(out), "."+filepath.Base(out)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	w := bufio.NewWriterSize(tmp, 1<<20)
	target := m.Schema.Target
	if m.Kind == regress.Logistic {
		fmt.Fprintln(w, "row,probability,predicted")
	} else {
		fmt.Fprintf(w, "row,%s\n", csvField(target.Name+"_predicted"))
	}
	pos, neg := "1", "0"
	if target.Positive != "" {
		pos = target.Positive
		neg = target.Negative
		if neg == "" {
			neg = "not " + target.Positive
		}
	}
	k := len(m.Coefficients) + 1
	row := 0
	buf := make([]byte, 0, 64)
	opt := dataset.Options{Workers: workers, TargetOptional: true, Progress: stderrProgress(cmd)}
	sum, err := dataset.Stream(cmd.Context(), data, m.Schema, opt, func(rows []float64) error {
		for i := 0; i+k <= len(rows); i += k {
			row++
			p := regress.Score(m.Kind, m.Coefficients, rows[i:i+k])
			buf = strconv.AppendInt(buf[:0], int64(row), 10)
			buf = append(buf, ',')
			if m.Kind == regress.Logistic {
				buf = strconv.AppendFloat(buf, p, 'g', 8, 64)
				label := neg
				if p >= 0.5 {
					label = pos
				}
				buf = append(buf, ',')
				buf = append(buf, csvField(label)...)
			} else {
				buf = strconv.AppendFloat(buf, m.Schema.DecodeTarget(p), 'g', 8, 64)
			}
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if err = w.Flush(); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), out); err != nil {
		return err
	}
	fmt.Fprintf(cmd.OutOrStdout(), "Wrote %d predictions to %s\n", sum.Rows, out)
	return nil
}

// csvField quotes s if CSV needs it.
func csvField(s string) string {
	for _, c := range s {
		if c == ',' || c == '"' || c == '\n' || c == '\r' {
			return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
		}
	}
	return s
}
