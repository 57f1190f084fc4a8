package paillier

import (
	"fmt"
	"math/big"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestMultiExpMatchesExp: multiExp and multiExpSigned agree with the
// product of separate exponentiations, for exponents of every size class
// (0, 1, short, long, mixed) and base counts that use one and several
// goroutines.
func TestMultiExpMatchesExp(t *testing.T) {
	tpk, _ := mustDeal(t, 512, 3, 2)
	m := tpk.nSquared
	rng := mrand.New(mrand.NewPCG(1, 2))
	randInt := func(bits int) *big.Int {
		x := new(big.Int)
		for i := 0; i < bits; i += 32 {
			x.Lsh(x, 32)
			x.Or(x, big.NewInt(int64(rng.Uint32())))
		}
		return x.Rsh(x, uint(max(0, (bits+31)/32*32-bits)))
	}
	for _, c := range []struct {
		name  string
		count int
		bits  []int
		neg   bool
	}{
		{"one base", 1, []int{300}, false},
		{"zeros and ones", 5, []int{0, 1}, false},
		{"short", 12, []int{128}, false},
		{"mixed", 40, []int{0, 1, 7, 128, 385, 1500}, false},
		{"long", 9, []int{3000}, false},
		{"signed", 30, []int{1, 64, 200}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			bases := make([]*big.Int, c.count)
			exps := make([]*big.Int, c.count)
			want := big.NewInt(1)
			for k := range bases {
				bases[k] = new(big.Int).Add(randInt(1100), big.NewInt(2)) // may exceed m: reduced inside
				for new(big.Int).GCD(nil, nil, bases[k], tpk.n).Cmp(bigOne) != 0 {
					bases[k].Add(bases[k], bigOne)
				}
				exps[k] = randInt(c.bits[k%len(c.bits)])
				if c.neg && k%3 == 0 {
					exps[k].Neg(exps[k])
				}
				var f *big.Int
				if exps[k].Sign() < 0 {
					f = new(big.Int).ModInverse(bases[k], m)
					f.Exp(f, new(big.Int).Neg(exps[k]), m)
				} else {
					f = new(big.Int).Exp(bases[k], exps[k], m)
				}
				want.Mul(want, f)
				want.Mod(want, m)
			}
			got, err := multiExpSigned(bases, exps, m)
			if err != nil {
				t.Fatal(err)
			}
			if got.Cmp(want) != 0 {
				t.Fatalf("multi-exponentiation differs from the product of exponentiations")
			}
			if !c.neg && multiExp(bases, exps, m).Cmp(want) != 0 {
				t.Fatalf("multiExp differs from the product of exponentiations")
			}
		})
	}
}

// TestInterpolateMatchesNaive is the known-answer test of the
// multi-exponentiation in Combine: for every t-subset of a (7, 4) key and
// for (12, 8) subsets with gaps, prod c_i^(2 mu_i) computed with the common
// factor taken out and shared squarings equals the value of one
// exponentiation per share, bit for bit, both for honest partial
// decryptions (where it decodes to the plaintext) and for arbitrary units
// (where it decodes to nothing: the two paths must agree there too).
func TestInterpolateMatchesNaive(t *testing.T) {
	for _, shape := range []struct{ n, t int }{{7, 4}, {12, 8}, {5, 1}, {3, 3}} {
		t.Run(fmt.Sprintf("N=%d,t=%d", shape.n, shape.t), func(t *testing.T) {
			tpk, shares := mustDeal(t, 512, shape.n, shape.t)
			rng := testRand(t, 77)
			m := big.NewInt(987654321)
			ct, _ := tpk.Encrypt(rng, m)
			cis := make([]*big.Int, shape.n)
			junk := make([]*big.Int, shape.n)
			for i, s := range shares {
				pd, err := s.Decrypt(rng, ct)
				if err != nil {
					t.Fatal(err)
				}
				cis[i] = pd.ci
				junk[i], _ = tpk.randomUnit(rng)
			}
			count := 0
			subsets(shape.n, shape.t, func(set []int) {
				count++
				if count > 60 {
					return
				}
				for _, vals := range [][]*big.Int{cis, junk} {
					cs := make([]*big.Int, len(set))
					for k, i := range set {
						cs[k] = vals[i-1]
					}
					fast, err1 := tpk.combinedFast(set, cs)
					naive, err2 := tpk.combinedNaive(set, cs)
					if err1 != nil || err2 != nil {
						t.Fatalf("subset %v: %v, %v", set, err1, err2)
					}
					if fast.Cmp(naive) != 0 {
						t.Fatalf("subset %v: multi-exponentiation and naive interpolation differ", set)
					}
				}
				cs := make([]*big.Int, len(set))
				for k, i := range set {
					cs[k] = cis[i-1]
				}
				got, err := tpk.interpolate(set, cs)
				if err != nil || got.Cmp(m) != 0 {
					t.Fatalf("subset %v: interpolated %v (%v), want %v", set, got, err, m)
				}
			})
		})
	}
}

