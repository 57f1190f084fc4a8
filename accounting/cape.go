package accounting

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dplearn/dplearn/internal/roundup"
)

// CAPEParams describe one CAPE release for the exact accounting (the exact
// privacy curve of PRIVACY-NOTES item 18, derived here).
//
// Setting (Imtiaz & Sarwate's CAPE, Section 5 of the Gaussian FM seed). S
// sites; site s holds D_s and computes f_s = f(D_s) ∈ ℝ^L. Each site draws
// ê_s ~ N(0, τ²I) and g_s ~ N(0, (τ²/S)I), all independent; the aggregator
// learns Q = Σ_s ê_s by secure aggregation and broadcasts it; site s sets
// e_s = ê_s − Q/S (so Σ e_s = 0 and Var e_s = (1 − 1/S)τ²) and releases
// r_s = f_s + e_s + g_s. The model averages the r_s, whose noise is
// (1/S)Σ g_s.
//
// Adversary: the aggregator together with a coalition C of S_C sites, all
// honest-but-curious, with a secure aggregation that reveals only Q. It sees
// V = (r_1, …, r_S, Q, and ê_c, g_c, D_c for c ∈ C). H is the set of the
// S_H = S − S_C honest sites. A record at honest site h is protected;
// neighbouring datasets differ in one record there (replace-one, N_h fixed),
// which moves f_h by some v with ‖v‖₂ ≤ Δ_h and leaves every other f_s alone.
//
// Derivation. Coordinates are independent and identically treated, so work
// with one coordinate and restore ‖v‖ at the end.
//
//  1. The colluders' releases add nothing: r_c − f_c = ê_c − Q/S + g_c is a
//     function of what the coalition holds. For h ∈ H let
//     u_h = r_h − f_h + Q/S = ê_h + g_h, and let Q_H = Σ_{h∈H} ê_h =
//     Q − Σ_{c∈C} ê_c. Given the data, V is a bijective function of
//     (u_H, Q_H, ê_C, g_C); (ê_C, g_C) is independent of (ê_H, g_H), and Q_H's
//     distribution does not depend on the data. So the likelihood ratio of V
//     between neighbours equals that of u_H given Q_H.
//
//  2. Given Σ_{h∈H} ê_h = Q_H, the ê_H are Gaussian with mean (Q_H/S_H)·1 and
//     covariance τ²(I − 11ᵀ/S_H); adding the independent g_H,
//
//     u_H | Q_H ~ N((Q_H/S_H)·1, Σ),   Σ = τ²[(1 + 1/S)I − 11ᵀ/S_H].
//
//     Σ is positive definite: eigenvalue τ²(1 + 1/S) on 1^⊥ and τ²/S on 1.
//
//  3. Sherman–Morrison with a = 1 + 1/S, b = 1/S_H (b·S_H = 1, a − 1 = 1/S):
//
//     Σ⁻¹ = (1/(τ²a))·[I + (b/(a − b·S_H))·11ᵀ] = (S/(τ²(S+1)))·[I + (S/S_H)·11ᵀ],
//     [Σ⁻¹]_hh = S(S + S_H)/(τ² S_H (S + 1)).
//
//  4. For Gaussians with the same covariance and means m, m + w, the privacy
//     loss L = ln(p/p′) at an output drawn from p is N(η²/2, η²), with
//     η² = wᵀΣ⁻¹w the squared Mahalanobis distance. Here w = v_k·e_h in
//     coordinate k; summing the independent coordinates, η² = ‖v‖²[Σ⁻¹]_hh.
//     Writing μ_h = η²/2, the privacy loss is N(μ_h, 2μ_h): its standard
//     deviation is √(2μ_h) (the seed's Theorem 1 uses σ_z = 2μ_z, far too
//     small for μ_z < ½), and
//
//     μ_h = ½ Δ_h² [Σ⁻¹]_hh = Δ_h² S (S + S_H) / (2 τ² S_H (S + 1)).
//
//  5. A pair of distributions whose privacy loss is N(μ, 2μ) in both
//     directions has exactly the (ε, δ) profile of the Gaussian mechanism
//     with Δ/σ = η = √(2μ) (Balle & Wang 2018, Thm 8), i.e. it is η-GDP:
//
//     δ(ε) = Φ(√(μ/2) − ε/√(2μ)) − e^ε Φ(−√(μ/2) − ε/√(2μ)),
//
//     increasing in η, so ‖v‖ = Δ_h is the worst case. μ_h grows as S_H
//     falls, so "at most S_C colluders" is covered by S_C exactly, and it
//     does not depend on which sites collude, only on how many.
//
//  6. Noise ratio. The seed fixes Var g_s = τ²/S. With any ratio
//     R = Var ê_s / Var g_s > 0 (NoiseRatio; g_s ~ N(0, τ²/R)), steps 2-3
//     give Σ = τ²[(1 + 1/R)I − 11ᵀ/S_H] and, by the same Sherman–Morrison
//     step (a = 1 + 1/R, b·S_H = 1, a − 1 = 1/R),
//
//     [Σ⁻¹]_hh = R(R + S_H)/(τ² S_H (R + 1)),   μ_h = Δ_h² R(R + S_H)/(2τ² S_H (R + 1)),
//
//     which is the formula above at R = S. The model's noise is Σ_s g_s,
//     of variance Sτ²/R per coordinate. For the same μ_h, the model's
//     variance relative to one Gaussian mechanism on the pooled data with
//     the same Δ and the same η is
//
//     κ(R) = S(S_H + R)/(S_H(R + 1)),
//
//     which falls from S(S + S_H)/(S_H(S + 1)) at the seed's R = S (1.875 at
//     S = 5, S_C = 1; 2S/(S + 1) without colluders) towards S/S_H as R
//     grows: a large zero-sum part costs nothing in the model (it cancels)
//     and hides each honest site's own release better. S/S_H is the floor:
//     the colluders' g_c are known to the adversary. CAPEModelVarianceRatio
//     computes κ.
//
//  7. The lone-site view (issue 22 item 5). Every site is curious too, and
//     a site that reads the published model (whose noise is Σ_s g_s) knows
//     its own g_s: what it cannot remove is Σ_{s′≠s} g_{s′}, of variance
//     (S − 1)τ²/R. Its other knowledge (its own ê_s, its data, Q) is
//     independent of the other sites' g given the data, so its view of a
//     record at another site is one Gaussian mechanism:
//
//     μ_lone = Δ_h² R / (2τ² (S − 1)).
//
//     The view of the aggregator together with that site contains it (the
//     model is the sum of the releases), so μ_lone ≤ μ_h(S_C) whenever
//     S_C ≥ 1: (R + S_H)/(S_H(R + 1)) ≥ 1/S_H ≥ 1/(S − 1). With S_C = 0 it
//     is not covered by the coalition formula, and dominates it once
//     R > S² − 2S (e.g. S = 3, R = 100: μ_lone/μ_h = 1.471, ε = 1.24 for a
//     printed 1 at δ = 10⁻⁵ if ignored). The trust model's adversaries are
//     the aggregator with any S_C sites, and any one site on its own, so
//     the guarantee is the larger of the two:
//
//     μ = max(μ_h, μ_lone),   κ(R) = S·max((S_H + R)/(S_H(R + 1)), 1/(S − 1)),
//
//     the floor of κ being S/(S − 1) even without colluders. CAPEMu,
//     CAPEGDPMu, CAPEDeltaExact, CAPETau and CAPEModelVarianceRatio use the
//     maximum; CAPECoalitionMu and CAPELoneSiteMu return the two views
//     separately. A coalition of sites without the aggregator is covered
//     the same way: k ≤ S_C sites see less than the aggregator with them.
//
// Checks: S_H = 1 (everyone else colludes) gives μ = Δ²S/(2τ²), the local
// noise g_h alone (variance τ²/S); S_C = 0 gives μ_h = Δ²S/(τ²(S + 1)). The
// seed's Theorem 1 has, for S_C = 0, μ_z = Δ²(S + 2)/(2τ²(S + 1)) with its
// Δ = S/N: smaller than the exact μ by the factor (S + 2)/(2S) for S > 2,
// besides its wrong σ_z. The test TestCAPEConditionalCovariance builds the
// full joint covariance and conditions numerically; TestCAPEMonteCarlo
// simulates the protocol and the exact likelihood ratio of the whole view.
//
// Per-site sensitivity. What is protected is each site's own release r_s (the
// aggregator sees it), so Δ_h is the L2 sensitivity of site h's release, not
// of the average. If a site releases per-site means, as in the seed
// (Λ_j^s = (1/N_s)Σ λ), Δ_h depends on N_h: the scalar mean of values in
// [0, 1] has Δ_h = 1/N_h (the seed's convention, S/N with N_s = N/S; see
// CAPESeedSensitivity), and Gaussian FM's blocks have, per site,
// Δ1 = 4/N_h (linear) or 1/N_h (logistic) and Δ2 = √2/N_h or √2/(8N_h) (see
// regress.SensitivitiesFor with N = N_h). With unequal N_s the smallest site
// is the worst (CAPEDeltaSites); a protocol that releases per-site sums
// instead has the same Δ_h at every site. Several blocks j with their own
// noise scales τ_j = c_j·τ (ê and g of block j scaled by c_j): whiten each
// block by c_j, and pass Δ_h = √(Σ_j (Δ_{h,j}/c_j)²) with Tau = τ. No grid
// slack of dplearn's samplers is included: add it to Δ_h (as GaussianSigma
// does) for noise drawn with noise.AddGaussian.
//
// Trust model. The curve assumes honest-but-curious parties (the
// aggregator with up to S_C sites, or any one site alone, step 7) and a
// secure aggregation that hides the individual ê_s from the aggregator and
// any S_C sites; without it the zero-sum noise gives no privacy. The
// formula holds for every 0 ≤ S_C ≤ S − 1; dplearn's secure aggregation
// (secagg.DefaultThreshold) covers S_C ≤ ⌈S/3⌉ − 1 = CAPEColluders(S), the
// seed's assumption.
type CAPEParams struct {
	// Sites is S ≥ 2, the number of sites whose noise enters the zero sum.
	Sites int
	// Colluders is S_C, 0 ≤ S_C ≤ S − 1: how many sites may collude with the
	// aggregator.
	Colluders int
	// Tau is τ: each ê_s ~ N(0, τ²), each g_s ~ N(0, τ²/R) with R the
	// noise ratio.
	Tau float64
	// NoiseRatio is R = Var ê_s / Var g_s > 0; 0 means R = S, the seed's
	// choice (see step 6 of the derivation).
	NoiseRatio float64
	// Sensitivity is Δ_h, the L2 sensitivity of one site's release (after
	// whitening if it has several blocks; see the derivation above).
	Sensitivity float64
}

