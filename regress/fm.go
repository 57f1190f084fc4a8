package regress

import (
	"context"
	"fmt"
	"math"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/report"
)

// Sensitivities of the released coefficient blocks, for d encoded features
// (intercept included) and N rows, under replace-one neighbours with
// ‖x‖₂ ≤ 1 and y ∈ [−1, 1] (linear) or {0, 1} (logistic).
type Sensitivities struct {
	// FM is the L1 sensitivity of all coefficients (Zhang et al., as
	// published; conservative, PRIVACY-NOTES item 5).
	FM float64
	// Relaxed is the L2 sensitivity of all coefficients for relaxed FM
	// (Gaussian FM seed, Table A1).
	Relaxed float64
	// Lambda1 and Lambda2 are Gaussian FM's per-order L2 sensitivities with
	// the Frobenius correction for Λ2 (PRIVACY-NOTES item 1).
	Lambda1, Lambda2 float64
}

// SensitivitiesFor returns the sensitivities of every FM-family mechanism.
//
// Derivations for Gaussian FM (replace row (x, y) by (x', y')):
//
//	linear Λ1:   ‖−2y x + 2y' x'‖₂/N ≤ 2(|y|‖x‖ + |y'|‖x'‖)/N ≤ 4/N;
//	logistic Λ1: ‖(½−y)x − (½−y')x'‖₂/N ≤ (½ + ½)/N = 1/N;
//	Λ2 (both, times 1/8 for logistic): the released upper triangle of
//	  A = xxᵀ − x'x'ᵀ has Σ_{i≤j} A_ij² = (‖A‖_F² + Σ_i A_ii²)/2 ≤ ‖A‖_F²
//	  and ‖A‖_F² = ‖x‖⁴ + ‖x'‖⁴ − 2(xᵀx')² ≤ 2, reached by orthogonal unit
//	  vectors (then Σ_i A_ii² = 2 too, e.g. x = e1, x' = e2): Δ2 = √2/N.
//
// Each returned value also covers the floating-point error of the computed
// coefficients (rounding.go; a relative 10⁻⁹ at N = 25,000 and d = 10), so it
// bounds the difference of what the code computes on neighbouring datasets.
func SensitivitiesFor(kind Kind, d int, n int64) (Sensitivities, error) {
	return SensitivitiesForApprox(kind, d, n, TaylorQuadratic)
}

// SensitivitiesForApprox is SensitivitiesFor for the logistic objective
// built on the quadratic lq (logapprox.go derives the bounds: the Λ2 parts
// scale by 8·a2); lq is ignored for linear regression.
func SensitivitiesForApprox(kind Kind, d int, n int64, lq LogisticQuadratic) (Sensitivities, error) {
	s, err := exactSensitivities(kind, d, n, lq.A2)
	if err != nil {
		return s, err
	}
	// The released coefficients are computed in floating point from
	// suffstat's sums: add twice the per-entry error bound (rounding.go).
	e1, e2 := objectiveEntryErrors(kind, n, lq.A2)
	m1, m2 := d, d*(d+1)/2
	s.FM = roundedSensitivity(s.FM, 0, 1, float64(m1)*e1+float64(m2)*e2, true)
	s.Relaxed = roundedSensitivity(s.Relaxed, 0, 1, math.Sqrt(float64(m1)*e1*e1+float64(m2)*e2*e2), false)
	s.Lambda1 = roundedSensitivity(s.Lambda1, 0, m1, e1, false)
	s.Lambda2 = roundedSensitivity(s.Lambda2, 0, m2, e2, false)
	return s, nil
}

