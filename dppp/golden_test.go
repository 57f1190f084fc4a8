package dppp

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"
)

// goldenWire is the SHA-256 of the encodings of sampleMessages (every DPPP
// message type, built from fixed inputs) followed by the Params.Hash of
// their parameters. A changed digest means the wire format or the
// parameters' hash changed: explain it in the commit that updates the
// constant (and bump the wire version if old peers would misread it).
// Regenerate with `go test ./dppp -run TestGoldenWire -v`, which prints
// the new digest.
const goldenWire = "c6d80f784680330b52898fdbe47f9b8778e1bb43f90877bdbe8d241c536be593"

// TestGoldenWire checks that the encodings and Params.Hash are unchanged
// (one digest over many outputs, as crypto/mlkem's TestAccumulated).
func TestGoldenWire(t *testing.T) {
	h := sha256.New()
	for _, m := range sampleMessages() {
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: %v", m.Type(), err)
		}
		h.Write(b)
		if o, ok := m.(*Offer); ok {
			ph := o.Params.Hash()
			h.Write(ph[:])
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != goldenWire {
		t.Errorf("DPPP encodings changed: digest %s, want %s (see goldenWire: explain the change in the commit)", got, goldenWire)
	}
}