// Validate checks the parameters.
func (p CAPEParams) Validate() error {
	if p.Sites < 2 {
		return fmt.Errorf("accounting: CAPE needs ≥ 2 sites, got %d", p.Sites)
	}
	if p.Colluders < 0 || p.Colluders >= p.Sites {
		return fmt.Errorf("accounting: CAPE needs 0 ≤ S_C ≤ S−1 = %d colluders, got %d", p.Sites-1, p.Colluders)
	}
	if p.Sites > 1<<30 {
		return fmt.Errorf("accounting: CAPE supports S ≤ 2^30 sites, got %d", p.Sites)
	}
	if err := checkPositive("τ", p.Tau); err != nil {
		return err
	}
	if p.NoiseRatio != 0 {
		if err := checkPositive("noise ratio", p.NoiseRatio); err != nil {
			return err
		}
	}
	return checkPositive("per-site sensitivity", p.Sensitivity)
}

// ratio returns R as an exact rational.
func (p CAPEParams) ratio() *big.Rat {
	if p.NoiseRatio == 0 {
		return big.NewRat(int64(p.Sites), 1)
	}
	return new(big.Rat).SetFloat64(p.NoiseRatio)
}

// CAPEModelVarianceRatio returns κ = S·max((S_H + R)/(S_H(R + 1)), 1/(S − 1))
// (steps 6 and 7 of the derivation), rounded up: the variance of the CAPE
// model's noise divided by that of one Gaussian mechanism on the pooled data
// with the same sensitivity and the same Gaussian-DP μ as each honest site's
// release. The seed's Lemma 1 claims 1.
func CAPEModelVarianceRatio(p CAPEParams) (float64, error) {
	q := p
	q.Tau, q.Sensitivity = 1, 1
	if err := q.Validate(); err != nil {
		return 0, err
	}
	// With Δ = τ = 1, 2μ = R·m where m is the view's factor; the model's
	// variance is S/R and the pooled one 1/(2μ): κ = (S/R)·2μ = S·m.
	k := q.twoMuRat()
	k.Mul(k, big.NewRat(int64(p.Sites), 1))
	return roundup.Rat(k.Quo(k, q.ratio())), nil
}

