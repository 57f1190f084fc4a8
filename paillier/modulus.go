package paillier

import (
	"errors"
	"fmt"
	"math/big"
	"sync"
)

// Checks of moduli and prime pairs, applied by every exported constructor
// and decoder (NewPublicKey, NewPrivateKey, DealThreshold, GenerateKey,
// GenerateThresholdKey, ParsePublicKey, ParseThresholdPublicKey,
// ParseKeyShare and the PEM and file loaders built on them).
//
// From a public modulus alone one can check that n is odd, has no prime
// factor below 2^15, is not prime and is not a perfect power (of which a
// perfect square is the case p = q). Balance and distance of the primes need
// the primes: NewPrivateKey and DealThreshold require p and q of equal bit
// length with |p - q| >= 2^(|n|/2 - 100) (FIPS 186-5 A.1.3 asks the same of
// RSA primes). Closer primes fall to Fermat's method: with
// |p - q| = d, a = ceil(sqrt(n)) is within d^2 / (8 sqrt(n)) of (p+q)/2, so
// primes that share their top half of bits are found in a few steps.

// minPrimeDistanceSlack is the 100 of the bound |p - q| >= 2^(|n|/2 - 100).
const minPrimeDistanceSlack = 100

// smallPrimorial is the product of the odd primes below sieveLimit.
var smallPrimorial = sync.OnceValue(func() *big.Int {
	acc := big.NewInt(1)
	for _, l := range smallPrimes {
		acc.Mul(acc, new(big.Int).SetUint64(l))
	}
	return acc
})

// smallFactorLimit is the bound below which a modulus of bits bits must
// have no odd prime factor: sieveLimit (2^15) for real keys, and
// 2^(bits/4) for the tiny moduli of known-answer tests, whose balanced
// factors are themselves small (a factor below 2^(bits/4) cannot be
// balanced).
func smallFactorLimit(bits int) uint64 {
	if b := bits / 4; b < 15 {
		return 1 << uint(max(b, 0))
	}
	return sieveLimit
}

// checkModulus is the public check of n (positive, already in range).
func checkModulus(n *big.Int) error {
	if n.Bit(0) == 0 {
		return errors.New("modulus is even")
	}
	limit := smallFactorLimit(n.BitLen())
	if limit < sieveLimit || new(big.Int).GCD(nil, nil, n, smallPrimorial()).Cmp(bigOne) != 0 {
		l, d, r := new(big.Int), new(big.Int), new(big.Int)
		for _, p := range smallPrimes {
			if p >= limit {
				break
			}
			l.SetUint64(p)
			if d.QuoRem(n, l, r); r.Sign() == 0 && n.Cmp(l) != 0 {
				return fmt.Errorf("modulus has the small prime factor %d", p)
			}
		}
	}
	if s := new(big.Int).Sqrt(n); new(big.Int).Mul(s, s).Cmp(n) == 0 {
		return errors.New("modulus is a perfect square")
	}
	// n = a^k with k prime and odd (squares are done): with no factor below
	// limit, a >= limit, so k <= bits / log2(limit).
	maxK := n.BitLen()
	if limit == sieveLimit {
		maxK = n.BitLen() / 15
	}
	for _, k := range smallPrimes {
		if int(k) > maxK {
			break
		}
		if a := iroot(n, int(k)); new(big.Int).Exp(a, big.NewInt(int64(k)), nil).Cmp(n) == 0 {
			return fmt.Errorf("modulus is a perfect power (n = a^%d)", k)
		}
	}
	if n.ProbablyPrime(0) {
		return errors.New("modulus is prime (a Paillier modulus is a product of two primes)")
	}
	return nil
}

// iroot returns floor(n^(1/k)) for n > 0 and k >= 2 (Newton's method on
// integers, from above).
func iroot(n *big.Int, k int) *big.Int {
	x := new(big.Int).Lsh(bigOne, uint((n.BitLen()+k-1)/k)) // >= n^(1/k)
	km1 := big.NewInt(int64(k - 1))
	kk := big.NewInt(int64(k))
	t, y := new(big.Int), new(big.Int)
	for {
		// y = ((k-1) x + n / x^(k-1)) / k
		t.Exp(x, km1, nil)
		t.Quo(n, t)
		y.Mul(x, km1)
		y.Add(y, t)
		y.Quo(y, kk)
		if y.Cmp(x) >= 0 {
			return x
		}
		x.Set(y)
	}
}

// checkPrimePair checks what only the dealer can: p != q, equal bit
// lengths, and |p - q| >= 2^(|pq|/2 - 100). Primality is checked by the
// callers (ProbablyPrime or CheckSafePrime).
func checkPrimePair(p, q *big.Int) error {
	if p.Cmp(q) == 0 {
		return errors.New("p = q")
	}
	if p.BitLen() != q.BitLen() {
		return fmt.Errorf("primes of %d and %d bits, want equal lengths (balanced primes)", p.BitLen(), q.BitLen())
	}
	nBits := new(big.Int).Mul(p, q).BitLen()
	if e := nBits/2 - minPrimeDistanceSlack; e > 0 {
		d := new(big.Int).Sub(p, q)
		if d.Abs(d).BitLen() <= e { // |p - q| < 2^e
			return fmt.Errorf("|p - q| < 2^%d: primes too close (Fermat's method factors n)", e)
		}
	}
	return nil
}
