package paillier

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"math/big"
)

const (
	// MinModulusBits is the smallest modulus accepted from a decoder, by
	// GenerateKey and by NewPrivateKey. 2048 bits is the floor of current
	// recommendations (NIST SP 800-57: 112-bit security); the DPPP seed's
	// 1024-bit keys are below it (PRIVACY-NOTES item 15).
	MinModulusBits = 2048
	// DefaultModulusBits is the modulus size used when none is given.
	DefaultModulusBits = 2048
	// maxModulusBits bounds decoders and key generation against resource
	// exhaustion.
	maxModulusBits = 8192
	// minTestModulusBits is the smallest modulus the unexported test
	// constructors accept (the python-paillier known-answer key has 17 bits).
	minTestModulusBits = 16
)

// PublicKey is a Paillier public key with generator g = n+1. It is immutable
// after construction and safe for concurrent use.
type PublicKey struct {
	n        *big.Int // modulus n = p*q
	nSquared *big.Int // n^2
	halfN    *big.Int // (n-1)/2, the bound of balanced residues
	id       [32]byte // SHA-256 of the canonical encoding, see KeyID
}

// NewPublicKey returns the public key with modulus n. It rejects moduli
// shorter than MinModulusBits, even or prime moduli, moduli with a prime
// factor below 2^15 and perfect powers (squares included).
func NewPublicKey(n *big.Int) (*PublicKey, error) {
	return newPublicKey(n, MinModulusBits)
}

func newPublicKey(n *big.Int, minBits int) (*PublicKey, error) {
	if n == nil || n.Sign() <= 0 {
		return nil, errors.New("paillier: public key: modulus must be a positive integer")
	}
	if b := n.BitLen(); b < minBits || b > maxModulusBits {
		return nil, fmt.Errorf("paillier: public key: modulus has %d bits, want %d to %d", b, minBits, maxModulusBits)
	}
	if err := checkModulus(n); err != nil {
		return nil, fmt.Errorf("paillier: public key: %w", err)
	}
	n = new(big.Int).Set(n)
	pk := &PublicKey{
		n:        n,
		nSquared: new(big.Int).Mul(n, n),
		halfN:    new(big.Int).Rsh(n, 1),
	}
	pk.id = sha256.Sum256(pk.marshal())
	return pk, nil
}

// N returns a copy of the modulus.
func (pk *PublicKey) N() *big.Int { return new(big.Int).Set(pk.n) }

// NSquared returns a copy of n^2, the ciphertext modulus.
func (pk *PublicKey) NSquared() *big.Int { return new(big.Int).Set(pk.nSquared) }

// Bits returns the bit length of the modulus.
func (pk *PublicKey) Bits() int { return pk.n.BitLen() }

// Equal reports whether pk and other have the same modulus.
func (pk *PublicKey) Equal(other *PublicKey) bool {
	return pk != nil && other != nil && pk.n.Cmp(other.n) == 0
}

// Ciphertext is an element of Z*_{n^2} under a specific public key. Values
// are immutable; the homomorphic operations return new ciphertexts.
type Ciphertext struct {
	c  *big.Int
	pk *PublicKey // the key it belongs to
}

// Value returns a copy of the ciphertext as an integer in [1, n^2).
func (ct *Ciphertext) Value() *big.Int { return new(big.Int).Set(ct.c) }

// NewCiphertext validates c as a ciphertext under pk: 0 < c < n^2 and
// gcd(c, n) = 1.
func (pk *PublicKey) NewCiphertext(c *big.Int) (*Ciphertext, error) {
	if err := pk.checkUnit(c); err != nil {
		return nil, fmt.Errorf("paillier: ciphertext: %w", err)
	}
	return &Ciphertext{c: new(big.Int).Set(c), pk: pk}, nil
}

// checkUnit reports whether x is in Z*_{n^2}.
func (pk *PublicKey) checkUnit(x *big.Int) error {
	if pk == nil || pk.n == nil {
		return errNoKey
	}
	if x == nil {
		return errors.New("nil element")
	}
	if x.Sign() <= 0 {
		return errors.New("element is zero or negative")
	}
	if x.Cmp(pk.nSquared) >= 0 {
		return errors.New("element is not reduced modulo n^2")
	}
	if new(big.Int).GCD(nil, nil, x, pk.n).Cmp(bigOne) != 0 {
		return errors.New("element shares a factor with n (not in Z*_{n^2})")
	}
	return nil
}

