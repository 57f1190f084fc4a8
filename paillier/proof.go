package paillier

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"math/big"
)

const (
	// ChallengeBits is the length of the Fiat-Shamir challenge e of the
	// partial-decryption proof (a full SHA-256 output).
	ChallengeBits = 256
	// StatisticalSecurityBits is the statistical zero-knowledge parameter:
	// the proof's response leaks at most 2^-128 in statistical distance
	// about the share.
	StatisticalSecurityBits = 128

	proofDomain = "dplearn/paillier/v1/threshold-partial-decryption-proof"
	nonceDomain = "dplearn/paillier/v1/proof-nonce"

	// nonceFreshBytes is the number of fresh random bytes mixed into each
	// proof nonce.
	nonceFreshBytes = 64
)

// Proof is a non-interactive zero-knowledge proof (Chaum-Pedersen style, as
// in Shoup 2000 and Damgard-Jurik 2001, made non-interactive with the
// Fiat-Shamir transform) that a partial decryption c_i was computed with the
// share s_i behind the verification key v_i:
//
//	log_{c^4}(c_i^2) = log_v(v_i) = Delta s_i.
//
// Squaring maps c and c_i into the cyclic group of squares of Z*_{n^2},
// of order n p' q', which has no small factors; the challenge (256 bits) is
// smaller than p' and q' for real key sizes, which is what the soundness
// argument needs.
//
// Prover, with x = Delta s_i: derive r in [0, 2^B) (see below), a = (c^4)^r,
// b = v^r, e = H(domain, n, v, i, v_i, c, c_i, a, b), z = r + e x (over the
// integers). Verifier: recompute a = (c^4)^z (c_i^2)^-e and
// b = v^z v_i^-e, and check e = H(...). The proof is (e, z).
//
// Statistical zero knowledge: x < Delta n m < 2^(|Delta| + |n^2|) and
// e < 2^ChallengeBits, so e x < 2^(B - 128) with
//
//	B = |n^2| + ChallengeBits + |Delta| + StatisticalSecurityBits.
//
// z = r + e x is uniform on [e x, e x + 2^B), and a simulator that draws z
// uniform on [0, 2^B) and e uniform (programming the random oracle) produces
// a distribution at statistical distance at most e x / 2^B < 2^-128 from
// real proofs. Leaving out |Delta| (or using |n| instead of |n^2|, since
// s_i lives modulo n m and not modulo n) would make z reveal the top bits of
// Delta s_i; the sizes above count every factor of e Delta s_i.
//
// Hedged nonce. Two proofs by the same party with the same r and different
// challenges e1 != e2 reveal the share: z1 - z2 = (e1 - e2) x, so
// x = (z1 - z2)/(e1 - e2) exactly, over the integers. r is therefore not
// taken from the random source alone but derived as
//
//	k = HMAC-SHA-512(key = x, domain | 64 fresh random bytes | n, v, i, v_i, c, c_i)
//	r = the first B bits of HMAC-SHA-512(k, domain | 1) | HMAC-SHA-512(k, domain | 2) | ...
//
// (the construction of hedged signatures: RFC 6979 with added randomness,
// as in draft-irtf-cfrg-det-sigs-with-noise). With a good random source r
// is as random as before; with a source that repeats, fails open or is
// controlled by an adversary, r is still a pseudorandom function of the
// secret x and the statement, so two proofs reuse r only if they prove the
// same statement (and then they are the same proof and reveal nothing
// new). r is a power-of-two-range output, so no modular reduction biases
// it. A random source that returns an error is still an error.
type Proof struct {
	e *big.Int // challenge, in [0, 2^ChallengeBits)
	z *big.Int // response, in [0, 2^(B+1))
}

// proofRandomBits returns B for this key.
func (tpk *ThresholdPublicKey) proofRandomBits() int {
	return tpk.nSquared.BitLen() + ChallengeBits + tpk.delta.BitLen() + StatisticalSecurityBits
}

func (tpk *ThresholdPublicKey) prove(random io.Reader, index int, c, ci, x *big.Int) (*Proof, error) {
	if random == nil {
		return nil, errors.New("proof: nil random source")
	}
	r, err := tpk.proofNonce(random, index, c, ci, x)
	if err != nil {
		return nil, err
	}
	c4 := new(big.Int).Exp(c, big.NewInt(4), tpk.nSquared)
	ci2 := new(big.Int).Mul(ci, ci)
	ci2.Mod(ci2, tpk.nSquared)
	a := new(big.Int).Exp(c4, r, tpk.nSquared)
	b := new(big.Int).Exp(tpk.v, r, tpk.nSquared)
	e := tpk.challenge(index, c, ci, a, b)
	z := new(big.Int).Mul(e, x)
	z.Add(z, r)
	return &Proof{e: e, z: z}, nil
}

