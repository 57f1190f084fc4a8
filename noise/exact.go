package noise

import (
	"fmt"
	"math"
	"math/big"
	"math/bits"
)

// The samplers in this file follow Canonne, Kamath & Steinke 2020, "The
// Discrete Gaussian for Differential Privacy", Section 5 (Algorithms 1-3).
// All arithmetic is on integers and exact rationals; the only randomness is
// uniform integers drawn by rejection from the Source.

var (
	bigOne = big.NewInt(1)
)

// bernoulliFrac returns true with probability num/den (0 ≤ num ≤ den, den > 0).
func (r *rng) bernoulliFrac(num, den *big.Int) (bool, error) {
	if num.Sign() <= 0 {
		return false, nil
	}
	if num.Cmp(den) >= 0 {
		return true, nil
	}
	if den.IsUint64() {
		u, err := r.uintn(den.Uint64())
		return u < num.Uint64(), err
	}
	u, err := r.bigIntnInto(&r.u, den)
	if err != nil {
		return false, err
	}
	return u.Cmp(num) < 0, nil
}

// bernoulliExpNegFrac returns true with probability exp(−num/den) for
// num/den ∈ [0, 1] (Algorithm 1 of CKS 2020, first case).
func (r *rng) bernoulliExpNegFrac(num, den *big.Int) (bool, error) {
	// K ← 1; loop { A ← Bernoulli(γ/K); if A = 0 break; K ← K+1 }; return K odd.
	if num.Sign() == 0 {
		return true, nil
	}
	small := num.IsUint64() && den.IsUint64() && den.BitLen() < 40
	var nu, du uint64
	if small {
		nu, du = num.Uint64(), den.Uint64()
	}
	kd := &r.kd
	for k := uint64(1); ; k++ {
		var a bool
		var err error
		if small && k < 1<<20 {
			var u uint64
			u, err = r.uintn(du * k)
			a = u < nu
		} else {
			kd.SetUint64(k)
			kd.Mul(kd, den)
			a, err = r.bernoulliFrac(num, kd)
		}
		if err != nil {
			return false, err
		}
		if !a {
			return k%2 == 1, nil
		}
	}
}

// bernoulliExpNeg returns true with probability exp(−γ) for a rational γ ≥ 0
// (Algorithm 1 of CKS 2020): ⌊γ⌋ independent Bernoulli(exp(−1)) trials, then
// one Bernoulli(exp(−(γ − ⌊γ⌋))).
func (r *rng) bernoulliExpNeg(gamma *big.Rat) (bool, error) {
	if gamma.Sign() < 0 {
		return false, fmt.Errorf("noise: Bernoulli(exp(-γ)) needs γ ≥ 0, got %s", gamma.RatString())
	}
	return r.bernoulliExpNegND(gamma.Num(), gamma.Denom(), new(big.Int), new(big.Int))
}

// bernoulliExpNegND is bernoulliExpNeg for γ = num/den (num ≥ 0, den > 0,
// not necessarily in lowest terms); q and rem are scratch space.
func (r *rng) bernoulliExpNegND(num, den, q, rem *big.Int) (bool, error) {
	q.QuoRem(num, den, rem)
	if !q.IsInt64() {
		// exp(−2^63) is far below anything a Source can distinguish from 0:
		// the loop below would return false long before finishing anyway.
		return false, nil
	}
	for i := int64(0); i < q.Int64(); i++ {
		b, err := r.bernoulliExpNegFrac(bigOne, bigOne)
		if err != nil || !b {
			return false, err
		}
	}
	return r.bernoulliExpNegFrac(rem, den)
}

// geometricExpNeg1 returns V ≥ 0 with P(V = v) = (1 − e^{−1}) e^{−v}.
func (r *rng) geometricExpNeg1() (*big.Int, error) {
	v := new(big.Int)
	for {
		b, err := r.bernoulliExpNegFrac(bigOne, bigOne)
		if err != nil {
			return nil, err
		}
		if !b {
			return v, nil
		}
		v.Add(v, bigOne)
	}
}