// errNoKey reports a nil or zero-value key (keys come from constructors).
var errNoKey = errors.New("nil or uninitialised key (use a constructor or decoder)")

func (pk *PublicKey) owns(ct *Ciphertext) error {
	if pk == nil || pk.n == nil {
		return errNoKey
	}
	if ct == nil || ct.c == nil || ct.pk == nil {
		return errors.New("nil ciphertext")
	}
	if ct.pk.n.Cmp(pk.n) != 0 {
		return errors.New("ciphertext belongs to a different public key")
	}
	return nil
}

// checkPlaintext reports whether m is in [0, n).
func (pk *PublicKey) checkPlaintext(m *big.Int) error {
	if pk == nil || pk.n == nil {
		return errNoKey
	}
	if m == nil {
		return errors.New("nil plaintext")
	}
	if m.Sign() < 0 || m.Cmp(pk.n) >= 0 {
		return fmt.Errorf("plaintext outside [0, n) (has %d bits, n has %d); encode signed values with EncodeSigned", m.BitLen(), pk.n.BitLen())
	}
	return nil
}

// randomUnit returns r uniform in Z*_n, read from random by rejection
// sampling.
func (pk *PublicKey) randomUnit(random io.Reader) (*big.Int, error) {
	if pk == nil || pk.n == nil {
		return nil, errNoKey
	}
	if random == nil {
		return nil, errors.New("nil random source")
	}
	g := new(big.Int)
	for i := 0; i < 128; i++ {
		r, err := rand.Int(random, pk.n)
		if err != nil {
			return nil, fmt.Errorf("reading randomness: %w", err)
		}
		if r.Sign() != 0 && g.GCD(nil, nil, r, pk.n).Cmp(bigOne) == 0 {
			return r, nil
		}
	}
	// With a real random source and a valid key the loop exits on the first
	// iteration except with probability about 2/sqrt(n).
	return nil, errors.New("random source does not produce units of Z*_n")
}

// gToThe returns g^m = (1+n)^m = 1 + m*n mod n^2 for m in [0, n).
func (pk *PublicKey) gToThe(m *big.Int) *big.Int {
	gm := new(big.Int).Mul(m, pk.n)
	gm.Add(gm, bigOne)
	return gm.Mod(gm, pk.nSquared)
}

// Encrypt encrypts m in [0, n) as (1+n)^m r^n mod n^2 with r uniform in Z*_n
// read from random (use crypto/rand.Reader). This is the reference
// encryption; Encryptor is several times faster.
func (pk *PublicKey) Encrypt(random io.Reader, m *big.Int) (*Ciphertext, error) {
	if err := pk.checkPlaintext(m); err != nil {
		return nil, fmt.Errorf("paillier: encrypt: %w", err)
	}
	r, err := pk.randomUnit(random)
	if err != nil {
		return nil, fmt.Errorf("paillier: encrypt: %w", err)
	}
	return pk.encryptWithNonce(m, r), nil
}

// EncryptWithNonce encrypts m with the caller's r in Z*_n. It exists for
// known-answer tests and for protocols that must open an encryption; reusing
// r, or choosing it non-uniformly, breaks semantic security.
func (pk *PublicKey) EncryptWithNonce(m, r *big.Int) (*Ciphertext, error) {
	if err := pk.checkPlaintext(m); err != nil {
		return nil, fmt.Errorf("paillier: encrypt: %w", err)
	}
	if r == nil || r.Sign() <= 0 || r.Cmp(pk.n) >= 0 || new(big.Int).GCD(nil, nil, r, pk.n).Cmp(bigOne) != 0 {
		return nil, errors.New("paillier: encrypt: nonce r is not in Z*_n")
	}
	return pk.encryptWithNonce(m, r), nil
}

func (pk *PublicKey) encryptWithNonce(m, r *big.Int) *Ciphertext {
	rn := new(big.Int).Exp(r, pk.n, pk.nSquared)
	return pk.combine(m, rn)
}

// combine returns (1+n)^m * rn mod n^2 for an n-th power rn.
func (pk *PublicKey) combine(m, rn *big.Int) *Ciphertext {
	c := pk.gToThe(m)
	c.Mul(c, rn)
	c.Mod(c, pk.nSquared)
	return &Ciphertext{c: c, pk: pk}
}

