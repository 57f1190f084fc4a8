package regress

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"

	"gonum.org/v1/gonum/mat"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/report"
)

// Objective perturbation (mechanism "objpert"): approximate minima
// perturbation (AMP; Iyengar, Near, Song, Thakkar, Thakurta & Wang, "Towards
// Practical Differentially Private Convex Optimization", IEEE S&P 2019,
// Algorithm 1), (ε, δ)-DP for replace-one neighbours.
//
// # Why not the pure-ε objective perturbation
//
// The previous implementation released the minimiser of the perturbed
// objective (Chaudhuri, Monteleoni & Sarwate 2011 for logistic, Kifer,
// Smith & Thakurta 2012 for linear) with noise drawn by noise.ObjPert. The
// optimality condition determines the noise from the output: anyone holding
// the other N − 1 rows computes b̂ = −Σ∇ℓ_i(ω) − NΛω, and ‖b̂‖ was a sum of
// Laplace draws on a public grid, so ‖b̂‖/grid was an integer for the true
// dataset and uniform mod 1 for a neighbour (PRIVACY-NOTES item 19). The
// density argument of those papers needs a continuous b and the exact
// minimiser; no grid sampler and no floating-point optimiser provides
// either. TestObjPertNoiseRecoveryAttack is that attack.
//
// # The mechanism
//
// With the average objective, over ℝ^d (logistic; linear with the
// pseudo-Huber loss, the default) or the public ball C = {‖ω‖ ≤ R}
// (linear with the squared loss, Config.Huber < 0),
//
//	F_D(ω; b) = (1/N)[Σ_i ℓ(ω; z_i) + bᵀω] + (Λ/2)‖ω‖²,
//
// logistic: ℓ = log(1 + e^{−t ωᵀx}), t = 2y − 1; linear: ℓ = (y − xᵀω)²
// (squared loss) or ℓ = 2η²(√(1 + (r/η)²) − 1), r = y − xᵀω (pseudo-Huber
// loss of scale η; its section below says which lines of the proof change):
//
//  1. b = noise.AddGaussian(0, σ1): coordinates g1·K_j, K_j independent
//     discrete Gaussians with parameter s = σ1/g1 ≥ 2^21, g1 =
//     noise.GaussianGrid(σ1, d).
//  2. ω̃ ≈ argmin F_D(·; b): Newton's method (logistic and pseudo-Huber:
//     lossNewton, then full Newton steps on a compensated gradient,
//     polishLoss) or the exact eigendecomposition solver (linear squared
//     loss, minimiseKST), then an independent check that the gradient
//     (logistic, pseudo-Huber) or the gradient mapping
//     G(ω) = L(ω − Π_C(ω − ∇F(ω)/L)) (squared loss, L = 2 + Λ ≥ the smoothness)
//     has norm ≤ γ, a public tolerance, including a bound on the rounding
//     error of that evaluation. If the check fails, Fit returns an error
//     and releases nothing.
//  3. Release ω_priv = noise.AddGaussian(ω̃, σ2).
//
// # Constants (replace-one neighbours, encoding ‖x‖ ≤ 1, |y| ≤ 1)
//
// The rows are accepted with ‖x‖² ≤ 1 + 1e-9 and |y| ≤ 1 + 1e-9 (checkRows);
// every constant below is inflated by that tolerance (xb² = 1 + 1e-9).
//
//   - β bounds the Hessian of one row's loss: logistic σ(z)σ(−z)xxᵀ ⪯ ¼I,
//     β = ¼; linear 2xxᵀ, β = 2 (times xb²). Both Hessians have rank one.
//   - The gradient difference of the replaced row, Δ(ω) = ∇ℓ(ω; z) −
//     ∇ℓ(ω; z'), lies in span{x, x'}. Logistic: Δ = αx − α'x' with
//     |α|, |α'| ≤ 1 (|ℓ'| ≤ 1). Linear on C: Δ = −2(yx − y'x') +
//     2(xxᵀ − x'x'ᵀ)ω, ‖Δ‖ ≤ D = 2·2 + 2R = 2(R + 2) (‖yx − y'x'‖ ≤ 2,
//     ‖xxᵀ − x'x'ᵀ‖₂ ≤ 1 as a difference of two PSD matrices ⪯ I).
//
// # Proof
//
// Write c = NΛ and, in sum form, L_D(ω) = Σ_i ℓ(ω; z_i). φ is the
// N(0, σ1²I) density and δ_G(ε; μ) = Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)
// the analytic Gaussian curve (Balle & Wang 2018), which is the hockey-stick
// divergence E[(1 − e^{ε−L})₊] of the privacy loss L ~ N(μ²/2, μ²) for
// every real ε, and increases with μ.
//
// Step 1, the grid of b (coupling lemma). Let K be a discrete Gaussian with
// parameter s ≥ 1 (P(K = k) ∝ f(k), f(t) = e^{−t²/(2s²)}) and X ~ N(0, s²).
// Since f decreases on [0, ∞), ∫_k^∞ f ≤ Σ_{j≥k} f(j) ≤ ∫_{k−1}^∞ f for
// k ≥ 1, and by Poisson summation Z = Σ_j f(j) = √(2π)s(1 + 2Σ_{m≥1}
// e^{−2π²s²m²}) lies in [√(2π)s, √(2π)s(1 + τ)], τ = 3e^{−2π²s²}. Hence
// for every integer k ≥ 1
//
//	P(X ≥ k + ½) ≤ P(X ≥ k)/(1 + τ) ≤ P(K ≥ k) ≤ P(X ≥ k − 1),
//
// the first inequality because the Gaussian tail ratio P(X ≥ k + ½)/P(X ≥ k)
// decreases in k (log-concavity) and at k = 0 equals 1 − q with q =
// 2Φ(1/(2s)) − 1 ≥ 0.35/s ≥ τ/(1 + τ). The quantile coupling
// K = F_K⁻¹(F_X(X)) therefore has |K − X| ≤ 3/2: K = k ≥ 1 means
// F_K(k−1) < F_X(X) ≤ F_K(k), and F_K(k−1) = 1 − P(K ≥ k) ≥ F_X(k − 1),
// F_K(k) = 1 − P(K ≥ k+1) ≤ F_X(k + 3/2); k = 0 gives |X| ≤ 3/2 in the same
// way (P(K ≥ 1) ≥ P(X ≥ 3/2)) and k ≤ −1 follows by symmetry. Applied to
// each coordinate: the implementation's b has the distribution of κ(b_c)
// for a fixed map κ, with b_c ~ N(0, σ1²I) continuous and
// ‖κ(b_c) − b_c‖ ≤ u1 := (3/2)·g1·√d. (TestObjPertCouplingLemma checks
// the tail inequalities for s from 1 to 100.)
//
// Step 2, the exact minimiser with continuous noise. Let v = v_D(b_c) be the
// exact minimiser of F_D(·; b_c). Logistic: b_c = B_D(v) := −∇L_D(v) − cv
// is a C¹ bijection of ℝ^d with Jacobian matrix −(∇²L_D(v) + cI), so v has
// the density p_D(v) = φ(B_D(v))·det(∇²L_D(v) + cI). For the neighbour,
// B_{D'}(v) = B_D(v) + Δ(v), and the privacy loss at v is
//
//	L1(v) = ln p_D(v)/p_{D'}(v)
//	      = (2B_D(v)ᵀΔ(v) + ‖Δ(v)‖²)/(2σ1²) + ln det(A + E)/det(A + E'),
//
// with A = ∇²L_{D∩D'}(v) + cI ⪰ cI and E, E' the rank-one Hessians of the
// two rows. By the matrix determinant lemma det(A + uuᵀ) = det A·(1 +
// uᵀA⁻¹u) ∈ [det A, (1 + β/c)det A], so the log-determinant term is at most
// J = ln(1 + β/(NΛ)) (a single term, tighter than CMS's 2 ln(1 + β/c)).
// Under D, B_D(v) = b_c ~ N(0, σ1²I), but Δ(v) depends on b_c through v; the
// Gaussian term is bounded without that dependence:
//
//   - logistic: Δ(v) lies in the parallelogram with vertices ±(x + x') and
//     ±(x − x'), where the convex function Δ ↦ 2b_cᵀΔ + ‖Δ‖² is largest, so
//     L1 ≤ J + max_± (2|G_±| + s_±²)/(2σ1²) with G_± = b_cᵀ(x ± x') ~
//     N(0, σ1²s_±²), s_± = ‖x ± x'‖. Since s_+² + s_−² = 2(‖x‖² + ‖x'‖²) ≤
//     4, one s is ≤ 2 and the other ≤ √2.
//   - linear: |b_cᵀΔ| ≤ D‖Pb_c‖ with P the projection onto span{x, x'}, so
//     L1 ≤ J + μ1ρ + μ1²/2 with μ1 = D/σ1 and ρ = ‖Pb_c‖/σ1 a χ variable
//     with at most 2 degrees of freedom, stochastically below the Rayleigh
//     distribution. On the sphere ‖v‖ = R the KKT condition reads b_c =
//     −∇L_D(v) − (c + t)v with a multiplier t ≥ 0 and (v, t) ↦ b_c is
//     injective; releasing (v, t) (more than v) has density φ(B_D(v, t))·
//     R·det(Uᵀ(∇²L_D(v) + (c + t)I)U) on sphere × [0, ∞) (U an orthonormal
//     basis of the tangent space), B_{D'}(v, t) = B_D(v, t) + Δ(v), and the
//     determinant lemma applies to the compressed matrices, ⪰ (c + t)I ⪰ cI.
//     The same bounds hold pointwise in (v, t); dropping t is
//     post-processing.
//
// Step 3, the optimiser and the rounding of b. F_D(·; b) is Λ-strongly
// convex and changing b by u changes ∇F by u/N, so the exact minimiser
// moves by at most ‖u‖/(NΛ) (also on the ball: strongly monotone
// variational inequality). The computed ω̃ is within γ/Λ of the exact
// minimiser for its b: unconstrained, ‖∇F(ω̃)‖ ≤ γ and strong convexity; on
// the ball, the projected gradient step ω ↦ Π_C(ω − ∇F(ω)/L) is a
// (1 − Λ/L)-contraction with fixed point v, so ‖ω − v‖ ≤ ‖G(ω)‖/Λ. With
// step 1, ω̃ = v_D(b_c) + U with ‖U‖ ≤ r := γ/Λ + u1/(NΛ).
//
// Step 4, composition. Consider the release of the pair (v, ω_priv) with
// v = v_D(b_c); ω_priv alone is post-processing of it. Given v, b_c = B_D(v)
// is determined, hence so are b = κ(b_c), ω̃ and U = U_D(v). For the same v,
// ‖U_D(v) − U_{D'}(v)‖ ≤ 2r, so given v the second release is
// noise.AddGaussian applied to inputs at distance ≤ 2r: a discrete Gaussian
// mechanism on the grid, whose loss L2 is dominated by that of the Gaussian
// mechanism with μ2 = noise.GaussianCalibrationSensitivity(2r, σ2, d)/σ2 (the
// grid slack, and the proven margin that covers the discrete Gaussian's δ
// against the continuous curve), whatever v is. The objective noise needs no
// such argument, step 1 being an exact coupling. For every event S,
// P_D(S) − e^ε P_{D'}(S) ≤ E_D[(1 − e^{ε − L1 − L2})₊], which is increasing
// in L1, so with ε' = ε − J:
//
//   - logistic: bound the max over ± by the sum, symmetrise
//     (E f(|G|) = 2E[f(G); G > 0] ≤ 2E f(G) for f ≥ 0) and compose the two
//     independent Gaussian losses (μ² = μ1² + μ2², exact):
//     δ ≤ 2δ_G(ε'; √(4xb²/σ1² + μ2²)) + 2δ_G(ε'; √(2xb²/σ1² + μ2²)).
//   - linear: δ ≤ E_ρ[h(ε' − μ1ρ − μ1²/2)] with ρ Rayleigh and h(c) =
//     E[(1 − e^{c−L2})₊] = δ_G(c; μ2) (for c < 0, 1 − e^c + e^c δ_G(−c; μ2)).
//     It is computed as an upper Riemann sum over ρ-cells of width 0.002
//     (h(…) increases in ρ, so each cell takes its right end, with the
//     Rayleigh cell mass e^{−a²/2} − e^{−b²/2} exact) plus the tail mass.
//
// This composes the objective noise and the output noise exactly instead
// of AMP's ε = ε1 + ε2, δ = δ1 + δ2. The calibration gives the output
// perturbation a fixed share of the whitened squared sensitivity
// (μ2² = w·(μ1² + μ2²), ObjPertOutputShare), solves for σ1 by bisection on
// the bound, derives σ2 from r, and recomputes the achieved δ from the final
// scales (ObjPertPlan.DeltaAt); it refuses if that exceeds the target.
// TestObjPertExact1D computes the exact privacy profile of step 2 in one
// dimension and checks it against the bound.
//
// Step 5, floating point and failure. The optimiser's result is accepted
// only if the computed gradient (mapping) norm plus a bound on its
// evaluation error is ≤ γ: the logistic (and pseudo-Huber) gradient is
// recomputed from the rows with compensated sums in sum form with the exact
// b (lossGradCheck); the squared loss's from the sufficient statistics,
// whose entries (package suffstat: blocked
// summation) are within 1e-13·N of the exact sums, an error charged to the
// bound. If the check fails, Fit returns an error with no data-dependent
// number in it and releases nothing. That failure is itself an event that
// depends on the data, and the guarantee does not cover it. Newton's method
// on a smooth strongly convex objective and the closed-form linear solver
// reach γ = 1e-9 with orders of magnitude to spare (the polishing steps are
// needed on small N, where lossNewton's objective-decrease test can stop
// near a gradient norm of 1e-9), so it only happens on numerically
// pathological input. Likewise an ω̃ too large for the
// output grid (|ω̃_j|/g2 > 2^52) is refused with a generic error.
//
// # The pseudo-Huber loss (linear, ObjPertOptions.Huber = η > 0)
//
// The linear fit's default (Config.Huber ≥ 0, huber.go) minimises over ℝ^d
// with ℓ(ω; x, y) = 2η²(√(1 + (r/η)²) − 1), r = y − xᵀω, whose gradient and
// Hessian are
//
//	∇ℓ = −ψ(r)x,  ψ(r) = 2r/√(1 + (r/η)²),  |ψ(r)| < 2η,
//	∇²ℓ = ψ'(r)xxᵀ,  ψ'(r) = 2(1 + (r/η)²)^(−3/2) ∈ (0, 2].
//
// (|ψ| < 2η since |r|/√(1 + r²/η²) < η; ψ' ≤ 2 at r = 0.) This is the
// logistic case of the proof with other constants; line by line:
//
//   - Constants: β = 2·xb², as for the squared loss (ψ' ≤ 2, ‖x‖² ≤ xb²),
//     and the row Hessian has rank one, so J = ln(1 + β/(NΛ)) and the
//     default Λ are the linear ones (objPertHessian(Linear),
//     DefaultObjPertLambda(Linear, …)). Δ(ω) = ∇ℓ(ω; z) − ∇ℓ(ω; z') =
//     αx − α'x' with α = −ψ(r), α' = −ψ(r'), |α|, |α'| ≤ 2η: the
//     logistic form with |α| ≤ 1 replaced by |α| ≤ 2η. It lies in the
//     parallelogram with vertices ±2η(x + x') and ±2η(x − x') (the image of
//     the square [−2η, 2η]² under (α, α') ↦ αx − α'x'), for every ω: no
//     parameter ball is needed, and ‖Δ‖ ≤ 4η·xb = GradSensitivity.
//   - Step 2: the domain is ℝ^d and F_D(·; b) is strictly convex with
//     Hessian ∇²L_D/N + ΛI ⪰ ΛI, so B_D(v) = −∇L_D(v) − cv is a C¹
//     bijection of ℝ^d (strongly monotone and continuous, hence onto;
//     injective by strict monotonicity) with Jacobian −(∇²L_D(v) + cI):
//     the logistic paragraph applies word for word (density, determinant
//     lemma with β = 2xb²). The Gaussian term: Δ ↦ 2b_cᵀΔ + ‖Δ‖² is
//     convex, so its maximum over the parallelogram is at a vertex, and
//     L1 ≤ J + max_± (2|G_±| + s_±²)/(2σ1²) with G_± = b_cᵀ·2η(x ± x') ~
//     N(0, σ1²s_±²), s_± = 2η‖x ± x'‖; s_+² + s_−² ≤ (2η)²·4xb², so one
//     s is ≤ 2η·2xb and the other ≤ 2η·√2xb. Only the scale 2η of the
//     vertices differs from logistic.
//   - Steps 1 and 3 are unchanged (they use only Λ-strong convexity on
//     ℝ^d and the grid of b).
//   - Step 4 as for logistic, with μ1 = 2η·2xb/σ1 = GradSensitivity/σ1:
//     the max over ± is bounded by the sum (each term ≥ 0), |G| is
//     symmetrised, and each vertex's loss composes exactly with the output
//     noise's, so
//     δ ≤ 2δ_G(ε'; √(4xb²(2η)²/σ1² + μ2²)) + 2δ_G(ε'; √(2xb²(2η)²/σ1² + μ2²)).
//     (deltaFor takes the logistic branch; TestObjPertHuberExact1D
//     computes the exact one-dimensional profile at extremal pairs.)
//   - Step 5: ω̃ comes from Newton's method on the rows (lossNewton with
//     the pseudo-Huber row loss, backtracking on the objective, then
//     polishLoss) and the gradient is recomputed from the rows with
//     compensated sums and the exact b (lossGrad); its rounding error is
//     bounded in lossGradCheck: the residual's rounding (≤ u((d + 1)·1.01·
//     xb‖ω̃‖ + 1 + encTol)) times the Lipschitz constant 2 of ψ, plus 8u
//     relative on each term and the compensated sum's error.
//
// Privacy units: under a unit of K rows, Δ(v) = Σ_{i≤r}α_i x_i −
// Σ_{j≤r'}α'_j x'_j with |α| ≤ 2η has norm ≤ (r + r')·2η·xb ≤ K·4η·xb for
// every v and lies in the fixed span of the ≤ 2K feature vectors, which is
// all the linear unit argument below uses (with D = 4η·xb instead of
// 2(R + 2)); the domain is ℝ^d, so the sphere's multiplier does not arise.
// PlanObjPertUnits therefore uses the χ bound with μ1 = K·4η·xb/σ1 for
// K ≥ 2. At K = 1 it uses the parallelogram bound above (the row-level
// plan; the χ bound with m = 2 also holds there but is looser).
//
// # Privacy units (PlanObjPertUnits): linear derived, logistic refused
//
// Under a privacy unit (UnitStats) up to K rows change on each side and the
// objective divides by the public N = Units·K. Steps 1 and 3 do not depend
// on the neighbours (r = γ/Λ + u1/(NΛ) as before). Step 2 changes in two
// places. The Hessians of the replaced rows are r ≤ K and r' ≤ K rank-one
// terms, each ⪯ β·I: adding them one by one to a matrix ⪰ cI multiplies the
// determinant by a factor in [1, 1 + β/c] each time (determinant lemma), so
// the log-determinant term is at most J_K = K·ln(1 + β/(NΛ)) (also for the
// compressed matrices on the sphere). The gradient difference Δ(v) =
// Σ_{i≤r}∇ℓ(v; z_i) − Σ_{j≤r'}∇ℓ(v; z'_j): pairing min(r, r') rows
// (each pair ≤ D = 2(R + 2) on C) and leaving |r − r'| against no row
// (each ≤ 2(1 + R) ≤ D), ‖Δ(v)‖ ≤ K·D for every v, and Δ(v) lies in the
// span of the r + r' ≤ 2K feature vectors, a fixed subspace of dimension
// m₀ ≤ min(2K, d). So |b_cᵀΔ| ≤ K·D·‖Pb_c‖, L1 ≤ J_K + μ1ρ + μ1²/2 with
// μ1 = K·D/σ1 and ρ = ‖Pb_c‖/σ1 a χ variable with m₀ degrees of freedom,
// stochastically below a χ with m = 2·min(K, ⌈d/2⌉) ≥ m₀ (even, so its
// tail is e^{−a²/2}Σ_{j<m/2}(a²/2)^j/j!, chiTail). The integrand of step
// 4 increases in ρ, so δ ≤ E_ρ[h(ε − J_K − μ1ρ − μ1²/2)] with ρ ~ χ_m,
// computed by the same upper Riemann sum (chiHockey; m = 2 is the row-level
// Rayleigh bound, and K = 1 gives the row-level plan exactly). The default
// Λ keeps J_K at the row-level share of ε (PlanObjPertUnits).
//
// Logistic regression is refused: there Δ(v) = Σα_i x_i − Σα'_j x'_j with
// |α| ≤ 1 ranges over a zonotope with up to 2^(2K) vertices, and the bound
// "max over the vertices ≤ sum over them" would multiply δ by 2^(2K−1);
// no tighter argument is implemented. Group privacy from the row-level
// guarantee would print ε·K at δ·K·e^((K−1)ε), not the ε asked for.
//
// # Hessian release for inference (logistic, ObjPertOptions.HessianShare)
//
// With a Hessian share s > 0 the fit also releases S̃ = S(ω_priv) + Z,
// S(ω) = Σ_i w_i x_i x_iᵀ with w_i = min(¼, σ(x_iᵀω)σ(−x_iᵀω)), evaluated at
// the released (public) ω_priv, Z symmetric with noise.AddGaussianSymmetric
// on the d(d+1)/2 upper-triangle entries. Its L2 sensitivity on the upper
// triangle is √2·xb²/4 plus the rounding of the sums
// (objPertHessianSensitivity). Extend step 4 to the triple (v, ω_priv, S̃):
// given (v, ω_priv) the query S(ω_priv) is fixed, so S̃ is a discrete
// Gaussian mechanism whose loss L3 is dominated by the Gaussian loss of
// μ3 = GaussianCalibrationSensitivity(Δ3, σ3, m)/σ3 whatever (v, ω_priv)
// are, independently of L2 given v. L2 + L3 is then dominated by one
// Gaussian loss of μ² = μ2² + μ3² (Gaussian losses compose exactly), and
// the bound of step 4 holds with μ2 replaced by √(μ2² + μ3²). The
// calibration gives the shares w and s of μ1² + μ2² + μ3² to μ2² and μ3².
// With s = 0 nothing changes. package inference (ObjPert) uses S̃ to
// de-ridge the estimate (ObjPertDeridge) and for its intervals.
//
// # Defaults
//
// Λ = β/(N(e^{J*} − 1)) with J* = min(s·ε, 1), s = ObjPertJacobianShareAt
// (kind, ε): the Jacobian term then costs a tenth of the budget (linear;
// logistic a tenth at ε ≤ 0.5 growing to a fifth at ε ≥ 1; the cap keeps
// Λ from vanishing as ε grows, which would inflate the output noise
// through γ/Λ); γ = DefaultObjPertTolerance = 1e-9; output share w = 0.01;
// linear: the pseudo-Huber loss with η = DefaultHuberScale(N, d, ε)
// (huber.go; Config.Huber sets η, and Config.Huber < 0 the squared loss
// on the ball with R = (√d/2)·max(1, (Nε/(1000d))^(1/4)),
// DefaultObjPertRadius).
// Every one of them is public and the proof holds for any value. On SmokeBan (N = 8,000 training rows, d = 10) at ε = 1,
// δ = 1e-5 this gives Λ = 3.0e-4, σ1 = 8.6 and σ2 = 4.5e-4; the output
// noise is negligible next to the objective noise's effect on ω
// (≈ σ1/(N(λ_min(H) + Λ))). The shares were measured on CPS1988 and SmokeBan
// (docs/mechanisms.md): smaller Jacobian shares (more regularisation) did
// better down to about 0.05.
//
// # Attacks
//
// TestObjPertNoiseRecoveryAttack reconstructs b̂ from the output and tests
// the lattice of the old sampler (‖b̂‖ on the Laplace grid) and of the new
// one (coordinates of b̂ on GaussianGrid(σ1, d)); it failed on the pure-ε
// implementation and passes on this one. TestObjPertSnapAndResolveAttack
// snaps b̂ to b's grid, re-solves and compares with the output: it
// distinguishes neighbours with certainty when the output noise is left
// out, and never fires with it.

