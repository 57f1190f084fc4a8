package dataset

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/compress"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Crafted files: the footer and page headers are written field by field, so
// that a test can put any value in any size or count.

type craftPage struct {
	hdr  format.PageHeader
	data []byte
	raw  []byte // if set, the whole page (header and data) as is
}

type craftCol struct {
	name     string
	typ      format.Type
	optional bool
	codec    format.CompressionCodec
	pages    []craftPage
}

const craftSchema = `{"target": {"name": "y", "range": [-10, 10]}, "features": [{"name": "a", "range": [0, 10]}]}`

func craftParquet(t testing.TB, rows int64, cols []craftCol) []byte {
	t.Helper()
	tp := new(thrift.CompactProtocol)
	out := []byte("PAR1")
	md := format.FileMetaData{Version: 1, NumRows: rows,
		Schema: []format.SchemaElement{{Name: "schema", NumChildren: thrift.New(int32(len(cols)))}}}
	rg := format.RowGroup{NumRows: rows}
	for _, c := range cols {
		rep := format.Required
		if c.optional {
			rep = format.Optional
		}
		md.Schema = append(md.Schema, format.SchemaElement{Name: c.name, Type: thrift.New(c.typ), RepetitionType: thrift.New(rep)})
		start := int64(len(out))
		for _, p := range c.pages {
			if p.raw != nil {
				out = append(out, p.raw...)
				continue
			}
			h, err := thrift.Marshal(tp, &p.hdr)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, h...)
			out = append(out, p.data...)
		}
		n := int64(len(out)) - start
		rg.Columns = append(rg.Columns, format.ColumnChunk{FileOffset: start, MetaData: format.ColumnMetaData{
			Type: c.typ, Encoding: []format.Encoding{format.Plain, format.RLE}, PathInSchema: []string{c.name},
			Codec: c.codec, NumValues: rows, TotalUncompressedSize: n, TotalCompressedSize: n, DataPageOffset: start}})
		rg.TotalByteSize += n
	}
	md.RowGroups = []format.RowGroup{rg}
	footer, err := thrift.Marshal(tp, &md)
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, footer...)
	out = binary.LittleEndian.AppendUint32(out, uint32(len(footer)))
	return append(out, "PAR1"...)
}