// Add returns an encryption of m_a + m_b mod n. The result's randomness is the
// product of the inputs' randomness, so it is a fresh-looking encryption if
// either input is.
func (pk *PublicKey) Add(a, b *Ciphertext) (*Ciphertext, error) {
	if err := pk.owns(a); err != nil {
		return nil, fmt.Errorf("paillier: add: first operand: %w", err)
	}
	if err := pk.owns(b); err != nil {
		return nil, fmt.Errorf("paillier: add: second operand: %w", err)
	}
	c := new(big.Int).Mul(a.c, b.c)
	return &Ciphertext{c: c.Mod(c, pk.nSquared), pk: pk}, nil
}

// Sum returns an encryption of the sum of the plaintexts of cts (at least
// one).
func (pk *PublicKey) Sum(cts ...*Ciphertext) (*Ciphertext, error) {
	if len(cts) == 0 {
		return nil, errors.New("paillier: sum: no ciphertexts")
	}
	acc := new(big.Int).SetInt64(1)
	for i, ct := range cts {
		if err := pk.owns(ct); err != nil {
			return nil, fmt.Errorf("paillier: sum: ciphertext %d: %w", i, err)
		}
		acc.Mul(acc, ct.c)
		acc.Mod(acc, pk.nSquared)
	}
	return &Ciphertext{c: acc, pk: pk}, nil
}

// AddPlain returns an encryption of m_a + k mod n for a public k in [0, n).
// The randomness of a is kept: the result is linkable to a.
func (pk *PublicKey) AddPlain(a *Ciphertext, k *big.Int) (*Ciphertext, error) {
	if err := pk.owns(a); err != nil {
		return nil, fmt.Errorf("paillier: add plaintext: %w", err)
	}
	if err := pk.checkPlaintext(k); err != nil {
		return nil, fmt.Errorf("paillier: add plaintext: %w", err)
	}
	c := pk.gToThe(k)
	c.Mul(c, a.c)
	return &Ciphertext{c: c.Mod(c, pk.nSquared), pk: pk}, nil
}

// MulConst returns an encryption of k*m_a mod n for a public integer k (any
// sign; it is reduced modulo n). The result is deterministic in a and k:
// Rerandomize it before sending it to anyone who must not learn k.
func (pk *PublicKey) MulConst(a *Ciphertext, k *big.Int) (*Ciphertext, error) {
	if err := pk.owns(a); err != nil {
		return nil, fmt.Errorf("paillier: multiply by constant: %w", err)
	}
	if k == nil {
		return nil, errors.New("paillier: multiply by constant: nil constant")
	}
	e := new(big.Int).Mod(k, pk.n)
	return &Ciphertext{c: new(big.Int).Exp(a.c, e, pk.nSquared), pk: pk}, nil
}

// Rerandomize returns a fresh encryption of the same plaintext: a * r^n with
// r uniform in Z*_n.
func (pk *PublicKey) Rerandomize(random io.Reader, a *Ciphertext) (*Ciphertext, error) {
	if err := pk.owns(a); err != nil {
		return nil, fmt.Errorf("paillier: rerandomize: %w", err)
	}
	r, err := pk.randomUnit(random)
	if err != nil {
		return nil, fmt.Errorf("paillier: rerandomize: %w", err)
	}
	c := new(big.Int).Exp(r, pk.n, pk.nSquared)
	c.Mul(c, a.c)
	return &Ciphertext{c: c.Mod(c, pk.nSquared), pk: pk}, nil
}

// EncodeSigned maps a signed integer x with |x| <= (n-1)/2 to its balanced
// residue x mod n in [0, n). Values outside the range are an error, never
// silently wrapped.
func (pk *PublicKey) EncodeSigned(x *big.Int) (*big.Int, error) {
	if pk == nil || pk.n == nil {
		return nil, fmt.Errorf("paillier: encode signed: %w", errNoKey)
	}
	if x == nil {
		return nil, errors.New("paillier: encode signed: nil value")
	}
	if new(big.Int).Abs(x).Cmp(pk.halfN) > 0 {
		return nil, fmt.Errorf("paillier: encode signed: |x| has %d bits, exceeds (n-1)/2", x.BitLen())
	}
	return new(big.Int).Mod(x, pk.n), nil
}