// ObjPertOptions are the public parameters of objective perturbation.
type ObjPertOptions struct {
	// Lambda is the regularisation strength Λ of the average objective
	// (1/N)[Σℓ + bᵀω] + (Λ/2)‖ω‖². 0 means the default (see
	// DefaultObjPertLambda); it must not be negative, and the Jacobian term
	// ln(1 + β/(NΛ)) must be < ε.
	Lambda float64
	// Radius is R, the public bound ‖ω‖ ≤ R of linear regression with the
	// squared loss (ignored for logistic and for the Huber loss). 0 means
	// DefaultObjPertRadius (of d, the public N and ε; under a privacy unit
	// N is the number of units).
	Radius float64
	// Huber is η > 0, the scale of the pseudo-Huber loss of a linear fit
	// over ℝ^d (see "The pseudo-Huber loss" above), or 0 for the squared
	// loss on the ball ‖ω‖ ≤ Radius. Fit sets it from Config.Huber
	// (huberScale: the default is DefaultHuberScale) unless it is given
	// here; PlanObjPert takes it as given. It must be finite and ≥ 0, and 0
	// for logistic regression.
	Huber float64
	// Tolerance is γ, the public bound on the norm of the gradient (mapping)
	// of the average objective at the optimiser's result. 0 means
	// DefaultObjPertTolerance.
	Tolerance float64
	// OutputShare is the share w of the whitened squared sensitivity given
	// to the output perturbation: μ2² = w(μ1² + μ2² + μ3²). 0 means
	// ObjPertOutputShare; it must be in (0, 1).
	OutputShare float64
	// HessianShare is the share s of the whitened squared sensitivity given
	// to the noisy Hessian released for inference (logistic only; see
	// "Hessian release for inference"): μ3² = s(μ1² + μ2² + μ3²). 0 (the
	// default) releases no Hessian; otherwise w + s must be < 1.
	HessianShare float64
}

