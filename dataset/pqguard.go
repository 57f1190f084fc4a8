package dataset

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"

	"github.com/andybalholm/brotli"
	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/snappy"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/encoding/delta"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
	"github.com/pierrec/lz4/v4"
)

// ParquetLimits bound the memory and work a Parquet file can demand. The
// decoder underneath (parquet-go) trusts the sizes and counts written in the
// file: a list length in the footer, a page's sizes and value count, the run
// lengths of its RLE data, the totals of its delta-encoded blocks and the
// output of its compressed pages all size allocations before any data backs
// them, so a file of a few kilobytes could otherwise ask for gigabytes, and
// a corrupt LZ4_RAW page made it allocate without end. The reader therefore
// checks every such field against the file and against these limits before
// the decoder sees it — the footer when the file is opened, each row group's
// pages (headers, levels, dictionary indexes, delta headers, and the
// decompressed size of compressed pages) before its rows are read — and
// stops with an error naming the limit (ErrParquetLimit) or the
// inconsistency (ErrParquetMalformed).
//
// A zero field takes its default; a negative field removes that limit.
// The defaults admit every file a mainstream writer produces with its
// default settings, including wide tables and large row groups; raise a
// limit (the error says which) for a legitimate file that exceeds one.
//
// The limits bound memory and decompression, not the number of rows: a
// small file can validly describe billions of rows of a constant or missing
// value, and reading it takes time in proportion to the rows it describes.
type ParquetLimits struct {
	// MaxFooterBytes caps the file metadata (the Thrift footer).
	// Default 64 MiB.
	MaxFooterBytes int64
	// MaxMetadataBytes caps the memory the decoded footer needs, estimated
	// as the declared length of every list times the Go size of its
	// elements (at most the size of a column chunk's metadata, 560 bytes).
	// About 1 KiB per column chunk in practice. Default 1 GiB.
	MaxMetadataBytes int64
	// MaxPageBytes caps each page (data or dictionary): its compressed
	// size, its declared and actual uncompressed size, and, for delta
	// encoded strings, their decoded size. Default 256 MiB.
	MaxPageBytes int64
	// MaxPageValues caps the values (including nulls) one page declares,
	// and the entries of a dictionary. Default 16,777,216.
	MaxPageValues int64
	// MaxRowGroupMemory caps the memory for the pages of one row group
	// that are decoded at the same time (one per column), estimated per
	// column as its largest page: compressed + uncompressed size + decoded
	// strings + 16 bytes per value. Default 4 GiB.
	MaxRowGroupMemory int64
	// MaxExpansion caps the total uncompressed size of all pages at
	// MaxExpansion × the file size (but always admits MaxPageBytes), which
	// bounds the work of decompression bombs. Default 1000.
	MaxExpansion int64
}

// ErrParquetLimit is wrapped by errors for Parquet files that exceed a
// ParquetLimits limit; ErrParquetMalformed by errors for sizes or counts that
// contradict the file itself.
var (
	ErrParquetLimit     = errors.New("file exceeds a reader limit (dataset.ParquetLimits)")
	ErrParquetMalformed = errors.New("malformed file")
)

func (l ParquetLimits) withDefaults() ParquetLimits {
	def := func(v *int64, d int64) {
		switch {
		case *v == 0:
			*v = d
		case *v < 0:
			*v = math.MaxInt64
		}
	}
	def(&l.MaxFooterBytes, 64<<20)
	def(&l.MaxMetadataBytes, 1<<30)
	def(&l.MaxPageBytes, 256<<20)
	def(&l.MaxPageValues, 1<<24)
	def(&l.MaxRowGroupMemory, 4<<30)
	def(&l.MaxExpansion, 1000)
	return l
}

func limitErr(name string, got, limit int64, what string) error {
	return fmt.Errorf("%w: %s is %d, above ParquetLimits.%s = %d", ErrParquetLimit, what, got, name, limit)
}

