// Package idx reads the IDX file format of MNIST and Fashion-MNIST: image
// arrays and label vectors, optionally gzip-compressed.
//
// # Format
//
// An IDX file is a big-endian header followed by the array's elements in
// row-major order:
//
//	bytes 0-1   zero
//	byte  2     element type: 0x08 uint8, 0x09 int8, 0x0B int16, 0x0C int32,
//	            0x0D float32, 0x0E float64
//	byte  3     number of dimensions d (1 to MaxDims)
//	then d      uint32 sizes, big-endian
//	then        prod(sizes) elements of the declared type, big-endian
//
// MNIST images are uint8 arrays of shape (n, 28, 28); labels are uint8
// vectors of length n.
//
// # Validation
//
// Decoding is strict: a bad magic, an unknown element type, a zero or
// oversized dimension, a product of sizes over Limits.MaxElements, a file
// shorter than its header promises and trailing bytes after the array are
// errors, each naming what was wrong. Memory is allocated as data arrives,
// never up front from the declared sizes, so a short file that claims a huge
// array costs only what it holds. Input is treated as gzip when it starts
// with the gzip magic (1f 8b), whatever its name.
package idx

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
)

// Type is an IDX element type (byte 2 of the magic).
type Type byte

// The element types of the IDX format.
const (
	Uint8   Type = 0x08
	Int8    Type = 0x09
	Int16   Type = 0x0B
	Int32   Type = 0x0C
	Float32 Type = 0x0D
	Float64 Type = 0x0E
)

// Size returns the element size in bytes, or 0 for an unknown type.
func (t Type) Size() int {
	switch t {
	case Uint8, Int8:
		return 1
	case Int16:
		return 2
	case Int32, Float32:
		return 4
	case Float64:
		return 8
	}
	return 0
}

func (t Type) String() string {
	switch t {
	case Uint8:
		return "uint8"
	case Int8:
		return "int8"
	case Int16:
		return "int16"
	case Int32:
		return "int32"
	case Float32:
		return "float32"
	case Float64:
		return "float64"
	}
	return fmt.Sprintf("unknown type 0x%02x", byte(t))
}

// MaxDims is the largest number of dimensions accepted.
const MaxDims = 8

// DefaultMaxElements bounds the number of elements of one array unless
// Limits says otherwise: 2^26 (67 million; the Fashion-MNIST training images
// have 47 million).
const DefaultMaxElements = 1 << 26

// Limits caps what a decode may allocate. The zero value means the defaults.
type Limits struct {
	// MaxElements is the largest product of the dimension sizes; ≤ 0 means
	// DefaultMaxElements.
	MaxElements int64
}

func (l Limits) maxElements() int64 {
	if l.MaxElements <= 0 {
		return DefaultMaxElements
	}
	return l.MaxElements
}

// Errors returned (wrapped) by the decoder; test with errors.Is.
var (
	ErrMagic     = errors.New("idx: bad magic: the first two bytes must be zero (not an IDX file?)")
	ErrType      = errors.New("idx: unknown element type")
	ErrDims      = errors.New("idx: bad dimensions")
	ErrTooLarge  = errors.New("idx: array larger than the limit")
	ErrTruncated = errors.New("idx: file shorter than its header declares (truncated?)")
	ErrTrailing  = errors.New("idx: trailing bytes after the array")
	ErrShape     = errors.New("idx: array has the wrong shape or type for its use")
)

// Array is one decoded IDX array: its element type, its dimension sizes and
// its elements converted to float64, row-major.
type Array struct {
	Type Type
	Dims []int
	Data []float64
}

