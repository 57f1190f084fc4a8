package paillier

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/big"
)

const (
	// PlaintextChallengeBits is the length of the Fiat-Shamir challenge e
	// of PlaintextProof: a cheating prover that does not know the
	// plaintext succeeds with probability at most about q 2^-128 after q
	// hash evaluations, and extraction needs e - e' invertible modulo n,
	// which holds because every prime factor of a key's modulus exceeds
	// 2^128 (balanced primes of at least 1024 bits).
	PlaintextChallengeBits = 128

	plaintextProofDomain = "dplearn/paillier/v1/plaintext-knowledge-proof"
	plaintextNonceDomain = "dplearn/paillier/v1/plaintext-proof-nonce"
)

// PlaintextProof is a non-interactive zero-knowledge proof of knowledge of
// the plaintext of a ciphertext, bound to a caller-given context (in DPPP:
// session, batch, sender and ciphertext index). Its purpose: a valid proof
// means its maker knows m, so a sum of ciphertexts that all carry valid
// proofs decrypts to "honest shares + values the other provers know". A
// party cannot submit a function of other parties' ciphertexts, such as
// E(0) prod_{h != victim} v_h^-1 (which cancels every vote but the
// victim's) or v_old^a E(x) built from a vote of an earlier batch (which
// amplifies it), because it knows neither plaintext; nor can it copy an
// honest party's proof, which is bound to that party's context.
//
// Protocol (the standard Sigma-protocol for knowledge of a Paillier
// plaintext, as in Cramer, Damgard and Nielsen, "Multiparty computation from
// threshold homomorphic encryption", EUROCRYPT 2001, made non-interactive
// with the Fiat-Shamir transform).
// Statement: c in Z*_{n^2}. Witness: m in Z_n and r in Z*_n with
// c = (1+n)^m r^n mod n^2 (every c in Z*_{n^2} has exactly one such pair,
// the map (m, r) -> (1+n)^m r^n being a bijection Z_n x Z*_n -> Z*_{n^2}).
// The prover draws s in Z_n and rho in Z*_n (hedged, below) and sends
//
//	a  = (1+n)^s rho^n mod n^2
//	e  = H(domain, key ID, context, c, a)    (PlaintextChallengeBits bits)
//	z1 = s + e m mod n
//	z2 = rho r^e mod n
//
// and the proof is (a, z1, z2). With X = (1+n)^z1 z2^n (a c^e)^-1 the
// honest proof has X = 1, because (1+n)^z = 1 + z n mod n^2 depends only on
// z mod n and (x mod n)^n = x^n mod n^2. The verifier recomputes e and
// accepts iff X^2 = 1 (below: why the square). The Encryptor's ciphertexts
// (1+n)^m h_s^alpha have the witness r = h^alpha mod n, since
// h_s^alpha = (h^alpha)^n mod n^2; Encryptor.EncryptWithProof computes it
// and never hands out alpha or r.
//
// Special soundness (what a valid proof proves). Let X^2 = 1. Every element
// of order at most 2 is an n-th power (n is odd, so X = X^n = (X mod n)^n),
// hence y = z2 (X mod n)^-1 mod n gives the exact equation
// (1+n)^z1 y^n = a c^e with the same a, e, z1. From two such exact
// transcripts (a, e, z1, y) and (a, e', z1', y') with e != e':
// (1+n)^(z1-z1') (y/y')^n = c^d with d = e - e', 0 < |d| < 2^128 < p, q, so
// d is invertible modulo n; let u d = 1 + k n. Then c = c^(u d) c^(-k n) =
// (1+n)^(u (z1-z1')) ((y/y')^u c^-k)^n, an opening of c, and by the
// uniqueness of the decomposition
//
//	m = (z1 - z1') (e - e')^-1 mod n.
//
// z2 does not enter m: an error in the n-th-power component (which is what
// the order-2 elements -1 and the two other square roots of 1 are) is an
// encryption of 0 and cannot change what is extracted. In the random-oracle
// model the forking lemma (Pointcheval-Stern) turns special soundness into
// a proof of knowledge: a prover that makes the verifier accept with
// probability noticeably above q 2^-128 can be rewound to two such
// transcripts. The challenge hashes the key ID, the context, c and a, so a
// proof for (c, context) is no proof for any other ciphertext or context
// (a replay to another batch, sender or index is a fresh statement for
// which the prover must know the plaintext). The proofs are malleable
// only by the order-2 factors of z2 (z2 -> n - z2 and the like), which
// give accepting proofs of the same statement with the same a and z1:
// harmless, but do not use proof bytes as identifiers.
//
// Zero knowledge. Honest-verifier perfect zero knowledge: z1 is uniform in
// Z_n and z2 uniform in Z*_n, independent of (m, r) and of each other, and
// a simulator drawing z1, z2 and e and setting a = (1+n)^z1 z2^n c^-e (and
// programming the random oracle) produces exactly the distribution of real
// proofs; with the hedged nonce below the distance is at most 2^-127 (s and
// rho are reductions modulo n of |n| + 128 pseudorandom bits).
//
// Why squared. Z*_{n^2} has elements of order 2, and a batch check
// (VerifyPlaintextProofs) raises each X_k to a random weight, which kills an
// order-2 X_k whenever the weight is even. Accepting X^2 = 1 in the single
// check too makes both checks accept the same proofs (up to 2^-128 per
// batch, for the safe-prime keys of this package); both prove the same
// knowledge, by the argument above.
//
// Hedged nonce. Two proofs with the same (s, rho) and different challenges
// reveal m (the extractor above) and r. (s, rho) is therefore derived, as
// for Proof, from HMAC-SHA-512 keyed with the witness (m, r) over 64 fresh
// random bytes and the statement (key ID, context, c), expanded to
// 2 (|n| + 128) bits; a random source that repeats or is controlled by an
// adversary still gives distinct nonces for distinct statements.
//
// Cost at 2048 bits (docs/paillier.md, BenchmarkPlaintextProof): proving
// is one exponentiation rho^n mod n^2 plus the encryption and h^alpha mod n
// (1.3 to 1.5 reference encryptions); verifying is one z2^n and one 128-bit
// c^e (about one reference encryption, 0.2 to 0.27 of a VerifyPartial);
// VerifyPlaintextProofs checks 250 proofs for 0.1 to 0.12 of a single
// verification each, 5 to 6.4 VerifyPartials of a (5, 3) key in all.
type PlaintextProof struct {
	pk *PublicKey
	a  *big.Int // (1+n)^s rho^n mod n^2, in Z*_{n^2}
	z1 *big.Int // s + e m mod n, in [0, n)
	z2 *big.Int // rho r^e mod n, in Z*_n
}

