// Package accounting computes differential-privacy guarantees: calibration of
// the Laplace and Gaussian mechanisms (classic, analytic, and including the
// grid slack of package noise), the binomial mechanism, privacy types ((ε, δ),
// ρ-zCDP, Rényi-DP curves) with their compositions and conversions, the RDP of
// (Poisson-subsampled) Gaussian steps, the distributed discrete Gaussian, the
// CAPE bound, and a persistent budget ledger.
//
// Every function validates its input and returns an error naming the bad
// value; none returns a guarantee it cannot justify. Calibration functions
// round in the safe direction (noise up, n up, δ and ε never down).
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
package accounting
