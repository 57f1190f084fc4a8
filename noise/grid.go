package noise

import (
	"fmt"
	"math"
	"math/big"
)

// GridSlackRatio bounds the rounding slack of AddGaussian and AddLaplace
// relative to the noise scale: for every vector length n,
// GaussianGridSlack(σ, n) ≤ GridSlackRatio·σ and LaplaceGridSlack(b, n) ≤
// GridSlackRatio·b. accounting.GaussianSigma and accounting.LaplaceScale
// include this slack.
const GridSlackRatio = 0x1p-20

// maxGridInt is the largest |integer| of grid units we accept: such integers
// and their sums with the noise are exactly representable in float64.
const maxGridInt = 1 << 52

// gridFor returns 2^(⌊log2(v)⌋−1) for v > 0: a power of two ≤ v/2, so that
// float rounding in v cannot push the grid above v.
func gridFor(what string, v float64) (float64, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) || v <= 0 {
		return 0, fmt.Errorf("noise: %s must be finite and > 0, got %v", what, v)
	}
	_, exp := math.Frexp(v) // v = f·2^exp, f ∈ [0.5, 1)
	e := exp - 2
	if e < -960 {
		return 0, fmt.Errorf("noise: %s %v too small for an exact grid", what, v)
	}
	return math.Ldexp(1, e), nil
}

// GaussianGrid returns the grid spacing g that AddGaussian uses for a vector
// of n coordinates with noise σ: the power of two with
// g ≤ GridSlackRatio·σ/(2√n) < 2g (halved once more in the rare case where
// float rounding would otherwise let the slack exceed GridSlackRatio·σ/2).
func GaussianGrid(sigma float64, n int) (float64, error) {
	if n < 1 {
		return 0, fmt.Errorf("noise: vector length must be ≥ 1, got %d", n)
	}
	if math.IsNaN(sigma) || math.IsInf(sigma, 0) || sigma <= 0 {
		return 0, fmt.Errorf("noise: Gaussian σ must be finite and > 0, got %v", sigma)
	}
	g, err := gridFor("Gaussian σ", sigma*GridSlackRatio/math.Sqrt(float64(n)))
	if err != nil {
		return 0, err
	}
	// Guard against rounding in σ·r/√n: the rounded-up slack must not
	// exceed r·σ/2 (an exact product).
	for g > 0 && math.Nextafter(g*math.Sqrt(float64(n)), math.Inf(1)) > sigma*(GridSlackRatio/2) {
		g /= 2
	}
	return g, nil
}

// LaplaceGrid returns the grid spacing g that AddLaplace uses for a vector of
// n coordinates with scale b: the power of two with
// g ≤ GridSlackRatio·b/(2n) < 2g.
func LaplaceGrid(scale float64, n int) (float64, error) {
	if n < 1 {
		return 0, fmt.Errorf("noise: vector length must be ≥ 1, got %d", n)
	}
	if math.IsNaN(scale) || math.IsInf(scale, 0) || scale <= 0 {
		return 0, fmt.Errorf("noise: Laplace scale must be finite and > 0, got %v", scale)
	}
	g, err := gridFor("Laplace scale", scale*GridSlackRatio/float64(n))
	if err != nil {
		return 0, err
	}
	for g > 0 && g*float64(n) > scale*(GridSlackRatio/2) { // g·n is exact
		g /= 2
	}
	return g, nil
}

// GaussianGridSlack returns the largest increase of the L2 sensitivity of an
// n-vector caused by AddGaussian's rounding to its grid: g·√n, where g =
// GaussianGrid(σ, n). Derivation: snapping moves each coordinate by at most
// g/2, so for neighbouring inputs the snapped difference differs from the
// true difference by a vector with coordinates in [−g, g], of L2 norm ≤ g√n.
// It never exceeds GridSlackRatio·σ/2 (the grid is chosen so that even the
// rounded-up value does not). It returns +Inf for invalid input.
func GaussianGridSlack(sigma float64, n int) float64 {
	g, err := GaussianGrid(sigma, n)
	if err != nil {
		return math.Inf(1)
	}
	return math.Nextafter(g*math.Sqrt(float64(n)), math.Inf(1))
}

// LaplaceGridSlack returns the largest increase of the L1 sensitivity of an
// n-vector caused by AddLaplace's rounding: g·n with g = LaplaceGrid(b, n)
// (same derivation as GaussianGridSlack, with the L1 norm). It never exceeds
// GridSlackRatio·b/2. It returns +Inf for invalid input.
func LaplaceGridSlack(scale float64, n int) float64 {
	g, err := LaplaceGrid(scale, n)
	if err != nil {
		return math.Inf(1)
	}
	return g * float64(n) // exact: power of two times an integer < 2^53
}