func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrParquetMalformed, fmt.Sprintf(format, args...))
}

// pqGuard checks a Parquet file against its own structure and the limits.
type pqGuard struct {
	r        io.ReaderAt
	size     int64
	dataEnd  int64 // end of the column data: the footer starts here
	lim      ParquetLimits
	md       format.FileMetaData
	expanded int64 // uncompressed page bytes checked so far
	budget   int64 // max(MaxPageBytes, MaxExpansion × size)
	buf      []byte
	dec      decompressors
}

// newPQGuard reads and checks the frame and the footer: the magic numbers,
// the footer length against the file and MaxFooterBytes, the footer's Thrift
// structure (scanThriftStruct) and its list allocations against
// MaxMetadataBytes, and then the decoded metadata: a flat schema, and every
// column chunk inside the column data.
func newPQGuard(r io.ReaderAt, size int64, lim ParquetLimits) (*pqGuard, error) {
	lim = lim.withDefaults()
	if size < 12 {
		return nil, fmt.Errorf("file of %d bytes is too short (truncated?)", size)
	}
	var head [4]byte
	var tail [8]byte
	if _, err := r.ReadAt(head[:], 0); err != nil {
		return nil, err
	}
	if _, err := r.ReadAt(tail[:], size-8); err != nil {
		return nil, err
	}
	if string(head[:]) != "PAR1" || string(tail[4:]) != "PAR1" {
		return nil, errors.New("missing PAR1 magic at the start or end (not Parquet, or truncated)")
	}
	n := int64(binary.LittleEndian.Uint32(tail[:4]))
	if n > size-12 {
		return nil, fmt.Errorf("footer length %d exceeds the file size %d (corrupt or truncated)", n, size)
	}
	if n > lim.MaxFooterBytes {
		return nil, limitErr("MaxFooterBytes", n, lim.MaxFooterBytes, "footer length")
	}
	footer := make([]byte, n)
	if _, err := r.ReadAt(footer, size-8-n); err != nil {
		return nil, err
	}
	used, alloc, err := scanThriftStruct(footer)
	if err != nil {
		return nil, malformed("footer: %v", err)
	}
	if used != len(footer) {
		// parquet-go accepts trailing bytes only for signed (encrypted)
		// footers, which this reader does not support.
		return nil, malformed("footer: %d bytes after the metadata", len(footer)-used)
	}
	if alloc > lim.MaxMetadataBytes {
		return nil, limitErr("MaxMetadataBytes", alloc, lim.MaxMetadataBytes, "memory for the footer's lists (estimated)")
	}
	g := &pqGuard{r: r, size: size, dataEnd: size - 8 - n, lim: lim}
	g.budget = max(lim.MaxPageBytes, satMul(lim.MaxExpansion, size))
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), footer, &g.md); err != nil {
		return nil, malformed("footer: %v", err)
	}
	if err := g.checkMetadata(); err != nil {
		return nil, err
	}
	return g, nil
}

func satMul(a, b int64) int64 {
	if a <= 0 || b <= 0 {
		return 0
	}
	if a > math.MaxInt64/b {
		return math.MaxInt64
	}
	return a * b
}

