package noise

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"testing"
)

// TestBinomialSeededPinned pins seeded Binomial outputs across the small
// (bits read from src) and AES-CTR paths, partial bytes and words, and the
// 2^18-bit chunk boundary: the digest was computed before Binomial stopped
// allocating a 32 KiB buffer per call, so the outputs and the number of
// bytes each call consumes from src (later draws depend on it) are
// unchanged.
func TestBinomialSeededPinned(t *testing.T) {
	src := NewInsecureSeeded(24)
	h := sha256.New()
	var b [8]byte
	ns := []int64{0, 1, 7, 8, 9, 20, 63, 64, 65, 100, 511, 512, 1000, 4095, 4096, 4097, 100000, 262143, 262144, 262145, 600000}
	for round := 0; round < 3; round++ {
		for _, n := range ns {
			x, err := Binomial(src, n)
			if err != nil {
				t.Fatal(err)
			}
			binary.LittleEndian.PutUint64(b[:], uint64(x))
			h.Write(b[:])
		}
	}
	const want = "0b25b2af33693ddc2f1b9752e35c45c89bda15b0763e3d5262c666d33c861e9c"
	if got := hex.EncodeToString(h.Sum(nil)); got != want {
		t.Errorf("seeded Binomial digest %s, want %s", got, want)
	}
}