// PlaintextClaim is a ciphertext with its plaintext-knowledge proof and the
// context the proof was made for.
type PlaintextClaim struct {
	Ciphertext *Ciphertext
	Proof      *PlaintextProof
	Context    []byte
}

// EncryptWithProof encrypts m in [0, n) as PublicKey.Encrypt does (r
// uniform in Z*_n read from random) and proves knowledge of m bound to
// context (see PlaintextProof). context must name everything the proof
// may not be replayed to (in DPPP: session, batch, sender, ciphertext
// index), with an unambiguous encoding.
func (pk *PublicKey) EncryptWithProof(random io.Reader, m *big.Int, context []byte) (*Ciphertext, *PlaintextProof, error) {
	if err := pk.checkPlaintext(m); err != nil {
		return nil, nil, fmt.Errorf("paillier: encrypt with proof: %w", err)
	}
	r, err := pk.randomUnit(random)
	if err != nil {
		return nil, nil, fmt.Errorf("paillier: encrypt with proof: %w", err)
	}
	ct := pk.encryptWithNonce(m, r)
	proof, err := pk.provePlaintext(random, ct.c, m, r, context)
	if err != nil {
		return nil, nil, fmt.Errorf("paillier: encrypt with proof: %w", err)
	}
	return ct, proof, nil
}

// EncryptWithProof encrypts m in [0, n) as Encrypt does and proves knowledge
// of m bound to context (see PlaintextProof and
// PublicKey.EncryptWithProof). The proof costs about one reference
// encryption (PublicKey.Encrypt) on top of the fast encryption; it reveals
// nothing about the Encryptor's randomizer.
func (e *Encryptor) EncryptWithProof(m *big.Int, context []byte) (*Ciphertext, *PlaintextProof, error) {
	if e == nil {
		return nil, nil, errors.New("paillier: encrypt with proof: nil Encryptor")
	}
	if err := e.pk.checkPlaintext(m); err != nil {
		return nil, nil, fmt.Errorf("paillier: encrypt with proof: %w", err)
	}
	alpha, rn, err := e.randomizerExp()
	if err != nil {
		return nil, nil, fmt.Errorf("paillier: encrypt with proof: %w", err)
	}
	ct := e.pk.combine(m, rn)
	// r = h^alpha mod n: r^n = h^(n alpha) = h_s^alpha mod n^2.
	r := new(big.Int).Exp(e.h, alpha, e.pk.n)
	proof, err := e.pk.provePlaintext(e.random, ct.c, m, r, context)
	if err != nil {
		return nil, nil, fmt.Errorf("paillier: encrypt with proof: %w", err)
	}
	return ct, proof, nil
}

