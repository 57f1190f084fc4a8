package paillier

import (
	"math/big"
	"os/exec"
	"strings"
	"testing"
)

// TestDealTestThreshold: the 1024-bit test keys work in a test binary, and
// nothing else about the floor moves: dealTestThreshold refuses outside a
// test binary whatever the size, refuses moduli below TestModulusBits, and
// every production constructor and decoder refuses the 1024-bit test key
// and its shares.
func TestDealTestThreshold(t *testing.T) {
	p, q := testPrimePair(1024)
	rng := testRand(t, 24)

	tpk, shares, err := DealTestThreshold(rng, p, q, 3, 2)
	if err != nil {
		t.Fatalf("in a test binary: %v", err)
	}
	if b := tpk.Public().N().BitLen(); b != 1024 {
		t.Fatalf("test key has %d bits, want 1024", b)
	}
	ct, err := tpk.Encrypt(rng, big.NewInt(77))
	if err != nil {
		t.Fatal(err)
	}
	var parts []*PartialDecryption
	for _, s := range shares[1:] {
		pd, err := s.Decrypt(rng, ct)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, pd)
	}
	if res, err := tpk.Combine(ct, parts); err != nil || res.Plaintext.Int64() != 77 {
		t.Fatalf("threshold decryption under the test key: %v, %v", res, err)
	}

	for _, bits := range []int{1024, 2048} {
		p, q := testPrimePair(bits)
		if _, _, err := dealTestThreshold(false, rng, p, q, 3, 2); err != errTestKeyOutsideTest {
			t.Errorf("%d bits outside a test binary: error %v, want the refusal", bits, err)
		}
	}
	p512, q512 := testPrimePair(512)
	if _, _, err := DealTestThreshold(rng, p512, q512, 3, 2); err == nil || !strings.Contains(err.Error(), "want 1024") {
		t.Errorf("512-bit modulus: error %v, want a refusal naming the 1024-bit floor", err)
	}

	// Production paths keep the 2048-bit floor for the same primes.
	if _, _, err := DealThreshold(rng, p, q, 3, 2); err == nil {
		t.Error("DealThreshold accepted the 1024-bit test primes")
	}
	if _, err := NewPrivateKey(p, q); err == nil {
		t.Error("NewPrivateKey accepted the 1024-bit test primes")
	}
	if _, err := NewPublicKey(tpk.Public().N()); err == nil {
		t.Error("NewPublicKey accepted the 1024-bit test modulus")
	}
	tb, _ := tpk.MarshalBinary()
	if _, err := ParseThresholdPublicKey(tb); err == nil || !strings.Contains(err.Error(), "want 2048") {
		t.Errorf("ParseThresholdPublicKey of the test key: %v, want a 2048-bit refusal", err)
	}
	pb, _ := tpk.Public().MarshalBinary()
	if _, err := ParsePublicKey(pb); err == nil || !strings.Contains(err.Error(), "want 2048") {
		t.Errorf("ParsePublicKey of the test key: %v, want a 2048-bit refusal", err)
	}
	sb, err := shares[0].MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ParseKeyShare(sb); err == nil || !strings.Contains(err.Error(), "want 2048") {
		t.Errorf("ParseKeyShare of a test share: %v, want a 2048-bit refusal", err)
	}
}

// TestDealTestThresholdRefusedOutsideTests builds an ordinary program
// (testdata/testkeyprog) calling DealTestThreshold on the 1024-bit test
// primes and 2048-bit ones: outside a test binary it must refuse both, so no
// program built with `go build` can hold a key below MinModulusBits.
func TestDealTestThresholdRefusedOutsideTests(t *testing.T) {
	bin := t.TempDir() + "/testkeyprog"
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/testkeyprog").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, bits := range []int{1024, 2048} {
		p, q := testPrimePair(bits)
		out, err := exec.Command(bin, p.Text(10), q.Text(10)).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "refused:") || !strings.Contains(string(out), "only inside `go test`") {
			t.Errorf("%d bits: the built program said %q (%v), want the refusal", bits, out, err)
		}
	}
}