// exactSensitivities returns the sensitivities of the exact coefficients
// (before the floating-point term of SensitivitiesFor); a2 is the logistic
// curvature coefficient (⅛ for Taylor).
func exactSensitivities(kind Kind, d int, n int64, a2 float64) (Sensitivities, error) {
	if d < 1 || n < 1 {
		return Sensitivities{}, fmt.Errorf("regress: sensitivities need d ≥ 1 and N ≥ 1, got d=%d N=%d", d, n)
	}
	D, N := float64(d), float64(n)
	switch kind {
	case Linear:
		return Sensitivities{
			FM:      2 * (1 + D) * (1 + D) / N,
			Relaxed: 2 * math.Sqrt(1+4*D+D*D) / N,
			Lambda1: 4 / N,
			Lambda2: math.Sqrt2 / N,
		}, nil
	case Logistic:
		if !(a2 > 0 && a2 <= 0.125) {
			return Sensitivities{}, fmt.Errorf("regress: logistic curvature a2 must be in (0, 1/8], got %v", a2)
		}
		// For a2 = ⅛ these are the published (d²/4 + 3d)/N,
		// √(d²/16 + d)/N and √2/(8N), bit for bit (a2 is a power of two).
		return Sensitivities{
			FM:      (2*a2*D*D + 3*D) / N,
			Relaxed: math.Sqrt((2*a2*D)*(2*a2*D)+D) / N,
			Lambda1: 1 / N,
			Lambda2: math.Sqrt2 * a2 / N,
		}, nil
	}
	return Sensitivities{}, fmt.Errorf("regress: unknown model kind %q", kind)
}

// DefaultLambdaFactor multiplies the per-entry noise standard deviation of
// Λ2 to give the default ridge λ. FM Section 6.1 suggests 4; see
// docs/mechanisms.md for the utility measurements behind the default.
const DefaultLambdaFactor = 4.0

// TrimFraction sets spectral trimming's floor: eigen-directions of the noisy
// Λ2 + λI whose eigenvalue is ≤ TrimFraction·λ are removed, not only the
// non-positive ones. A barely positive eigenvalue is noise, and inverting it
// blows the coefficients up; the floor bounds ‖ω‖ ≤ ‖Λ1‖/(2·TrimFraction·λ).
// It depends only on λ (data-independent). Measured on the demo data (20
// splits, ε ∈ {0.1, 0.5, 1}, docs/mechanisms.md): 0.25 cut fm's and
// relaxed-fm's spread several-fold and left gaussian-fm unchanged.
const TrimFraction = 0.25

func (c *Config) lambda(noiseStd float64) float64 {
	if c.Lambda >= 0 {
		return c.Lambda
	}
	if c.LambdaFactor > 0 {
		return c.LambdaFactor * noiseStd
	}
	return DefaultLambdaFactor * noiseStd
}

// released returns [Λ1, upper(Λ2)] as one vector.
func (q *Quadratic) released() []float64 {
	v := make([]float64, 0, len(q.Lambda1)+len(q.Upper))
	return append(append(v, q.Lambda1...), q.Upper...)
}

func (q *Quadratic) setReleased(v []float64) {
	copy(q.Lambda1, v[:q.D])
	copy(q.Upper, v[q.D:])
}

// releaseFunc adds a mechanism's noise to the released blocks of q in place
// and returns the privacy report and the per-entry noise standard deviation
// of Λ2 (for the default ridge).
type releaseFunc func(q *Quadratic, cfg Config, lq LogisticQuadratic, n int64) (report.Privacy, float64, error)

