package secagg

import (
	"bytes"
	"crypto/aes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"testing"
)

// Independent computation: the mask is the little-endian reading of
// AES-128(key, counter block i) for i = 0, 1, ... with a big-endian 128-bit
// counter starting at zero.
func TestMaskStreamKnownAnswer(t *testing.T) {
	key := make([]byte, maskKeyLen)
	for i := range key {
		key[i] = byte(i)
	}
	blk, _ := aes.NewCipher(key)
	const L = 37
	want := make([]uint64, L)
	for i := 0; i < L; i += 2 {
		var ctr, out [16]byte
		binary.BigEndian.PutUint64(ctr[8:], uint64(i/2))
		blk.Encrypt(out[:], ctr[:])
		want[i] = binary.LittleEndian.Uint64(out[:8])
		if i+1 < L {
			want[i+1] = binary.LittleEndian.Uint64(out[8:])
		}
	}
	for _, off := range []int{0, 1, 2, 5, 36} {
		st, err := newMaskStream(key, +1, off)
		if err != nil {
			t.Fatal(err)
		}
		got := make([]uint64, L-off)
		applyMasks(got, []maskStream{st})
		if err := equalWords(got, want[off:]); err != nil {
			t.Fatalf("offset %d: %v", off, err)
		}
	}
}

func TestMasksCancelAcrossChunks(t *testing.T) {
	key := make([]byte, maskKeyLen)
	key[3] = 9
	const L = 3*maskChunk + 17
	v := make([]uint64, L)
	for i := range v {
		v[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	orig := append([]uint64(nil), v...)
	a, _ := newMaskStream(key, +1, 0)
	applyMasks(v, []maskStream{a})
	changed := 0
	for i := range v {
		if v[i] != orig[i] {
			changed++
		}
	}
	if changed < L-2 {
		t.Fatalf("mask changed only %d of %d words", changed, L)
	}
	// Subtract in two pieces starting at an odd offset.
	b1, _ := newMaskStream(key, -1, 0)
	b2, _ := newMaskStream(key, -1, 4097)
	applyMasks(v[:4097], []maskStream{b1})
	applyMasks(v[4097:], []maskStream{b2})
	if err := equalWords(v, orig); err != nil {
		t.Fatal(err)
	}
}

func TestDeriveKeySeparatesPurposesAndParties(t *testing.T) {
	secret := []byte("shared secret, 32 bytes long....")
	sess := []byte("session-id-0123456789")
	seen := map[string]string{}
	for _, tc := range []struct {
		name    string
		sess    []byte
		purpose string
		ids     []uint32
	}{
		{"enc 1→2", sess, infoShareEnc, []uint32{1, 2}},
		{"enc 2→1", sess, infoShareEnc, []uint32{2, 1}},
		{"mask 1,2", sess, infoPairMask, []uint32{1, 2}},
		{"self 1", sess, infoSelfMask, []uint32{1}},
		{"self 2", sess, infoSelfMask, []uint32{2}},
		{"other session", []byte("session-id-0123456780"), infoPairMask, []uint32{1, 2}},
	} {
		k, err := deriveKey(secret, tc.sess, tc.purpose, tc.ids...)
		if err != nil {
			t.Fatal(err)
		}
		if prev, dup := seen[string(k)]; dup {
			t.Fatalf("%s and %s derive the same key", tc.name, prev)
		}
		seen[string(k)] = tc.name
	}
}

// The key-derivation layout is part of the wire protocol (both parties of a
// pair must derive the same mask): pin it against an independent RFC 5869
// HKDF-SHA-256 written with crypto/hmac.
func TestKeyDerivationMatchesRFC5869Layout(t *testing.T) {
	hkdfRef := func(secret, salt, info []byte, n int) []byte {
		ext := hmac.New(sha256.New, salt)
		ext.Write(secret)
		prk := ext.Sum(nil)
		var out, prev []byte
		for i := byte(1); len(out) < n; i++ {
			m := hmac.New(sha256.New, prk)
			m.Write(prev)
			m.Write(info)
			m.Write([]byte{i})
			prev = m.Sum(nil)
			out = append(out, prev...)
		}
		return out[:n]
	}
	secret := []byte("0123456789abcdef0123456789abcdef")
	session := []byte("session-0123456789")
	for _, tc := range []struct {
		purpose string
		ids     []uint32
		info    string
		n       int
	}{
		{infoShareEnc, []uint32{3, 70000}, "dplearn/secagg/v1/share-enc\x00\x00\x00\x03\x00\x01\x11\x70", 32},
		{infoPairMask, []uint32{3, 70000}, "dplearn/secagg/v1/pair-mask\x00\x00\x00\x03\x00\x01\x11\x70", 16},
		{infoSelfMask, []uint32{9}, "dplearn/secagg/v1/self-mask\x00\x00\x00\x09", 16},
	} {
		got, err := deriveKey(secret, session, tc.purpose, tc.ids...)
		if err != nil {
			t.Fatal(err)
		}
		if want := hkdfRef(secret, session, []byte(tc.info), tc.n); !bytes.Equal(got, want) {
			t.Errorf("%s: %x, want %x", tc.purpose, got, want)
		}
	}
}