const (
	// ObjPertJacobianShare is the share of ε the default Λ lets the
	// Jacobian term ln(1 + β/(NΛ)) use (capped at 1 in absolute terms) for
	// linear regression, and for logistic regression at ε ≤ 0.5
	// (ObjPertJacobianShareAt). Measured on CPS1988 and SmokeBan
	// (docs/mechanisms.md).
	ObjPertJacobianShare = 0.1
	// ObjPertOutputShare is the default share of the whitened squared
	// sensitivity given to the output perturbation.
	ObjPertOutputShare = 0.01
	// DefaultObjPertTolerance is the default γ (average-objective units).
	DefaultObjPertTolerance = 1e-9
	// objPertJacobianCap caps the Jacobian term of the default Λ.
	objPertJacobianCap = 1.0
	// encTol is the tolerance checkRows accepts on ‖x‖² and |y|.
	encTol = 1e-9
)

// objPertHessian returns β, the bound on the eigenvalue of one row's loss
// Hessian (inflated by the encoding tolerance).
func objPertHessian(kind Kind) float64 {
	if kind == Logistic {
		return 0.25 * (1 + encTol)
	}
	return 2 * (1 + encTol)
}

// DefaultObjPertLambda returns the default public regularisation strength
// Λ = β/(N(e^{J*} − 1)), J* = min(s·ε, 1) with s = ObjPertJacobianShareAt
// (kind, ε). It depends only on public quantities (ε, N). Any Λ > 0 is
// covered by the proof (the plan charges J = ln(1 + β/(NΛ)) whatever Λ
// is); the share only trades the ridge's bias against the noise's budget.
func DefaultObjPertLambda(kind Kind, epsilon float64, n int64) float64 {
	j := math.Min(ObjPertJacobianShareAt(kind, epsilon)*epsilon, objPertJacobianCap)
	return objPertHessian(kind) / (float64(n) * math.Expm1(j))
}

// ObjPertJacobianShareAt is the share s of ε the default Λ gives the
// Jacobian term. Linear: ObjPertJacobianShare. Logistic: 0.1 at ε ≤ 0.5,
// 0.2 at ε ≥ 1 and linear in ln ε between (issue 26). The split trades,
// roughly, a ridge bias ∝ (β/J)²‖ω‖² against a noise term ∝ d/μ(ε − J)²,
// μ(·) the Gaussian-DP parameter at δ; μ grows more slowly than ε as ε
// grows (the analytic Gaussian curve), so the best share grows with ε.
// How much depends on ‖ω‖²/d, which is not public: the values were chosen
// by the sweep of docs/mechanisms.md (breast_cancer, 400 splits: share 0.1
// is 1.07× and 1.10× DP-GD's log-loss at ε = 1, 2, share 0.2 1.03× and
// 1.05×; at ε = 0.5 and on SmokeBan at ε = 0.1 the larger share loses).
func ObjPertJacobianShareAt(kind Kind, epsilon float64) float64 {
	if kind != Logistic || !(epsilon > 0.5) {
		return ObjPertJacobianShare
	}
	return ObjPertJacobianShare * (1 + math.Min(1, math.Log(epsilon/0.5)/math.Log(2)))
}

// DefaultObjPertRadius returns the default parameter bound of linear
// objpert for d encoded features, n rows (the public N the objective
// divides by; under a privacy unit the number of units) and budget ε:
//
//	R = (√d/2)·max(1, (nε/(RadiusRuleScale·d))^RadiusRuleExponent).
//
// With the schema's encoding x = u/√B, a coefficient of size c on a
// unit-scaled feature u_j is √B·c on x_j, so R = √d/2 allows an average
// |c| ≈ 1/2 per feature. A fixed R is inconsistent: when ‖ω*‖ > R the
// cap's bias stays whatever nε. The objective noise moves the minimiser
// by about 2(R + 2)/(μ1·n·λ) (λ an eigenvalue of the average Hessian, μ1
// ∝ ε), so a radius growing like (nε/d)^(1/4) keeps that term vanishing
// (∝ (nε)^(−3/4)) while the cap stops binding as nε/d grows; below
// nε/d = RadiusRuleScale (every table where the sweep found the noise,
// not the cap, to dominate) it is the old √d/2. It is a function of
// public quantities only; docs/mechanisms.md has the sweep.
func DefaultObjPertRadius(d int, n int64, epsilon float64) float64 {
	return radiusRule(d, n, epsilon)
}

// RadiusRuleScale and RadiusRuleExponent are the constants of the linear
// radius rule of DefaultObjPertRadius and DefaultNoisyGDRadius.
const (
	RadiusRuleScale    = 1000
	RadiusRuleExponent = 0.25
)

func radiusRule(d int, n int64, epsilon float64) float64 {
	base := math.Sqrt(float64(d)) / 2
	// No finite ε (noisygd given a noise multiplier instead): no growth.
	if !(epsilon > 0) || math.IsInf(epsilon, 0) || n < 1 || d < 1 {
		return base
	}
	return base * math.Max(1, math.Pow(float64(n)*epsilon/(RadiusRuleScale*float64(d)), RadiusRuleExponent))
}

// ObjPertPlan is the calibration of one objective-perturbation fit. Every
// field is a function of public quantities.
type ObjPertPlan struct {
	Kind    Kind
	N       int64
	D       int
	Epsilon float64
	// Delta is the target δ; AchievedDelta ≤ Delta is the bound computed
	// from the final scales.
	Delta, AchievedDelta float64
	// Lambda is Λ, Radius is R (linear with the squared loss only; 0
	// otherwise), Tolerance is γ.
	Lambda, Radius, Tolerance float64
	// Huber is η, the scale of the pseudo-Huber loss of a linear fit over
	// ℝ^d; 0 for the squared loss on the ball (and for logistic).
	Huber float64
	// Jacobian is J = ln(1 + β/(NΛ)), the bound on the log-determinant
	// term; the Gaussian terms get ε − J.
	Jacobian float64
	// GradSensitivity bounds ‖∇ℓ(ω; z) − ∇ℓ(ω; z')‖ (sum form): 2 for
	// logistic (the vertex x + x'), 4η for linear with the pseudo-Huber
	// loss (the vertex 2η(x + x')), 2(R + 2) for linear with the squared
	// loss (all times the encoding tolerance xb).
	GradSensitivity float64
	// Sigma1 is the standard deviation of each coordinate of b (sum form);
	// Grid1 its grid.
	Sigma1, Grid1 float64
	// OutputRadius is r = γ/Λ + (3/2)·Grid1·√d/(NΛ), the bound on the
	// distance of the optimiser's result from the exact minimiser with
	// continuous noise; the output perturbation has L2 sensitivity 2r.
	OutputRadius float64
	// Sigma2 is the standard deviation of the output noise.
	Sigma2 float64
	// Mu1 = GradSensitivity/Sigma1 and Mu2 = (2r + grid slack)/Sigma2 are
	// the whitened sensitivities of the two noises.
	Mu1, Mu2 float64
	// HessianSensitivity, Sigma3 and Mu3 describe the Hessian release for
	// inference (all 0 when HessianShare is 0): the L2 sensitivity of the
	// upper triangle of S(ω) = Σ_i σ(x_iᵀω)σ(−x_iᵀω)x_i x_iᵀ (sum form), the
	// standard deviation of its noise, and its whitened sensitivity
	// (grid slack and margin included).
	HessianSensitivity, Sigma3, Mu3 float64
	// RowsPerUnit is K under a privacy unit (PlanObjPertUnits: neighbours
	// differ in up to K rows, N = Units·K), 1 at row level. Jacobian is
	// then K·ln(1 + β/(NΛ)), GradSensitivity K·2(R + 2) (squared loss) or
	// K·4η (pseudo-Huber), and the Gaussian term's ρ a χ variable with
	// ChiDF degrees of freedom.
	RowsPerUnit int
	// ChiDF is the number of degrees of freedom of the χ variable of the
	// linear bound: 2·min(K, ⌈d/2⌉) (2, Rayleigh, at row level).
	ChiDF int
}

