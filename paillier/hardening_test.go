package paillier

import (
	"bufio"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math/big"
	"strings"
	"sync"
	"testing"
)

// repeatingReader returns the same byte for ever: a broken or replayed
// random source (a VM snapshot restored twice, a seeded PRNG reused).
type repeatingReader byte

func (r repeatingReader) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// TestProofNonceHedged: with a random source that repeats, two proofs by
// the same party on different ciphertexts must not reveal its share.
//
// The proof's response is z = r + e x over the integers, x = Delta s_i. If
// the nonce r is the same in two proofs with challenges e1 != e2 (the
// ciphertexts differ, so the challenges do), then
//
//	z1 - z2 = (r + e1 x) - (r + e2 x) = (e1 - e2) x
//	x = (z1 - z2) / (e1 - e2),  s_i = x / Delta,
//
// an exact division over the integers that recovers the share. Before the
// nonce was hedged (drawn from the reader alone), this recovered s_i exactly
// from two proofs; with r derived from a hash of the share, the statement
// and the fresh bytes, the nonces differ and the "recovered" value is wrong.
func TestProofNonceHedged(t *testing.T) {
	tpk, shares := mustDeal(t, 512, 3, 2)
	ks := shares[0]
	rng := testRand(t, 41)
	ct1, _ := tpk.Encrypt(rng, big.NewInt(3))
	ct2, _ := tpk.Encrypt(rng, big.NewInt(5))
	pd1, err := ks.Decrypt(repeatingReader(0x5a), ct1)
	if err != nil {
		t.Fatal(err)
	}
	pd2, err := ks.Decrypt(repeatingReader(0x5a), ct2)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		ct *Ciphertext
		pd *PartialDecryption
	}{{ct1, pd1}, {ct2, pd2}} {
		if err := tpk.VerifyPartial(c.ct, c.pd); err != nil {
			t.Fatalf("proof with a repeating reader does not verify: %v", err)
		}
	}
	x := new(big.Int).Mul(tpk.delta, ks.s) // the secret the proof is about
	e1 := tpk.challenge(ks.index, ct1.c, pd1.ci, pd1.proof.a, pd1.proof.b)
	e2 := tpk.challenge(ks.index, ct2.c, pd2.ci, pd2.proof.a, pd2.proof.b)
	z1, z2 := pd1.proof.z, pd2.proof.z
	if e1.Cmp(e2) == 0 {
		t.Fatal("equal challenges for different ciphertexts")
	}
	num := new(big.Int).Sub(z1, z2)
	den := new(big.Int).Sub(e1, e2)
	rec, rem := new(big.Int).QuoRem(num, den, new(big.Int))
	recovered := rem.Sign() == 0 && rec.Cmp(x) == 0
	// The nonces themselves: r = z - e x.
	r1 := new(big.Int).Sub(z1, new(big.Int).Mul(e1, x))
	r2 := new(big.Int).Sub(z2, new(big.Int).Mul(e2, x))
	t.Logf("nonces equal: %v; (z1-z2)/(e1-e2) exact: %v; equals Delta*s_i: %v", r1.Cmp(r2) == 0, rem.Sign() == 0, rec.Cmp(x) == 0)
	if r1.Cmp(r2) == 0 {
		t.Error("the repeating reader produced the same proof nonce twice")
	}
	if recovered {
		t.Errorf("share of party %d recovered exactly from two proofs: s_i = (z1-z2)/((e1-e2) Delta)", ks.index)
	}
	if B := tpk.proofRandomBits(); r1.Sign() < 0 || r1.BitLen() > B || r2.Sign() < 0 || r2.BitLen() > B {
		t.Errorf("nonces outside [0, 2^B), B = %d", B)
	}
	// The same statement with the same bytes gives the same proof (nothing
	// new is revealed by a repeat).
	pd1b, _ := ks.Decrypt(repeatingReader(0x5a), ct1)
	if pd1b.proof.z.Cmp(z1) != 0 {
		t.Error("same statement, same randomness, different nonce")
	}
}