// provePlaintext proves knowledge of (m, r) with c = (1+n)^m r^n mod n^2.
func (pk *PublicKey) provePlaintext(random io.Reader, c, m, r *big.Int, context []byte) (*PlaintextProof, error) {
	m = new(big.Int).Mod(m, pk.n)
	r = new(big.Int).Mod(r, pk.n)
	s, rho, err := pk.plaintextNonce(random, c, m, r, context)
	if err != nil {
		return nil, err
	}
	a := pk.plaintextCommit(s, rho)
	e := pk.plaintextChallenge(context, c, a)
	z1, z2 := pk.plaintextRespond(m, r, s, rho, e)
	return &PlaintextProof{pk: pk, a: a, z1: z1, z2: z2}, nil
}

// plaintextCommit returns a = (1+n)^s rho^n mod n^2.
func (pk *PublicKey) plaintextCommit(s, rho *big.Int) *big.Int {
	rn := new(big.Int).Exp(rho, pk.n, pk.nSquared)
	return pk.combine(s, rn).c
}

// plaintextRespond returns z1 = s + e m mod n and z2 = rho r^e mod n.
func (pk *PublicKey) plaintextRespond(m, r, s, rho, e *big.Int) (z1, z2 *big.Int) {
	z1 = new(big.Int).Mul(e, m)
	z1.Add(z1, s)
	z1.Mod(z1, pk.n)
	z2 = new(big.Int).Exp(r, e, pk.n)
	z2.Mul(z2, rho)
	z2.Mod(z2, pk.n)
	return z1, z2
}

// plaintextNonce derives the hedged (s, rho) of PlaintextProof.
func (pk *PublicKey) plaintextNonce(random io.Reader, c, m, r *big.Int, context []byte) (s, rho *big.Int, err error) {
	if random == nil {
		return nil, nil, errors.New("plaintext proof: nil random source")
	}
	var fresh [nonceFreshBytes]byte
	if _, err := io.ReadFull(random, fresh[:]); err != nil {
		return nil, nil, fmt.Errorf("plaintext proof: reading randomness: %w", err)
	}
	nLen := pk.nLen()
	key := make([]byte, 2*nLen)
	m.FillBytes(key[:nLen])
	r.FillBytes(key[nLen:])
	mac := hmac.New(sha512.New, key)
	mac.Write([]byte(plaintextNonceDomain))
	mac.Write([]byte{0})
	mac.Write(fresh[:])
	mac.Write(pk.id[:])
	writeHashBytes(mac, context)
	writeHashInt(mac, c)
	k := mac.Sum(nil)
	clear(key)
	width := (pk.n.BitLen() + StatisticalSecurityBits + 7) / 8
	out := make([]byte, 0, 2*width+sha512.Size)
	expand := hmac.New(sha512.New, k)
	var ctr [4]byte
	for j := uint32(1); len(out) < 2*width; j++ {
		expand.Reset()
		expand.Write([]byte(plaintextNonceDomain))
		expand.Write([]byte{1})
		binary.BigEndian.PutUint32(ctr[:], j)
		expand.Write(ctr[:])
		out = expand.Sum(out)
	}
	s = new(big.Int).SetBytes(out[:width])
	s.Mod(s, pk.n)
	rho = new(big.Int).SetBytes(out[width : 2*width])
	rho.Mod(rho, pk.n)
	clear(out)
	clear(k)
	if rho.Sign() == 0 || new(big.Int).GCD(nil, nil, rho, pk.n).Cmp(bigOne) != 0 {
		// Probability about 2/sqrt(n): a factor of n has been found.
		return nil, nil, errors.New("plaintext proof: nonce is not a unit modulo n")
	}
	return s, rho, nil
}

