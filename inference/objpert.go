package inference

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"

	"gonum.org/v1/gonum/mat"

	"github.com/dplearn/dplearn/regress"
)

// Intervals for logistic objective perturbation (regress "objpert" with
// ObjPertOptions.HessianShare > 0).
//
// # What is released
//
// The fit releases ω = ω̃ + e2, ω̃ the minimiser (to the public tolerance γ)
// of (1/N)[L(ω) + bᵀω] + (Λ/2)‖ω‖², L the logistic log-loss summed over the
// rows, b ~ N(0, σ1²I), e2 ~ N(0, σ2²I), and S̃ = S(ω) + Z, S(ω) =
// Σσ(xᵀω)σ(−xᵀω)xxᵀ the loss Hessian at the released ω, Z symmetric with
// N(0, σ3²) upper-triangle entries. Λ, σ1, σ2, σ3, N and d are public (the
// plan). Nothing here reads the data.
//
// # Estimand
//
// β0, the population logistic-regression coefficients (log-odds per unit of
// the encoded features): the minimiser of E ℓ(β; x, y), which is the true
// parameter when the logistic model holds. The sampling part is
// model-based (the score's variance equals the Hessian, as statsmodels'
// Logit), so the intervals assume a correctly specified logistic model.
//
// # Estimator: one Newton step off the ridge
//
// Let Ĥ be the eigen-decomposition of S̃/N with its eigenvalues floored at
// f = max(Λ, 2√d·σ3/N) (2√d·σ3/N is about the spectral norm of Z/N, so no
// direction is trusted below the Hessian's own noise, and no direction is
// de-ridged by more than a factor 2 below Λ). The printed estimate is
//
//	β̂ = ω + ΛĤ⁻¹ω  (regress.ObjPertDeridge),
//
// one Newton step from ω on the unpenalised average loss, whose gradient
// at the noise-free minimiser is −Λω. Without noise it is the MLE up to
// O(‖ΛH⁻¹ω‖²) (regress.TestObjPertNoiseFreeIsMLE: within 1.6% on SmokeBan
// at ε = 1).
//
// # Interval: parametric bootstrap
//
// To first order, with H the average Hessian at β0 and g = (1/N)Σ∇ℓ_i(β0)
// ~ N(0, H/N), ω − ω_Λ ≈ (H + ΛI)⁻¹(−g − b/N) + e2. The bootstrap world
// takes H = Ĥ and ω_Λ = ω, so its true β is β̂; each replicate draws g*,
// b*, e2* and Z* from these public laws, forms ω* and S̃* = NĤ + Z*,
// floors S̃*/N at f, and de-ridges: β* = ω* + ΛĤ*⁻¹ω*. SE_j is half the
// central 68.27% range of β*_j (the standard deviation when normal) and the
// interval is β̂_j ± z·SE_j, which contains the printed estimate by
// construction. The bootstrap carries the noise of the Hessian into the
// de-ridging step; the optimiser's error (≤ γ/Λ in norm, 1e-9/Λ) and the
// O(Λ²) remainder of the Newton step are not in the interval.
// TestObjPertCoverage measures the coverage.

// EstimandObjPert is the estimand of ObjPert's intervals, as printed.
const EstimandObjPert = "population logistic-regression coefficients (log-odds per unit, the maximum-likelihood estimand; exp(b) is an odds ratio) under a correctly specified logistic model; the printed estimate is the objpert fit de-ridged by one Newton step with the released noisy Hessian (regress.ObjPertDeridge), inside its interval by construction; the model predicts with the ridge-regularised fit"

// ObjPertFloor returns the eigenvalue floor f = max(Λ, 2√d·σ3/N) of the
// average Hessian used to de-ridge an objpert fit.
func ObjPertFloor(p regress.ObjPertPlan) float64 {
	return math.Max(p.Lambda, 2*math.Sqrt(float64(p.D))*p.Sigma3/float64(p.N))
}

// ObjPertEstimate returns the printed (de-ridged) estimate β̂ of a logistic
// objpert release.
func ObjPertEstimate(rel *regress.ObjPertRelease) ([]float64, error) {
	if err := validObjPert(rel); err != nil {
		return nil, err
	}
	return regress.ObjPertDeridge(rel.Coef, rel.Hessian, rel.Plan.N, rel.Plan.Lambda, ObjPertFloor(rel.Plan))
}

func validObjPert(rel *regress.ObjPertRelease) error {
	if rel == nil {
		return errors.New("inference: objpert intervals need the fit's Hessian release (give the fit a Hessian share)")
	}
	p := rel.Plan
	if p.Kind != regress.Logistic || !(p.Sigma3 > 0) || p.D < 1 || p.N < 1 || len(rel.Coef) != p.D || len(rel.Hessian) != p.D*p.D {
		return fmt.Errorf("inference: malformed objpert release (kind %s, d = %d, %d coefficients, %d Hessian entries, σ3 = %v)", p.Kind, p.D, len(rel.Coef), len(rel.Hessian), p.Sigma3)
	}
	return nil
}

// floored returns the eigen-decomposition of the symmetric d×d matrix m
// (row-major, scaled by 1/n) with eigenvalues floored at f.
func floored(m []float64, d int, n, f float64) ([]float64, *mat.Dense, error) {
	s := mat.NewSymDense(d, nil)
	for a := 0; a < d; a++ {
		for b := a; b < d; b++ {
			s.SetSym(a, b, (m[a*d+b]+m[b*d+a])/(2*n))
		}
	}
	var eig mat.EigenSym
	if !eig.Factorize(s, true) {
		return nil, nil, errors.New("inference: eigendecomposition of the released Hessian did not converge")
	}
	vals := eig.Values(nil)
	for i := range vals {
		vals[i] = math.Max(vals[i], f)
	}
	var q mat.Dense
	eig.VectorsTo(&q)
	return vals, &q, nil
}

