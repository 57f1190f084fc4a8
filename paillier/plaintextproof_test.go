package paillier

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"math/big"
	"strings"
	"testing"
)

// ppFixture is a (6, 4) threshold key on the 1024-bit fixture primes with
// its dealer's private key (to decrypt and to extract), as DPPP uses it.
type ppFixture struct {
	tpk *ThresholdPublicKey
	pk  *PublicKey // &tpk.PublicKey
	sk  *PrivateKey
}

func newPPFixture(t testing.TB, bits int) *ppFixture {
	t.Helper()
	tpk, _ := mustDeal(t, bits, 6, 4)
	return &ppFixture{tpk: tpk, pk: tpk.Public(), sk: mustTestKey(t, bits)}
}

// ctx is a DPPP-like context: session, batch, teacher, index.
func ctx(session string, batch, teacher, index int) []byte {
	return fmt.Appendf(nil, "dppp/vote|%s|%d|%d|%d", session, batch, teacher, index)
}

// TestPlaintextProofCompleteness: honest proofs verify, singly and in a
// batch, for every way of encrypting (reference, Encryptor, the threshold
// key's embedded PublicKey), for edge plaintexts and contexts, and the
// ciphertext decrypts to m (the proof does not disturb the encryption).
func TestPlaintextProofCompleteness(t *testing.T) {
	fx := newPPFixture(t, 1024)
	rng := testRand(t, 1)
	enc, err := NewEncryptor(fx.pk, rng)
	if err != nil {
		t.Fatal(err)
	}
	nm1 := new(big.Int).Sub(fx.pk.n, bigOne)
	plains := []*big.Int{big.NewInt(0), big.NewInt(1), big.NewInt(123456789), nm1}
	contexts := [][]byte{nil, {}, ctx("s", 1, 2, 0), []byte(strings.Repeat("x", 5000))}
	makers := []struct {
		name string
		f    func(m *big.Int, c []byte) (*Ciphertext, *PlaintextProof, error)
	}{
		{"PublicKey", func(m *big.Int, c []byte) (*Ciphertext, *PlaintextProof, error) {
			return fx.pk.EncryptWithProof(rng, m, c)
		}},
		{"ThresholdPublicKey", func(m *big.Int, c []byte) (*Ciphertext, *PlaintextProof, error) {
			return fx.tpk.EncryptWithProof(rng, m, c)
		}},
		{"Encryptor", func(m *big.Int, c []byte) (*Ciphertext, *PlaintextProof, error) {
			return enc.EncryptWithProof(m, c)
		}},
	}
	var claims []PlaintextClaim
	for _, mk := range makers {
		for _, m := range plains {
			for ci, c := range contexts {
				ct, proof, err := mk.f(m, c)
				if err != nil {
					t.Fatalf("%s: %v", mk.name, err)
				}
				if got, _ := fx.sk.Decrypt(ct); got.Cmp(m) != 0 {
					t.Fatalf("%s: decrypts to %v, want %v", mk.name, got, m)
				}
				if err := fx.tpk.VerifyPlaintextProof(ct, proof, c); err != nil {
					t.Fatalf("%s m=%v context %d: %v", mk.name, m, ci, err)
				}
				if err := fx.pk.VerifyPlaintextProof(ct, proof, c); err != nil {
					t.Fatalf("%s m=%v context %d (PublicKey): %v", mk.name, m, ci, err)
				}
				claims = append(claims, PlaintextClaim{ct, proof, c})
			}
		}
	}
	for k, err := range fx.tpk.VerifyPlaintextProofs(claims) {
		if err != nil {
			t.Fatalf("batch rejects honest claim %d: %v", k, err)
		}
	}
}

// TestEncryptorProofWitness: the witness the Encryptor proves with,
// r = h^alpha mod n, opens its ciphertext: (1+n)^m r^n = (1+n)^m h_s^alpha.
func TestEncryptorProofWitness(t *testing.T) {
	fx := newPPFixture(t, 512)
	enc, err := NewEncryptor(fx.pk, testRand(t, 2))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		alpha, rn, err := enc.randomizerExp()
		if err != nil {
			t.Fatal(err)
		}
		m := big.NewInt(int64(1000 + i))
		r := new(big.Int).Exp(enc.h, alpha, fx.pk.n)
		if fx.pk.combine(m, rn).c.Cmp(fx.pk.encryptWithNonce(m, r).c) != 0 {
			t.Fatal("h^alpha mod n is not an opening of the Encryptor's ciphertext")
		}
	}
}

// vote is one honest teacher's ciphertext with its witness and proof.
type vote struct {
	m, r    *big.Int
	ct      *Ciphertext
	proof   *PlaintextProof
	context []byte
}

func honestVote(t testing.TB, pk *PublicKey, seed uint64, m int64, context []byte) vote {
	t.Helper()
	rng := testRand(t, seed)
	r, err := pk.randomUnit(rng)
	if err != nil {
		t.Fatal(err)
	}
	mm := big.NewInt(m)
	ct := pk.encryptWithNonce(mm, r)
	proof, err := pk.provePlaintext(rng, ct.c, mm, r, context)
	if err != nil {
		t.Fatal(err)
	}
	return vote{m: mm, r: r, ct: ct, proof: proof, context: context}
}