// header reads the magic and dimensions and returns the element count.
func header(r io.Reader, lim Limits) (Type, []int, int64, error) {
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, 0, fmt.Errorf("%w: %d-byte magic missing", ErrTruncated, len(magic))
		}
		return 0, nil, 0, err
	}
	if magic[0] != 0 || magic[1] != 0 {
		return 0, nil, 0, fmt.Errorf("%w (got % x)", ErrMagic, magic[:2])
	}
	t := Type(magic[2])
	if t.Size() == 0 {
		return 0, nil, 0, fmt.Errorf("%w 0x%02x (want 0x08, 0x09, 0x0B, 0x0C, 0x0D or 0x0E)", ErrType, magic[2])
	}
	nd := int(magic[3])
	if nd < 1 || nd > MaxDims {
		return 0, nil, 0, fmt.Errorf("%w: %d dimensions (want 1 to %d)", ErrDims, nd, MaxDims)
	}
	raw := make([]byte, 4*nd)
	if _, err := io.ReadFull(r, raw); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return 0, nil, 0, fmt.Errorf("%w: %d dimension sizes declared, header ends early", ErrTruncated, nd)
		}
		return 0, nil, 0, err
	}
	max := lim.maxElements()
	dims := make([]int, nd)
	total := int64(1)
	for i := range dims {
		d := int64(binary.BigEndian.Uint32(raw[4*i:]))
		if d == 0 {
			return 0, nil, 0, fmt.Errorf("%w: dimension %d has size 0", ErrDims, i)
		}
		if d > max || total > max/d {
			return 0, nil, 0, fmt.Errorf("%w: sizes %s exceed %d elements", ErrTooLarge, dimsString(raw, nd), max)
		}
		total *= d
		dims[i] = int(d)
	}
	return t, dims, total, nil
}

func dimsString(raw []byte, nd int) string {
	var b bytes.Buffer
	for i := 0; i < nd; i++ {
		if i > 0 {
			b.WriteString("×")
		}
		fmt.Fprintf(&b, "%d", binary.BigEndian.Uint32(raw[4*i:]))
	}
	return b.String()
}

// readBody reads exactly n elements of size sz, growing the buffer as data
// arrives (never trusting n for a single allocation beyond one chunk), then
// checks that nothing follows.
func readBody(r io.Reader, n int64, sz int) ([]byte, error) {
	want := n * int64(sz)
	const chunk = 1 << 20
	buf := make([]byte, 0, min(want, chunk))
	for int64(len(buf)) < want {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, int(min(want-int64(len(buf)), int64(len(buf)))))
		}
		m, err := r.Read(buf[len(buf):min(int64(cap(buf)), want)])
		buf = buf[:len(buf)+m]
		if err != nil {
			if errors.Is(err, io.EOF) {
				if int64(len(buf)) < want {
					return nil, fmt.Errorf("%w: %d of %d data bytes present", ErrTruncated, len(buf), want)
				}
				break
			}
			return nil, err
		}
	}
	var one [1]byte
	for {
		m, err := r.Read(one[:])
		if m > 0 {
			return nil, fmt.Errorf("%w (the header declares %d data bytes)", ErrTrailing, want)
		}
		if errors.Is(err, io.EOF) {
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// maybeGunzip returns a reader of the decompressed stream when r starts
// with the gzip magic, else r itself (buffered).
func maybeGunzip(r io.Reader) (io.Reader, func() error, error) {
	br := bufio.NewReader(r)
	head, err := br.Peek(2)
	if err == nil && head[0] == 0x1f && head[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("idx: gzip: %w", err)
		}
		zr.Multistream(false)
		done := func() error {
			if err := zr.Close(); err != nil {
				return err
			}
			if _, err := br.Peek(1); !errors.Is(err, io.EOF) {
				if err != nil {
					return err
				}
				return fmt.Errorf("%w: data after the gzip stream", ErrTrailing)
			}
			return nil
		}
		return zr, done, nil
	}
	return br, func() error { return nil }, nil
}

// Decode reads one IDX array (gzip-compressed or not) from r. The whole
// stream must be the one array: trailing bytes are an error.
func Decode(r io.Reader, lim Limits) (*Array, error) {
	in, closeFn, err := maybeGunzip(r)
	if err != nil {
		return nil, err
	}
	t, dims, n, err := header(in, lim)
	if err != nil {
		return nil, err
	}
	body, err := readBody(in, n, t.Size())
	if err != nil {
		return nil, err
	}
	if err := closeFn(); err != nil {
		return nil, fmt.Errorf("idx: gzip: %w", err)
	}
	a := &Array{Type: t, Dims: dims, Data: make([]float64, n)}
	if err := convert(t, body, a.Data); err != nil {
		return nil, err
	}
	return a, nil
}

// convert decodes big-endian elements of type t into dst.
func convert(t Type, b []byte, dst []float64) error {
	switch t {
	case Uint8:
		for i := range dst {
			dst[i] = float64(b[i])
		}
	case Int8:
		for i := range dst {
			dst[i] = float64(int8(b[i]))
		}
	case Int16:
		for i := range dst {
			dst[i] = float64(int16(binary.BigEndian.Uint16(b[2*i:])))
		}
	case Int32:
		for i := range dst {
			dst[i] = float64(int32(binary.BigEndian.Uint32(b[4*i:])))
		}
	case Float32:
		for i := range dst {
			v := float64(math.Float32frombits(binary.BigEndian.Uint32(b[4*i:])))
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("idx: element %d is %v (not finite)", i, v)
			}
			dst[i] = v
		}
	case Float64:
		for i := range dst {
			v := math.Float64frombits(binary.BigEndian.Uint64(b[8*i:]))
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("idx: element %d is %v (not finite)", i, v)
			}
			dst[i] = v
		}
	}
	return nil
}