// objPertPlans caches plans (a function of public inputs only): the linear
// bound is a numerical integral inside a bisection, a few milliseconds
// that repeated fits (experiments, audits) need not pay again.
var objPertPlans = struct {
	sync.Mutex
	m map[objPertKey]ObjPertPlan
}{m: map[objPertKey]ObjPertPlan{}}

type objPertKey struct {
	rowsPerUnit int
	kind        Kind
	eps, delta  float64
	n           int64
	d           int
	opt         ObjPertOptions
}

// PlanObjPert computes the calibration of objective perturbation for a
// target (ε, δ), N rows and d features.
func PlanObjPert(kind Kind, epsilon, delta float64, n int64, d int, opt ObjPertOptions) (ObjPertPlan, error) {
	return planObjPertCached(kind, epsilon, delta, n, 1, d, opt)
}

// PlanObjPertUnits calibrates linear objective perturbation under a privacy
// unit: neighbouring datasets differ in all (at most k) kept rows of one of
// the public number of units, and the objective divides by the public
// N = units·k. The proof of this file extends (see "Privacy units"
// above): the Jacobian term becomes k·ln(1 + β/(NΛ)), the gradient
// difference k·2(R + 2) (squared loss; k·4η with the pseudo-Huber loss) in
// a span of dimension ≤ min(2k, d), and ρ a χ variable with 2·min(k, ⌈d/2⌉)
// degrees of freedom. Logistic regression is
// refused (its Gaussian term would be a maximum over 2^(2k) vertices).
// The default Λ keeps the row-level Jacobian share at units:
// Λ = β/(N·(e^{j/k} − 1)) with j the row-level share, so k·ln(1 + β/(NΛ)) = j.
func PlanObjPertUnits(kind Kind, epsilon, delta float64, units int64, k int, d int, opt ObjPertOptions) (ObjPertPlan, error) {
	if kind != Linear {
		return ObjPertPlan{}, fmt.Errorf("objpert: privacy unit: derived for linear regression only, not %s: the logistic bound's Gaussian term would be a maximum over the 2^(2K) vertices of a zonotope", kind)
	}
	if k < 1 || units < 1 {
		return ObjPertPlan{}, fmt.Errorf("objpert: privacy unit: need ≥ 1 unit and K ≥ 1 rows per unit, got %d units, K = %d", units, k)
	}
	if units > math.MaxInt64/int64(k) {
		return ObjPertPlan{}, fmt.Errorf("objpert: privacy unit: %d units × %d rows overflows", units, k)
	}
	return planObjPertCached(kind, epsilon, delta, units*int64(k), k, d, opt)
}

func planObjPertCached(kind Kind, epsilon, delta float64, n int64, k int, d int, opt ObjPertOptions) (ObjPertPlan, error) {
	key := objPertKey{k, kind, epsilon, delta, n, d, opt}
	objPertPlans.Lock()
	p, ok := objPertPlans.m[key]
	objPertPlans.Unlock()
	if ok {
		return p, nil
	}
	p, err := planObjPert(kind, epsilon, delta, n, k, d, opt)
	if err != nil {
		return ObjPertPlan{}, err
	}
	objPertPlans.Lock()
	if len(objPertPlans.m) >= 256 {
		clear(objPertPlans.m)
	}
	objPertPlans.m[key] = p
	objPertPlans.Unlock()
	return p, nil
}

func planObjPert(kind Kind, epsilon, delta float64, n int64, k int, d int, opt ObjPertOptions) (ObjPertPlan, error) {
	if !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return ObjPertPlan{}, fmt.Errorf("objpert: ε must be finite and > 0, got %v", epsilon)
	}
	if delta == 0 {
		return ObjPertPlan{}, errors.New("objpert is (ε, δ)-DP; give --delta")
	}
	if !(delta > 0 && delta < 1) {
		return ObjPertPlan{}, fmt.Errorf("objpert: δ must be in (0, 1), got %v", delta)
	}
	if n < 1 || d < 1 {
		return ObjPertPlan{}, fmt.Errorf("objpert: need N ≥ 1 and d ≥ 1, got N=%d d=%d", n, d)
	}
	if math.IsNaN(opt.Lambda) || math.IsInf(opt.Lambda, 0) || opt.Lambda < 0 {
		return ObjPertPlan{}, fmt.Errorf("objpert: regularisation Λ must be finite and ≥ 0, got %v", opt.Lambda)
	}
	if math.IsNaN(opt.Radius) || math.IsInf(opt.Radius, 0) || opt.Radius < 0 {
		return ObjPertPlan{}, fmt.Errorf("objpert: radius R must be finite and > 0, got %v", opt.Radius)
	}
	if math.IsNaN(opt.Huber) || math.IsInf(opt.Huber, 0) || opt.Huber < 0 {
		return ObjPertPlan{}, fmt.Errorf("objpert: Huber scale η must be finite and ≥ 0 (0: the squared loss), got %v", opt.Huber)
	}
	if opt.Huber > 0 && kind != Linear {
		return ObjPertPlan{}, fmt.Errorf("objpert: the Huber loss is for linear regression, not %s", kind)
	}
	if math.IsNaN(opt.Tolerance) || math.IsInf(opt.Tolerance, 0) || opt.Tolerance < 0 {
		return ObjPertPlan{}, fmt.Errorf("objpert: tolerance γ must be finite and > 0, got %v", opt.Tolerance)
	}
	if math.IsNaN(opt.OutputShare) || opt.OutputShare < 0 || opt.OutputShare >= 1 {
		return ObjPertPlan{}, fmt.Errorf("objpert: output share must be in (0, 1), got %v", opt.OutputShare)
	}
	if kind != Logistic && kind != Linear {
		return ObjPertPlan{}, fmt.Errorf("objpert: model %q not supported (want linear or logistic)", kind)
	}
	if math.IsNaN(opt.HessianShare) || opt.HessianShare < 0 || opt.HessianShare >= 1 {
		return ObjPertPlan{}, fmt.Errorf("objpert: Hessian share must be in [0, 1), got %v", opt.HessianShare)
	}
	if opt.HessianShare > 0 && kind != Logistic {
		return ObjPertPlan{}, errors.New("objpert: the Hessian release for inference is implemented for logistic regression only")
	}
	if k < 1 || (k > 1 && kind != Linear) {
		return ObjPertPlan{}, fmt.Errorf("objpert: K = %d rows per unit: derived for linear regression only", k)
	}
	K := float64(k)
	p := ObjPertPlan{Kind: kind, N: n, D: d, Epsilon: epsilon, Delta: delta,
		Lambda: opt.Lambda, Tolerance: opt.Tolerance, Huber: opt.Huber, RowsPerUnit: k, ChiDF: 2 * min(k, (d+1)/2)}
	if k == 1 {
		p.ChiDF = 2 // the row-level bound's Rayleigh variable
	}
	if p.Lambda == 0 {
		p.Lambda = DefaultObjPertLambda(kind, epsilon, n)
		if k > 1 {
			// K·ln(1 + β/(NΛ)) equals the row-level share j.
			j := math.Min(ObjPertJacobianShare*epsilon, objPertJacobianCap)
			p.Lambda = objPertHessian(kind) / (float64(n) * math.Expm1(j/K))
		}
	}
	if p.Tolerance == 0 {
		p.Tolerance = DefaultObjPertTolerance
	}
	share := opt.OutputShare
	if share == 0 {
		share = ObjPertOutputShare
	}
	hshare := opt.HessianShare
	if !(share+hshare < 1) {
		return ObjPertPlan{}, fmt.Errorf("objpert: output share %v plus Hessian share %v must be < 1", share, hshare)
	}
	N := float64(n)
	if !(p.Lambda > 0) || math.IsInf(N*p.Lambda, 0) {
		return ObjPertPlan{}, fmt.Errorf("objpert: regularisation Λ = %v unusable", p.Lambda)
	}
	// J rounded up (log1p is accurate to an ulp or two).
	// Under a unit, K rank-one Hessians on each side: the determinant
	// lemma applied K times gives K·ln(1 + β/(NΛ)).
	p.Jacobian = K * math.Log1p(objPertHessian(kind)/(N*p.Lambda)) * (1 + 1e-14)
	if p.Jacobian >= 0.99*epsilon {
		lmin := objPertHessian(kind) / (N * math.Expm1(0.5*epsilon/K))
		return ObjPertPlan{}, fmt.Errorf("objpert: Λ = %v is too small for ε = %v: the Jacobian term ln(1 + β/(NΛ)) = %.4g leaves no budget for the noise; use Λ ≥ %.3g (that spends ε/2 on it) or 0 for the default",
			p.Lambda, epsilon, p.Jacobian, lmin)
	}
	xb := math.Sqrt(1+encTol) * (1 + 1e-15) // bound on ‖x‖
	switch {
	case kind == Logistic:
		p.GradSensitivity = 2 * xb
	case p.Huber > 0:
		// Δ(v) = ψ(r)x − ψ(r')x' with |ψ| ≤ 2η: the parallelogram with
		// vertices ±2η(x ± x'), of norm ≤ 2η·2xb (step 2, "The
		// pseudo-Huber loss"); K rows: ≤ K·4η·xb (each of the ≤ 2K
		// gradients has norm ≤ 2η·xb).
		p.GradSensitivity = K * 4 * p.Huber * xb * (1 + 1e-15)
	default:
		p.Radius = opt.Radius
		if p.Radius == 0 {
			p.Radius = DefaultObjPertRadius(d, n/int64(k), epsilon)
		}
		if !(p.Radius > 0) {
			return ObjPertPlan{}, fmt.Errorf("objpert: radius R must be > 0, got %v", p.Radius)
		}
		yb := 1 + encTol
		// K rows paired (≤ D each) or against no row (2(1 + R) ≤ D).
		p.GradSensitivity = K * (4*yb*xb + 2*xb*xb*p.Radius) * (1 + 1e-15)
	}
	m3 := d * (d + 1) / 2 // entries of the Hessian's upper triangle
	if hshare > 0 {
		p.HessianSensitivity = objPertHessianSensitivity(n, d)
	}
	// Solve for μ1 with μ2 = κμ1, κ² = w/(1 − w − s), and μ3 = κ3μ1,
	// κ3² = s/(1 − w − s): the largest μ1 whose bound meets δ. The output
	// and Hessian releases enter the bound as one Gaussian loss of
	// √(μ2² + μ3²) (step 4 and "Hessian release for inference").
	kappa := math.Sqrt(share / (1 - share - hshare))
	kappa3 := math.Sqrt(hshare / (1 - share - hshare))
	ok := func(mu1 float64) bool { return p.deltaFor(epsilon, mu1, math.Hypot(kappa*mu1, kappa3*mu1)) <= delta }
	lo, hi := 0.0, 1.0
	for ok(hi) {
		lo, hi = hi, 2*hi
		if hi > 1e12 {
			return ObjPertPlan{}, fmt.Errorf("objpert: calibration failed for ε = %v, δ = %v", epsilon, delta)
		}
	}
	for i := 0; i < 200 && hi-lo > 1e-13*hi; i++ {
		if mid := lo + (hi-lo)/2; ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	if !(lo > 0) {
		return ObjPertPlan{}, fmt.Errorf("objpert: no noise meets (ε = %v, δ = %v)", epsilon, delta)
	}
	for inflate := 1.0; inflate < 1.01; inflate *= 1 + 1e-9 {
		mu1 := lo / inflate
		p.Sigma1 = math.Nextafter(p.GradSensitivity/mu1, math.Inf(1))
		g1, err := noise.GaussianGrid(p.Sigma1, d)
		if err != nil {
			return ObjPertPlan{}, fmt.Errorf("objpert: %w", err)
		}
		p.Grid1 = g1
		u1 := 1.5 * g1 * math.Sqrt(float64(d))
		p.OutputRadius = (p.Tolerance/p.Lambda + u1/(N*p.Lambda)) * (1 + 1e-14)
		sens2 := 2 * p.OutputRadius
		mu2 := kappa * mu1
		if p.Sigma2, err = gaussianStdAt(sens2, mu2, d); err != nil {
			return ObjPertPlan{}, fmt.Errorf("objpert: ε = %v: %w", epsilon, err)
		}
		p.Mu1 = p.GradSensitivity / p.Sigma1
		// The output noise is a discrete Gaussian on a grid: its μ includes
		// the grid slack and the margin over the continuous curve
		// (noise.GaussianCalibrationSensitivity).
		p.Mu2 = noise.GaussianCalibrationSensitivity(sens2, p.Sigma2, d) / p.Sigma2
		if hshare > 0 {
			mu3 := kappa3 * mu1
			if p.Sigma3, err = gaussianStdAt(p.HessianSensitivity, mu3, m3); err != nil {
				return ObjPertPlan{}, fmt.Errorf("objpert: Hessian: ε = %v: %w", epsilon, err)
			}
			p.Mu3 = noise.GaussianCalibrationSensitivity(p.HessianSensitivity, p.Sigma3, m3) / p.Sigma3
		}
		if p.AchievedDelta = p.DeltaAt(epsilon); p.AchievedDelta <= delta {
			return p, nil
		}
	}
	return ObjPertPlan{}, fmt.Errorf("objpert: calibration did not meet δ = %v", delta)
}

