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
// Squaring maps c and c_i into the cyclic group Q of squares of Z*_{n^2},
// of order n p' q', which has no small factors; the challenge (256 bits) is
// smaller than p' and q' for real key sizes, which is what the soundness
// argument needs.
//
// Prover, with x = Delta s_i: derive r in [0, 2^B) (see below), a = (c^4)^r,
// b = v^r, e = H(domain, n, v, i, v_i, c, c_i, a, b), z = r + e x (over the
// integers). The proof is (a, b, z), the commitment form: the verifier
// recomputes e = H(...) and checks
//
//	((c^4)^z)^2 = (a (c_i^2)^e)^2  and  (v^z)^2 = (b v_i^e)^2   (mod n^2).
//
// Sending the commitments a, b (rather than (e, z), from which the verifier
// would recompute them) is what makes many proofs checkable with one random
// linear combination (VerifyPartials); it costs two elements of Z*_{n^2} per
// proof on the wire.
//
// Why the equations are squared. Z*_{n^2} has elements of order 2 (-1 and
// two others), and a batch check raises each equation to a random weight,
// which kills an order-2 error whenever the weight is even: with the exact
// equations, a commitment a' = -a would fail alone but pass a batch half of
// the time. Squaring both sides (the "cofactor" of 2) puts every equation in
// Q, which has no small-order elements, so the single and the batch checks
// accept exactly the same proofs (up to 2^-128, see VerifyPartials). The
// squared equations prove what Combine needs. Special soundness: two
// accepting proofs with the same (a, b) and e != e' give
// v^(2(z-z')) = v_i^(2(e-e')); v generates Q, of odd order nm, and
// v_i = v^x is in Q, so z - z' = x (e - e') mod nm; then
// (c^8)^(z-z') = c_i^(4(e-e')) gives (c_i^4 c^(-8x))^(e-e') = 1 in Q, whose
// element orders have only prime factors p, q, p', q' > 2^256 > |e - e'|,
// so c_i^4 = c^(8x), and squaring being a bijection of Q (odd order),
// c_i^2 = (c^4)^x. Combine uses c_i only through c_i^(2 mu_i), i.e.
// through c_i^2, so a c_i changed by a factor of order 2 is harmless; the
// challenge hashes c_i itself, so such a change also fails the proof.
//
// Statistical zero knowledge: x < Delta n m < 2^(|Delta| + |n^2|) and
// e < 2^ChallengeBits, so e x < 2^(B - 128) with
//
//	B = |n^2| + ChallengeBits + |Delta| + StatisticalSecurityBits.
//
// z = r + e x is uniform on [e x, e x + 2^B), and a simulator that draws z
// uniform on [0, 2^B) and e uniform, sets a = (c^4)^z (c_i^2)^-e and
// b = v^z v_i^-e and programs the random oracle produces a distribution at
// statistical distance at most e x / 2^B < 2^-128 from real proofs.
// Leaving out |Delta| (or using |n| instead of |n^2|, since s_i lives
// modulo n m and not modulo n) would make z reveal the top bits of
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
	a, b *big.Int // commitments (c^4)^r and v^r, in Z*_{n^2}
	z    *big.Int // response, in [0, 2^(B+1))
}

// proofRandomBits returns B for this key.
func (tpk *ThresholdPublicKey) proofRandomBits() int {
	return tpk.nSquared.BitLen() + ChallengeBits + tpk.delta.BitLen() + StatisticalSecurityBits
}

// prove makes the proof for c_i = c^(2x). v^r is a short
// multi-exponentiation over the per-key chunk powers of v (about half the
// CPU of big.Int.Exp at 2048 bits, so that the partial decryption with its
// proof takes about 0.8 of the CPU of three exponentiations); (c^4)^r is a
// plain exponentiation, since a chunk table for a fresh c would cost as
// many squarings as it saves.
func (tpk *ThresholdPublicKey) prove(random io.Reader, index int, c, ci, x *big.Int) (*Proof, error) {
	if random == nil {
		return nil, errors.New("proof: nil random source")
	}
	r, err := tpk.proofNonce(random, index, c, ci, x)
	if err != nil {
		return nil, err
	}
	c4 := new(big.Int).Exp(c, big.NewInt(4), tpk.nSquared)
	a := new(big.Int).Exp(c4, r, tpk.nSquared)
	b := tpk.vPowers().exp(r, tpk.nSquared)
	e := tpk.challenge(index, c, ci, a, b)
	z := new(big.Int).Mul(e, x)
	z.Add(z, r)
	return &Proof{a: a, b: b, z: z}, nil
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

// checkProofShape checks what a proof must satisfy before any
// exponentiation: present, the response in range, the commitments in
// Z*_{n^2}.
func (tpk *ThresholdPublicKey) checkProofShape(p *Proof) error {
	if p == nil || p.a == nil || p.b == nil || p.z == nil {
		return errors.New("proof: missing")
	}
	if p.z.Sign() < 0 || p.z.BitLen() > tpk.proofRandomBits()+1 {
		return errors.New("proof: response out of range")
	}
	if err := tpk.checkUnit(p.a); err != nil {
		return fmt.Errorf("proof: commitment a: %w", err)
	}
	if err := tpk.checkUnit(p.b); err != nil {
		return fmt.Errorf("proof: commitment b: %w", err)
	}
	return nil
}

// verify checks one proof: the squared equations of Proof.
func (tpk *ThresholdPublicKey) verify(p *Proof, index int, c, ci *big.Int) error {
	if err := tpk.checkProofShape(p); err != nil {
		return err
	}
	nsq := tpk.nSquared
	e := tpk.challenge(index, c, ci, p.a, p.b)
	c4 := new(big.Int).Exp(c, big.NewInt(4), nsq)
	ci2 := new(big.Int).Mul(ci, ci)
	ci2.Mod(ci2, nsq)
	// ((c^4)^z)^2 = (a (c_i^2)^e)^2
	if !equalSquares(new(big.Int).Exp(c4, p.z, nsq), mulExp(p.a, ci2, e, nsq), nsq) {
		return errors.New("proof: invalid (partial decryption does not match the verification key)")
	}
	// (v^z)^2 = (b v_i^e)^2
	if !equalSquares(new(big.Int).Exp(tpk.v, p.z, nsq), mulExp(p.b, tpk.vi[index-1], e, nsq), nsq) {
		return errors.New("proof: invalid (commitment b does not match the verification key)")
	}
	return nil
}

// mulExp returns a y^e mod m.
func mulExp(a, y, e, m *big.Int) *big.Int {
	t := new(big.Int).Exp(y, e, m)
	t.Mul(t, a)
	return t.Mod(t, m)
}

// equalSquares reports whether x^2 = y^2 mod m.
func equalSquares(x, y, m *big.Int) bool {
	x2 := new(big.Int).Mul(x, x)
	y2 := new(big.Int).Mul(y, y)
	return x2.Mod(x2, m).Cmp(y2.Mod(y2, m)) == 0
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
