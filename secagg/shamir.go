package secagg

import (
	"errors"
	"fmt"
	"io"
	"math/big"
)

// Shamir secret sharing over the prime field GF(P) with P = 2^256 + 297, the
// smallest prime above 2^256, so that every 32-byte string (seed or X25519
// private key) is a field element without reduction.
//
// Threshold convention: a secret shared with threshold t is a random
// polynomial of degree t−1 with the secret as constant term. Any t shares
// reconstruct it; any t−1 shares are uniformly distributed and independent of
// the secret (perfect secrecy). Share i is the polynomial's value at x = i,
// where i is the holder's party ID (IDs are ≥ 1, so x = 0 is never revealed).

// fieldPrimeHex is P = 2^256 + 297 in hexadecimal.
const fieldPrimeHex = "10000000000000000000000000000000000000000000000000000000000000129"

// ShareLen is the length in bytes of an encoded share value (big-endian,
// fixed width, strictly less than P).
const ShareLen = 33

// SecretLen is the length in bytes of a shared secret.
const SecretLen = 32

// fieldPrime returns a fresh copy of P (no global mutable state).
func fieldPrime() *big.Int {
	p, ok := new(big.Int).SetString(fieldPrimeHex, 16)
	if !ok {
		panic("secagg: bad field prime constant") // unreachable: constant
	}
	return p
}

// share is one Shamir share: the holder's x coordinate and the polynomial's
// value there, encoded in ShareLen bytes.
type share struct {
	X uint32 // holder's party ID, ≥ 1
	Y []byte // ShareLen bytes, big-endian, < P
}

// splitSecret shares a 32-byte secret with threshold t among the holders xs
// (distinct, nonzero), drawing the polynomial's coefficients from rnd.
func splitSecret(secret []byte, t int, xs []uint32, rnd io.Reader) ([]share, error) {
	if len(secret) != SecretLen {
		return nil, fmt.Errorf("shamir: secret has %d bytes, want %d", len(secret), SecretLen)
	}
	if t < 1 || t > len(xs) {
		return nil, fmt.Errorf("shamir: threshold %d out of range [1, %d]", t, len(xs))
	}
	p := fieldPrime()
	coeffs := make([]*big.Int, t)
	coeffs[0] = new(big.Int).SetBytes(secret)
	for k := 1; k < t; k++ {
		c, err := randFieldElement(rnd, p)
		if err != nil {
			return nil, fmt.Errorf("shamir: draw coefficient: %w", err)
		}
		coeffs[k] = c
	}
	seen := make(map[uint32]bool, len(xs))
	shares := make([]share, len(xs))
	acc, xb, q := new(big.Int), new(big.Int), new(big.Int)
	for i, x := range xs {
		if x == 0 {
			return nil, errors.New("shamir: holder x coordinate 0 would reveal the secret")
		}
		if seen[x] {
			return nil, fmt.Errorf("shamir: duplicate holder %d", x)
		}
		seen[x] = true
		// Horner's rule; x < 2^32 so acc grows by at most 32 bits per step and
		// we reduce only when it passes 512 bits.
		acc.SetInt64(0)
		xb.SetUint64(uint64(x))
		for k := t - 1; k >= 0; k-- {
			acc.Mul(acc, xb)
			acc.Add(acc, coeffs[k])
			if acc.BitLen() > 512 {
				q.QuoRem(acc, p, acc)
			}
		}
		q.QuoRem(acc, p, acc)
		shares[i] = share{X: x, Y: acc.FillBytes(make([]byte, ShareLen))}
	}
	return shares, nil
}

// randFieldElement draws a uniform element of [0, p) by rejection sampling on
// 257-bit strings.
func randFieldElement(rnd io.Reader, p *big.Int) (*big.Int, error) {
	buf := make([]byte, ShareLen)
	v := new(big.Int)
	for {
		if _, err := io.ReadFull(rnd, buf); err != nil {
			return nil, err
		}
		buf[0] &= 0x01 // 257 bits
		v.SetBytes(buf)
		if v.Cmp(p) < 0 {
			return v, nil
		}
	}
}

// decodeShareValue parses a ShareLen-byte share value and checks it is < P.
func decodeShareValue(y []byte, p *big.Int) (*big.Int, error) {
	if len(y) != ShareLen {
		return nil, fmt.Errorf("share value has %d bytes, want %d", len(y), ShareLen)
	}
	v := new(big.Int).SetBytes(y)
	if v.Cmp(p) >= 0 {
		return nil, errors.New("share value is not a field element (≥ P)")
	}
	return v, nil
}

// lagrangeAtZero returns the Lagrange coefficients λ_i = Π_{j≠i} x_j/(x_j − x_i)
// mod P for interpolation at 0 from the points xs (distinct, nonzero).
func lagrangeAtZero(xs []uint32, p *big.Int) ([]*big.Int, error) {
	seen := make(map[uint32]bool, len(xs))
	for _, x := range xs {
		if x == 0 {
			return nil, errors.New("shamir: x coordinate 0")
		}
		if seen[x] {
			return nil, fmt.Errorf("shamir: duplicate x coordinate %d", x)
		}
		seen[x] = true
	}
	lambdas := make([]*big.Int, len(xs))
	num, den, d := new(big.Int), new(big.Int), new(big.Int)
	for i, xi := range xs {
		num.SetInt64(1)
		den.SetInt64(1)
		for j, xj := range xs {
			if j == i {
				continue
			}
			num.Mul(num, d.SetUint64(uint64(xj)))
			num.Mod(num, p)
			d.SetInt64(int64(xj) - int64(xi))
			den.Mul(den, d)
			den.Mod(den, p)
		}
		inv := new(big.Int).ModInverse(den, p)
		if inv == nil {
			return nil, errors.New("shamir: singular interpolation") // unreachable for distinct xs
		}
		lambdas[i] = inv.Mul(inv, num).Mod(inv, p)
	}
	return lambdas, nil
}

// interpolator reconstructs secrets from shares held by a fixed set of
// holders; the Lagrange coefficients are computed once.
type interpolator struct {
	p       *big.Int
	xs      []uint32
	lambdas []*big.Int
}

func newInterpolator(xs []uint32) (*interpolator, error) {
	p := fieldPrime()
	l, err := lagrangeAtZero(xs, p)
	if err != nil {
		return nil, err
	}
	return &interpolator{p: p, xs: append([]uint32(nil), xs...), lambdas: l}, nil
}

// reconstruct interpolates at 0 from ys[i] = f(xs[i]) and returns the 32-byte
// secret. Shares that are inconsistent reconstruct a wrong value; callers
// that can, check the result (the server checks a reconstructed X25519 key
// against the advertised public key).
func (in *interpolator) reconstruct(ys [][]byte) ([]byte, error) {
	if len(ys) != len(in.xs) {
		return nil, fmt.Errorf("shamir: %d share values for %d holders", len(ys), len(in.xs))
	}
	acc, term := new(big.Int), new(big.Int)
	for i, y := range ys {
		v, err := decodeShareValue(y, in.p)
		if err != nil {
			return nil, fmt.Errorf("shamir: holder %d: %w", in.xs[i], err)
		}
		term.Mul(v, in.lambdas[i])
		acc.Add(acc, term)
	}
	acc.Mod(acc, in.p)
	if acc.BitLen() > 8*SecretLen {
		return nil, errors.New("shamir: reconstructed value exceeds 32 bytes: inconsistent shares")
	}
	return acc.FillBytes(make([]byte, SecretLen)), nil
}
