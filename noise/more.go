package noise

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"math/bits"
)

// MaxBinomialFlips is the largest n accepted by Binomial.
const MaxBinomialFlips = 1 << 40

// Binomial returns the number of heads among n fair coins, exactly: it reads
// n random bits from src and counts the ones (64 at a time with a popcount).
// n may be up to MaxBinomialFlips. For n > 2^12 the bits are an AES-256-CTR
// keystream (crypto/aes, crypto/cipher) keyed with 384 fresh bits from src,
// so a secure src gives cryptographically secure bits at several times the
// speed of reading n/8 bytes from the OS. The binomial noise of the binomial
// mechanism is Binomial(src, n) − n/2.
func Binomial(src Source, n int64) (int64, error) {
	if n < 0 || n > MaxBinomialFlips {
		return 0, fmt.Errorf("noise: Binomial needs 0 ≤ n ≤ 2^40, got %d", n)
	}
	if src == nil {
		return 0, fmt.Errorf("noise: nil Source")
	}
	var rd io.Reader = src
	if n > 1<<12 {
		// Large n: expand a fresh 256-bit key and 128-bit IV read from src
		// with AES-256-CTR (a standard-library cryptographic PRG, hardware
		// accelerated), several times faster than reading n bits from the OS.
		var key [48]byte
		if _, err := readFull(src, key[:]); err != nil {
			return 0, err
		}
		block, err := aes.NewCipher(key[:32])
		if err != nil {
			return 0, fmt.Errorf("noise: binomial stream: %w", err)
		}
		rd = cipher.StreamReader{S: cipher.NewCTR(block, key[32:]), R: zeroReader{}}
	}
	// The buffer holds one chunk of at most 2^18 bits, but no more than n
	// needs: the small draws of the protocols (a few hundred coins) would
	// otherwise allocate and clear 32 KiB each. The bytes read per chunk are
	// the same either way.
	const chunk = 1 << 15
	buf := make([]byte, min(chunk, (n+7)/8))
	var heads int64
	for remaining := n; remaining > 0; {
		nbits := min(remaining, chunk*8)
		b := buf[:(nbits+7)/8]
		if _, err := io.ReadFull(rd, b); err != nil {
			return 0, fmt.Errorf("noise: read randomness from %s: %w", src, err)
		}
		if r := nbits % 8; r != 0 {
			b[len(b)-1] &= byte(1<<r - 1) // keep only the bits we need
		}
		i := 0
		for ; i+8 <= len(b); i += 8 {
			heads += int64(bits.OnesCount64(binary.LittleEndian.Uint64(b[i:])))
		}
		for ; i < len(b); i++ {
			heads += int64(bits.OnesCount8(b[i]))
		}
		remaining -= nbits
	}
	return heads, nil
}

// zeroReader reads zeros (the plaintext of a keystream).
type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

func readFull(src Source, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		m, err := src.Read(b[n:])
		n += m
		if err != nil {
			return n, fmt.Errorf("noise: read randomness from %s: %w", src, err)
		}
		if m == 0 {
			return n, fmt.Errorf("noise: randomness source %s returned no bytes", src)
		}
	}
	return n, nil
}

// upper copies the upper triangle (diagonal included, row by row) of the
// symmetric d×d row-major matrix m, checking symmetry.
func upper(m []float64, d int) ([]float64, error) {
	if d < 1 || len(m) != d*d {
		return nil, fmt.Errorf("noise: symmetric matrix needs d ≥ 1 and len = d², got d=%d len=%d", d, len(m))
	}
	u := make([]float64, 0, d*(d+1)/2)
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			if m[i*d+j] != m[j*d+i] && !(math.IsNaN(m[i*d+j]) && math.IsNaN(m[j*d+i])) {
				return nil, fmt.Errorf("noise: matrix is not symmetric at (%d,%d): %v ≠ %v", i, j, m[i*d+j], m[j*d+i])
			}
			u = append(u, m[i*d+j])
		}
	}
	return u, nil
}

func mirror(m []float64, d int, u []float64) {
	p := 0
	for i := 0; i < d; i++ {
		for j := i; j < d; j++ {
			m[i*d+j], m[j*d+i] = u[p], u[p]
			p++
		}
	}
}

