package regress

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/mathext"
)

// Classical inference for the non-private reference fit.
//
// The reference fit (mechanism nonprivate) is ordinary least squares or
// logistic maximum likelihood on the encoded rows. Its classical summary
// follows statsmodels' OLS and Logit results exactly (the test compares
// with statsmodels' numbers to 1e-8 relative on the embedded tables):
//
// Linear (OLS), with n observations, k coefficients (the intercept
// included) and ν = n − k residual degrees of freedom: SSR = Σr², the
// covariance σ̂²(XᵀX)⁻¹ with σ̂² = SSR/ν, t = b/SE with two-sided p from
// Student's t(ν), the interval b ± t_{ν,1−α/2}·SE, R² = 1 − SSR/TSS (TSS
// centred about the mean when the model has an intercept, uncentred
// otherwise), adjusted R² = 1 − (n − c)/ν·(1 − R²) (c = 1 with an intercept,
// 0 without), F = ((TSS − SSR)/(k − c))/(SSR/ν) with its p from F(k − c, ν),
// the Gaussian log-likelihood −n/2·(log(2π·SSR/n) + 1), AIC = −2ℓ + 2k and
// BIC = −2ℓ + k·log n. With CovHC1, the covariance is White's sandwich
// (XᵀX)⁻¹(Σ r_i² x_i x_iᵀ)(XᵀX)⁻¹ times n/ν (MacKinnon and White's HC1),
// the coefficient statistics are z with normal p-values and intervals
// (statsmodels' default for a robust covariance: the sandwich is an
// asymptotic result), and F is the Wald statistic of the slopes with it,
// divided by k − c, with its p from F(k − c, ν) (statsmodels' fvalue for a
// robust covariance).
//
// Logistic (Logit): the covariance is the inverse Fisher information
// (Σ p_i(1 − p_i) x_i x_iᵀ)⁻¹ at the MLE, z = b/SE with normal p-values and
// intervals, ℓ the log-likelihood, ℓ₀ that of the intercept-only model
// (n·(ȳ log ȳ + (1 − ȳ) log(1 − ȳ)) with an intercept, n·log ½ without),
// the likelihood-ratio statistic 2(ℓ − ℓ₀) with its p from χ²(k − c),
// McFadden's pseudo-R² 1 − ℓ/ℓ₀, the deviance −2ℓ, AIC and BIC as above.
// With CovHC1, the covariance is the sandwich I⁻¹(Σ (y_i − p_i)² x_i x_iᵀ)I⁻¹
// times n/(n − k). (statsmodels 0.13's Logit accepts cov_type="HC1" but
// returns the uncorrected HC0 sandwich; the golden values are its HC0
// times n/(n − k).)
//
// Records dropped for a missing value (schema "missing": "drop") enter the
// encoded data as all-zero rows. They add nothing to XᵀX, Xᵀy, Σy, Σy² or
// the sandwich's meat, but each would count in n and, for logistic, add
// log ½ to ℓ; ClassicalOptions.Dropped removes them exactly.

// Covariance types of the classical summary.
const (
	// CovNonrobust is the model-based covariance (homoskedastic OLS, the
	// inverse Fisher information for logistic regression).
	CovNonrobust = "nonrobust"
	// CovHC1 is White's heteroskedasticity-robust sandwich with the
	// n/(n − k) small-sample factor.
	CovHC1 = "HC1"
)

// ClassicalOptions configures ClassicalFit.
type ClassicalOptions struct {
	// Cov is CovNonrobust ("" too) or CovHC1.
	Cov string
	// Dropped is the number of all-zero rows standing for records dropped
	// for a missing value; they are removed from n (and from ℓ).
	Dropped int64
	// HasIntercept says whether encoded column 0 is the intercept.
	HasIntercept bool
	// TargetScale h_y > 0 reports the linear log-likelihood, AIC and BIC
	// for the target t = m_y + h_y·y on its declared (transformed) scale
	// rather than for the encoded y (ℓ_t = ℓ_y − n·log h_y); 0 means 1.
	TargetScale float64
	// Level is the confidence level in (0, 1); 0 means 0.95.
	Level float64
}

