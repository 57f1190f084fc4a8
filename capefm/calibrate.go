package capefm

import (
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/cape"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/report"
)

// Calibration is everything that follows from Params: sensitivities,
// whitening, noise scales, fixed-point grids and the privacy figures. It is
// a function of public parameters only; the aggregator and every site
// compute it independently (Params.Calibration) and a site refuses Params
// whose τ does not meet (ε, δ) by its own computation.
type Calibration struct {
	// S, Colluders (S_C) and Honest (S_H = S − S_C).
	S, Colluders, Honest int
	// N is Σ N_s; D the features; L1 = D, L2 = D(D+1)/2, L = L1 + L2.
	N            int64
	D, L1, L2, L int
	Delta1       float64 // Gaussian FM's Λ1 sensitivity on the pooled N (= (N_s/N)·Δ1(N_s) at every site)
	Delta2       float64 // Gaussian FM's Λ2 sensitivity on the pooled N
	C1, C2       float64 // whitening scales c_j = Δ_j·√(J²(w)/w_j) (w_1 = split, w_2 = 1 − split, J² = regress.JointFactor)
	SiteSens     []float64
	Slack        float64 // grid slack of the whitened release (capeFM)
	// Sensitivity is Δ_h = (max SiteSens + Slack)·(1 + 2^−32) rounded up to
	// 6 significant digits (noise.GaussianCalibrationSensitivity; the
	// margin covers the lattice, see the package documentation, Lattice).
	Sensitivity float64
	Tau, TauG   float64 // std of ê_s and of g_s per whitened coordinate (capeFM)
	// NoiseRatio is R = Var ê_s / Var g_s ≤ (τ/τ_g)² (capeFM).
	NoiseRatio float64
	// Kappa is κ(R) = S(S_H + R)/(S_H(R + 1)) rounded up
	// (accounting.CAPEModelVarianceRatio): the model's noise variance over
	// central Gaussian FM's on the pooled data at the same (ε, δ), up to the
	// 6-digit rounding of τ (VarianceRatio is the ratio of the calibrated
	// scales themselves).
	Kappa float64
	// Mu and Eta are this attempt's CAPE μ = max(CoalitionMu, LoneSiteMu)
	// and η = √(2μ) (capeFM): CoalitionMu is the view of the aggregator
	// with S_C colluders, LoneSiteMu that of any one site reading the model
	// (accounting.CAPEParams, steps 1-7).
	Mu, Eta                 float64
	CoalitionMu, LoneSiteMu float64
	SiteDelta               float64 // δ(ε) of this attempt for a record at any honest site
	ComposedEta             float64 // η over Prior and this attempt (capeFM)
	// ComposedEpsilon and ComposedDelta are the guarantee the report
	// prints: (ε, SiteDelta) for one attempt; with earlier releases
	// (Prior), the smallest ε at the target δ for η = ComposedEta.
	ComposedEpsilon, ComposedDelta float64
	ModelEta                       float64 // Gaussian-DP of the released model alone (capeFM)
	ModelDelta                     float64 // δ(ε) of the model alone (capeFM)
	// Noise1 and Noise2 are the per-entry standard deviations of the noise in
	// the released average objective's Λ1 and Λ2 (natural units);
	// Pooled1 and Pooled2 those of central Gaussian FM on the pooled data at
	// the same (ε, δ) and split; VarianceRatio = (Noise1/Pooled1)².
	Noise1, Noise2   float64
	Pooled1, Pooled2 float64
	VarianceRatio    float64
	// SiteTau1 and SiteTau2 are each site's Gaussian FM scales
	// (gaussian-fm-local), in roster order.
	SiteTau1, SiteTau2 []float64
	// ZeroSum are the zero-sum noise parameters (whitened, all L
	// coordinates); EFracBits its fixed-point resolution; Grid the grid of
	// the release (noise.GaussianGrid(TauG, L)) and FracBits its resolution:
	// a release coordinate is an integer number of 2^−FracBits units.
	ZeroSum   cape.ZeroSumParams
	EFracBits uint
	Grid      float64
	FracBits  uint
}