// forger builds partial decryptions of party i on ct, honest or not, with
// proofs made by a prover who knows the share (a malicious share holder):
// c_i multiplied by ciMul, commitments multiplied by aMul and bMul after
// the nonce is drawn and before the challenge is hashed.
func forge(t *testing.T, ks *KeyShare, ct *Ciphertext, ciMul, aMul, bMul *big.Int, seed uint64) *PartialDecryption {
	t.Helper()
	tpk := ks.pub
	nsq := tpk.nSquared
	x := new(big.Int).Mul(tpk.delta, ks.s)
	ci := new(big.Int).Exp(ct.c, new(big.Int).Lsh(x, 1), nsq)
	mulMod := func(a, b *big.Int) *big.Int {
		if b == nil {
			return a
		}
		a.Mul(a, b)
		return a.Mod(a, nsq)
	}
	ci = mulMod(ci, ciMul)
	r, err := tpk.proofNonce(testRand(t, seed), ks.index, ct.c, ci, x)
	if err != nil {
		t.Fatal(err)
	}
	c4 := new(big.Int).Exp(ct.c, big.NewInt(4), nsq)
	a := mulMod(new(big.Int).Exp(c4, r, nsq), aMul)
	b := mulMod(new(big.Int).Exp(tpk.v, r, nsq), bMul)
	e := tpk.challenge(ks.index, ct.c, ci, a, b)
	z := new(big.Int).Mul(e, x)
	z.Add(z, r)
	return &PartialDecryption{pub: tpk, index: ks.index, ci: ci, proof: &Proof{a: a, b: b, z: z}}
}

// orderTwo returns the square root of 1 modulo n^2 that is 1 mod p^2 and
// -1 mod q^2 (an element of order 2 other than -1, off the squares).
func orderTwo(tpk *ThresholdPublicKey, p, q *big.Int) *big.Int {
	p2 := new(big.Int).Mul(p, p)
	q2 := new(big.Int).Mul(q, q)
	// u = 1 + p^2 k with 1 + p^2 k = -1 mod q^2: k = -2 (p^2)^-1 mod q^2.
	k := new(big.Int).ModInverse(p2, q2)
	k.Mul(k, big.NewInt(-2))
	k.Mod(k, q2)
	u := k.Mul(k, p2)
	u.Add(u, bigOne)
	return u.Mod(u, tpk.nSquared)
}