// Classical is the classical summary of a reference fit, on the encoded
// coefficients (map them to original units with their Jacobian: the
// covariance transforms as W·V·Wᵀ, and the statistics of the fit do not
// change).
type Classical struct {
	Kind  Kind    `json:"kind"`
	Cov   string  `json:"cov_type"`
	N     int64   `json:"nobs"`
	Level float64 `json:"level"`
	// Coef are the coefficients (linear: solved here from XᵀX and Xᵀy;
	// logistic: the MLE passed in) and Covariance their covariance.
	Coef       []float64   `json:"coef"`
	Covariance [][]float64 `json:"covariance"`
	// DFModel = k − c, DFResid = n − k.
	DFModel float64 `json:"df_model"`
	DFResid float64 `json:"df_resid"`
	// UseT says whether the statistics are t(DFResid) (linear) or normal z
	// (logistic).
	UseT   bool    `json:"use_t"`
	LogLik float64 `json:"log_likelihood"`
	AIC    float64 `json:"aic"`
	BIC    float64 `json:"bic"`
	// Linear only.
	SSR        float64 `json:"ssr,omitempty"`
	R2         float64 `json:"r_squared,omitempty"`
	AdjR2      float64 `json:"adj_r_squared,omitempty"`
	F          float64 `json:"f_statistic,omitempty"`
	FPValue    float64 `json:"f_pvalue,omitempty"`
	ScaleSigma float64 `json:"sigma,omitempty"`
	// Logistic only.
	LLNull    float64 `json:"ll_null,omitempty"`
	LLR       float64 `json:"llr,omitempty"`
	LLRPValue float64 `json:"llr_pvalue,omitempty"`
	PseudoR2  float64 `json:"pseudo_r_squared,omitempty"`
	Deviance  float64 `json:"deviance,omitempty"`
}

// Test returns, for a linear combination b = offset + wᵀω of the
// coefficients, its estimate, standard error, t or z statistic, two-sided
// p-value for b = 0 and confidence interval at c.Level.
func (c *Classical) Test(offset float64, w []float64) (est, se, stat, p, lo, hi float64) {
	est = offset
	v := 0.0
	for i := range w {
		est += w[i] * c.Coef[i]
		for j := range w {
			v += w[i] * c.Covariance[i][j] * w[j]
		}
	}
	se = math.Sqrt(v)
	stat = est / se
	q := c.quantile()
	if c.UseT {
		p = StudentTwoSided(stat, c.DFResid)
	} else {
		p = NormalTwoSided(stat)
	}
	return est, se, stat, p, est - q*se, est + q*se
}

func (c *Classical) quantile() float64 {
	a := (1 - c.Level) / 2
	if c.UseT {
		// t_{ν,1−a}: I_x(ν/2, ½) = 2a at x = ν/(ν + t²).
		x := mathext.InvRegIncBeta(c.DFResid/2, 0.5, 2*a)
		return math.Sqrt(c.DFResid * (1 - x) / x)
	}
	return math.Sqrt2 * math.Erfcinv(2*a)
}

// StudentTwoSided is P(|T| ≥ |t|) for T ~ t(ν), computed as the regularised
// incomplete beta I_{ν/(ν+t²)}(ν/2, ½) so that small p-values keep their
// relative precision.
func StudentTwoSided(t, nu float64) float64 {
	return mathext.RegIncBeta(nu/2, 0.5, nu/(nu+t*t))
}

// NormalTwoSided is P(|Z| ≥ |z|) = erfc(|z|/√2).
func NormalTwoSided(z float64) float64 { return math.Erfc(math.Abs(z) / math.Sqrt2) }

// fSurvival is P(F ≥ f) for F ~ F(d1, d2): I_{d2/(d2 + d1 f)}(d2/2, d1/2).
func fSurvival(f, d1, d2 float64) float64 {
	return mathext.RegIncBeta(d2/2, d1/2, d2/(d2+d1*f))
}

// chi2Survival is P(X ≥ x) for X ~ χ²(k). For integer k ≤ 400 it sums
// the closed form of the regularised upper incomplete gamma Q(k/2, x/2)
// (all terms positive, so a p-value of 10⁻¹¹⁷ keeps its relative
// precision, which mathext.GammaIncRegComp does not): with y = x/2,
// integer a: Q(a, y) = e^{−y} Σ_{j<a} y^j/j!;
// half-integer a = m + ½: Q(a, y) = erfc(√y) + e^{−y} Σ_{j=1..m} y^{j−½}/Γ(j + ½).
func chi2Survival(x, k float64) float64 {
	if !(x > 0) {
		return 1
	}
	if k != math.Trunc(k) || k < 1 || k > 400 {
		return mathext.GammaIncRegComp(k/2, x/2)
	}
	y := x / 2
	ly := math.Log(y)
	if int(k)%2 == 0 {
		s := 0.0
		for j := 0; j < int(k)/2; j++ {
			lg, _ := math.Lgamma(float64(j) + 1)
			s += math.Exp(float64(j)*ly - y - lg)
		}
		return s
	}
	s := math.Erfc(math.Sqrt(y))
	for j := 1; j <= int(k)/2; j++ {
		lg, _ := math.Lgamma(float64(j) + 0.5)
		s += math.Exp((float64(j)-0.5)*ly - y - lg)
	}
	return s
}

