package paillier

import (
	"crypto/sha256"
	"encoding/hex"
	"math/big"
	"testing"
)

// goldenWire is the SHA-256 of Paillier encodings built from fixed inputs:
// the public key of the 1024-bit fixture primes, ciphertexts of fixed
// plaintexts under fixed nonces, their sum and a constant multiple. A
// changed digest means the encoding (or the arithmetic) changed: explain
// it in the commit that updates the constant. Regenerate with
// `go test ./paillier -run TestGoldenWire -v`, which prints the new digest.
const goldenWire = "51dbddc25d4296f72f734ce5b8ae6c9755effb34aee28a2b69b3a5f737f11660"

// TestGoldenWire checks that the encodings are unchanged (one digest over
// many outputs, as crypto/mlkem's TestAccumulated).
func TestGoldenWire(t *testing.T) {
	p, q := testPrimePair(1024)
	sk, err := newPrivateKey(p, q, minTestModulusBits)
	if err != nil {
		t.Fatal(err)
	}
	pk := sk.Public()
	h := sha256.New()
	b, err := pk.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	h.Write(b)
	var cts []*Ciphertext
	for i := int64(0); i < 8; i++ {
		ct, err := pk.EncryptWithNonce(big.NewInt(i*i*1000003+7), big.NewInt(2*i+3))
		if err != nil {
			t.Fatal(err)
		}
		cts = append(cts, ct)
	}
	sum, err := pk.Sum(cts...)
	if err != nil {
		t.Fatal(err)
	}
	mul, err := pk.MulConst(sum, big.NewInt(-5))
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range append(cts, sum, mul) {
		b, err := ct.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		h.Write(b)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != goldenWire {
		t.Errorf("Paillier encodings changed: digest %s, want %s (see goldenWire: explain the change in the commit)", got, goldenWire)
	}
}
