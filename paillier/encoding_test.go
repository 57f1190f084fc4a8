package paillier

import (
	"bytes"
	"math/big"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"testing"
)

// detRand is a deterministic reader (ChaCha8) for fixtures that must be
// identical across runs, such as the fuzz key.
func detRand(seed byte) *mrand.ChaCha8 {
	var s [32]byte
	s[0] = seed
	return mrand.NewChaCha8(s)
}

// encodingFixture is a 2048-bit (3, 2) threshold key with one ciphertext and
// one partial decryption, all deterministic.
type encodingFixture struct {
	tpk    *ThresholdPublicKey
	shares []*KeyShare
	ct     *Ciphertext
	pd     *PartialDecryption
	ppCt   *Ciphertext     // a ciphertext with a plaintext proof
	pp     *PlaintextProof // under context ppContext
}

// ppContext is the context of the fixture's plaintext proof.
var ppContext = []byte("fixture")

// newEncodingFixture returns the shared fixture, built once per test binary
// (dealing a 2048-bit key costs about half a second); tests only read it.
func newEncodingFixture(t testing.TB) *encodingFixture {
	t.Helper()
	fx, err := sharedEncodingFixture()
	if err != nil {
		t.Fatal(err)
	}
	return fx
}

var sharedEncodingFixture = sync.OnceValues(buildEncodingFixture)

func buildEncodingFixture() (*encodingFixture, error) {
	p, q := testPrimePair(2048)
	rng := detRand(42)
	tpk, shares, err := DealThreshold(rng, p, q, 3, 2)
	if err != nil {
		return nil, err
	}
	ct, err := tpk.Encrypt(rng, big.NewInt(99))
	if err != nil {
		return nil, err
	}
	pd, err := shares[1].Decrypt(rng, ct)
	if err != nil {
		return nil, err
	}
	ppCt, pp, err := tpk.EncryptWithProof(rng, big.NewInt(77), ppContext)
	if err != nil {
		return nil, err
	}
	return &encodingFixture{tpk: tpk, shares: shares, ct: ct, pd: pd, ppCt: ppCt, pp: pp}, nil
}