// plaintextChallenge is e = the first PlaintextChallengeBits bits of
// SHA-256(domain | 0 | key ID | len(context) | context | len(c) | c |
// len(a) | a), an injective encoding of the statement and commitment.
func (pk *PublicKey) plaintextChallenge(context []byte, c, a *big.Int) *big.Int {
	h := sha256.New()
	h.Write([]byte(plaintextProofDomain))
	h.Write([]byte{0})
	h.Write(pk.id[:])
	writeHashBytes(h, context)
	writeHashInt(h, c)
	writeHashInt(h, a)
	sum := h.Sum(nil)
	return new(big.Int).SetBytes(sum[:PlaintextChallengeBits/8])
}

// writeHashBytes writes a 64-bit length and b.
func writeHashBytes(h io.Writer, b []byte) {
	var l [8]byte
	binary.BigEndian.PutUint64(l[:], uint64(len(b)))
	h.Write(l[:])
	h.Write(b)
}

// nLen is the fixed byte length of elements modulo n.
func (pk *PublicKey) nLen() int { return (pk.n.BitLen() + 7) / 8 }

// checkPlaintextProofShape checks a proof before any exponentiation: made
// under this key, a in Z*_{n^2}, z1 in [0, n), z2 in Z*_n.
func (pk *PublicKey) checkPlaintextProofShape(p *PlaintextProof) error {
	if p == nil || p.pk == nil || p.a == nil || p.z1 == nil || p.z2 == nil {
		return errors.New("proof missing or incomplete")
	}
	if p.pk.n.Cmp(pk.n) != 0 {
		return errors.New("proof made under a different public key")
	}
	if err := pk.checkUnit(p.a); err != nil {
		return fmt.Errorf("proof commitment a: %w", err)
	}
	if p.z1.Sign() < 0 || p.z1.Cmp(pk.n) >= 0 {
		return errors.New("proof response z1 outside [0, n)")
	}
	if p.z2.Sign() <= 0 || p.z2.Cmp(pk.n) >= 0 || new(big.Int).GCD(nil, nil, p.z2, pk.n).Cmp(bigOne) != 0 {
		return errors.New("proof response z2 not in Z*_n")
	}
	return nil
}

// checkPlaintextClaim is the checks of VerifyPlaintextProof before any
// exponentiation.
func (pk *PublicKey) checkPlaintextClaim(ct *Ciphertext, p *PlaintextProof) error {
	if err := pk.owns(ct); err != nil {
		return fmt.Errorf("paillier: verify plaintext proof: %w", err)
	}
	if err := pk.checkUnit(ct.c); err != nil {
		return fmt.Errorf("paillier: verify plaintext proof: ciphertext: %w", err)
	}
	if err := pk.checkPlaintextProofShape(p); err != nil {
		return fmt.Errorf("paillier: verify plaintext proof: %w", err)
	}
	return nil
}

// VerifyPlaintextProof checks that proof proves knowledge of the plaintext
// of ct for this context (see PlaintextProof). It works with the public
// key of a threshold key too (ThresholdPublicKey embeds PublicKey).
func (pk *PublicKey) VerifyPlaintextProof(ct *Ciphertext, proof *PlaintextProof, context []byte) error {
	if err := pk.checkPlaintextClaim(ct, proof); err != nil {
		return err
	}
	return pk.verifyPlaintext(ct.c, proof, pk.plaintextChallenge(context, ct.c, proof.a))
}

// verifyPlaintext checks X^2 = 1 for a shape-checked proof and its
// challenge e: ((1+n)^z1 z2^n)^2 = (a c^e)^2 mod n^2.
func (pk *PublicKey) verifyPlaintext(c *big.Int, p *PlaintextProof, e *big.Int) error {
	nsq := pk.nSquared
	lhs := new(big.Int).Exp(p.z2, pk.n, nsq)
	lhs = pk.combine(p.z1, lhs).c
	if !equalSquares(lhs, mulExp(p.a, c, e, nsq), nsq) {
		return errors.New("paillier: verify plaintext proof: invalid (the prover does not know the plaintext, or the proof is for another ciphertext or context)")
	}
	return nil
}

