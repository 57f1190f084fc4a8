package dataset

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/parquet-go/parquet-go"
)

// Parquet input: a flat schema (no nested or repeated columns) of numeric,
// boolean or string (BYTE_ARRAY) columns, read column by column (the
// column-chunk page API, not the row API). A value of a column the schema
// declares numeric reaches the encoder as a number (schema.EncodeNumbers:
// integers and floats converted exactly as their text would parse, no text
// in between); other values as the text a CSV field would hold: numbers in
// their shortest round-trip decimal (so 1.0 matches a category "1"),
// booleans as "1"/"0", strings as they are; nulls as an empty field (a
// missing value). For Parquet, RowError.Line is the 1-based row number and
// RowError.Column the 1-based column number.
//
// The file's sizes and counts are checked before the decoder trusts them
// (pqguard.go, pqthrift.go, Options.Parquet): a hostile file is refused
// with an error naming the ParquetLimits field or the inconsistency, instead
// of making the decoder allocate gigabytes.

const pqBatchRows = 8192

// pqBatch is a run of rows from one row group, by columns: cols[j][i] is
// column j of row first+i.
type pqBatch struct {
	cols  [][]parquet.Value
	n     int
	first int64 // 0-based index of the batch's first row in the file
}

// pqColumnReader reads one column chunk's values across its pages.
type pqColumnReader struct {
	pages parquet.Pages
	page  parquet.Page
	vals  parquet.ValueReader
}

// read fills buf with the column's next values and returns how many; fewer
// than len(buf) only at the end of the chunk.
func (c *pqColumnReader) read(buf []parquet.Value) (int, error) {
	n := 0
	for n < len(buf) {
		if c.vals == nil {
			if c.page != nil {
				parquet.Release(c.page)
				c.page = nil
			}
			pg, err := c.pages.ReadPage()
			if err == io.EOF {
				return n, nil
			}
			if err != nil {
				return n, err
			}
			c.page, c.vals = pg, pg.Values()
		}
		m, err := c.vals.ReadValues(buf[n:])
		// Byte arrays point into the page's buffers, which are released
		// or reused: copy them.
		for i := n; i < n+m; i++ {
			if k := buf[i].Kind(); k == parquet.ByteArray || k == parquet.FixedLenByteArray {
				buf[i] = buf[i].Clone()
			}
		}
		n += m
		if err == io.EOF || (err == nil && m == 0) {
			c.vals = nil
			continue
		}
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (c *pqColumnReader) close() {
	if c.page != nil {
		parquet.Release(c.page)
		c.page = nil
	}
	if c.pages != nil {
		c.pages.Close()
	}
}

type parquetSource struct {
	p      *pipeline
	guard  *pqGuard
	file   *parquet.File
	size   int64
	names  []string
	groups []parquet.RowGroup
	g      int
	cols   []pqColumnReader // readers of the current row group, nil between groups
	left   int64            // rows of the current row group not yet read
	done   int64
}

func newParquetSource(p *pipeline, f *os.File) (src source, err error) {
	defer func() {
		if v := recover(); v != nil {
			src, err = nil, fmt.Errorf("%s: parquet: malformed file: %v", p.path, v)
		}
	}()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p.path, err)
	}
	// The decoder trusts the sizes written in the file: check them first
	// (pqguard.go).
	guard, err := newPQGuard(f, st.Size(), p.opt.Parquet)
	if err != nil {
		return nil, fmt.Errorf("%s: parquet: %w", p.path, err)
	}
	// The page index and bloom filters are not needed to read every row;
	// skipping them keeps the decoder away from their (unchecked) sizes.
	pf, err := parquet.OpenFile(f, st.Size(), parquet.SkipPageIndex(true), parquet.SkipBloomFilters(true))
	if err != nil {
		return nil, fmt.Errorf("%s: parquet: %w", p.path, err)
	}
	s := &parquetSource{p: p, guard: guard, file: pf, size: st.Size(), groups: pf.RowGroups()}
	for _, c := range pf.Root().Columns() {
		if !c.Leaf() || c.Repeated() {
			return nil, fmt.Errorf("%s: parquet: column %q is nested or repeated; only flat tables are supported", p.path, c.Name())
		}
		s.names = append(s.names, c.Name())
	}
	if len(s.names) == 0 {
		return nil, fmt.Errorf("%s: parquet: %w", p.path, ErrNoHeader)
	}
	// Values of numeric columns go to the encoder as numbers (no text);
	// other columns (categories, labels) get the decimal text a CSV would
	// hold, so that 1.0 matches a category "1".
	numeric := map[string]bool{}
	for _, f := range p.schema.Features {
		if !f.Categorical() {
			numeric[f.Name] = true
		}
	}
	if t := p.schema.Target; t.Positive == "" {
		numeric[t.Name] = true
	}
	p.pqHex = make([]bool, len(s.names))
	for i, n := range s.names {
		p.pqHex[i] = numeric[n]
	}
	return s, nil
}

func (s *parquetSource) header() ([]string, error) { return s.names, nil }