// fitFM is the FM family's pipeline: statistics → exact coefficients →
// release (noise) → post-processing → minimiser.
//
// clip selects eigenvalue clipping (EigenFloor) as the default
// post-processing instead of the ridge and trimming (gaussian-fm, linear;
// fitPostProcess).
func fitFM(data Data, cfg Config, release releaseFunc, clip bool) (*Result, error) {
	cfg.unitAware = true // the FM family calibrates at sensitivityN (units.go)
	if err := cfg.validate(data, true); err != nil {
		return nil, err
	}
	lq, err := cfg.logisticQuadratic()
	if err != nil {
		return nil, err
	}
	q, err := ObjectiveApprox(cfg.Kind, data.Stats, lq)
	if err != nil {
		return nil, err
	}
	p, noiseStd2, err := release(q, cfg, lq, sensitivityN(data.Stats))
	if err != nil {
		return nil, err
	}
	if cfg.Kind == Logistic {
		p.PostProcessing = append(p.PostProcessing, "objective: "+lq.String())
	}
	// Λ2 holds a·G (G the mean Gram matrix): a = 1 linear, a2 logistic.
	st := cfg.Structure.Scaled(1)
	if cfg.Kind == Logistic {
		st = cfg.Structure.Scaled(lq.A2)
	}
	unit, perUnit := unitOf(data.Stats)
	if perUnit {
		// G[0,0] = c² needs every one of the N() rows: with fewer rows per
		// unit than K it is (kept rows/N())·c², not public. The other
		// identities are homogeneous and still hold.
		st = st.withoutNonzeroKnown()
	}
	pp := fitPostProcess(cfg, clip, q.D, noiseStd2, st)
	res, err := finish(q, cfg, pp, p)
	if err == nil && perUnit {
		res.Privacy.Neighbouring = UnitNeighbouring(unit)
	}
	if err == nil {
		res.Released = releasedFrom(q, cfg.Kind, data.Stats.N(), pp, res.Privacy.Releases)
		if res.Released != nil {
			res.Released.Structure = st
		}
	}
	return res, err
}

// finish minimises the noisy objective with the post-processing pp
// (fitPostProcess) and fills the common report fields.
func finish(q *Quadratic, cfg Config, pp PostProcess, p report.Privacy) (*Result, error) {
	st, lam := pp.Structure, pp.Lambda
	w, trimmed, err := q.Minimize(pp)
	if err != nil {
		return nil, err
	}
	p.Neighbouring = report.Neighbouring
	p.Randomness, p.Insecure = randomness(cfg.Source)
	p.PostProcessing = append(p.PostProcessing,
		"Λ2 noised on its upper triangle and mirrored (symmetric)")
	if st != nil {
		p.PostProcessing = append(p.PostProcessing, st.String())
	}
	if pp.Floor > 0 {
		p.PostProcessing = append(p.PostProcessing, clipLine(pp))
	} else {
		p.PostProcessing = append(p.PostProcessing,
			fmt.Sprintf("ridge λ = %s added to the diagonal of the noisy Λ2 (data-independent)", fmtG(lam)),
			fmt.Sprintf("spectral trimming: %d of %d eigen-directions with eigenvalue ≤ %g·λ removed (includes the PSD projection)", trimmed, q.D, TrimFraction))
	}
	p.PostProcessing = append(p.PostProcessing, Lambda0NotReleased)
	if cfg.SolveRadius > 0 {
		p.PostProcessing = append(p.PostProcessing, fmt.Sprintf("minimised over the public ball ‖ω‖ ≤ %s (trust-region subproblem)", fmtG(cfg.SolveRadius)))
	}
	return &Result{Coef: w, Privacy: p, Trimmed: trimmed}, nil
}

// Lambda0NotReleased is the FM family's post-processing line saying that
// the fit does not release Λ0; package fit replaces it (report.Privacy.
// ReplacePostProcessing) when it releases a noisy Λ0 for the intervals.
const Lambda0NotReleased = "Λ0 (the constant term) not released: it does not change the minimiser"

func fmtG(x float64) string { return fmt.Sprintf("%.4g", x) }

// fmEstimator is the Functional Mechanism (Zhang et al. 2012).
type fmEstimator struct{}

func (fmEstimator) Name() string        { return "fm" }
func (fmEstimator) NeedsRows(Kind) bool { return false }
func (fmEstimator) Private() bool       { return true }
func (e fmEstimator) Fit(ctx context.Context, data Data, cfg Config) (*Result, error) {
	return fitFM(data, cfg, e.release, false)
}

