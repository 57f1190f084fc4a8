package describe

import (
	"fmt"
	"io"
	"strings"

	"github.com/dplearn/dplearn/report"
)

// WriteText prints the release as a table per column, then the privacy
// report.
func (r *Result) WriteText(w io.Writer) {
	if r.Unit != "" {
		fmt.Fprintf(w, "Units (%s): %d (public); at most %d records per unit read. Noisy counts (95%% error bar, discrete Laplace scale %s):\n", r.Unit, r.Rows, r.MaxRowsPerUnit, report.Up(r.Counts[0].Scale))
		for g, c := range r.Counts {
			name := "kept records"
			if r.By != "" {
				name = r.By + " = " + r.Groups[g]
			}
			fmt.Fprintf(w, "  %-24s %8.0f  [%.0f, %.0f]\n", name, c.Value, c.Lo, c.Hi)
		}
	} else if r.NPublic {
		fmt.Fprintf(w, "Records: %d (public: neighbouring tables differ in one record replaced, so N is not protected)\n", r.Rows)
	} else {
		fmt.Fprintf(w, "Records read: %d (public). Noisy counts (95%% error bar, discrete Laplace scale %s):\n", r.Rows, report.Up(r.Counts[0].Scale))
		for g, c := range r.Counts {
			name := "kept records"
			if r.By != "" {
				name = r.By + " = " + r.Groups[g]
			}
			fmt.Fprintf(w, "  %-24s %8.0f  [%.0f, %.0f]\n", name, c.Value, c.Lo, c.Hi)
		}
	}
	for _, c := range r.Columns {
		title := c.Column
		if c.Group != "" {
			title += "   (" + r.By + " = " + c.Group + ")"
		}
		fmt.Fprintf(w, "\n%s\n", title)
		if c.Numeric {
			fmt.Fprintf(w, "  %-10s %12s  %-27s %s\n", "statistic", "value", "95% error bar", "noise")
			fmt.Fprintf(w, "  %-10s %12.5g  [%11.5g, %11.5g]  Laplace scale %s on the sum\n", "mean", c.Mean.Value, c.Mean.Lo, c.Mean.Hi, report.Up(c.Mean.Scale))
			fmt.Fprintf(w, "  %-10s %12.5g  [%11.5g, %11.5g]  Laplace scale %s on the sum of squares\n", "sd", c.SD.Value, c.SD.Lo, c.SD.Hi, report.Up(c.SD.Scale))
			per := ""
			if r.By != "" {
				per = " per group"
			}
			for _, q := range c.Quantiles {
				fmt.Fprintf(w, "  %-10s %12.5g  the %s–%s quantile (±%s ranks)   exponential mechanism, ε = %s%s\n",
					fmt.Sprintf("q%g", q.Q), q.Value, report.Down(max(q.Q-q.LevelError, 0)), report.Up(min(q.Q+q.LevelError, 1)), report.Up(q.RankError), report.Up(q.Epsilon), per)
			}
		}
		fmt.Fprintf(w, "  histogram (noisy counts ± %d, discrete Laplace scale %s):\n", histHalf(c), report.Up(c.HistScale))
		for _, b := range c.Histogram {
			fmt.Fprintf(w, "    %-22s %8d\n", b.Label, b.Count)
		}
	}
	fmt.Fprintln(w)
	r.WritePrivacy(w)
}

func histHalf(c ColumnStats) int64 {
	if len(c.Histogram) == 0 {
		return 0
	}
	return c.Histogram[0].Half
}

// WritePrivacy prints the privacy report: the guarantee, the composition,
// the neighbouring relation and what was spent per column.
func (r *Result) WritePrivacy(w io.Writer) {
	fmt.Fprintf(w, "Privacy: ε = %s, δ = %s (pure ε-DP), %s.\n", report.Up(r.Epsilon), report.Up(r.Delta), r.Accountant)
	if r.Unit != "" {
		fmt.Fprintf(w, "Neighbours: replace-one-unit: neighbouring tables differ in all rows of one person (privacy unit %q, at most K = %d rows per unit kept, a uniformly random subset); the number of units is public, the number of rows per unit is not released; every sensitivity is K times the per-record one. Values are clipped to the schema's public bounds.\n", r.Unit, r.MaxRowsPerUnit)
	} else if r.NPublic {
		fmt.Fprintln(w, "Neighbours: tables differ in one record replaced by another; N is public. Values are clipped to the schema's public bounds.")
	} else {
		fmt.Fprintln(w, "Neighbours: tables differ in one record replaced by another; the number of records read is public, group and kept counts are released with noise. Values are clipped to the schema's public bounds.")
	}
	fmt.Fprintf(w, "Noise: %s.\n", r.Noise)
	per := map[string]float64{}
	var order []string
	for _, p := range r.Parts {
		k := p.Column
		if k == "" {
			k = "(counts)"
		}
		if _, ok := per[k]; !ok {
			order = append(order, k)
		}
		per[k] += p.Epsilon
	}
	var parts []string
	for _, k := range order {
		parts = append(parts, fmt.Sprintf("%s %s", k, report.Up(per[k])))
	}
	fmt.Fprintf(w, "Spent per column (ε): %s.\n", strings.Join(parts, ", "))
	fmt.Fprintln(w, "Error bars are 95%: exact for counts and sums, a union bound for means and standard deviations with noisy counts, the exponential mechanism's rank bound for quantiles.")
}
