// Package capefm is capeFM, Gaussian FM across S sites that cannot share
// their rows (Tasnim et al., Section 5, Algorithms 2-3), corrected as in
// PRIVACY-NOTES items 1-4, 8, 9, 18, 21 and 23. The protocol logic is
// transport-free: Site and Aggregator are state machines exchanging typed
// messages with a strict binary encoding; Run wires them in process.
// Secure aggregation is package secagg, the zero-sum noise package cape, the
// accounting package accounting, the objective and post-processing package
// regress.
//
// Besides capeFM (Mechanism CapeFM) the same machinery runs the seed's
// conventional decentralised baselines: every site releases its own Gaussian
// FM objective with the full noise for (ε, δ) on its N_s rows
// (GaussianFMLocal), or fits fm, objpert or noisygd on its rows and releases
// its coefficients (FMLocal, ObjPertLocal, NoisyGDLocal); the aggregator
// averages with weights N_s/N.
//
// # Derivation
//
// Site s holds N_s rows, N = Σ_s N_s (public: bounded DP). Gaussian FM's
// released coefficients are the average objective's Λ1 (D values) and the
// upper triangle of Λ2 (D(D+1)/2), together L values. The pooled objective
// is Λ = (1/N) Σ_rows λ_n = Σ_s (N_s/N)·Λ_s, with Λ_s the site's own
// average (the seed's Λ_j^s; regress.Objective on the site's statistics).
//
// Weights go in before the noise. The seed averages the releases with 1/S,
// which is the pooled objective only for equal N_s; averaging noisy site
// averages with weights N_s/N afterwards would weight the zero-sum shares
// too, and Σ_s w_s e_s ≠ 0 unless all w_s are equal. So site s releases
//
//	r_s = W((N_s/N)·Λ_s) + e_s + g_s = W(Σ_{n∈s} λ_n / N) + e_s + g_s
//
// (its sum over the pooled N, whitened by W) and the aggregator adds the
// releases: Σ_s r_s = W(Λ) + Σ_s g_s, exactly, because Σ_s e_s = 0 in fixed
// point (cape.ZeroSumSite.Finish) and the releases are summed as integers.
//
// Per-site sensitivity. Replacing a record at site s moves (N_s/N)·Λ_{j,s}
// by at most (N_s/N)·Δ_j(N_s), where Δ_j(n) is Gaussian FM's sensitivity of
// an n-row average (regress.SensitivitiesFor: Δ1 = 4/n, Δ2 = √2/n linear;
// 1/n and √2/(8n) logistic). Since Δ_j(n) = c_j/n,
// (N_s/N)·Δ_j(N_s) = c_j/N = Δ_j(N): every site's release has exactly the
// pooled sensitivity, whatever its size. There is no worst site: the code
// computes each site's value from its own N_s (Calibration.SiteSens), they
// agree to rounding, and accounting.CAPETauSites takes the largest.
//
// Whitening (item 2: Λ1 and Λ2 calibrated jointly). With the budget split
// w_1 = split, w_2 = 1 − split of the squared sensitivity and
// c_j = Δ_j(N)·√(J²(w)/w_j), W divides block j by c_j; the whitened release
// has L2 sensitivity at most 1 by the joint supremum of regress/joint.go
// (J² = regress.JointFactor; the separate sum √(Σ_j (Δ_j(N)/c_j)²) would be
// 1/J(w) ≥ 1: one record cannot attain both blocks' worst cases), and the
// CAPE accounting depends on a site's shift only through its norm, so one τ
// serves all L coordinates: one zero-sum draw, one secure-aggregation session, one
// fixed-point grid. Block j's noise in natural units is c_j times the
// whitened noise, and the aggregator multiplies block j of the sum by c_j.
//
// Noise. Every site draws ê_s ~ N(0, τ²)^L (cape.NewZeroSumSite), the
// aggregator learns only Q = Σ_s ê_s (secagg), every site sets
// e_s = ê_s − Q/S (variance (1 − 1/S)τ²) and draws g_s ~ N(0, τ_g²)^L with
// τ_g the smallest float64 with R·τ_g² ≥ τ², where R = Params.NoiseRatio =
// Var ê / Var g (the seed fixes R = S; DefaultNoiseRatio = 100). The
// per-site variances are equal at every site, as the accounting assumes;
// the unequal sizes live in the released scale (the sum over the pooled N),
// not in the noise.
//
// Privacy per site (item 18, accounting.CAPEParams). Two kinds of party
// look at a site's data, and the guarantee covers both:
//
//   - The aggregator colluding with up to S_C sites (S_H = S − S_C honest),
//     seeing every site's release, Q, and the colluders' data and noise.
//     The honest sites' noise given that view has covariance
//     τ²[(1 + 1/R)I − 11ᵀ/S_H], and a record at an honest site has privacy
//     loss N(μ_h, 2μ_h) with μ_h = Δ_h²·R(R + S_H)/(2τ²·S_H(R + 1))
//     (derivation steps 1-6 in accounting/cape.go).
//   - Any one site on its own (item 5 of issue 22). Every site is curious
//     too and reads the published model, whose noise is Σ_s g_s; it knows
//     its own g_s, so the noise it cannot remove is Σ_{s′≠s} g_{s′}, of
//     variance (S − 1)τ²/R: μ_lone = Δ_h²·R/(2τ²(S − 1)) (step 7). With
//     S_C ≥ 1 the aggregator-with-that-site view contains it; with S_C = 0
//     it is not covered by μ_h and dominates it for R > S² − 2S (at S = 3,
//     R = 100, ignoring it gave ε = 1.24 for a printed 1; 1.46 at S = 2).
//
// The release is √(2μ)-Gaussian-DP, μ = max(μ_h, μ_lone), with the exact
// δ(ε) of accounting.CAPEDeltaExact. Δ_h is the per-site whitened
// sensitivity, 1, plus the grid slack, times the lattice margin 1 + 2^−32
// (see Lattice below), rounded up to 6 significant digits; τ is the
// smallest value with δ(ε) ≤ δ (accounting.CAPETauFor), rounded up to 6
// significant digits (Params.Calibrate), so the printed R, τ and Δ_h are
// exactly the ones used and recomputing δ from them (TestNoDataInReport)
// gives the printed guarantee; TestCapeExactViews recomputes each view's
// privacy from the implemented noise by numerical conditioning, for
// S ∈ {2, 3, 4, 5, 10}. A g_s with variance above τ²/R only lowers μ.
// Each site recomputes the calibration from the Params it is offered (R
// included: it is agreed, part of the canonical encoding and its hash) and
// refuses a τ that does not meet its (ε, δ) or an R other than its own.
//
// Grid and fixed point. The release is snap_G(W(·)) + g_s with
// G = noise.GaussianGrid(τ_g, L) and g_s drawn by noise.AddGaussian on that
// grid (together exactly AddGaussian applied to the statistic), plus e_s,
// which lies on ê's grid, a multiple of G, and depends on no data. Snapping
// adds at most noise.GaussianGridSlack(τ_g, L) ≤ 2^−21·τ_g to the
// sensitivity (included in Δ_h); that the discrete noise is covered by the
// continuous curve is proved below (Lattice). A site sends its L values as
// int64 multiples of 2^−FracBits (Calibration.FracBits; ê's resolution
// EFracBits ≤ FracBits), and a public bound on |(N_s/N)·Λ| checked before
// anything is spent keeps every value and the sum of S of them below 2^52
// and 2^62, with ê_s up to 128τ (so a large R, whose τ is about √(R/S_H)
// times the pooled scale, is covered: every R up to MaxNoiseRatio fits at
// N = 5·10⁶, D = 100; TestFixedPointRange). Problems that do not fit are
// refused by Params.Calibration, on the aggregator and at every site when
// offered, before anything is drawn or spent.
//
// Post-processing (objectivePostProcess). In natural units the sum is a
// Gaussian FM release of the pooled objective whose Λ2 entries carry
// independent noise of standard deviation Noise2 = c_2·√S·τ_g
// (Calibration.Noise2; for gaussian-fm-local's average,
// √(Σ_s (N_s/N)²·τ2_s²); TestCombinedNoiseIsNoise2). The aggregator
// solves it with central gaussian-fm's default rule at that noise
// (regress.GaussianFMPostProcess): a linear objective has every eigenvalue
// of its noisy Λ2 below the public floor 2·Noise2·√D raised to it, no
// ridge (regress.EigenFloor: the floor is the expected spectral norm of the
// noise; docs/mechanisms.md, "Eigenvalue clipping"); a logistic one gets
// the ridge 4·Noise2 and spectral trimming at Noise2. Noise2 is a function
// of the Params, so this is post-processing of the released sum, and
// nothing a site sends depends on it (TestReleasesUnchanged). The report
// prints central gaussian-fm's clip line. Solving with the fixed ridge
// 4·Noise2 instead, as capefm did before, lost to the pooled fit by more
// than κ on ill-conditioned designs (TestCapeFMClipMatchesPooled: mean
// excess risk 1.82 × pooled gaussian-fm's with the ridge, 1.22 × with the
// clip, κ = 1.287).
//
// # Privacy units
//
// With Params.Unit and Params.MaxRows = K, neighbouring datasets differ in
// all rows of one person (replace-one-unit). Every site keeps at most K
// rows per unit of its own table (dataset.UnitMoments: which rows of a
// unit are kept depends only on a private key and that unit's own rows)
// and its statistics are regress.UnitStats. The roster's N_s is then the
// site's number of units U_s (announced: public, as N_s is under bounded
// DP), N = U = Σ U_s, and site s releases Σ_{kept rows at s} λ / (U·K)
// (Params.RowsPerUnit). Replacing one person at site s changes at most K
// kept rows against at most K; pairing them and counting the unpaired
// against no row, the sum changes by at most K·max(Δ, M) with Δ the
// row-level sensitivity numerator and M = sup‖λ‖ ≤ Δ (derived for every
// FM release in regress.UnitStats), so the release moves by at most
// K·Δ/(U·K) = Δ/U: the pooled row-level sensitivity at N = U. Hence the
// whole calibration is the row-level one evaluated at the unit counts:
// whitening at U, each site's whitened sensitivity at U_s with weight
// U_s/U (siteSensitivities; (U_s/U)·Δ(U_s) = Δ(U)), gaussian-fm-local at
// U_s; K cancels from every weight, and the fixed-point bound |w·Λ_s| ≤
// a·w is unchanged. Every view of the CAPE accounting is a function of the
// site releases, so the per-site guarantee holds for a person at an honest
// site exactly as for a record. fm-local runs regress's unit-aware fm.
//
// A person with rows at several sites is not bounded jointly: the
// guarantee assumes every person has rows at one site (the report says
// so); a person at m sites is m replace-one-unit steps away, so m·η-
// Gaussian-DP for an η-Gaussian-DP release (group privacy). Sites refuse
// an offer whose unit or K differs from theirs, and Gather an
// announcement with another K, naming the field (both are in the hashed
// encoding). Tests: units_test.go; mutations: mutants/capeunit.txt.
//
// # Lattice
//
// The CAPE curve is computed for continuous Gaussians; the implementation
// draws exact discrete Gaussians on grids, and every view is a sum of
// several of them, which is not a discrete Gaussian (PRIVACY-NOTES item
// 13). The difference between the discrete and the continuous privacy
// profiles is not a smoothing error (exponentially small in (σ/step)²): it
// is polynomial in (step/σ)² (package noise measures about 3·10⁻¹³
// relative for one discrete Gaussian at its grids, in either direction).
// It is covered by calibrating with Δ_h′ = (Δ + slack)·(1 + 2^−32), the
// margin of noise.GaussianCalibrationSensitivity (releaseSensitivity).
//
// Theorem. Let b = noise.GaussianGrid(τ_g, L) (the release grid) and
// a = noise.GaussianGrid(τ, L) (ê's grid), both powers of two with b ≤ a, so
// aℤ ⊆ bℤ; τ_g/b ≥ 2^21; s/(a√S) ≥ 8 and τ_g/(b√S) ≥ 8 with
// s = ττ_g/√(τ² + τ_g²); S·L ≤ noise.MaxMarginEntries (Calibration.
// checkLattice verifies all of them). If the continuous curve satisfies
// f(ε; η′) ≤ δ, δ ∈ [2^−1074, 0.42), where η′ is η of a view computed at the
// sensitivity Δ_h′, then the implemented view's δ(ε) is at most δ. This
// holds for the three views: the aggregator with S_C colluders, one site
// alone, an outsider seeing the model. (f(ε; η) = Φ(η/2 − ε/η) −
// e^ε Φ(−η/2 − ε/η).)
//
// Proof, step A (each view is a lattice Gaussian up to 1 ± ε₀: Poisson
// summation). Work per whitened coordinate; the L coordinates are
// independent and the bounds multiply. Coalition view, honest set H,
// k = |H|: as in accounting's step 1 the view is a bijective function of
// (u_H, Q_H, ê_C, g_C), u_h = r_h − snap(f_h) + m_h(Q) = ê_h + g_h, where
// m_h(Q) is the integer share of Q that cape.ZeroSumSite.Finish subtracts
// (a function of Q and the public IDs), and (Q_H, ê_C, g_C) has a law that
// does not depend on the data. Neighbours move u_h by w = snap(f_h′) −
// snap(f_h) ∈ bℤ. For u ∈ bℤ^k and Q ∈ aℤ,
//
//	P(u, Q) ∝ Σ_{x ∈ aℤ^k, Σx = Q} exp(−‖x‖²/2τ² − ‖u − x‖²/2τ_g²).
//
// On the plane {Σx = Q} the exponent is −‖x − c‖²/2s² − ψ(u, Q) with
// c = c(u, Q) in the plane, and e^{−ψ(u,Q)} is proportional to the density
// p(u, Q) of the continuous model (whose integral over the plane is
// (√(2π)s)^{k−1}e^{−ψ} times a constant). The sum runs over a coset
// x₀ + M of M = {x ∈ aℤ^k: Σx = 0}, of rank k − 1, with x₀ − c ⊥ 1, so by
// Poisson summation it is (√(2π)s)^{k−1}/det M times
// Σ_{y∈M*} e^{−2π²s²‖y‖²}e^{2πi⟨y, x₀ − c⟩}. The dual M* is the orthogonal
// projection of a⁻¹ℤ^k onto 1^⊥; the projection is injective on the
// vectors with last entry 0, and shrinks them at most to ‖z‖/√k
// (‖z‖² − (Σz)²/k ≥ ‖z‖²/k by Cauchy–Schwarz over k − 1 entries). So the
// terms y ≠ 0 sum to at most ε₀ = (1 + θ)^{k−1} − 1 in absolute value, with
// θ = 2Σ_{m≥1} e^{−2π²m²s²/(ka²)} ≤ 2Σ_{m≥1} e^{−128π²m²} < 10^−548
// (s/(a√k) ≥ 8); ε₀ = 0 for k = 1. Hence P(u, Q) = C·p(u, Q)·(1 + e(u, Q)),
// |e| ≤ ε₀, and since p(u, Q) = p(Q)·N(u; m(Q), Σ) (accounting's step 2;
// here Σ = τ²(I − 11ᵀ/k) + τ_g²I with the implemented τ_g² ≥ τ²/R),
//
//	K_Q(u)·(1 − ε₀)/(1 + ε₀) ≤ P(u | Q) ≤ K_Q(u)·(1 + ε₀)/(1 − ε₀),
//
// K_Q the lattice Gaussian on bℤ^k, K_Q(u) ∝ N(u; m(Q), Σ). The neighbour's
// P(· | Q) and K_Q are both the translates by w. Over the L coordinates the
// factor is ρ₀ = ((1 + ε₀)/(1 − ε₀))^L. A lone site s sees, besides what is
// independent of the other sites' noise given the data (its data, ê_s,
// g_s, Q), t = Σ_{s′≠s}(snap(f_{s′}) + g_{s′}); the sum over
// {g ∈ bℤ^{S−1}: Σg = t − Σ snap f} is the same computation with parameter
// τ_g on bℤ (τ_g/(b√S) ≥ 8), giving the lattice Gaussian on bℤ with
// parameter √(S − 1)·τ_g up to the same kind of factor; an outsider's
// view, with S in place of S − 1.
//
// Step B (coupling on the whitened lattice). Whitening by Σ^{−1/2} turns
// K_Q into the lattice Gaussian of parameter 1 on B = Σ^{−1/2}(bℤ^k) (n =
// kL dimensions over all coordinates), and the shift into one of norm η,
// η² = wᵀΣ⁻¹w, at most the accounting's 2μ_h for ‖w‖ ≤ Δ + slack. Run
// step 1 of the proof at noise.GaussianCalibrationSensitivity on B: take
// s₂ = 8b/τ_g (τ_g² is Σ's smallest eigenvalue) and s₁ = √(1 − s₂²); let
// X ~ N(c, s₁²I) and, given X, Y the lattice Gaussian of parameter s₂ on B
// centred at X. Its normaliser θ(x) = Σ_{z∈B} e^{−‖z − x‖²/2s₂²} is, by
// Poisson summation, ((√(2π)s₂)^n/det B)·Σ_{y∈B*} e^{−2π²s₂²‖y‖²}e^{2πi⟨y,x⟩},
// with B* = Σ^{1/2}(b⁻¹ℤ^n) and ‖Σ^{1/2}z/b‖ ≥ (τ_g/b)‖z‖, so its relative
// variation is at most τ_n = (1 + τ₀)^n − 1, τ₀ = 2Σ_{m≥1} e^{−128π²m²}
// < 10^−548, the constant of package noise. Since s₁² + s₂² = 1, Gaussian
// convolution makes θ(x)·(law of Y given X = x), integrated over X,
// proportional to K_Q; bounding 1/θ by its extremes as there gives, for
// the laws K⁰ and K^w of Y (one post-processing of N(c, s₁²I) and of
// N(c + Σ^{−1/2}w, s₁²I)), pointwise P(y) ≤ ρ₀ρ·K⁰(y) and
// P′(y) ≥ K^w(y)/(ρ₀ρ), with ρ = (1 + τ_n)/(1 − τ_n). Steps 2 and 3 of that proof then hold as
// written with ρ₀ρ in place of ρ (the additive term A = 4(ρ₀ρ − 1) is below
// 10^−530 for S·L ≤ 2^40), and μ₁ = η/s₁ ≤ η(1 + s₂²) = η(1 + 64(b/τ_g)²)
// ≤ η(1 + 2^−36) since τ_g/b ≥ 2^21: so f(ε; (1 + 2^−32)η) ≤ δ implies the
// bound, conditionally on every Q and hence overall (Q's law does not
// depend on the data). η is linear in the sensitivity, so (1 + 2^−32)η is
// η at Δ_h′. The lone-site and outsider views are the one-dimensional case
// (per coordinate): after step A, the theorem of
// noise.GaussianCalibrationSensitivity applies to the lattice Gaussian on
// bℤ of parameter √(S − 1)·τ_g ≥ 2^21·b, with ρ₀ρ in place of its ρ. ∎
//
// TestLatticePoissonStep checks step A on exact convolutions at a coarse
// grid (σ of one step, where the factor is 10⁻⁴ and measurable: it reaches
// half the bound), TestCapeLatticeMargin that the margin is applied, and
// TestCheckLattice the hypotheses.
//
// The seed's Lemma 1, corrected. The model's whitened noise Σ_s g_s has
// variance S·τ_g² = Sτ²/R. Central Gaussian FM on the pooled data at the
// same (ε, δ) needs τ_pool = 1/μ* (whitened sensitivity 1, μ* =
// accounting.GDPMuFor(ε, δ)); capeFM needs τ = √(R·m)/μ* with
// m = max((R + S_H)/(S_H(R + 1)), 1/(S − 1)) (the two views above). So
//
//	Var(capeFM) / Var(pooled Gaussian FM) = κ(R) = S·max((S_H + R)/(S_H(R + 1)), 1/(S − 1))
//
// (accounting.CAPEModelVarianceRatio, Calibration.Kappa). At the seed's
// R = S it is S(S + S_H)/(S_H(S + 1)) for S ≥ 3: 1.875 for S = 5, S_C = 1,
// and 2S/(S + 1) without colluders: never 1. The seed's Lemma 1 gets 1 by
// calibrating τ as if site s's release were an ordinary Gaussian mechanism
// of variance τ², which ignores that the adversary also sees Q and every
// release: the flaw of its Theorem 1. κ(R) falls as R grows, towards the
// floor max(S/S_H, S/(S − 1)): the colluders' own g_c are known to the
// adversary, and a lone site knows its own g_s, so only the other sites'
// local noise protects. κ(100) = 1.287 for S = 5, S_C = 1 (floor 1.25).
// Without colluders the lone site sets the floor S/(S − 1), reached for
// R ≥ S² − 2S: κ(100) = 1.5 for S = 3, 2 for S = 2, 1.25 for S = 5 (the
// earlier 1.020 at S = 3 ignored the lone site and was not a guarantee).
// The zero-sum part cancels in the model, so a large R costs nothing
// there; it only makes ê_s larger, which the fixed point holds (see Grid
// and fixed point). Calibration.VarianceRatio is the ratio of the
// calibrated scales, TestAggregateNoiseVariance measures it on the
// protocol. The conventional scheme (GaussianFMLocal) has ratio exactly S
// for any sizes: Σ_s (N_s/N)²·(k/N_s)² = S·k²/N².
//
// The released model alone, for an outsider (anyone who sees the model
// but is neither a site nor the aggregator), is one Gaussian mechanism
// with sensitivity Δ_h and noise √S·τ_g per whitened coordinate:
// (Δ_h/(√S·τ_g))-Gaussian-DP; the report prints it as a note, naming whom
// it is for. A site reading the model is covered by μ_lone, the aggregator
// by μ_h, not by that line.
//
// Trust model (item 8; issue 22). Honest-but-curious sites and
// aggregator. The adversary is the aggregator together with at most S_C
// sites (default accounting.CAPEColluders(S) = ⌈S/3⌉ − 1 at the first
// roster; Params refuses S_C at or above secagg.DefaultThreshold(S),
// beyond which secure aggregation no longer hides the ê_s), or any one
// site on its own; what is protected is every record at a site outside
// the adversary, in that site's release and in the model. Any number of
// sites may drop out before the noise is fixed (the fit is redone while
// MinSites remain); S_C is frozen at the first roster (Serve keeps it, and
// a Site refuses an attempt with fewer colluders than one it accepted,
// naming the field "colluders S_C"), so dropping sites, or an aggregator
// declaring them dropped, never lowers the protection against the same
// colluders (issue 22 item 6). Authenticated channels bind each message to
// its site (the transport's job), and secure aggregation hides every ê_s;
// without it the zero-sum noise gives no privacy. The seed's Theorem 1
// figure is not printed. Secure aggregation's keys travel through the
// aggregator, so authenticated channels alone would let it substitute
// them: every site signs its advertised keys with its certificate and
// verifies every other site's before deriving any key (KeySigner,
// SiteConfig.Signer), and a failed check names the site and abandons the
// attempt. Not protected: integrity. The aggregator can abort, choose
// which sites count as dropped, or publish a wrong model (the sum is not
// verifiable), and a site can send a wrong release; none of this weakens
// the privacy of the other sites' records.
//
// # Rounds
//
//	round  name           site → aggregator        aggregator → site
//	—      (announce)     Announce (on connect)    Outcome if refused (before any attempt)
//	0      Hello          Hello | Refuse           Offer (opens), Agreed (closes; broadcast)
//	1      AdvertiseKeys  secagg AdvertiseKeys     secagg KeyRoster (broadcast)
//	                      + its key signature      + every site's key signature
//	2      ShareKeys      secagg ShareKeys         secagg ShareRelay (to each site)
//	3      MaskedInput    secagg MaskedInput (ê_s) secagg UnmaskRequest (to each site)
//	4      Unmasking      secagg UnmaskResponse    —
//	5      SumBroadcast   —                        SumBroadcast: Q = Σê and the included sites (broadcast)
//	6      Release        Release                  —
//	7      Combine        —                        — (aggregator: check contributors, sum, post-process as central gaussian-fm, report)
//	—      (end)          —                        Outcome to every site (model published, or why not)
//
// The baselines skip rounds 1-4: after Hello the aggregator sends a
// SumBroadcast without a sum, which asks for the releases.
//
// Announce (before round 0; envelope round 0, type "announce"). A site
// announces itself when it connects: its name, its public N_s, its schema
// fingerprint (Site.Announce). Gather, on the aggregator, waits for the
// expected sites (the names it was given), refuses an announcement whose
// name is not the authenticated sender's, whose schema differs, or from a
// name it does not expect, and tells that site why (Outcome); it builds
// the first attempt's roster from the announced sizes once every expected
// site has announced or been refused, or at its deadline with at least the
// minimum. The aggregator therefore needs the names only; N_s is public
// under bounded DP. IDs follow the order of the expected names, not of
// arrival. A site announcing itself once the attempts run (late, or
// restarted) is told it cannot join.
//
// Agreement (round 0). The aggregator fills Params (roster with names, IDs
// and public N_s, model, schema fingerprint, D, ε, δ, split, S_C, noise
// ratio R, minimum sites, attempt number, fresh session, τ) and offers
// it. A site compares it with its own configuration (Site.Check: every field it configured, its
// name and N_s in the roster, S_C ≥ max(its minimum, ⌈S/3⌉ − 1, the S_C of
// any earlier attempt of the fit it accepted), the
// attempt number, and that every capeFM release it made earlier in the fit
// is listed in Params.Prior), recomputes the calibration, asks its ledger
// whether it can pay (LedgerChecker), and answers Hello (its name, schema
// fingerprint, N_s, the SHA-256 of the canonical Params encoding) or Refuse
// naming the field. The aggregator checks every Hello against the Params;
// Agreed tells every site that all of them agreed to the same hash.
//
// Validation (item 23). NewSite checks the site's whole table (statistics
// and, when given, every row) against the bounds of the schema encoding
// before any protocol starts, so a bad record can never become a visible,
// data-dependent abort. Diagnostics (Result.Trimmed, the attempt log) stay
// on the console: the report holds only public parameters and figures
// computed from them; fitting two datasets of the same sizes with the same
// noise gives identical reports.
//
// # Dropouts, retries and budget (item 9)
//
// A site lost before the noise is fixed (in rounds 0-4, including a
// Unmasking that aborts because secagg needs all S sites) ends the attempt
// with a recoverable *AbortError: nothing was released, and a new attempt
// starts without it (fresh session, τ recalibrated for the new S with the
// same S_C, fresh ê and g: cape and secagg make every draw single use, and
// a Site refuses any session or attempt number it has seen) while at least
// MinSites remain. A
// site lost after the SumBroadcast (noise fixed) makes the sum's noise not
// cancel: the aggregator never publishes (cape.CheckContributors), and the
// *AbortError names the site. The releases that did arrive were seen, so
// they count: by default the fit stops; with RunOptions.RedoAfterRelease a
// new attempt lists the lost attempt's η in Params.Prior and its report
// composes them (Gaussian-DP composition, accounting.GDPMu; the adversary's
// view of a partial attempt is a function of the full one, so it costs at
// most one CAPE release). A Site charges its Ledger with the attempt's
// (ε, δ) after computing its release and before handing it out, releases at
// most once per attempt (a second SumBroadcast is refused), and a failed
// charge releases nothing.
//
// # Transport mapping
//
// A network transport implements Hub (Send, Receive, SetRound) on the
// aggregator's side and calls Gather and Serve, which run the announce
// step, the attempts, rounds, deadlines and retries exactly as Run does in
// process; on a site, every decoded payload goes to Site.Handle and the
// answer, if any, goes back. Package capenet does this over package
// transport (gRPC with mutual TLS). Every message maps onto one envelope:
// protocol "capefm" (Protocol), round = Message.Round(), type =
// Message.Type() ("offer", "hello", "refuse", "agreed", "advertise-keys",
// "key-roster", "share-keys", "share-relay", "masked-input",
// "unmask-request", "unmask-response", "sum-broadcast", "release",
// "announce", "outcome"), sender or recipient = the site's name
// (Params.Sites maps names to IDs; Message.Party() is the sending or
// addressed site, 0 for a broadcast that Serve sends to every site of the
// attempt), payload = MarshalBinary(). Unmarshal decodes a payload: version
// byte 3, a type byte, the 32-byte session, then the fields big-endian with
// counted arrays; short input, trailing bytes, counts beyond the limits,
// non-finite floats and invalid Params are refused (ErrMalformed), and
// whatever decodes re-encodes to the same bytes.
//
// The attempt's session (Params.Session, 32 random bytes, also the secagg
// session) travels inside every payload, and the state machines refuse
// another attempt's messages (replays, stragglers), messages of another
// round, senders outside the round's set, duplicates and wrong lengths. A
// transport session may span the whole fit: its per-(round, type) duplicate
// check must then allow one message per attempt (the transport's
// AllowRepeats), since a site sends a Hello in every attempt. SetRound
// gives the transport the round to gate on (upstream messages of that round
// only). Event.Site must be the name proven by the sender's certificate:
// Serve refuses a message whose Party() is not that site's ID, and the
// secagg threat model needs exactly this binding.
//
// # Message sizes
//
// Payload bytes per site and attempt (checked by TestMessageSizes), with
// L = D + D(D+1)/2 and P = len(Params.Prior):
//
//	upload   16L + 135S + 301 + len(name) + A_s
//	download 8L + 200S + 333 + Σ len(site names) + Σ_s A_s + 8P + len(unit) + len(decl)
//
// where decl is the fit's schema declaration the Offer carries when the
// aggregator has one (ServeOptions.Declaration; a few hundred bytes for
// a typical schema, at most MaxDeclaration), A_s is site s's key signature and certificate (about 566 bytes
// with certificates from package certs; 0 with UnsignedKeys). The masked
// ê_s and the release are 8L bytes each; the Shamir shares grow with S.
// For S = 5: D = 20 (L = 230) about 5.2 kB up and 6.0 kB down; D = 100
// (L = 5150) about 83 kB up and 45 kB down. The baselines
// send only Offer, Hello, SumBroadcast and Release.
package capefm