// discreteLaplace returns Y ∈ ℤ with P(Y = y) ∝ exp(−|y|·s/t), i.e. the
// discrete Laplace distribution with scale t/s (Algorithm 2 of CKS 2020).
func (r *rng) discreteLaplace(t, s *big.Int) (*big.Int, error) {
	x := new(big.Int)
	y := new(big.Int)
	for {
		u, err := r.bigIntn(t)
		if err != nil {
			return nil, err
		}
		d, err := r.bernoulliExpNegFrac(u, t)
		if err != nil {
			return nil, err
		}
		if !d {
			continue
		}
		v, err := r.geometricExpNeg1()
		if err != nil {
			return nil, err
		}
		x.Mul(t, v)
		x.Add(x, u)
		y.Quo(x, s)
		b, err := r.uint64()
		if err != nil {
			return nil, err
		}
		neg := b&1 == 1
		if neg && y.Sign() == 0 {
			continue
		}
		if neg {
			y.Neg(y)
		}
		return y, nil
	}
}

// dgParams holds the constants of Algorithm 3 of CKS 2020 for one σ².
//
// With σ² = a/b and t = ⌊σ⌋ + 1, the acceptance exponent is
// γ = (|Y| − σ²/t)²/(2σ²) = (|Y|·b·t − a)² / (2·a·b·t²), evaluated in exact
// integer arithmetic (no rational normalisation in the loop).
type dgParams struct {
	a, t, bt, den *big.Int
	num, q, rem   big.Int
}

func newDG(sigma2 *big.Rat) *dgParams {
	a, b := sigma2.Num(), sigma2.Denom()
	// t ← ⌊σ⌋ + 1, computed exactly: ⌊σ⌋ = ⌊√⌊σ²⌋⌋.
	t := new(big.Int).Quo(a, b)
	t.Sqrt(t)
	t.Add(t, bigOne)
	bt := new(big.Int).Mul(b, t)
	den := new(big.Int).Mul(a, bt)
	den.Mul(den, t)
	den.Lsh(den, 1) // 2abt²
	return &dgParams{a: new(big.Int).Set(a), t: t, bt: bt, den: den}
}

// discreteGaussian returns Y ∈ ℤ with P(Y = y) ∝ exp(−y²/(2σ²))
// (Algorithm 3 of CKS 2020): Y ← DLap(t); accept with probability exp(−γ).
func (r *rng) discreteGaussian(p *dgParams) (int64, error) {
	for {
		y, err := r.discreteLaplaceInt(p.t, bigOne)
		if err != nil {
			return 0, err
		}
		p.num.SetInt64(y)
		p.num.Abs(&p.num)
		p.num.Mul(&p.num, p.bt)
		p.num.Sub(&p.num, p.a)
		p.num.Mul(&p.num, &p.num)
		c, err := r.bernoulliExpNegND(&p.num, p.den, &p.q, &p.rem)
		if err != nil {
			return 0, err
		}
		if c {
			return y, nil
		}
	}
}

// discreteLaplaceInt is discreteLaplace returning an int64, with a
// fixed-width fast path when t and s are below 2^40 (the same algorithm on
// machine integers).
func (r *rng) discreteLaplaceInt(t, s *big.Int) (int64, error) {
	if !(t.IsUint64() && s.IsUint64() && t.BitLen() < 40 && s.BitLen() < 40) {
		y, err := r.discreteLaplace(t, s)
		if err != nil {
			return 0, err
		}
		return toInt64(y)
	}
	tu, su := t.Uint64(), s.Uint64()
	var un, tn big.Int
	tn.SetUint64(tu)
	for {
		u, err := r.uintn(tu)
		if err != nil {
			return 0, err
		}
		un.SetUint64(u)
		d, err := r.bernoulliExpNegFrac(&un, &tn)
		if err != nil {
			return 0, err
		}
		if !d {
			continue
		}
		var v uint64
		for {
			b, err := r.bernoulliExpNegFrac(bigOne, bigOne)
			if err != nil {
				return 0, err
			}
			if !b {
				break
			}
			v++
		}
		hi, lo := bits.Mul64(tu, v)
		x, carry := bits.Add64(lo, u, 0)
		if hi != 0 || carry != 0 || x > math.MaxInt64 {
			return 0, fmt.Errorf("noise: discrete Laplace sample overflows int64")
		}
		y := int64(x / su)
		w, err := r.uint64()
		if err != nil {
			return 0, err
		}
		if w&1 == 1 {
			if y == 0 {
				continue
			}
			y = -y
		}
		return y, nil
	}
}

// Bernoulli returns true with probability p = num/den exactly (0 ≤ p ≤ 1).
func Bernoulli(src Source, p *big.Rat) (bool, error) {
	if p == nil || p.Sign() < 0 || p.Cmp(big.NewRat(1, 1)) > 0 {
		return false, fmt.Errorf("noise: Bernoulli probability must be in [0, 1], got %v", p)
	}
	r, err := newRNG(src)
	if err != nil {
		return false, err
	}
	return r.bernoulliFrac(p.Num(), p.Denom())
}

