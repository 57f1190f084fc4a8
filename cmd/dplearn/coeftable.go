package main

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/dplearn/dplearn/fit"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/report"
)

// The coefficient table is computed by package fit (regress.CoefTable,
// stored as the model file's "inference" section); this file prints it.

// writeModelCoefTable prints a model's coefficient table: the stored one,
// or, for a model without it (older files, other commands), the
// coefficients in original units without inference.
func writeModelCoefTable(w io.Writer, m *regress.Model) error {
	if r := m.Inference; r != nil {
		if len(r.Rows) != len(m.Coefficients) {
			return fmt.Errorf("model: inference section has %d coefficients, the model %d", len(r.Rows), len(m.Coefficients))
		}
		return writeCoefTable(w, r)
	}
	r := &regress.CoefTable{}
	for i, u := range m.Schema.OriginalUnits() {
		b := u.Apply(m.Coefficients)
		r.Rows = append(r.Rows, regress.CoefRow{Name: u.Name, Encoded: m.Coefficients[i], Original: b, Meaning: u.Meaning(b)})
	}
	r.Unavailable = "no confidence intervals for this fit"
	return writeCoefTable(w, r)
}

// weakMark follows the interval of a coefficient that rests on a weakly
// located direction (regress.CoefRow.WeaklyLocated); weakFootnote explains
// it under the table.
const (
	weakMark     = " †"
	weakFootnote = "† located by < 1 noise SD: at the identification edge such intervals covered 85–93% for 95% nominal (docs/inference.md); more ε or fewer/merged levels would help"
)