// ClassicalFit computes the classical summary of the reference fit on
// data (linear: statistics, and rows for CovHC1; logistic: rows and the
// MLE coef). See the comment above for the formulas.
func ClassicalFit(ctx context.Context, kind Kind, data Data, coef []float64, opt ClassicalOptions) (*Classical, error) {
	cov := opt.Cov
	if cov == "" {
		cov = CovNonrobust
	}
	if cov != CovNonrobust && cov != CovHC1 {
		return nil, fmt.Errorf("classical inference: unknown covariance %q (want nonrobust or HC1)", opt.Cov)
	}
	level := opt.Level
	if level == 0 {
		level = 0.95
	}
	if !(level > 0 && level < 1) {
		return nil, fmt.Errorf("classical inference: confidence level must be in (0, 1), got %v", level)
	}
	if data.Stats == nil {
		return nil, errors.New("classical inference: no statistics")
	}
	k := data.Stats.K()
	d := k - 1
	n := data.Stats.N() - opt.Dropped
	if opt.Dropped < 0 || n <= int64(d) {
		return nil, fmt.Errorf("classical inference: %d observations for %d coefficients (need more observations than coefficients)", n, d)
	}
	if (cov == CovHC1 || kind == Logistic) && len(data.Rows) != int(data.Stats.N())*k {
		return nil, fmt.Errorf("classical inference: %s needs the encoded rows", map[bool]string{true: "logistic regression", false: "the HC1 covariance"}[kind == Logistic])
	}
	c := &Classical{Kind: kind, Cov: cov, N: n, Level: level}
	kc := 0.0
	if opt.HasIntercept {
		kc = 1
	}
	nf := float64(n)
	c.DFModel, c.DFResid = float64(d)-kc, nf-float64(d)
	var err error
	switch kind {
	case Linear:
		err = c.linear(data, d, kc, opt)
	case Logistic:
		if len(coef) != d {
			return nil, fmt.Errorf("classical inference: %d coefficients for %d encoded features", len(coef), d)
		}
		err = c.logistic(ctx, data.Rows, k, coef, kc, opt.Dropped)
	default:
		return nil, fmt.Errorf("classical inference is for linear and logistic models, not %q", kind)
	}
	if err != nil {
		return nil, err
	}
	nk := float64(d)
	c.AIC = -2*c.LogLik + 2*nk
	c.BIC = -2*c.LogLik + nk*math.Log(nf)
	return c, nil
}

// invertSPD returns A⁻¹ for a symmetric positive definite A, or an error
// naming the collinearity.
func invertSPD(a *mat.SymDense, what string) (*mat.SymDense, error) {
	var ch mat.Cholesky
	if !ch.Factorize(a) {
		return nil, fmt.Errorf("classical inference: %s is singular (collinear encoded columns, or a category level with no rows): no standard errors", what)
	}
	var inv mat.SymDense
	if err := ch.InverseTo(&inv); err != nil {
		return nil, fmt.Errorf("classical inference: invert %s: %w", what, err)
	}
	return &inv, nil
}

func (c *Classical) linear(data Data, d int, kc float64, opt ClassicalOptions) error {
	st := data.Stats
	xtx := mat.NewSymDense(d, nil)
	xty := mat.NewVecDense(d, nil)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			xtx.SetSym(i, j, st.At(i, j))
		}
		xty.SetVec(i, st.At(i, d))
	}
	inv, err := invertSPD(xtx, "XᵀX")
	if err != nil {
		return err
	}
	var b mat.VecDense
	b.MulVec(inv, xty)
	c.Coef = make([]float64, d)
	for i := range c.Coef {
		c.Coef[i] = b.AtVec(i)
	}
	nf := float64(c.N)
	// SSR: from the rows when present (no cancellation), else from the
	// exact statistics, Σy² − 2bᵀXᵀy + bᵀXᵀXb.
	var ssr float64
	k := d + 1
	var meat *mat.SymDense
	if c.Cov == CovHC1 {
		meat = mat.NewSymDense(d, nil)
	}
	if len(data.Rows) == int(st.N())*k {
		for r := 0; r < len(data.Rows); r += k {
			row := data.Rows[r : r+k]
			e := row[d] - dot(row[:d], c.Coef)
			ssr += e * e
			if meat != nil {
				for i := 0; i < d; i++ {
					for j := i; j < d; j++ {
						meat.SetSym(i, j, meat.At(i, j)+e*e*row[i]*row[j])
					}
				}
			}
		}
	} else {
		var xb mat.VecDense
		xb.MulVec(xtx, &b)
		ssr = st.At(d, d) - 2*mat.Dot(&b, xty) + mat.Dot(&b, &xb)
	}
	c.SSR = ssr
	tss := st.At(d, d)
	if kc == 1 {
		tss -= st.Sum(d) * st.Sum(d) / nf
	}
	c.R2 = 1 - ssr/tss
	c.AdjR2 = 1 - (nf-kc)/c.DFResid*(1-c.R2)
	s2 := ssr / c.DFResid
	c.ScaleSigma = math.Sqrt(s2)
	h := opt.TargetScale
	if h == 0 {
		h = 1
	}
	if !(h > 0) {
		return fmt.Errorf("classical inference: target scale %v must be > 0", h)
	}
	c.ScaleSigma *= h
	c.LogLik = -nf/2*(math.Log(2*math.Pi*ssr/nf)+1) - nf*math.Log(h)
	// statsmodels' OLS uses t(ν) for the model-based covariance and the
	// normal law for a robust one (its default use_t for cov_type HC1).
	c.UseT = meat == nil
	v := mat.NewDense(d, d, nil)
	if meat == nil {
		v.Scale(s2, inv)
	} else {
		var t mat.Dense
		t.Mul(inv, meat)
		v.Mul(&t, inv)
		v.Scale(nf/c.DFResid, v)
	}
	c.Covariance = denseRows(v)
	if meat == nil {
		c.F = ((tss - ssr) / c.DFModel) / s2
	} else {
		c.F = c.waldSlopes(int(kc))
	}
	c.FPValue = fSurvival(c.F, c.DFModel, c.DFResid)
	return nil
}

