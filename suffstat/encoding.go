package suffstat

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
)

// Binary encoding of a partial result (version 1), all little-endian:
//
//	offset  size  field
//	0       4     magic "DPSS"
//	4       2     version (1)
//	6       2     reserved, 0
//	8       4     K (1 ≤ K ≤ MaxK)
//	12      8     N (≥ 0)
//	20      8·K   Σ z
//	...     8·K(K+1)/2  upper triangle of Σ z zᵀ, row by row (i ≤ j)
//	end-4   4     CRC-32C (Castagnoli) of everything before it
//
// The decoder checks the magic, version, K, the exact length, the checksum
// that every value is finite, every diagonal entry non-negative, and every
// value zero when N is zero.
const (
	magic        = "DPSS"
	version      = 1
	headerSize   = 20
	checksumSize = 4
	// MaxK is the largest row width the binary encoding accepts. It bounds
	// what a hostile message can make the decoder allocate (about 400 MB,
	// six times the message, at K = MaxK).
	MaxK = 1 << 12
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// ErrCorrupt is wrapped by every UnmarshalBinary error about malformed input.
var ErrCorrupt = errors.New("suffstat: corrupt partial result")

func encodedSize(k int) int {
	return headerSize + 8*(k+k*(k+1)/2) + checksumSize
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
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(m.value(i, m.k)))
	}
	for i := 0; i < m.k; i++ {
		for j := i; j < m.k; j++ {
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(m.value(i, j)))
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
	vals := make([]float64, k+k*(k+1)/2)
	for t := range vals {
		v := math.Float64frombits(binary.LittleEndian.Uint64(data[headerSize+8*t:]))
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return bad("value %d is %v", t, v)
		}
		vals[t] = v
	}
	if n == 0 {
		for t, v := range vals {
			if v != 0 {
				return bad("no rows but value %d is %v", t, v)
			}
		}
	}
	out := newWithKernel(k, bestKernel())
	out.n = n
	for i := 0; i < k; i++ {
		out.tot[k*out.ldc+i] = vals[i]
	}
	out.tot[k*out.ldc+k] = float64(n)
	t := k
	for i := 0; i < k; i++ {
		for j := i; j < k; j++ {
			if i == j && vals[t] < 0 {
				return bad("diagonal entry (%d,%d) is negative: %v", i, i, vals[t])
			}
			out.tot[j*out.ldc+i] = vals[t]
			t++
		}
	}
	if m.workers > 0 {
		out.workers = m.workers
	}
	*m = *out
	return nil
}