// TestPoolRandomReaderNotConcurrent: a Pool's workers and the foreground
// fallback read the caller's random source concurrently; a source that is
// not safe for concurrent use (a bufio.Reader) must be serialised. Run with
// -race: before the fix the race detector reported the concurrent reads.
func TestPoolRandomReaderNotConcurrent(t *testing.T) {
	sk := mustTestKey(t, 256)
	enc, err := NewEncryptor(sk.Public(), bufio.NewReaderSize(rand.Reader, 16))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pool, err := enc.StartPool(ctx, 2, 3)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				m := big.NewInt(int64(i))
				ct, err := pool.Encrypt(m)
				if err == nil {
					_, err = enc.Encrypt(m)
				}
				if err != nil {
					errs <- err
					return
				}
				if got, _ := sk.Decrypt(ct); got.Cmp(m) != 0 {
					errs <- fmt.Errorf("pool encryption of %v decrypted to %v", m, got)
					return
				}
			}
		}()
	}
	wg.Wait()
	cancel()
	pool.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if err := pool.Err(); err != nil {
		t.Fatal(err)
	}
}

// TestVerificationKeysRejected: v and every v_i must be units of Z*_{n^2}
// of order greater than 2 with Jacobi symbol 1, in the constructor and in
// the decoder. Before, v_i = 1 and v, v_i = n^2-1 were accepted (n^2-1 has
// Jacobi symbol 1 when p = q = 3 mod 4, as for safe primes).
func TestVerificationKeysRejected(t *testing.T) {
	tpk, _ := mustDeal(t, 512, 3, 2)
	pk := tpk.Public()
	nsq := pk.NSquared()
	minus1 := new(big.Int).Sub(nsq, bigOne)
	// A square root of 1 other than +-1: 1 mod p^2, -1 mod q^2.
	p, q := testPrimePair(512)
	p2, q2 := new(big.Int).Mul(p, p), new(big.Int).Mul(q, q)
	// root = 1 - 2 p^2 (p^-2 mod q^2): 1 mod p^2, 1 - 2 = -1 mod q^2.
	root := new(big.Int).ModInverse(p2, q2)
	root.Mul(root, p2)
	root.Mul(root, big.NewInt(-2))
	root.Add(root, bigOne)
	root.Mod(root, nsq)
	nonSquare := big.NewInt(2)
	for big.Jacobi(nonSquare, pk.n) != -1 {
		nonSquare.Add(nonSquare, bigOne)
	}
	bad := []struct {
		name string
		x    *big.Int
		want string
	}{
		{"zero", big.NewInt(0), "zero"},
		{"one", big.NewInt(1), "= 1"},
		{"minus one", minus1, "n^2-1"},
		{"other root of 1", root, "square root of 1"},
		{"n", pk.N(), "shares a factor"},
		{"n^2", nsq, "not reduced"},
		{"n^2+1", new(big.Int).Add(nsq, bigOne), "not reduced"},
		{"Jacobi -1", nonSquare, "not a square"},
	}
	enc := tpk.marshal()
	elem := pk.elemLen()
	vOff := headerLen + 2 + len(pk.n.Bytes()) + 4
	for _, b := range bad {
		for slot := 0; slot <= tpk.parties; slot++ { // 0 is v, k is v_k
			vi := append([]*big.Int(nil), tpk.vi...)
			v := tpk.v
			name := "verification base v"
			if slot == 0 {
				v = b.x
			} else {
				vi[slot-1] = b.x
				name = fmt.Sprintf("verification key v_%d", slot)
			}
			_, err := newThresholdPublicKey(pk, tpk.parties, tpk.threshold, v, vi)
			if err == nil || !strings.Contains(err.Error(), b.want) || !strings.Contains(err.Error(), name) {
				t.Errorf("%s as %s: constructor error %v", b.name, name, err)
			}
			if b.x.Cmp(nsq) >= 0 {
				continue // does not fit the fixed-width field
			}
			mut := append([]byte(nil), enc...)
			b.x.FillBytes(mut[vOff+slot*elem : vOff+(slot+1)*elem])
			if _, err := parseThresholdPublicKey(mut, minTestModulusBits); err == nil || !strings.Contains(err.Error(), b.want) {
				t.Errorf("%s as %s: decoder error %v", b.name, name, err)
			}
		}
	}
}