// DeltaAt returns the bound on δ(ε) of the mechanism with this plan's
// scales (Sigma1, Sigma2, Sigma3, Jacobian, GradSensitivity, OutputRadius,
// HessianSensitivity): the formula of step 4 of the proof, with the output
// and Hessian releases as one Gaussian loss of √(μ2² + μ3²). It is 1 for
// ε ≤ Jacobian.
func (p ObjPertPlan) DeltaAt(epsilon float64) float64 {
	return p.deltaFor(epsilon, p.GradSensitivity/p.Sigma1, math.Hypot(p.Mu2, p.Mu3))
}

// deltaFor is the bound of step 4 for whitened sensitivities μ1 (the
// objective noise, GradSensitivity/σ1) and μ2 (the output noise).
func (p ObjPertPlan) deltaFor(epsilon, mu1, mu2 float64) float64 {
	e := epsilon - p.Jacobian
	if !(e > 0) {
		return 1
	}
	if p.Kind == Logistic || (p.Huber > 0 && p.RowsPerUnit == 1) {
		// μ1 is for the vertex of norm 2·xb (pseudo-Huber: 2η·2xb); the
		// other vertex has ≤ √2·xb (2η·√2xb).
		return math.Min(1, 2*gaussHockey(e, math.Hypot(mu1, mu2))+2*gaussHockey(e, math.Hypot(mu1/math.Sqrt2, mu2)))
	}
	return chiHockey(e, mu1, mu2, p.ChiDF)
}

// gaussHockey returns h(c) = E[(1 − e^{c−L})₊] for the Gaussian privacy
// loss L ~ N(μ²/2, μ²), for every real c: the analytic Gaussian δ(c) for
// c ≥ 0 and, for c < 0, 1 − e^c + e^c·δ(−c) (the hockey-stick divergence
// of order e^c < 1, by H_α(P‖Q) = 1 − α + α·H_{1/α}(Q‖P) and the symmetry
// of the Gaussian pair).
func gaussHockey(c, mu float64) float64 {
	if !(mu > 0) {
		return math.Max(0, -math.Expm1(c))
	}
	if c >= 0 {
		d, err := accounting.AnalyticGaussianDelta(c, 1, mu)
		if err != nil {
			return 1
		}
		return d
	}
	d, err := accounting.AnalyticGaussianDelta(-c, 1, mu)
	if err != nil {
		return 1
	}
	return math.Min(1, -math.Expm1(c)+math.Exp(c)*d)
}

// rayleighStep is the width of the ρ-cells of rayleighHockey.
const rayleighStep = 0.002

// rayleighHockey returns an upper bound on E_ρ[h(e − μ1ρ − μ1²/2)] for ρ
// Rayleigh (density ρe^{−ρ²/2}) and h = gaussHockey(·, μ2), by an upper
// Riemann sum: the integrand's h-factor increases in ρ, so each cell
// [a, b] contributes h at b times its exact Rayleigh mass
// e^{−a²/2} − e^{−b²/2}. The first cell is [0, ρ0], with ρ0 where the
// argument of h falls to μ2(μ2/2 + 40) (h is below 1e-340 before it); the
// others have width 0.002. The sum stops once the remaining mass is below
// 1e-6 of the sum so far and then adds that whole mass (h ≤ 1).
func rayleighHockey(e, mu1, mu2 float64) float64 { return chiHockey(e, mu1, mu2, 2) }

// chiTail returns P(ρ ≥ a) for ρ a χ variable with m (even) degrees of
// freedom: e^{−a²/2}·Σ_{j<m/2} (a²/2)^j/j! (e^{−a²/2} for m = 2).
func chiTail(a float64, m int) float64 {
	x := a * a / 2
	term, sum := 1.0, 1.0
	for j := 1; j < m/2; j++ {
		term *= x / float64(j)
		sum += term
	}
	return math.Min(1, math.Exp(-x)*sum)
}

// chiHockey is rayleighHockey for ρ a χ variable with m (even) degrees of
// freedom (m = 2: Rayleigh), the same upper Riemann sum with the exact
// cell masses chiTail(a) − chiTail(b). Under a privacy unit of K rows the
// gradient difference spans up to min(2K, d) dimensions and m = 2·min(K,
// ⌈d/2⌉) ≥ that: a χ variable with more degrees of freedom is
// stochastically larger and the integrand increases in ρ, so the bound
// holds.
func chiHockey(e, mu1, mu2 float64, m int) float64 {
	tailAt := func(a float64) float64 { return chiTail(a, m) }
	a := math.Max(0, (e-mu1*mu1/2-mu2*(mu2/2+40))/mu1)
	sum := 0.0
	if a > 0 {
		sum = gaussHockey(e-mu1*a-mu1*mu1/2, mu2) * (1 - tailAt(a))
	}
	for i := 1; ; i++ {
		b := a + float64(i)*rayleighStep
		lo := a + float64(i-1)*rayleighStep
		ta, tb := tailAt(lo), tailAt(b)
		sum += gaussHockey(e-mu1*b-mu1*mu1/2, mu2) * (ta - tb)
		if tb <= 1e-6*sum || tb < 1e-300 || b > 60 {
			sum += tb
			break
		}
	}
	return math.Min(1, sum*(1+1e-12))
}

// objPert is objective perturbation.
type objPert struct{}

func (objPert) Name() string { return "objpert" }

// NeedsRows is true for both models: logistic and the linear Huber loss
// (the default) are fitted from the rows. The linear squared loss
// (Config.Huber < 0) reads only the statistics, but NeedsRows sees only the
// model, so callers that have only statistics (Beam, --stats) refuse
// objpert.
func (objPert) NeedsRows(k Kind) bool { return k == Logistic || k == Linear }

// needsRowsFor: the squared loss fits a linear model from the statistics.
func (objPert) needsRowsFor(cfg Config) bool { return cfg.Kind == Logistic || usesHuber(cfg) }

func (objPert) rowsHint(k Kind) string {
	if k == Linear {
		return " (its linear default, the pseudo-Huber loss, reads the rows; --huber -1 fits the squared loss from the statistics)"
	}
	return ""
}
func (objPert) Private() bool { return true }

// errObjPertTolerance is the (data-independent) failure of the optimiser
// check.
var errObjPertTolerance = errors.New("objpert: the optimiser did not reach the public tolerance γ; nothing was released")

func (objPert) Fit(ctx context.Context, data Data, cfg Config) (*Result, error) {
	if cfg.Kind == Robust {
		return nil, errors.New("objpert: robust regression is not supported (use --mechanism irls)")
	}
	unit, isUnit := unitOf(data.Stats)
	if isUnit && cfg.Kind != Linear {
		// Not derived for logistic regression: see UnitSupported and
		// "Privacy units" above.
		return nil, fmt.Errorf("objpert: privacy unit %q: %w", unit.Column, UnitSupported(objPert{}, cfg.Kind))
	}
	// linear: PlanObjPertUnits; the Huber loss reads the at most K kept
	// rows per unit (the squared loss only the statistics).
	cfg.unitAware, cfg.unitRows = true, cfg.Kind == Linear
	if err := cfg.validate(data, true); err != nil {
		return nil, err
	}
	if cfg.Delta == 0 {
		return nil, errors.New("objpert is (ε, δ)-DP; give --delta")
	}
	k := data.Stats.K()
	d := k - 1
	n := data.Stats.N()
	opt := cfg.ObjPert
	if opt.Huber != 0 {
		return nil, fmt.Errorf("objpert: ObjPertOptions.Huber = %v is PlanObjPert's input; Fit reads Config.Huber (--huber)", opt.Huber)
	}
	if err := checkHuberKind(cfg); err != nil {
		return nil, fmt.Errorf("objpert: %w", err)
	}
	// η by Config.Huber's rule, at the public N (units under a unit).
	opt.Huber = huberScale(cfg, sensitivityN(data.Stats), d)
	if opt.Huber > 0 && opt.Radius > 0 {
		return nil, fmt.Errorf("objpert: --radius %v is the parameter ball of the squared loss; the pseudo-Huber loss (η = %s, the default for linear models) is minimised over all of ℝ^d: give --huber -1 to fit the squared loss on that ball", opt.Radius, fmtG(opt.Huber))
	}
	var plan ObjPertPlan
	var err error
	if isUnit {
		plan, err = PlanObjPertUnits(cfg.Kind, cfg.Epsilon, cfg.Delta, unit.Units, unit.MaxRows, d, opt)
	} else {
		plan, err = PlanObjPert(cfg.Kind, cfg.Epsilon, cfg.Delta, n, d, opt)
	}
	if err != nil {
		return nil, err
	}
	var rows []float64
	if cfg.Kind == Logistic || plan.Huber > 0 {
		if rows, err = checkRows(data, cfg.Kind); err != nil {
			if plan.Huber > 0 {
				return nil, fmt.Errorf("objpert: the Huber loss (η = %s) is fitted from the rows (--huber -1: the squared loss, from the statistics): %w", fmtG(plan.Huber), err)
			}
			return nil, fmt.Errorf("objpert: %w", err)
		}
	}
	return objPertRelease(ctx, data, rows, cfg, plan)
}

