package paillier

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// Fuzz targets for the decoders. Property: a decoder never panics, and
// whatever it accepts re-encodes to exactly the input (canonical encoding).
// The seed corpus in testdata/fuzz holds valid and malformed encodings
// under the deterministic encodingFixture key; the fuzz functions also add
// the valid encodings with f.Add. Run for example:
//
//	go test -fuzz FuzzParseCiphertext -fuzztime 60s ./paillier

func FuzzParsePublicKey(f *testing.F) {
	fx := newEncodingFixture(f)
	f.Add(mustMarshal(f, fx.tpk.Public()))
	f.Fuzz(func(t *testing.T, b []byte) {
		pk, err := ParsePublicKey(b)
		if err != nil {
			return
		}
		if !bytes.Equal(mustMarshal(t, pk), b) {
			t.Fatal("accepted a non-canonical public key encoding")
		}
	})
}

func FuzzParseCiphertext(f *testing.F) {
	fx := newEncodingFixture(f)
	pk := fx.tpk.Public()
	f.Add(mustMarshal(f, fx.ct))
	f.Fuzz(func(t *testing.T, b []byte) {
		ct, err := pk.ParseCiphertext(b)
		if err != nil {
			return
		}
		if err := pk.checkUnit(ct.c); err != nil {
			t.Fatalf("accepted ciphertext outside Z*_{n^2}: %v", err)
		}
		if !bytes.Equal(mustMarshal(t, ct), b) {
			t.Fatal("accepted a non-canonical ciphertext encoding")
		}
	})
}

func FuzzParseThresholdPublicKey(f *testing.F) {
	fx := newEncodingFixture(f)
	f.Add(mustMarshal(f, fx.tpk))
	f.Fuzz(func(t *testing.T, b []byte) {
		tpk, err := ParseThresholdPublicKey(b)
		if err != nil {
			return
		}
		if !bytes.Equal(mustMarshal(t, tpk), b) {
			t.Fatal("accepted a non-canonical threshold public key encoding")
		}
	})
}

func FuzzParseKeyShare(f *testing.F) {
	fx := newEncodingFixture(f)
	f.Add(mustMarshal(f, fx.shares[0]))
	f.Fuzz(func(t *testing.T, b []byte) {
		ks, err := ParseKeyShare(b)
		if err != nil {
			return
		}
		if !bytes.Equal(mustMarshal(t, ks), b) {
			t.Fatal("accepted a non-canonical key share encoding")
		}
	})
}

func FuzzParsePartialDecryption(f *testing.F) {
	fx := newEncodingFixture(f)
	f.Add(mustMarshal(f, fx.pd))
	f.Fuzz(func(t *testing.T, b []byte) {
		pd, err := fx.tpk.ParsePartialDecryption(b)
		if err != nil {
			return
		}
		if !bytes.Equal(mustMarshal(t, pd), b) {
			t.Fatal("accepted a non-canonical partial decryption encoding")
		}
		// Verification of arbitrary accepted input must not panic.
		_ = fx.tpk.VerifyPartial(fx.ct, pd)
	})
}

func FuzzParsePlaintextProof(f *testing.F) {
	fx := newEncodingFixture(f)
	pk := fx.tpk.Public()
	f.Add(mustMarshal(f, fx.pp))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := pk.ParsePlaintextProof(b)
		if err != nil {
			return
		}
		if err := pk.checkPlaintextProofShape(p); err != nil {
			t.Fatalf("accepted a proof out of range: %v", err)
		}
		if !bytes.Equal(mustMarshal(t, p), b) {
			t.Fatal("accepted a non-canonical plaintext proof encoding")
		}
		// Verification of accepted input must not panic, and only the
		// fixture's own proof verifies for its ciphertext and context. It
		// costs an exponentiation, so only one accepted input in 16 (by its
		// last byte) and the valid seed are verified, to keep fuzzing fast.
		valid := bytes.Equal(b, mustMarshal(t, fx.pp))
		if valid || b[len(b)-1]&15 == 0 {
			err = pk.VerifyPlaintextProof(fx.ppCt, p, ppContext)
			if (err == nil) != valid {
				t.Fatalf("verdict %v on a fuzzed proof", err)
			}
		}
	})
}

// TestWriteFuzzCorpus regenerates testdata/fuzz when
// DPLEARN_WRITE_FUZZ_CORPUS=1; otherwise it checks that the committed
// corpus exists and that its valid seeds still decode (so a format change
// cannot silently turn the corpus into noise).
func TestWriteFuzzCorpus(t *testing.T) {
	fx := newEncodingFixture(t)
	pk := fx.tpk.Public()
	valid := map[string][]byte{
		"FuzzParsePublicKey":          mustMarshal(t, pk),
		"FuzzParseCiphertext":         mustMarshal(t, fx.ct),
		"FuzzParseThresholdPublicKey": mustMarshal(t, fx.tpk),
		"FuzzParseKeyShare":           mustMarshal(t, fx.shares[0]),
		"FuzzParsePartialDecryption":  mustMarshal(t, fx.pd),
		"FuzzParsePlaintextProof":     mustMarshal(t, fx.pp),
	}
	if os.Getenv("DPLEARN_WRITE_FUZZ_CORPUS") == "1" {
		for name, b := range valid {
			dir := filepath.Join("testdata", "fuzz", name)
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			seeds := map[string][]byte{
				"valid":      b,
				"truncated":  b[:len(b)-1],
				"trailing":   append(append([]byte(nil), b...), 0),
				"header":     b[:headerLen],
				"version2":   mutate(b, func(x []byte) []byte { x[4] = 2; return x }),
				"zero-body":  append(append([]byte(nil), b[:headerLen]...), make([]byte, len(b)-headerLen)...),
				"ones-tail":  mutate(b, func(x []byte) []byte { return append(x[:len(x)-8], bytes.Repeat([]byte{0xff}, 8)...) }),
				"empty":      {},
				"bit-flip-1": mutate(b, func(x []byte) []byte { x[len(x)/2] ^= 1; return x }),
			}
			for seed, data := range seeds {
				content := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", data)
				if err := os.WriteFile(filepath.Join(dir, seed), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	for name, b := range valid {
		path := filepath.Join("testdata", "fuzz", name, "valid")
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("seed corpus missing (regenerate with DPLEARN_WRITE_FUZZ_CORPUS=1): %v", err)
		}
		if want := fmt.Sprintf("go test fuzz v1\n[]byte(%q)\n", b); string(data) != want {
			t.Fatalf("%s: valid seed is stale; regenerate with DPLEARN_WRITE_FUZZ_CORPUS=1", path)
		}
	}
}

func FuzzParseSafePrimes(f *testing.F) {
	p, q := testPrimePair(512)
	f.Add(FormatSafePrimes(p, q))
	f.Add([]byte("23\n47\n"))
	f.Add([]byte("p = 0x\nq = -1\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, q, err := ParseSafePrimes(b)
		if err != nil {
			return
		}
		if p.Sign() <= 0 || q.Sign() <= 0 {
			t.Fatal("accepted a non-positive prime")
		}
	})
}