// ObjPert computes confidence intervals for the coefficients of a logistic
// objpert fit from its release (see the comment above EstimandObjPert).
func ObjPert(rel *regress.ObjPertRelease, opt Options) (*Intervals, error) {
	if err := validObjPert(rel); err != nil {
		return nil, err
	}
	level, err := opt.level()
	if err != nil {
		return nil, err
	}
	reps, err := opt.replicates()
	if err != nil {
		return nil, err
	}
	p := rel.Plan
	d, N, lam := p.D, float64(p.N), p.Lambda
	f := ObjPertFloor(p)
	est, err := ObjPertEstimate(rel)
	if err != nil {
		return nil, err
	}
	vals, q, err := floored(rel.Hessian, d, N, f)
	if err != nil {
		return nil, err
	}
	// Ĥ (average form) rebuilt from its floored eigen-decomposition.
	hHat := make([]float64, d*d)
	for a := 0; a < d; a++ {
		for b := 0; b < d; b++ {
			for k, l := range vals {
				hHat[a*d+b] += q.At(a, k) * l * q.At(b, k)
			}
		}
	}
	// In Ĥ's eigenbasis: rotate(v)_k = q_kᵀv and back.
	toEig := func(v []float64) []float64 {
		out := make([]float64, d)
		for k := 0; k < d; k++ {
			for i := 0; i < d; i++ {
				out[k] += q.At(i, k) * v[i]
			}
		}
		return out
	}
	fromEig := func(c []float64) []float64 {
		out := make([]float64, d)
		for k := 0; k < d; k++ {
			for i := 0; i < d; i++ {
				out[i] += q.At(i, k) * c[k]
			}
		}
		return out
	}
	seed := opt.seed()
	rng := rand.New(rand.NewPCG(seed, seed^0x0b1e_c7e5))
	devs := make([][]float64, reps)
	noiseOnly := make([][]float64, reps)
	hStar := make([]float64, d*d)
	for r := 0; r < reps; r++ {
		// Sampling score g ~ N(0, Ĥ/N) and objective noise b/N, in the
		// eigenbasis of Ĥ where (Ĥ + ΛI)⁻¹ is diagonal.
		stepS := make([]float64, d)
		stepN := make([]float64, d)
		for k, l := range vals {
			g := rng.NormFloat64() * math.Sqrt(l/N) // seeded bootstrap draw of a public law: post-processing
			b := rng.NormFloat64() * p.Sigma1 / N   // seeded bootstrap draw of a public law: post-processing
			stepS[k] = -g / (l + lam)
			stepN[k] = -b / (l + lam)
		}
		e2 := make([]float64, d)
		for i := range e2 {
			e2[i] = rng.NormFloat64() * p.Sigma2 // seeded bootstrap draw of a public law: post-processing
		}
		for a := 0; a < d; a++ {
			for b := a; b < d; b++ {
				z := rng.NormFloat64() * p.Sigma3 // seeded bootstrap draw of a public law: post-processing
				hStar[a*d+b] = N*hHat[a*d+b] + z
				hStar[b*d+a] = hStar[a*d+b]
			}
		}
		sum := make([]float64, d)
		for k := range sum {
			sum[k] = stepS[k] + stepN[k]
		}
		mv := fromEig(sum)
		omega := make([]float64, d)
		for i := range omega {
			omega[i] = rel.Coef[i] + mv[i] + e2[i]
		}
		bs, err := regress.ObjPertDeridge(omega, hStar, p.N, lam, f)
		if err != nil {
			return nil, err
		}
		devs[r] = make([]float64, d)
		for i := range bs {
			devs[r][i] = bs[i] - est[i]
		}
		// The noise part alone (no sampling draw), for NoiseSE, with the
		// same de-ridging matrix as the bootstrap world's truth.
		nv := fromEig(stepN)
		noiseOnly[r] = make([]float64, d)
		for i := range nv {
			noiseOnly[r][i] = nv[i] + e2[i]
		}
		c := toEig(noiseOnly[r])
		for k, l := range vals {
			c[k] *= 1 + lam/l
		}
		noiseOnly[r] = fromEig(c)
	}
	z := NormalQuantile(0.5 + level/2)
	iv := &Intervals{
		Level:        level,
		Method:       fmt.Sprintf("parametric bootstrap (%d replicates) of objective perturbation around the released fit: model-based sampling score N(0, Ĥ/N), the objective, output and Hessian noises at their public scales (σ1 = %.4g, σ2 = %.4g, σ3 = %.4g), each replicate de-ridged as the estimate is (Hessian eigenvalues floored at %.4g); estimate ± z·SE", reps, p.Sigma1, p.Sigma2, p.Sigma3, f),
		Estimand:     EstimandObjPert,
		Coefficients: make([]Coefficient, d),
		Covariance:   covariance(devs, d),
		Replicates:   reps,
	}
	col := make([]float64, reps)
	for j := 0; j < d; j++ {
		for r := range devs {
			col[r] = devs[r][j]
		}
		sort.Float64s(col)
		se := robustSD(col, reps)
		for r := range noiseOnly {
			col[r] = noiseOnly[r][j]
		}
		sort.Float64s(col)
		nse := robustSD(col, reps)
		c := Coefficient{Identified: true, Estimate: est[j], SE: se, Lower: est[j] - z*se, Upper: est[j] + z*se, NoiseSE: nse,
			PValue: NormalPValue(est[j], se)} // the interval is normal: p < 1 − level exactly when it excludes 0
		c.SamplingSE = math.Sqrt(math.Max(0, se*se-nse*nse))
		iv.Coefficients[j] = c
	}
	return iv, nil
}