// VarianceRatioFormula returns κ(R) = S·max((S_H + R)/(S_H(R + 1)),
// 1/(S − 1)) (R = S when ratio is 0, the seed's split): the variance of
// capeFM's aggregate noise over that of Gaussian FM on the pooled data at
// the same (ε, δ) under the exact CAPE accounting of both views (the
// aggregator with S_C colluders; any one site reading the model), for
// ê_s ~ N(0, τ²) and g_s ~ N(0, τ²/R). It is
// accounting.CAPEModelVarianceRatio in float64 arithmetic (for tests and
// printing). See the package documentation.
func VarianceRatioFormula(sites, colluders int, ratio float64) float64 {
	S, H, R := float64(sites), float64(sites-colluders), ratio
	if R == 0 {
		R = S
	}
	return S * math.Max((H+R)/(H*(R+1)), 1/(S-1))
}

// roundUp6 returns the float64 that report.Up(x) prints: ≥ x, with 6
// significant digits, so a figure printed in a report is exactly the one
// used.
func roundUp6(x float64) float64 {
	f, err := strconv.ParseFloat(report.Up(x), 64)
	if err != nil || f < x {
		return math.Nextafter(x, math.Inf(1))
	}
	return f
}

// tauG returns the smallest float64 t with R·t² ≥ τ² (exactly): the local
// noise g_s has at least the variance τ²/R the accounting assumes.
func tauG(tau, ratio float64) float64 {
	t := tau / math.Sqrt(ratio)
	want := new(big.Rat).SetFloat64(tau)
	want.Mul(want, want)
	R := new(big.Rat).SetFloat64(ratio)
	for {
		r := new(big.Rat).SetFloat64(t)
		r.Mul(r, r)
		r.Mul(r, R)
		if r.Cmp(want) >= 0 {
			return t
		}
		t = math.Nextafter(t, math.Inf(1))
	}
}

// releaseSensitivity returns Δ_h, the per-site whitened sensitivity the
// CAPE curve is evaluated with: the largest per-site joint sensitivity
// hmax, plus the grid slack of the release grid noise.GaussianGrid(τ_g, L),
// times the lattice margin 1 + noise.DiscreteGaussianMargin
// (noise.GaussianCalibrationSensitivity; proof in the package
// documentation, Lattice), rounded up to 6 significant digits so that the
// printed figure is the one used.
func releaseSensitivity(hmax, tauG float64, L int) float64 {
	return roundUp6(noise.GaussianCalibrationSensitivity(hmax, tauG, L))
}

// fracBits returns F with grid = 2^−F, or 0 for a grid ≥ 1 (then grid
// points are integers).
func fracBits(grid float64) uint {
	_, e := math.Frexp(grid) // grid = 2^(e−1)
	return uint(max(0, -(e - 1)))
}

// whitening returns Gaussian FM's pooled sensitivities and the whitening
// scales c_j = Δ_j·√(J²(w)/w_j) (w_1 = split, w_2 = 1 − split, J² =
// regress.JointFactor): the blocks' shares (Δ1/c1)² : (Δ2/c2)² are
// split : 1 − split as before, and the joint supremum of the whitened
// release (regress/joint.go) is 1, where the separate sum (PRIVACY-NOTES
// item 2) would be 1/J²(w) ≥ 1.
//
// The joint supremum holds for CAPE's noise: every site's noise is
// isotropic across the L whitened coordinates (covariance Σ ⊗ I_L, Σ across
// sites), so the privacy loss of a record at site h depends on its shift
// v ∈ R^L only through ‖v‖² [Σ⁻¹]_hh (PRIVACY-NOTES item 18), and the
// supremum of ‖v‖ over neighbours is the joint one, whatever the direction.
func whitening(p *Params) (d1, d2, c1, c2 float64, err error) {
	sens, err := regress.SensitivitiesFor(p.Kind, p.D, p.N())
	if err != nil {
		return 0, 0, 0, 0, err
	}
	for _, v := range []float64{sens.Lambda1, sens.Lambda2} {
		if !(v > 0) || math.IsInf(v, 0) {
			return 0, 0, 0, 0, fmt.Errorf("capefm: N = %d rows and D = %d features: sensitivity %v is not finite and positive: not supported", p.N(), p.D, v)
		}
	}
	f := regress.JointFactor(p.Split)
	return sens.Lambda1, sens.Lambda2, sens.Lambda1 * math.Sqrt(f/p.Split), sens.Lambda2 * math.Sqrt(f/(1-p.Split)), nil
}