// CAPEColluders returns the default number of colluding sites tolerated by
// CAPE and by dplearn's secure aggregation, S_C = ⌈S/3⌉ − 1.
func CAPEColluders(sites int) int { return (sites+2)/3 - 1 }

// twoMuRat returns 2μ = max(2μ_h, 2μ_lone) exactly (steps 6 and 7).
func (p CAPEParams) twoMuRat() *big.Rat {
	c, l := p.twoMuCoalitionRat(), p.twoMuLoneRat()
	if l.Cmp(c) > 0 {
		return l
	}
	return c
}

// twoMuLoneRat returns 2μ_lone = Δ²R/(τ²(S − 1)) exactly (step 7).
func (p CAPEParams) twoMuLoneRat() *big.Rat {
	d := new(big.Rat).SetFloat64(p.Sensitivity)
	t := new(big.Rat).SetFloat64(p.Tau)
	num := new(big.Rat).Mul(d, d)
	num.Mul(num, p.ratio())
	den := new(big.Rat).Mul(t, t)
	den.Mul(den, big.NewRat(int64(p.Sites-1), 1))
	return num.Quo(num, den)
}

// twoMuCoalitionRat returns 2μ_h = Δ²R(R + S_H)/(τ² S_H (R + 1)) exactly.
func (p CAPEParams) twoMuCoalitionRat() *big.Rat {
	R := p.ratio()
	H := big.NewRat(int64(p.Sites-p.Colluders), 1)
	d := new(big.Rat).SetFloat64(p.Sensitivity)
	t := new(big.Rat).SetFloat64(p.Tau)
	num := new(big.Rat).Mul(d, d)
	num.Mul(num, R)
	num.Mul(num, new(big.Rat).Add(R, H))
	den := new(big.Rat).Add(R, big.NewRat(1, 1))
	den.Mul(den, H)
	den.Mul(den, new(big.Rat).Mul(t, t))
	return num.Quo(num, den)
}

