// Package cape implements the Correlation Assisted Private Estimation (CAPE)
// protocol of Imtiaz et al. as used by capeFM (Section 5 of the Gaussian FM
// seed paper), transport-independently.
//
// This package currently provides the zero-sum noise of Algorithm 2
// (zerosum.go): each site s draws ê_s ~ N(0, τ²) with the secure sampler
// (noise.AddGaussian), the aggregator learns only Σ_s ê_s through secure
// aggregation (package secagg, Bonawitz et al. 2017), and each site sets
// e_s = ê_s − (1/S) Σ_{s'} ê_{s'}. The e_s sum to exactly zero (in fixed
// point), each has variance (1 − 1/S)τ², and Cov(e_s, e_{s'}) = −τ²/S.
//
// Trust model (PRIVACY-NOTES items 8-9): honest-but-curious sites and
// aggregator, at most S_C = ⌈S/3⌉ − 1 colluding sites, and a secure
// aggregation that hides the individual ê_s; without it the zero-sum noise
// gives no privacy. The noise cancels only if every site whose ê_s entered
// the sum also contributes its perturbed release: if a site drops out after
// that point, the caller must redo the round or abort, never publish (see
// ErrNoiseDoesNotCancel and CheckContributors).
package cape
