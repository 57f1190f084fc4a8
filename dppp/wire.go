package dppp

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// ErrMalformed is wrapped by every decoding error: short input, trailing
// bytes, a wrong version or type byte, a count beyond the limits, a
// non-finite float where a finite one is required.
var ErrMalformed = errors.New("dppp: malformed message")

// Limits on decoded sizes. They bound allocations before anything is read.
const (
	// MaxTeachers is the largest roster (paillier.MaxParties).
	MaxTeachers = 1000
	// MaxClasses bounds K.
	MaxClasses = 1 << 12
	// MaxFeatures bounds the length of a query row.
	MaxFeatures = 1 << 16
	// MaxBatch bounds the queries in one batch (one ciphertext).
	MaxBatch = 1 << 12
	// maxName is the longest teacher name in bytes.
	maxName = 64
	// maxReason is the longest refusal reason in bytes.
	maxReason = 1024
	// maxBlob bounds an encoded Paillier object (ciphertext or partial
	// decryption of an 8192-bit key).
	maxBlob = 1 << 14
)

// wireVersion is the version byte that starts every payload.
const wireVersion = 1

// writer appends big-endian fields.
type writer struct{ b []byte }

func (w *writer) u8(v uint8)    { w.b = append(w.b, v) }
func (w *writer) u32(v uint32)  { w.b = binary.BigEndian.AppendUint32(w.b, v) }
func (w *writer) u64(v uint64)  { w.b = binary.BigEndian.AppendUint64(w.b, v) }
func (w *writer) f64(v float64) { w.u64(math.Float64bits(v)) }
func (w *writer) raw(p []byte)  { w.b = append(w.b, p...) }

// bytes8 writes a length (one byte) and the bytes; the caller checks len < 256.
func (w *writer) bytes8(p []byte) { w.u8(uint8(len(p))); w.raw(p) }

// str16 writes a length (two bytes) and the string; the caller checks the length.
func (w *writer) str16(s string) {
	w.b = binary.BigEndian.AppendUint16(w.b, uint16(len(s)))
	w.b = append(w.b, s...)
}

// reader consumes big-endian fields; the first error sticks.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrMalformed, fmt.Sprintf(format, args...))
	}
}

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || n > len(r.b) {
		r.fail("%s: need %d bytes, %d left", what, n, len(r.b))
		return nil
	}
	p := r.b[:n:n]
	r.b = r.b[n:]
	return p
}

func (r *reader) u8(what string) uint8 {
	p := r.take(1, what)
	if p == nil {
		return 0
	}
	return p[0]
}

func (r *reader) u16(what string) uint16 {
	p := r.take(2, what)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint16(p)
}

func (r *reader) u32(what string) uint32 {
	p := r.take(4, what)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint32(p)
}

func (r *reader) u64(what string) uint64 {
	p := r.take(8, what)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint64(p)
}

// finite reads a float64 that must be finite.
func (r *reader) finite(what string) float64 {
	v := math.Float64frombits(r.u64(what))
	if r.err == nil && (math.IsNaN(v) || math.IsInf(v, 0)) {
		r.fail("%s is not finite", what)
		return 0
	}
	return v
}

func (r *reader) fixed32(what string) (out [32]byte) {
	copy(out[:], r.take(32, what))
	return out
}

// bytes8 reads a one-byte length and that many bytes (a copy).
func (r *reader) bytes8(what string) []byte {
	n := int(r.u8(what + " length"))
	p := r.take(n, what)
	if p == nil {
		return nil
	}
	return append([]byte(nil), p...)
}

// str16 reads a two-byte length and a string of at most limit bytes.
func (r *reader) str16(what string, limit int) string {
	n := int(r.u16(what + " length"))
	if r.err == nil && n > limit {
		r.fail("%s has %d bytes, limit %d", what, n, limit)
		return ""
	}
	return string(r.take(n, what))
}

// count reads a uint32 element count and checks it against limit and
// against the bytes left (each element takes at least elemSize bytes).
func (r *reader) count(what string, limit, elemSize int) int {
	n := r.u32(what + " count")
	if r.err != nil {
		return 0
	}
	if uint64(n) > uint64(limit) {
		r.fail("%s: %d elements, limit %d", what, n, limit)
		return 0
	}
	if uint64(n)*uint64(elemSize) > uint64(len(r.b)) {
		r.fail("%s: %d elements of ≥ %d bytes, only %d bytes left", what, n, elemSize, len(r.b))
		return 0
	}
	return int(n)
}

// done fails unless every byte was consumed.
func (r *reader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.fail("%d trailing bytes", len(r.b))
	}
	return r.err
}

func (w *writer) u16(v uint16) { w.b = binary.BigEndian.AppendUint16(w.b, v) }

// blob writes a u32 length and the bytes; the caller checks the length.
func (w *writer) blob(p []byte) { w.u32(uint32(len(p))); w.raw(p) }

// blob reads a u32 length (at most limit) and that many bytes (a copy).
func (r *reader) blob(what string, limit int) []byte {
	n := r.u32(what + " length")
	if r.err != nil {
		return nil
	}
	if uint64(n) > uint64(limit) {
		r.fail("%s has %d bytes, limit %d", what, n, limit)
		return nil
	}
	p := r.take(int(n), what)
	if p == nil {
		return nil
	}
	return append([]byte(nil), p...)
}
