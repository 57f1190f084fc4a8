// Package inference computes standard errors and confidence intervals for the
// coefficients of differentially private regression fits, and forecasts the
// privacy noise before a fit, from released values and public parameters
// only.
//
// # What is released, what is public
//
// An FM-family fit (fm, relaxed-fm, gaussian-fm) releases the noisy
// polynomial coefficients Λ̃1 = Λ1 + e and Λ̃2 = Λ2 + E of its objective
// (regress.Released): e and the upper triangle of E have independent entries
// whose distribution (Laplace or Gaussian) and variance are public functions
// of ε, δ, N and d. The fitted coefficients are ω̂ = g_λ(Λ̃1, Λ̃2), the
// minimiser after the data-independent ridge λ and spectral trimming. DP-IRLS
// releases, at its last iteration, Ã and B̃ with the same structure (Λ1 =
// −2Ã, Λ2 = B̃), and, with its default warm start (issue 16), the warm
// start's Gaussian FM least-squares objective (regress.Released.Warm, noise
// σ = FMTau1, FMTau2); the number of iterations J is public. Its gradient
// forms (regress.IRLSFormGradient, IRLSFormPreconditioned, the default)
// release the last step instead: ω_J = ω_{J−1} + the minimiser of δᵀΛ2δ +
// Λ1ᵀδ with Λ1 = −2g̃ and Λ2 = B̃ (gradient) or (m̃/η)·G̃ (preconditioned, G̃
// the warm start's noisy Gram matrix, whose noise and ridge scale by m̃/η),
// ω_{J−1} released as regress.Released.Start; the bootstrap perturbs that
// step and adds the start, and everything below applies with Λ2 ≈ B
// (B ≈ (m/η)·S when the residuals are independent of x). Anything computed from these values and the public
// parameters is post-processing and costs no privacy. Nothing here reads the
// data; the two summaries that the sampling variance needs and the fits do
// not release are released separately with their own budget
// (regress.ReleaseTargetMoment, regress.ReleaseRobustScale) and composed
// into the fit's guarantee by the caller (cmd/dplearn: basic composition,
// the fit keeps 1 − share of ε).
//
// # Estimand
//
// The intervals cover a population parameter, not the non-private fit on the
// same rows: for linear fits the least-squares coefficients β = S⁻¹E[xy]
// (S = E[xxᵀ], encoded scale); for logistic FM fits the minimiser of FM's
// Taylor-truncated loss, 4·S⁻¹E[x(y − ½)], which is FM's estimand (close to
// the logistic coefficients only where |xᵀβ| is small); for DP-IRLS the
// fixed point of its weights 1/max(η, |r|), a Huber-type M-estimator that
// equals the median and mean regression coefficients when the errors are
// symmetric and independent of x. The estimand's map from the population
// objective is g₀(Λ1, Λ2) = −½Λ2⁻¹Λ1 (no ridge).
//
// # Method: parametric bootstrap over the noise plus the sampling sandwich
//
// The error of the released estimate has two independent parts: the
// mechanism's noise, whose distribution is known exactly, and the data's
// sampling variation.
//
//  1. Noise. With ω₀ = g₀(Λ̃) (the unregularised minimiser of the released
//     objective over the eigen-directions it locates: those whose
//     curvature μ̃ is significantly positive, μ̃ > z_{1−α/2}·s(v), s(v) the
//     noise SD of vᵀEv after the Gram structure's projection — Fieller's
//     condition for a bounded confidence set of the ratio −vᵀΛ1/(2μ); see
//     locator), draw B replicates Λ* = Λ̃ + (e*, E*) with the mechanism's
//     noise distribution and take ω*_b = g₀(Λ*_b) with the same rule. The
//     law of ω*_b − ω₀ around the released point approximates the law of
//     ω₀ − β around the truth, including the bias and the heavy tails of
//     inverting a noisy matrix (which the delta method misses). A replicate
//     in which a located direction falls below its floor drops it, as the
//     estimate would (a finite deviation); only a replicate left with no
//     direction fails and is placed at ±∞. Coefficients loading
//     UnlocatedLoading or more on a direction the released objective does
//     not locate are unidentified; the others' intervals describe the
//     minimiser within the located directions. Because the replicates are
//     drawn around the noisier Λ̃, their spread overstates the estimator's
//     where the noise is not small against Λ2's weakest curvature; a
//     second-level bootstrap estimates that inflation per coefficient and
//     divides it out (calibration).
//     When the fit projected Λ̃2 onto the schema's public Gram structure
//     (regress.Released.Structure), Λ̃ and every Λ* are projected the same
//     way first; the projection commutes with fresh noise, so the replicates
//     follow the structured estimator's noise law exactly.
//
//  2. Sampling. The estimator solves a moment equation, so its sampling
//     covariance is the sandwich Bread⁻¹·Meat·Bread⁻¹/N. Assuming the
//     residuals' spread does not depend on x (homoskedasticity) it is
//     c·s²·Λ2⁻¹/N, evaluated at the released Λ̃2:
//     linear, c = 1 and s² = σ² = Λ0 − βᵀΛ2β, with the released noisy Λ0
//     and βᵀΛ2β estimated by ω₀ᵀΛ̃2ω₀ less its bootstrap noise bias,
//     divided by TargetMoment.KeptShare = 1 − f̂ when a released share f̂ of
//     the N rows are zero rows of dropped records (they scale Λ0 and Λ2 by
//     1 − f; regress.ReleaseDroppedShare);
//     logistic, (y − ½)² = ¼ exactly, so σ_r² = ¼ − βᵀΛ2β/2 needs no extra
//     release and c = 2 (Λ2 = S/8, ω = 4γ);
//     irls, Huber's sandwich κ·S⁻¹/N with κ = E[ψ²]/E[ψ']², ψ(r) = r/max(η,|r|),
//     E[ψ'] = P(|r| < η)/η, and S⁻¹ = m₀·B⁻¹ (m₀ = E[1/max(η,|r|)], since
//     B = m₀S when the residuals are independent of x): the three means are
//     the released residual summary.
//     Each noise replicate gets an independent normal draw z_b with this
//     covariance.
//
//     DP-IRLS runs only J iterations (regress.GradientIRLSIterations after
//     the default warm start, 1 for the moments form's, J = 2 from the
//     seed's cold start ω = 0), so its last iterate is not
//     the fixed point: near it the IRLS map ω ↦ B(ω)⁻¹A(ω) is linear with
//     Jacobian f·I, f = 1 − P(|r|<η)/(η·m₀) (residuals independent of x),
//     and ω_J ≈ β + f^J(ω_s − β) + Σ_{j<J} f^j(e_{J−j} + u) for the start
//     ω_s, the iterations' noise e and one step's sampling error u. The
//     start's error (the cold start's −β; the warm start's noise, ridge
//     and least-squares bias, which the one iteration keeps a share f of)
//     would bias the intervals whenever f is not small, so the estimate
//     is the fixed point extrapolated from the two public points,
//     β̂ = (ω₀ − f^J·ω_s)/(1 − f^J), with ω_s = 0 or the released warm
//     start's own fit: its error is (Σ_{j<J} f^j e_{J−j})/(1 − f^J) +
//     u/(1 − f), i.e. the last iteration's noise replicates scaled by
//     √((1 − f^{2J})/(1 − f²))/(1 − f^J) plus Huber's sandwich above. f is
//     estimated from the noisy summary, so every replicate also redraws the
//     summary's public Laplace noise and adds the resulting change of β̂.
//
//  3. Interval. With δ_b = ω*_b − ω₀ + z_b, the basic-bootstrap interval at
//     level 1 − α is [ω₀ − q_{1−α/2}(δ), ω₀ − q_{α/2}(δ)] per coefficient
//     and the p-value of coefficient = 0 is 2·min(F(ω₀), 1 − F(ω₀)) for
//     the bootstrap law F of δ (Coefficient.PValue: it rejects at α exactly
//     when that interval excludes 0);
//     the point estimate is ω₀ − median(δ) and the standard error half the
//     central 68.27% range of δ (the standard deviation when δ is normal,
//     robust to heavy tails). The bootstrap covariance of δ gives intervals
//     of linear combinations (the intercept in original units). For
//     DP-IRLS the centre ω₀ is replaced by the extrapolated β̂ and δ_b is
//     built as in 2.
//
// The bootstrap draws its noise from a deterministic generator seeded by
// Options.Seed: it simulates the public noise distribution as
// post-processing; it is not privacy noise.
//
// Coverage was checked by simulation (TestCoverage; the table is in
// docs/inference.md): nominal 95% intervals covered the estimand 93–97% of
// the time at ε ∈ {0.5, 1, 2}, N ∈ {10⁴, 10⁵} for gaussian-fm, fm and
// relaxed-fm (linear and logistic) and irls (warm and cold start, on a
// narrow- and a wide-error design), with the exceptions listed there.
//
// # Forecast
//
// NoiseForecast runs the mechanism's own calibration and post-processing on
// the expected statistics of a public reference design (features independent
// and uniform over their declared ranges, categories equally likely, true
// coefficients 0) and simulates the noise, so the noise scales, the ridge and
// the trimming are those of the real fit. It needs only the mechanism, ε, δ,
// N and the schema, and warns when the noise will swamp the signal. For
// DP-IRLS the reference fixes the residuals too (uniform on [−c, c], c =
// max(2η, ReferenceResidualSpread)) and
// uses regress.PlanIRLS's calibration; the forecast is of the fit's
// coefficients, so it adds the warm start's noise carried into the last
// iterate with gain f^J (simulated on the reference least-squares objective
// with the public FMTau1, FMTau2 and ridge) and scales the last iteration's
// by √((1 − f^{2J})/(1 − f²)).
package inference