func plainDoubles(vs ...float64) []byte {
	var b []byte
	for _, v := range vs {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// dataPage is a v1 data page; levels (optional columns) are prepended with
// their 4-byte length.
func dataPage(n int32, enc format.Encoding, levels, values []byte) craftPage {
	var data []byte
	if levels != nil {
		data = binary.LittleEndian.AppendUint32(nil, uint32(len(levels)))
		data = append(data, levels...)
	}
	data = append(data, values...)
	return craftPage{data: data, hdr: format.PageHeader{Type: format.DataPage,
		UncompressedPageSize: int32(len(data)), CompressedPageSize: int32(len(data)),
		DataPageHeader: thrift.New(format.DataPageHeader{NumValues: n, Encoding: enc,
			DefinitionLevelEncoding: format.RLE, RepetitionLevelEncoding: format.RLE})}}
}

// dictPage is a PLAIN dictionary page of 8-byte values.
func dictPage(values []byte) craftPage {
	return craftPage{data: values, hdr: format.PageHeader{Type: format.DictionaryPage,
		UncompressedPageSize: int32(len(values)), CompressedPageSize: int32(len(values)),
		DictionaryPageHeader: thrift.New(format.DictionaryPageHeader{NumValues: int32(len(values) / 8), Encoding: format.Plain})}}
}

// rleRun is one RLE run of count copies of a 1-bit value.
func rleRun(count uint64, v byte) []byte { return append(binary.AppendUvarint(nil, count<<1), v) }

// validCraft is a correct 3-row file: a required, y optional with one null.
func validCraft(t testing.TB) []byte {
	return craftParquet(t, 3, []craftCol{
		{name: "a", typ: format.Double, pages: []craftPage{dataPage(3, format.Plain, nil, plainDoubles(1, 2, 3))}},
		{name: "y", typ: format.Double, optional: true, pages: []craftPage{
			dataPage(3, format.Plain, append(rleRun(2, 1), rleRun(1, 0)...), plainDoubles(-1, 5))}},
	})
}

func loadBytes(t testing.TB, data []byte, opt Options) (*Table, Summary, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "f.parquet")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	s := mustSchema(t, craftSchema)
	return Load(context.Background(), path, s, opt)
}

func TestCraftedParquetIsValid(t *testing.T) {
	tab, sum, err := loadBytes(t, validCraft(t), Options{SkipBadRows: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Rows != 2 || sum.Skipped != 1 {
		t.Fatalf("rows %d skipped %d, want 2 and 1 (the null target)", sum.Rows, sum.Skipped)
	}
	_ = tab
}

// Each hostile file is refused quickly, with an error naming the limit or
// the inconsistency, where the decoder alone would have allocated the
// amount in the comment (or, for LZ4_RAW, looped allocating).
func TestParquetHostileFilesAreRefused(t *testing.T) {
	a := craftCol{name: "a", typ: format.Double, pages: []craftPage{dataPage(3, format.Plain, nil, plainDoubles(1, 2, 3))}}
	yWith := func(p craftPage) craftCol {
		return craftCol{name: "y", typ: format.Double, optional: true, pages: []craftPage{p}}
	}
	bomb := func() []byte { // 64 MiB of zeros, gzip: about 64 KiB
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(make([]byte, 64<<20))
		w.Close()
		return b.Bytes()
	}()
	smallGz := func() []byte { // a valid page body for y, gzipped
		var b bytes.Buffer
		w := gzip.NewWriter(&b)
		w.Write(dataPage(3, format.Plain, rleRun(3, 1), plainDoubles(1, 2, 3)).data)
		w.Close()
		return b.Bytes()
	}()
	gzPage := func(declared int32, data []byte) craftPage {
		return craftPage{data: data, hdr: format.PageHeader{Type: format.DataPage,
			UncompressedPageSize: declared, CompressedPageSize: int32(len(data)),
			DataPageHeader: thrift.New(format.DataPageHeader{NumValues: 3, Encoding: format.Plain,
				DefinitionLevelEncoding: format.RLE, RepetitionLevelEncoding: format.RLE})}}
	}
	statsHeader := func() []byte { // a page header whose statistics claim a 1 GiB binary
		p := dataPage(3, format.Plain, rleRun(3, 1), plainDoubles(1, 2, 3))
		mv := bytes.Repeat([]byte("X"), 43)
		p.hdr.DataPageHeader.V.Statistics.MaxValue = mv
		h, _ := thrift.Marshal(new(thrift.CompactProtocol), &p.hdr)
		i := bytes.Index(h, append([]byte{byte(len(mv))}, mv[:4]...))
		patched := append(append(append([]byte{}, h[:i]...), binary.AppendUvarint(nil, 1<<30)...), h[i+1:]...)
		return append(patched, p.data...)
	}()
	deepFooter := func() []byte { // a key-value list whose struct nests 10,000 deep
		b := validCraft(t)
		n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
		f := bytes.Clone(b[len(b)-8-n : len(b)-8])
		f = f[:len(f)-1]                // drop FileMetaData's stop byte
		f = append(f, 0x09, 0x0a, 0x1c) // field 5 (long form), a list of one struct
		for range 10000 {
			f = append(f, 0x1c) // field +1, struct
		}
		f = append(f, bytes.Repeat([]byte{0}, 10002)...)
		out := append(bytes.Clone(b[:len(b)-8-n]), f...)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(f)))
		return append(out, "PAR1"...)
	}()
	footerList := func() []byte { // the schema list declares 2^26 elements: 6 GiB, 38 s before
		b := validCraft(t)
		n := int(binary.LittleEndian.Uint32(b[len(b)-8:]))
		f := b[len(b)-8-n : len(b)-8]
		i := bytes.IndexByte(f, 0x19)
		nf := append(append(append([]byte{}, f[:i+1]...), 0xFC, 0x80, 0x80, 0x80, 0x20), f[i+2:]...)
		out := append(bytes.Clone(b[:len(b)-8-n]), nf...)
		out = binary.LittleEndian.AppendUint32(out, uint32(len(nf)))
		return append(out, "PAR1"...)
	}()
	outside := validCraft(t)
	{ // move column a's chunk past the footer
		n := int(binary.LittleEndian.Uint32(outside[len(outside)-8:]))
		var md format.FileMetaData
		if err := thrift.Unmarshal(new(thrift.CompactProtocol), outside[len(outside)-8-n:len(outside)-8], &md); err != nil {
			t.Fatal(err)
		}
		md.RowGroups[0].Columns[0].MetaData.DataPageOffset = int64(len(outside))
		f, _ := thrift.Marshal(new(thrift.CompactProtocol), &md)
		outside = append(bytes.Clone(outside[:len(outside)-8-n]), f...)
		outside = binary.LittleEndian.AppendUint32(outside, uint32(len(f)))
		outside = append(outside, "PAR1"...)
	}

	for _, tc := range []struct {
		name string
		data []byte
		opt  ParquetLimits
		want []string
	}{
		{"footer list length (6 GiB)", footerList, ParquetLimits{}, []string{"malformed", "list declares 67108864 elements"}},
		{"footer nesting", deepFooter, ParquetLimits{}, []string{"malformed", "nesting deeper than 64"}},
		{"chunk outside the data", outside, ParquetLimits{}, []string{"malformed", "outside the column data"}},
		{"footer length limit", validCraft(t), ParquetLimits{MaxFooterBytes: 50}, []string{"MaxFooterBytes"}},
		{"metadata memory limit", validCraft(t), ParquetLimits{MaxMetadataBytes: 1000}, []string{"MaxMetadataBytes"}},
		{"page value count (1 GiB of levels)", craftParquet(t, 3, []craftCol{a,
			yWith(dataPage(1<<30, format.Plain, rleRun(3, 1), plainDoubles(1, 2, 3)))}), ParquetLimits{}, []string{"MaxPageValues"}},
		{"RLE run length (1 GiB of levels)", craftParquet(t, 3, []craftCol{a,
			yWith(dataPage(3, format.Plain, rleRun(1<<30, 1), plainDoubles(1, 2, 3)))}), ParquetLimits{}, []string{"malformed", "definition levels: runs declare"}},
		{"dictionary index runs (4 GiB)", craftParquet(t, 3, []craftCol{a, {name: "y", typ: format.Double, optional: true, pages: []craftPage{
			dictPage(plainDoubles(4)), dataPage(3, format.RLEDictionary, rleRun(3, 1), append([]byte{1}, rleRun(1<<30, 0)...))}}}),
			ParquetLimits{}, []string{"malformed", "dictionary indexes: runs declare"}},
		{"delta total (4 GiB)", craftParquet(t, 3, []craftCol{a, {name: "y", typ: format.Int32, optional: true, pages: []craftPage{
			dataPage(3, format.DeltaBinaryPacked, rleRun(3, 1), []byte{0x80, 0x01, 0x04, 0xFF, 0xFF, 0xFF, 0xFF, 0x07, 0x00})}}}),
			ParquetLimits{}, []string{"malformed", "2147483647 values declared for a page of 3"}},
		{"page header binary (1 GiB)", craftParquet(t, 3, []craftCol{a, {name: "y", typ: format.Double, optional: true,
			pages: []craftPage{{raw: statsHeader}}}}), ParquetLimits{}, []string{"malformed", "page header"}},
		{"gzip bomb", craftParquet(t, 3, []craftCol{a, {name: "y", typ: format.Double, optional: true, codec: format.Gzip,
			pages: []craftPage{gzPage(1000, bomb)}}}), ParquetLimits{}, []string{"malformed", "decompresses to more than its declared 1000 bytes"}},
		{"declared expansion (300 MiB)", craftParquet(t, 3, []craftCol{a, {name: "y", typ: format.Double, optional: true, codec: format.Gzip,
			pages: []craftPage{gzPage(150<<20, smallGz), gzPage(150<<20, smallGz)}}}), ParquetLimits{}, []string{"MaxExpansion"}},
		{"corrupt LZ4_RAW (loops without end)", craftParquet(t, 3, []craftCol{a, {name: "y", typ: format.Double, optional: true, codec: format.Lz4Raw,
			pages: []craftPage{gzPage(40, []byte{0xF0, 0xFF, 0xFF, 0xFF, 0xFF, 1, 2, 3})}}}), ParquetLimits{}, []string{"malformed", "LZ4_RAW page does not decode"}},
		{"row group memory limit", validCraft(t), ParquetLimits{MaxRowGroupMemory: 64}, []string{"MaxRowGroupMemory"}},
		{"page size limit", validCraft(t), ParquetLimits{MaxPageBytes: 16}, []string{"MaxPageBytes"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if d := os.Getenv("ZZDUMP"); d != "" {
				os.WriteFile(filepath.Join(d, strings.NewReplacer(" ", "_", "(", "", ")", "").Replace(tc.name)), tc.data, 0o600)
			}
			t0 := time.Now()
			_, _, err := loadBytes(t, tc.data, Options{Parquet: tc.opt, SkipBadRows: true})
			if err == nil {
				t.Fatal("accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Fatalf("error %q does not mention %q", err, w)
				}
			}
			isLimit := strings.HasPrefix(tc.want[0], "Max")
			if isLimit && !errors.Is(err, ErrParquetLimit) || !isLimit && !errors.Is(err, ErrParquetMalformed) {
				t.Fatalf("error %q does not wrap the right sentinel", err)
			}
			if d := time.Since(t0); d > 2*time.Second {
				t.Fatalf("took %v", d)
			}
		})
	}
}

// The guard accepts what parquet-go writes with every codec, both page
// versions and every encoding it offers, and the rows are those of the
// plain file.
func TestParquetGuardAcceptsWriterVariants(t *testing.T) {
	type rec struct {
		A float64  `parquet:"a"`
		B string   `parquet:"b"`
		Y *float64 `parquet:"y,optional"`
		N int32    `parquet:"n"`
		F bool     `parquet:"f"`
	}
	var recs []rec
	for i := range 700 {
		var y *float64
		if i%7 != 3 {
			y = f64(float64(i%19) - 9)
		}
		recs = append(recs, rec{float64(i % 11), []string{"u", "v", "w"}[i%3], y, int32(i * 7), i%5 == 0})
	}
	s := mustSchema(t, testSchema)
	read := func(t *testing.T, opts ...parquet.WriterOption) []float64 {
		t.Helper()
		var b bytes.Buffer
		w := parquet.NewGenericWriter[rec](&b, append([]parquet.WriterOption{parquet.PageBufferSize(512), parquet.MaxRowsPerRowGroup(300)}, opts...)...)
		if _, err := w.Write(recs); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "v.parquet")
		if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		tab, sum, err := Load(context.Background(), path, s, Options{SkipBadRows: true})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Rows+sum.Skipped != int64(len(recs)) {
			t.Fatalf("%d rows + %d skipped of %d", sum.Rows, sum.Skipped, len(recs))
		}
		return tab.Rows
	}
	want := read(t)
	codecs := []compress.Codec{&parquet.Uncompressed, &parquet.Snappy, &parquet.Gzip, &parquet.Zstd, &parquet.Brotli, &parquet.Lz4Raw}
	encodings := []struct {
		name string
		opts []parquet.WriterOption
	}{
		{"plain", nil},
		{"dict", []parquet.WriterOption{parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.RLEDictionary), parquet.DefaultEncodingFor(parquet.Double, &parquet.RLEDictionary)}},
		{"delta", []parquet.WriterOption{parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.DeltaByteArray), parquet.DefaultEncodingFor(parquet.Int32, &parquet.DeltaBinaryPacked)}},
		{"dlba", []parquet.WriterOption{parquet.DefaultEncodingFor(parquet.ByteArray, &parquet.DeltaLengthByteArray), parquet.DefaultEncodingFor(parquet.Boolean, &parquet.RLE)}},
		{"split", []parquet.WriterOption{parquet.DefaultEncodingFor(parquet.Double, &parquet.ByteStreamSplit)}},
	}
	// Every codec with every encoding, the page version alternating (five
	// encodings: each pair meets both versions over two codecs).
	v := 1
	for _, codec := range codecs {
		for _, e := range encodings {
			v = 3 - v
			t.Run(fmt.Sprintf("%s/%s/v%d", codec, e.name, v), func(t *testing.T) {
				opts := append([]parquet.WriterOption{parquet.Compression(codec), parquet.DataPageVersion(v)}, e.opts...)
				if got := read(t, opts...); !equalRows(got, want) {
					t.Fatal("rows differ from the plain file's")
				}
			})
		}
	}
}