// objPertRelease runs the mechanism with a plan: draw b, solve, check the
// tolerance, add the output noise.
func objPertRelease(ctx context.Context, data Data, rows []float64, cfg Config, plan ObjPertPlan) (*Result, error) {
	b := make([]float64, plan.D)
	if err := noise.AddGaussian(cfg.Source, b, plan.Sigma1); err != nil {
		return nil, fmt.Errorf("objpert: draw the objective noise: %w", err)
	}
	w, err := objPertSolve(ctx, data, rows, plan, b)
	if err != nil {
		return nil, err
	}
	if err := noise.AddGaussian(cfg.Source, w, plan.Sigma2); err != nil {
		// The inner message may quote a coefficient: do not pass it on.
		return nil, errors.New("objpert: the output perturbation could not be applied (coefficients too large for the noise grid); nothing was released")
	}
	res := &Result{Coef: w, Privacy: plan.report(cfg)}
	res.Privacy.Neighbouring = neighbouring(data.Stats)
	if plan.Sigma3 > 0 {
		h := objPertHessianStat(rows, plan.D+1, w)
		if err := noise.AddGaussianSymmetric(cfg.Source, h, plan.D, plan.Sigma3); err != nil {
			return nil, errors.New("objpert: the Hessian release could not be applied; nothing was released")
		}
		res.ObjPert = &ObjPertRelease{Plan: plan, Coef: append([]float64(nil), w...), Hessian: h}
	}
	return res, nil
}

// objPertHessianSensitivity returns the L2 sensitivity of the computed
// upper triangle of S(ω) = Σ_i w_i x_i x_iᵀ, w_i = min(¼, σ(z_i)σ(−z_i)),
// z_i = x_iᵀω at a public ω (objPertHessianStat), for replace-one
// neighbours with ‖x‖² ≤ xb² = 1 + 1e-9:
//
//   - exact sums of the computed terms: S(D) − S(D') = A − B with A = w x xᵀ
//     and B = w'x'x'ᵀ positive semi-definite, so ‖A − B‖_F² = ‖A‖_F² +
//     ‖B‖_F² − 2tr(AB) ≤ ‖A‖_F² + ‖B‖_F² ≤ 2(xb²/4)², and the upper
//     triangle's L2 norm is at most the Frobenius norm (off-diagonal
//     entries count twice in the latter): √2·xb²/4, times 1 + 1e-12 for the
//     rounding of each term (w·x_a·x_b: below 4u relative);
//   - the compensated sum of each entry is within 2u·Σ_i|t_i| + N·u² ≤
//     u·N/2 + N·u² of the exact sum of its terms (|t_i| ≤ ¼), so each of
//     S(D) and S(D') moves by at most √m·1.1·(u·N/2 + N·u²) in L2 over the m
//     = d(d+1)/2 entries; twice that is added.
func objPertHessianSensitivity(n int64, d int) float64 {
	const u = 0x1p-53
	N := float64(n)
	m := float64(d * (d + 1) / 2)
	xb2 := 1 + encTol
	return (math.Sqrt2*xb2/4*(1+1e-12) + 2*math.Sqrt(m)*1.1*(u*N/2+N*u*u)) * (1 + 1e-15)
}

// objPertHessianStat returns S(ω) = Σ_i w_i x_i x_iᵀ (row-major d×d, sum
// form) with w_i = min(¼, σ(x_iᵀω)σ(−x_iᵀω)), each entry summed with
// compensation: the logistic loss Hessian at the public ω.
func objPertHessianStat(rows []float64, k int, w []float64) []float64 {
	d := k - 1
	n := len(rows) / k
	acc := make([]compSum, d*d)
	for i := 0; i < n; i++ {
		x := rows[i*k : i*k+d]
		z := dot(x, w)
		c := math.Min(0.25, sigmoid(z)*sigmoid(-z))
		for a := 0; a < d; a++ {
			for b := a; b < d; b++ {
				acc[a*d+b].add(c * x[a] * x[b])
			}
		}
	}
	h := make([]float64, d*d)
	for a := 0; a < d; a++ {
		for b := a; b < d; b++ {
			v := acc[a*d+b].sum()
			h[a*d+b], h[b*d+a] = v, v
		}
	}
	return h
}

// ObjPertRelease is what a logistic objpert fit with a Hessian share
// releases beyond its coefficients, for inference from released values:
// the plan (public), the released coefficients ω and the noisy Hessian
// S̃ = S(ω) + Z (sum form, row-major d×d, symmetric; Z Gaussian with
// standard deviation Plan.Sigma3 on the upper triangle).
type ObjPertRelease struct {
	Plan    ObjPertPlan
	Coef    []float64
	Hessian []float64
}

