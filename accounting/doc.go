// Package accounting computes differential-privacy guarantees: calibration of
// the Laplace and Gaussian mechanisms (classic, analytic, and including the
// grid slack of package noise), the binomial mechanism, privacy types ((ε, δ),
// ρ-zCDP, Rényi-DP curves) with their compositions and conversions, the RDP of
// (Poisson-subsampled) Gaussian steps, the distributed discrete Gaussian, the
// exact CAPE curve, Gaussian differential privacy, and a persistent budget
// ledger.
//
// Every function validates its input and returns an error naming the bad
// value; none returns a guarantee it cannot justify. Calibration functions
// round in the safe direction (noise up, n up, δ and ε never down).
//
// # Which accountant (PRIVACY-NOTES item 21)
//
//   - Only Gaussian releases (several blocks, iterations, steps, CAPE
//     rounds): Gaussian DP, exact under adaptive composition: GDPMu to
//     compose, GDPEpsilon / GDPDelta for (ε, δ), GDPMuFor to calibrate.
//   - Laplace and Gaussian releases mixed: add ρ's (PureToZCDP,
//     GaussianZCDP, ComposeZCDP) and convert with ZCDP.EpsilonImproved.
//   - Subsampled steps: the RDP curves of subsampled.go.
//
// # CAPE
//
// CAPEDeltaExact, CAPETau and CAPEDeltaSites give the exact privacy curve of
// a CAPE release from the adversary's whole view (derived in the doc comment
// of CAPEParams, checked numerically and by a Monte Carlo of the privacy
// loss), with the per-site sensitivity an explicit argument.
// CAPEDeltaAsPublished is the seed's Theorem 1, kept only as a labelled
// figure: it understates δ by up to 10¹³×.
//
// The persistent privacy budget (a file charged by each release) is package
// ledger.
//
// # Order grid
//
// RDP curves live on an explicit grid of orders α > 1. DefaultOrders is the
// grid used by Opacus and TF Privacy: 1.1, 1.2, …, 10.9 and 12, 13, …, 63.
// A curve may carry ε(α) = +Inf for orders where no finite bound is known.
//
// # Findings about the seed papers (checked by tests)
//
//   - Gaussian FM seed, Eq. (8): α = 1 + √(1 + 2σ²ln(1/δ)/(TΔ²)) does not
//     minimise Eq. (7); the minimiser drops the inner "1 +", and the minimum
//     is ρ + 2√(ρ ln(1/δ)). The published value is valid (any α > 1 is) but
//     slightly larger (GaussianSteps reports both).
//   - DPPP seed, Theorem 1: valid in every case tested against the exact
//     privacy profile, but conservative: for ε = 1, δ = 1e-5 it asks for
//     n = 220 coin flips where n = 62 suffices exactly (BinomialExactN);
//     cpSGD's Theorem 1 needs n = 1272 there, because of its side condition
//     np(1−p) ≥ 23 ln(10d/δ).
//   - The classic Gaussian calibration is refused for ε ≥ 1
//     (ClassicGaussianSigma); the analytic one holds for every ε.
//   - The sum of discrete Gaussians is not a discrete Gaussian: DDGRDP adds
//     the τ correction of Kairouz, Liu & Steinke.
//   - Gaussian FM seed, Theorem 1 (CAPE): the privacy loss is N(μ, 2μ), so
//     σ_z = √(2μ_z), not 2μ_z; and μ must come from the adversary's whole
//     view, μ_h = Δ²S(S+S_H)/(2τ²S_H(S+1)), which for S_C = 0 is 2S/(S+2)
//     times the seed's μ_z. S = 3, N = 100, τ = 0.106, ε = 0.9: the seed
//     gives δ = 2.1·10⁻¹⁷, the exact δ is 7.9·10⁻⁴ (CAPEDeltaAsPublished,
//     CAPEDeltaExact).
//
// # References
//
//   - Balle & Wang 2018, "Improving the Gaussian mechanism for differential
//     privacy: analytical calibration and optimal denoising" (analytic Gaussian).
//   - Bun & Steinke 2016, "Concentrated differential privacy" (zCDP).
//   - Canonne, Kamath & Steinke 2020, "The discrete Gaussian for differential
//     privacy" (improved zCDP ⇒ (ε, δ), discrete Gaussian δ).
//   - Balle, Barthe, Gaboardi, Hsu & Sato 2020, "Hypothesis testing
//     interpretations and Rényi differential privacy" (improved RDP ⇒ (ε, δ)).
//   - Mironov 2017, "Rényi differential privacy"; Mironov, Talwar & Zhang 2019,
//     "Rényi differential privacy of the sampled Gaussian mechanism".
//   - Dwork, Rothblum & Vadhan 2010 (advanced composition); Kairouz, Oh &
//     Viswanath 2015 (optimal composition).
//   - Agarwal, Suresh, Yu, Kumar & McMahan 2018, "cpSGD" (binomial, Thm 1).
//   - Kairouz, Liu & Steinke 2021, "The distributed discrete Gaussian mechanism
//     for federated learning with secure aggregation" (Prop. 14).
//   - Imtiaz & Sarwate (CAPE), Theorem 1 as restated in the Gaussian FM seed.
//   - Dong, Roth & Su 2022, "Gaussian differential privacy" (JRSS B): GDP and
//     its exact composition.
package accounting