// TestBatchCancellingForgeries: forgeries aimed at batching. A share
// holder who sends a wrong c_i (shifted by a plaintext) while a colluder
// adjusts its own commitment so that the two equations' errors cancel
// (in the same equation, or across the a and b equations) passes a batch
// check with fixed equal weights (shown, so the attack is real) but not
// VerifyPartials, which names both; and a forger whose a and b errors
// cancel each other under one weight per claim is caught likewise.
func TestBatchCancellingForgeries(t *testing.T) {
	tpk, shares := mustDeal(t, 512, 6, 3)
	rng := testRand(t, 5)
	m := big.NewInt(4242)
	ct, _ := tpk.Encrypt(rng, m)
	nsq := tpk.nSquared
	shift := new(big.Int).Add(tpk.n, bigOne) // (1+n): adds 1 to the plaintext share
	// delta^(-2 e) for delta = 1+n: (1+n)^k = 1 + k n mod n^2.
	cancel := func(e *big.Int) *big.Int {
		k := new(big.Int).Mul(e, big.NewInt(-2))
		k.Mul(k, tpk.n)
		k.Add(k, bigOne)
		return k.Mod(k, nsq)
	}
	ones := func(k int) []*big.Int {
		w := make([]*big.Int, k)
		for i := range w {
			w[i] = big.NewInt(1)
		}
		return w
	}
	bad := forge(t, shares[0], ct, shift, nil, nil, 1)
	e1 := tpk.challenge(1, ct.c, bad.ci, bad.proof.a, bad.proof.b)
	for _, c := range []struct {
		name string
		mate *PartialDecryption
	}{
		{"colluder's a cancels", forge(t, shares[1], ct, nil, cancel(e1), nil, 2)},
		{"colluder's b cancels", forge(t, shares[1], ct, nil, nil, cancel(e1), 3)},
	} {
		t.Run(c.name, func(t *testing.T) {
			honest, _ := shares[2].Decrypt(rng, ct)
			more, _ := shares[3].Decrypt(rng, ct)
			claims := []Claim{{ct, bad}, {ct, c.mate}, {ct, honest}, {ct, more}}
			if !tpk.batchHolds(claims, ones(4), ones(4)) {
				t.Fatal("the cancelling pair does not pass equal weights: the attack is not what the test claims")
			}
			errs := tpk.VerifyPartials(claims)
			for k, cl := range claims {
				single := tpk.VerifyPartial(ct, cl.Partial)
				if (errs[k] == nil) != (single == nil) {
					t.Fatalf("claim %d: batch says %v, single says %v", k, errs[k], single)
				}
			}
			if errs[0] == nil || errs[1] == nil || errs[2] != nil || errs[3] != nil {
				t.Fatalf("verdicts %v, want parties 1 and 2 rejected", errs)
			}
			res, err := tpk.Combine(ct, []*PartialDecryption{bad, c.mate, honest, more, nil})
			if err == nil {
				t.Fatalf("combined %v from two valid shares of t = 3", res.Plaintext)
			}
			five, _ := shares[4].Decrypt(rng, ct)
			res, err = tpk.Combine(ct, []*PartialDecryption{bad, c.mate, honest, more, five})
			if err != nil || res.Plaintext.Cmp(m) != 0 || fmt.Sprint(res.Used) != "[3 4 5]" {
				t.Fatalf("combine: %v, used %v, err %v", res.Plaintext, res.Used, err)
			}
		})
	}
	// One forger, errors split across its own a and b equations: with one
	// weight per claim (rho = sigma) they would cancel if
	// X Y = 1; independent weights catch it.
	t.Run("own a and b cancel", func(t *testing.T) {
		g, _ := tpk.randomUnit(rng)
		gi := new(big.Int).ModInverse(g, nsq)
		f := forge(t, shares[0], ct, nil, g, gi, 9) // X = g^-2, Y = g^2
		honest, _ := shares[2].Decrypt(rng, ct)
		more, _ := shares[3].Decrypt(rng, ct)
		extra, _ := shares[4].Decrypt(rng, ct)
		claims := []Claim{{ct, honest}, {ct, f}, {ct, more}, {ct, extra}}
		if !tpk.batchHolds(claims, ones(4), ones(4)) {
			t.Fatal("the a/b split does not pass equal weights")
		}
		errs := tpk.VerifyPartials(claims)
		if errs[1] == nil || errs[0] != nil || errs[2] != nil || errs[3] != nil {
			t.Fatalf("verdicts %v, want party 1 rejected", errs)
		}
	})
}

