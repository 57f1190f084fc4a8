package dataset

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/dplearn/dplearn/schema"
)

type pqRec struct {
	A float64  `parquet:"a"`
	B string   `parquet:"b"`
	Y *float64 `parquet:"y,optional"`
	N int32    `parquet:"n"`
}

func writeParquet(t testing.TB, name string, recs []pqRec) string {
	t.Helper()
	var b bytes.Buffer
	if err := parquet.Write(&b, recs, parquet.PageBufferSize(256)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func f64(v float64) *float64 { return &v }

func TestParquet(t *testing.T) {
	s := mustSchema(t, testSchema)
	recs := []pqRec{{1, "u", f64(2), 0}, {3, "v", f64(-1), 1}, {5, "w", f64(4), 2}, {7, "v", f64(0), 3}, {2.5, "u", f64(-20), 4}}
	path := writeParquet(t, "d.parquet", recs)
	want := encodeRecords(t, s, []string{"a", "b", "y"}, [][]string{{"1", "u", "2"}, {"3", "v", "-1"}, {"5", "w", "4"}, {"7", "v", "0"}, {"2.5", "u", "-20"}})
	tab, sum, err := Load(context.Background(), path, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Rows != 5 || len(tab.Rows) != len(want) {
		t.Fatalf("rows %d, values %d", sum.Rows, len(tab.Rows))
	}
	for i := range want {
		if tab.Rows[i] != want[i] {
			t.Fatalf("value %d: %v, want %v", i, tab.Rows[i], want[i])
		}
	}
	m, _, err := Moments(context.Background(), path, s, Options{})
	if err != nil || m.N() != 5 {
		t.Fatalf("Moments: %v", err)
	}

	// A null target is a missing value at row 2, column 3.
	recs[1].Y = nil
	path = writeParquet(t, "null.parquet", recs)
	_, _, err = Moments(context.Background(), path, s, Options{})
	if !errors.Is(err, schema.ErrMissingValue) || !strings.Contains(err.Error(), "null.parquet:2:3:") {
		t.Fatalf("null: err = %v", err)
	}
	_, sum, err = Moments(context.Background(), path, s, Options{SkipBadRows: true})
	if err != nil || sum.Skipped != 1 || sum.Rows != 4 {
		t.Fatalf("null, skip: %v %+v", err, sum)
	}
}

func TestParquetMalformed(t *testing.T) {
	s := mustSchema(t, testSchema)
	var recs []pqRec
	for i := 0; i < 2000; i++ {
		recs = append(recs, pqRec{float64(i % 10), "v", f64(1), int32(i)})
	}
	good, err := os.ReadFile(writeParquet(t, "g.parquet", recs))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"magic only", []byte("PAR1")},
		{"truncated footer", good[:len(good)-10]},
		{"truncated half", good[:len(good)/2]},
		{"garbage", bytes.Repeat([]byte("PAR1xyz"), 100)},
		{"corrupt middle", func() []byte {
			b := bytes.Clone(good)
			for i := len(b) / 4; i < len(b)/2; i++ {
				b[i] ^= 0x5a
			}
			return b
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.parquet")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, _, err := Moments(context.Background(), path, s, Options{}); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// FuzzReadParquet edits valid Parquet files: the reader must return an
// error or rows, never panic, and never exceed its limits' work.
//
// The input is not the file but a base file (one of parquetFuzzBases, by
// index) and a short list of edits (applyParquetEdits): set a byte, insert
// or delete bytes, or write a varint, at a position counted from the start
// or from the end, the footer length being kept consistent. Inputs stay a
// few dozen bytes, which matters: Go minimizes every input that finds new
// coverage before it counts further executions, for up to
// -fuzzminimizetime (60 s) and with a number of attempts quadratic in the
// input's length, so mutating whole files of a few kilobytes spent nearly
// all the fuzzing time minimizing (0.3 reported executions per second).
// The edits reach the footer's and the page headers' sizes and counts
// directly. Limits are tightened so that each execution stays cheap; the
// defaults are tested in TestParquetHostileFilesAreRefused.
func FuzzReadParquet(f *testing.F) {
	bases := parquetFuzzBases(f)
	for i := range bases {
		f.Add(uint8(i), []byte{})
	}
	f.Add(uint8(0), []byte{3, 0xF0, 0xFF, 0, 0, 0, 4})             // a varint near the end of the footer
	f.Add(uint8(1), []byte{0, 4, 0, 0xFF, 1, 0x80, 0x90, 2, 1, 0}) // set, insert
	f.Add(uint8(2), []byte{2, 0x00, 0x81, 16})                     // delete in the footer
	s, err := schema.Parse([]byte(testSchema))
	if err != nil {
		f.Fatal(err)
	}
	lim := ParquetLimits{MaxPageBytes: 1 << 20, MaxPageValues: 1 << 16, MaxRowGroupMemory: 16 << 20, MaxExpansion: 64, MaxMetadataBytes: 4 << 20}
	f.Fuzz(func(t *testing.T, base uint8, edits []byte) {
		if len(edits) > 64 {
			return // a dozen edits suffice; longer inputs only slow minimization
		}
		data := applyParquetEdits(bases[int(base)%len(bases)], edits)
		path := filepath.Join(t.TempDir(), "f.parquet")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		m, sum, err := Moments(context.Background(), path, s, Options{SkipBadRows: true, Parquet: lim})
		if err == nil && (m.N() != sum.Rows || sum.Rows == 0) {
			t.Fatalf("N %d, rows %d", m.N(), sum.Rows)
		}
	})
}

// parquetFuzzBases are small valid files covering the codecs, page versions
// and encodings the writer offers.
func parquetFuzzBases(t testing.TB) [][]byte {
	var recs []pqRec
	for i := 0; i < 40; i++ {
		var y *float64
		if i%9 != 4 {
			y = f64(float64(i%7 - 3))
		}
		recs = append(recs, pqRec{float64(i % 10), []string{"u", "v", "w"}[i%3], y, int32(i)})
	}
	write := func(opts ...parquet.WriterOption) []byte {
		var b bytes.Buffer
		w := parquet.NewGenericWriter[pqRec](&b, append([]parquet.WriterOption{parquet.PageBufferSize(256), parquet.MaxRowsPerRowGroup(25)}, opts...)...)
		if _, err := w.Write(recs); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	return [][]byte{
		write(),
		write(parquet.Compression(&parquet.Snappy), parquet.DataPageVersion(2),
			parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.RLEDictionary), parquet.DefaultEncodingFor(parquet.Double, &parquet.RLEDictionary)),
		write(parquet.Compression(&parquet.Gzip), parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.DeltaByteArray),
			parquet.DefaultEncodingFor(parquet.Int32, &parquet.DeltaBinaryPacked)),
		write(parquet.Compression(&parquet.Zstd), parquet.DataPageVersion(2), parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.DeltaLengthByteArray)),
		write(parquet.Compression(&parquet.Lz4Raw), parquet.DefaultEncodingFor(parquet.Double, &parquet.ByteStreamSplit)),
		validCraft(t),
	}
}

// applyParquetEdits applies edits to a copy of base. Each edit is an opcode
// byte, a 2-byte little-endian position p (counted from the end if its top
// bit is set, and taken modulo the length), and operands:
//
//	op%4 == 0: set the byte at p to the next byte
//	op%4 == 1: insert the next n bytes at p (n = the next byte)
//	op%4 == 2: delete n bytes at p (n = the next byte)
//	op%4 == 3: replace the byte at p by the uvarint of the next 4 bytes (LE)
//
// Unless an edit set a byte of the footer length itself, the length is
// rewritten to cover the (edited) footer.
func applyParquetEdits(base, edits []byte) []byte {
	b := bytes.Clone(base)
	fs := len(b) - 8 - int(binary.LittleEndian.Uint32(b[len(b)-8:])) // footer start
	keepLen := true
	for len(edits) >= 3 && len(b) > 0 {
		op := edits[0]
		p := int(binary.LittleEndian.Uint16(edits[1:]))
		edits = edits[3:]
		if p&0x8000 != 0 {
			p = len(b) - 1 - (p & 0x7fff)
		}
		p = ((p % len(b)) + len(b)) % len(b)
		fe := len(b) - 8 // footer end
		shift := func(at, delta int) {
			if at < fs {
				fs += delta
			}
		}
		switch op % 4 {
		case 0:
			if len(edits) < 1 {
				return b
			}
			b[p] = edits[0]
			edits = edits[1:]
			if p >= fe && p < fe+4 {
				keepLen = false
			}
		case 1:
			if len(edits) < 1 {
				return b
			}
			n := min(int(edits[0]), len(edits)-1)
			ins := edits[1 : 1+n]
			edits = edits[1+n:]
			b = append(b[:p], append(bytes.Clone(ins), b[p:]...)...)
			shift(p, n)
		case 2:
			if len(edits) < 1 {
				return b
			}
			n := min(int(edits[0]), len(b)-p)
			edits = edits[1:]
			b = append(b[:p], b[p+n:]...)
			shift(p, -n)
		case 3:
			if len(edits) < 4 {
				return b
			}
			v := binary.AppendUvarint(nil, uint64(binary.LittleEndian.Uint32(edits)))
			edits = edits[4:]
			b = append(b[:p], append(v, b[p+1:]...)...)
			shift(p, len(v)-1)
			if p >= fe && p < fe+4 {
				keepLen = false
			}
		}
	}
	if keepLen && len(b) >= 8 && fs >= 0 && fs <= len(b)-8 {
		binary.LittleEndian.PutUint32(b[len(b)-8:], uint32(len(b)-8-fs))
	}
	return b
}

// TestParquetErrorShowsDecimal: a float value the encoder rejects is shown
// in decimal, not in the hex form it travelled in.
func TestParquetErrorShowsDecimal(t *testing.T) {
	s := mustSchema(t, `{"target": {"name": "y", "range": [-10, 10]},
	 "features": [{"name": "a", "transform": "log", "range": [0, 3]}, {"name": "b", "categories": ["u", "v"]}]}`)
	path := writeParquet(t, "neg.parquet", []pqRec{{1.5, "u", f64(1), 0}, {-2.5, "v", f64(1), 1}})
	_, _, err := Moments(context.Background(), path, s, Options{})
	if err == nil || !strings.Contains(err.Error(), `neg.parquet:2:1: column "a": value "-2.5"`) {
		t.Fatalf("err = %v", err)
	}
}