// siteSensitivities returns each site's whitened L2 sensitivity before the
// grid slack: site s releases (N_s/N)·Λ_s (its sum over N) whitened by c_j,
// that is Λ_s whitened by c_j·N/N_s, whose sensitivity is the joint
// supremum regress.JointSensitivity for N_s rows (floating-point error
// included). Since (N_s/N)·Δ_j(N_s) = Δ_j(N), every entry is 1 up to
// rounding.
func siteSensitivities(p *Params, c1, c2 float64) ([]float64, error) {
	N := float64(p.N())
	out := make([]float64, len(p.Sites))
	for i, s := range p.Sites {
		w := float64(s.N) / N
		h, err := regress.JointSensitivity(p.Kind, p.D, s.N, regress.TaylorQuadratic, c1/w, c2/w)
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

// Calibrate sets p.Tau for capeFM: the smallest τ (6 significant digits,
// rounded up) such that every honest site is (ε, δ)-DP by the exact CAPE
// curve with the per-site whitened sensitivity including the release's grid
// slack (which itself depends on τ; the loop settles in a few steps), for
// the noise ratio p.NoiseRatio (set to DefaultNoiseRatio if 0). For the
// baselines it sets τ = 0. Call it after changing the roster.
func (p *Params) Calibrate() error {
	if p.Mechanism != CapeFM {
		p.Tau = 0
		return p.Validate()
	}
	p.Tau = 1 // placeholder so Validate checks the rest
	if p.NoiseRatio == 0 {
		p.NoiseRatio = DefaultNoiseRatio
	}
	if err := p.Validate(); err != nil {
		return err
	}
	_, _, c1, c2, err := whitening(p)
	if err != nil {
		return err
	}
	hs, err := siteSensitivities(p, c1, c2)
	if err != nil {
		return err
	}
	hmax := 0.0
	for _, h := range hs {
		hmax = math.Max(hmax, h)
	}
	S, L := len(p.Sites), p.Released()
	cp := accounting.CAPEParams{Sites: S, Colluders: p.Colluders, NoiseRatio: p.NoiseRatio, Sensitivity: hmax}
	tau, err := accounting.CAPETauFor(cp, p.Epsilon, p.Delta)
	if err != nil {
		return fmt.Errorf("capefm: calibrate: %w", err)
	}
	for range 64 {
		tauR := roundUp6(tau)
		cp.Tau = tauR
		cp.Sensitivity = releaseSensitivity(hmax, tauG(tauR, p.NoiseRatio), L)
		d, err := accounting.CAPEDeltaExact(cp, p.Epsilon)
		if err != nil {
			return fmt.Errorf("capefm: calibrate: %w", err)
		}
		if d <= p.Delta {
			p.Tau = tauR
			return nil
		}
		next, err := accounting.CAPETauFor(cp, p.Epsilon, p.Delta)
		if err != nil {
			return fmt.Errorf("capefm: calibrate: %w", err)
		}
		tau = math.Max(next, math.Nextafter(tauR, math.Inf(1)))
	}
	return fmt.Errorf("capefm: calibrate: τ for (ε=%g, δ=%g) did not settle", p.Epsilon, p.Delta)
}

// Calibration computes the calibration of valid Params and checks that it
// meets the per-site target: for capeFM, that the exact CAPE δ(ε) at p.Tau
// with the per-site sensitivity (grid slack included) is at most p.Delta.
func (p *Params) Calibration() (*Calibration, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	S := len(p.Sites)
	c := &Calibration{S: S, Colluders: p.Colluders, Honest: S - p.Colluders, N: p.N(),
		D: p.D, L1: p.D, L2: p.D * (p.D + 1) / 2, L: p.Released()}
	var err error
	if c.Delta1, c.Delta2, c.C1, c.C2, err = whitening(p); err != nil {
		return nil, err
	}
	if c.SiteSens, err = siteSensitivities(p, c.C1, c.C2); err != nil {
		return nil, err
	}
	if p.Mechanism.coefficientBaseline() == "" {
		js, err := regress.GaussianFMJointScales(p.Kind, p.D, p.N(), regress.TaylorQuadratic, p.Epsilon, p.Delta, p.Split)
		if err != nil {
			return nil, fmt.Errorf("capefm: pooled Gaussian FM: %w", err)
		}
		c.Pooled1, c.Pooled2 = js.Tau1, js.Tau2
	}
	switch {
	case p.Mechanism == CapeFM:
		err = c.capeFM(p)
	case p.Mechanism == GaussianFMLocal:
		err = c.gaussianFMLocal(p)
	default:
		c.SiteDelta = p.Delta
		if p.Mechanism.pureEpsilon() {
			c.SiteDelta = 0
		}
		c.ComposedEpsilon, c.ComposedDelta = p.Epsilon, c.SiteDelta
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (c *Calibration) capeFM(p *Params) error {
	hmax := 0.0
	for _, h := range c.SiteSens {
		hmax = math.Max(hmax, h)
	}
	c.Tau, c.NoiseRatio = p.Tau, p.NoiseRatio
	c.TauG = tauG(c.Tau, c.NoiseRatio)
	c.Slack = noise.GaussianGridSlack(c.TauG, c.L)
	// The lattice margin (package documentation, Lattice): the curves below
	// are the continuous Gaussians', applied to sums of discrete Gaussians.
	c.Sensitivity = releaseSensitivity(hmax, c.TauG, c.L)
	if err := c.checkLattice(); err != nil {
		return err
	}
	cp := accounting.CAPEParams{Sites: c.S, Colluders: c.Colluders, Tau: c.Tau, NoiseRatio: c.NoiseRatio, Sensitivity: c.Sensitivity}
	var err error
	if c.Kappa, err = accounting.CAPEModelVarianceRatio(cp); err != nil {
		return err
	}
	if c.Mu, err = accounting.CAPEMu(cp); err != nil {
		return err
	}
	if c.CoalitionMu, err = accounting.CAPECoalitionMu(cp); err != nil {
		return err
	}
	if c.LoneSiteMu, err = accounting.CAPELoneSiteMu(cp); err != nil {
		return err
	}
	if c.Eta, err = accounting.CAPEGDPMu(cp); err != nil {
		return err
	}
	if c.SiteDelta, err = accounting.CAPEDeltaExact(cp, p.Epsilon); err != nil {
		return err
	}
	if c.SiteDelta > p.Delta {
		return fmt.Errorf("capefm: params: τ = %v gives δ = %s at ε = %v for a record at an honest site (S = %d, S_C = %d, per-site sensitivity %s), above the agreed δ = %v",
			c.Tau, report.Up(c.SiteDelta), p.Epsilon, c.S, c.Colluders, report.Up(c.Sensitivity), p.Delta)
	}
	c.ComposedEta, c.ComposedEpsilon, c.ComposedDelta = c.Eta, p.Epsilon, c.SiteDelta
	if len(p.Prior) > 0 {
		if c.ComposedEta, err = accounting.GDPMu(append(append([]float64(nil), p.Prior...), c.Eta)...); err != nil {
			return err
		}
		if c.ComposedEpsilon, err = accounting.GDPEpsilon(c.ComposedEta, p.Delta); err != nil {
			return err
		}
		c.ComposedDelta = p.Delta
	}
	// The model alone, for an outsider: Σ_s snap(v_s) + Σ_s g_s, a
	// Gaussian mechanism with sensitivity Δ_h (lattice margin included) and
	// noise √S·τ_g per whitened coordinate (rounded down by a relative
	// 1e-12 to cover the float64 arithmetic). A site reading the model is
	// covered by LoneSiteMu instead, the aggregator by CoalitionMu.
	if c.ModelEta, err = accounting.GDPMu(c.Sensitivity / (math.Sqrt(float64(c.S)) * c.TauG * (1 - 1e-12))); err != nil {
		return err
	}
	if c.ModelDelta, err = accounting.GDPDelta(c.ModelEta, p.Epsilon); err != nil {
		return err
	}
	agg := math.Sqrt(float64(c.S)) * c.TauG
	c.Noise1, c.Noise2 = c.C1*agg, c.C2*agg
	c.VarianceRatio = (c.Noise1 / c.Pooled1) * (c.Noise1 / c.Pooled1)

	c.ZeroSum = cape.ZeroSumParams{Sites: p.IDs(), Tau: c.Tau, Len: c.L}
	enc, err := c.ZeroSum.Encoding()
	if err != nil {
		return err
	}
	c.EFracBits = enc.FracBits
	if c.Grid, err = noise.GaussianGrid(c.TauG, c.L); err != nil {
		return err
	}
	c.FracBits = fracBits(c.Grid)
	if c.FracBits < c.EFracBits || c.FracBits > 62 {
		return fmt.Errorf("capefm: release grid 2^-%d cannot hold the zero-sum grid 2^-%d", c.FracBits, c.EFracBits)
	}
	// Public bound on the fixed-point values, checked before anything is
	// spent so that the release can overflow only with a noise draw beyond
	// 64 standard deviations (probability < 1e-890): |(N_s/N)Λ| ≤ a·N_s/N
	// per entry (a = 2 for linear Λ1, ½ logistic; 1 and ⅛ for Λ2).
	a1, a2 := 2.0, 1.0
	if p.Kind == regress.Logistic {
		a1, a2 = 0.5, 0.125
	}
	bound := 0.0
	for _, s := range p.Sites {
		w := float64(s.N) / float64(c.N)
		bound = math.Max(bound, math.Max(a1*w/c.C1, a2*w/c.C2))
	}
	scale := math.Ldexp(1, int(c.FracBits))
	if (bound+64*c.TauG+c.Grid)*scale > 1<<52 || float64(c.S)*(bound+64*c.TauG+c.Grid+128*c.Tau)*scale > 1<<62 {
		return fmt.Errorf("capefm: N = %d rows and D = %d features need more than 52 bits of fixed point at the noise grid %g: not supported", c.N, c.D, c.Grid)
	}
	return nil
}

func (c *Calibration) gaussianFMLocal(p *Params) error {
	N := float64(c.N)
	var v1, v2 float64
	for _, s := range p.Sites {
		js, err := regress.GaussianFMJointScales(p.Kind, p.D, s.N, regress.TaylorQuadratic, p.Epsilon, p.Delta, p.Split)
		if err != nil {
			return fmt.Errorf("capefm: site %s: %w", s.Name, err)
		}
		t1, t2, achieved := js.Tau1, js.Tau2, js.Achieved
		c.SiteTau1, c.SiteTau2 = append(c.SiteTau1, t1), append(c.SiteTau2, t2)
		c.SiteDelta = math.Max(c.SiteDelta, achieved)
		w := float64(s.N) / N
		v1 += w * w * t1 * t1
		v2 += w * w * t2 * t2
	}
	c.ComposedEpsilon, c.ComposedDelta = p.Epsilon, c.SiteDelta
	c.Noise1, c.Noise2 = math.Sqrt(v1), math.Sqrt(v2)
	c.VarianceRatio = (c.Noise1 / c.Pooled1) * (c.Noise1 / c.Pooled1)
	return nil
}

// checkLattice verifies the conditions of the lattice proof (package
// documentation, Lattice) for this calibration: the release grid b =
// Grid and the zero-sum grid a = noise.GaussianGrid(τ, L) are powers of two
// with b ≤ a (so b divides a); τ_g/b ≥ noise.MinGridScale; the Gaussian sums over the cosets
// of the views' lattices have parameter at least 8√S grid steps of their
// lattice (s = ττ_g/√(τ² + τ_g²) against a for the coalition view, τ_g
// against b for a lone site and the model); and S·L noisy coordinates are
// within noise.MaxMarginEntries. GaussianGrid makes every one of them hold
// for the parameters Params accept; the check keeps the proof's hypotheses
// explicit in the code.
func (c *Calibration) checkLattice() error {
	a, err := noise.GaussianGrid(c.Tau, c.L)
	if err != nil {
		return err
	}
	b, err := noise.GaussianGrid(c.TauG, c.L)
	if err != nil {
		return err
	}
	S := float64(c.S)
	s := c.Tau * c.TauG / math.Hypot(c.Tau, c.TauG)
	switch {
	case b > a:
		return fmt.Errorf("capefm: the release grid %g is coarser than the zero-sum grid %g", b, a)
	case c.TauG/b < noise.MinGridScale:
		return fmt.Errorf("capefm: local noise τ_g = %g is %g grid steps, below %g", c.TauG, c.TauG/b, noise.MinGridScale)
	case s/(a*math.Sqrt(S)) < 8*(1+1e-9) || c.TauG/(b*math.Sqrt(S)) < 8*(1+1e-9):
		return fmt.Errorf("capefm: the noise is too coarse for the lattice proof (τ = %g on %g, τ_g = %g on %g, S = %d)", c.Tau, a, c.TauG, b, c.S)
	case float64(c.S)*float64(c.L) > noise.MaxMarginEntries:
		return fmt.Errorf("capefm: %d × %d noisy coordinates exceed the lattice proof's %d", c.S, c.L, int64(noise.MaxMarginEntries))
	}
	return nil
}