// ObjPertDeridge returns the one-step de-ridged coefficients
// β = ω + Λ·H⁻¹ω with H = Σ_j max(λ_j, floor)q_jq_jᵀ, the eigenvalues λ_j
// of the average Hessian hess/N (hess row-major d×d, sum form) floored at
// floor > 0. ω minimises the average objective (1/N)L(ω) + (Λ/2)‖ω‖² (no
// noise), so ∇L(ω)/N = −Λω, and one Newton step on the unpenalised
// (1/N)L from ω is ω − H⁻¹∇L(ω)/N = ω + ΛH⁻¹ω: the maximum-likelihood
// estimate up to O(‖ΛH⁻¹ω‖²) (the exact MLE's residual after a Newton
// step). It is post-processing of released values.
func ObjPertDeridge(coef, hess []float64, n int64, lambda, floor float64) ([]float64, error) {
	d := len(coef)
	if len(hess) != d*d || n < 1 || !(floor > 0) || !(lambda >= 0) {
		return nil, fmt.Errorf("objpert: de-ridge needs a %d×%d Hessian, N ≥ 1, floor > 0 and Λ ≥ 0", d, d)
	}
	h := mat.NewSymDense(d, nil)
	for a := 0; a < d; a++ {
		for b := a; b < d; b++ {
			h.SetSym(a, b, (hess[a*d+b]+hess[b*d+a])/(2*float64(n)))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(h, true) {
		return nil, errors.New("objpert: de-ridge: eigendecomposition did not converge")
	}
	vals := eig.Values(nil)
	var q mat.Dense
	eig.VectorsTo(&q)
	out := append([]float64(nil), coef...)
	for j, l := range vals {
		c := 0.0
		for i := 0; i < d; i++ {
			c += q.At(i, j) * coef[i]
		}
		c *= lambda / math.Max(l, floor)
		for i := 0; i < d; i++ {
			out[i] += c * q.At(i, j)
		}
	}
	return out, nil
}

// objPertSolve returns the approximate minimiser ω̃ of the perturbed
// objective for the noise b (sum form), checked against the plan's
// tolerance γ; errObjPertTolerance (a fixed message) if the check fails.
// It is deterministic in (data, b).
func objPertSolve(ctx context.Context, data Data, rows []float64, plan ObjPertPlan, b []float64) ([]float64, error) {
	k := plan.D + 1
	if plan.Kind == Logistic || plan.Huber > 0 {
		loss := plan.objPertLoss()
		w, _, err := minimiseLoss(ctx, loss, rows, k, plan.Lambda, b)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, errObjPertTolerance
		}
		w = polishLoss(loss, rows, k, plan.Lambda, b, w, plan.Tolerance)
		if g, bound := lossGradCheck(loss, rows, k, plan.Lambda, b, w); !(g+bound <= plan.Tolerance) {
			return nil, errObjPertTolerance
		}
		return w, nil
	}
	w, err := minimiseKST(data.Stats, plan.Lambda, plan.Radius, b)
	if err != nil {
		return nil, errObjPertTolerance
	}
	if g, bound := linearGradMapCheck(data.Stats, plan.Lambda, plan.Radius, b, w); !(g+bound <= plan.Tolerance) {
		return nil, errObjPertTolerance
	}
	return w, nil
}

// report is the privacy report: every figure in it is a function of the
// public parameters (ε, δ, N, d, Λ, R or η, γ), none of the data.
func (p ObjPertPlan) report(cfg Config) report.Privacy {
	r := report.Privacy{
		Private:      true,
		Epsilon:      p.Epsilon,
		Delta:        p.Delta,
		Neighbouring: report.Neighbouring,
		Releases: []report.Release{{
			Name:        "noise vector b of the objective's linear term (sum form; not released itself, only the perturbed minimiser is)",
			Entries:     p.D,
			Norm:        "L2",
			Sensitivity: p.GradSensitivity,
			Noise:       "gaussian",
			Scale:       p.Sigma1,
		}, {
			Name:        "coefficients ω (output perturbation covering the optimiser tolerance γ/Λ and the grid of b)",
			Entries:     p.D,
			Norm:        "L2",
			Sensitivity: 2 * p.OutputRadius,
			Noise:       "gaussian",
			Scale:       p.Sigma2,
		}},
	}
	if p.Sigma3 > 0 {
		r.Releases = append(r.Releases, report.Release{
			Name:        "Hessian Σσ(xᵀω)σ(−xᵀω)xxᵀ at the released ω, upper triangle (for confidence intervals)",
			Entries:     p.D * (p.D + 1) / 2,
			Norm:        "L2",
			Sensitivity: p.HessianSensitivity,
			Noise:       "gaussian",
			Scale:       p.Sigma3,
		})
	}
	r.Randomness, r.Insecure = randomness(cfg.Source)
	objective := fmt.Sprintf("objective (1/N)[Σℓ + bᵀω] + (Λ/2)‖ω‖² with Λ = %s, minimised until its gradient norm is ≤ γ = %s (a public tolerance; the value reached is not reported)",
		fmtG(p.Lambda), fmtG(p.Tolerance))
	if p.Kind == Logistic {
		r.Mechanism = "objpert (approximate minima perturbation, Iyengar et al. 2019: Gaussian objective perturbation of regularised logistic regression, then Gaussian output perturbation)"
		r.Accountant = fmt.Sprintf("exact-minimiser density argument with the Jacobian term ln(1 + β/(NΛ)) = %s (β = 1/4), objective and output noise composed as Gaussian losses: δ ≤ 2δ_G(ε − J; √(μ1² + μ2²)) + 2δ_G(ε − J; √(μ1²/2 + μ2²)) with μ1 = %s, μ2 = %s (analytic Gaussian δ_G, Balle & Wang 2018); achieved δ = %s",
			report.Up(p.Jacobian), report.Up(p.Mu1), report.Up(p.Mu2), report.Up(p.AchievedDelta))
		if p.Sigma3 > 0 {
			r.Accountant = fmt.Sprintf("exact-minimiser density argument with the Jacobian term ln(1 + β/(NΛ)) = %s (β = 1/4), objective noise, output noise and the Hessian release composed as Gaussian losses: δ ≤ 2δ_G(ε − J; √(μ1² + μ2² + μ3²)) + 2δ_G(ε − J; √(μ1²/2 + μ2² + μ3²)) with μ1 = %s, μ2 = %s, μ3 = %s (analytic Gaussian δ_G, Balle & Wang 2018); achieved δ = %s",
				report.Up(p.Jacobian), report.Up(p.Mu1), report.Up(p.Mu2), report.Up(p.Mu3), report.Up(p.AchievedDelta))
		}
	} else if p.Huber > 0 {
		r.Mechanism = fmt.Sprintf("objpert (approximate minima perturbation, Iyengar et al. 2019: Gaussian objective perturbation of the pseudo-Huber loss 2η²(√(1 + (r/η)²) − 1) with η = %s over all of ℝ^d, no parameter ball, then Gaussian output perturbation; estimand: the Huber M-estimator, which equals least squares' coefficients when the errors are symmetric about the regression line)", fmtG(p.Huber))
		r.Accountant = fmt.Sprintf("exact-minimiser density argument with the Jacobian term ln(1 + β/(NΛ)) = %s (β = 2), gradient difference ψ(r)x − ψ(r')x' (|ψ| ≤ 2η) in the parallelogram with vertices ±2η(x ± x'), of norm ≤ 4η = %s, objective and output noise composed as Gaussian losses: δ ≤ 2δ_G(ε − J; √(μ1² + μ2²)) + 2δ_G(ε − J; √(μ1²/2 + μ2²)) with μ1 = 4η/σ1 = %s, μ2 = %s (analytic Gaussian δ_G, Balle & Wang 2018); achieved δ = %s",
			report.Up(p.Jacobian), report.Up(p.GradSensitivity), report.Up(p.Mu1), report.Up(p.Mu2), report.Up(p.AchievedDelta))
		if p.RowsPerUnit > 1 {
			r.Accountant = fmt.Sprintf("exact-minimiser density argument for K = %d rows of one unit: Jacobian term K·ln(1 + β/(NΛ)) = %s (β = 2), gradient difference ≤ K·4η = %s (each row's gradient ψ(r)x has norm ≤ 2η) in a span of dimension ≤ min(2K, d), objective and output noise composed: δ ≤ E_ρ[δ_G(ε − J − μ1ρ − μ1²/2; μ2)] over ρ a χ variable with %d degrees of freedom, with μ1 = %s, μ2 = %s (analytic Gaussian δ_G, Balle & Wang 2018); achieved δ = %s",
				p.RowsPerUnit, report.Up(p.Jacobian), report.Up(p.GradSensitivity), p.ChiDF, report.Up(p.Mu1), report.Up(p.Mu2), report.Up(p.AchievedDelta))
		}
	} else {
		r.Mechanism = fmt.Sprintf("objpert (approximate minima perturbation, Iyengar et al. 2019, on the ball ‖ω‖ ≤ %s: Gaussian objective perturbation of the squared loss, then Gaussian output perturbation)", fmtG(p.Radius))
		r.Accountant = fmt.Sprintf("exact-minimiser density argument with the Jacobian term ln(1 + β/(NΛ)) = %s (β = 2), gradient difference ≤ 2(R+2) in a 2-dimensional span, objective and output noise composed: δ ≤ E_ρ[δ_G(ε − J − μ1ρ − μ1²/2; μ2)] over ρ Rayleigh, with μ1 = %s, μ2 = %s (analytic Gaussian δ_G, Balle & Wang 2018); achieved δ = %s",
			report.Up(p.Jacobian), report.Up(p.Mu1), report.Up(p.Mu2), report.Up(p.AchievedDelta))
		if p.RowsPerUnit > 1 {
			r.Accountant = fmt.Sprintf("exact-minimiser density argument for K = %d rows of one unit: Jacobian term K·ln(1 + β/(NΛ)) = %s (β = 2), gradient difference ≤ K·2(R+2) in a span of dimension ≤ min(2K, d), objective and output noise composed: δ ≤ E_ρ[δ_G(ε − J − μ1ρ − μ1²/2; μ2)] over ρ a χ variable with %d degrees of freedom, with μ1 = %s, μ2 = %s (analytic Gaussian δ_G, Balle & Wang 2018); achieved δ = %s",
				p.RowsPerUnit, report.Up(p.Jacobian), p.ChiDF, report.Up(p.Mu1), report.Up(p.Mu2), report.Up(p.AchievedDelta))
		}
	}
	r.Notes = append(r.Notes, objective)
	if p.Kind == Linear && p.Huber == 0 {
		r.Notes = append(r.Notes, "the radius R is part of the mechanism (the minimiser is constrained to the ball), not post-processing")
	}
	return r
}

// rowLoss is one row's loss f(a; y) as a function of the linear predictor
// a = xᵀω: value f, derivative ∂f/∂a and curvature ∂²f/∂a² (≥ 0: every
// loss here is convex in a). The row's gradient is f'(a; y)·x and its
// Hessian f”(a; y)·xxᵀ, rank one. logisticLoss and pseudoHuberLoss are
// the two losses of objpert; lossNewton, polishLoss, lossGrad and
// lossGradCheck take one.
type rowLoss interface {
	value(a, y float64) float64
	deriv(a, y float64) float64
	curv(a, y float64) float64
}

// logisticLoss is f(a; y) = log(1 + e^{−ta}), t = 2y − 1 (y ∈ {0, 1}):
// f' = −tσ(−ta) ∈ [−1, 1], f” = σ(ta)σ(−ta) ≤ ¼. Written without
// cancellation (log(1+e^a) − ya = log(1+e^{−ta})).
type logisticLoss struct{}

func (logisticLoss) value(a, y float64) float64 { return softplus(-(2*y - 1) * a) }
func (logisticLoss) deriv(a, y float64) float64 {
	t := 2*y - 1
	return -t * sigmoid(-(t * a))
}
func (logisticLoss) curv(a, y float64) float64 {
	z := (2*y - 1) * a
	return sigmoid(z) * sigmoid(-z)
}

// pseudoHuberLoss is the pseudo-Huber loss of the residual r = y − a with
// scale η (huber.go): f = 2η²(√(1 + (r/η)²) − 1), f' = −ψ(r) with
// ψ(r) = 2r/√(1 + (r/η)²) (|ψ| < 2η), f” = ψ'(r) = 2(1 + (r/η)²)^(−3/2)
// ∈ (0, 2]. The value is computed as 2r²/(√(1 + q²) + 1), q = r/η, which
// equals 2η²(√(1 + q²) − 1) without its cancellation at small q.
type pseudoHuberLoss struct{ eta float64 }

func (l pseudoHuberLoss) value(a, y float64) float64 {
	r := y - a
	q := r / l.eta
	return 2 * r * r / (math.Sqrt(1+q*q) + 1)
}
func (l pseudoHuberLoss) deriv(a, y float64) float64 { return -l.psi(y - a) }
func (l pseudoHuberLoss) curv(a, y float64) float64 {
	q := (y - a) / l.eta
	s := 1 + q*q
	return 2 / (s * math.Sqrt(s))
}

// psi is ψ(r) = 2r/√(1 + (r/η)²), the derivative of the loss in the
// residual; |ψ| ≤ 2η (and ≤ 2|r|).
func (l pseudoHuberLoss) psi(r float64) float64 {
	q := r / l.eta
	return 2 * r / math.Sqrt(1+q*q)
}

// objPertLoss returns the row loss of the plan's Newton solver: logistic,
// or pseudo-Huber with the plan's η (linear with Huber > 0).
func (p ObjPertPlan) objPertLoss() rowLoss {
	if p.Kind == Logistic {
		return logisticLoss{}
	}
	return pseudoHuberLoss{eta: p.Huber}
}

// lossGradCheck returns the norm of the gradient of the average objective
// (1/N)[Σf(x_iᵀw; y_i) + bᵀw] + (mu/2)‖w‖² at w, computed in sum form with
// compensated sums and the exact b (lossGrad), and a bound on the rounding
// error of that evaluation, by loss:
//
//   - logistic: the computed predictor fl(xᵀw) is within 1.01·d·u·xb‖w‖ of
//     xᵀw (see below), which moves t·σ(−ta) by at most a quarter of that
//     (σ' ≤ ¼); given the predictor, each term t·σ(−ta)·x_j is computed
//     with relative error below 8u (u = 2^−53) and the compensated sum adds
//     2u relative to Σ|terms| ≤ N plus N·u² per entry, so the error of
//     every coordinate is below ¼·1.01·d·u·xb‖w‖ + 16u·(1 + |b_j|/N +
//     mu|w_j|) + N·u²;
//   - pseudo-Huber (η): the computed predictor â = fl(xᵀw) is within
//     γ_d·Σ|x_j w_j| ≤ 1.01·d·u·xb‖w‖ of xᵀw (d ≤ 10^13, γ_d = du/(1 − du))
//     and the residual r̂ = fl(y − â) within u|y − â| ≤ u(1 + 1.01·xb‖w‖)
//     more, so |r̂ − r| ≤ u((d + 1)·1.01·xb‖w‖ + 1 + encTol) =: ε_r; ψ is
//     2-Lipschitz (ψ' ≤ 2), so |ψ(r̂) − ψ(r)| ≤ 2ε_r. ψ(r̂) itself (a
//     division, a square, an addition, a square root, a division: 5
//     roundings) and the product with x_j (one more) have relative error
//     below 8u, i.e. absolute error ≤ 8u·2η·xb. Each term is then within
//     e_t = 2ε_r + 16u·η·xb of ψ(r)x_j; the compensated sum of the N terms
//     and of b_j and N·mu·w_j (itself within 2u relative), and the final
//     division by N, add below (4u + N·u²)·M_j with M_j = 2η·xb + |b_j|/N
//   - mu|w_j| the average magnitude summed. The coordinate's error is
//     below e_t + (4u + N·u²)·M_j.
//
// The bound adds 10% and takes the L2 norm over the d coordinates.
func lossGradCheck(loss rowLoss, rows []float64, k int, mu float64, b, w []float64) (norm, bound float64) {
	N := float64(len(rows) / k)
	g := lossGrad(loss, rows, k, mu, b, w)
	const u = 0x1p-53
	var e2 float64
	switch l := loss.(type) {
	case pseudoHuberLoss:
		d := float64(k - 1)
		xb := math.Sqrt(1+encTol) * (1 + 1e-15)
		wn := math.Sqrt(dot(w, w)) * (1 + 1e-15)
		er := u * ((d+1)*1.01*xb*wn + 1 + encTol)
		et := 2*er + 16*u*l.eta*xb
		for j := range g {
			m := 2*l.eta*xb + math.Abs(b[j])/N + mu*math.Abs(w[j])
			e := 1.1 * (et + (4*u+N*u*u)*m)
			e2 += e * e
		}
	default:
		// The predictor's rounding, 1.01·d·u·xb‖w‖, moves t·σ(−ta) by at
		// most ¼ of it (σ' ≤ ¼).
		xb := math.Sqrt(1+encTol) * (1 + 1e-15)
		ez := 0.25 * 1.01 * float64(k-1) * u * xb * math.Sqrt(dot(w, w)) * (1 + 1e-15)
		for j := range g {
			e := 1.1 * (ez + 16*u*(1+math.Abs(b[j])/N+mu*math.Abs(w[j])) + N*u*u)
			e2 += e * e
		}
	}
	return math.Sqrt(dot(g, g)), math.Sqrt(e2)
}

// polishLoss takes up to 8 full Newton steps from w on the average
// objective (1/N)[Σf + bᵀw] + (mu/2)‖w‖², with the gradient computed by
// lossGrad (compensated sums, exact b), keeping a step only if it lowers
// the gradient norm, and stops once the gradient norm is below tol/64.
// lossNewton stops when the objective no longer decreases in float64,
// which on small N can happen at gradient norms near 1e-9; from there
// Newton's method converges quadratically. It returns the best iterate (w
// itself if no step helps).
func polishLoss(loss rowLoss, rows []float64, k int, mu float64, b, w []float64, tol float64) []float64 {
	d := k - 1
	n := len(rows) / k
	N := float64(n)
	cur := append([]float64(nil), w...)
	g := lossGrad(loss, rows, k, mu, b, cur)
	gn := math.Sqrt(dot(g, g))
	h := mat.NewSymDense(d, nil)
	for it := 0; it < 8 && gn > tol/64; it++ {
		hd := make([]float64, d*d)
		for i := 0; i < n; i++ {
			r := rows[i*k : (i+1)*k]
			x := r[:d]
			c := loss.curv(dot(x, cur), r[d]) / N
			for a := 0; a < d; a++ {
				for bb := a; bb < d; bb++ {
					hd[a*d+bb] += c * x[a] * x[bb]
				}
			}
		}
		for a := 0; a < d; a++ {
			for bb := a; bb < d; bb++ {
				v := hd[a*d+bb]
				if a == bb {
					v += mu
				}
				h.SetSym(a, bb, v)
			}
		}
		var chol mat.Cholesky
		if !chol.Factorize(h) {
			break
		}
		var s mat.VecDense
		if err := chol.SolveVecTo(&s, mat.NewVecDense(d, g)); err != nil {
			break
		}
		next := make([]float64, d)
		for j := range next {
			next[j] = cur[j] - s.AtVec(j)
		}
		ng := lossGrad(loss, rows, k, mu, b, next)
		nn := math.Sqrt(dot(ng, ng))
		if !(nn < gn) {
			break
		}
		cur, g, gn = next, ng, nn
	}
	return cur
}

// lossGrad returns the gradient of the average objective
// (1/N)[Σf(x_iᵀw; y_i) + bᵀw] + (mu/2)‖w‖², computed in sum form with
// compensated sums and the exact b.
func lossGrad(loss rowLoss, rows []float64, k int, mu float64, b, w []float64) []float64 {
	d := k - 1
	n := len(rows) / k
	N := float64(n)
	acc := make([]compSum, d)
	for i := 0; i < n; i++ {
		r := rows[i*k : (i+1)*k]
		x := r[:d]
		c := loss.deriv(dot(x, w), r[d])
		for j := 0; j < d; j++ {
			acc[j].add(c * x[j])
		}
	}
	g := make([]float64, d)
	for j := range g {
		acc[j].add(b[j])
		acc[j].add(N * mu * w[j])
		g[j] = acc[j].sum() / N
	}
	return g
}

// linearGradMapCheck returns the norm of the gradient mapping
// G(w) = L(w − Π_C(w − ∇F(w)/L)) of F(w) = (1/N)[Σ(y − xᵀw)² + bᵀw] +
// (mu/2)‖w‖² on C = {‖w‖ ≤ radius}, L = 2(1 + encTol) + mu, computed from
// the sufficient statistics, and a bound on its error: the statistics are
// within 1e-13·N of the exact sums (suffstat's blocked summation: relative
// error ≤ 2.9e-14 of Σ|z_i z_j| ≤ N(1 + encTol)), which moves each gradient
// coordinate by ≤ 2e-13(‖w‖₁ + 1); the evaluation adds below 4(d + 2)u
// relative to the magnitudes summed. Π_C is nonexpansive, so G inherits
// the gradient's error.
func linearGradMapCheck(s Stats, mu, radius float64, b, w []float64) (norm, bound float64) {
	d := s.K() - 1
	N := float64(s.N())
	L := 2*(1+encTol) + mu
	const u = 0x1p-53
	w1 := 0.0
	for _, v := range w {
		w1 += math.Abs(v)
	}
	grad := make([]float64, d)
	var e2 float64
	for i := 0; i < d; i++ {
		var acc compSum
		mag := 0.0
		for j := 0; j < d; j++ {
			acc.add(2 * s.At(i, j) * w[j])
			mag += math.Abs(2 * s.At(i, j) * w[j])
		}
		acc.add(-2 * s.At(d, i))
		acc.add(b[i])
		mag += math.Abs(2*s.At(d, i)) + math.Abs(b[i])
		grad[i] = acc.sum()/N + mu*w[i]
		e := 2e-13*(w1+1) + 4*float64(d+2)*u*(mag/N+mu*math.Abs(w[i]))
		e2 += e * e
	}
	step := make([]float64, d)
	for i := range step {
		step[i] = w[i] - grad[i]/L
	}
	if nn := math.Sqrt(dot(step, step)); nn > radius {
		for i := range step {
			step[i] *= radius / nn
		}
	}
	var g2 float64
	for i := range step {
		v := L * (w[i] - step[i])
		g2 += v * v
	}
	return math.Sqrt(g2), 1.1 * math.Sqrt(e2) * (1 + 1e-6)
}

// compSum is Neumaier's compensated summation.
type compSum struct{ s, c float64 }

func (a *compSum) add(x float64) {
	t := a.s + x
	if math.Abs(a.s) >= math.Abs(x) {
		a.c += (a.s - t) + x
	} else {
		a.c += (x - t) + a.s
	}
	a.s = t
}

func (a *compSum) sum() float64 { return a.s + a.c }

// checkRows validates the encoded rows against the bounds every mechanism
// here relies on: ‖x‖₂ ≤ 1 and y ∈ [−1, 1] (linear, robust) or {0, 1}
// (logistic). It returns the rows.
func checkRows(data Data, kind Kind) ([]float64, error) {
	k := data.Stats.K()
	rows := data.Rows
	if len(rows) == 0 {
		return nil, fmt.Errorf("%s regression with this mechanism needs the rows, not only statistics", kind)
	}
	if len(rows)%k != 0 {
		return nil, fmt.Errorf("rows have length %d, not a multiple of K = %d", len(rows), k)
	}
	if _, unit := unitOf(data.Stats); unit {
		// Unit statistics count the public Units·K; at most that many
		// rows were kept (UnitStats).
		if int64(len(rows)/k) > data.Stats.N() {
			return nil, fmt.Errorf("%d rows but at most Units·K = %d under the privacy unit", len(rows)/k, data.Stats.N())
		}
	} else if int64(len(rows)/k) != data.Stats.N() {
		return nil, fmt.Errorf("%d rows but the statistics count N = %d", len(rows)/k, data.Stats.N())
	}
	const tol = 1e-9
	for i := 0; i*k < len(rows); i++ {
		r := rows[i*k : (i+1)*k]
		s := 0.0
		for _, v := range r[:k-1] {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("row %d: non-finite feature %v", i, v)
			}
			s += v * v
		}
		if s > 1+tol {
			return nil, fmt.Errorf("row %d: ‖x‖₂ = %.6g exceeds 1 (encode rows with the schema)", i, math.Sqrt(s))
		}
		y := r[k-1]
		switch {
		case kind == Logistic && y != 0 && y != 1:
			return nil, fmt.Errorf("row %d: logistic target must be 0 or 1, got %v", i, y)
		case kind != Logistic && !(math.Abs(y) <= 1+tol):
			return nil, fmt.Errorf("row %d: target %v outside [−1, 1]", i, y)
		}
	}
	return rows, nil
}