// TestBatchSmallOrder: elements of order 2 and values off the subgroup of
// squares. A c_i or commitment multiplied by an element of order 2 and
// proved by the share holder (who knows x) is accepted by both checks (the
// squared equations cannot see it, and Combine's even exponent removes it:
// the plaintext is still right); the same change made to an existing proof
// by someone else changes the challenge and is rejected by both; a = -1
// (order 2 itself) is rejected by both. Batch and single verdicts agree on
// every case, in batches where the weights' parity would matter.
func TestBatchSmallOrder(t *testing.T) {
	tpk, shares := mustDeal(t, 512, 6, 3)
	p, q := testPrimePair(512)
	u := orderTwo(tpk, p, q)
	minus := new(big.Int).Sub(tpk.nSquared, bigOne)
	if new(big.Int).Exp(u, big.NewInt(2), tpk.nSquared).Cmp(bigOne) != 0 || u.Cmp(bigOne) == 0 || u.Cmp(minus) == 0 {
		t.Fatal("u is not a nontrivial square root of 1")
	}
	rng := testRand(t, 6)
	m := big.NewInt(777)
	ct, _ := tpk.Encrypt(rng, m)
	honest := func(i int) *PartialDecryption {
		pd, _ := shares[i-1].Decrypt(rng, ct)
		return pd
	}
	mul := func(x, y *big.Int) *big.Int {
		z := new(big.Int).Mul(x, y)
		return z.Mod(z, tpk.nSquared)
	}
	reused := func(pd *PartialDecryption, ci, a *big.Int) *PartialDecryption {
		return &PartialDecryption{pub: tpk, index: pd.index, ci: ci, proof: &Proof{a: a, b: pd.proof.b, z: pd.proof.z}}
	}
	h1 := honest(1)
	cases := []struct {
		name  string
		pd    *PartialDecryption
		valid bool
	}{
		{"c_i times u, proved", forge(t, shares[0], ct, u, nil, nil, 11), true},
		{"c_i negated, proved", forge(t, shares[0], ct, minus, nil, nil, 12), true},
		{"a times u, proved", forge(t, shares[0], ct, nil, u, nil, 13), true},
		{"b times u, proved", forge(t, shares[0], ct, nil, nil, u, 14), true},
		{"c_i times u, old proof", reused(h1, mul(h1.ci, u), h1.proof.a), false},
		{"a times u, old proof", reused(h1, h1.ci, mul(h1.proof.a, u)), false},
		{"a = -1", reused(h1, h1.ci, minus), false},
		{"a = u", reused(h1, h1.ci, u), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			claims := []Claim{{ct, c.pd}, {ct, honest(2)}, {ct, honest(3)}, {ct, honest(4)}, {ct, honest(5)}}
			for trial := 0; trial < 8; trial++ { // fresh weights each time: parity 0 and 1 both drawn w.p. 1-2^-8
				errs := tpk.VerifyPartials(claims)
				single := tpk.VerifyPartial(ct, c.pd)
				if (errs[0] == nil) != (single == nil) || (single == nil) != c.valid {
					t.Fatalf("batch %v, single %v, want valid = %v", errs[0], single, c.valid)
				}
				for k := 1; k < len(errs); k++ {
					if errs[k] != nil {
						t.Fatalf("honest claim %d rejected: %v", k, errs[k])
					}
				}
			}
			if c.valid {
				res, err := tpk.Combine(ct, []*PartialDecryption{c.pd, honest(2), honest(3)})
				if err != nil || res.Plaintext.Cmp(m) != 0 {
					t.Fatalf("combine with the order-2 variant: %v, %v", res, err)
				}
			}
		})
	}
}