// AddGaussianSymmetric adds symmetric Gaussian noise to the symmetric d×d
// row-major matrix m, in place: it draws independent noise for the
// d(d+1)/2 entries of the upper triangle (diagonal included) with
// AddGaussian and mirrors it, so m stays symmetric ("Analyze Gauss", Dwork et
// al. 2014; Gaussian FM). The released vector is the upper triangle, so the
// sensitivity to use is that of the upper triangle, plus
// GaussianGridSlack(σ, d(d+1)/2). On error m is unchanged.
func AddGaussianSymmetric(src Source, m []float64, d int, sigma float64) error {
	u, err := upper(m, d)
	if err != nil {
		return err
	}
	if err := AddGaussian(src, u, sigma); err != nil {
		return err
	}
	mirror(m, d, u)
	return nil
}

// AddLaplaceSymmetric is AddGaussianSymmetric with Laplace noise of scale b
// (the Functional Mechanism); the L1 slack is LaplaceGridSlack(b, d(d+1)/2).
func AddLaplaceSymmetric(src Source, m []float64, d int, scale float64) error {
	u, err := upper(m, d)
	if err != nil {
		return err
	}
	if err := AddLaplace(src, u, scale); err != nil {
		return err
	}
	mirror(m, d, u)
	return nil
}

// ObjPert returns a vector b ∈ ℝ^d with density ∝ exp(−β‖b‖₂), the noise of
// objective perturbation (Chaudhuri, Monteleoni & Sarwate 2011, Algorithm 2):
// a uniform direction times a Gamma(d, 1/β) norm. Both pieces are built from
// the exact grid samplers: the direction is a normalised vector of d grid
// Gaussians (rotation invariant up to the grid resolution 2^-20·σ), and the
// norm is the sum of d exponentials, each |Laplace(1/β)| on its grid. The
// result is the exact distribution up to that relative grid resolution; it is
// not itself snapped to a grid, because objective perturbation releases only
// the minimiser of a perturbed objective, not b.
//
// NOT SAFE for objective perturbation as a released mechanism: the norm is a
// sum of grid values, a lattice that the released minimiser exposes (b is
// recoverable from the minimiser and the other rows; PRIVACY-NOTES item 19).
// regress's objpert no longer uses it; it is kept to reproduce that attack
// (regress/objpert_attack_test.go) and for the sampler's own tests.
func ObjPert(src Source, d int, beta float64) ([]float64, error) {
	if d < 1 {
		return nil, fmt.Errorf("noise: ObjPert dimension must be ≥ 1, got %d", d)
	}
	if math.IsNaN(beta) || math.IsInf(beta, 0) || beta <= 0 {
		return nil, fmt.Errorf("noise: ObjPert β must be finite and > 0, got %v", beta)
	}
	dir := make([]float64, d)
	var norm2 float64
	for norm2 == 0 {
		for i := range dir {
			dir[i] = 0
		}
		if err := AddGaussian(src, dir, 1); err != nil {
			return nil, err
		}
		norm2 = 0
		for _, v := range dir {
			norm2 += v * v
		}
	}
	e := make([]float64, d)
	if err := AddLaplace(src, e, 1/beta); err != nil {
		return nil, err
	}
	var r float64
	for _, v := range e {
		r += math.Abs(v)
	}
	s := r / math.Sqrt(norm2)
	for i := range dir {
		dir[i] *= s
	}
	return dir, nil
}

// InsecureWishart returns the d×d row-major matrix Σ_{k<df} z_k z_kᵀ with
// z_k ~ N(0, scale²·I): a Wishart W_d(df, scale²·I) draw. The DP-IRLS seed
// (Eq. 6-7) uses df = d+1 and scale² = δ/(2ε′N), δ its bound on the data.
//
// NOT DIFFERENTIALLY PRIVATE. It exists only to reproduce Figure 1 of the
// DP-IRLS seed. Wishart noise is positive semi-definite, so the released
// matrix minus a neighbouring input need not lie in its support and the
// privacy loss is unbounded (PRIVACY-NOTES item 10; IBM diffprivlib issue
// #23). Use AddGaussianSymmetric with zCDP accounting instead.
func InsecureWishart(src Source, d, df int, scale float64) ([]float64, error) {
	if d < 1 || df < 1 {
		return nil, fmt.Errorf("noise: InsecureWishart needs d ≥ 1 and df ≥ 1, got d=%d df=%d", d, df)
	}
	out := make([]float64, d*d)
	z := make([]float64, d)
	for k := 0; k < df; k++ {
		for i := range z {
			z[i] = 0
		}
		if err := AddGaussian(src, z, scale); err != nil {
			return nil, err
		}
		for i := 0; i < d; i++ {
			for j := 0; j < d; j++ {
				out[i*d+j] += z[i] * z[j]
			}
		}
	}
	return out, nil
}
