package main

import (
	"fmt"

	"github.com/dplearn/dplearn/dppp"
	"github.com/spf13/cobra"
)

// newPrivacyDPPPCmd builds `dplearn privacy dppp`: DPPP's noise calibration,
// composed budget and label forecast from the public settings alone (no
// key, no data).
func newPrivacyDPPPCmd() *cobra.Command {
	var (
		d            dpppDeployFlags
		n, classes   int
		contributors int
		needed       float64
	)
	cmd := &cobra.Command{
		Use:   "dppp --n N --classes K [--noise binomial|dgauss] [--colluders C --absent A] (--epsilon E --delta D | --budget-queries Q) --budget-epsilon E --budget-delta D",
		Short: "DPPP noise, budget and label forecast for a deployment",
		Long: `dppp calibrates a DPPP deployment's noise from its public settings, as
'dppp serve' and every teacher would, and prints: the noise per teacher, the
queries the budget allows and their composed guarantee (exact privacy-loss
distribution of the noisy histogram), and the forecast: the probability that
a label equals the teachers' plurality, as a function of the plurality's
margin M (votes ahead of the runner-up), bracketed between the worst case
(every other class M behind, ties lost) and the runner-up alone; the margins
needed for 90% and 99% agreement; and a warning when the noise swamps what N
teachers can vote.

Example:
  dplearn privacy dppp --n 20 --classes 10 --colluders 0 --absent 0 \
      --budget-epsilon 10 --budget-delta 1e-5 --budget-queries 100`,
		Args: cobra.NoArgs,
	}
	d.register(cmd, false)
	format := addFormatFlag(cmd)
	cmd.Flags().IntVar(&n, "n", 0, "N, the number of teachers")
	cmd.Flags().IntVar(&classes, "classes", 0, "K, the number of classes")
	cmd.Flags().IntVar(&contributors, "contributors", 0, "noise shares in a decrypted sum for the forecast (0: all N; N − A is the fewest)")
	cmd.Flags().Float64Var(&needed, "teachers-needed", 0, "also find the fewest teachers (up to 1000; same budget, noise, classes, C and A rules) for which a unanimous vote is labelled as voted with at least this worst-case probability, e.g. 0.99 (one calibration per step: seconds)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		fm, err := format()
		if err != nil {
			return err
		}
		if err := requireFlags(cmd, "n", "classes"); err != nil {
			return err
		}
		names := make([]string, n)
		for i := range names {
			names[i] = fmt.Sprintf("teacher%d", i+1)
		}
		cfg, err := d.config(names, classes, 1, [32]byte{})
		if err != nil {
			return err
		}
		p, err := dppp.CalibrateNoise(cfg)
		if err != nil {
			return fmt.Errorf("privacy dppp: %w", err)
		}
		f, err := p.Forecast(contributors)
		if err != nil {
			return fmt.Errorf("privacy dppp: %w", err)
		}
		g, err := p.Composed(p.MaxQueries)
		if err != nil {
			return fmt.Errorf("privacy dppp: %w", err)
		}
		need := 0
		if needed > 0 {
			if needed >= 1 {
				return fmt.Errorf("privacy dppp: --teachers-needed %v: want a probability in (0, 1)", needed)
			}
			if need, err = dppp.TeachersNeeded(cfg, needed, max(1000, n)); err != nil {
				return fmt.Errorf("privacy dppp: --teachers-needed: %w", err)
			}
		}
		if fm == formatJSON {
			return writeJSON(cmd.OutOrStdout(), map[string]any{
				"teachers": n, "teachers_needed": need, "threshold": p.Threshold, "honest": p.Honest, "min_contributors": p.MinContributors,
				"noise": p.Noise.String(), "histogram_coins": p.HistogramCoins, "coins_per_teacher": p.Coins, "sigma_per_teacher": p.Sigma,
				"per_query_epsilon": p.Epsilon, "per_query_delta": p.Delta, "max_queries": p.MaxQueries,
				"composed_epsilon": g.Epsilon, "composed_delta": g.Delta,
				"forecast_contributors": f.Contributors, "noise_sd": f.NoiseSD,
				"agreement_lower": f.Lower[1:], "agreement_upper": f.Upper[1:],
				"margin_90": f.Margin90, "margin_99": f.Margin99, "warning": f.Warning(p)})
		}
		w := cmd.OutOrStdout()
		for _, line := range p.Report() {
			if line == "" || line[:len("packing")] == "packing" {
				continue
			}
			fmt.Fprintln(w, line)
		}
		if contributors != 0 {
			for _, line := range f.Lines(p) {
				fmt.Fprintln(w, line)
			}
		}
		switch {
		case needed > 0 && need == 0:
			fmt.Fprintf(w, "teachers needed: even 1000 teachers do not label a unanimous vote as voted with probability %g (worst case) at these settings\n", needed)
		case needed > 0:
			fmt.Fprintf(w, "teachers needed: %d (a unanimous vote labelled as voted with worst-case probability ≥ %g; same budget, noise and classes, C and A by the same rules)\n", need, needed)
		}
		return nil
	}
	return cmd
}
