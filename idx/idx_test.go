package idx

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// encode builds an IDX file: type t, dims, and the raw element bytes.
func encode(t Type, dims []uint32, body []byte) []byte {
	b := []byte{0, 0, byte(t), byte(len(dims))}
	for _, d := range dims {
		b = binary.BigEndian.AppendUint32(b, d)
	}
	return append(b, body...)
}

func gz(t *testing.T, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := gzip.NewWriter(&buf)
	if _, err := w.Write(b); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestDecodeImagesAndLabels(t *testing.T) {
	// Two 2×3 images.
	pix := []byte{0, 255, 51, 102, 0, 0, 1, 2, 3, 4, 5, 255}
	file := encode(Uint8, []uint32{2, 2, 3}, pix)
	for name, in := range map[string][]byte{"plain": file, "gzip": gz(t, file)} {
		im, err := DecodeImages(bytes.NewReader(in), Limits{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if im.N != 2 || im.Rows != 2 || im.Cols != 3 || im.Features() != 6 {
			t.Fatalf("%s: shape %d %d %d", name, im.N, im.Rows, im.Cols)
		}
		for i, p := range pix {
			if im.Pixels[i] != float64(p)/255 {
				t.Fatalf("%s: pixel %d = %v", name, i, im.Pixels[i])
			}
		}
		if got := im.Row(1); got[5] != 1 || got[0] != 1.0/255 {
			t.Fatalf("%s: row 1 = %v", name, got)
		}
	}
	labels, err := DecodeLabels(bytes.NewReader(encode(Uint8, []uint32{3}, []byte{9, 0, 4})), Limits{})
	if err != nil || len(labels) != 3 || labels[0] != 9 || labels[2] != 4 {
		t.Fatalf("labels %v, %v", labels, err)
	}
}

func TestDecodeTypes(t *testing.T) {
	var body []byte
	body = binary.BigEndian.AppendUint16(body, uint16(0xFFFE)) // int16 −2
	body = binary.BigEndian.AppendUint16(body, 300)
	a, err := Decode(bytes.NewReader(encode(Int16, []uint32{2}, body)), Limits{})
	if err != nil || a.Data[0] != -2 || a.Data[1] != 300 {
		t.Fatalf("int16: %+v %v", a, err)
	}
	body = binary.BigEndian.AppendUint32(nil, math.Float32bits(1.5))
	a, err = Decode(bytes.NewReader(encode(Float32, []uint32{1}, body)), Limits{})
	if err != nil || a.Data[0] != 1.5 {
		t.Fatalf("float32: %+v %v", a, err)
	}
	body = binary.BigEndian.AppendUint64(nil, math.Float64bits(-0.25))
	body = binary.BigEndian.AppendUint32(body, 0xFFFFFFFF)
	a, err = Decode(bytes.NewReader(encode(Float64, []uint32{1}, body[:8])), Limits{})
	if err != nil || a.Data[0] != -0.25 {
		t.Fatalf("float64: %+v %v", a, err)
	}
	a, err = Decode(bytes.NewReader(encode(Int32, []uint32{1}, body[8:])), Limits{})
	if err != nil || a.Data[0] != -1 {
		t.Fatalf("int32: %+v %v", a, err)
	}
	a, err = Decode(bytes.NewReader(encode(Int8, []uint32{1}, []byte{0x80})), Limits{})
	if err != nil || a.Data[0] != -128 {
		t.Fatalf("int8: %+v %v", a, err)
	}
	nan := binary.BigEndian.AppendUint64(nil, math.Float64bits(math.NaN()))
	if _, err := Decode(bytes.NewReader(encode(Float64, []uint32{1}, nan)), Limits{}); err == nil {
		t.Fatal("NaN element accepted")
	}
}

func TestDecodeErrors(t *testing.T) {
	ok := encode(Uint8, []uint32{2, 2}, []byte{1, 2, 3, 4})
	cases := []struct {
		name string
		in   []byte
		lim  Limits
		want error
	}{
		{"empty", nil, Limits{}, ErrTruncated},
		{"short magic", []byte{0, 0}, Limits{}, ErrTruncated},
		{"bad magic", append([]byte{1}, ok[1:]...), Limits{}, ErrMagic},
		{"text file", []byte("label,x\n1,2\n"), Limits{}, ErrMagic},
		{"bad type", encode(Type(0x07), []uint32{1}, []byte{0}), Limits{}, ErrType},
		{"no dims", []byte{0, 0, 8, 0}, Limits{}, ErrDims},
		{"too many dims", []byte{0, 0, 8, 9}, Limits{}, ErrDims},
		{"header cut", ok[:6], Limits{}, ErrTruncated},
		{"zero dim", encode(Uint8, []uint32{2, 0}, nil), Limits{}, ErrDims},
		{"body cut", ok[:len(ok)-1], Limits{}, ErrTruncated},
		{"trailing", append(append([]byte{}, ok...), 0), Limits{}, ErrTrailing},
		{"over limit", ok, Limits{MaxElements: 3}, ErrTooLarge},
		{"huge claim", encode(Uint8, []uint32{1 << 31, 1 << 31, 1 << 31}, nil), Limits{}, ErrTooLarge},
		// Within the limit but far more than the file holds: allocation
		// follows the data, and the error is truncation.
		{"big claim short file", encode(Float64, []uint32{1 << 23}, []byte{1, 2, 3}), Limits{}, ErrTruncated},
	}
	for _, c := range cases {
		_, err := Decode(bytes.NewReader(c.in), c.lim)
		if !errors.Is(err, c.want) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
		}
	}
	// gzip with something after the stream.
	if _, err := Decode(bytes.NewReader(append(gz(t, ok), 0, 0)), Limits{}); !errors.Is(err, ErrTrailing) {
		t.Errorf("gzip trailing: %v", err)
	}
	// Corrupt gzip.
	bad := gz(t, ok)
	bad[len(bad)-5] ^= 0xFF
	if _, err := Decode(bytes.NewReader(bad), Limits{}); err == nil {
		t.Error("corrupt gzip accepted")
	}
	// Shape errors.
	if _, err := DecodeImages(bytes.NewReader(encode(Uint8, []uint32{4}, []byte{1, 2, 3, 4})), Limits{}); !errors.Is(err, ErrShape) {
		t.Errorf("1-D images: %v", err)
	}
	if _, err := DecodeImages(bytes.NewReader(encode(Int8, []uint32{1, 1}, []byte{1})), Limits{}); !errors.Is(err, ErrShape) {
		t.Errorf("int8 images: %v", err)
	}
	if _, err := DecodeLabels(bytes.NewReader(ok), Limits{}); !errors.Is(err, ErrShape) {
		t.Errorf("2-D labels: %v", err)
	}
	if _, err := DecodeLabels(bytes.NewReader(encode(Int8, []uint32{1}, []byte{0xFF})), Limits{}); !errors.Is(err, ErrShape) {
		t.Errorf("negative label: %v", err)
	}
}

func TestReadSetAndFashionMNISTDir(t *testing.T) {
	dir := t.TempDir()
	pix := make([]byte, 3*28*28)
	for i := range pix {
		pix[i] = byte(i)
	}
	write := func(name string, b []byte) {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("train-images-idx3-ubyte.gz", gz(t, encode(Uint8, []uint32{3, 28, 28}, pix)))
	write("train-labels-idx1-ubyte", encode(Uint8, []uint32{3}, []byte{0, 9, 5}))
	write("t10k-images-idx3-ubyte", encode(Uint8, []uint32{1, 28, 28}, pix[:784]))
	write("t10k-labels-idx1-ubyte.gz", gz(t, encode(Uint8, []uint32{2}, []byte{1, 2})))
	if _, _, err := FashionMNIST(dir); err == nil {
		t.Fatal("1 image with 2 labels accepted")
	}
	write("t10k-labels-idx1-ubyte.gz", gz(t, encode(Uint8, []uint32{1}, []byte{7})))
	train, test, err := FashionMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	if train.Images.N != 3 || test.Images.N != 1 || train.Labels[1] != 9 || test.Labels[0] != 7 {
		t.Fatalf("train %d test %d", train.Images.N, test.Images.N)
	}
	if _, _, err := FashionMNIST(t.TempDir()); !errors.Is(err, ErrNoFashionMNIST) {
		t.Fatalf("empty dir: %v", err)
	}
	if _, err := ReadImages(dir); err == nil {
		t.Fatal("directory read as a file")
	}
}

// TestDebianFashionMNIST reads the real files when the Debian package is
// installed.
func TestDebianFashionMNIST(t *testing.T) {
	if _, err := os.Stat(DebianFashionMNIST); err != nil {
		t.Skipf("Fashion-MNIST not installed at %s (apt-get install dataset-fashion-mnist): %v", DebianFashionMNIST, err)
	}
	if testing.Short() {
		t.Skip("reads 30 MB of gzip: skipped in -short mode")
	}
	train, test, err := FashionMNIST("")
	if err != nil {
		t.Fatal(err)
	}
	if train.Images.N != 60000 || test.Images.N != 10000 || train.Images.Features() != 784 {
		t.Fatalf("sizes %d %d %d", train.Images.N, test.Images.N, train.Images.Features())
	}
	var counts [10]int
	for _, l := range train.Labels {
		counts[l]++
	}
	for c, n := range counts {
		if n != 6000 {
			t.Fatalf("class %d has %d training images, want 6000", c, n)
		}
	}
}