// minimiseCMS minimises (1/N)Σ log(1+exp(−t_i ωᵀx_i)) + (mu/2)‖ω‖² +
// (1/N)bᵀω (t = 2y − 1) by Newton's method with backtracking. It returns
// the minimiser and the final gradient norm.
func minimiseCMS(ctx context.Context, rows []float64, k int, mu float64, b []float64) ([]float64, float64, error) {
	return minimiseLoss(ctx, logisticLoss{}, rows, k, mu, b)
}

// minimiseLoss minimises (1/N)[Σf(x_iᵀω; y_i) + bᵀω] + (mu/2)‖ω‖² for the
// row loss f by Newton's method with backtracking (lossNewton, at most 200
// steps). It returns the minimiser and the final gradient norm.
func minimiseLoss(ctx context.Context, loss rowLoss, rows []float64, k int, mu float64, b []float64) ([]float64, float64, error) {
	n := float64(len(rows) / k)
	lin := make([]float64, len(b))
	for j := range b {
		lin[j] = b[j] / n
	}
	return lossNewton(ctx, loss, rows, k, mu, lin, 200, nil)
}

// minimiseKST minimises ωᵀMω + cᵀω over ‖ω‖ ≤ R, where, in average form,
// M = (1/N)Σxxᵀ + (mu/2)I and c = (−2Σyx + b)/N: the squared-loss objective
// (1/N)[Σ(y − xᵀω)² + bᵀω] + (mu/2)‖ω‖² up to a constant. M is positive
// definite (mu > 0), so the minimiser is unique: the unconstrained one if it
// lies in the ball, otherwise ω(ν) = −½(M + νI)⁻¹c on the sphere, with ν > 0
// solving the secular equation ‖ω(ν)‖ = R (found by bisection to full
// precision; ‖ω(ν)‖ decreases in ν).
func minimiseKST(s Stats, mu, radius float64, b []float64) ([]float64, error) {
	k := s.K()
	d := k - 1
	N := float64(s.N())
	m := mat.NewSymDense(d, nil)
	c := make([]float64, d)
	for i := 0; i < d; i++ {
		c[i] = (-2*s.At(d, i) + b[i]) / N
		for j := i; j < d; j++ {
			v := s.At(i, j) / N
			if i == j {
				v += mu / 2
			}
			m.SetSym(i, j, v)
		}
	}
	for _, v := range c {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, errors.New("statistics contain a non-finite value")
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(m, true) {
		return nil, errors.New("eigendecomposition did not converge")
	}
	vals := eig.Values(nil)
	var q mat.Dense
	eig.VectorsTo(&q)
	ct := make([]float64, d) // Qᵀc
	for kk := 0; kk < d; kk++ {
		for i := 0; i < d; i++ {
			ct[kk] += q.At(i, kk) * c[i]
		}
	}
	norm := func(nu float64) float64 {
		s := 0.0
		for kk, l := range vals {
			v := ct[kk] / (2 * (l + nu))
			s += v * v
		}
		return math.Sqrt(s)
	}
	nu := 0.0
	if norm(0) > radius {
		lo, hi := 0.0, math.Sqrt(dot(c, c))/(2*radius)+1e-300
		for norm(hi) > radius {
			hi *= 2
		}
		for it := 0; it < 200 && hi-lo > 0; it++ {
			mid := (lo + hi) / 2
			if mid == lo || mid == hi {
				break
			}
			if norm(mid) > radius {
				lo = mid
			} else {
				hi = mid
			}
		}
		nu = hi // ‖ω(hi)‖ ≤ R
	}
	w := make([]float64, d)
	for kk, l := range vals {
		coef := -ct[kk] / (2 * (l + nu))
		for i := 0; i < d; i++ {
			w[i] += coef * q.At(i, kk)
		}
	}
	return w, nil
}
