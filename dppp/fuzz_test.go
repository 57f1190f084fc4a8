package dppp

import (
	"bytes"
	"testing"
)

func sampleMessages() []Message {
	var s [32]byte
	s[0] = 9
	p := Params{Session: s, Config: Config{Teachers: []string{"a", "b"}, Threshold: 2, GammaNum: 2, GammaDen: 3, Classes: 3, Features: 2, Noise: Binomial, Epsilon: 1, Delta: 1e-5, BudgetEpsilon: 2, BudgetDelta: 1e-4}, MinContributors: 2, Coins: 5, QPC: 2, SlotBits: 4, MaxQueries: 3}
	return []Message{
		&Offer{Params: p},
		&Accept{Session: s, From: 1, Hash: p.Hash()},
		&Query{Session: s, Batch: 3, Rows: [][]float64{{1, 2}, {3, 4.5}}},
		&Vote{Session: s, Batch: 3, From: 2, Ciphertext: []byte{1, 2, 3}},
		&Decrypt{Session: s, Batch: 3, Sum: []byte{4}, Contributors: []uint32{1, 2}, Ciphertexts: [][]byte{{5}, {6, 7}}},
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
