package accounting

import (
	"fmt"
	"math"
)

// BinomialDPPP returns the smallest number of fair coin flips n such that the
// binomial mechanism (noise Binomial(n, ½) − n/2 on each coordinate) is
// (ε, δ)-DP by the DPPP seed's Theorem 1, n ≥ 2((2+ε)/ε)² ln(2/δ), stated for
// one count with sensitivity 1.
//
// For integer L1 sensitivity Δ ≥ 1 of a histogram whose coordinates move by
// at most 1 (PRIVACY-NOTES item 12: Δ = 2 for a vote histogram), at most Δ
// coordinates change, each an independent scalar mechanism, so by basic
// composition each is given (ε/Δ, δ/Δ) (PRIVACY-NOTES item 14).
func BinomialDPPP(epsilon, delta float64, l1Sensitivity int) (int64, error) {
	if err := checkPositive("ε", epsilon); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if l1Sensitivity < 1 {
		return 0, fmt.Errorf("accounting: binomial sensitivity must be an integer ≥ 1, got %d", l1Sensitivity)
	}
	e := epsilon / float64(l1Sensitivity)
	d := delta / float64(l1Sensitivity)
	r := (2 + e) / e
	n := math.Ceil(2 * r * r * math.Log(2/d))
	if n > 1<<52 {
		return 0, fmt.Errorf("accounting: binomial mechanism needs n=%g flips, too many", n)
	}
	return int64(n), nil
}

// CPSGDParams are the parameters of Theorem 1 of Agarwal et al. 2018 (cpSGD):
// a d-dimensional binomial mechanism with n flips of bias p, quantisation
// scale s, applied to a function with sensitivities Δ1, Δ2, Δ∞ (before
// scaling by s).
type CPSGDParams struct {
	N                      int64
	P, S                   float64
	Dim                    int
	Delta1, Delta2, DeltaI float64
}

// CPSGDEpsilon returns the ε of Theorem 1 of cpSGD (Agarwal et al. 2018) at
// δ: with σ² = np(1−p),
//
//	ε = Δ2√(2 ln(1.25/δ))/(sσ) + (Δ2 c_p √(ln(10/δ)) + Δ1 b_p)/(sσ²(1 − δ/10))
//	    + ((2/3)Δ∞ ln(1.25/δ) + Δ∞ d_p ln(20d/δ) ln(10/δ))/(sσ²),
//
// c_p = √2(3p³ + 3(1−p)³ + 2p² + 2(1−p)²), b_p = (2/3)(p² + (1−p)²) + 1 − 2p,
// d_p = (4/3)(p² + (1−p)²), valid when np(1−p) ≥ max(23 ln(10d/δ), 2Δ∞/s);
// otherwise it returns an error.
func CPSGDEpsilon(c CPSGDParams, delta float64) (float64, error) {
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if c.N < 1 || !finite(c.P) || c.P <= 0 || c.P >= 1 || c.Dim < 1 {
		return 0, fmt.Errorf("accounting: cpSGD needs n ≥ 1, p ∈ (0,1), d ≥ 1; got n=%d p=%v d=%d", c.N, c.P, c.Dim)
	}
	for _, v := range []float64{c.S, c.Delta1, c.Delta2, c.DeltaI} {
		if err := checkPositive("cpSGD scale/sensitivity", v); err != nil {
			return 0, err
		}
	}
	p, q := c.P, 1-c.P
	v := float64(c.N) * p * q
	d := float64(c.Dim)
	if v < math.Max(23*math.Log(10*d/delta), 2*c.DeltaI/c.S) {
		return 0, fmt.Errorf("accounting: cpSGD Theorem 1 needs np(1−p) ≥ max(23 ln(10d/δ), 2Δ∞/s); np(1−p)=%v", v)
	}
	cp := math.Sqrt2 * (3*p*p*p + 3*q*q*q + 2*p*p + 2*q*q)
	bp := 2.0/3*(p*p+q*q) + 1 - 2*p
	dp := 4.0 / 3 * (p*p + q*q)
	sd := math.Sqrt(v)
	e := c.Delta2 * math.Sqrt(2*math.Log(1.25/delta)) / (c.S * sd)
	e += (c.Delta2*cp*math.Sqrt(math.Log(10/delta)) + c.Delta1*bp) / (c.S * v * (1 - delta/10))
	e += (2.0/3*c.DeltaI*math.Log(1.25/delta) + c.DeltaI*dp*math.Log(20*d/delta)*math.Log(10/delta)) / (c.S * v)
	return e, nil
}

