package describe

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/big"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
)

// Level is the confidence level of every error bar: 95%.
const Level = 0.95

// uniformInt returns a uniform integer in [0, m) by rejection sampling on
// 64-bit words read from src (exactly uniform).
func uniformInt(src noise.Source, m int) (int, error) {
	if m <= 0 {
		return 0, errors.New("describe: uniformInt: empty range")
	}
	lim := math.MaxUint64 - math.MaxUint64%uint64(m) // accept v < lim
	var b [8]byte
	for {
		if _, err := io.ReadFull(src, b[:]); err != nil {
			return 0, fmt.Errorf("describe: reading randomness: %w", err)
		}
		v := binary.LittleEndian.Uint64(b[:])
		if v < lim {
			return int(v % uint64(m)), nil
		}
	}
}

// ExpMech samples index j with probability proportional to
// exp(ε·u_j/(2Δ)), exactly: the exponential mechanism of McSherry & Talwar
// 2007, which is ε-DP when every score u_j changes by at most Δ between
// neighbouring datasets. The scores are exact rationals. Sampling is by
// rejection: draw j uniformly and accept it with probability
// exp(−ε(u* − u_j)/(2Δ)) (u* the largest score), an exact Bernoulli
// (noise.BernoulliExpNeg); the accepted index has exactly the mechanism's
// distribution, and the expected number of draws is at most len(u).
func ExpMech(src noise.Source, u []*big.Rat, epsilon, sens float64) (int, error) {
	if len(u) == 0 {
		return 0, errors.New("describe: exponential mechanism over no candidates")
	}
	if !(epsilon > 0) || math.IsInf(epsilon, 0) || !(sens > 0) || math.IsInf(sens, 0) {
		return 0, fmt.Errorf("describe: exponential mechanism: ε = %v, Δ = %v must be positive and finite", epsilon, sens)
	}
	best := u[0]
	for _, v := range u[1:] {
		if v.Cmp(best) > 0 {
			best = v
		}
	}
	// c = ε/(2Δ), exactly.
	c := new(big.Rat).SetFloat64(epsilon)
	c.Quo(c, new(big.Rat).SetFloat64(2*sens))
	gamma := new(big.Rat)
	for {
		j, err := uniformInt(src, len(u))
		if err != nil {
			return 0, err
		}
		gamma.Sub(best, u[j])
		gamma.Mul(gamma, c)
		ok, err := noise.BernoulliExpNeg(src, gamma)
		if err != nil {
			return 0, fmt.Errorf("describe: exponential mechanism: %w", err)
		}
		if ok {
			return j, nil
		}
	}
}

// EMRankBound returns t such that the exponential mechanism over m
// candidates at ε with sensitivity Δ selects a candidate whose score is
// within t of the best with probability at least 1 − β:
// P[u* − u_J ≥ t] ≤ m·exp(−εt/(2Δ)) (Dwork & Roth, Theorem 3.11), so
// t = (2Δ/ε)·ln(m/β), rounded up.
func EMRankBound(m int, epsilon, sens, beta float64) float64 {
	t := 2 * sens / epsilon * math.Log(float64(m)/beta)
	return math.Nextafter(t, math.Inf(1))
}

// geoHalfWidth returns the smallest integer k with P(|Z| > k) ≤ β for the
// discrete Laplace Z with P(Z = z) ∝ exp(−|z|/t): P(|Z| > k) =
// 2α^(k+1)/(1+α), α = e^(−1/t).
func geoHalfWidth(t, beta float64) int64 {
	alpha := math.Exp(-1 / t)
	c := 2 / (1 + alpha) // P(|Z| > k) = c·α^(k+1)
	tail := func(k int64) float64 { return c * math.Exp(-float64(k+1)/t) }
	// c·α^(k+1) ≤ β  ⇔  k + 1 ≥ t·ln(c/β); then correct the rounding of
	// the logarithms by a few steps.
	k := max(int64(math.Ceil(t*math.Log(c/beta)))-1, 0)
	for k > 0 && tail(k-1) <= beta {
		k--
	}
	for tail(k) > beta {
		k++
	}
	return k
}

// countRelease adds discrete Laplace noise of scale Δ/ε to integer counts
// whose vector has L1 sensitivity Δ (an integer): P(Z = z) ∝ exp(−ε|z|/Δ),
// so the likelihood ratio of any output between neighbours is at most
// exp(ε·‖c − c′‖₁/Δ) ≤ e^ε: exactly ε-DP, with no rounding slack. It
// returns the scale and the 95% half-width of each count.
func countRelease(src noise.Source, c []int64, epsilon float64, sens int64) (scale float64, half int64, err error) {
	t := new(big.Rat).SetInt64(sens)
	t.Quo(t, new(big.Rat).SetFloat64(epsilon))
	if err := noise.AddDiscreteLaplace(src, c, t); err != nil {
		return 0, 0, fmt.Errorf("describe: count noise: %w", err)
	}
	tf, _ := t.Float64()
	return tf, geoHalfWidth(tf, 1-Level), nil
}

// sumRelease adds Laplace noise (noise.AddLaplace, on its power-of-two
// grid) calibrated by accounting.LaplaceScale for L1 sensitivity sens at ε.
// It returns the scale b and the half-width h with P(|out − x| > h) ≤ β for
// each coordinate: out = g·(round(x/g) + Z) with Z discrete Laplace of scale
// b/g, so |out − x| ≤ g/2 + g|Z| and h = g·(k + ½) for k = geoHalfWidth(b/g, β).
func sumRelease(src noise.Source, x []float64, epsilon, sens, beta float64) (scale, half float64, err error) {
	b, err := accounting.LaplaceScale(epsilon, sens)
	if err != nil {
		return 0, 0, fmt.Errorf("describe: %w", err)
	}
	g, err := noise.LaplaceGrid(b, len(x))
	if err != nil {
		return 0, 0, fmt.Errorf("describe: %w", err)
	}
	if err := noise.AddLaplace(src, x, b); err != nil {
		return 0, 0, fmt.Errorf("describe: sum noise: %w", err)
	}
	k := geoHalfWidth(b/g, beta)
	return b, math.Nextafter(g*(float64(k)+0.5), math.Inf(1)), nil
}

// splitEpsilon returns ε/k rounded down, so that k shares sum to at most ε.
func splitEpsilon(epsilon float64, k int) float64 {
	e := epsilon / float64(k)
	for e*float64(k) > epsilon || sumN(e, k) > epsilon {
		e = math.Nextafter(e, 0)
	}
	return e
}

func sumN(e float64, k int) float64 {
	s := 0.0
	for range k {
		s += e
	}
	return s
}