// DecodeSigned maps a plaintext m in [0, n) to the signed integer in
// [-(n-1)/2, (n-1)/2] congruent to it.
func (pk *PublicKey) DecodeSigned(m *big.Int) (*big.Int, error) {
	if err := pk.checkPlaintext(m); err != nil {
		return nil, fmt.Errorf("paillier: decode signed: %w", err)
	}
	if m.Cmp(pk.halfN) > 0 {
		return new(big.Int).Sub(m, pk.n), nil
	}
	return new(big.Int).Set(m), nil
}

// PrivateKey is a Paillier private key; it decrypts with the Chinese
// remainder theorem. It is immutable and safe for concurrent use.
type PrivateKey struct {
	PublicKey
	p, q         *big.Int
	pSq, qSq     *big.Int // p^2, q^2
	pm1, qm1     *big.Int // p-1, q-1
	hp, hq       *big.Int // L_p(g^(p-1) mod p^2)^-1 mod p, same for q
	pInvModQ     *big.Int // p^-1 mod q
	lambda, dMod *big.Int // lcm(p-1, q-1) and lambda^-1 mod n (reference decryption)
}

// NewPrivateKey builds a private key from two primes p and q of equal bit
// length, at least 2^(|pq|/2 - 100) apart, with gcd(pq, (p-1)(q-1)) = 1 and
// pq of at least MinModulusBits bits. Primality is checked (Baillie-PSW
// plus 20 Miller-Rabin rounds), and n = pq must pass NewPublicKey.
func NewPrivateKey(p, q *big.Int) (*PrivateKey, error) {
	return newPrivateKey(p, q, MinModulusBits)
}

func newPrivateKey(p, q *big.Int, minBits int) (*PrivateKey, error) {
	if p == nil || q == nil {
		return nil, errors.New("paillier: private key: nil prime")
	}
	if p.Cmp(q) == 0 {
		return nil, errors.New("paillier: private key: p = q")
	}
	for _, x := range []*big.Int{p, q} {
		if x.Sign() <= 0 || x.Cmp(bigTwo) <= 0 || !x.ProbablyPrime(primalityRounds) {
			return nil, fmt.Errorf("paillier: private key: %d-bit factor is not an odd prime", x.BitLen())
		}
	}
	return buildPrivateKey(p, q, minBits)
}

// buildPrivateKey is newPrivateKey for primes already checked for
// primality.
func buildPrivateKey(p, q *big.Int, minBits int) (*PrivateKey, error) {
	if err := checkPrimePair(p, q); err != nil {
		return nil, fmt.Errorf("paillier: private key: %w", err)
	}
	n := new(big.Int).Mul(p, q)
	pk, err := newPublicKey(n, minBits)
	if err != nil {
		return nil, fmt.Errorf("paillier: private key: %w", err)
	}
	pm1 := new(big.Int).Sub(p, bigOne)
	qm1 := new(big.Int).Sub(q, bigOne)
	phi := new(big.Int).Mul(pm1, qm1)
	if new(big.Int).GCD(nil, nil, n, phi).Cmp(bigOne) != 0 {
		return nil, errors.New("paillier: private key: gcd(n, phi(n)) != 1")
	}
	sk := &PrivateKey{
		PublicKey: *pk,
		p:         new(big.Int).Set(p),
		q:         new(big.Int).Set(q),
		pSq:       new(big.Int).Mul(p, p),
		qSq:       new(big.Int).Mul(q, q),
		pm1:       pm1,
		qm1:       qm1,
		pInvModQ:  new(big.Int).ModInverse(p, q),
	}
	g := new(big.Int).Add(n, bigOne)
	// h_p = L_p(g^(p-1) mod p^2)^-1 mod p.
	sk.hp = hFactor(g, p, sk.pSq, pm1)
	sk.hq = hFactor(g, q, sk.qSq, qm1)
	if sk.hp == nil || sk.hq == nil || sk.pInvModQ == nil {
		return nil, errors.New("paillier: private key: degenerate primes")
	}
	gcd := new(big.Int).GCD(nil, nil, pm1, qm1)
	sk.lambda = new(big.Int).Div(phi, gcd)
	sk.dMod = new(big.Int).ModInverse(sk.lambda, n)
	if sk.dMod == nil {
		return nil, errors.New("paillier: private key: lambda not invertible modulo n")
	}
	return sk, nil
}

func hFactor(g, p, pSq, pm1 *big.Int) *big.Int {
	x := new(big.Int).Exp(g, pm1, pSq)
	x.Sub(x, bigOne)
	x.Div(x, p)
	return x.ModInverse(x, p)
}