// Images is a stack of grey-scale images, each flattened row-major into one
// row of Pixels with values in [0, 1] (the uint8 value divided by 255).
type Images struct {
	N, Rows, Cols int
	Pixels        []float64 // N × (Rows·Cols), row-major
}

// Features returns the number of pixels per image (Rows·Cols).
func (im *Images) Features() int { return im.Rows * im.Cols }

// Row returns image i as a slice of Pixels (a view, not a copy).
func (im *Images) Row(i int) []float64 {
	d := im.Features()
	return im.Pixels[i*d : (i+1)*d]
}

// DecodeImages reads a uint8 IDX array of shape (n, rows, cols), or
// (n, features) which is read as rows = 1, and scales it to [0, 1].
func DecodeImages(r io.Reader, lim Limits) (*Images, error) {
	a, err := Decode(r, lim)
	if err != nil {
		return nil, err
	}
	if a.Type != Uint8 {
		return nil, fmt.Errorf("%w: images must be uint8, got %v", ErrShape, a.Type)
	}
	im := &Images{N: a.Dims[0], Pixels: a.Data}
	switch len(a.Dims) {
	case 3:
		im.Rows, im.Cols = a.Dims[1], a.Dims[2]
	case 2:
		im.Rows, im.Cols = 1, a.Dims[1]
	default:
		return nil, fmt.Errorf("%w: images need 2 or 3 dimensions (n, rows, cols), got %d", ErrShape, len(a.Dims))
	}
	for i, v := range im.Pixels {
		im.Pixels[i] = v / 255
	}
	return im, nil
}

// MaxLabel is the largest label value DecodeLabels accepts.
const MaxLabel = 255

// DecodeLabels reads a one-dimensional IDX array of integer labels in
// [0, MaxLabel].
func DecodeLabels(r io.Reader, lim Limits) ([]int, error) {
	a, err := Decode(r, lim)
	if err != nil {
		return nil, err
	}
	switch a.Type {
	case Uint8, Int8, Int16, Int32:
	default:
		return nil, fmt.Errorf("%w: labels must be an integer type, got %v", ErrShape, a.Type)
	}
	if len(a.Dims) != 1 {
		return nil, fmt.Errorf("%w: labels need 1 dimension, got %d", ErrShape, len(a.Dims))
	}
	out := make([]int, len(a.Data))
	for i, v := range a.Data {
		if v < 0 || v > MaxLabel {
			return nil, fmt.Errorf("%w: label %d is %v (want 0 to %d)", ErrShape, i, v, MaxLabel)
		}
		out[i] = int(v)
	}
	return out, nil
}

// ReadImages reads an image file (plain or gzip-compressed IDX).
func ReadImages(path string) (*Images, error) {
	var im *Images
	err := withFile(path, func(r io.Reader) (err error) {
		im, err = DecodeImages(r, Limits{})
		return err
	})
	return im, err
}

// ReadLabels reads a label file (plain or gzip-compressed IDX).
func ReadLabels(path string) ([]int, error) {
	var l []int
	err := withFile(path, func(r io.Reader) (err error) {
		l, err = DecodeLabels(r, Limits{})
		return err
	})
	return l, err
}

func withFile(path string, fn func(io.Reader) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return fmt.Errorf("%s: not a regular file", path)
	}
	if err := fn(f); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// Set is a labelled image set: Labels[i] is the class of image i.
type Set struct {
	Images *Images
	Labels []int
}

// ReadSet reads an image file and its label file and checks that they have
// the same number of entries.
func ReadSet(imagesPath, labelsPath string) (*Set, error) {
	im, err := ReadImages(imagesPath)
	if err != nil {
		return nil, err
	}
	l, err := ReadLabels(labelsPath)
	if err != nil {
		return nil, err
	}
	if len(l) != im.N {
		return nil, fmt.Errorf("idx: %s has %d images but %s has %d labels", imagesPath, im.N, labelsPath, len(l))
	}
	return &Set{Images: im, Labels: l}, nil
}