func (fmEstimator) release(q *Quadratic, cfg Config, lq LogisticQuadratic, n int64) (report.Privacy, float64, error) {
	sens, err := SensitivitiesForApprox(cfg.Kind, q.D, n, lq)
	if err != nil {
		return report.Privacy{}, 0, err
	}
	b, err := accounting.LaplaceScale(cfg.Epsilon, sens.FM)
	if err != nil {
		return report.Privacy{}, 0, fmt.Errorf("fm: calibrate Laplace noise: %w", err)
	}
	v := q.released()
	if err := noise.AddLaplace(cfg.Source, v, b); err != nil {
		return report.Privacy{}, 0, fmt.Errorf("fm: add noise: %w", err)
	}
	q.setReleased(v)
	p := report.Privacy{
		Mechanism:  "fm (Functional Mechanism, Zhang et al. 2012)",
		Private:    true,
		Epsilon:    cfg.Epsilon,
		Accountant: "Laplace mechanism on all released coefficients with the published L1 sensitivity (pure ε-DP)",
		Releases: []report.Release{{
			Name: "Λ1 and upper triangle of Λ2", Entries: len(v), Norm: "L1",
			Sensitivity: sens.FM, Noise: "laplace", Scale: b,
		}},
	}
	if cfg.Delta > 0 {
		p.Notes = append(p.Notes, "fm is pure ε-DP; the δ given was not used")
	}
	return p, math.Sqrt2 * b, nil
}

// relaxedFM is relaxed FM (Ding et al.) as specified in the Gaussian FM
// seed: one Gaussian mechanism on all coefficients.
type relaxedFM struct{}

func (relaxedFM) Name() string        { return "relaxed-fm" }
func (relaxedFM) NeedsRows(Kind) bool { return false }
func (relaxedFM) Private() bool       { return true }
func (e relaxedFM) Fit(ctx context.Context, data Data, cfg Config) (*Result, error) {
	return fitFM(data, cfg, e.release, false)
}

func (relaxedFM) release(q *Quadratic, cfg Config, lq LogisticQuadratic, n int64) (report.Privacy, float64, error) {
	if cfg.Delta <= 0 {
		return report.Privacy{}, 0, fmt.Errorf("relaxed-fm: the Gaussian mechanism needs δ > 0")
	}
	sens, err := SensitivitiesForApprox(cfg.Kind, q.D, n, lq)
	if err != nil {
		return report.Privacy{}, 0, err
	}
	sigma, err := accounting.GaussianSigma(cfg.Epsilon, cfg.Delta, sens.Relaxed)
	if err != nil {
		return report.Privacy{}, 0, fmt.Errorf("relaxed-fm: calibrate Gaussian noise: %w", err)
	}
	v := q.released()
	// GaussianSigma charges twice the grid slack; verify that the spare
	// covers the discrete-Gaussian margin (it does whenever Δ/σ < 2047).
	if d, err := accounting.AnalyticGaussianDelta(cfg.Epsilon, sigma, noise.GaussianCalibrationSensitivity(sens.Relaxed, sigma, len(v))); err != nil || d > cfg.Delta {
		return report.Privacy{}, 0, fmt.Errorf("relaxed-fm: calibration does not cover the discrete-Gaussian margin at (ε=%v, δ=%v)", cfg.Epsilon, cfg.Delta)
	}
	if err := noise.AddGaussian(cfg.Source, v, sigma); err != nil {
		return report.Privacy{}, 0, fmt.Errorf("relaxed-fm: add noise: %w", err)
	}
	q.setReleased(v)
	rho, err := gaussianRho(noise.GaussianCalibrationSensitivity(sens.Relaxed, sigma, len(v)) / sigma)
	if err != nil {
		return report.Privacy{}, 0, fmt.Errorf("relaxed-fm: %w", err)
	}
	p := report.Privacy{
		Mechanism:  "relaxed-fm (relaxed Functional Mechanism, Ding et al.; sensitivities of the Gaussian FM seed, Table A1)",
		Private:    true,
		Epsilon:    cfg.Epsilon,
		Delta:      cfg.Delta,
		Rho:        rho,
		Accountant: "one Gaussian mechanism on all released coefficients, analytic Gaussian calibration (Balle & Wang 2018)",
		Releases: []report.Release{{
			Name: "Λ1 and upper triangle of Λ2", Entries: len(v), Norm: "L2",
			Sensitivity: sens.Relaxed, Noise: "gaussian", Scale: sigma,
		}},
	}
	return p, sigma, nil
}