// rfc3526Prime2048 is the 2048-bit MODP group prime of RFC 3526, a public
// prime used here as a modulus that must be refused.
const rfc3526Prime2048 = "0xFFFFFFFFFFFFFFFFC90FDAA22168C234C4C6628B80DC1CD129024E088A67CC74020BBEA63B139B22514A08798E3404DDEF9519B3CD3A431B302B0A6DF25F14374FE1356D6D51C245E485B576625E7EC6F44C42E9A637ED6B0BFF5CB6F406B7EDEE386BFB5A899FA5AE9F24117C4B1FE649286651ECE45B3DC2007CB8A163BF0598DA48361C55D39A69163FA8FD24CF5F83655D23DCA3AD961C62F356208552BB9ED529077096966D670C354E4ABC9804F1746C08CA18217C32905E462E36CE3BE39E772C180E86039B2783A2EC07A28FB5C55DF06F4C52C9DE2BCBF6955817183995497CEA956AE515D2261898FA051015728E5A8AACAA68FFFFFFFFFFFFFFFF"

// TestModulusChecks: moduli with a small factor, prime moduli and perfect
// powers are refused by NewPublicKey and by the decoders; unbalanced and
// too-close primes by NewPrivateKey and DealThreshold. Before, all of these
// except squares and p = q were accepted.
func TestModulusChecks(t *testing.T) {
	p, q := testPrimePair(2048)
	pq := new(big.Int).Mul(p, q)
	prime, _ := new(big.Int).SetString(rfc3526Prime2048, 0)
	mul := func(a int64, x *big.Int) *big.Int { return new(big.Int).Mul(big.NewInt(a), x) }
	cube := new(big.Int).Exp(p, big.NewInt(3), nil)
	// 32771^137 (32771 = 2^15 + 3 is prime): 2057 bits, no factor below
	// 2^15, a 137-th power.
	power := new(big.Int).Exp(big.NewInt(32771), big.NewInt(137), nil)
	bad := []struct {
		name string
		n    *big.Int
		want string
	}{
		{"factor 3", mul(3, pq), "small prime factor 3"},
		{"factor 32749", mul(32749, pq), "small prime factor 32749"},
		{"prime", prime, "modulus is prime"},
		{"square", new(big.Int).Mul(p, p), "perfect square"},
		{"cube", cube, "n = a^3"},
		{"power of a large base", power, "perfect power"},
	}
	for _, b := range bad {
		if _, err := NewPublicKey(b.n); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("NewPublicKey(%s): %v, want an error mentioning %q", b.name, err, b.want)
		}
		enc := putU16(header(kindPublicKey), len(b.n.Bytes()))
		enc = append(enc, b.n.Bytes()...)
		if _, err := ParsePublicKey(enc); err == nil || !strings.Contains(err.Error(), b.want) {
			t.Errorf("ParsePublicKey(%s): %v, want an error mentioning %q", b.name, err, b.want)
		}
	}
	if _, err := NewPublicKey(pq); err != nil {
		t.Fatalf("good modulus refused: %v", err)
	}
	// The known-answer key n = 293 * 433 still passes the test-size check.
	if _, err := newPublicKey(big.NewInt(126869), minTestModulusBits); err != nil {
		t.Fatal(err)
	}

	// Unbalanced primes (1024 and 1536 bits) through the exported API.
	p3, _ := testPrimePair(3072)
	if _, err := NewPrivateKey(p, p3); err == nil || !strings.Contains(err.Error(), "equal lengths") {
		t.Errorf("NewPrivateKey with unbalanced primes: %v", err)
	}
	if _, _, err := DealThreshold(testRand(t, 1), p, p3, 3, 2); err == nil || !strings.Contains(err.Error(), "equal lengths") {
		t.Errorf("DealThreshold with unbalanced primes: %v", err)
	}
	// Too-close primes: the next (safe) prime after a fixture prime, at
	// 256- and 512-bit moduli (bounds 2^28 and 2^156).
	p1, _ := testPrimePair(512)
	close1 := nextPrime(p1, false)
	if _, err := newPrivateKey(p1, close1, minTestModulusBits); err == nil || !strings.Contains(err.Error(), "too close") {
		t.Errorf("newPrivateKey with |p-q| = %v: %v", new(big.Int).Sub(close1, p1), err)
	}
	p0, _ := testPrimePair(256)
	close0 := nextPrime(p0, true)
	if _, _, err := dealThreshold(testRand(t, 2), p0, close0, 3, 2, minTestModulusBits); err == nil || !strings.Contains(err.Error(), "too close") {
		t.Errorf("dealThreshold with |p-q| = %v: %v", new(big.Int).Sub(close0, p0), err)
	}
	// Close primes at 2048 bits through the exported constructor: the bound
	// is 2^924, and q = p + 2^900 + k is well inside it.
	cq := new(big.Int).Add(p, new(big.Int).Lsh(bigOne, 900))
	cq = nextPrime(cq, false)
	if _, err := NewPrivateKey(p, cq); err == nil || !strings.Contains(err.Error(), "too close") {
		t.Errorf("NewPrivateKey with |p-q| ~ 2^900: %v", err)
	}
}

