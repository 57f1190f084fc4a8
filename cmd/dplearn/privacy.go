package main

import (
	"fmt"
	"io"
	"math"
	"math/big"
	"strconv"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/report"
	"github.com/spf13/cobra"
)

// newPrivacyCmd builds `dplearn privacy`: a calculator for privacy
// parameters and an auditable sampler.
func newPrivacyCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "privacy",
		Short: "Privacy calculator: calibrate noise, account steps, CAPE, binomial, sample",
		Long: `dplearn privacy answers privacy questions without writing code.

  calibrate       noise scale for a target (ε, δ) and sensitivity
  gaussian-steps  (ε, δ) of T Gaussian steps (noisy gradient descent)
  cape            exact δ(ε) of the CAPE scheme, or τ for a target (ε, δ)
  binomial        smallest number of coin flips for the binomial mechanism
  sample          draw noise with fresh secure randomness, one sample per line
  subsampled      (ε, δ) or noise multiplier of Poisson-subsampled Gaussian steps (DP-SGD)
  ledger          a privacy budget in a file: create, charge (refuses overspending), show
  dppp            DPPP noise per teacher, queries the budget allows, label forecast

Every command prints words by default and exactly one JSON object with
--format json. Scales computed for dplearn's own samplers include the rounding
slack of their power-of-two grid (at most 2^-20 of the noise scale).

In words, guarantees (ε, δ, ρ, μ) and calibrated noise scales are printed to 6
significant digits rounded UP, so a figure copied from the screen is never
less private than the computed one; JSON numbers are full precision.

Example:
  dplearn privacy calibrate --mechanism gaussian --epsilon 1 --delta 1e-5 --sensitivity 1`,
	}
	cmd.AddCommand(newPrivacyCalibrateCmd(), newPrivacyGaussianStepsCmd(), newPrivacyCAPECmd(),
		newPrivacyBinomialCmd(), newPrivacySampleCmd(), newPrivacySubsampledCmd(), newPrivacyLedgerCmd(), newPrivacyDPPPCmd())
	return cmd
}

func newPrivacyCalibrateCmd() *cobra.Command {
	var mech string
	var eps, delta, sens float64
	cmd := &cobra.Command{
		Use:   "calibrate",
		Short: "Noise scale for a target privacy level",
		Long: `calibrate prints the noise scale that makes one release (ε, δ)-DP.

Mechanisms:
  laplace            b for ε-DP with L1 sensitivity S (δ ignored)
  gaussian           σ by the analytic Gaussian (Balle & Wang 2018), any ε
  gaussian-classic   σ = S·√(2 ln(1.25/δ))/ε, valid only for ε < 1 (refused otherwise)
  discrete-gaussian  σ of the discrete Gaussian on the integers, exact δ
                     (Canonne, Kamath & Steinke 2020, Theorem 7); S must be an integer

laplace, gaussian and gaussian-classic include the grid slack of dplearn's
samplers (noise.AddLaplace/AddGaussian); discrete-gaussian has none.

JSON keys: mechanism, epsilon, delta, sensitivity, scale, includes_grid_slack.

Example:
  dplearn privacy calibrate --mechanism gaussian --epsilon 1 --delta 1e-5 --sensitivity 1 --format json`,
		Args: cobra.NoArgs,
	}
	format := addFormatFlag(cmd)
	cmd.Flags().StringVar(&mech, "mechanism", "", "laplace, gaussian, gaussian-classic or discrete-gaussian")
	cmd.Flags().Float64Var(&eps, "epsilon", 0, "target ε (> 0)")
	cmd.Flags().Float64Var(&delta, "delta", 0, "target δ in (0, 1) (Gaussian mechanisms)")
	cmd.Flags().Float64Var(&sens, "sensitivity", 0, "sensitivity: L1 for laplace, L2 for the Gaussians")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		f, err := format()
		if err != nil {
			return err
		}
		if err := requireFlags(cmd, "mechanism", "epsilon", "sensitivity"); err != nil {
			return err
		}
		var scale float64
		slack := true
		var how string
		switch mech {
		case "laplace":
			scale, err = accounting.LaplaceScale(eps, sens)
			delta = 0
			how = "Laplace scale b, ε-DP (Dwork et al. 2006)"
		case "gaussian", "gaussian-classic", "discrete-gaussian":
			if err := requireFlags(cmd, "delta"); err != nil {
				return err
			}
			switch mech {
			case "gaussian":
				scale, err = accounting.GaussianSigma(eps, delta, sens)
				how = "Gaussian σ, analytic Gaussian mechanism (Balle & Wang 2018)"
			case "gaussian-classic":
				scale, err = accounting.ClassicGaussianSigma(eps, delta, sens)
				how = "Gaussian σ, classic calibration (Dwork & Roth, valid for ε < 1 only)"
			default:
				scale, err = accounting.DiscreteGaussianSigma(eps, delta, sens)
				slack = false
				how = "discrete Gaussian σ on the integers, exact δ (Canonne, Kamath & Steinke 2020)"
			}
		default:
			return fmt.Errorf("privacy calibrate: --mechanism %q: want laplace, gaussian, gaussian-classic or discrete-gaussian", mech)
		}
		if err != nil {
			return fmt.Errorf("privacy calibrate: %w", err)
		}
		out := map[string]any{"mechanism": mech, "epsilon": eps, "delta": delta, "sensitivity": sens,
			"scale": scale, "includes_grid_slack": slack}
		if f == formatJSON {
			return writeJSON(cmd.OutOrStdout(), out)
		}
		w := cmd.OutOrStdout()
		// A calibrated noise scale is copied into mechanisms: rounded up.
		fmt.Fprintf(w, "scale = %s\n", report.Up(scale))
		fmt.Fprintf(w, "%s for (ε = %g, δ = %g) and sensitivity %g.\n", how, eps, delta, sens)
		if slack {
			fmt.Fprintln(w, "Includes the rounding slack of dplearn's power-of-two noise grid; use with its samplers.")
		}
		return nil
	}
	return cmd
}