// CAPEMu returns μ = max(μ_h, μ_lone) rounded up, with μ_h = Δ_h² R (R + S_H)
// / (2 τ² S_H (R + 1)) (R = S by default) the mean of the privacy loss of a
// record at an honest site against the aggregator with S_C colluders (whose
// variance is 2μ_h; the quantity the seed calls μ_z, computed from the
// adversary's whole view) and μ_lone = Δ_h²R/(2τ²(S − 1)) that against any
// one site reading the model (step 7 of the derivation above).
func CAPEMu(p CAPEParams) (float64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	m := p.twoMuRat()
	return roundup.Rat(m.Mul(m, big.NewRat(1, 2))), nil
}

// CAPECoalitionMu returns μ_h, rounded up: the view of the aggregator with
// S_C colluding sites alone (steps 1-6).
func CAPECoalitionMu(p CAPEParams) (float64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	m := p.twoMuCoalitionRat()
	return roundup.Rat(m.Mul(m, big.NewRat(1, 2))), nil
}

// CAPELoneSiteMu returns μ_lone = Δ_h²R/(2τ²(S − 1)), rounded up: the view
// of one site that reads the model and removes its own local noise (step 7).
func CAPELoneSiteMu(p CAPEParams) (float64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	m := p.twoMuLoneRat()
	return roundup.Rat(m.Mul(m, big.NewRat(1, 2))), nil
}

// CAPEGDPMu returns η = √(2μ_h) rounded up: one CAPE release is η-GDP
// (Gaussian DP), exactly. Compose several CAPE rounds, or a CAPE round with
// other Gaussian releases, with GDPMu.
func CAPEGDPMu(p CAPEParams) (float64, error) {
	if err := p.Validate(); err != nil {
		return 0, err
	}
	return sqrtUp(p.twoMuRat()), nil
}