// gaussianFM is Gaussian FM (Tasnim et al.) with the corrections of
// PRIVACY-NOTES items 1-4.
type gaussianFM struct{}

func (gaussianFM) Name() string        { return "gaussian-fm" }
func (gaussianFM) NeedsRows(Kind) bool { return false }
func (gaussianFM) Private() bool       { return true }

// DefaultGaussianFMSplit is Gaussian FM's default budget split: the share
// of block Λ1 in the whitened squared sensitivities (Config.Split). It is a
// public constant; docs/mechanisms.md ("Public tuning rules") has the sweep
// behind it.
const DefaultGaussianFMSplit = 0.5

// GaussianFMScales returns the noise standard deviations τ1, τ2 of Gaussian
// FM's two released blocks (n1 and n2 entries) for a target (ε, δ), and the
// δ actually achieved (≤ delta), by the separate-sum bound of PRIVACY-NOTES
// item 2 (the sensitivities d1, d2 include the floating-point term).
// gaussian-fm itself calibrates by the tighter joint supremum
// (GaussianFMJointScales, joint.go); this one is kept as the reference
// ("before") and for callers that only have the two block sensitivities.
//
// Joint calibration (PRIVACY-NOTES item 2): dividing each block by its τ_j
// turns the release into one Gaussian mechanism with unit noise whose L2
// sensitivity is s = √(Σ_j (Δ'_j/τ_j)²), where Δ'_j =
// noise.GaussianCalibrationSensitivity(Δ_j, τ_j, n_j): Δ_j plus the grid
// rounding slack of noise.AddGaussian, times the margin that covers the
// discrete Gaussian's δ. The analytic Gaussian gives the
// largest s that meets (ε, δ): s* = 1/σ_u with σ_u =
// AnalyticGaussianSigma(ε, δ, 1). The budget split w1 = split, w2 = 1 −
// split gives (Δ'_j/τ_j)² = w_j s*², i.e. τ_j = σ_u Δ'_j / √w_j; since the
// slack is at most GridSlackRatio·τ_j/2, τ_j = σ_u Δ_j/(√w_j − σ_u·r) with
// r = GridSlackRatio/2 is enough. The achieved δ is recomputed from the
// final τ_j and checked.
func GaussianFMScales(eps, delta, split, d1, d2 float64, n1, n2 int) (tau1, tau2, achieved float64, err error) {
	if split <= 0 || split >= 1 {
		return 0, 0, 0, fmt.Errorf("gaussian-fm: budget split must be in (0, 1), got %v", split)
	}
	su, err := accounting.AnalyticGaussianSigma(eps, delta, 1)
	if err != nil {
		return 0, 0, 0, fmt.Errorf("gaussian-fm: calibrate: %w", err)
	}
	r := noise.GridSlackRatio / 2
	w := []float64{split, 1 - split}
	sens := []float64{d1, d2}
	ns := []int{n1, n2}
	tau := make([]float64, 2)
	for inflate := 1.0; inflate < 1.001; inflate *= 1 + 1e-9 {
		s2 := 0.0
		for j := range tau {
			den := math.Sqrt(w[j]) - su*r
			if den <= 0 {
				return 0, 0, 0, fmt.Errorf("gaussian-fm: ε = %v too small for the noise grid", eps)
			}
			tau[j] = inflate * su * sens[j] / den
			e := noise.GaussianCalibrationSensitivity(sens[j], tau[j], ns[j]) / tau[j]
			s2 += e * e
		}
		achieved, err = accounting.AnalyticGaussianDelta(eps, 1, math.Sqrt(s2))
		if err != nil {
			return 0, 0, 0, fmt.Errorf("gaussian-fm: check calibration: %w", err)
		}
		if achieved <= delta {
			return tau[0], tau[1], achieved, nil
		}
	}
	return 0, 0, 0, fmt.Errorf("gaussian-fm: calibration did not meet δ = %v", delta)
}