func newPrivacyGaussianStepsCmd() *cobra.Command {
	var sigma, sens, delta float64
	var steps int
	var noSlack bool
	cmd := &cobra.Command{
		Use:   "gaussian-steps",
		Short: "(ε, δ) of T Gaussian steps (noisy gradient descent)",
		Long: `gaussian-steps prints the privacy of T Gaussian mechanisms with noise σ on a
query of L2 sensitivity S (e.g. T steps of noisy gradient descent), at δ.

  epsilon_exact        exact: T Gaussian steps compose to one Gaussian with sensitivity
                       √T·S (Gaussian DP, Dong, Roth & Su 2019), analytic (ε, δ) curve
  epsilon_rdp          improved RDP/zCDP conversion (Canonne, Kamath & Steinke 2020;
                       Balle et al. 2020), optimal α
  epsilon_rdp_classic  the Gaussian FM paper's Eq. (7) at its Eq. (8) α (as published;
                       valid, but Eq. (8) does not minimise Eq. (7))
  epsilon_zcdp         ρ + 2√(ρ ln(1/δ)), ρ = T·S²/(2σ²) (Bun & Steinke 2016)

By default S is increased by dplearn's grid slack (2^-20·σ); --no-grid-slack
reproduces the formulas for an ideal continuous Gaussian.

Example:
  dplearn privacy gaussian-steps --sigma 10 --sensitivity 1 --steps 100 --delta 1e-5 --format json`,
		Args: cobra.NoArgs,
	}
	format := addFormatFlag(cmd)
	cmd.Flags().Float64Var(&sigma, "sigma", 0, "noise standard deviation σ of each step")
	cmd.Flags().Float64Var(&sens, "sensitivity", 0, "L2 sensitivity of each step")
	cmd.Flags().IntVar(&steps, "steps", 0, "number of steps T")
	cmd.Flags().Float64Var(&delta, "delta", 0, "target δ")
	cmd.Flags().BoolVar(&noSlack, "no-grid-slack", false, "ignore the grid slack of dplearn's sampler (ideal Gaussian)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		f, err := format()
		if err != nil {
			return err
		}
		if err := requireFlags(cmd, "sigma", "sensitivity", "steps", "delta"); err != nil {
			return err
		}
		account := accounting.GaussianStepsOnGrid
		if noSlack {
			account = accounting.GaussianSteps
		}
		r, err := account(sigma, sens, steps, delta)
		if err != nil {
			return fmt.Errorf("privacy gaussian-steps: %w", err)
		}
		if f == formatJSON {
			return writeJSON(cmd.OutOrStdout(), map[string]any{
				"epsilon_exact":       r.EpsilonExact,
				"mu":                  r.Mu,
				"epsilon_rdp":         r.EpsilonRDP,
				"epsilon_rdp_classic": r.EpsilonRDPClassic,
				"epsilon_zcdp":        r.EpsilonZCDP,
				"rho":                 r.Rho,
				"alpha_classic":       r.AlphaClassic,
				"delta":               delta,
				"steps":               steps,
				"sigma":               sigma,
				"sensitivity":         sens,
				"includes_grid_slack": !noSlack,
			})
		}
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "%d Gaussian steps with σ = %g, sensitivity %g, are (ε, δ = %g)-DP with\n", steps, sigma, sens, delta)
		// ε, ρ and μ are guarantees: rounded up. α is the order the
		// published formula uses (any α > 1 is valid): informational.
		fmt.Fprintf(w, "  ε = %s  (exact: one Gaussian with sensitivity √T·S, i.e. μ = %s Gaussian DP; the tightest)\n", report.Up(r.EpsilonExact), report.Up(r.Mu))
		fmt.Fprintf(w, "  ε = %s  (improved RDP conversion)\n", report.Up(r.EpsilonRDP))
		fmt.Fprintf(w, "  ε = %s  (zCDP, ρ = %s)\n", report.Up(r.EpsilonZCDP), report.Up(r.Rho))
		fmt.Fprintf(w, "  ε = %s  (Gaussian FM paper Eq. 7-8, α = %s, as published)\n", report.Up(r.EpsilonRDPClassic), fmtInfo(r.AlphaClassic))
		return nil
	}
	return cmd
}