// VerifyPlaintextProofs verifies many plaintext-knowledge proofs at once
// and returns one error per claim (nil for a valid one), with the same
// verdicts as VerifyPlaintextProof on each claim except with probability
// at most 2^-128 per batch check, and in any case only accepting proofs
// that prove knowledge of the plaintext (below).
//
// Batch check. For claim k let X_k = (1+n)^z1_k z2_k^n (a_k c_k^e_k)^-1;
// VerifyPlaintextProof accepts claim k iff X_k^2 = 1. Draw weights w_k
// uniform in [0, 2^BatchWeightBits) from crypto/rand after the claims are
// fixed and accept iff (prod_k X_k^w_k)^2 = 1, computed as L^2 = R^2 with
//
//	L = (1+n)^(sum_k w_k z1_k mod n) (prod_k z2_k^w_k)^n
//	R = prod_k a_k^w_k c_k^(w_k e_k)
//
// by two multi-exponentiations (128-bit exponents on the z2_k and a_k,
// 256-bit on the c_k, squarings shared) and one exponentiation to the n.
//
// Soundness in Z*_{n^2} = {(1+n)^mu nu^n} (a direct product of the cyclic
// group generated by 1+n, of order n, and the n-th powers, of order
// phi(n)). Let pi(X) = mu, the homomorphism onto Z_n whose kernel is the
// n-th powers. Suppose pi(X_j) != 0 for some j, and fix every weight but
// w_j: the batch accepts iff 2 w_j pi(X_j) = T mod n for a T that does not
// depend on w_j. 2 pi(X_j) != 0 (n is odd) has additive order p, q or n,
// all above 2^128, so two weights in [0, 2^128) satisfying it would differ
// by a multiple of a number above 2^128: at most one of the 2^128 values of
// w_j does, probability at most 2^-128 whatever the other claims. So an
// accepted batch has, except with probability 2^-128, every X_k an n-th
// power nu_k^n, and then (1+n)^z1_k (z2_k nu_k^-1)^n = a_k c_k^e_k exactly:
// the transcript (a_k, e_k, z1_k, z2_k nu_k^-1) is accepting, and the
// extractor of PlaintextProof, which uses z1 and e only, gives the same m.
// The small-order elements of Z*_{n^2} (-1 and the other square roots of
// 1, those of order dividing phi(n) in general) all lie in the n-th-power
// component: they encrypt 0 and cannot change what is extracted, even when
// an even weight makes them vanish from the batch. For the safe-prime keys
// this package generates, the n-th powers have order 4 p' q' and the
// squares among them order p' q' with p', q' > 2^128: the same argument on
// that component shows every X_k^2 = 1, so the batch and the single check
// agree except with probability 2^-128. The weights must be independent per
// claim: with one weight for all, two forgers with X_1 = (1+n) and
// X_2 = (1+n)^-1 would cancel.
//
// On a failed batch check the claims are split in halves, each checked with
// fresh weights, down to batches of fewer than 4, which are checked one by
// one: the bad claims are named (with VerifyPlaintextProof's error) and the
// good ones accepted, at about 2 log2(k) batch checks per bad claim.
func (pk *PublicKey) VerifyPlaintextProofs(claims []PlaintextClaim) []error {
	return pk.verifyPlaintextProofs(rand.Reader, claims)
}

func (pk *PublicKey) verifyPlaintextProofs(random io.Reader, claims []PlaintextClaim) []error {
	errs := make([]error, len(claims))
	if pk == nil || pk.n == nil {
		for k := range errs {
			errs[k] = fmt.Errorf("paillier: verify plaintext proof: %w", errNoKey)
		}
		return errs
	}
	es := make([]*big.Int, len(claims))
	var ok []int
	for k, cl := range claims {
		if err := pk.checkPlaintextClaim(cl.Ciphertext, cl.Proof); err != nil {
			errs[k] = err
			continue
		}
		es[k] = pk.plaintextChallenge(cl.Context, cl.Ciphertext.c, cl.Proof.a)
		ok = append(ok, k)
	}
	pk.verifyPlaintextBatch(random, claims, es, ok, errs)
	return errs
}

// verifyPlaintextBatch sets errs[k] for the shape-checked claims listed in
// idx, by batch checks and bisection; es[k] is claim k's challenge.
func (pk *PublicKey) verifyPlaintextBatch(random io.Reader, claims []PlaintextClaim, es []*big.Int, idx []int, errs []error) {
	if len(idx) == 0 {
		return
	}
	one := func() {
		for _, k := range idx {
			errs[k] = pk.verifyPlaintext(claims[k].Ciphertext.c, claims[k].Proof, es[k])
		}
	}
	if len(idx) < batchSplitBelow {
		one()
		return
	}
	w, err := drawWeights(random, len(idx))
	if err != nil { // no weights: check one by one rather than fail
		one()
		return
	}
	if pk.plaintextBatchHolds(claims, es, idx, w) {
		return
	}
	h := len(idx) / 2
	pk.verifyPlaintextBatch(random, claims, es, idx[:h], errs)
	pk.verifyPlaintextBatch(random, claims, es, idx[h:], errs)
}