func (e gaussianFM) Fit(ctx context.Context, data Data, cfg Config) (*Result, error) {
	return fitFM(data, cfg, e.release, gaussianFMClips(cfg.Kind))
}

func (gaussianFM) release(q *Quadratic, cfg Config, lq LogisticQuadratic, n int64) (report.Privacy, float64, error) {
	if cfg.Delta <= 0 {
		return report.Privacy{}, 0, fmt.Errorf("gaussian-fm: the Gaussian mechanism needs δ > 0")
	}
	sens, err := SensitivitiesForApprox(cfg.Kind, q.D, n, lq)
	if err != nil {
		return report.Privacy{}, 0, err
	}
	split := cfg.Split
	if split == 0 {
		split = DefaultGaussianFMSplit
	}
	js, err := GaussianFMJointScales(cfg.Kind, q.D, n, lq, cfg.Epsilon, cfg.Delta, split)
	if err != nil {
		return report.Privacy{}, 0, err
	}
	tau1, tau2 := js.Tau1, js.Tau2
	if err := noise.AddGaussian(cfg.Source, q.Lambda1, tau1); err != nil {
		return report.Privacy{}, 0, fmt.Errorf("gaussian-fm: add noise to Λ1: %w", err)
	}
	if err := noise.AddGaussian(cfg.Source, q.Upper, tau2); err != nil {
		return report.Privacy{}, 0, fmt.Errorf("gaussian-fm: add noise to Λ2: %w", err)
	}
	rho, err := gaussianRho(js.Sensitivity)
	if err != nil {
		return report.Privacy{}, 0, fmt.Errorf("gaussian-fm: %w", err)
	}
	p := report.Privacy{
		Mechanism: "gaussian-fm (Gaussian Functional Mechanism, Tasnim et al., with the corrections of PRIVACY-NOTES items 1-4)",
		Private:   true,
		Epsilon:   cfg.Epsilon,
		Delta:     cfg.Delta,
		Rho:       rho,
		Accountant: fmt.Sprintf("Λ1 and Λ2 calibrated jointly as one whitened Gaussian mechanism, analytic Gaussian (Balle & Wang 2018): "+
			"budget split %.2f/%.2f of the separate squared sensitivities (Δ1/τ1)², (Δ2/τ2)²; one replaced record moves the whitened release (Λ1/τ1, Λ2/τ2) "+
			"by at most J with J² = a/2 + b + a²/(16b) for a = (Δ1/τ1)² ≤ 4b = 4(Δ2/τ2)², else a (regress/joint.go); "+
			"achieved δ = %s",
			split, 1-split, report.Up(js.Achieved)),
		WhitenedSensitivity: js.Sensitivity,
		WhitenedReleases:    2,
		Releases: []report.Release{
			{Name: "Λ1 (order-1 coefficients)", Entries: len(q.Lambda1), Norm: "L2", Sensitivity: sens.Lambda1, Noise: "gaussian", Scale: tau1},
			{Name: "Λ2 upper triangle (order-2 coefficients)", Entries: len(q.Upper), Norm: "L2 (Frobenius)", Sensitivity: sens.Lambda2, Noise: "gaussian", Scale: tau2},
		},
	}
	return p, tau2, nil
}
