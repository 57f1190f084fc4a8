package paillier

import (
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
