package idx

import (
	"bytes"
	"testing"
)

// FuzzDecode checks that no input panics the decoder, and that an accepted
// array has as many elements as its dimensions declare.
func FuzzDecode(f *testing.F) {
	f.Add(encode(Uint8, []uint32{2, 2, 2}, []byte{1, 2, 3, 4, 5, 6, 7, 8}))
	f.Add(encode(Uint8, []uint32{3}, []byte{1, 2, 3}))
	f.Add(encode(Float64, []uint32{1}, []byte{0x3f, 0xf0, 0, 0, 0, 0, 0, 0}))
	f.Add(encode(Int16, []uint32{1, 1}, []byte{0x80, 0}))
	f.Add([]byte{0x1f, 0x8b, 8, 0, 0, 0, 0, 0})
	f.Add([]byte{0, 0, 8, 3, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		lim := Limits{MaxElements: 1 << 16}
		a, err := Decode(bytes.NewReader(b), lim)
		if err == nil {
			n := 1
			for _, d := range a.Dims {
				n *= d
			}
			if n != len(a.Data) || len(a.Dims) == 0 {
				t.Fatalf("dims %v but %d elements", a.Dims, len(a.Data))
			}
		}
		if im, err := DecodeImages(bytes.NewReader(b), lim); err == nil {
			if len(im.Pixels) != im.N*im.Features() {
				t.Fatalf("images %d×%d but %d pixels", im.N, im.Features(), len(im.Pixels))
			}
			for _, p := range im.Pixels {
				if p < 0 || p > 1 {
					t.Fatalf("pixel %v outside [0, 1]", p)
				}
			}
		}
		_, _ = DecodeLabels(bytes.NewReader(b), lim)
	})
}