func newPrivacyCAPECmd() *cobra.Command {
	var sites, colluders, n int
	var tau, eps, delta, sens float64
	var siteSens []float64
	cmd := &cobra.Command{
		Use:   "cape",
		Short: "Exact δ(ε) of the CAPE scheme, or τ for a target (ε, δ)",
		Long: `cape prints the exact privacy of one CAPE release (Imtiaz & Sarwate; Section 5
of the Gaussian FM paper): S sites, each adding zero-sum noise e_s (from
ê_s ~ N(0, τ²) and secure aggregation) plus local noise g_s ~ N(0, τ²/S) to
its release, at most C sites colluding with the aggregator.

The adversary sees every site's release, the sum of the ê_s and everything
the colluders hold. For a record at an honest site whose release has L2
sensitivity Δ, the privacy loss is N(μ, 2μ) with
  μ_h = Δ² S (S + S_H) / (2 τ² S_H (S + 1)),   S_H = S − C;
any one site alone, which reads the model and knows its own g_s, sees
  μ_lone = Δ² S / (2 τ² (S − 1));
μ is the larger of the two, and δ(ε) = Φ(√(μ/2) − ε/√(2μ)) −
e^ε Φ(−√(μ/2) − ε/√(2μ)), for every ε > 0 (PRIVACY-NOTES item 18;
derivation in accounting.CAPEParams, steps 1-7).

The per-site sensitivity: give it with --sensitivity (the L2 sensitivity of
ONE site's release, after whitening if it has several blocks), or with
--site-sensitivities for unequal sites (the worst site is reported), or give
--n alone for the paper's convention: each site holds N/S samples and releases
a mean of values in [0, 1], so Δ = S/N. With --n the paper's Theorem 1 is
also printed, labelled "as published": it is NOT a guarantee (it understates
δ, by up to 10¹³×).

Give --tau for δ at ε, or --delta instead to get the smallest τ (rounded up)
that makes the release (ε, δ)-DP.

Trust model: honest-but-curious parties, the aggregator with C ≤ ⌈S/3⌉ − 1
colluders (the default; dplearn's secure aggregation tolerates no more) or
any one site alone, and a secure
aggregation that hides individual noise shares; without secure aggregation
the zero-sum noise gives no privacy. Printed δ, μ and calibrated τ are rounded
up; no grid slack of dplearn's samplers is included in Δ.

JSON keys: mode (delta or calibrate-tau), delta (exact δ at ε and τ), epsilon,
tau, sites, colluders, sensitivity, sensitivity_source, mu, gdp_mu, n,
target_delta, worst_site, delta_as_published (null when not applicable),
as_published_note. Numbers in JSON are full precision.

Example:
  dplearn privacy cape --sites 3 --n 100 --tau 0.106 --epsilon 0.9
  dplearn privacy cape --sites 10 --sensitivity 0.01 --epsilon 0.5 --delta 1e-5 --format json`,
		Args: cobra.NoArgs,
	}
	format := addFormatFlag(cmd)
	cmd.Flags().IntVar(&sites, "sites", 0, "number of sites S")
	cmd.Flags().IntVar(&colluders, "colluders", -1, "colluding sites C (default ⌈S/3⌉−1)")
	cmd.Flags().Float64Var(&tau, "tau", 0, "noise standard deviation τ of each ê_s (g_s has τ/√S)")
	cmd.Flags().Float64Var(&delta, "delta", 0, "target δ: calibrate τ instead of giving --tau")
	cmd.Flags().Float64Var(&sens, "sensitivity", 0, "L2 sensitivity of one site's release (whitened)")
	cmd.Flags().Float64SliceVar(&siteSens, "site-sensitivities", nil, "per-site L2 sensitivities, comma-separated (unequal sites; sets S)")
	cmd.Flags().IntVar(&n, "n", 0, "total number of samples N (paper's convention Δ = S/N; as-published figure)")
	cmd.Flags().Float64Var(&eps, "epsilon", 0, "ε (> 0)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		f, err := format()
		if err != nil {
			return err
		}
		if err := requireFlags(cmd, "epsilon"); err != nil {
			return err
		}
		has := cmd.Flags().Changed
		if has("tau") == has("delta") {
			return fmt.Errorf("privacy cape: give exactly one of --tau (δ at ε) and --delta (τ for (ε, δ))")
		}
		if has("sensitivity") && has("site-sensitivities") {
			return fmt.Errorf("privacy cape: give --sensitivity or --site-sensitivities, not both")
		}
		if has("site-sensitivities") {
			if has("sites") && sites != len(siteSens) {
				return fmt.Errorf("privacy cape: --sites %d but %d site sensitivities", sites, len(siteSens))
			}
			sites = len(siteSens)
		} else if err := requireFlags(cmd, "sites"); err != nil {
			return err
		}
		if !has("colluders") {
			colluders = accounting.CAPEColluders(sites)
		}
		if colluders > accounting.CAPEColluders(sites) {
			return fmt.Errorf("privacy cape: --colluders %d: dplearn's secure aggregation tolerates at most ⌈S/3⌉−1 = %d colluding sites", colluders, accounting.CAPEColluders(sites))
		}
		source := "--sensitivity"
		worst := -1
		switch {
		case has("site-sensitivities"):
			source = "--site-sensitivities (worst site)"
		case has("sensitivity"):
		case has("n"):
			if sens, err = accounting.CAPESeedSensitivity(sites, n); err != nil {
				return fmt.Errorf("privacy cape: %w", err)
			}
			source = "paper's convention S/N"
		default:
			return fmt.Errorf("privacy cape: give the per-site sensitivity: --sensitivity, --site-sensitivities, or --n for the paper's convention Δ = S/N (see --help)")
		}
		mode := "delta"
		if has("delta") {
			mode = "calibrate-tau"
			if has("site-sensitivities") {
				tau, err = accounting.CAPETauSites(eps, delta, siteSens, colluders)
			} else {
				tau, err = accounting.CAPETau(eps, delta, sites, colluders, sens)
			}
			if err != nil {
				return fmt.Errorf("privacy cape: %w", err)
			}
		}
		var d float64
		if has("site-sensitivities") {
			d, worst, err = accounting.CAPEDeltaSites(siteSens, colluders, tau, eps)
			if err == nil {
				sens = siteSens[worst]
			}
		} else {
			d, err = accounting.CAPEDeltaExact(accounting.CAPEParams{Sites: sites, Colluders: colluders, Tau: tau, Sensitivity: sens}, eps)
		}
		if err != nil {
			return fmt.Errorf("privacy cape: %w", err)
		}
		p := accounting.CAPEParams{Sites: sites, Colluders: colluders, Tau: tau, Sensitivity: sens}
		mu, err := accounting.CAPEMu(p)
		if err != nil {
			return fmt.Errorf("privacy cape: %w", err)
		}
		eta, err := accounting.CAPEGDPMu(p)
		if err != nil {
			return fmt.Errorf("privacy cape: %w", err)
		}
		var pub any // JSON null unless the paper's theorem applies
		pubNote := "not computed: needs --n"
		if has("n") {
			if v, err := accounting.CAPEDeltaAsPublished(sites, colluders, tau, n, eps); err != nil {
				pubNote = "not applicable: " + err.Error()
			} else {
				pub = v
				pubNote = "Theorem 1 of the Gaussian FM paper with per-site sensitivity S/N; as published, NOT a guarantee"
			}
		}
		if f == formatJSON {
			out := map[string]any{"mode": mode, "delta": d, "epsilon": eps, "tau": tau, "sites": sites,
				"colluders": colluders, "sensitivity": sens, "sensitivity_source": source, "mu": mu, "gdp_mu": eta,
				"delta_as_published": pub, "as_published_note": pubNote}
			if has("n") {
				out["n"] = n
			}
			if has("delta") {
				out["target_delta"] = delta
			}
			if worst >= 0 {
				out["worst_site"] = worst
			}
			return writeJSON(cmd.OutOrStdout(), out)
		}
		w := cmd.OutOrStdout()
		if mode == "calibrate-tau" {
			// τ is noise to be added: printed rounded up.
			fmt.Fprintf(w, "tau = %s\n", report.Up(tau))
			fmt.Fprintf(w, "Smallest τ (rounded up) for which one CAPE release is (ε = %g, δ = %g)-DP by the exact curve; achieved δ = %s.\n", eps, delta, report.Up(d))
		} else {
			fmt.Fprintf(w, "delta = %s\n", report.Up(d))
			fmt.Fprintf(w, "One CAPE release is (ε = %g, δ = %s)-DP for every record at an honest site (exact).\n", eps, report.Up(d))
		}
		// τ: a calibrated τ is noise to add, rounded up; a given τ is echoed
		// exactly. Δ is echoed exactly, or as the fraction S/N.
		tauText := fmt.Sprintf("%g", tau)
		if mode == "calibrate-tau" {
			tauText = report.Up(tau)
		}
		sensText := fmt.Sprintf("%g (%s", sens, source)
		switch {
		case worst >= 0:
			sensText += fmt.Sprintf(": site %d of %d)", worst, sites)
		case source == "paper's convention S/N":
			sensText = fmt.Sprintf("S/N = %d/%d (the paper's convention: means over N/S samples per site)", sites, n)
		default:
			sensText += ")"
		}
		fmt.Fprintf(w, "  %d sites, ≤ %d colluding, τ = %s, per-site sensitivity Δ = %s\n", sites, colluders, tauText, sensText)
		fmt.Fprintf(w, "  privacy loss N(μ, 2μ) with μ = %s; as Gaussian DP, μ_GDP = √(2μ) = %s (composes by √Σμ_GDP²)\n", report.Up(mu), report.Up(eta))
		if pub != nil {
			fmt.Fprintf(w, "  as published (Gaussian FM paper, Theorem 1, Δ = S/N; NOT a guarantee, understates δ): δ = %s\n", report.Up(pub.(float64)))
		} else if has("n") {
			fmt.Fprintf(w, "  as published (Gaussian FM paper, Theorem 1): %s\n", pubNote)
		}
		fmt.Fprintln(w, "Assumes honest-but-curious parties and secure aggregation of the noise shares.")
		return nil
	}
	return cmd
}