func satAdd(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// checkMetadata checks the decoded footer: a flat schema (a root whose
// children are all leaves) and, in every row group, one chunk per leaf
// whose byte range lies within the column data.
func (g *pqGuard) checkMetadata() error {
	s := g.md.Schema
	if len(s) == 0 {
		return malformed("no schema")
	}
	if int64(s[0].NumChildren.V) != int64(len(s)-1) {
		return errors.New("nested or repeated columns: only flat tables are supported")
	}
	for _, e := range s[1:] {
		if e.NumChildren.V != 0 || e.RepetitionType.Valid && e.RepetitionType.V == format.Repeated {
			return fmt.Errorf("column %q is nested or repeated; only flat tables are supported", e.Name)
		}
	}
	leaves := len(s) - 1
	for i, rg := range g.md.RowGroups {
		if len(rg.Columns) != leaves {
			return malformed("row group %d has %d column chunks for %d columns", i, len(rg.Columns), leaves)
		}
		if rg.NumRows < 0 {
			return malformed("row group %d has %d rows", i, rg.NumRows)
		}
		for j, c := range rg.Columns {
			start, length := chunkRange(&c.MetaData)
			if start < 4 || length < 0 || start > g.dataEnd || length > g.dataEnd-start {
				return malformed("row group %d, column %d: chunk at byte %d of length %d lies outside the column data (bytes 4 to %d)",
					i, j+1, start, length, g.dataEnd)
			}
		}
	}
	return nil
}

// chunkRange is where parquet-go reads a column chunk's pages: from the
// dictionary page if there is one, else the first data page, for the
// chunk's total compressed size.
func chunkRange(m *format.ColumnMetaData) (start, length int64) {
	start = m.DataPageOffset
	if m.DictionaryPageOffset != 0 {
		start = m.DictionaryPageOffset
	}
	return start, m.TotalCompressedSize
}

// pqColumn is what the page checks need to know about a leaf column.
type pqColumn struct {
	name     string
	maxDef   int // 0 (required) or 1 (optional): the schema is flat
	physical format.Type
}

func (g *pqGuard) columns() []pqColumn {
	out := make([]pqColumn, 0, len(g.md.Schema)-1)
	for _, e := range g.md.Schema[1:] {
		c := pqColumn{name: e.Name, physical: e.Type.V}
		if e.RepetitionType.Valid && e.RepetitionType.V != format.Required {
			c.maxDef = 1
		}
		out = append(out, c)
	}
	return out
}

// checkRowGroup walks the pages of row group i, column by column, and
// checks each page header and, where the decoder would size an allocation
// from the page's contents, the contents.
func (g *pqGuard) checkRowGroup(i int) error {
	rg := &g.md.RowGroups[i]
	cols := g.columns()
	var peak int64
	for j := range rg.Columns {
		m := &rg.Columns[j].MetaData
		largest, err := g.checkChunk(m, cols[j], rg.NumRows)
		if err != nil {
			return fmt.Errorf("row group %d, column %q: %w", i, cols[j].name, err)
		}
		peak = satAdd(peak, largest)
	}
	if peak > g.lim.MaxRowGroupMemory {
		return limitErr("MaxRowGroupMemory", peak, g.lim.MaxRowGroupMemory, fmt.Sprintf("row group %d: memory for one page per column (estimated)", i))
	}
	return nil
}

// checkChunk checks the pages of one column chunk and returns the estimated
// memory of its largest page.
func (g *pqGuard) checkChunk(m *format.ColumnMetaData, col pqColumn, rows int64) (largest int64, err error) {
	start, length := chunkRange(m)
	end := start + length
	var values int64
	for off := start; off < end; {
		h, hlen, err := g.readPageHeader(off, end)
		if err != nil {
			return 0, fmt.Errorf("page at byte %d: %w", off, err)
		}
		cost, err := g.checkPage(h, off+int64(hlen), end, m.Codec, col)
		if err != nil {
			return 0, fmt.Errorf("page at byte %d: %w", off, err)
		}
		largest = max(largest, cost)
		switch h.Type {
		case format.DataPage:
			values += int64(h.DataPageHeader.V.NumValues)
		case format.DataPageV2:
			values += int64(h.DataPageHeaderV2.V.NumValues)
		}
		if values > rows {
			// A flat column has exactly one value (or null) per row.
			return 0, malformed("pages declare %d values, more than the row group's %d rows", values, rows)
		}
		off += int64(hlen) + int64(h.CompressedPageSize)
	}
	return largest, nil
}

// readPageHeader scans and decodes the page header at off; the page must
// end by end.
func (g *pqGuard) readPageHeader(off, end int64) (*format.PageHeader, int, error) {
	win := min(end-off, 1<<10)
	for {
		if int64(cap(g.buf)) < win {
			g.buf = make([]byte, win)
		}
		b := g.buf[:win]
		if _, err := g.r.ReadAt(b, off); err != nil {
			return nil, 0, err
		}
		n, _, err := scanThriftStruct(b)
		if errors.Is(err, errThriftShort) && win < end-off {
			if win >= g.lim.MaxPageBytes {
				return nil, 0, limitErr("MaxPageBytes", win, g.lim.MaxPageBytes, "page header length")
			}
			win = min(end-off, 8*win)
			continue
		}
		if err != nil {
			return nil, 0, malformed("page header: %v", err)
		}
		h := new(format.PageHeader)
		if err := thrift.Unmarshal(new(thrift.CompactProtocol), b[:n], h); err != nil {
			return nil, 0, malformed("page header: %v", err)
		}
		return h, n, nil
	}
}

// checkPage checks one page whose data starts at off, and returns its
// estimated decoding memory.
func (g *pqGuard) checkPage(h *format.PageHeader, off, end int64, codec format.CompressionCodec, col pqColumn) (int64, error) {
	csize, usize := int64(h.CompressedPageSize), int64(h.UncompressedPageSize)
	if csize < 0 || usize < 0 {
		return 0, malformed("negative page size (%d compressed, %d uncompressed)", csize, usize)
	}
	if csize > end-off {
		return 0, malformed("page of %d bytes runs past the end of its column chunk (%d bytes left)", csize, end-off)
	}
	if csize > g.lim.MaxPageBytes {
		return 0, limitErr("MaxPageBytes", csize, g.lim.MaxPageBytes, "compressed page size")
	}
	if usize > g.lim.MaxPageBytes {
		return 0, limitErr("MaxPageBytes", usize, g.lim.MaxPageBytes, "uncompressed page size")
	}
	grow := usize
	if codec == format.Uncompressed {
		grow = csize
	}
	g.expanded = satAdd(g.expanded, grow)
	if g.expanded > g.budget {
		return 0, limitErr("MaxExpansion", g.expanded, g.budget,
			fmt.Sprintf("total uncompressed size of the pages so far (allowed: the larger of MaxPageBytes and %d × the file's %d bytes)", g.lim.MaxExpansion, g.size))
	}

	var (
		numValues  int64
		encoding   format.Encoding
		levelsEnc  format.Encoding // v1 only
		v2         *format.DataPageHeaderV2
		compressed = codec != format.Uncompressed
	)
	switch h.Type {
	case format.DataPage:
		if !h.DataPageHeader.Valid {
			return 0, malformed("data page without its header")
		}
		d := &h.DataPageHeader.V
		numValues, encoding, levelsEnc = int64(d.NumValues), d.Encoding, d.DefinitionLevelEncoding
	case format.DataPageV2:
		if !h.DataPageHeaderV2.Valid {
			return 0, malformed("data page (v2) without its header")
		}
		v2 = &h.DataPageHeaderV2.V
		numValues, encoding = int64(v2.NumValues), v2.Encoding
		if v2.NumNulls < 0 || v2.NumRows < 0 || v2.DefinitionLevelsByteLength < 0 || v2.RepetitionLevelsByteLength < 0 {
			return 0, malformed("negative count in data page (v2) header")
		}
		if int64(v2.DefinitionLevelsByteLength)+int64(v2.RepetitionLevelsByteLength) > csize {
			return 0, malformed("data page (v2) levels of %d bytes in a page of %d", int64(v2.DefinitionLevelsByteLength)+int64(v2.RepetitionLevelsByteLength), csize)
		}
		compressed = compressed && (!v2.IsCompressed.Valid || v2.IsCompressed.V)
	case format.DictionaryPage:
		if !h.DictionaryPageHeader.Valid {
			return 0, malformed("dictionary page without its header")
		}
		numValues = int64(h.DictionaryPageHeader.V.NumValues)
	default:
		// Index pages and unknown types: the decoder refuses them without
		// reading them.
		return csize + usize, nil
	}
	if numValues < 0 {
		return 0, malformed("page declares %d values", numValues)
	}
	if numValues > g.lim.MaxPageValues {
		return 0, limitErr("MaxPageValues", numValues, g.lim.MaxPageValues, "values declared by one page")
	}
	cost := csize + usize + 16*numValues

	// The contents matter only where the decoder sizes something from them.
	levels := h.Type == format.DataPage && col.maxDef > 0 && levelsEnc == format.RLE ||
		v2 != nil && col.maxDef > 0 && v2.DefinitionLevelsByteLength > 0
	var valuesNeeded bool
	if h.Type != format.DictionaryPage {
		switch encoding {
		case format.PlainDictionary, format.RLEDictionary, format.RLE,
			format.DeltaBinaryPacked, format.DeltaLengthByteArray, format.DeltaByteArray:
			valuesNeeded = true
		}
	}
	if !compressed && !levels && !valuesNeeded {
		return cost, nil
	}
	page := make([]byte, csize)
	if _, err := g.r.ReadAt(page, off); err != nil {
		return 0, err
	}
	body := page
	if v2 != nil {
		rep, def := int64(v2.RepetitionLevelsByteLength), int64(v2.DefinitionLevelsByteLength)
		if levels {
			if err := checkRLE(page[rep:rep+def], 1, numValues, "definition levels"); err != nil {
				return 0, err
			}
		}
		body = page[rep+def:]
	}
	if compressed {
		var err error
		if body, err = g.dec.bounded(codec, body, usize, levels || valuesNeeded); err != nil {
			return 0, err
		}
	}
	if h.Type == format.DataPage && col.maxDef > 0 {
		// v1: the definition levels lead the (decompressed) page, with a
		// 4-byte length, whatever their encoding.
		if len(body) < 4 {
			return 0, malformed("data page too short for its definition levels")
		}
		n := int64(binary.LittleEndian.Uint32(body))
		if n > int64(len(body)-4) {
			return 0, malformed("definition levels of %d bytes in a page of %d", n, len(body)-4)
		}
		if levels {
			if err := checkRLE(body[4:4+n], 1, numValues, "definition levels"); err != nil {
				return 0, err
			}
		}
		body = body[4+n:]
	}
	if !valuesNeeded {
		return cost, nil
	}
	decoded, err := checkValues(body, encoding, col.physical, numValues)
	if err != nil {
		return 0, err
	}
	if decoded > g.lim.MaxPageBytes {
		return 0, limitErr("MaxPageBytes", decoded, g.lim.MaxPageBytes, "decoded size of the page's strings")
	}
	return cost + decoded, nil
}

// maxRLEValues is the most values the RLE runs of a page of n values may
// declare: n, rounded up by the padding of bit-packed groups of 8, with
// slack for writers that pad each group.
func maxRLEValues(n int64) int64 { return 2*n + 64 }

// checkRLE walks an RLE / bit-packed hybrid stream as parquet-go decodes it
// and checks that its runs declare no more than maxRLEValues(n) values (the
// decoder allocates for every declared value).
func checkRLE(b []byte, bitWidth int, n int64, what string) error {
	if bitWidth > 32 {
		return malformed("%s: bit width %d", what, bitWidth)
	}
	limit := maxRLEValues(n)
	var total int64
	for i := 0; i < len(b); {
		u, k := binary.Uvarint(b[i:])
		if k <= 0 {
			return malformed("%s: bad run header", what)
		}
		i += k
		count := int64(u >> 1)
		if u&1 == 1 { // bit-packed: count groups of 8 values, count·bitWidth bytes
			if count > limit {
				return malformed("%s: runs declare more than %d values for a page of %d", what, limit, n)
			}
			total += 8 * count
			i += int(min(count*int64(bitWidth), int64(len(b)-i)))
		} else {
			total += count
			i += (bitWidth + 7) / 8
		}
		if total > limit {
			return malformed("%s: runs declare more than %d values for a page of %d", what, limit, n)
		}
	}
	return nil
}

// checkValues checks the encoded values of a data page where the decoder
// sizes an allocation from them, and returns the decoded size of delta
// encoded strings (0 otherwise).
func checkValues(b []byte, enc format.Encoding, typ format.Type, n int64) (int64, error) {
	switch enc {
	case format.PlainDictionary, format.RLEDictionary:
		if len(b) == 0 {
			return 0, nil
		}
		return 0, checkRLE(b[1:], int(b[0]), n, "dictionary indexes")
	case format.RLE:
		if typ != format.Boolean || len(b) < 4 {
			return 0, nil // the decoder refuses these without allocating
		}
		m := int64(binary.LittleEndian.Uint32(b))
		if m > int64(len(b)-4) {
			return 0, malformed("boolean values of %d bytes in a page of %d", m, len(b)-4)
		}
		return 0, checkRLE(b[4:4+m], 1, n, "boolean values")
	case format.DeltaBinaryPacked:
		_, _, err := deltaBlocks(b, n, "delta values")
		return 0, err
	case format.DeltaLengthByteArray:
		if _, _, err := deltaBlocks(b, n, "string lengths"); err != nil {
			return 0, err
		}
		return byteArrayEstimate(new(delta.LengthByteArrayEncoding).EstimateDecodeByteArraySize, b)
	case format.DeltaByteArray:
		_, rest, err := deltaBlocks(b, n, "string prefix lengths")
		if err != nil {
			return 0, err
		}
		if _, _, err := deltaBlocks(rest, n, "string suffix lengths"); err != nil {
			return 0, err
		}
		return byteArrayEstimate(new(delta.ByteArrayEncoding).EstimateDecodeByteArraySize, b)
	}
	return 0, nil
}

// byteArrayEstimate calls the decoder's own estimate of the decoded size of
// delta-encoded strings (the size it allocates), whose inputs deltaBlocks
// has bounded.
func byteArrayEstimate(f func([]byte) int, b []byte) (n int64, err error) {
	defer func() {
		if recover() != nil {
			n, err = 0, malformed("delta-encoded strings: corrupt lengths")
		}
	}()
	n = int64(f(b))
	if n < 0 {
		return 0, malformed("delta-encoded strings: lengths overflow")
	}
	return n, nil
}

// deltaBlocks reads a DELTA_BINARY_PACKED header and skips its blocks as
// parquet-go does, checking that the declared count (the decoder allocates
// 4 or 8 bytes per value) is at most the page's n values. It returns the
// count and the bytes after the blocks.
func deltaBlocks(b []byte, n int64, what string) (int64, []byte, error) {
	var hdr [3]uint64
	for k := range hdr {
		v, m := binary.Uvarint(b)
		if m <= 0 {
			return 0, nil, malformed("%s: bad header", what)
		}
		hdr[k], b = v, b[m:]
	}
	if _, m := binary.Varint(b); m <= 0 {
		return 0, nil, malformed("%s: bad header", what)
	} else {
		b = b[m:]
	}
	blockSize, miniBlocks, total := hdr[0], hdr[1], hdr[2]
	if miniBlocks == 0 || blockSize == 0 || blockSize%128 != 0 || blockSize > 1<<20 || (blockSize/miniBlocks)%32 != 0 {
		return 0, nil, malformed("%s: bad block layout (%d values in %d mini-blocks)", what, blockSize, miniBlocks)
	}
	if total > uint64(n) {
		return 0, nil, malformed("%s: %d values declared for a page of %d", what, total, n)
	}
	if total == 0 {
		return 0, b, nil
	}
	per := int64(blockSize / miniBlocks)
	left := int64(total) - 1
	for left > 0 && len(b) > 0 {
		if _, m := binary.Varint(b); m <= 0 {
			return 0, nil, malformed("%s: bad block", what)
		} else {
			b = b[m:]
		}
		if uint64(len(b)) < miniBlocks {
			return 0, nil, malformed("%s: truncated block", what)
		}
		widths := b[:miniBlocks]
		b = b[miniBlocks:]
		for _, w := range widths {
			k := min(per, left)
			if w != 0 {
				size := per * int64(w) / 8
				b = b[min(size, int64(len(b))):]
			}
			left -= k
			if left == 0 {
				break
			}
		}
	}
	return int64(total), b, nil
}

// decompressors keeps one decoder per codec for a file's pages.
type decompressors struct {
	gz   *gzip.Reader
	zstd *zstd.Decoder
	win  uint64 // the zstd decoder's window limit
}

// bounded decompresses a page as parquet-go will, but stops (with an error)
// at more than usize bytes, the page's declared uncompressed size, which the
// decoder allocates and which the limits have checked. It returns the
// output if keep is set (else nil). For LZ4_RAW it also guarantees that the
// block decodes, without which parquet-go's decoder doubles its buffer
// forever. For Snappy, whose decoder allocates the length the block
// declares, checking that length suffices unless the output is kept.
func (d *decompressors) bounded(codec format.CompressionCodec, src []byte, usize int64, keep bool) ([]byte, error) {
	tooBig := func() error {
		return malformed("%v page decompresses to more than its declared %d bytes", codec, usize)
	}
	switch codec {
	case format.Snappy:
		n, err := snappy.DecodedLen(src)
		if err != nil {
			return nil, malformed("snappy page: %v", err)
		}
		if int64(n) > usize {
			return nil, tooBig()
		}
		if !keep {
			return nil, nil
		}
		out, err := snappy.Decode(make([]byte, n), src)
		if err != nil {
			return nil, malformed("snappy page: %v", err)
		}
		return out, nil
	case format.Lz4Raw:
		out := make([]byte, usize)
		n, err := lz4.UncompressBlock(src, out)
		if err != nil {
			return nil, malformed("LZ4_RAW page does not decode into its declared %d bytes: %v", usize, err)
		}
		return out[:n], nil
	case format.Gzip, format.Zstd, format.Brotli:
		var (
			rd  io.Reader
			err error
		)
		switch codec {
		case format.Gzip:
			if d.gz == nil {
				d.gz, err = gzip.NewReader(bytes.NewReader(src))
			} else {
				err = d.gz.Reset(bytes.NewReader(src))
			}
			rd = d.gz
		case format.Brotli:
			rd = brotli.NewReader(bytes.NewReader(src))
		case format.Zstd:
			// The window a frame may ask for: what the page needs, at least
			// 1 MiB (a legitimate frame's window does not exceed its
			// content), so that a crafted header cannot make the decoder
			// reserve up to 512 MiB.
			win := min(uint64(1)<<max(20, bits.Len64(uint64(usize))), zstd.MaxWindowSize)
			if d.zstd == nil || d.win != win {
				if d.zstd != nil {
					d.zstd.Close()
				}
				d.zstd, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(win))
				d.win = win
			}
			if err == nil {
				err = d.zstd.Reset(bytes.NewReader(src))
			}
			rd = d.zstd
		}
		if err != nil {
			return nil, malformed("%v page: %v", codec, err)
		}
		var (
			n   int64
			out bytes.Buffer
		)
		if keep {
			n, err = out.ReadFrom(io.LimitReader(rd, usize+1))
		} else {
			n, err = io.Copy(io.Discard, io.LimitReader(rd, usize+1))
		}
		if err != nil {
			return nil, malformed("%v page: %v", codec, err)
		}
		if n > usize {
			return nil, tooBig()
		}
		return out.Bytes(), nil
	}
	// LZO, deprecated LZ4 and unknown codecs: the decoder refuses them
	// without allocating.
	return src, nil
}

// close releases the decoders.
func (d *decompressors) close() {
	if d.zstd != nil {
		d.zstd.Close()
		d.zstd = nil
	}
}