// TestVerifyPartialsRandomForgeries: many random batches (several
// ciphertexts, repeated parties) with random forgeries of random kinds at
// random places: VerifyPartials agrees with VerifyPartial on every claim,
// and the rejected claims are exactly the forged ones, named by party.
func TestVerifyPartialsRandomForgeries(t *testing.T) {
	tpk, shares := mustDeal(t, 512, 8, 4)
	rng := testRand(t, 8)
	pick := mrand.New(mrand.NewPCG(8, 8))
	cts := make([]*Ciphertext, 3)
	for j := range cts {
		cts[j], _ = tpk.Encrypt(rng, big.NewInt(int64(100+j)))
	}
	shift := new(big.Int).Add(tpk.n, bigOne)
	kinds := []func(ks *KeyShare, ct *Ciphertext, seed uint64) *PartialDecryption{
		func(ks *KeyShare, ct *Ciphertext, seed uint64) *PartialDecryption { // shifted c_i, honest proof of the old one
			pd, _ := ks.Decrypt(rng, ct)
			ci := new(big.Int).Mul(pd.ci, shift)
			return &PartialDecryption{pub: tpk, index: pd.index, ci: ci.Mod(ci, tpk.nSquared), proof: pd.proof}
		},
		func(ks *KeyShare, ct *Ciphertext, seed uint64) *PartialDecryption { // proved false statement
			return forge(t, ks, ct, shift, nil, nil, seed)
		},
		func(ks *KeyShare, ct *Ciphertext, seed uint64) *PartialDecryption { // another ciphertext's partial
			pd, _ := ks.Decrypt(rng, cts[(slices.Index(cts, ct)+1)%len(cts)])
			return pd
		},
		func(ks *KeyShare, ct *Ciphertext, seed uint64) *PartialDecryption { // another party's share under this index
			other := shares[ks.index%len(shares)]
			pd, _ := other.Decrypt(rng, ct)
			pd.index = ks.index
			return pd
		},
		func(ks *KeyShare, ct *Ciphertext, seed uint64) *PartialDecryption { // response off by one
			pd, _ := ks.Decrypt(rng, ct)
			pd.proof = &Proof{a: pd.proof.a, b: pd.proof.b, z: new(big.Int).Add(pd.proof.z, bigOne)}
			return pd
		},
		func(ks *KeyShare, ct *Ciphertext, seed uint64) *PartialDecryption { // commitment b replaced
			pd, _ := ks.Decrypt(rng, ct)
			b, _ := tpk.randomUnit(rng)
			pd.proof = &Proof{a: pd.proof.a, b: b, z: pd.proof.z}
			return pd
		},
	}
	trials := 12
	if testing.Short() {
		trials = 5
	}
	for trial := range trials {
		size := 6 + pick.IntN(10)
		claims := make([]Claim, size)
		forged := map[int]bool{}
		for k := range claims {
			ks := shares[pick.IntN(len(shares))]
			ct := cts[pick.IntN(len(cts))]
			if pick.IntN(4) == 0 {
				forged[k] = true
				claims[k] = Claim{ct, kinds[pick.IntN(len(kinds))](ks, ct, uint64(trial*100+k))}
			} else {
				pd, _ := ks.Decrypt(rng, ct)
				claims[k] = Claim{ct, pd}
			}
		}
		errs := tpk.VerifyPartials(claims)
		for k, cl := range claims {
			single := tpk.VerifyPartial(cl.Ciphertext, cl.Partial)
			if (errs[k] == nil) != (single == nil) {
				t.Fatalf("trial %d claim %d: batch %v, single %v", trial, k, errs[k], single)
			}
			if (errs[k] != nil) != forged[k] {
				t.Fatalf("trial %d claim %d (forged %v): verdict %v", trial, k, forged[k], errs[k])
			}
			if errs[k] != nil && errs[k].Error() != single.Error() {
				t.Fatalf("trial %d claim %d: batch names %q, single %q", trial, k, errs[k], single)
			}
		}
	}
}