func newPrivacyBinomialCmd() *cobra.Command {
	var eps, delta float64
	var sens int64
	cmd := &cobra.Command{
		Use:   "binomial",
		Short: "Smallest number of coin flips for the binomial mechanism",
		Long: `binomial prints the smallest number n of fair coin flips such that adding
Binomial(n, ½) − n/2 to an integer count with sensitivity S is (ε, δ)-DP.

  n         exact: the smallest n whose exact privacy profile (summed from the
            binomial probabilities, all shifts 1..S) gives δ(ε) ≤ δ
  n_cpsgd   Theorem 1 of cpSGD (Agarwal et al. 2018) with Δ1 = Δ2 = Δ∞ = S
  n_dppp    Theorem 1 of the DPPP paper, n ≥ 2((2+ε)/ε)² ln(2/δ), for S = 1;
            for S > 1 applied at (ε/S, δ/(S e^ε)) by group privacy

For a vote histogram (one record moves one vote between two classes) each of
the two changed counts must be charged: run with ε/2 and δ/2 and S = 1.

Example:
  dplearn privacy binomial --epsilon 1 --delta 1e-5 --sensitivity 1 --format json`,
		Args: cobra.NoArgs,
	}
	format := addFormatFlag(cmd)
	cmd.Flags().Float64Var(&eps, "epsilon", 0, "target ε")
	cmd.Flags().Float64Var(&delta, "delta", 0, "target δ")
	cmd.Flags().Int64Var(&sens, "sensitivity", 1, "integer sensitivity S of the count")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		f, err := format()
		if err != nil {
			return err
		}
		if err := requireFlags(cmd, "epsilon", "delta"); err != nil {
			return err
		}
		n, err := accounting.BinomialExactN(eps, delta, sens)
		if err != nil {
			return fmt.Errorf("privacy binomial: %w", err)
		}
		nc, err := accounting.BinomialCPSGD(eps, delta, float64(sens))
		if err != nil {
			return fmt.Errorf("privacy binomial: cpSGD: %w", err)
		}
		nd, err := accounting.BinomialDPPPGroup(eps, delta, sens)
		if err != nil {
			return fmt.Errorf("privacy binomial: DPPP: %w", err)
		}
		if f == formatJSON {
			return writeJSON(cmd.OutOrStdout(), map[string]any{"n": n, "n_cpsgd": nc, "n_dppp": nd,
				"epsilon": eps, "delta": delta, "sensitivity": sens})
		}
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "n = %d coin flips (exact privacy profile) for (ε = %g, δ = %g), sensitivity %d\n", n, eps, delta, sens)
		fmt.Fprintf(w, "published bounds: cpSGD Theorem 1 needs %d, DPPP Theorem 1 needs %d\n", nc, nd)
		return nil
	}
	return cmd
}

