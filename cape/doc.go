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
//	cfg, _ := cape.SecAggConfig(params, session)        // fresh session; all sites must survive
//	site, _ := cape.NewZeroSumSite(params, id, noise.NewSecure()) // draw ê_s for this attempt
//	party, _ := site.NewParty(cfg)                       // each site; binds the draw to the session
//	srv, _ := secagg.NewServer(cfg)                      // the aggregator
//	... the four secagg rounds over the transport ...
//	res, err := srv.Finish(ctx)                          // Σ ê_s; abort ⇒ redo or stop
//	// the aggregator broadcasts res.Sum and res.Included to the sites
//	share, err := site.Finish(res.Sum, res.Included)     // e_s; refuses a partial sum
//	// each site releases Λ̂_s = Λ_s + e_s + g_s (same fixed point for exact cancellation)
//	err = cape.CheckContributors(params, res.Included, arrived) // before averaging
//
// SimulateZeroSum runs the same flow in process.
//
// # One draw, one session
//
// Redoing a round means a new session, new parameters if the set of sites
// changed (τ recalibrated for the new S), and a new NewZeroSumSite: a fresh
// ê_s. Reusing ê_s would be a leak: once the masked ê_s have been sent, an
// aggregator that aborts in Unmasking may already hold Σ ê over all sites
// (secagg needs only t < S unmasking answers to reconstruct, while the
// zero-sum configuration demands all S before it outputs), and the sum of
// the same draws over the sites that remain for the rerun would give it the
// difference, the missing site's ê_s — after which that site's release
// Λ_s + e_s + g_s is protected by g_s alone. The code makes the reuse
// impossible rather than forbidden: a ZeroSumSite keeps ê_s to itself, its
// NewParty succeeds once (a second call, for any session, fails with
// ErrNoiseSpent), and the secagg input it hands to the party is single use
// (secagg.Input: once masked and sent, any other secagg.Party refuses it
// with secagg.ErrInputSpent). Finish succeeds once and erases ê_s.
package cape