// TestAttackRogueVoteProof is issue 22's rogue vote at the level of the
// proof. Five honest teachers vote in batch 2; colluding teacher 5, shown
// their ciphertexts, builds (1) c' = E(0) prod_{h != victim} v_h^-1, with
// which the decrypted sum is the victim's vote alone, and (2)
// c” = v_old^a E(x) from teacher 1's vote of batch 1, which amplifies that
// vote a times. Neither gets an accepting proof: the honest prover run with
// any witness the colluder has (its own (0, r), (x, r_x), guesses of the
// plaintext) fails, every honest proof replayed onto them fails (under the
// colluder's context and under the owner's), and the old vote's proof
// replayed into batch 2 fails. The control: with the true witness (which
// the colluder would have only if it knew every other plaintext) the same
// prover succeeds, so the failures come from the missing knowledge.
func TestAttackRogueVoteProof(t *testing.T) {
	fx := newPPFixture(t, 1024)
	pk := fx.pk
	const victim, colluder, batch = 0, 5, 2
	votes := make([]vote, 5)
	for h := range votes {
		votes[h] = honestVote(t, pk, uint64(100+h), int64(10+h), ctx("s", batch, h, 0))
	}
	colluderCtx := ctx("s", batch, colluder, 0)
	rng := testRand(t, 9)

	// (1) c' = E(0) prod_{h != victim} v_h^-1, with the colluder's r0.
	r0, _ := pk.randomUnit(rng)
	rogue := pk.encryptWithNonce(big.NewInt(0), r0).c
	trueM := new(big.Int) // -sum_{h != victim} m_h mod n
	trueR := new(big.Int).Set(r0)
	for h, v := range votes {
		if h == victim {
			continue
		}
		rogue.Mul(rogue, new(big.Int).ModInverse(v.ct.c, pk.nSquared))
		rogue.Mod(rogue, pk.nSquared)
		trueM.Sub(trueM, v.m)
		trueR.Mul(trueR, new(big.Int).ModInverse(v.r, pk.n))
		trueR.Mod(trueR, pk.n)
	}
	trueM.Mod(trueM, pk.n)
	c1 := &Ciphertext{c: rogue, pk: pk}
	// The attack works without proofs: the sum decrypts to the victim's vote.
	all := []*Ciphertext{c1}
	for _, v := range votes {
		all = append(all, v.ct)
	}
	sum, _ := pk.Sum(all...)
	if got, _ := fx.sk.Decrypt(sum); got.Cmp(votes[victim].m) != 0 {
		t.Fatalf("rogue sum decrypts to %v, want the victim's vote %v", got, votes[victim].m)
	}

	// (2) c'' = v_old^a E(x): teacher 1's vote of batch 1, amplified.
	old := honestVote(t, pk, 200, 7, ctx("s", batch-1, 1, 0))
	const a = 1000
	x := big.NewInt(3)
	rx, _ := pk.randomUnit(rng)
	amp := new(big.Int).Exp(old.ct.c, big.NewInt(a), pk.nSquared)
	amp.Mul(amp, pk.encryptWithNonce(x, rx).c)
	amp.Mod(amp, pk.nSquared)
	c2 := &Ciphertext{c: amp, pk: pk}
	if got, _ := fx.sk.Decrypt(c2); got.Int64() != a*7+3 {
		t.Fatalf("amplified vote decrypts to %v", got)
	}

	type attempt struct {
		name  string
		ct    *Ciphertext
		proof *PlaintextProof
		ctx   []byte
	}
	prove := func(c *Ciphertext, m, r *big.Int, context []byte) *PlaintextProof {
		p, err := pk.provePlaintext(rng, c.c, m, r, context)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	attempts := []attempt{
		{"cancel: colluder's own witness (0, r0)", c1, prove(c1, big.NewInt(0), r0, colluderCtx), colluderCtx},
		{"cancel: guessed plaintext 1", c1, prove(c1, big.NewInt(1), trueR, colluderCtx), colluderCtx},
		{"cancel: guessed plaintext -sum, wrong r", c1, prove(c1, trueM, r0, colluderCtx), colluderCtx},
		{"cancel: true r, plaintext off by one", c1, prove(c1, new(big.Int).Add(trueM, bigOne), trueR, colluderCtx), colluderCtx},
		{"amplify: colluder's witness (x, r_x)", c2, prove(c2, x, rx, colluderCtx), colluderCtx},
		{"amplify: guessed old vote 6", c2, prove(c2, big.NewInt(a*6+3), new(big.Int).Mul(new(big.Int).Exp(old.r, big.NewInt(a), pk.n), rx), colluderCtx), colluderCtx},
		{"amplify: old proof, old context", c2, old.proof, old.context},
		{"amplify: old proof, colluder's context", c2, old.proof, colluderCtx},
		{"copy old vote into batch 2 under the colluder", old.ct, old.proof, colluderCtx},
		{"copy old vote into batch 2 under its owner", old.ct, old.proof, ctx("s", batch, 1, 0)},
		{"copy victim's vote and proof under the colluder", votes[victim].ct, votes[victim].proof, colluderCtx},
	}
	for h, v := range votes {
		attempts = append(attempts,
			attempt{fmt.Sprintf("cancel: teacher %d's proof, colluder's context", h), c1, v.proof, colluderCtx},
			attempt{fmt.Sprintf("cancel: teacher %d's proof, its context", h), c1, v.proof, v.context})
	}
	var claims []PlaintextClaim
	for _, v := range votes {
		claims = append(claims, PlaintextClaim{v.ct, v.proof, v.context})
	}
	for _, at := range attempts {
		if err := pk.VerifyPlaintextProof(at.ct, at.proof, at.ctx); err == nil {
			t.Errorf("%s: accepted", at.name)
		}
		claims = append(claims, PlaintextClaim{at.ct, at.proof, at.ctx})
	}
	for k, err := range pk.verifyPlaintextProofs(testRand(t, 10), claims) {
		if (err == nil) != (k < len(votes)) {
			t.Errorf("batch verdict on claim %d: %v", k, err)
		}
	}
	// Control: with the true witness the same prover succeeds.
	for _, c := range []struct {
		ct   *Ciphertext
		m, r *big.Int
	}{
		{c1, trueM, trueR},
		{c2, big.NewInt(a*7 + 3), new(big.Int).Mod(new(big.Int).Mul(new(big.Int).Exp(old.r, big.NewInt(a), pk.n), rx), pk.n)},
	} {
		if err := pk.VerifyPlaintextProof(c.ct, prove(c.ct, c.m, c.r, colluderCtx), colluderCtx); err != nil {
			t.Fatalf("control: the prover with the true witness fails: %v", err)
		}
	}
}

// TestPlaintextProofBinding: a proof for (c, context) verifies for nothing
// else: not for other ciphertexts of the same plaintext (a fresh
// encryption, c (-1) which differs by an order-2 factor, c times an
// encryption of 0), not for c (1+n), not under a context differing in
// session, batch, teacher or index, nor one that only differs in how the
// fields are split, and not under another key.
func TestPlaintextProofBinding(t *testing.T) {
	fx := newPPFixture(t, 1024)
	pk := fx.pk
	context := ctx("s", 3, 4, 0)
	v := honestVote(t, pk, 1, 42, context)
	if err := pk.VerifyPlaintextProof(v.ct, v.proof, context); err != nil {
		t.Fatal(err)
	}
	fresh := honestVote(t, pk, 2, 42, context)
	neg := new(big.Int).Sub(pk.nSquared, v.ct.c)
	zero, _ := pk.Encrypt(testRand(t, 3), big.NewInt(0))
	times0, _ := pk.Add(v.ct, zero)
	shift, _ := pk.AddPlain(v.ct, bigOne)
	cts := map[string]*Ciphertext{
		"fresh encryption of m": fresh.ct,
		"-c":                    {c: neg, pk: pk},
		"c E(0)":                times0,
		"c (1+n)":               shift,
	}
	for name, c := range cts {
		if err := pk.VerifyPlaintextProof(c, v.proof, context); err == nil {
			t.Errorf("proof accepted for %s", name)
		}
	}
	for _, c := range [][]byte{
		ctx("t", 3, 4, 0), ctx("s", 2, 4, 0), ctx("s", 4, 4, 0), ctx("s", 3, 5, 0), ctx("s", 3, 4, 1),
		[]byte("dppp/vote|s|3|4|0 "), []byte("dppp/vote|s|3|4|"), nil,
	} {
		if err := pk.VerifyPlaintextProof(v.ct, v.proof, c); err == nil {
			t.Errorf("proof accepted under context %q", c)
		}
	}
	other, _ := mustDeal(t, 512, 3, 2)
	if err := other.VerifyPlaintextProof(v.ct, v.proof, context); err == nil {
		t.Error("proof accepted under another key")
	}
}

// TestPlaintextProofTampered: changing any part of a valid proof makes it
// fail, singly and in a batch of honest proofs, except the documented
// order-2 variants of z2 (z2 -> n - z2 and z2 times a non-trivial square
// root of 1 modulo n), which both checks accept: they are the same
// knowledge (the extractor ignores z2; TestPlaintextProofExtractor).
func TestPlaintextProofTampered(t *testing.T) {
	fx := newPPFixture(t, 1024)
	pk := fx.pk
	context := ctx("s", 1, 1, 0)
	v := honestVote(t, pk, 1, 5, context)
	p := v.proof
	n, nsq := pk.n, pk.nSquared
	mod := func(x, m *big.Int) *big.Int { return x.Mod(x, m) }
	onePlusN := new(big.Int).Add(n, bigOne)
	// tau = 1 mod p, -1 mod q: a square root of 1 modulo n other than +-1.
	P, Q := fx.sk.p, fx.sk.q
	tau := new(big.Int).Mul(P, new(big.Int).ModInverse(P, Q)) // 1 mod q... build by CRT
	tau.Mul(tau, big.NewInt(-2))
	tau.Add(tau, bigOne)
	tau = mod(tau, n) // 1 - 2 p (p^-1 mod q): 1 mod p, -1 mod q
	if new(big.Int).Exp(tau, big.NewInt(2), n).Cmp(bigOne) != 0 || tau.Cmp(bigOne) == 0 {
		t.Fatal("tau is not a non-trivial square root of 1")
	}
	cases := []struct {
		name   string
		a      *big.Int
		z1, z2 *big.Int
		accept bool
	}{
		{"a (1+n)", mod(new(big.Int).Mul(p.a, onePlusN), nsq), p.z1, p.z2, false},
		{"a x 2", mod(new(big.Int).Lsh(p.a, 1), nsq), p.z1, p.z2, false},
		{"-a", new(big.Int).Sub(nsq, p.a), p.z1, p.z2, false},
		{"z1 + 1", p.a, mod(new(big.Int).Add(p.z1, bigOne), n), p.z2, false},
		{"z1 - 1", p.a, mod(new(big.Int).Sub(p.z1, bigOne), n), p.z2, false},
		{"z1 + n/2", p.a, mod(new(big.Int).Add(p.z1, pk.halfN), n), p.z2, false},
		{"z2 x 2", p.a, p.z1, mod(new(big.Int).Lsh(p.z2, 1), n), false},
		{"z2 + 1", p.a, p.z1, mod(new(big.Int).Add(p.z2, bigOne), n), false},
		{"z2 + p", p.a, p.z1, mod(new(big.Int).Add(p.z2, P), n), false},
		{"n - z2 (order 2)", p.a, p.z1, new(big.Int).Sub(n, p.z2), true},
		{"z2 tau (order 2)", p.a, p.z1, mod(new(big.Int).Mul(p.z2, tau), n), true},
		{"z2 (-tau) (order 2)", p.a, p.z1, mod(new(big.Int).Mul(p.z2, new(big.Int).Sub(n, tau)), n), true},
	}
	var claims []PlaintextClaim
	for k := range 6 {
		h := honestVote(t, pk, uint64(10+k), int64(k), ctx("s", 1, 10+k, 0))
		claims = append(claims, PlaintextClaim{h.ct, h.proof, h.context})
	}
	for _, c := range cases {
		tp := &PlaintextProof{pk: pk, a: c.a, z1: c.z1, z2: c.z2}
		err := pk.VerifyPlaintextProof(v.ct, tp, context)
		if (err == nil) != c.accept {
			t.Errorf("%s: single check: %v, want accept=%v", c.name, err, c.accept)
		}
		batch := append(append([]PlaintextClaim(nil), claims...), PlaintextClaim{v.ct, tp, context})
		for k, err := range pk.verifyPlaintextProofs(testRand(t, 5), batch) {
			want := k < len(claims) || c.accept
			if (err == nil) != want {
				t.Errorf("%s: batch verdict on claim %d: %v, want accept=%v", c.name, k, err, want)
			}
		}
	}
}

// TestPlaintextProofShape: proofs out of range are refused before any
// exponentiation, with an error naming the field.
func TestPlaintextProofShape(t *testing.T) {
	fx := newPPFixture(t, 512)
	pk := fx.pk
	v := honestVote(t, pk, 1, 5, nil)
	p := v.proof
	P := fx.sk.p
	other, _ := mustDeal(t, 1024, 3, 2)
	cases := []struct {
		name, want string
		proof      *PlaintextProof
	}{
		{"nil", "missing", nil},
		{"zero value", "missing", &PlaintextProof{}},
		{"other key", "different public key", &PlaintextProof{pk: other.Public(), a: p.a, z1: p.z1, z2: p.z2}},
		{"a = 0", "commitment a", &PlaintextProof{pk: pk, a: big.NewInt(0), z1: p.z1, z2: p.z2}},
		{"a = n^2", "commitment a", &PlaintextProof{pk: pk, a: pk.NSquared(), z1: p.z1, z2: p.z2}},
		{"a = p", "commitment a", &PlaintextProof{pk: pk, a: P, z1: p.z1, z2: p.z2}},
		{"z1 = n", "z1", &PlaintextProof{pk: pk, a: p.a, z1: pk.N(), z2: p.z2}},
		{"z1 < 0", "z1", &PlaintextProof{pk: pk, a: p.a, z1: big.NewInt(-1), z2: p.z2}},
		{"z2 = 0", "z2", &PlaintextProof{pk: pk, a: p.a, z1: p.z1, z2: big.NewInt(0)}},
		{"z2 = n", "z2", &PlaintextProof{pk: pk, a: p.a, z1: p.z1, z2: pk.N()}},
		{"z2 = p", "z2", &PlaintextProof{pk: pk, a: p.a, z1: p.z1, z2: P}},
	}
	for _, c := range cases {
		err := pk.VerifyPlaintextProof(v.ct, c.proof, nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about %q", c.name, err, c.want)
		}
		errs := pk.VerifyPlaintextProofs([]PlaintextClaim{{v.ct, c.proof, nil}})
		if errs[0] == nil || errs[0].Error() != err.Error() {
			t.Errorf("%s: batch error %v differs from %v", c.name, errs[0], err)
		}
	}
	if err := pk.VerifyPlaintextProof(nil, p, nil); err == nil {
		t.Error("nil ciphertext accepted")
	}
	if err := pk.VerifyPlaintextProof(&Ciphertext{c: P, pk: pk}, p, nil); err == nil {
		t.Error("ciphertext outside Z*_{n^2} accepted")
	}
}

// extract is the special-soundness extractor of PlaintextProof: from two
// accepting transcripts (a, e, z1, z2) and (a, e', z1', z2') of c with
// e != e' it returns m = (z1 - z1') (e - e')^-1 mod n and the r with
// c = (1+n)^m r^n: with d = e - e', u = d^-1 mod n and u d = 1 + k n,
// r = ((z2/z2')^u c^-k) mod n.
func extract(pk *PublicKey, c, e1, z11, z21, e2, z12, z22 *big.Int) (m, r *big.Int) {
	n, nsq := pk.n, pk.nSquared
	d := new(big.Int).Sub(e1, e2)
	u := new(big.Int).ModInverse(new(big.Int).Mod(d, n), n)
	m = new(big.Int).Sub(z11, z12)
	m.Mul(m, u)
	m.Mod(m, n)
	k := new(big.Int).Mul(u, d)
	k.Sub(k, bigOne)
	k.Quo(k, n) // exact
	q := new(big.Int).ModInverse(z22, n)
	q.Mul(q, z21)
	q.Exp(q, u, nsq)
	ck := new(big.Int).Exp(c, new(big.Int).Abs(k), nsq)
	if k.Sign() > 0 {
		ck.ModInverse(ck, nsq)
	}
	q.Mul(q, ck)
	return m, q.Mod(q, n)
}

// TestPlaintextProofExtractor: two accepting transcripts with the same
// commitment and different challenges (the prover's nonce fixed, as the
// forking lemma's rewinding does) give back exactly the plaintext and the
// randomness, for ciphertexts of PublicKey.Encrypt and of the Encryptor;
// replacing z2 of the second transcript by an order-2 variant that the
// squared check (and the batch check) accepts gives the same m.
func TestPlaintextProofExtractor(t *testing.T) {
	fx := newPPFixture(t, 1024)
	pk := fx.pk
	rng := testRand(t, 7)
	enc, err := NewEncryptor(pk, rng)
	if err != nil {
		t.Fatal(err)
	}
	for i, m := range []*big.Int{big.NewInt(0), big.NewInt(31337), new(big.Int).Sub(pk.n, big.NewInt(2))} {
		var ct *Ciphertext
		var r *big.Int
		if i%2 == 0 {
			r, _ = pk.randomUnit(rng)
			ct = pk.encryptWithNonce(m, r)
		} else {
			alpha, rn, err := enc.randomizerExp()
			if err != nil {
				t.Fatal(err)
			}
			ct = pk.combine(m, rn)
			r = new(big.Int).Exp(enc.h, alpha, pk.n)
		}
		s, rho, err := pk.plaintextNonce(rng, ct.c, m, r, nil)
		if err != nil {
			t.Fatal(err)
		}
		a := pk.plaintextCommit(s, rho)
		e1, _ := drawWeights(rng, 1)
		e2, _ := drawWeights(rng, 1)
		z11, z21 := pk.plaintextRespond(m, r, s, rho, e1[0])
		z12, z22 := pk.plaintextRespond(m, r, s, rho, e2[0])
		z22neg := new(big.Int).Sub(pk.n, z22)
		for _, tr := range []struct{ e, z1, z2 *big.Int }{{e1[0], z11, z21}, {e2[0], z12, z22}, {e2[0], z12, z22neg}} {
			if err := pk.verifyPlaintext(ct.c, &PlaintextProof{pk: pk, a: a, z1: tr.z1, z2: tr.z2}, tr.e); err != nil {
				t.Fatalf("transcript does not verify: %v", err)
			}
		}
		gm, gr := extract(pk, ct.c, e1[0], z11, z21, e2[0], z12, z22)
		if gm.Cmp(m) != 0 || gr.Cmp(r) != 0 {
			t.Fatalf("extracted (m, r) differs from the witness (m %v want %v)", gm, m)
		}
		gm2, gr2 := extract(pk, ct.c, e1[0], z11, z21, e2[0], z12, z22neg)
		if gm2.Cmp(m) != 0 {
			t.Fatalf("order-2 variant changes the extracted plaintext: %v, want %v", gm2, m)
		}
		// The r it gives is r or -r (the order-2 factor raised to u): it
		// opens c or -c, which differ by an n-th power (an encryption of 0).
		if gr2.Cmp(r) != 0 && gr2.Cmp(new(big.Int).Sub(pk.n, r)) != 0 {
			t.Fatal("order-2 variant: extracted r' is neither r nor -r")
		}
		if got, _ := fx.sk.Decrypt(ct); got.Cmp(gm) != 0 {
			t.Fatal("extracted plaintext differs from the decryption")
		}
	}
}

// TestVerifyPlaintextProofsNamesForgers: among 250 honest claims (DPPP's
// N), the batch verifier names exactly the forged ones, wherever they are,
// including two forgers whose errors X_1 = (1+n) and X_2 = (1+n)^-1 would
// cancel under a common weight, and its errors are those of the single
// check.
func TestVerifyPlaintextProofsNamesForgers(t *testing.T) {
	const N = 250
	fx := newPPFixture(t, 1024)
	pk := fx.pk
	enc, err := NewEncryptor(pk, testRand(t, 3))
	if err != nil {
		t.Fatal(err)
	}
	honest := make([]PlaintextClaim, N)
	for k := range honest {
		context := ctx("s", 1, k, 0)
		ct, p, err := enc.EncryptWithProof(big.NewInt(int64(k)), context)
		if err != nil {
			t.Fatal(err)
		}
		honest[k] = PlaintextClaim{ct, p, context}
	}
	bump := func(p *PlaintextProof, d int64) *PlaintextProof {
		z1 := new(big.Int).Add(p.z1, big.NewInt(d))
		return &PlaintextProof{pk: p.pk, a: p.a, z1: z1.Mod(z1, pk.n), z2: p.z2}
	}
	for _, c := range []struct {
		name   string
		forged map[int]func(PlaintextClaim) PlaintextClaim
	}{
		{"none", nil},
		{"first", map[int]func(PlaintextClaim) PlaintextClaim{0: func(c PlaintextClaim) PlaintextClaim { c.Proof = bump(c.Proof, 1); return c }}},
		{"middle", map[int]func(PlaintextClaim) PlaintextClaim{137: func(c PlaintextClaim) PlaintextClaim { c.Proof = bump(c.Proof, 1); return c }}},
		{"last, wrong context", map[int]func(PlaintextClaim) PlaintextClaim{N - 1: func(c PlaintextClaim) PlaintextClaim { c.Context = ctx("s", 2, N-1, 0); return c }}},
		{"cancelling pair", map[int]func(PlaintextClaim) PlaintextClaim{
			40: func(c PlaintextClaim) PlaintextClaim { c.Proof = bump(c.Proof, 1); return c },
			41: func(c PlaintextClaim) PlaintextClaim { c.Proof = bump(c.Proof, -1); return c },
		}},
		{"swapped proofs", map[int]func(PlaintextClaim) PlaintextClaim{
			7: func(c PlaintextClaim) PlaintextClaim { c.Proof = honest[8].Proof; return c },
			8: func(c PlaintextClaim) PlaintextClaim { c.Proof = honest[7].Proof; return c },
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			claims := append([]PlaintextClaim(nil), honest...)
			for k, f := range c.forged {
				claims[k] = f(claims[k])
			}
			errs := pk.verifyPlaintextProofs(testRand(t, 11), claims)
			for k, err := range errs {
				_, bad := c.forged[k]
				if (err != nil) != bad {
					t.Errorf("claim %d: %v, forged=%v", k, err, bad)
				}
				if bad {
					single := pk.VerifyPlaintextProof(claims[k].Ciphertext, claims[k].Proof, claims[k].Context)
					if single == nil || err == nil || single.Error() != err.Error() {
						t.Errorf("claim %d: batch error %v, single %v", k, err, single)
					}
				}
			}
		})
	}
}

// TestPlaintextChallengeLength: challenges use all PlaintextChallengeBits
// bits (the largest of 64 has at least 120 bits, failing by chance with
// probability 2^-512) and no more.
func TestPlaintextChallengeLength(t *testing.T) {
	fx := newPPFixture(t, 512)
	pk := fx.pk
	top := 0
	for k := range 64 {
		v := honestVote(t, pk, uint64(k), int64(k), nil)
		e := pk.plaintextChallenge(nil, v.ct.c, v.proof.a)
		if e.BitLen() > PlaintextChallengeBits {
			t.Fatalf("challenge of %d bits", e.BitLen())
		}
		top = max(top, e.BitLen())
	}
	if PlaintextChallengeBits < 128 || top < PlaintextChallengeBits-8 {
		t.Fatalf("challenges have at most %d bits (PlaintextChallengeBits %d), want 128", top, PlaintextChallengeBits)
	}
}

// TestPlaintextProofGuessingAttack: a forger that knows nothing about the
// plaintext guesses the challenge, computes a = (1+n)^z1 z2^n c^-e for
// random z1, z2 and wins if the hash hits its guess. 4096 attempts at
// guesses in [0, 16) succeed with probability 4096 2^-128 at the
// implemented length, and almost surely for a challenge of 8 bits or less;
// the first guess is the challenge computed with a = 1, right if the hash
// ignored the commitment.
func TestPlaintextProofGuessingAttack(t *testing.T) {
	fx := newPPFixture(t, 256)
	pk := fx.pk
	rng := testRand(t, 13)
	target, _ := pk.Encrypt(rng, big.NewInt(99))
	context := []byte("victim")
	for i := range 4096 {
		guess := big.NewInt(int64(i % 16))
		if i == 0 {
			// A challenge that ignored a would be this one.
			guess = pk.plaintextChallenge(context, target.c, bigOne)
		}
		z1, _ := rand.Int(rng, pk.n)
		z2, _ := pk.randomUnit(rng)
		ce := new(big.Int).Exp(target.c, guess, pk.nSquared)
		ce.ModInverse(ce, pk.nSquared)
		a := new(big.Int).Exp(z2, pk.n, pk.nSquared)
		a = pk.combine(z1, a).c
		a.Mul(a, ce)
		a.Mod(a, pk.nSquared)
		if pk.plaintextChallenge(context, target.c, a).Cmp(guess) != 0 {
			continue
		}
		if err := pk.VerifyPlaintextProof(target, &PlaintextProof{pk: pk, a: a, z1: z1, z2: z2}, context); err == nil {
			t.Fatalf("forged a proof without the plaintext after %d attempts", i+1)
		}
	}
}

// TestPlaintextProofEncoding: a proof round-trips through its fixed-length
// encoding (header | key ID | a (W) | z1 (V) | z2 (V)) and still verifies;
// the decoder refuses other kinds, other keys, wrong lengths and every
// out-of-range field, naming the problem.
func TestPlaintextProofEncoding(t *testing.T) {
	fx := newEncodingFixture(t)
	pk := fx.tpk.Public()
	b := mustMarshal(t, fx.pp)
	if want := headerLen + 32 + 512 + 256 + 256; len(b) != want {
		t.Fatalf("2048-bit plaintext proof encodes to %d bytes, want %d", len(b), want)
	}
	p, err := pk.ParsePlaintextProof(b)
	if err != nil {
		t.Fatal(err)
	}
	if err := fx.tpk.VerifyPlaintextProof(fx.ppCt, p, ppContext); err != nil {
		t.Fatalf("decoded proof does not verify: %v", err)
	}
	if !bytes.Equal(mustMarshal(t, p), b) {
		t.Fatal("re-encoding differs")
	}
	off := headerLen + 32
	W, V := pk.elemLen(), pk.nLen()
	set := func(at, width int, x *big.Int) []byte {
		out := append([]byte(nil), b...)
		x.FillBytes(out[at : at+width])
		return out
	}
	P, _ := testPrimePair(2048)
	other, _ := mustDeal(t, 1024, 3, 2)
	otherB, _ := (&PlaintextProof{pk: other.Public(), a: big.NewInt(1), z1: big.NewInt(0), z2: big.NewInt(1)}).MarshalBinary()
	cases := []struct {
		name, want string
		b          []byte
	}{
		{"empty", "shorter than", nil},
		{"ciphertext kind", "want a plaintext proof", mustMarshal(t, fx.ppCt)},
		{"truncated", "truncated", b[:len(b)-1]},
		{"trailing", "trailing", append(append([]byte(nil), b...), 0)},
		{"other key", "different public key", mutate(b, func(x []byte) []byte { x[headerLen] ^= 1; return x })},
		{"other key size", "truncated", otherB},
		{"a = 0", "commitment a", set(off, W, big.NewInt(0))},
		{"a = n^2 - 1 + 1", "commitment a", set(off, W, new(big.Int).Sub(new(big.Int).Lsh(bigOne, uint(8*W)), bigOne))},
		{"a = p", "commitment a", set(off, W, P)},
		{"z1 = n", "z1", set(off+W, V, pk.N())},
		{"z2 = 0", "z2", set(off+W+V, V, big.NewInt(0))},
		{"z2 = n", "z2", set(off+W+V, V, pk.N())},
		{"z2 = p", "z2", set(off+W+V, V, P)},
	}
	for _, c := range cases {
		_, err := pk.ParsePlaintextProof(c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error about %q", c.name, err, c.want)
		}
	}
	if _, err := (&PlaintextProof{}).MarshalBinary(); err == nil {
		t.Error("incomplete proof encoded")
	}
}

// zeroReader is a broken random source that returns only zeros.
type zeroReader struct{}

func (zeroReader) Read(b []byte) (int, error) { clear(b); return len(b), nil }

// TestPlaintextProofRepeatingRandomness: with a random source that repeats
// (all zeros), proofs of the same ciphertext and witness for two contexts
// still use different nonces (the nonce is hedged with the statement), so
// the two transcripts do not share a commitment and the extractor cannot be
// run on them; with a nonce from the source alone they would reveal m.
func TestPlaintextProofRepeatingRandomness(t *testing.T) {
	fx := newPPFixture(t, 512)
	pk := fx.pk
	m := big.NewInt(4242)
	r, _ := pk.randomUnit(testRand(t, 1))
	ct := pk.encryptWithNonce(m, r)
	p1, err := pk.provePlaintext(zeroReader{}, ct.c, m, r, ctx("s", 1, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	p2, err := pk.provePlaintext(zeroReader{}, ct.c, m, r, ctx("s", 2, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if p1.a.Cmp(p2.a) == 0 {
		e1 := pk.plaintextChallenge(ctx("s", 1, 1, 0), ct.c, p1.a)
		e2 := pk.plaintextChallenge(ctx("s", 2, 1, 0), ct.c, p2.a)
		got, _ := extract(pk, ct.c, e1, p1.z1, p1.z2, e2, p2.z1, p2.z2)
		t.Fatalf("nonce repeated across contexts: the two proofs reveal m = %v", got)
	}
	// A different witness for the same ciphertext cannot exist, but a
	// different ciphertext of the same m must also get a fresh nonce.
	ct2 := pk.encryptWithNonce(m, new(big.Int).Add(r, bigOne))
	p3, err := pk.provePlaintext(zeroReader{}, ct2.c, m, new(big.Int).Add(r, bigOne), ctx("s", 1, 1, 0))
	if err != nil {
		t.Fatal(err)
	}
	if p3.a.Cmp(p1.a) == 0 {
		t.Fatal("nonce repeated across ciphertexts")
	}
}

// TestPlaintextProofHidesWitness: the responses are masked: z1 - e m mod n
// (= s) and z2 r^-e mod n (= rho) are neither 0/1 nor repeated across 32
// proofs of the same plaintext, and the top byte of z1 is spread over its
// range (a chi-square test of the 16 high-nibble values of z1/n with 15
// degrees of freedom over 320 proofs, false alarm 1e-4 at 44.3).
func TestPlaintextProofHidesWitness(t *testing.T) {
	fx := newPPFixture(t, 512)
	pk := fx.pk
	rng := testRand(t, 3)
	m := big.NewInt(7)
	seenS := map[string]bool{}
	seenRho := map[string]bool{}
	var counts [16]int
	const proofs = 320
	for k := range proofs {
		r, _ := pk.randomUnit(rng)
		ct := pk.encryptWithNonce(m, r)
		context := ctx("s", k, 0, 0)
		p, err := pk.provePlaintext(rng, ct.c, m, r, context)
		if err != nil {
			t.Fatal(err)
		}
		e := pk.plaintextChallenge(context, ct.c, p.a)
		s := new(big.Int).Sub(p.z1, new(big.Int).Mul(e, m))
		s.Mod(s, pk.n)
		rho := new(big.Int).Exp(r, e, pk.n)
		rho.ModInverse(rho, pk.n)
		rho.Mul(rho, p.z2)
		rho.Mod(rho, pk.n)
		if k < 32 {
			if s.Sign() == 0 || rho.Cmp(bigOne) == 0 || seenS[s.String()] || seenRho[rho.String()] {
				t.Fatalf("proof %d: mask s or rho is trivial or repeated", k)
			}
			seenS[s.String()] = true
			seenRho[rho.String()] = true
		}
		nib := new(big.Int).Lsh(p.z1, 4)
		nib.Quo(nib, pk.n)
		counts[nib.Int64()]++
	}
	chi := 0.0
	for _, c := range counts {
		d := float64(c) - proofs/16.0
		chi += d * d / (proofs / 16.0)
	}
	if chi > 44.3 {
		t.Fatalf("z1 is not spread over [0, n): chi-square %.1f over 15 degrees of freedom (counts %v)", chi, counts)
	}
}

// TestPlaintextBatchEquation: the batch equation itself holds on honest
// claims (if it did not, VerifyPlaintextProofs would still give correct
// verdicts through bisection, at the cost of one single check per claim,
// so only this test sees it) and fails when any one claim is forged in a
// (a, c, z1 or z2) or carries another claim's challenge.
func TestPlaintextBatchEquation(t *testing.T) {
	fx := newPPFixture(t, 512)
	pk := fx.pk
	const k = 40
	claims := make([]PlaintextClaim, k)
	es := make([]*big.Int, k)
	idx := make([]int, k)
	for j := range claims {
		v := honestVote(t, pk, uint64(j), int64(j), ctx("s", 1, j, 0))
		claims[j] = PlaintextClaim{v.ct, v.proof, v.context}
		es[j] = pk.plaintextChallenge(v.context, v.ct.c, v.proof.a)
		idx[j] = j
	}
	w, _ := drawWeights(testRand(t, 1), k)
	if !pk.plaintextBatchHolds(claims, es, idx, w) {
		t.Fatal("batch equation fails on honest claims")
	}
	onePlusN := new(big.Int).Add(pk.n, bigOne)
	mulMod := func(x, y, m *big.Int) *big.Int { z := new(big.Int).Mul(x, y); return z.Mod(z, m) }
	for name, f := range map[string]func(c PlaintextClaim) PlaintextClaim{
		"a": func(c PlaintextClaim) PlaintextClaim {
			p := *c.Proof
			p.a = mulMod(p.a, onePlusN, pk.nSquared)
			c.Proof = &p
			return c
		},
		"c": func(c PlaintextClaim) PlaintextClaim {
			c.Ciphertext = &Ciphertext{c: mulMod(c.Ciphertext.c, onePlusN, pk.nSquared), pk: pk}
			return c
		},
		"z1": func(c PlaintextClaim) PlaintextClaim {
			p := *c.Proof
			p.z1 = new(big.Int).Mod(new(big.Int).Add(p.z1, bigOne), pk.n)
			c.Proof = &p
			return c
		},
		"z2": func(c PlaintextClaim) PlaintextClaim {
			p := *c.Proof
			p.z2 = mulMod(p.z2, big.NewInt(2), pk.n)
			c.Proof = &p
			return c
		},
	} {
		forged := append([]PlaintextClaim(nil), claims...)
		forged[17] = f(forged[17])
		if pk.plaintextBatchHolds(forged, es, idx, w) {
			t.Errorf("batch equation holds with %s forged", name)
		}
	}
	swapped := append([]*big.Int(nil), es...)
	swapped[3], swapped[4] = es[4], es[3]
	if pk.plaintextBatchHolds(claims, swapped, idx, w) {
		t.Error("batch equation holds with two challenges swapped")
	}
}

// TestAttackPlaintextBatchOfForgers: eight colluders submit rogue
// ciphertexts (functions of an honest vote) with "proofs" that ignore the
// ciphertext (a = (1+n)^z1 z2^n, or a c^e dropped from the equation for a
// random c), or that are valid for the statement with e = 0, and the batch
// verifier sees only their claims, so no honest claim forces bisection
// down to single checks: every one is named.
func TestAttackPlaintextBatchOfForgers(t *testing.T) {
	fx := newPPFixture(t, 1024)
	pk := fx.pk
	rng := testRand(t, 21)
	honest := honestVote(t, pk, 1, 5, ctx("s", 1, 0, 0))
	var claims []PlaintextClaim
	for j := range 8 {
		rogue := new(big.Int).Exp(honest.ct.c, big.NewInt(int64(j+2)), pk.nSquared)
		z1, _ := rand.Int(rng, pk.n)
		z2, _ := pk.randomUnit(rng)
		a := pk.combine(z1, new(big.Int).Exp(z2, pk.n, pk.nSquared)).c
		claims = append(claims, PlaintextClaim{&Ciphertext{c: rogue, pk: pk}, &PlaintextProof{pk: pk, a: a, z1: z1, z2: z2}, ctx("s", 1, 10+j, 0)})
	}
	for k, err := range pk.verifyPlaintextProofs(rng, claims) {
		if err == nil {
			t.Errorf("forged claim %d accepted by the batch verifier", k)
		}
	}
}

// TestPlaintextProofConcurrent: one Encryptor proving from several
// goroutines (with a source that is not safe for concurrent use) and
// batch verifications running at the same time give valid proofs and
// verdicts (run with -race).
func TestPlaintextProofConcurrent(t *testing.T) {
	fx := newPPFixture(t, 512)
	pk := fx.pk
	enc, err := NewEncryptor(pk, testRand(t, 4))
	if err != nil {
		t.Fatal(err)
	}
	const workers, each = 4, 6
	claims := make([][]PlaintextClaim, workers)
	errc := make(chan error, workers)
	for w := range workers {
		go func() {
			for k := range each {
				context := ctx("s", 1, w, k)
				ct, p, err := enc.EncryptWithProof(big.NewInt(int64(k)), context)
				if err != nil {
					errc <- err
					return
				}
				claims[w] = append(claims[w], PlaintextClaim{ct, p, context})
			}
			for _, err := range pk.VerifyPlaintextProofs(claims[w]) {
				if err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for range workers {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
}