func newPrivacySampleCmd() *cobra.Command {
	var mech string
	var scale float64
	var flips int64
	var count int
	var seed uint64
	cmd := &cobra.Command{
		Use:   "sample",
		Short: "Draw noise samples (one per line) for independent auditing",
		Long: `sample draws K noise samples from one of dplearn's samplers with fresh secure
randomness (crypto/rand) and prints them one per line, so that anyone can audit
the samplers with their own statistics tools.

  laplace            Laplace(0, b = --scale) on dplearn's power-of-two grid
  gaussian           N(0, σ² = --scale²) on the grid
  discrete-laplace   integer, P(k) ∝ exp(−|k|/scale)
  discrete-gaussian  integer, P(k) ∝ exp(−k²/(2 scale²))
  binomial           Binomial(M, ½) − M/2 with M = --n-flips

--insecure-seed makes the output reproducible and NOT private (tests only);
the source is named on stderr.

Example:
  dplearn privacy sample --mechanism discrete-gaussian --scale 3 --count 100000 > dg.txt`,
		Args: cobra.NoArgs,
	}
	format := addFormatFlag(cmd)
	cmd.Flags().StringVar(&mech, "mechanism", "", "laplace, gaussian, discrete-laplace, discrete-gaussian or binomial")
	cmd.Flags().Float64Var(&scale, "scale", 0, "noise scale (b for Laplace, σ for Gaussian)")
	cmd.Flags().Int64Var(&flips, "n-flips", 0, "number of coin flips M (binomial)")
	cmd.Flags().IntVar(&count, "count", 1, "number of samples K")
	cmd.Flags().Uint64Var(&seed, "insecure-seed", 0, "deterministic, NOT private source (tests only)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		f, err := format()
		if err != nil {
			return err
		}
		if err := requireFlags(cmd, "mechanism"); err != nil {
			return err
		}
		if count < 1 || count > 100_000_000 {
			return fmt.Errorf("privacy sample: --count must be in [1, 1e8], got %d", count)
		}
		src := noise.NewSecure()
		if cmd.Flags().Changed("insecure-seed") {
			src = noise.NewInsecureSeeded(seed)
			fmt.Fprintf(cmd.ErrOrStderr(), "WARNING: source is %s\n", src)
		}
		draw, err := sampler(mech, scale, flips, src, cmd.Flags().Changed("scale"), cmd.Flags().Changed("n-flips"))
		if err != nil {
			return fmt.Errorf("privacy sample: %w", err)
		}
		var samples []string
		w := cmd.OutOrStdout()
		for i := 0; i < count; i++ {
			if err := cmd.Context().Err(); err != nil && i%1024 == 0 {
				return err
			}
			s, err := draw()
			if err != nil {
				return fmt.Errorf("privacy sample: %w", err)
			}
			if f == formatJSON {
				samples = append(samples, s)
			} else if _, err := io.WriteString(w, s+"\n"); err != nil {
				return err
			}
		}
		if f == formatJSON {
			nums := make([]jsonNumber, len(samples))
			for i, s := range samples {
				nums[i] = jsonNumber(s)
			}
			return writeJSON(w, map[string]any{"mechanism": mech, "scale": scale, "n_flips": flips,
				"source": src.String(), "secure": src.Secure(), "samples": nums})
		}
		return nil
	}
	return cmd
}