// snap validates x and returns round(x/g) for each coordinate.
func snap(x []float64, g float64) ([]int64, error) {
	k := make([]int64, len(x))
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("noise: coordinate %d is %v", i, v)
		}
		q := math.RoundToEven(v / g) // v/g is exact (power-of-two scaling)
		if math.Abs(q) > maxGridInt {
			return nil, fmt.Errorf("noise: coordinate %d = %g is too large for noise grid %g (|x|/grid > 2^52); rescale the data", i, v, g)
		}
		k[i] = int64(q)
	}
	return k, nil
}

// unsnap writes g·(k+z) into x, refusing results that would not be exact.
func unsnap(x []float64, k, z []int64, g float64) error {
	for i := range k {
		s := k[i] + z[i]
		if s > 1<<53 || s < -(1<<53) {
			return fmt.Errorf("noise: coordinate %d plus noise leaves the exact range of the grid %g", i, g)
		}
		if math.IsInf(float64(s)*g, 0) {
			return fmt.Errorf("noise: coordinate %d plus noise overflows float64 (grid %g)", i, g)
		}
	}
	for i := range k {
		x[i] = float64(k[i]+z[i]) * g
	}
	return nil
}

// AddGaussian adds Gaussian noise of standard deviation σ to every
// coordinate of x, in place, on the power-of-two grid GaussianGrid(σ, len(x))
// (see the package documentation). The mechanism x ↦ AddGaussian(x) is
// exactly the discrete Gaussian mechanism on the grid; its L2 sensitivity is
// that of x plus GaussianGridSlack(σ, len(x)). On error x is unchanged.
func AddGaussian(src Source, x []float64, sigma float64) error {
	if len(x) == 0 {
		return nil
	}
	g, err := GaussianGrid(sigma, len(x))
	if err != nil {
		return err
	}
	k, err := snap(x, g)
	if err != nil {
		return err
	}
	s := new(big.Rat).SetFloat64(sigma / g) // exact: power-of-two scaling
	dg := newDG(new(big.Rat).Mul(s, s))
	z, err := drawInts(src, len(x), func(r *rng) (int64, error) { return r.discreteGaussian(dg) })
	if err != nil {
		return err
	}
	return unsnap(x, k, z, g)
}

// AddLaplace adds Laplace noise of scale b to every coordinate of x, in
// place, on the power-of-two grid LaplaceGrid(b, len(x)). The mechanism is
// exactly the discrete Laplace mechanism on the grid; its L1 sensitivity is
// that of x plus LaplaceGridSlack(b, len(x)). On error x is unchanged.
func AddLaplace(src Source, x []float64, scale float64) error {
	if len(x) == 0 {
		return nil
	}
	g, err := LaplaceGrid(scale, len(x))
	if err != nil {
		return err
	}
	k, err := snap(x, g)
	if err != nil {
		return err
	}
	b := new(big.Rat).SetFloat64(scale / g) // exact: power-of-two scaling
	z, err := drawInts(src, len(x), func(r *rng) (int64, error) { return r.discreteLaplaceInt(b.Num(), b.Denom()) })
	if err != nil {
		return err
	}
	return unsnap(x, k, z, g)
}

// Gaussian returns one draw of N(0, σ²) noise on the grid GaussianGrid(σ, 1).
// Release a value as x + Gaussian(σ) only after snapping x to that grid, or
// better call AddGaussian, which does both. Do not build a vector from n
// scalar draws: its L2 slack would be GaussianGridSlack(σ, 1)·√n, not the
// bounded GaussianGridSlack(σ, n) that GaussianSigma assumes.
func Gaussian(src Source, sigma float64) (float64, error) {
	x := []float64{0}
	err := AddGaussian(src, x, sigma)
	return x[0], err
}

// Laplace returns one draw of Laplace(0, b) noise on the grid LaplaceGrid(b, 1).
// As for Gaussian, use AddLaplace for vectors (the L1 slack of n scalar
// draws is n·LaplaceGridSlack(b, 1), beyond what LaplaceScale assumes).
func Laplace(src Source, scale float64) (float64, error) {
	x := []float64{0}
	err := AddLaplace(src, x, scale)
	return x[0], err
}

// rngSizeFor returns the randomness buffer size for an n-vector: about 32
// bytes per coordinate, between 128 bytes and 8 KiB.
// drawInts draws n independent integers with draw, from one randomness
// buffer sized for n draws. Every vector sampler goes through it.
func drawInts(src Source, n int, draw func(*rng) (int64, error)) ([]int64, error) {
	r, err := newRNGSize(src, rngSizeFor(n))
	if err != nil {
		return nil, err
	}
	z := make([]int64, n)
	for i := range z {
		if z[i], err = draw(r); err != nil {
			return nil, err
		}
	}
	return z, nil
}

func rngSizeFor(n int) int { return min(max(32*n, 128), 8192) }
