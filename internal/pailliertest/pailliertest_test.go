package pailliertest

import (
	"crypto/rand"
	"fmt"
	"math/big"
	"testing"

	"github.com/dplearn/dplearn/paillier"
)

func TestKeys(t *testing.T) {
	for _, bits := range []int{1024, 2048, 3072} {
		p, q, err := Primes(bits)
		if err != nil {
			t.Fatal(err)
		}
		for _, x := range []*big.Int{p, q} {
			if err := paillier.CheckSafePrime(x); err != nil || x.BitLen() != bits/2 {
				t.Fatalf("%d-bit fixture: %v", bits, err)
			}
		}
	}
	for _, bits := range []int{1024, 2048, 3072} {
		p, q, _ := Primes(bits)
		if !IsPublished(p) || !IsPublished(q) {
			t.Fatalf("%d-bit test primes not reported as published", bits)
		}
		if IsPublished(new(big.Int).Add(p, big.NewInt(2))) {
			t.Fatal("p+2 reported as published")
		}
	}
	if IsPublished(nil) {
		t.Fatal("nil reported as published")
	}
	if _, _, err := Primes(1536); err == nil {
		t.Fatal("1536-bit test primes offered")
	}
	if _, err := PrivateKey(1024); err == nil {
		t.Fatal("paillier.NewPrivateKey accepted the 1024-bit test primes")
	}
	sk, err := PrivateKey(2048)
	if err != nil || sk.Bits() != 2048 {
		t.Fatal(err)
	}
	for _, bits := range []int{1024, 2048} {
		tpk, shares, err := ThresholdKey(bits, 3, 2)
		if err != nil {
			t.Fatal(err)
		}
		if tpk.Bits() != bits {
			t.Fatalf("ThresholdKey(%d) has %d bits", bits, tpk.Bits())
		}
		ct, _ := tpk.Encrypt(rand.Reader, big.NewInt(5))
		var parts []*paillier.PartialDecryption
		for _, s := range shares[:2] {
			pd, err := s.Decrypt(rand.Reader, ct)
			if err != nil {
				t.Fatal(err)
			}
			parts = append(parts, pd)
		}
		res, err := tpk.Combine(ct, parts)
		if err != nil || res.Plaintext.Int64() != 5 {
			t.Fatalf("%d bits: %v %v", bits, res, err)
		}
		// The 1024-bit key cannot leave the process: decoders refuse it.
		b, _ := tpk.MarshalBinary()
		if _, err := paillier.ParseThresholdPublicKey(b); (err == nil) != (bits >= paillier.MinModulusBits) {
			t.Fatalf("%d bits: ParseThresholdPublicKey: %v", bits, err)
		}
	}
}

func ExampleThresholdKey() {
	tpk, shares, err := ThresholdKey(2048, 3, 2)
	if err != nil {
		panic(err)
	}
	fmt.Println(tpk.Bits(), tpk.Threshold(), len(shares))
	// Output: 2048 2 3
}