// jsonNumber is a pre-formatted number written verbatim into JSON.
type jsonNumber string

func (n jsonNumber) MarshalJSON() ([]byte, error) { return []byte(n), nil }

// sampler returns a function drawing one formatted sample.
func sampler(mech string, scale float64, flips int64, src noise.Source, haveScale, haveFlips bool) (func() (string, error), error) {
	if mech == "binomial" {
		if !haveFlips || flips < 1 {
			return nil, fmt.Errorf("binomial needs --n-flips ≥ 1, got %d", flips)
		}
		return func() (string, error) {
			h, err := noise.Binomial(src, flips)
			if err != nil {
				return "", err
			}
			// h − M/2, exactly: an integer or a half-integer.
			v := 2*h - flips
			if v%2 == 0 {
				return strconv.FormatInt(v/2, 10), nil
			}
			return new(big.Rat).SetFrac64(v, 2).FloatString(1), nil
		}, nil
	}
	if !haveScale || math.IsNaN(scale) || math.IsInf(scale, 0) || scale <= 0 {
		return nil, fmt.Errorf("%s needs --scale > 0, got %v", mech, scale)
	}
	switch mech {
	case "laplace":
		return func() (string, error) {
			v, err := noise.Laplace(src, scale)
			return strconv.FormatFloat(v, 'g', -1, 64), err
		}, nil
	case "gaussian":
		return func() (string, error) {
			v, err := noise.Gaussian(src, scale)
			return strconv.FormatFloat(v, 'g', -1, 64), err
		}, nil
	case "discrete-laplace":
		b := new(big.Rat).SetFloat64(scale)
		return func() (string, error) {
			v, err := noise.DiscreteLaplace(src, b)
			return strconv.FormatInt(v, 10), err
		}, nil
	case "discrete-gaussian":
		s := new(big.Rat).SetFloat64(scale)
		s2 := new(big.Rat).Mul(s, s)
		return func() (string, error) {
			v, err := noise.DiscreteGaussian(src, s2)
			return strconv.FormatInt(v, 10), err
		}, nil
	}
	return nil, fmt.Errorf("--mechanism %q: want laplace, gaussian, discrete-laplace, discrete-gaussian or binomial", mech)
}