// proofNonce derives the hedged nonce r in [0, 2^B) described at Proof.
func (tpk *ThresholdPublicKey) proofNonce(random io.Reader, index int, c, ci, x *big.Int) (*big.Int, error) {
	var fresh [nonceFreshBytes]byte
	if _, err := io.ReadFull(random, fresh[:]); err != nil {
		return nil, fmt.Errorf("proof: reading randomness: %w", err)
	}
	key := x.Bytes()
	mac := hmac.New(sha512.New, key)
	mac.Write([]byte(nonceDomain))
	mac.Write([]byte{0})
	mac.Write(fresh[:])
	writeHashInt(mac, tpk.n)
	writeHashInt(mac, tpk.v)
	var idx [4]byte
	binary.BigEndian.PutUint32(idx[:], uint32(index))
	mac.Write(idx[:])
	writeHashInt(mac, tpk.vi[index-1])
	writeHashInt(mac, c)
	writeHashInt(mac, ci)
	k := mac.Sum(nil)
	clear(key)
	B := tpk.proofRandomBits()
	nbytes := (B + 7) / 8
	out := make([]byte, 0, nbytes+sha512.Size)
	expand := hmac.New(sha512.New, k)
	var ctr [4]byte
	for j := uint32(1); len(out) < nbytes; j++ {
		expand.Reset()
		expand.Write([]byte(nonceDomain))
		expand.Write([]byte{1})
		binary.BigEndian.PutUint32(ctr[:], j)
		expand.Write(ctr[:])
		out = expand.Sum(out)
	}
	out = out[:nbytes]
	// Keep exactly B bits: clear the excess high bits of the first byte.
	out[0] &= 0xff >> uint(nbytes*8-B)
	r := new(big.Int).SetBytes(out)
	clear(out)
	clear(k)
	return r, nil
}

func (tpk *ThresholdPublicKey) verify(p *Proof, index int, c, ci *big.Int) error {
	if p == nil || p.e == nil || p.z == nil {
		return errors.New("proof: missing")
	}
	if p.e.Sign() < 0 || p.e.BitLen() > ChallengeBits {
		return errors.New("proof: challenge out of range")
	}
	if p.z.Sign() < 0 || p.z.BitLen() > tpk.proofRandomBits()+1 {
		return errors.New("proof: response out of range")
	}
	nsq := tpk.nSquared
	c4 := new(big.Int).Exp(c, big.NewInt(4), nsq)
	ci2 := new(big.Int).Mul(ci, ci)
	ci2.Mod(ci2, nsq)
	// a = (c^4)^z * (c_i^2)^-e
	a, err := expDiv(c4, p.z, ci2, p.e, nsq)
	if err != nil {
		return fmt.Errorf("proof: %w", err)
	}
	// b = v^z * v_i^-e
	b, err := expDiv(tpk.v, p.z, tpk.vi[index-1], p.e, nsq)
	if err != nil {
		return fmt.Errorf("proof: %w", err)
	}
	if tpk.challenge(index, c, ci, a, b).Cmp(p.e) != 0 {
		return errors.New("proof: invalid (partial decryption does not match the verification key)")
	}
	return nil
}

// expDiv returns x^u / y^w mod m.
func expDiv(x, u, y, w, m *big.Int) (*big.Int, error) {
	den := new(big.Int).Exp(y, w, m)
	if den.ModInverse(den, m) == nil {
		return nil, errors.New("element not invertible")
	}
	num := new(big.Int).Exp(x, u, m)
	num.Mul(num, den)
	return num.Mod(num, m), nil
}

// challenge hashes the statement and commitments with SHA-256 under a
// domain-separation tag; every integer is length-prefixed, so the encoding
// is injective.
func (tpk *ThresholdPublicKey) challenge(index int, c, ci, a, b *big.Int) *big.Int {
	h := sha256.New()
	h.Write([]byte(proofDomain))
	h.Write([]byte{0})
	writeHashInt(h, tpk.n)
	writeHashInt(h, tpk.v)
	var idx [4]byte
	binary.BigEndian.PutUint32(idx[:], uint32(index))
	h.Write(idx[:])
	writeHashInt(h, tpk.vi[index-1])
	writeHashInt(h, c)
	writeHashInt(h, ci)
	writeHashInt(h, a)
	writeHashInt(h, b)
	return new(big.Int).SetBytes(h.Sum(nil))
}

func writeHashInt(h hash.Hash, x *big.Int) {
	b := x.Bytes()
	var l [4]byte
	binary.BigEndian.PutUint32(l[:], uint32(len(b)))
	h.Write(l[:])
	h.Write(b)
}