// Primes returns copies of the prime factors p and q.
func (sk *PrivateKey) Primes() (p, q *big.Int) {
	return new(big.Int).Set(sk.p), new(big.Int).Set(sk.q)
}

// Public returns the public key.
func (sk *PrivateKey) Public() *PublicKey { return &sk.PublicKey }

// GenerateKey generates a key whose modulus has exactly bits bits (bits must
// be a multiple of 256 from MinModulusBits to 8192; 2048 and 3072 are the
// sizes in use), from two safe primes. Safe primes are not needed for plain
// Paillier but cost only seconds and let the same primes serve a threshold
// key. ctx cancels the search.
func GenerateKey(ctx context.Context, random io.Reader, bits int) (*PrivateKey, error) {
	if bits < MinModulusBits || bits > maxModulusBits || bits%256 != 0 {
		return nil, fmt.Errorf("paillier: generate key: %d bits: want a multiple of 256 in [%d, %d]", bits, MinModulusBits, maxModulusBits)
	}
	p, q, err := GenerateSafePrimePair(ctx, random, bits, 0, nil)
	if err != nil {
		return nil, fmt.Errorf("paillier: generate key: %w", err)
	}
	return NewPrivateKey(p, q)
}

// GenerateSafePrimePair returns two safe primes of bits/2 bits each whose
// product has exactly bits bits, at least 2^(bits/2 - 100) apart (a second
// prime closer than that, probability about 2^-100, is drawn again).
func GenerateSafePrimePair(ctx context.Context, random io.Reader, bits, workers int, progress SafePrimeProgress) (p, q *big.Int, err error) {
	if bits%2 != 0 {
		return nil, nil, fmt.Errorf("paillier: safe prime pair: odd modulus size %d", bits)
	}
	for {
		if p == nil {
			if p, err = GenerateSafePrime(ctx, random, bits/2, workers, progress); err != nil {
				return nil, nil, err
			}
		}
		if q, err = GenerateSafePrime(ctx, random, bits/2, workers, progress); err != nil {
			return nil, nil, err
		}
		if checkPrimePair(p, q) == nil {
			return p, q, nil
		}
	}
}

// Decrypt returns the plaintext of ct in [0, n), computed with the Chinese
// remainder theorem: m_p = L_p(c^(p-1) mod p^2) h_p mod p, likewise for q.
func (sk *PrivateKey) Decrypt(ct *Ciphertext) (*big.Int, error) {
	if err := sk.owns(ct); err != nil {
		return nil, fmt.Errorf("paillier: decrypt: %w", err)
	}
	mp := sk.decryptModPrime(ct.c, sk.p, sk.pSq, sk.pm1, sk.hp)
	mq := sk.decryptModPrime(ct.c, sk.q, sk.qSq, sk.qm1, sk.hq)
	// m = mp + p * ((mq - mp) p^-1 mod q)
	m := new(big.Int).Sub(mq, mp)
	m.Mul(m, sk.pInvModQ)
	m.Mod(m, sk.q)
	m.Mul(m, sk.p)
	return m.Add(m, mp), nil
}

func (sk *PrivateKey) decryptModPrime(c, p, pSq, pm1, h *big.Int) *big.Int {
	x := new(big.Int).Mod(c, pSq)
	x.Exp(x, pm1, pSq)
	x.Sub(x, bigOne)
	x.Div(x, p)
	x.Mul(x, h)
	return x.Mod(x, p)
}

// decryptReference is the textbook decryption L(c^lambda mod n^2) * mu mod n,
// kept as an independent check of the CRT path in tests.
func (sk *PrivateKey) decryptReference(ct *Ciphertext) *big.Int {
	x := new(big.Int).Exp(ct.c, sk.lambda, sk.nSquared)
	x.Sub(x, bigOne)
	x.Div(x, sk.n)
	x.Mul(x, sk.dMod)
	return x.Mod(x, sk.n)
}

// String describes the key without revealing the factors, so that logging
// a PrivateKey (with %v) cannot leak it.
func (sk *PrivateKey) String() string {
	if sk == nil {
		return "paillier.PrivateKey(nil)"
	}
	return fmt.Sprintf("paillier.PrivateKey(%d-bit modulus, key %x, factors redacted)", sk.n.BitLen(), sk.id[:8])
}

// GoString is String, for %#v.
func (sk *PrivateKey) GoString() string { return sk.String() }
