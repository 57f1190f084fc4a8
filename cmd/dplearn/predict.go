package main

import (
	"bufio"
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/regress"
)

// predictOptions are the flags of `dplearn predict`.
type predictOptions struct {
	model, data, out, delimiter, missing string
	ids                                  []string
	workers                              int
	// digits is the number of significant digits of each prediction; 0
	// writes the shortest decimal that reads back as the exact float64.
	digits int
}

// maxPredictDigits is the most significant digits --digits accepts: 17
// always identify a float64 (and more only print its binary expansion).
const maxPredictDigits = 17

func newPredictCmd() *cobra.Command {
	var o predictOptions
	cmd := &cobra.Command{
		Use:   "predict --model MODEL.json --data FILE --out PREDICTIONS.csv",
		Short: "Predict with a fitted model",
		Long: `Score every row of a table with a model written by 'dplearn fit'.

The table needs the schema's feature columns; the target column is ignored
(it may be absent or hold anything). Rows are encoded exactly as in training
(clipped to the declared bounds, missing values handled by the schema's
"missing" policies).

Output CSV columns:
  row, the --id columns, then
  linear:   <target>_predicted (original units: the target's transform
            is undone, e.g. wage rather than log wage; the prediction is
            clipped to the declared target range)
  logistic: probability (of the positive label), predicted (the label)
'row' is the 1-based data row of the input. Predictions have 8 significant
digits unless --digits says otherwise; --digits 0 writes every prediction
at full precision (the shortest decimal that reads back as the very
float64 the model computed, as the Python package uses). A row with a missing value in a
column whose policy is "drop" (or every column with --missing drop) gets NA
predictions, so the output has one line per input row.

--data - reads standard input; --out - writes standard output (messages then
go to stderr). A regular output file is written only when every row was
scored (temporary file and rename: a bad row or Ctrl-C leaves no partial
output); a device or pipe (/dev/stdout, a FIFO) is written through, never
replaced.`,
		Example: `  dplearn predict --model wage.json --data new.csv --out predictions.csv
  dplearn predict --model wage.json --data new.csv --id person_id --out -
  gunzip -c new.csv.gz | dplearn predict --model wage.json --data - --out - --missing drop`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "model", "data", "out"); err != nil {
				return err
			}
			return runPredict(cmd, o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.model, "model", "", "model file written by 'dplearn fit' (- for standard input)")
	f.StringVar(&o.data, "data", "", "table to score: CSV, CSV.gz or Parquet (- for standard input)")
	f.StringVar(&o.out, "out", "", "where to write the predictions, CSV (- for standard output)")
	f.StringSliceVar(&o.ids, "id", nil, "columns to copy into the output beside each prediction (e.g. --id person_id,visit)")
	f.StringVar(&o.missing, "missing", "schema", "missing values: schema (the model schema's policies) or drop (NA predictions for rows with a missing value in any column)")
	f.StringVar(&o.delimiter, "delimiter", ",", "CSV field delimiter of --data: ',', ';', tab or '|'")
	f.IntVar(&o.workers, "workers", 0, "parsing goroutines (0: all cores)")
	f.IntVar(&o.digits, "digits", 8, "significant digits of the predictions, 1-17 (0: full precision, the shortest decimal that reads back as the exact float64)")
	return cmd
}

func runPredict(cmd *cobra.Command, o predictOptions) (err error) {
	if o.model == "-" && o.data == "-" {
		return fmt.Errorf("--model - and --data - cannot both read standard input")
	}
	if err := refuseSameFile([]fileFlag{{"--out", o.out}}, []fileFlag{{"--model", o.model}, {"--data", o.data}}); err != nil {
		return err
	}
	sep, err := parseDelimiter(o.delimiter)
	if err != nil {
		return err
	}
	if o.digits < 0 || o.digits > maxPredictDigits {
		return fmt.Errorf("--digits %d: want 1 to %d significant digits, or 0 for full precision", o.digits, maxPredictDigits)
	}
	prec := o.digits
	if prec == 0 {
		prec = -1 // strconv: the shortest representation that round-trips
	}
	m, err := loadModel(o.model, cmd.InOrStdin())
	if err != nil {
		return err
	}
	s, err := missingOverride(m.Schema, o.missing)
	if err != nil {
		return err
	}
	out, err := createOutput(o.out, cmd.OutOrStdout())
	if err != nil {
		return fmt.Errorf("--out: %w", err)
	}
	defer func() {
		if err != nil {
			out.Abort()
		}
	}()
	w := bufio.NewWriterSize(out, 1<<20)
	target := m.Schema.Target
	header := []string{"row"}
	for _, id := range o.ids {
		header = append(header, csvField(id))
	}
	if m.Kind == regress.Logistic {
		header = append(header, "probability", "predicted")
	} else {
		header = append(header, csvField(target.Name+"_predicted"))
	}
	fmt.Fprintln(w, strings.Join(header, ","))
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
	opt := dataset.Options{Workers: o.workers, TargetOptional: true, IgnoreTarget: true, Progress: stderrProgress(cmd),
		Delimiter: sep, Stdin: cmd.InOrStdin(), KeepDropped: true, Keep: o.ids}
	sum, err := dataset.StreamBatches(cmd.Context(), o.data, s, opt, func(b dataset.Batch) error {
		nk := len(o.ids)
		for i, r := 0, 0; i+k <= len(b.Rows); i, r = i+k, r+1 {
			row++
			buf = strconv.AppendInt(buf[:0], int64(row), 10)
			for _, id := range b.Keep[r*nk : (r+1)*nk] {
				buf = append(buf, ',')
				buf = append(buf, csvField(id)...)
			}
			buf = append(buf, ',')
			switch {
			case b.Dropped[r] && m.Kind == regress.Logistic:
				buf = append(buf, "NA,NA"...)
			case b.Dropped[r]:
				buf = append(buf, "NA"...)
			case m.Kind == regress.Logistic:
				p := regress.Score(m.Kind, m.Coefficients, b.Rows[i:i+k])
				buf = strconv.AppendFloat(buf, p, 'g', prec, 64)
				label := neg
				if p >= 0.5 {
					label = pos
				}
				buf = append(buf, ',')
				buf = append(buf, csvField(label)...)
			default:
				p := regress.Score(m.Kind, m.Coefficients, b.Rows[i:i+k])
				buf = strconv.AppendFloat(buf, m.Schema.DecodeTarget(p), 'g', prec, 64)
			}
			buf = append(buf, '\n')
			if _, err := w.Write(buf); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return readErr("--data", err)
	}
	if err = w.Flush(); err != nil {
		return fmt.Errorf("write %s: %w", out.name, err)
	}
	if err = out.Commit(); err != nil {
		return err
	}
	msg := cmd.OutOrStdout()
	if toStdout(o.out) {
		msg = cmd.ErrOrStderr()
	}
	fmt.Fprintf(msg, "Wrote %s to %s", dataset.Plural(sum.Rows-sum.Dropped, "prediction"), out.name)
	if sum.Dropped > 0 {
		fmt.Fprintf(msg, " (and NA for %s with a missing value)", dataset.Plural(sum.Dropped, "row"))
	}
	fmt.Fprintln(msg)
	printDataCounts(msg, sum)
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
