// Package wire is the strict binary encoding shared by dplearn's protocol
// messages (capefm, dppp): big-endian fixed-width fields, short
// length-prefixed byte strings and strings, and element counts checked
// against a limit and against the bytes left before anything is allocated,
// so a hostile length prefix cannot make a decoder allocate more than its
// input could fill. Decoding errors stick (the first one wins) and wrap the
// caller's sentinel error; Done refuses trailing bytes.
package wire

import (
	"encoding/binary"
	"fmt"
	"math"
)

// Writer appends big-endian fields to a byte slice.
type Writer struct{ b []byte }

// Bytes returns the encoding so far.
func (w *Writer) Bytes() []byte { return w.b }

// U8 appends one byte.
func (w *Writer) U8(v uint8) { w.b = append(w.b, v) }

// U16 appends a big-endian uint16.
func (w *Writer) U16(v uint16) { w.b = binary.BigEndian.AppendUint16(w.b, v) }

// U32 appends a big-endian uint32.
func (w *Writer) U32(v uint32) { w.b = binary.BigEndian.AppendUint32(w.b, v) }

// U64 appends a big-endian uint64.
func (w *Writer) U64(v uint64) { w.b = binary.BigEndian.AppendUint64(w.b, v) }

// F64 appends a float64's IEEE 754 bits.
func (w *Writer) F64(v float64) { w.U64(math.Float64bits(v)) }

// Raw appends bytes as they are.
func (w *Writer) Raw(p []byte) { w.b = append(w.b, p...) }

// Bytes8 appends a one-byte length and the bytes; the caller checks len < 256.
func (w *Writer) Bytes8(p []byte) { w.U8(uint8(len(p))); w.Raw(p) }

// Str16 appends a two-byte length and the string; the caller checks the length.
func (w *Writer) Str16(s string) {
	w.b = binary.BigEndian.AppendUint16(w.b, uint16(len(s)))
	w.b = append(w.b, s...)
}

// Reader consumes big-endian fields; the first error sticks.
type Reader struct {
	b         []byte
	err       error
	malformed error
}

// NewReader reads b; every decoding error wraps malformed.
func NewReader(b []byte, malformed error) *Reader { return &Reader{b: b, malformed: malformed} }

// Err returns the first decoding error, if any.
func (r *Reader) Err() error { return r.err }

// Len returns the number of bytes not yet consumed.
func (r *Reader) Len() int { return len(r.b) }

// Fail records a decoding error (if none is recorded yet).
func (r *Reader) Fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", r.malformed, fmt.Sprintf(format, args...))
	}
}

// Take consumes n bytes (nil after an error).
func (r *Reader) Take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.Fail("%s: need %d bytes, %d left", what, n, len(r.b))
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

// U8 reads one byte.
func (r *Reader) U8(what string) uint8 {
	p := r.Take(1, what)
	if p == nil {
		return 0
	}
	return p[0]
}

// U16 reads a big-endian uint16.
func (r *Reader) U16(what string) uint16 {
	p := r.Take(2, what)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint16(p)
}

// U32 reads a big-endian uint32.
func (r *Reader) U32(what string) uint32 {
	p := r.Take(4, what)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint32(p)
}

// U64 reads a big-endian uint64.
func (r *Reader) U64(what string) uint64 {
	p := r.Take(8, what)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint64(p)
}

// Finite reads a float64 that must be finite.
func (r *Reader) Finite(what string) float64 {
	v := math.Float64frombits(r.U64(what))
	if r.err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
		r.Fail("%s is not finite", what)
		return 0
	}
	return v
}

// Fixed32 reads 32 bytes.
func (r *Reader) Fixed32(what string) (out [32]byte) {
	copy(out[:], r.Take(32, what))
	return out
}

// Bytes8 reads a one-byte length and that many bytes (a copy).
func (r *Reader) Bytes8(what string) []byte {
	n := int(r.U8(what + " length"))
	p := r.Take(n, what)
	if p == nil {
		return nil
	}
	return append([]byte(nil), p...)
}

// Str16 reads a two-byte length and a string of at most limit bytes.
func (r *Reader) Str16(what string, limit int) string {
	n := int(r.U16(what + " length"))
	if r.err == nil && n > limit {
		r.Fail("%s has %d bytes, limit %d", what, n, limit)
		return ""
	}
	return string(r.Take(n, what))
}

// Count reads a uint32 element count and checks it against limit and
// against the bytes left (each element takes at least elemSize bytes).
func (r *Reader) Count(what string, limit, elemSize int) int {
	n := r.U32(what + " count")
	if r.err != nil {
		return 0
	}
	if uint64(n) > uint64(limit) {
		r.Fail("%s: %d elements, limit %d", what, n, limit)
		return 0
	}
	if uint64(n)*uint64(elemSize) > uint64(len(r.b)) {
		r.Fail("%s: %d elements of ≥ %d bytes, only %d bytes left", what, n, elemSize, len(r.b))
		return 0
	}
	return int(n)
}

// Done fails unless every byte was consumed, and returns the first error.
func (r *Reader) Done() error {
	if r.err == nil && len(r.b) != 0 {
		r.Fail("%d trailing bytes", len(r.b))
	}
	return r.err
}

// Blob appends a u32 length and the bytes; the caller checks the length.
func (w *Writer) Blob(p []byte) { w.U32(uint32(len(p))); w.Raw(p) }

// Blob reads a u32 length (at most limit) and that many bytes (a copy).
func (r *Reader) Blob(what string, limit int) []byte {
	n := r.U32(what + " length")
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(limit) {
		r.Fail("%s has %d bytes, limit %d", what, n, limit)
		return nil
	}
	p := r.Take(int(n), what)
	if p == nil {
		return nil
	}
	return append([]byte(nil), p...)
}