// writeCoefTable prints the coefficient table for the local console.
func writeCoefTable(w io.Writer, r *regress.CoefTable) error {
	if r.Classical != nil {
		return writeClassicalTable(w, r)
	}
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	ci := "95% CI"
	if r.Level > 0 {
		ci = fmt.Sprintf("%g%% CI", 100*r.Level)
	}
	fmt.Fprintf(tw, "coefficient\testimate (original units)\tSE\tP>|z|\t%s (original units)\tencoded\tSE (encoded)\tmeaning\n", ci)
	weak := false
	for _, c := range r.Rows {
		se, ciText, seEnc, pv := "n/a", "n/a", "n/a", "n/a"
		if c.Identified {
			se, ciText, seEnc = fmt.Sprintf("%.4g", c.OriginalSE), fmt.Sprintf("[%.4g, %.4g]", c.OriginalLower, c.OriginalUpper), fmt.Sprintf("%.4g", c.SE)
			if c.WeaklyLocated {
				ciText += weakMark
				weak = true
			}
		} else if r.Level > 0 {
			se, ciText, seEnc = "unidentified", "unidentified", "unidentified"
		}
		if c.Identified && c.PValue != nil {
			pv = fmt.Sprintf("%.3f", *c.PValue) // the bootstrap p-value (inference.Coefficient.PValue)
		}
		fmt.Fprintf(tw, "%s\t%+.5g\t%s\t%s\t%s\t%+.5f\t%s\t%s\n", c.Name, c.Original, se, pv, ciText, c.Encoded, seEnc, c.Meaning)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if weak {
		fmt.Fprintln(w, weakFootnote)
	}
	switch {
	case r.Unavailable != "":
		fmt.Fprintf(w, "(%s)\n", r.Unavailable)
	default:
		fmt.Fprintf(w, "Intervals: %s.\nEstimand: %s.\n", r.Method, r.Estimand)
	}
	if r.Replicates > 0 {
		fmt.Fprintf(w, "Bootstrap: %d of %d replicates failed (%.1f%%: the noisy Λ2 located no direction; they count as outside every interval).\n",
			r.Failed, r.Replicates, 100*float64(r.Failed)/float64(r.Replicates))
	}
	if r.Diagnosis != "" {
		fmt.Fprintf(w, "Why: %s.\n", r.Diagnosis)
	}
	if r.Note != "" {
		fmt.Fprintf(w, "Note: %s.\n", r.Note)
	}
	return nil
}

// printForecast prints the forecast of the noise made before fitting. It
// uses only public quantities (mechanism, ε, δ, N, schema).
func printForecast(w io.Writer, res *fit.Result, n int64) {
	if res.ForecastErr != nil {
		fmt.Fprintf(w, "forecast: %v\n", res.ForecastErr)
		return
	}
	f := res.Forecast
	if f == nil {
		return
	}
	fmt.Fprintf(w, "Forecast before fitting (public quantities only: N = %d, %d coefficients, ε = %s for the fit, the schema's ranges): noise standard deviation of the encoded coefficients %s (median), of the encoded prediction %.3g; the post-processing (ridge or eigenvalue clip) shrinks a coefficient by up to %.0f%%.\n",
		n, len(f.CoefSD), report.Up(res.FitEpsilon), fmtMedian(f.CoefSD), f.PredictionRMS, 100*f.Shrinkage)
	// The forecast cannot see the data's design (issue 25 item 1): say so,
	// and where to read the real design's failures.
	fmt.Fprintln(w, "(The forecast simulates an idealised design: independent features, equally likely category levels. Rare levels or nearly collinear columns make the real fit noisier; the bootstrap line after the fit reports failures on the released design.)")
	if f.Warning != "" {
		fmt.Fprintf(w, "warning: %s\n", f.Warning)
	}
}

// printReleasedForecast prints the forecast repeated after the fit on the
// released design (issue 25 item 1): post-processing of released values.
func printReleasedForecast(w io.Writer, res *fit.Result) {
	if res.ReleasedForecastErr != nil {
		fmt.Fprintf(w, "forecast on the released design: %v\n", res.ReleasedForecastErr)
		return
	}
	f := res.ReleasedForecast
	if f == nil {
		return
	}
	fmt.Fprintf(w, "Forecast on the released design (released values only, %d simulated fits): noise standard deviation of the encoded coefficients %s (median), of the encoded prediction %.3g; the post-processing (ridge or eigenvalue clip) shrinks a coefficient by up to %.0f%%; %.1f%% of the simulated fits trim a direction, %.1f%% fail.\n",
		res.ReleasedForecastReplicates, fmtMedian(f.CoefSD), f.PredictionRMS, 100*f.Shrinkage, 100*f.TrimmedShare, 100*f.FailedShare)
	if f.Warning != "" {
		fmt.Fprintf(w, "warning: %s\n", f.Warning)
	}
}

func fmtMedian(xs []float64) string {
	c := append([]float64(nil), xs...)
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && c[j] < c[j-1]; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
	return fmt.Sprintf("%.3g", c[len(c)/2])
}

// writeClassicalTable prints the reference fit's table as statsmodels'
// summary does: coefficient, SE, t or z, two-sided p, interval (original
// units), then the fit's statistics.
func writeClassicalTable(w io.Writer, r *regress.CoefTable) error {
	c := r.Classical
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintf(tw, "coefficient\toriginal units\tSE\t%s\tP>|%s|\t%g%% CI (original units)\tencoded\tSE (encoded)\tmeaning\n", c.Stat, c.Stat, 100*r.Level)
	for _, row := range r.Rows {
		st, pv := math.NaN(), math.NaN()
		if row.Stat != nil {
			st = *row.Stat
		}
		if row.PValue != nil {
			pv = *row.PValue
		}
		fmt.Fprintf(tw, "%s\t%+.5g\t%.4g\t%.3f\t%s\t[%.4g, %.4g]\t%+.5f\t%.4g\t%s\n", row.Name, row.Original, row.OriginalSE, st, fmtP(pv),
			row.OriginalLower, row.OriginalUpper, row.Encoded, row.SE, row.Meaning)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "No. observations %d, df model %g, df residuals %g, covariance %s.\n", c.Nobs, c.DFModel, c.DFResid, c.Cov)
	if c.R2 != nil {
		fmt.Fprintf(w, "R² %.4f, adjusted R² %.4f, F %.4g (p %s), residual SD %.4g (target scale after its transform).\n", *c.R2, *c.AdjR2, *c.F, fmtP(*c.FPValue), *c.Sigma)
		fmt.Fprintf(w, "Log-likelihood %.6g, AIC %.6g, BIC %.6g (Gaussian, target scale after its transform).\n", c.LogLik, c.AIC, c.BIC)
	} else {
		fmt.Fprintf(w, "Log-likelihood %.6g, LL-null %.6g, LLR %.4g (p %s), pseudo-R² (McFadden) %.4f, deviance %.6g, AIC %.6g, BIC %.6g.\n",
			c.LogLik, *c.LLNull, *c.LLR, fmtP(*c.LLRP), *c.PseudoR2, *c.Deviance, c.AIC, c.BIC)
	}
	fmt.Fprintf(w, "Intervals: %s.\nEstimand: %s.\n", r.Method, r.Estimand)
	return nil
}

// fmtP prints a p-value as statsmodels' summary does to three decimals,
// with small ones in scientific notation rather than as 0.000.
func fmtP(p float64) string {
	if p == 0 {
		return "<1e-300" // below float64's range
	}
	if p < 0.001 {
		return fmt.Sprintf("%.2g", p)
	}
	return fmt.Sprintf("%.3f", p)
}
