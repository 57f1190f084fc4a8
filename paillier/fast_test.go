package paillier

import (
	"context"
	"crypto/rand"
	"math/big"
	"testing"
	"time"
)

// TestFixedBaseExpMatchesExp compares the table exponentiation with
// big.Int.Exp on edge and random exponents.
func TestFixedBaseExpMatchesExp(t *testing.T) {
	for _, bits := range []int{256, 512} {
		sk := mustTestKey(t, bits)
		enc, err := NewEncryptor(sk.Public(), testRand(t, 20))
		if err != nil {
			t.Fatal(err)
		}
		hs := enc.table[0][0]
		top := new(big.Int).Sub(new(big.Int).Lsh(bigOne, uint(enc.expBits)), bigOne)
		alphas := []*big.Int{big.NewInt(0), big.NewInt(1), big.NewInt(63), big.NewInt(64), top}
		rng := testRand(t, 21)
		for i := 0; i < 20; i++ {
			a, _ := rand.Int(rng, new(big.Int).Add(top, bigOne))
			alphas = append(alphas, a)
		}
		for _, a := range alphas {
			want := new(big.Int).Exp(hs, a, sk.nSquared)
			if got := enc.fixedBaseExp(a); got.Cmp(want) != 0 {
				t.Fatalf("%d bits: h_s^%v differs from big.Int.Exp", bits, a)
			}
		}
	}
}

// TestEncryptorRoundTrip: fast encryptions decrypt correctly at every size
// (so the randomizer is an n-th power), are randomised, and rerandomise.
func TestEncryptorRoundTrip(t *testing.T) {
	for _, bits := range []int{256, 512, 1024, 2048, 3072} {
		if testing.Short() && bits > 2048 {
			continue
		}
		sk := mustTestKey(t, bits)
		enc, err := NewEncryptor(sk.Public(), testRand(t, uint64(bits)))
		if err != nil {
			t.Fatal(err)
		}
		if enc.expBits < bits/2 {
			t.Fatalf("short exponent of %d bits for a %d-bit key", enc.expBits, bits)
		}
		m := new(big.Int).Sub(sk.n, big.NewInt(3))
		a, err := enc.Encrypt(m)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := enc.Encrypt(m)
		if a.c.Cmp(b.c) == 0 {
			t.Fatal("two fast encryptions are equal")
		}
		r, err := enc.Rerandomize(a)
		if err != nil {
			t.Fatal(err)
		}
		for _, ct := range []*Ciphertext{a, b, r} {
			got, err := sk.Decrypt(ct)
			if err != nil || got.Cmp(m) != 0 {
				t.Fatalf("%d bits: decrypted %v, %v", bits, got, err)
			}
		}
		if _, err := enc.Encrypt(sk.N()); err == nil {
			t.Fatal("plaintext n accepted")
		}
	}
}

func TestPoolFillsAndStops(t *testing.T) {
	sk := mustTestKey(t, 512)
	enc, err := NewEncryptor(sk.Public(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	pool, err := enc.StartPool(ctx, 8, 2)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for pool.Ready() < 8 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if pool.Ready() != 8 {
		t.Fatalf("pool holds %d randomizers, want 8", pool.Ready())
	}
	seen := map[string]bool{}
	for i := 0; i < 20; i++ { // more than the buffer: falls back inline
		m := big.NewInt(int64(i))
		ct, err := pool.Encrypt(m)
		if err != nil {
			t.Fatal(err)
		}
		if seen[ct.c.String()] {
			t.Fatal("pool reused a randomizer")
		}
		seen[ct.c.String()] = true
		if got, _ := sk.Decrypt(ct); got.Cmp(m) != 0 {
			t.Fatalf("decrypted %v, want %v", got, m)
		}
	}
	cancel()
	pool.Wait()
	if pool.Err() != nil {
		t.Fatal(pool.Err())
	}
	if _, err := enc.StartPool(t.Context(), 0, 1); err == nil {
		t.Fatal("empty pool accepted")
	}
}

// TestEncryptorJacobi checks the documented property: Encryptor ciphertexts
// have Jacobi symbol 1 mod n whatever the plaintext, so the symbol carries
// no information about it.
func TestEncryptorJacobi(t *testing.T) {
	sk := mustTestKey(t, 512)
	enc, _ := NewEncryptor(sk.Public(), testRand(t, 31))
	for i := int64(0); i < 20; i++ {
		ct, _ := enc.Encrypt(big.NewInt(i))
		if j := big.Jacobi(new(big.Int).Mod(ct.c, sk.n), sk.n); j != 1 {
			t.Fatalf("plaintext %d: Jacobi symbol %d", i, j)
		}
	}
}