// fmtInfo formats a float with 6 significant digits, rounded to nearest: only
// for informational figures that are neither guarantees nor noise to copy
// (an RDP order). Guarantees (ε, δ, ρ, μ) print with report.Up, calibrated
// noise scales with report.Up, spent budgets with report.Up, and echoed
// inputs with %g (shortest exact representation).
func fmtInfo(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }

func newPrivacySubsampledCmd() *cobra.Command {
	var sigma, q, delta, eps float64
	var steps int
	var neighbours string
	cmd := &cobra.Command{
		Use:   "subsampled",
		Short: "Privacy of Poisson-subsampled Gaussian steps (DP-SGD)",
		Long: `subsampled accounts T steps that each sample every record independently with
probability q and add Gaussian noise with multiplier σ (noise std / L2 clip norm),
by the Rényi-DP analysis of Mironov, Talwar & Zhang 2019 on the orders of Opacus
and TF Privacy (1.1, 1.2, …, 10.9, 12, …, 63) with the improved conversion of
Balle et al. 2020. Give --sigma to get ε, or --epsilon to get the smallest σ.
No grid slack is included: σ here is the multiplier before dplearn's 2^-20
rounding allowance.

The neighbouring relation matters under sampling. The default, replace-one
(same N, one record changed), is the relation of every other dplearn
guarantee; it is derived from the add/remove curve by the weak triangle
inequality of Rényi divergence and costs more. --neighbours add-remove gives
the figures of Opacus and TF Privacy (σ = 1.5, q = 0.04, 2250 steps,
δ = 1e-5: ε ≈ 7.33 add/remove, ≈ 18.1 replace-one).

JSON keys: epsilon, delta, sigma, q, steps, order, neighbours.

Example:
  dplearn privacy subsampled --sigma 1.5 --q 0.04 --steps 2250 --delta 1e-5
  dplearn privacy subsampled --epsilon 3 --q 0.01 --steps 1000 --delta 1e-5 --format json`,
		Args: cobra.NoArgs,
	}
	format := addFormatFlag(cmd)
	cmd.Flags().Float64Var(&sigma, "sigma", 0, "noise multiplier σ (std / L2 sensitivity)")
	cmd.Flags().Float64Var(&eps, "epsilon", 0, "target ε (solve for σ instead)")
	cmd.Flags().Float64Var(&q, "q", 0, "sampling probability per step")
	cmd.Flags().IntVar(&steps, "steps", 0, "number of steps T")
	cmd.Flags().Float64Var(&delta, "delta", 0, "target δ")
	cmd.Flags().StringVar(&neighbours, "neighbours", string(accounting.ReplaceOne), "neighbouring relation: replace-one or add-remove (Opacus)")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		f, err := format()
		if err != nil {
			return err
		}
		if err := requireFlags(cmd, "q", "steps", "delta"); err != nil {
			return err
		}
		rel, err := accounting.ParseNeighbours(neighbours)
		if err != nil {
			return fmt.Errorf("--neighbours: %w", err)
		}
		hasS, hasE := cmd.Flags().Changed("sigma"), cmd.Flags().Changed("epsilon")
		if hasS == hasE {
			return fmt.Errorf("privacy subsampled: give exactly one of --sigma and --epsilon")
		}
		if hasE {
			if sigma, err = accounting.SubsampledGaussianSigma(rel, eps, delta, q, steps, nil); err != nil {
				return fmt.Errorf("privacy subsampled: %w", err)
			}
		}
		e, order, err := accounting.SubsampledGaussianEpsilon(rel, q, sigma, steps, delta, nil)
		if err != nil {
			return fmt.Errorf("privacy subsampled: %w", err)
		}
		if f == formatJSON {
			return writeJSON(cmd.OutOrStdout(), map[string]any{"epsilon": e, "delta": delta, "sigma": sigma,
				"q": q, "steps": steps, "order": order, "neighbours": rel})
		}
		// A calibrated σ (from --epsilon) is noise to copy: rounded up; a
		// given σ is echoed exactly. ε is a guarantee: rounded up.
		sigmaText := fmt.Sprintf("%g", sigma)
		if hasE {
			sigmaText = report.Up(sigma)
		}
		fmt.Fprintf(cmd.OutOrStdout(), "%d steps with sampling rate %g and noise multiplier σ = %s are (ε = %s, δ = %g)-DP for %s neighbours (best RDP order %s).\n",
			steps, q, sigmaText, report.Up(e), delta, rel, fmtInfo(order))
		return nil
	}
	return cmd
}

func newPrivacyLedgerCmd() *cobra.Command {
	return newLedgerCmd("dplearn privacy ledger")
}
