package dataset

import (
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/parquet-go/parquet-go"
)

// Parquet input: a flat schema (no nested or repeated columns) of numeric,
// boolean or string (BYTE_ARRAY) columns. Each value reaches the schema's
// encoder as text, as a CSV field would: integers in decimal, floating-point
// values exactly (hexadecimal for numeric columns, shortest decimal
// otherwise), booleans as "1"/"0", strings as they are, and nulls as an
// empty field (a missing value). For Parquet, RowError.Line is the 1-based
// row number and RowError.Column the 1-based column number.
//
// The file's sizes and counts are checked before the decoder trusts them
// (pqguard.go, pqthrift.go, Options.Parquet): a hostile file is refused
// with an error naming the ParquetLimits field or the inconsistency, instead
// of making the decoder allocate gigabytes.

const pqBatchRows = 8192

// pqBatch is a run of rows from one row group.
type pqBatch struct {
	rows  []parquet.Row
	first int64 // 0-based index of rows[0] in the file
}

type parquetSource struct {
	p      *pipeline
	guard  *pqGuard
	file   *parquet.File
	size   int64
	names  []string
	groups []parquet.RowGroup
	g      int
	rows   parquet.Rows
	left   int64 // rows of the current row group not yet read
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
	// Floating-point values of numeric columns travel as hexadecimal floats:
	// exact, and several times cheaper to format and parse than the
	// shortest decimal. Other columns (categories, labels) get the decimal
	// text a CSV would hold, so that 1.0 matches a category "1".
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
		if s.rows == nil {
			if s.g >= len(s.groups) {
				s.guard.dec.close()
				s.p.counts.n.Store(s.size)
				return nil, io.EOF
			}
			if err := s.guard.checkRowGroup(s.g); err != nil {
				return nil, fmt.Errorf("%s: parquet: %w", s.p.path, err)
			}
			s.rows = s.groups[s.g].Rows()
			s.left = s.groups[s.g].NumRows()
			s.g++
		}
		if s.left <= 0 {
			s.rows.Close()
			s.rows = nil
			continue
		}
		// Ask for no more rows than the row group holds: parquet-go's
		// ReadRows does work for every slot of the buffer, and a batch of
		// 8192 for a row group of 25 rows cost 28 ms instead of 0.3 ms.
		buf := make([]parquet.Row, min(pqBatchRows, s.left))
		n, err := s.rows.ReadRows(buf)
		s.left -= int64(n)
		// The rows are fresh allocations, but byte arrays may point into the
		// reader's page buffers: copy those.
		for i := 0; i < n; i++ {
			for j, v := range buf[i] {
				if k := v.Kind(); k == parquet.ByteArray || k == parquet.FixedLenByteArray {
					buf[i][j] = v.Clone()
				}
			}
		}
		if err == io.EOF || (err == nil && n == 0) {
			s.rows.Close()
			s.rows = nil
			err = nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: parquet: row %d: %w", s.p.path, s.done+1, err)
		}
		if n == 0 {
			continue
		}
		c := &chunk{pq: &pqBatch{rows: buf[:n], first: s.done}}
		s.done += int64(n)
		if total := s.file.NumRows(); total > 0 {
			s.p.counts.n.Store(s.size * s.done / total)
		}
		return c, nil
	}
}

// parquetChunk formats each row's values as fields and encodes them.
func (w *worker) parquetChunk(c *chunk, r *result) {
	nh := w.p.nh
	for i, row := range c.pq.rows {
		line := int(c.pq.first) + i + 1
		fields := w.fields[:0]
		text := w.text[:0]
		// Offsets first: text may grow and move while formatting.
		ends := w.ends[:0]
		bad := -1
		var badErr error
		for _, v := range row {
			col := v.Column()
			if col != len(ends) {
				bad, badErr = col, fmt.Errorf("parquet: value for column %d out of order", col+1)
				break
			}
			if col >= len(w.p.pqHex) {
				bad, badErr = col, fmt.Errorf("parquet: value for column %d of %d", col+1, len(w.p.pqHex))
				break
			}
			switch {
			case v.IsNull():
			case v.Kind() == parquet.Boolean:
				if v.Boolean() {
					text = append(text, '1')
				} else {
					text = append(text, '0')
				}
			case v.Kind() == parquet.Int32:
				text = strconv.AppendInt(text, int64(v.Int32()), 10)
			case v.Kind() == parquet.Int64:
				text = strconv.AppendInt(text, v.Int64(), 10)
			case v.Kind() == parquet.Float:
				if w.p.pqHex[col] {
					text = strconv.AppendFloat(text, float64(v.Float()), 'x', -1, 64)
				} else {
					text = strconv.AppendFloat(text, float64(v.Float()), 'g', -1, 32)
				}
			case v.Kind() == parquet.Double:
				if w.p.pqHex[col] {
					text = strconv.AppendFloat(text, v.Double(), 'x', -1, 64)
				} else {
					text = strconv.AppendFloat(text, v.Double(), 'g', -1, 64)
				}
			case v.Kind() == parquet.ByteArray || v.Kind() == parquet.FixedLenByteArray:
				text = append(text, v.ByteArray()...)
			default:
				bad, badErr = col, fmt.Errorf("parquet: unsupported type %v", v.Kind())
			}
			ends = append(ends, len(text))
		}
		w.text, w.ends = text, ends
		if badErr != nil {
			e := &RowError{File: w.p.path, Line: line, Column: bad + 1, Err: badErr}
			if bad >= 0 && bad < nh {
				e.ColumnName = w.p.names[bad]
			}
			if !w.bad(r, e) {
				return
			}
			continue
		}
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
