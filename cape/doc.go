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
//
// # Flow in a deployment
//
//	params := cape.ZeroSumParams{Sites: ids, Tau: tau, Len: L}
//	cfg, _ := cape.SecAggConfig(params, session)        // all sites must survive
//	site, _ := cape.NewZeroSumSite(params, id, noise.NewSecure())
//	party, _ := secagg.NewParty(cfg, id, site.Input())  // each site
//	srv, _ := secagg.NewServer(cfg)                      // the aggregator
//	... the four secagg rounds over the transport ...
//	res, err := srv.Finish(ctx)                          // Σ ê_s; abort ⇒ redo or stop
//	// the aggregator broadcasts res.Sum and res.Included to the sites
//	share, err := site.Finish(res.Sum, res.Included)     // e_s; refuses a partial sum
//	// each site releases Λ̂_s = Λ_s + e_s + g_s (same fixed point for exact cancellation)
//	err = cape.CheckContributors(params, res.Included, arrived) // before averaging
//
// SimulateZeroSum runs the same flow in process.
package cape