// BinomialCPSGD returns the smallest n for which the scalar binomial
// mechanism (p = ½, s = 1, d = 1) with sensitivity Δ (Δ1 = Δ2 = Δ∞ = Δ) is
// (ε, δ)-DP by cpSGD Theorem 1.
func BinomialCPSGD(epsilon, delta, sens float64) (int64, error) {
	if err := checkPositive("ε", epsilon); err != nil {
		return 0, err
	}
	if err := checkPositive("sensitivity", sens); err != nil {
		return 0, err
	}
	eps := func(n int64) (float64, error) {
		return CPSGDEpsilon(CPSGDParams{N: n, P: 0.5, S: 1, Dim: 1, Delta1: sens, Delta2: sens, DeltaI: sens}, delta)
	}
	ok := func(n int64) bool { e, err := eps(n); return err == nil && e <= epsilon }
	if _, err := eps(1 << 50); err != nil {
		return 0, err
	}
	n, found := smallestInt(ok, 1<<50)
	if !found {
		return 0, fmt.Errorf("accounting: cpSGD needs more than 2^50 flips for ε=%v", epsilon)
	}
	return n, nil
}

// BinomialExactDelta returns the exact δ(ε) of the scalar binomial mechanism
// y = f + Binomial(n, ½) with integer sensitivity Δ: the maximum over the two
// directions of Σ_y max(0, P[y] − e^ε P′[y]), which by symmetry of B(n, ½) is
// Σ_k max(0, b(k) − e^ε b(k − Δ)) with b the B(n, ½) pmf (b(j) = 0 outside
// [0, n]). Terms more than 40 standard deviations from n/2 are below 1e-300
// and skipped. It is an independent check of BinomialDPPP and BinomialCPSGD.
func BinomialExactDelta(n int64, epsilon float64, sens int64) (float64, error) {
	if n < 1 || n > 1<<40 {
		return 0, fmt.Errorf("accounting: n must be in [1, 2^40], got %d", n)
	}
	if !finite(epsilon) || epsilon < 0 {
		return 0, fmt.Errorf("accounting: ε must be finite and ≥ 0, got %v", epsilon)
	}
	if sens < 1 {
		return 0, fmt.Errorf("accounting: sensitivity must be ≥ 1, got %d", sens)
	}
	fn := float64(n)
	lb := func(k int64) float64 {
		if k < 0 || k > n {
			return math.Inf(-1)
		}
		return logBinom(fn, float64(k)) - fn*math.Ln2
	}
	w := int64(40*math.Sqrt(fn)/2) + sens + 1
	lo, hi := max(n/2-w, 0), min(n/2+w, n)
	var delta float64
	for k := lo; k <= hi+sens; k++ {
		a := lb(k)
		b := epsilon + lb(k-sens)
		if a > b {
			delta += math.Exp(a) * -math.Expm1(b-a)
		}
	}
	return delta, nil
}

// BinomialExactN returns the smallest n (found by bisection over n, and
// verified) such that the scalar binomial mechanism with integer sensitivity
// Δ is (ε, δ)-DP by the exact privacy profile: the maximum of
// BinomialExactDelta over all shifts 1..Δ is ≤ δ. It needs no theorem and
// is never larger than the published bounds (BinomialDPPP, BinomialCPSGD).
func BinomialExactN(epsilon, delta float64, sens int64) (int64, error) {
	if err := checkPositive("ε", epsilon); err != nil {
		return 0, err
	}
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	if sens < 1 || sens > 1000 {
		return 0, fmt.Errorf("accounting: binomial sensitivity must be an integer in [1, 1000], got %d", sens)
	}
	ok := func(n int64) bool {
		for s := int64(1); s <= sens; s++ {
			d, err := BinomialExactDelta(n, epsilon, s)
			if err != nil || d > delta {
				return false
			}
		}
		return true
	}
	n, found := smallestInt(ok, 1<<36)
	if !found {
		return 0, fmt.Errorf("accounting: binomial mechanism needs more than 2^36 flips for ε=%v", epsilon)
	}
	return n, nil
}