// nextPrime returns the smallest (safe, if safe) prime above x.
func nextPrime(x *big.Int, safe bool) *big.Int {
	c := new(big.Int).Add(x, bigTwo)
	c.SetBit(c, 0, 1)
	for {
		if c.ProbablyPrime(0) && (!safe || new(big.Int).Rsh(c, 1).ProbablyPrime(0)) {
			return c
		}
		c.Add(c, bigTwo)
	}
}

// TestDecryptSumRefuses: a share holder partially decrypts only a
// ciphertext it has checked is the product of at least the required number
// of distinct contributions under its key.
func TestDecryptSumRefuses(t *testing.T) {
	tpk, shares := mustDeal(t, 512, 3, 2)
	other, _ := mustDeal(t, 256, 3, 2)
	rng := testRand(t, 51)
	votes := make([]*Ciphertext, 4)
	for i := range votes {
		votes[i], _ = tpk.Encrypt(rng, big.NewInt(int64(10+i)))
	}
	sum3, _ := tpk.Sum(votes[:3]...)
	sum2, _ := tpk.Sum(votes[:2]...)
	weighted, _ := tpk.Sum(votes[0], votes[0], votes[1])
	foreign, _ := other.Encrypt(rng, big.NewInt(1))
	refusals := []struct {
		name string
		sum  *Ciphertext
		list []*Ciphertext
		min  int
		want string
	}{
		{"single vote, minimum 1", votes[0], votes[:1], 1, "individual input"},
		{"single vote, minimum 2", votes[0], votes[:1], 2, "fewer than the minimum 2"},
		{"a vote claimed to be a sum", votes[0], votes[:3], 2, "not the product"},
		{"sum of a subset", sum2, votes[:3], 2, "not the product"},
		{"too few contributors", sum2, votes[:2], 3, "2 contributors, fewer than the minimum 3"},
		{"repeated contributor", weighted, []*Ciphertext{votes[0], votes[0], votes[1]}, 3, "repeats contributor 0"},
		{"foreign contributor", sum2, []*Ciphertext{votes[0], votes[1], foreign}, 2, "different public key"},
		{"nil contributor", sum2, []*Ciphertext{votes[0], nil}, 2, "nil ciphertext"},
	}
	for _, r := range refusals {
		pd, err := shares[0].DecryptSum(rng, r.sum, r.list, r.min)
		if pd != nil || !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), r.want) {
			t.Errorf("%s: %v, %v; want a refusal mentioning %q", r.name, pd, err, r.want)
		}
	}
	// The right product with enough contributors: two holders answer and
	// the answers combine to the sum 10 + 11 + 12.
	var parts []*PartialDecryption
	for _, ks := range shares[1:] {
		pd, err := ks.DecryptSum(rng, sum3, votes[:3], 3)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, pd)
	}
	res, err := tpk.Combine(sum3, parts)
	if err != nil || res.Plaintext.Int64() != 33 {
		t.Fatalf("combination of checked partial decryptions: %v, %v", res, err)
	}
}
