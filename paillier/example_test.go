package paillier

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
)

// Plain Paillier: encrypt, add under encryption, decrypt. (The primes are
// test fixtures; use GenerateKey for real keys.)
func ExamplePublicKey_Encrypt() {
	sk, err := NewPrivateKey(testPrimePair(2048))
	if err != nil {
		panic(err)
	}
	pk := sk.Public()
	a, _ := pk.Encrypt(rand.Reader, big.NewInt(20))
	b, _ := pk.Encrypt(rand.Reader, big.NewInt(22))
	sum, _ := pk.Add(a, b)
	m, _ := sk.Decrypt(sum)
	fmt.Println(m)
	// Output: 42
}

// Threshold decryption: a dealer splits the key among 3 parties, any 2
// decrypt the sum of encrypted votes; a forged share would be skipped. Each
// holder checks, with DecryptSum, that what it decrypts is the product of
// the listed votes (at least 4 of them) rather than a single vote.
func ExampleDealThreshold() {
	p, q := testPrimePair(2048)
	tpk, shares, err := DealThreshold(rand.Reader, p, q, 3, 2)
	if err != nil {
		panic(err)
	}
	var votes []*Ciphertext
	for _, v := range []int64{1, 0, 1, 1} {
		ct, _ := tpk.Encrypt(rand.Reader, big.NewInt(v))
		votes = append(votes, ct)
	}
	total, _ := tpk.Sum(votes...)
	var parts []*PartialDecryption
	for _, s := range []*KeyShare{shares[2], shares[0]} {
		pd, err := s.DecryptSum(rand.Reader, total, votes, 4)
		if err != nil {
			panic(err)
		}
		parts = append(parts, pd)
	}
	res, err := tpk.Combine(total, parts)
	if err != nil {
		panic(err)
	}
	fmt.Println(res.Plaintext, res.Used)
	// Output: 3 [1 3]
}

// Packing: three teachers' 4-class noisy vote vectors in one ciphertext
// each; the product of the ciphertexts decodes to the per-class sums.
func ExamplePacking() {
	sk, _ := NewPrivateKey(testPrimePair(2048))
	pk := sk.Public()
	pp, err := NewPacking(pk, 4, -8, 9, 3) // votes plus noise in [-8, 9], up to 3 teachers
	if err != nil {
		panic(err)
	}
	enc, _ := NewEncryptor(pk, rand.Reader)
	var cts []*Ciphertext
	for _, v := range [][]int64{{1, -3, 0, 2}, {-2, 1, 1, 0}, {0, 0, 5, -1}} {
		m, _ := pp.Encode(v)
		ct, _ := enc.Encrypt(m)
		cts = append(cts, ct)
	}
	sum, _ := pk.Sum(cts...)
	m, _ := sk.Decrypt(sum)
	counts, err := pp.Decode(m, 3)
	fmt.Println(counts, err)
	// Output: [-1 -2 6 1] <nil>
}

// A pool of precomputed randomizers: encryptions in the foreground cost one
// multiplication while background goroutines refill the pool; cancelling
// the context stops them.
func ExampleEncryptor_StartPool() {
	sk, _ := NewPrivateKey(testPrimePair(2048))
	enc, err := NewEncryptor(sk.Public(), rand.Reader)
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	pool, err := enc.StartPool(ctx, 16, 1)
	if err != nil {
		panic(err)
	}
	ct, _ := pool.Encrypt(big.NewInt(7))
	cancel()
	pool.Wait()
	m, _ := sk.Decrypt(ct)
	fmt.Println(m)
	// Output: 7
}

// Batch verification: five partial decryptions of two ciphertexts checked
// with one random linear combination; party 4's lie (a partial decryption of
// another ciphertext) is found and named, the others accepted.
func ExampleThresholdPublicKey_VerifyPartials() {
	p, q := testPrimePair(2048)
	tpk, shares, err := DealThreshold(rand.Reader, p, q, 5, 3)
	if err != nil {
		panic(err)
	}
	a, _ := tpk.Encrypt(rand.Reader, big.NewInt(7))
	b, _ := tpk.Encrypt(rand.Reader, big.NewInt(9))
	var claims []Claim
	for i, s := range shares {
		ct, other := a, b
		if i%2 == 1 {
			ct, other = b, a
		}
		decrypted := ct
		if s.Index() == 4 {
			decrypted = other // the lie
		}
		pd, err := s.Decrypt(rand.Reader, decrypted)
		if err != nil {
			panic(err)
		}
		claims = append(claims, Claim{Ciphertext: ct, Partial: pd})
	}
	for k, err := range tpk.VerifyPartials(claims) {
		fmt.Println(claims[k].Partial.Index(), err == nil)
	}
	// Output:
	// 1 true
	// 2 true
	// 3 true
	// 4 false
	// 5 true
}

// Proof of plaintext knowledge: a teacher encrypts its vote and proves it
// knows what it encrypted, bound to the session, batch, its ID and the
// ciphertext index; the decryptors verify the proofs of all contributors in
// one batch check. A proof does not transfer to another context, and a
// ciphertext built from other parties' ciphertexts (here: the product of
// two votes) has no proof its maker could produce.
func ExampleEncryptor_EncryptWithProof() {
	p, q := testPrimePair(2048)
	tpk, _, err := DealThreshold(rand.Reader, p, q, 3, 2)
	if err != nil {
		panic(err)
	}
	enc, err := NewEncryptor(tpk.Public(), rand.Reader)
	if err != nil {
		panic(err)
	}
	var claims []PlaintextClaim
	for teacher, vote := range []int64{1, 0, 1} {
		context := fmt.Appendf(nil, "session 7|batch 3|teacher %d|index 0", teacher)
		ct, proof, err := enc.EncryptWithProof(big.NewInt(vote), context)
		if err != nil {
			panic(err)
		}
		claims = append(claims, PlaintextClaim{Ciphertext: ct, Proof: proof, Context: context})
	}
	fmt.Println(tpk.VerifyPlaintextProofs(claims))
	// Replayed to another batch:
	other := []byte("session 7|batch 4|teacher 0|index 0")
	fmt.Println(tpk.VerifyPlaintextProof(claims[0].Ciphertext, claims[0].Proof, other) != nil)
	// A rogue ciphertext with a copied proof:
	rogue, _ := tpk.Add(claims[0].Ciphertext, claims[2].Ciphertext)
	fmt.Println(tpk.VerifyPlaintextProof(rogue, claims[0].Proof, claims[0].Context) != nil)
	// Output:
	// [<nil> <nil> <nil>]
	// true
	// true
}
