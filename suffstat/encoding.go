package suffstat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// Binary encoding of a partial result (version 2), all little-endian:
//
//	offset  size  field
//	0       4     magic "DPSS"
//	4       2     version (2)
//	6       2     reserved, 0
//	8       4     K (1 ≤ K ≤ MaxK)
//	12      8     N (≥ 0)
//	20      24·K  Σ q(z) in units of 2⁻⁴⁶
//	...     24·K(K+1)/2  upper triangle of Σ q(z) q(z)ᵀ in units of 2⁻⁹², row by row (i ≤ j)
//	end-4   4     CRC-32C (Castagnoli) of everything before it
//
// Each value is a 192-bit two's-complement integer (24 bytes, least
// significant first): the exact state of the accumulator, so a shipped
// partial result merges to the same bits as one never shipped. (Version 1
// held rounded float64 values; this build refuses it.) The decoder checks
// the magic, version, K, the exact length, the checksum, that every value
// is within what N rows in [−1, 1] can give (|Σ q| ≤ N, |Σ q q| ≤ N), that
// every diagonal entry is non-negative, and every value zero when N is zero.
const (
	magic        = "DPSS"
	version      = 2
	headerSize   = 20
	checksumSize = 4
	valueSize    = 24
	// MaxK is the largest row width the binary encoding accepts. It bounds
	// what a hostile message can make the decoder allocate: the totals of a
	// decoded accumulator take the message's size again (about 200 MB at
	// K = MaxK); the buffers of AddRows are allocated only if rows are added.
	MaxK = 1 << 12
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every UnmarshalBinary error about malformed input.
var ErrCorrupt = errors.New("suffstat: corrupt partial result")

func encodedSize(k int) int {
	return headerSize + valueSize*(k+k*(k+1)/2) + checksumSize
}

func appendAcc(b []byte, a *acc) []byte {
	for _, w := range a {
		b = binary.LittleEndian.AppendUint64(b, w)
	}
	return b
}

// shifted returns v·2^s as an acc, for v ≥ 0 and s < 128.
func shifted(v int64, s uint) acc {
	var a acc
	if s >= 64 {
		a[1] = uint64(v) << (s - 64)
		a[2] = uint64(v) >> (128 - s)
		return a
	}
	a.addShifted(v, s)
	return a
}

// less reports whether the magnitudes a < b (both non-negative).
func less(a, b acc) bool {
	for w := 2; w >= 0; w-- {
		if a[w] != b[w] {
			return a[w] < b[w]
		}
	}
	return false
}

// MarshalBinary encodes the partial result (see the format above).
func (m *Moments) MarshalBinary() ([]byte, error) {
	if m.err != nil {
		return nil, m.err
	}
	if m.k < 1 {
		return nil, errors.New("suffstat: MarshalBinary: accumulator not created with New")
	}
	if m.k > MaxK {
		return nil, fmt.Errorf("suffstat: MarshalBinary: width %d exceeds %d", m.k, MaxK)
	}
	m.flush()
	if m.err != nil {
		return nil, m.err
	}
	b := make([]byte, 0, encodedSize(m.k))
	b = append(b, magic...)
	b = binary.LittleEndian.AppendUint16(b, version)
	b = binary.LittleEndian.AppendUint16(b, 0)
	b = binary.LittleEndian.AppendUint32(b, uint32(m.k))
	b = binary.LittleEndian.AppendUint64(b, uint64(m.n))
	for i := 0; i < m.k; i++ {
		b = appendAcc(b, &m.tot[tri(i, m.k)])
	}
	for i := 0; i < m.k; i++ {
		for j := i; j < m.k; j++ {
			b = appendAcc(b, &m.tot[tri(i, j)])
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// UnmarshalBinary replaces m with the decoded partial result. On error m is
// unchanged and the error wraps ErrCorrupt.
func (m *Moments) UnmarshalBinary(data []byte) error {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrCorrupt, fmt.Sprintf(format, args...))
	}
	if len(data) < headerSize+checksumSize {
		return bad("%d bytes is shorter than the %d-byte header", len(data), headerSize+checksumSize)
	}
	if string(data[:4]) != magic {
		return bad("magic %q, want %q", data[:4], magic)
	}
	if v := binary.LittleEndian.Uint16(data[4:]); v != version {
		return bad("version %d, this build reads version %d", v, version)
	}
	if r := binary.LittleEndian.Uint16(data[6:]); r != 0 {
		return bad("reserved field is %d, want 0", r)
	}
	k64 := binary.LittleEndian.Uint32(data[8:])
	if k64 < 1 || k64 > MaxK {
		return bad("width %d out of range [1,%d]", k64, MaxK)
	}
	k := int(k64)
	if want := encodedSize(k); len(data) != want {
		return bad("%d bytes, want %d for width %d", len(data), want, k)
	}
	body, sum := data[:len(data)-checksumSize], binary.LittleEndian.Uint32(data[len(data)-checksumSize:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return bad("checksum %08x, want %08x", got, sum)
	}
	n := int64(binary.LittleEndian.Uint64(data[12:]))
	if n < 0 {
		return bad("row count %d is negative", n)
	}
	out := newWithKernel(k, bestKernel())
	out.n = n
	out.tot[tri(k, k)] = shifted(n, 0)
	read := func(t int) acc {
		var a acc
		for w := range a {
			a[w] = binary.LittleEndian.Uint64(data[headerSize+valueSize*t+8*w:])
		}
		return a
	}
	sumMax, gramMax := shifted(n, fracBits), shifted(n, 2*fracBits)
	for i := 0; i < k; i++ {
		a := read(i)
		if less(sumMax, a.abs()) {
			return bad("sum %d exceeds what %d rows in [-1, 1] can give", i, n)
		}
		out.tot[tri(i, k)] = a
	}
	t := k
	for i := 0; i < k; i++ {
		for j := i; j < k; j++ {
			a := read(t)
			t++
			if less(gramMax, a.abs()) {
				return bad("entry (%d,%d) exceeds what %d rows in [-1, 1] can give", i, j, n)
			}
			if i == j && a.neg() {
				return bad("diagonal entry (%d,%d) is negative", i, i)
			}
			out.tot[tri(i, j)] = a
		}
	}
	if m.workers > 0 {
		out.workers = m.workers
	}
	*m = *out
	return nil
}
