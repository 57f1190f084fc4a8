// Package noise provides the randomness and the privacy-noise samplers of
// dplearn: a cryptographically secure Source, exact integer samplers after
// Canonne, Kamath & Steinke 2020 ("The discrete Gaussian for differential
// privacy": Bernoulli(p) for rational p, Bernoulli(exp(−γ)), geometric,
// discrete Laplace, discrete Gaussian, all in exact big-rational arithmetic),
// exact Binomial(n, ½) coin counting, and continuous Laplace and Gaussian noise
// that is immune to the floating-point attack of Mironov 2012.
//
// # Continuous noise on a power-of-two grid
//
// AddLaplace and AddGaussian never turn uniform doubles into noise. For a
// vector x of length n and noise scale s they pick a grid spacing g = 2^k (see
// GaussianGrid and LaplaceGrid), snap each coordinate to the nearest grid
// point, x̄ᵢ = g·round(xᵢ/g), draw an exact discrete Laplace or discrete
// Gaussian integer Zᵢ with scale s/g, and return g·(round(xᵢ/g) + Zᵢ), computed
// in integers and converted to float64 exactly (the result is refused if it
// does not fit in 53 bits). Every output is therefore a grid point and its
// distribution is an exact discrete Laplace/Gaussian centred at x̄.
//
// Snapping moves each coordinate by at most g/2, so for neighbouring inputs x,
// x′ the snapped difference satisfies
//
//	‖x̄ − x̄′‖ ≤ ‖x − x′‖ + ‖(x̄ − x) − (x̄′ − x′)‖,
//
// and each coordinate of the last vector is at most g in absolute value.
// The rounding slack is therefore at most g·√n in L2 (GaussianGridSlack) and
// g·n in L1 (LaplaceGridSlack). The grids are chosen so that these slacks never
// exceed GridSlackRatio times the noise scale, whatever n is, so a calibration
// that inflates the sensitivity by GridSlackRatio·scale (accounting.GaussianSigma,
// accounting.LaplaceScale) is valid for vectors of every length.
//
// # Discrete versus continuous privacy curves
//
// AddLaplace is exactly the discrete Laplace mechanism: its slack alone is
// enough. AddGaussian is a discrete Gaussian on ℤⁿ (in grid units, with
// σ/g ≥ MinGridScale = 2^21), and its exact δ(ε) exceeds the continuous
// analytic Gaussian curve at the same sensitivity by up to a few 10⁻¹³
// relative. GaussianCalibrationSensitivity adds the grid slack and a relative
// margin DiscreteGaussianMargin = 2^-32 that provably covers this (with the
// proof in its comment); calibrations with the analytic Gaussian or Gaussian
// DP curves should use it. zCDP accounting needs the slack only.
//
// # Randomness
//
// NewSecure reads crypto/rand. Large draws (vectors of 128 or more
// coordinates, binomials above 2^12 flips) read one 384-bit key from the
// Source and expand it with AES-256-CTR (crypto/aes, crypto/cipher), a
// standard cryptographic pseudorandom generator, instead of asking the
// operating system for every byte. NewInsecureSeeded is a deterministic ChaCha8
// stream for tests and experiment reproduction only: Secure() reports false and
// String() says "INSECURE seeded"; callers that print a privacy report must
// print that string.
package noise

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"sync"
)

// Source is a stream of uniformly random bytes.
type Source interface {
	io.Reader
	// Secure reports whether the bytes come from a cryptographically secure
	// generator. Only secure sources give the privacy guarantees.
	Secure() bool
	// String names the source for privacy reports.
	String() string
}

type secureSource struct{}

// NewSecure returns a Source reading the operating system's CSPRNG
// (crypto/rand). It is safe for concurrent use.
func NewSecure() Source { return secureSource{} }

func (secureSource) Read(p []byte) (int, error) { return rand.Read(p) }
func (secureSource) Secure() bool               { return true }
func (secureSource) String() string             { return "secure (crypto/rand)" }

type insecureSource struct {
	mu   sync.Mutex
	seed uint64
	c    *mrand.ChaCha8
}

// NewInsecureSeeded returns a deterministic Source (ChaCha8 keyed by seed) for
// tests and reproducible experiments. It gives NO privacy: anyone who knows
// the seed can subtract the noise. Secure() is false and String() says
// "INSECURE seeded". It is safe for concurrent use (but then the order of
// draws, hence the output, depends on scheduling).
func NewInsecureSeeded(seed uint64) Source {
	var key [32]byte
	binary.LittleEndian.PutUint64(key[:8], seed)
	copy(key[8:], "dplearn INSECURE seeded source")
	return &insecureSource{seed: seed, c: mrand.NewChaCha8(key)}
}

func (s *insecureSource) Read(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.c.Read(p)
}
func (s *insecureSource) Secure() bool { return false }
func (s *insecureSource) String() string {
	return fmt.Sprintf("INSECURE seeded (ChaCha8, seed %d): NOT differentially private, tests/experiments only", s.seed)
}
