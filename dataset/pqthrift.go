package dataset

import (
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"

	"github.com/parquet-go/parquet-go/format"
)

// A bounded scanner for the Thrift compact protocol, run over a Parquet
// footer or page header before the third-party decoder sees it. The decoder
// (parquet-go's encoding/thrift) sizes a slice by a list's declared length
// before reading its elements, allocates a binary field by its declared
// length before reading it (in page headers, read from a stream), and skips
// unknown nested structs recursively without a depth limit: a few crafted
// bytes would make it allocate gigabytes or exhaust the stack. The scanner
// walks the same bytes without allocating, and refuses
//
//   - a list, set or map that declares more elements than bytes remain (every
//     element takes at least one byte),
//   - a binary field longer than the bytes that remain,
//   - nesting deeper than thriftMaxDepth, an unknown type, a bad varint,
//
// and adds up what the decoder would allocate for the lists (declared
// elements × the Go size of the element), so that the caller can cap it.

// thriftMaxDepth bounds struct and container nesting. Parquet's own
// metadata nests about 6 deep.
const thriftMaxDepth = 64

// Compact protocol type codes.
const (
	tStop   = 0
	tTrue   = 1
	tFalse  = 2
	tByte   = 3
	tI16    = 4
	tI32    = 5
	tI64    = 6
	tDouble = 7
	tBinary = 8
	tList   = 9
	tSet    = 10
	tMap    = 11
	tStruct = 12
	tUUID   = 13
)

// errThriftShort reports that the scanned bytes ended inside the value: for
// a page header read through a window, the caller may widen the window.
var errThriftShort = errors.New("thrift: unexpected end of data")

// thriftShortError is an errThriftShort with a more precise message.
type thriftShortError struct{ msg string }

func (e *thriftShortError) Error() string        { return e.msg }
func (e *thriftShortError) Is(target error) bool { return target == errThriftShort }

// thriftStructWeight is the Go size of the largest struct parquet-go decodes
// a footer or page-header list into (format.ColumnChunk, which embeds its
// ColumnMetaData). Lists of structs are charged at this size: exact for the
// lists of column chunks that dominate a large footer, an overestimate for
// the small ones.
var thriftStructWeight = func() int64 {
	var m uintptr
	for _, v := range []any{format.ColumnChunk{}, format.RowGroup{}, format.SchemaElement{},
		format.KeyValue{}, format.ColumnOrder{}, format.SortingColumn{}, format.PageEncodingStats{},
		format.PageLocation{}, format.ColumnMetaData{}, format.PageHeader{}} {
		m = max(m, reflect.TypeOf(v).Size())
	}
	return int64(m)
}()

type thriftScanner struct {
	b     []byte
	i     int
	alloc int64 // bytes the decoder would allocate for lists, sets and maps
}

func (s *thriftScanner) remaining() int { return len(s.b) - s.i }

func (s *thriftScanner) byte() (byte, error) {
	if s.i >= len(s.b) {
		return 0, errThriftShort
	}
	c := s.b[s.i]
	s.i++
	return c, nil
}

func (s *thriftScanner) uvarint() (uint64, error) {
	v, n := binary.Uvarint(s.b[s.i:])
	switch {
	case n == 0:
		return 0, errThriftShort
	case n < 0:
		return 0, errors.New("thrift: varint overflows 64 bits")
	}
	s.i += n
	return v, nil
}

func (s *thriftScanner) skip(n uint64) error {
	if n > uint64(s.remaining()) {
		return errThriftShort
	}
	s.i += int(n)
	return nil
}

// count checks a declared element count against the remaining bytes: every
// element takes at least minBytes.
func (s *thriftScanner) count(what string, n uint64, minBytes int) error {
	if n > uint64(s.remaining()/minBytes) {
		if n > 1<<31-1 {
			return fmt.Errorf("thrift: %s declares %d elements", what, n)
		}
		// Could be a truncated window of a stream; the caller decides.
		return &thriftShortError{fmt.Sprintf("thrift: %s declares %d elements but only %d bytes remain", what, n, s.remaining())}
	}
	return nil
}

// weight is the Go size the decoder allocates per element of a container
// of compact type t.
func thriftElemWeight(t byte) int64 {
	switch t {
	case tTrue, tFalse, tByte:
		return 1
	case tI16:
		return 2
	case tI32:
		return 4
	case tI64, tDouble:
		return 8
	case tUUID:
		return 16
	case tBinary, tList, tSet:
		return 24
	case tMap:
		return 64
	case tStruct:
		return thriftStructWeight
	}
	return 64
}

// structBody scans fields up to and including the stop byte.
func (s *thriftScanner) structBody(depth int) error {
	if depth > thriftMaxDepth {
		return fmt.Errorf("thrift: nesting deeper than %d", thriftMaxDepth)
	}
	for {
		b, err := s.byte()
		if err != nil {
			return err
		}
		if b == tStop {
			return nil
		}
		t := b & 0xF
		if b>>4 == 0 { // long form: the field ID follows as a zigzag varint
			if _, err := s.uvarint(); err != nil {
				return err
			}
		}
		if t == tTrue || t == tFalse { // a bool field carries its value in the type
			continue
		}
		if err := s.value(t, depth); err != nil {
			return err
		}
	}
}

// value scans one value of compact type t (container elements: bools take a
// byte).
func (s *thriftScanner) value(t byte, depth int) error {
	switch t {
	case tTrue, tFalse, tByte:
		return s.skip(1)
	case tI16, tI32, tI64:
		_, err := s.uvarint()
		return err
	case tDouble:
		return s.skip(8)
	case tUUID:
		return s.skip(16)
	case tBinary:
		n, err := s.uvarint()
		if err != nil {
			return err
		}
		if n > 1<<31-1 {
			return fmt.Errorf("thrift: binary field of %d bytes", n)
		}
		return s.skip(n)
	case tList, tSet:
		h, err := s.byte()
		if err != nil {
			return err
		}
		n, et := uint64(h>>4), h&0xF
		if n == 15 {
			if n, err = s.uvarint(); err != nil {
				return err
			}
		}
		if err := s.count("list", n, 1); err != nil {
			return err
		}
		if depth+1 > thriftMaxDepth {
			return fmt.Errorf("thrift: nesting deeper than %d", thriftMaxDepth)
		}
		s.alloc += int64(n) * thriftElemWeight(et)
		for range n {
			if err := s.value(et, depth+1); err != nil {
				return err
			}
		}
		return nil
	case tMap:
		n, err := s.uvarint()
		if err != nil {
			return err
		}
		if n == 0 {
			return nil
		}
		kv, err := s.byte()
		if err != nil {
			return err
		}
		if err := s.count("map", n, 2); err != nil {
			return err
		}
		if depth+1 > thriftMaxDepth {
			return fmt.Errorf("thrift: nesting deeper than %d", thriftMaxDepth)
		}
		s.alloc += int64(n) * (thriftElemWeight(kv>>4) + thriftElemWeight(kv&0xF))
		for range n {
			if err := s.value(kv>>4, depth+1); err != nil {
				return err
			}
			if err := s.value(kv&0xF, depth+1); err != nil {
				return err
			}
		}
		return nil
	case tStruct:
		return s.structBody(depth + 1)
	}
	return fmt.Errorf("thrift: unknown type %d", t)
}

// scanThriftStruct scans one struct at the start of b and returns its length
// and the decoder's list allocations.
func scanThriftStruct(b []byte) (n int, alloc int64, err error) {
	s := thriftScanner{b: b}
	if err := s.structBody(0); err != nil {
		return s.i, s.alloc, err
	}
	return s.i, s.alloc, nil
}