// CAPEDeltaExact returns the exact δ(ε) of one CAPE release for a record at
// an honest site: δ(ε) = Φ(√(μ/2) − ε/√(2μ)) − e^ε Φ(−√(μ/2) − ε/√(2μ)) with
// μ = CAPEMu(p), valid for every ε ≥ 0 (see the derivation above).
func CAPEDeltaExact(p CAPEParams, epsilon float64) (float64, error) {
	eta, err := CAPEGDPMu(p)
	if err != nil {
		return 0, err
	}
	return GDPDelta(eta, epsilon)
}

// CAPEEpsilonExact returns the smallest ε (rounded up) at which one CAPE
// release is (ε, δ)-DP for records at honest sites.
func CAPEEpsilonExact(p CAPEParams, delta float64) (float64, error) {
	eta, err := CAPEGDPMu(p)
	if err != nil {
		return 0, err
	}
	return GDPEpsilon(eta, delta)
}

// CAPETau returns the smallest τ (relative precision about 1e-12, rounded
// up) for which one CAPE release with S sites, S_C colluders and per-site
// sensitivity Δ is (ε, δ)-DP by the exact curve; CAPEDeltaExact ≤ δ is
// verified on the returned τ. Since η = √(2μ) is η₁/τ (η₁ its value at τ = 1),
// τ = η₁/μ_max where μ_max = GDPMuFor(ε, δ) is the
// largest Gaussian-DP μ meeting the target, found by bisection.
func CAPETau(epsilon, delta float64, sites, colluders int, sensitivity float64) (float64, error) {
	return CAPETauFor(CAPEParams{Sites: sites, Colluders: colluders, Sensitivity: sensitivity}, epsilon, delta)
}

// CAPETauFor is CAPETau for the sites, colluders, sensitivity and noise
// ratio of p (p.Tau is ignored).
func CAPETauFor(p CAPEParams, epsilon, delta float64) (float64, error) {
	p.Tau = 1
	if err := p.Validate(); err != nil {
		return 0, err
	}
	muMax, err := GDPMuFor(epsilon, delta)
	if err != nil {
		return 0, err
	}
	// At τ = 1 the release is η₁-GDP (η₁ = √(2μ) at τ = 1, both views), and
	// η scales as 1/τ: τ = η₁/μ_max.
	p.Tau = ratioUp(sqrtUp(p.twoMuRat()), muMax)
	for i := 0; ; i++ {
		d, err := CAPEDeltaExact(p, epsilon)
		if err != nil {
			return 0, err
		}
		if d <= delta {
			return p.Tau, nil
		}
		if i > 64 {
			return 0, fmt.Errorf("accounting: CAPE τ for (ε=%g, δ=%g) failed to verify", epsilon, delta)
		}
		p.Tau = math.Nextafter(p.Tau, math.Inf(1))
	}
}

// worstSite returns the index and value of the largest per-site sensitivity.
func worstSite(sens []float64) (int, float64, error) {
	if len(sens) < 2 {
		return 0, 0, fmt.Errorf("accounting: CAPE needs the sensitivities of ≥ 2 sites, got %d", len(sens))
	}
	w := 0
	for i, s := range sens {
		if err := checkPositive(fmt.Sprintf("sensitivity of site %d", i), s); err != nil {
			return 0, 0, err
		}
		if s > sens[w] {
			w = i
		}
	}
	return w, sens[w], nil
}

// CAPEDeltaSites returns the exact δ(ε) of the worst honest site when the
// sites' releases have unequal L2 sensitivities sens[s] (e.g. per-site means
// over unequal N_s), all with the same τ, and the index of that site. Since
// μ_h depends on the site only through Δ_h and on the coalition only through
// its size, the worst case is the site with the largest Δ_h, honest, with
// S_C others colluding.
func CAPEDeltaSites(sens []float64, colluders int, tau, epsilon float64) (delta float64, worst int, err error) {
	w, s, err := worstSite(sens)
	if err != nil {
		return 0, 0, err
	}
	d, err := CAPEDeltaExact(CAPEParams{Sites: len(sens), Colluders: colluders, Tau: tau, Sensitivity: s}, epsilon)
	return d, w, err
}