func mustMarshal(t testing.TB, m interface{ MarshalBinary() ([]byte, error) }) []byte {
	t.Helper()
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestEncodingRoundTrip(t *testing.T) {
	fx := newEncodingFixture(t)
	pkb := mustMarshal(t, fx.tpk.Public())
	pk, err := ParsePublicKey(pkb)
	if err != nil {
		t.Fatal(err)
	}
	if !pk.Equal(fx.tpk.Public()) || pk.KeyID() != fx.tpk.KeyID() {
		t.Fatal("public key changed in a round trip")
	}
	ctb := mustMarshal(t, fx.ct)
	if want := headerLen + 32 + 512; len(ctb) != want {
		t.Fatalf("2048-bit ciphertext encodes to %d bytes, want %d", len(ctb), want)
	}
	ct, err := pk.ParseCiphertext(ctb)
	if err != nil {
		t.Fatal(err)
	}
	if ct.c.Cmp(fx.ct.c) != 0 {
		t.Fatal("ciphertext changed in a round trip")
	}
	tpkb := mustMarshal(t, fx.tpk)
	tpk, err := ParseThresholdPublicKey(tpkb)
	if err != nil {
		t.Fatal(err)
	}
	if tpk.ID() != fx.tpk.ID() || !bytes.Equal(mustMarshal(t, tpk), tpkb) {
		t.Fatal("threshold public key changed in a round trip")
	}
	for _, s := range fx.shares {
		sb := mustMarshal(t, s)
		got, err := ParseKeyShare(sb)
		if err != nil {
			t.Fatal(err)
		}
		if got.index != s.index || got.s.Cmp(s.s) != 0 || got.pub.ID() != fx.tpk.ID() {
			t.Fatalf("share %d changed in a round trip", s.index)
		}
	}
	pdb := mustMarshal(t, fx.pd)
	pd, err := tpk.ParsePartialDecryption(pdb)
	if err != nil {
		t.Fatal(err)
	}
	// The decoded partial decryption still verifies, and decrypts with a
	// second (fresh) partial decryption from a decoded share.
	if err := tpk.VerifyPartial(ct, pd); err != nil {
		t.Fatal(err)
	}
	s3, _ := ParseKeyShare(mustMarshal(t, fx.shares[2]))
	pd3, err := s3.Decrypt(detRand(1), ct)
	if err != nil {
		t.Fatal(err)
	}
	res, err := tpk.Combine(ct, []*PartialDecryption{pd, pd3})
	if err != nil || res.Plaintext.Int64() != 99 {
		t.Fatalf("combine after decoding: %v, %v", res, err)
	}
}

// mutate returns a copy of b with f applied.
func mutate(b []byte, f func([]byte) []byte) []byte {
	return f(append([]byte(nil), b...))
}

func TestEncodingRejects(t *testing.T) {
	fx := newEncodingFixture(t)
	pk := fx.tpk.Public()
	pkb := mustMarshal(t, pk)
	ctb := mustMarshal(t, fx.ct)
	tpkb := mustMarshal(t, fx.tpk)
	sb := mustMarshal(t, fx.shares[0])
	pdb := mustMarshal(t, fx.pd)
	elem := pk.elemLen()
	setElem := func(b []byte, off int, x *big.Int) []byte {
		x.FillBytes(b[off : off+elem])
		return b
	}
	ctOff := headerLen + keyIDLen
	pdCiOff := headerLen + keyIDLen + 2
	smallPK, _ := newPublicKey(big.NewInt(126869), 16)
	otherTPK, _ := mustDeal(t, 512, 3, 2)
	tests := []struct {
		name  string
		parse func([]byte) error
		input []byte
		want  string
	}{
		{"pk: empty", pkParse, nil, "shorter than"},
		{"pk: bad magic", pkParse, mutate(pkb, func(b []byte) []byte { b[0] = 'X'; return b }), "bad magic"},
		{"pk: version 2", pkParse, mutate(pkb, func(b []byte) []byte { b[4] = 2; return b }), "unsupported version 2"},
		{"pk: wrong kind", pkParse, ctb, "is a ciphertext, want a public key"},
		{"pk: unknown kind", pkParse, mutate(pkb, func(b []byte) []byte { b[5] = 77; return b }), "unknown kind 77"},
		{"pk: truncated", pkParse, pkb[:len(pkb)-1], "truncated modulus"},
		{"pk: trailing byte", pkParse, append(append([]byte(nil), pkb...), 0), "1 trailing bytes"},
		{"pk: leading zero", pkParse, func() []byte {
			b := putU16(header(kindPublicKey), 257)
			b = append(b, 0)
			return append(b, pk.n.Bytes()...)
		}(), "leading zero"},
		{"pk: 17-bit modulus", pkParse, smallPK.marshal(), "want 2048"},
		{"pk: even modulus", pkParse, mutate(pkb, func(b []byte) []byte { b[len(b)-1] &^= 1; return b }), "even"},
		{"ct: zero", ctParse(pk), mutate(ctb, func(b []byte) []byte { return setElem(b, ctOff, big.NewInt(0)) }), "zero"},
		{"ct: n^2", ctParse(pk), mutate(ctb, func(b []byte) []byte { return setElem(b, ctOff, pk.NSquared()) }), "not reduced"},
		{"ct: all ones", ctParse(pk), mutate(ctb, func(b []byte) []byte {
			for i := ctOff; i < len(b); i++ {
				b[i] = 0xff
			}
			return b
		}), "not reduced"},
		{"ct: not a unit", ctParse(pk), mutate(ctb, func(b []byte) []byte { return setElem(b, ctOff, pk.N()) }), "shares a factor"},
		{"ct: short", ctParse(pk), ctb[:len(ctb)-1], "truncated ciphertext"},
		{"ct: other key", ctParse(pk), mutate(ctb, func(b []byte) []byte { b[headerLen] ^= 1; return b }), "different public key"},
		{"tpk: t > N", tpkParse, mutate(tpkb, func(b []byte) []byte {
			off := headerLen + 2 + 256 + 2
			b[off+1] = 4
			return b
		}), "threshold 4"},
		{"tpk: N = 0", tpkParse, mutate(tpkb, func(b []byte) []byte { b[headerLen+2+256+1] = 0; return b }), "0 parties"},
		{"tpk: v = 1", tpkParse, mutate(tpkb, func(b []byte) []byte { return setElem(b, headerLen+2+256+4, big.NewInt(1)) }), "v = 1"},
		{"tpk: v not a square", tpkParse, mutate(tpkb, func(b []byte) []byte {
			k := big.NewInt(2)
			for big.Jacobi(k, pk.n) != -1 {
				k.Add(k, bigOne)
			}
			return setElem(b, headerLen+2+256+4, k)
		}), "not a square"},
		{"tpk: truncated", tpkParse, tpkb[:len(tpkb)-10], "truncated verification key 3"},
		{"share: index 0", shareParse, mutate(sb, func(b []byte) []byte {
			off := len(b) - elem - 2
			b[off], b[off+1] = 0, 0
			return b
		}), "party 0 outside"},
		{"share: tampered", shareParse, mutate(sb, func(b []byte) []byte { b[len(b)-1] ^= 1; return b }), "does not match its verification key"},
		{"share: zero", shareParse, mutate(sb, func(b []byte) []byte { return setElem(b, len(b)-elem, big.NewInt(0)) }), "zero"},
		{"share: key length lie", shareParse, mutate(sb, func(b []byte) []byte { b[headerLen] = 0xff; return b }), "truncated threshold public key"},
		{"pd: c_i zero", pdParse(fx.tpk), mutate(pdb, func(b []byte) []byte { return setElem(b, pdCiOff, big.NewInt(0)) }), "zero"},
		{"pd: index 9", pdParse(fx.tpk), mutate(pdb, func(b []byte) []byte { b[pdCiOff-1] = 9; return b }), "party 9 outside"},
		{"pd: other key", pdParse(otherTPK), pdb, "trailing bytes"},
		{"pd: other key id", pdParse(fx.tpk), mutate(pdb, func(b []byte) []byte { b[headerLen+3] ^= 0x80; return b }), "different threshold key"},
		{"pd: response too large", pdParse(fx.tpk), mutate(pdb, func(b []byte) []byte { b[len(b)-fx.tpk.zLen()] = 0xff; return b }), "response out of range"},
		{"pd: trailing", pdParse(fx.tpk), append(append([]byte(nil), pdb...), 1), "trailing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.parse(tc.input)
			if err == nil {
				t.Fatal("malformed input accepted")
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err, tc.want)
			}
		})
	}
}

func pkParse(b []byte) error { _, err := ParsePublicKey(b); return err }
func tpkParse(b []byte) error {
	_, err := ParseThresholdPublicKey(b)
	return err
}
func shareParse(b []byte) error { _, err := ParseKeyShare(b); return err }
func ctParse(pk *PublicKey) func([]byte) error {
	return func(b []byte) error { _, err := pk.ParseCiphertext(b); return err }
}
func pdParse(tpk *ThresholdPublicKey) func([]byte) error {
	return func(b []byte) error { _, err := tpk.ParsePartialDecryption(b); return err }
}