// TestCombineOptionsAgree: every combination of CombineOptions decrypts the
// same plaintext from the same shares, skipping the same forged ones.
func TestCombineOptionsAgree(t *testing.T) {
	tpk, shares := mustDeal(t, 512, 12, 7)
	rng := testRand(t, 12)
	m := big.NewInt(55555)
	ct, _ := tpk.Encrypt(rng, m)
	parts := make([]*PartialDecryption, len(shares))
	for i, s := range shares {
		parts[i], _ = s.Decrypt(rng, ct)
	}
	for _, i := range []int{1, 4, 5} { // parties 2, 5, 6 lie
		parts[i] = forge(t, shares[i], ct, new(big.Int).Add(tpk.n, bigOne), nil, nil, uint64(i))
	}
	for _, opt := range []CombineOptions{{}, {ProofByProof: true}, {NaiveInterpolation: true}, {ProofByProof: true, NaiveInterpolation: true}} {
		t.Run(fmt.Sprintf("%+v", opt), func(t *testing.T) {
			res, err := tpk.CombineWith(ct, parts, opt)
			if err != nil {
				t.Fatal(err)
			}
			var rejected []int
			for _, r := range res.Rejected {
				rejected = append(rejected, r.Index)
			}
			if res.Plaintext.Cmp(m) != 0 || fmt.Sprint(res.Used) != "[1 3 4 7 8 9 10]" || fmt.Sprint(rejected) != "[2 5 6]" {
				t.Fatalf("plaintext %v used %v rejected %v", res.Plaintext, res.Used, rejected)
			}
		})
	}
}

// TestVerifyPartialsMalformed: claims with missing parts are rejected
// before any exponentiation, with the same words as VerifyPartial, and do
// not disturb the verdicts on the others.
func TestVerifyPartialsMalformed(t *testing.T) {
	tpk, shares := mustDeal(t, 512, 5, 2)
	rng := testRand(t, 3)
	ct, _ := tpk.Encrypt(rng, big.NewInt(9))
	other, _ := mustDeal(t, 512, 4, 2)
	foreign, _ := other.Encrypt(rng, big.NewInt(9))
	good := make([]*PartialDecryption, 5)
	for i, s := range shares {
		good[i], _ = s.Decrypt(rng, ct)
	}
	claims := []Claim{
		{ct, good[0]},
		{ct, nil},
		{nil, good[1]},
		{foreign, good[2]},
		{ct, &PartialDecryption{pub: tpk, index: 9, ci: good[3].ci, proof: good[3].proof}},
		{ct, &PartialDecryption{pub: tpk, index: 4, ci: good[3].ci, proof: &Proof{a: big.NewInt(0), b: good[3].proof.b, z: good[3].proof.z}}},
		{ct, good[4]},
		{ct, good[1]}, {ct, good[2]}, {ct, good[3]},
	}
	errs := tpk.VerifyPartials(claims)
	for k, cl := range claims {
		single := tpk.VerifyPartial(cl.Ciphertext, cl.Partial)
		if (errs[k] == nil) != (single == nil) {
			t.Errorf("claim %d: batch %v, single %v", k, errs[k], single)
		}
	}
	for _, k := range []int{0, 6, 7, 8, 9} {
		if errs[k] != nil {
			t.Errorf("valid claim %d rejected: %v", k, errs[k])
		}
	}
	var nilKey *ThresholdPublicKey
	if e := nilKey.VerifyPartials(claims[:1]); e[0] == nil {
		t.Error("nil key verified a claim")
	}
}