// BernoulliExpNeg returns true with probability exp(−γ) exactly, γ ≥ 0 rational.
func BernoulliExpNeg(src Source, gamma *big.Rat) (bool, error) {
	if gamma == nil {
		return false, fmt.Errorf("noise: BernoulliExpNeg: nil γ")
	}
	r, err := newRNG(src)
	if err != nil {
		return false, err
	}
	return r.bernoulliExpNeg(gamma)
}

// Geometric returns V ≥ 0 with P(V = v) = (1 − e^{−γ}) e^{−γv} exactly, for a
// rational γ > 0 (the number of successes of Bernoulli(exp(−γ)) before the
// first failure).
func Geometric(src Source, gamma *big.Rat) (int64, error) {
	if gamma == nil || gamma.Sign() <= 0 {
		return 0, fmt.Errorf("noise: Geometric needs γ > 0, got %v", gamma)
	}
	r, err := newRNG(src)
	if err != nil {
		return 0, err
	}
	var v int64
	for {
		b, err := r.bernoulliExpNeg(gamma)
		if err != nil {
			return 0, err
		}
		if !b {
			return v, nil
		}
		v++
	}
}

func checkScaleRat(what string, x *big.Rat) error {
	if x == nil || x.Sign() <= 0 {
		return fmt.Errorf("noise: %s must be a positive rational, got %v", what, x)
	}
	return nil
}

func toInt64(y *big.Int) (int64, error) {
	if !y.IsInt64() {
		return 0, fmt.Errorf("noise: sample %s overflows int64", y)
	}
	return y.Int64(), nil
}

// DiscreteLaplace returns Y ∈ ℤ with P(Y = y) ∝ exp(−|y|/scale), exactly.
func DiscreteLaplace(src Source, scale *big.Rat) (int64, error) {
	if err := checkScaleRat("discrete Laplace scale", scale); err != nil {
		return 0, err
	}
	r, err := newRNG(src)
	if err != nil {
		return 0, err
	}
	return r.discreteLaplaceInt(scale.Num(), scale.Denom())
}

// DiscreteGaussian returns Y ∈ ℤ with P(Y = y) ∝ exp(−y²/(2·sigma2)), exactly.
// sigma2 is the variance parameter σ² (not the variance of Y, which is
// slightly smaller).
func DiscreteGaussian(src Source, sigma2 *big.Rat) (int64, error) {
	if err := checkScaleRat("discrete Gaussian σ²", sigma2); err != nil {
		return 0, err
	}
	r, err := newRNG(src)
	if err != nil {
		return 0, err
	}
	return r.discreteGaussian(newDG(sigma2))
}

// AddDiscreteGaussian adds independent N_ℤ(0, sigma2) noise to every entry
// of the integer vector x, in place (the distributed discrete Gaussian
// mechanism's local step). On error x is unchanged.
func AddDiscreteGaussian(src Source, x []int64, sigma2 *big.Rat) error {
	if err := checkScaleRat("discrete Gaussian σ²", sigma2); err != nil {
		return err
	}
	if len(x) == 0 {
		return nil
	}
	dg := newDG(sigma2)
	z, err := drawInts(src, len(x), func(r *rng) (int64, error) { return r.discreteGaussian(dg) })
	if err != nil {
		return err
	}
	return addInts(x, z)
}

// AddDiscreteLaplace adds independent discrete Laplace noise of the given
// scale to every entry of x, in place. On error x is unchanged.
func AddDiscreteLaplace(src Source, x []int64, scale *big.Rat) error {
	if err := checkScaleRat("discrete Laplace scale", scale); err != nil {
		return err
	}
	if len(x) == 0 {
		return nil
	}
	z, err := drawInts(src, len(x), func(r *rng) (int64, error) { return r.discreteLaplaceInt(scale.Num(), scale.Denom()) })
	if err != nil {
		return err
	}
	return addInts(x, z)
}

func addInts(x, z []int64) error {
	for i := range x {
		if s := x[i] + z[i]; (z[i] > 0 && s < x[i]) || (z[i] < 0 && s > x[i]) {
			return fmt.Errorf("noise: entry %d = %d plus noise overflows int64", i, x[i])
		}
	}
	for i := range x {
		x[i] += z[i]
	}
	return nil
}