// CAPETauSites returns the smallest τ (rounded up, verified) for which every
// honest site is (ε, δ)-DP when the sites' releases have L2 sensitivities
// sens[s]: CAPETau at the largest of them.
func CAPETauSites(epsilon, delta float64, sens []float64, colluders int) (float64, error) {
	_, s, err := worstSite(sens)
	if err != nil {
		return 0, err
	}
	return CAPETau(epsilon, delta, len(sens), colluders, s)
}

// CAPESeedSensitivity returns S/N rounded up: the per-site sensitivity in
// the seed's Theorem 1, a per-site mean of scalars in [0, 1] over
// N_s = N/S records (Δ = 1/N_s). The published figures are reproduced with
// it (S = 3, N = 100, τ = 0.106, ε = 0.9 prints δ ≈ 2·10⁻¹⁷ in the seed's
// formula).
func CAPESeedSensitivity(sites, n int) (float64, error) {
	if sites < 1 || n < sites {
		return 0, fmt.Errorf("accounting: need N ≥ S ≥ 1, got S=%d N=%d", sites, n)
	}
	return roundup.Rat(big.NewRat(int64(sites), int64(n))), nil
}

// CAPEDeltaAsPublished evaluates Theorem 1 of the CAPE scheme as printed in
// the Gaussian FM seed (Section 2.1): AS PUBLISHED, NOT A GUARANTEE. With S
// sites each holding N/S samples (per-site sensitivity S/N), local noise τ,
// S_C colluders:
//
//	μ_z = S³/(2τ²N²(1+S)) · ((S−S_C+2)/(S−S_C) + (9/(S−S_C))·S_C²/(S(1+S) − 3S_C²)),
//	σ_z = 2μ_z,   δ = 2 σ_z/(ε−μ_z) · φ((ε−μ_z)/σ_z).
//
// The privacy loss is N(μ, 2μ), so σ_z should be √(2μ_z), and μ_z itself is
// not the mean of the privacy loss of the adversary's whole view; the result
// understates δ by up to 10¹³× (PRIVACY-NOTES item 18). It is kept only to
// reproduce the paper's figures; use CAPEDeltaExact. Like the theorem it
// requires ε ∈ (0, 1), ε > μ_z and S_C ≤ ⌈S/3⌉ − 1.
func CAPEDeltaAsPublished(sites, colluders int, tau float64, n int, epsilon float64) (float64, error) {
	if sites < 2 {
		return 0, fmt.Errorf("accounting: CAPE needs ≥ 2 sites, got %d", sites)
	}
	if colluders < 0 || colluders > CAPEColluders(sites) {
		return 0, fmt.Errorf("accounting: CAPE Theorem 1 assumes 0 ≤ S_C ≤ ⌈S/3⌉−1 = %d colluders, got %d", CAPEColluders(sites), colluders)
	}
	if err := checkPositive("τ", tau); err != nil {
		return 0, err
	}
	if n < sites {
		return 0, fmt.Errorf("accounting: CAPE needs N ≥ S samples, got N=%d S=%d", n, sites)
	}
	if !finite(epsilon) || epsilon <= 0 || epsilon >= 1 {
		return 0, fmt.Errorf("accounting: CAPE Theorem 1 is stated for ε ∈ (0, 1), got %v", epsilon)
	}
	S, C, N := float64(sites), float64(colluders), float64(n)
	den := S*(1+S) - 3*C*C
	mu := S * S * S / (2 * tau * tau * N * N * (1 + S)) * ((S-C+2)/(S-C) + 9/(S-C)*C*C/den)
	sz := 2 * mu
	if epsilon <= mu {
		return 0, fmt.Errorf("accounting: CAPE Theorem 1 needs ε > μ_z = %g, got ε = %v", mu, epsilon)
	}
	x := (epsilon - mu) / sz
	phi := math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
	d := 2 * sz / (epsilon - mu) * phi
	if d >= 1 {
		return 0, fmt.Errorf("accounting: CAPE Theorem 1 gives δ = %g ≥ 1 at ε=%v", d, epsilon)
	}
	return d, nil
}