func (s *parquetSource) next() (c *chunk, err error) {
	// A malformed file must give an error, never crash the program: turn a
	// panic in the third-party decoder into an error.
	defer func() {
		if v := recover(); v != nil {
			c, err = nil, fmt.Errorf("%s: parquet: malformed file near row %d: %v", s.p.path, s.done+1, v)
		}
	}()
	for {
		if s.cols == nil {
			if s.g >= len(s.groups) {
				s.guard.dec.close()
				s.p.counts.n.Store(s.size)
				return nil, io.EOF
			}
			if err := s.guard.checkRowGroup(s.g); err != nil {
				return nil, fmt.Errorf("%s: parquet: %w", s.p.path, err)
			}
			chunks := s.groups[s.g].ColumnChunks()
			if len(chunks) != len(s.names) {
				return nil, fmt.Errorf("%s: parquet: row group %d has %d columns, the schema %d", s.p.path, s.g+1, len(chunks), len(s.names))
			}
			s.cols = make([]pqColumnReader, len(chunks))
			for j, cc := range chunks {
				s.cols[j].pages = cc.Pages()
			}
			s.left = s.groups[s.g].NumRows()
			s.g++
		}
		if s.left <= 0 {
			s.closeGroup()
			continue
		}
		n := int(min(pqBatchRows, s.left))
		b := &pqBatch{cols: make([][]parquet.Value, len(s.cols)), n: n, first: s.done}
		for j := range s.cols {
			b.cols[j] = make([]parquet.Value, n)
			got, err := s.cols[j].read(b.cols[j])
			if err != nil {
				return nil, fmt.Errorf("%s: parquet: column %q near row %d: %w", s.p.path, s.names[j], s.done+1, err)
			}
			if got != n {
				return nil, fmt.Errorf("%s: parquet: %w: column %q ends after %d of the row group's rows", s.p.path, ErrParquetMalformed, s.names[j], s.done-b.first+int64(got))
			}
		}
		s.left -= int64(n)
		s.done += int64(n)
		if total := s.file.NumRows(); total > 0 {
			s.p.counts.n.Store(s.size * s.done / total)
		}
		return &chunk{pq: b}, nil
	}
}

func (s *parquetSource) closeGroup() {
	for j := range s.cols {
		s.cols[j].close()
	}
	s.cols = nil
}

// parquetChunk hands each row's values to the encoder: numbers of numeric
// columns as numbers, everything else as text.
func (w *worker) parquetChunk(c *chunk, r *result) {
	b := c.pq
	nc := len(b.cols)
	if cap(w.nums) < nc {
		w.nums, w.isNum = make([]float64, nc), make([]bool, nc)
	}
	nums, isNum := w.nums[:nc], w.isNum[:nc]
	w.numbers = true
	defer func() { w.numbers = false }()
	for i := 0; i < b.n; i++ {
		line := int(b.first) + i + 1
		text := w.text[:0]
		ends := w.ends[:0]
		bad := -1
		var badErr error
		for col := 0; col < nc; col++ {
			v := &b.cols[col][i]
			isNum[col] = false
			if v.IsNull() {
				ends = append(ends, len(text))
				continue
			}
			k := v.Kind()
			if w.p.pqHex[col] {
				isNum[col] = true
				switch k {
				case parquet.Double:
					nums[col] = v.Double()
				case parquet.Float:
					nums[col] = float64(v.Float())
				case parquet.Int32:
					nums[col] = float64(v.Int32())
				case parquet.Int64:
					nums[col] = float64(v.Int64())
				default:
					isNum[col] = false
				}
				if isNum[col] {
					ends = append(ends, len(text))
					continue
				}
			}
			switch k {
			case parquet.Boolean:
				if v.Boolean() {
					text = append(text, '1')
				} else {
					text = append(text, '0')
				}
			case parquet.Int32:
				text = strconv.AppendInt(text, int64(v.Int32()), 10)
			case parquet.Int64:
				text = strconv.AppendInt(text, v.Int64(), 10)
			case parquet.Float:
				text = strconv.AppendFloat(text, float64(v.Float()), 'g', -1, 32)
			case parquet.Double:
				text = strconv.AppendFloat(text, v.Double(), 'g', -1, 64)
			case parquet.ByteArray, parquet.FixedLenByteArray:
				text = append(text, v.ByteArray()...)
			default:
				bad, badErr = col, fmt.Errorf("parquet: unsupported type %v", k)
			}
			ends = append(ends, len(text))
		}
		w.text, w.ends = text, ends
		if badErr != nil {
			e := &RowError{File: w.p.path, Line: line, Column: bad + 1, Err: badErr}
			if bad < w.p.nh {
				e.ColumnName = w.p.names[bad]
			}
			if !w.bad(r, e) {
				return
			}
			continue
		}
		fields := w.fields[:0]
		start := 0
		for _, end := range ends {
			fields = append(fields, text[start:end:end])
			start = end
		}
		w.fields = fields
		if !w.emit(r, fields, line) {
			return
		}
	}
}