// drawWeights draws k independent weights uniform in
// [0, 2^BatchWeightBits).
func drawWeights(random io.Reader, k int) ([]*big.Int, error) {
	w := BatchWeightBits / 8
	buf := make([]byte, k*w)
	if _, err := io.ReadFull(random, buf); err != nil {
		return nil, fmt.Errorf("paillier: batch verification weights: %w", err)
	}
	out := make([]*big.Int, k)
	for j := range out {
		out[j] = new(big.Int).SetBytes(buf[j*w : (j+1)*w])
	}
	return out, nil
}

// plaintextBatchHolds evaluates L^2 = R^2 of VerifyPlaintextProofs for the
// claims idx with weights w.
func (pk *PublicKey) plaintextBatchHolds(claims []PlaintextClaim, es []*big.Int, idx []int, w []*big.Int) bool {
	nsq := pk.nSquared
	z1 := new(big.Int)
	t := new(big.Int)
	z2s := make([]*big.Int, len(idx))
	bases := make([]*big.Int, 0, 2*len(idx))
	exps := make([]*big.Int, 0, 2*len(idx))
	for j, k := range idx {
		p := claims[k].Proof
		z1.Add(z1, t.Mul(w[j], p.z1))
		z2s[j] = p.z2
		bases = append(bases, p.a, claims[k].Ciphertext.c)
		exps = append(exps, w[j], new(big.Int).Mul(w[j], es[k]))
	}
	z1.Mod(z1, pk.n)
	done := make(chan *big.Int, 1)
	go func() {
		pz := multiExp(z2s, w, nsq)
		done <- pz.Exp(pz, pk.n, nsq)
	}()
	r := multiExp(bases, exps, nsq)
	l := pk.combine(z1, <-done).c
	return equalSquares(l, r, nsq)
}

// MarshalBinary encodes the proof: header | key ID (32) | a (W) | z1 (V) |
// z2 (V), W the byte length of n^2 and V that of n.
func (p *PlaintextProof) MarshalBinary() ([]byte, error) {
	if p == nil || p.pk == nil || p.a == nil || p.z1 == nil || p.z2 == nil {
		return nil, errors.New("paillier: encode plaintext proof: incomplete")
	}
	pk := p.pk
	if p.a.Sign() <= 0 || p.a.Cmp(pk.nSquared) >= 0 || p.z1.Sign() < 0 || p.z1.Cmp(pk.n) >= 0 || p.z2.Sign() <= 0 || p.z2.Cmp(pk.n) >= 0 {
		return nil, errors.New("paillier: encode plaintext proof: out of range")
	}
	out := append(header(kindPlaintextProof), pk.id[:]...)
	out = putFixed(out, p.a, pk.elemLen())
	out = putFixed(out, p.z1, pk.nLen())
	return putFixed(out, p.z2, pk.nLen()), nil
}

// ParsePlaintextProof decodes a plaintext-knowledge proof made under pk: the
// key ID must match, the length must be exact, a must lie in Z*_{n^2}, z1 in
// [0, n) and z2 in Z*_n. Whether it proves anything is checked by
// VerifyPlaintextProof or VerifyPlaintextProofs, which also need the
// ciphertext and the context.
func (pk *PublicKey) ParsePlaintextProof(b []byte) (*PlaintextProof, error) {
	if pk == nil || pk.n == nil {
		return nil, fmt.Errorf("paillier: decode plaintext proof: %w", errNoKey)
	}
	body, err := checkHeader(b, kindPlaintextProof)
	if err != nil {
		return nil, fmt.Errorf("paillier: decode plaintext proof: %w", err)
	}
	r := &reader{b: body}
	id := r.take(keyIDLen, "key ID")
	a := r.int(pk.elemLen(), "proof commitment a")
	z1 := r.int(pk.nLen(), "proof response z1")
	z2 := r.int(pk.nLen(), "proof response z2")
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("paillier: decode plaintext proof: %w", err)
	}
	if !bytes.Equal(id, pk.id[:]) {
		return nil, errors.New("paillier: decode plaintext proof: made under a different public key")
	}
	p := &PlaintextProof{pk: pk, a: a, z1: z1, z2: z2}
	if err := pk.checkPlaintextProofShape(p); err != nil {
		return nil, fmt.Errorf("paillier: decode plaintext proof: %w", err)
	}
	return p, nil
}