// TestBatchWithoutVPowers: when the precomputed powers of v do not cover
// the exponent (a key whose table is cut short), the batch check falls back
// to one exponentiation of v and gives the same verdicts.
func TestBatchWithoutVPowers(t *testing.T) {
	tpk, shares := mustDeal(t, 512, 6, 4)
	tpk.vPowOnce.Do(func() { tpk.vPow = []*big.Int{tpk.v} })
	rng := testRand(t, 14)
	ct, _ := tpk.Encrypt(rng, big.NewInt(3))
	var claims []Claim
	for k, s := range shares {
		pd, _ := s.Decrypt(rng, ct)
		if k == 2 {
			pd = forge(t, s, ct, new(big.Int).Add(tpk.n, bigOne), nil, nil, 3)
		}
		claims = append(claims, Claim{ct, pd})
	}
	if !tpk.batchHolds(claims[:2], []*big.Int{big.NewInt(5), big.NewInt(7)}, []*big.Int{big.NewInt(11), big.NewInt(13)}) {
		t.Fatal("valid claims fail the batch equation on the fallback path")
	}
	errs := tpk.VerifyPartials(claims)
	for i, err := range errs {
		if (err != nil) != (i == 2) {
			t.Fatalf("claim %d: %v", i, err)
		}
	}
}

// TestChunkedExp: exponentiation over chunk powers equals big.Int.Exp for
// exponents at and around the chunk boundaries, up to the cover and beyond
// it (the fallback).
func TestChunkedExp(t *testing.T) {
	tpk, _ := mustDeal(t, 512, 3, 2)
	m := tpk.nSquared
	g, _ := tpk.randomUnit(testRand(t, 2))
	c := newChunked(g, 3*chunkBits, m)
	if len(c) != 3 {
		t.Fatalf("%d chunk powers for 3 chunks", len(c))
	}
	pick := mrand.New(mrand.NewPCG(3, 4))
	for _, bits := range []int{0, 1, 2, chunkBits - 1, chunkBits, chunkBits + 1, 2*chunkBits + 5, 3 * chunkBits, 3*chunkBits + 1, 5000} {
		e := new(big.Int)
		if bits > 0 {
			e.SetBit(e, bits-1, 1)
			for i := 0; i < bits-1; i++ {
				e.SetBit(e, i, uint(pick.IntN(2)))
			}
		}
		if got, want := c.exp(e, m), new(big.Int).Exp(g, e, m); got.Cmp(want) != 0 {
			t.Fatalf("%d-bit exponent: chunked exponentiation differs from Exp", bits)
		}
	}
}

// TestVerifyPartialsLargeBatch: 64 claims (8 parties × 8 ciphertexts) with
// forgers at the first, a middle and the last place, and a batch without
// any: the forgers alone are named; the honest batch passes whole.
func TestVerifyPartialsLargeBatch(t *testing.T) {
	tpk, shares := mustDeal(t, 512, 8, 4)
	rng := testRand(t, 64)
	shift := new(big.Int).Add(tpk.n, bigOne)
	var claims []Claim
	for j := range 8 {
		ct, _ := tpk.Encrypt(rng, big.NewInt(int64(j)))
		for _, s := range shares {
			pd, err := s.Decrypt(rng, ct)
			if err != nil {
				t.Fatal(err)
			}
			claims = append(claims, Claim{ct, pd})
		}
	}
	for k, err := range tpk.VerifyPartials(claims) {
		if err != nil {
			t.Fatalf("honest claim %d rejected: %v", k, err)
		}
	}
	bad := map[int]bool{0: true, 29: true, 63: true}
	for k := range bad {
		cl := claims[k]
		claims[k] = Claim{cl.Ciphertext, forge(t, shares[cl.Partial.Index()-1], cl.Ciphertext, shift, nil, nil, uint64(k))}
	}
	for k, err := range tpk.VerifyPartials(claims) {
		if (err != nil) != bad[k] {
			t.Fatalf("claim %d (forged %v): %v", k, bad[k], err)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("party %d", claims[k].Partial.Index())) {
			t.Fatalf("claim %d: error does not name party %d: %v", k, claims[k].Partial.Index(), err)
		}
	}
}
