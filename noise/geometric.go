package noise

import (
	"fmt"
	"math/big"
)

// GeometricFast returns n independent draws of V ≥ 0 with
// P(V = v) = (1 − e^{−γ}) e^{−γv}, exactly, for a rational γ = s/t > 0.
//
// Unlike Geometric, which flips Bernoulli(e^{−γ}) coins one at a time and
// needs about 1/(1 − e^{−γ}) of them, this is the first stage of Algorithm 2
// of Canonne, Kamath & Steinke 2020: draw U uniform on {0, …, t−1} and keep
// it with probability e^{−U/t}, draw W ~ Geometric(e^{−1}), so that
// X = U + tW ~ Geometric(e^{−1/t}); then V = ⌊X/s⌋ ~ Geometric(e^{−s/t}).
// The expected work is O(1) coin batches whatever γ is, which is what the
// skip sampling of a sparse filter (package synth) needs when γ ≈ 10⁻⁹.
// Draws above 2^63 − 1 are an error; GeometricFastCensored avoids it.
func GeometricFast(src Source, gamma *big.Rat, n int) ([]int64, error) {
	return geometricFastN(src, gamma, n, nil)
}

// GeometricFastCensored is GeometricFast returning min(V, limit) for a
// limit ≥ 0: the law of V censored at limit, exactly (a skip sampler only
// needs to know that a gap is at least the rest of its range).
func GeometricFastCensored(src Source, gamma *big.Rat, n int, limit int64) ([]int64, error) {
	if limit < 0 {
		return nil, fmt.Errorf("noise: GeometricFastCensored: negative limit %d", limit)
	}
	return geometricFastN(src, gamma, n, big.NewInt(limit))
}

func geometricFastN(src Source, gamma *big.Rat, n int, limit *big.Int) ([]int64, error) {
	if err := checkScaleRat("geometric γ", gamma); err != nil {
		return nil, err
	}
	if n < 0 {
		return nil, fmt.Errorf("noise: GeometricFast: negative count %d", n)
	}
	if n == 0 {
		return nil, nil
	}
	s, t := gamma.Num(), gamma.Denom()
	return drawInts(src, n, func(r *rng) (int64, error) { return r.geometricFast(s, t, limit) })
}

// geometricFast returns ⌊(U + tW)/s⌋ as described in GeometricFast,
// censored at limit when limit is not nil.
func (r *rng) geometricFast(s, t, limit *big.Int) (int64, error) {
	x := new(big.Int)
	for {
		u, err := r.bigIntn(t)
		if err != nil {
			return 0, err
		}
		keep, err := r.bernoulliExpNegFrac(u, t)
		if err != nil {
			return 0, err
		}
		if !keep {
			continue
		}
		w, err := r.geometricExpNeg1()
		if err != nil {
			return 0, err
		}
		x.Mul(t, w)
		x.Add(x, u)
		x.Quo(x, s)
		if limit != nil && x.Cmp(limit) > 0 {
			return limit.Int64(), nil
		}
		return toInt64(x)
	}
}