// waldSlopes is (Rb)ᵀ(RVRᵀ)⁻¹(Rb)/q for R selecting the q coefficients
// after the first skip (the slopes).
func (c *Classical) waldSlopes(skip int) float64 {
	q := len(c.Coef) - skip
	if q <= 0 {
		return math.NaN()
	}
	rv := mat.NewSymDense(q, nil)
	rb := mat.NewVecDense(q, nil)
	for i := 0; i < q; i++ {
		rb.SetVec(i, c.Coef[skip+i])
		for j := i; j < q; j++ {
			rv.SetSym(i, j, c.Covariance[skip+i][skip+j])
		}
	}
	inv, err := invertSPD(rv, "the slopes' covariance")
	if err != nil {
		return math.NaN()
	}
	var t mat.VecDense
	t.MulVec(inv, rb)
	return mat.Dot(rb, &t) / float64(q)
}

func (c *Classical) logistic(ctx context.Context, rows []float64, k int, coef []float64, kc float64, dropped int64) error {
	d := k - 1
	c.Coef = append([]float64(nil), coef...)
	info := mat.NewSymDense(d, nil)
	var meat *mat.SymDense
	if c.Cov == CovHC1 {
		meat = mat.NewSymDense(d, nil)
	}
	ll, sy := 0.0, 0.0
	for r := 0; r < len(rows); r += k {
		if r%(1<<16*k) == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		row := rows[r : r+k]
		x, y := row[:d], row[d]
		z := dot(x, coef)
		t := 2*y - 1
		ll -= softplus(-t * z) // log σ(t·z)
		sy += y
		p := sigmoid(z)
		wgt := p * (1 - p)
		e := y - p
		for i := 0; i < d; i++ {
			if x[i] == 0 {
				continue
			}
			for j := i; j < d; j++ {
				info.SetSym(i, j, info.At(i, j)+wgt*x[i]*x[j])
				if meat != nil {
					meat.SetSym(i, j, meat.At(i, j)+e*e*x[i]*x[j])
				}
			}
		}
	}
	// Each zero row added log σ(0) = −log 2 to ℓ and nothing else.
	ll += float64(dropped) * math.Ln2
	nf := float64(c.N)
	c.LogLik = ll
	inv, err := invertSPD(info, "the Fisher information")
	if err != nil {
		return err
	}
	v := mat.NewDense(d, d, nil)
	if meat == nil {
		v.Copy(inv)
	} else {
		var t mat.Dense
		t.Mul(inv, meat)
		v.Mul(&t, inv)
		v.Scale(nf/(nf-float64(d)), v) // n/(n − k)
	}
	c.Covariance = denseRows(v)
	if kc == 1 {
		m := sy / nf
		c.LLNull = 0
		if m > 0 {
			c.LLNull += nf * m * math.Log(m)
		}
		if m < 1 {
			c.LLNull += nf * (1 - m) * math.Log1p(-m)
		}
	} else {
		c.LLNull = -nf * math.Ln2
	}
	c.LLR = 2 * (c.LogLik - c.LLNull)
	c.LLRPValue = chi2Survival(c.LLR, c.DFModel)
	c.PseudoR2 = 1 - c.LogLik/c.LLNull
	c.Deviance = -2 * c.LogLik
	return nil
}

func denseRows(v *mat.Dense) [][]float64 {
	r, _ := v.Dims()
	out := make([][]float64, r)
	for i := range out {
		out[i] = append([]float64(nil), v.RawRowView(i)...)
	}
	return out
}
