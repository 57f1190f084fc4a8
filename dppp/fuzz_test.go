package dppp

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

func sampleMessages() []Message {
	var s [32]byte
	s[0] = 9
	p := Params{Session: s, Config: Config{Teachers: []string{"a", "b"}, Threshold: 2, Colluders: NoneAssumed, Absent: NoneAssumed, Classes: 3, Features: 2, Noise: Binomial, Epsilon: 1, Delta: 1e-5, BudgetEpsilon: 2, BudgetDelta: 1e-4}, MinContributors: 2, Honest: 2, Coins: 5, QPC: 2, SlotBits: 4, MaxQueries: 3}
	return []Message{
		&Offer{Params: p},
		&Accept{Session: s, From: 1, Hash: p.Hash()},
		&Query{Session: s, Batch: 3, Rows: [][]float64{{1, 2}, {3, 4.5}}},
		&Vote{Session: s, Batch: 3, From: 2, Ciphertext: []byte{1, 2, 3}, Proof: []byte{4}},
		&SignSet{Session: s, Batch: 3, Set: []SetEntry{{From: 1, Ciphertext: [32]byte{1}, Proof: [32]byte{2}}, {From: 3}}},
		&SetSignature{Session: s, Batch: 3, From: 2, Cert: []byte{1, 2}, Sig: []byte{3}},
		&SetSignature{Session: s, Batch: 3, From: 2},
		&Decrypt{Session: s, Batch: 3, Sum: []byte{4}, Contributors: []uint32{1, 2}, Ciphertexts: [][]byte{{5}, {6, 7}}, Proofs: [][]byte{{1}, {2}}, Certs: [][]byte{{3}, {}}, Sigs: [][]byte{{4}, {}}},
		&Decrypt{Session: s, Batch: 3, Sum: []byte{1, 2, 3, 4}, Contributors: []uint32{1, 2}, Ciphertexts: [][]byte{{1, 2, 9, 9}, {1, 2, 3, 5}}, Proofs: [][]byte{{1}, {2}}, Certs: [][]byte{{3}, {5}}, Sigs: [][]byte{{4}, {6}}},
		&Decrypt{Session: s, Batch: 3, Sum: []byte{1, 2}, Contributors: []uint32{2}, Ciphertexts: [][]byte{{1, 2}}, Proofs: [][]byte{{7}}, Certs: [][]byte{{}}, Sigs: [][]byte{{}}},
		&Partial{Session: s, Batch: 3, From: 1, Share: []byte{8, 9}},
		&Refuse{Session: s, Batch: 3, From: 2, Reason: "no"},
		&Request{Session: s, ID: 4, Rows: [][]float64{{0, 1}}, Histogram: true},
		&Answer{Session: s, ID: 4, Labels: []uint32{1, 0}, Hist: [][]float64{{1, 2.5, -3}, {0, 0, 1}}},
		&Answer{Session: s, ID: 5, Labels: []uint32{2}},
	}
}

func TestMessagesRoundTrip(t *testing.T) {
	for _, m := range sampleMessages() {
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		got, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("%s: %v", m.Type(), err)
		}
		b2, _ := got.MarshalBinary()
		if !bytes.Equal(b, b2) {
			t.Fatalf("%s: re-encoding differs", m.Type())
		}
		if _, err := Unmarshal(append(b, 0)); err == nil {
			t.Fatalf("%s: trailing byte accepted", m.Type())
		}
		if _, err := Unmarshal(b[:len(b)-1]); err == nil {
			t.Fatalf("%s: truncation accepted", m.Type())
		}
	}
}

// FuzzUnmarshal: decoding never panics, and whatever decodes re-encodes to
// the same bytes (the encoding is canonical).
func FuzzUnmarshal(f *testing.F) {
	for _, m := range sampleMessages() {
		b, _ := m.MarshalBinary()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Unmarshal(b)
		if err != nil {
			return
		}
		b2, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("decoded %s does not encode: %v", m.Type(), err)
		}
		if !bytes.Equal(b, b2) {
			t.Fatalf("%s: not canonical", m.Type())
		}
	})
}

// TestDecryptSharedPrefix: a Decrypt whose ciphertexts share the sum's
// prefix (as paillier encodings under one key do) is sent in the shorter
// layout, decodes to the same ciphertexts, and is refused when its prefix is
// not the longest shared one or when the whole-blob layout is used where
// the shared prefix applies (one encoding per message).
func TestDecryptSharedPrefix(t *testing.T) {
	var s [32]byte
	sum := bytes.Repeat([]byte{7}, 100)
	cts := [][]byte{append(bytes.Repeat([]byte{7}, 40), bytes.Repeat([]byte{1}, 60)...), append(bytes.Repeat([]byte{7}, 38), bytes.Repeat([]byte{2}, 62)...)}
	d := &Decrypt{Session: s, Batch: 1, Sum: sum, Contributors: []uint32{3, 4}, Ciphertexts: cts,
		Proofs: [][]byte{{1}, {2}}, Certs: [][]byte{{}, {}}, Sigs: [][]byte{{}, {}}}
	b, err := d.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	whole := 2 + 32 + 8 + 4 + 100 + 4 + 1 + 2*(4+4+100) + 2*(4+1+4+4)
	if want := whole - 2*(4+38) + 2; len(b) != want {
		t.Fatalf("%d bytes, want %d (the whole-blob layout takes %d)", len(b), want, whole)
	}
	m, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	got := m.(*Decrypt)
	if len(got.Ciphertexts) != 2 || !bytes.Equal(got.Ciphertexts[0], cts[0]) || !bytes.Equal(got.Ciphertexts[1], cts[1]) || !bytes.Equal(got.Sum, sum) {
		t.Fatal("ciphertexts changed in the round trip")
	}
	// The prefix length sits after the header (2), session (32), batch (8),
	// sum (4+100), count (4), layout (1) and two ids (8).
	at := 2 + 32 + 8 + 4 + 100 + 4 + 1 + 8
	if b[at] != 0 || b[at+1] != 38 {
		t.Fatalf("prefix length bytes %v, want 0 38", b[at:at+2])
	}
	short := append([]byte(nil), b...)
	short[at+1] = 37 // a shorter prefix: one more byte per tail, and not canonical
	if _, err := Unmarshal(short); err == nil {
		t.Error("a non-maximal prefix decoded")
	}
	w := header(typeDecrypt)
	w.Raw(s[:])
	w.U64(1)
	w.Blob(sum)
	w.U32(2)
	w.U8(decryptBlobs)
	for i, c := range cts {
		w.U32(d.Contributors[i])
		w.Blob(c)
	}
	d.writeAuth(w)
	if _, err := Unmarshal(w.Bytes()); err == nil {
		t.Error("whole blobs decoded where the shared prefix applies")
	}
}

// TestOldWireVersionRefused: a payload of wire version 2 (before issue 27:
// no calibration query count in the parameters) or 1 (before issue 22:
// γ in the parameters, votes without proofs) is refused, never misread —
// its parameters have as many fields as version 2's, so γ = 2/3 would read
// as C = 2, A = 3.
func TestOldWireVersionRefused(t *testing.T) {
	for _, m := range sampleMessages() {
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range []byte{1, 2} {
			b[0] = v
			want := fmt.Sprintf("version %d, want %d", v, wireVersion)
			if _, err := Unmarshal(b); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s of version %d: %v", m.Type(), v, err)
			}
		}
	}
}
