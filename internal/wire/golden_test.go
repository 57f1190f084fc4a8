package wire

import (
	"encoding/hex"
	"math"
	"testing"
)

// TestGoldenEncoding pins the bytes of every field kind the Writer writes
// (the encoding under capefm's and dppp's messages, whose own golden
// digests cover their layouts): big-endian integers, IEEE 754 bits, the
// one-byte, two-byte and four-byte length prefixes. The expected bytes are
// written out by hand, field by field.
func TestGoldenEncoding(t *testing.T) {
	var w Writer
	w.U8(0xa5)
	w.U16(0x0102)
	w.U32(0x03040506)
	w.U64(0x0708090a0b0c0d0e)
	w.F64(-2.5)
	w.F64(math.SmallestNonzeroFloat64)
	w.Bytes8([]byte("ab"))
	w.Str16("été")
	w.Blob([]byte{0xff})
	w.Raw([]byte{0x00, 0x01})
	want := "a5" + "0102" + "03040506" + "0708090a0b0c0d0e" +
		"c004000000000000" + // −2.5 = −1.25·2¹: sign 1, exponent 0x400, mantissa 0x4…
		"0000000000000001" + // the smallest subnormal
		"02" + "6162" +
		"0005" + "c3a974c3a9" + // "été" is 5 bytes of UTF-8
		"00000001" + "ff" +
		"0001"
	if got := hex.EncodeToString(w.Bytes()); got != want {
		t.Errorf("encoding\n got %s\nwant %s", got, want)
	}
}
