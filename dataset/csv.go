package dataset

import (
	"bytes"
	"fmt"
	"io"
)

// csvSource splits a CSV byte stream into chunks of whole records.
type csvSource struct {
	p     *pipeline
	r     io.Reader
	carry []byte // start of the next chunk (a partial record)
	line  int    // line number of carry[0]
	eof   bool
}

// fill reads into buf[len(buf):size] until it is full or the input ends.
// Reading exactly size bytes makes chunk boundaries depend on the data only.
func (s *csvSource) fill(buf []byte, size int) ([]byte, error) {
	if size > cap(buf) {
		nb := make([]byte, len(buf), size)
		copy(nb, buf)
		buf = nb
	}
	n, err := io.ReadFull(s.r, buf[len(buf):size])
	buf = buf[:len(buf)+n]
	switch err {
	case nil:
	case io.EOF, io.ErrUnexpectedEOF:
		s.eof = true
	default:
		return buf, fmt.Errorf("%s: read: %w", s.p.path, err)
	}
	return buf, nil
}

func (s *csvSource) header() ([]string, error) {
	buf := make([]byte, 0, 4<<10)
	for {
		var err error
		if buf, err = s.fill(buf, cap(buf)); err != nil {
			return nil, err
		}
		data := bytes.TrimPrefix(buf, []byte("\ufeff"))
		// Skip blank lines before the header.
		for len(data) > 0 && (data[0] == '\n' || data[0] == '\r') {
			if data[0] == '\n' {
				s.line++
			}
			data = data[1:]
		}
		end := firstBoundary(data)
		if end < 0 && s.eof {
			end = len(data)
		}
		if end >= 0 {
			if len(data) == 0 {
				return nil, fmt.Errorf("%s: %w", s.p.path, ErrNoHeader)
			}
			rec := append([]byte(nil), data[:end]...)
			fields, _, nl, col, err := parseRecord(rec, 0, nil)
			if err != nil {
				return nil, &RowError{File: s.p.path, Line: s.line, Column: col, Err: fmt.Errorf("header: %w", err)}
			}
			names := make([]string, len(fields))
			for i, f := range fields {
				names[i] = string(f)
			}
			s.line += nl
			s.carry = append([]byte(nil), data[end:]...)
			return names, nil
		}
		if len(buf) >= maxRecord {
			return nil, &RowError{File: s.p.path, Line: s.line, Err: fmt.Errorf("header: %w", ErrRecordTooLarge)}
		}
		buf = append(buf, make([]byte, cap(buf))...)[:len(buf)]
	}
}

// firstBoundary returns the index just past the first record terminator
// ('\n' outside quotes) in data, or -1.
func firstBoundary(data []byte) int {
	inq := false
	for i, c := range data {
		switch c {
		case '"':
			inq = !inq
		case '\n':
			if !inq {
				return i + 1
			}
		}
	}
	return -1
}

// lastBoundary returns the index just past the last record terminator in
// data (which starts at a record boundary) and whether data[:end] holds a
// quote; end is -1 if there is none. A '\n' ends a record iff an even number
// of '"' precede it (RFC 4180: quotes inside quoted fields are doubled).
func lastBoundary(data []byte) (end int, quoted bool) {
	nl := bytes.LastIndexByte(data, '\n')
	if nl < 0 {
		return -1, false
	}
	q := bytes.Count(data[:nl], []byte{'"'})
	quoted = q > 0
	for q%2 == 1 {
		prev := bytes.LastIndexByte(data[:nl], '\n')
		if prev < 0 {
			return -1, quoted
		}
		q -= bytes.Count(data[prev:nl], []byte{'"'})
		nl = prev
	}
	return nl + 1, quoted
}

func (s *csvSource) next() (*chunk, error) {
	if s.eof && len(s.carry) == 0 {
		return nil, io.EOF
	}
	size := s.p.opt.chunkSize
	if size <= 0 {
		size = chunkSize
	}
	if len(s.carry) >= size {
		size = 2 * len(s.carry)
	}
	buf := s.p.getBuf(size)
	buf = append(buf, s.carry...)
	for {
		var err error
		if !s.eof {
			if buf, err = s.fill(buf, size); err != nil {
				return nil, err
			}
		}
		end, quoted := lastBoundary(buf)
		if s.eof {
			end = len(buf)
			quoted = bytes.IndexByte(buf, '"') >= 0
		}
		if end >= 0 {
			s.carry = append(s.carry[:0], buf[end:]...)
			c := &chunk{data: buf[:end], line: s.line, quoted: quoted}
			s.line += bytes.Count(c.data, []byte{'\n'})
			if len(c.data) == 0 {
				return nil, io.EOF
			}
			return c, nil
		}
		if len(buf) >= maxRecord {
			return nil, &RowError{File: s.p.path, Line: s.line, Err: ErrRecordTooLarge}
		}
		size *= 2
	}
}

// parseRecord parses the record starting at data[pos] with RFC 4180 quoting,
// appending its fields to fields. Quoted fields are unescaped in place, so
// data is modified. It returns the position after the record, the number of
// '\n' consumed, and on error the 1-based field number at fault. A field that
// ends the data without a line end ends the record.
func parseRecord(data []byte, pos int, fields [][]byte) (_ [][]byte, next, nl, col int, err error) {
	for {
		if pos < len(data) && data[pos] == '"' {
			w, i := pos+1, pos+1
			for {
				j := bytes.IndexByte(data[i:], '"')
				if j < 0 {
					return fields, len(data), nl + bytes.Count(data[i:], []byte{'\n'}), len(fields) + 1, ErrUnterminated
				}
				nl += bytes.Count(data[i:i+j], []byte{'\n'})
				if w != i {
					copy(data[w:], data[i:i+j])
				}
				w += j
				i += j + 1
				if i < len(data) && data[i] == '"' { // escaped quote
					data[w] = '"'
					w++
					i++
					continue
				}
				break
			}
			fields = append(fields, data[pos+1:w])
			switch {
			case i >= len(data):
				return fields, i, nl, 0, nil
			case data[i] == ',':
				pos = i + 1
				continue
			case data[i] == '\n':
				return fields, i + 1, nl + 1, 0, nil
			case data[i] == '\r' && (i+1 == len(data) || data[i+1] == '\n'):
				if i+1 == len(data) {
					return fields, i + 1, nl, 0, nil
				}
				return fields, i + 2, nl + 1, 0, nil
			}
			return fields, skipLine(data, i), nl + 1, len(fields), ErrQuoteEnd
		}
		i := pos
		for i < len(data) {
			c := data[i]
			if c == ',' || c == '\n' || c == '"' {
				break
			}
			i++
		}
		switch {
		case i == len(data):
			fields = append(fields, trimCR(data[pos:i]))
			return fields, i, nl, 0, nil
		case data[i] == ',':
			fields = append(fields, data[pos:i])
			pos = i + 1
		case data[i] == '\n':
			fields = append(fields, trimCR(data[pos:i]))
			return fields, i + 1, nl + 1, 0, nil
		default: // '"'
			return fields, skipLine(data, i), nl + 1, len(fields) + 1, ErrBareQuote
		}
	}
}

// skipLine returns the position after the next '\n' at or after i.
func skipLine(data []byte, i int) int {
	j := bytes.IndexByte(data[i:], '\n')
	if j < 0 {
		return len(data)
	}
	return i + j + 1
}

func trimCR(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\r' {
		return b[:len(b)-1]
	}
	return b
}

// csvChunk parses and encodes the records of a chunk.
func (w *worker) csvChunk(c *chunk, r *result) {
	data := c.data
	line := c.line
	pos := 0
	for pos < len(data) {
		// Blank lines (also "\r\n") are skipped.
		if data[pos] == '\n' {
			pos++
			line++
			continue
		}
		if data[pos] == '\r' && pos+1 < len(data) && data[pos+1] == '\n' {
			pos += 2
			line++
			continue
		}
		recLine := line
		fields := w.fields[:0]
		if !c.quoted {
			end := bytes.IndexByte(data[pos:], '\n')
			var rec []byte
			if end < 0 {
				rec = data[pos:]
				pos = len(data)
			} else {
				rec = data[pos : pos+end]
				pos += end + 1
				line++
			}
			rec = trimCR(rec)
			for {
				j := bytes.IndexByte(rec, ',')
				if j < 0 {
					fields = append(fields, rec)
					break
				}
				fields = append(fields, rec[:j])
				rec = rec[j+1:]
			}
		} else {
			var nl, col int
			var err error
			fields, pos, nl, col, err = parseRecord(data, pos, fields)
			line += nl
			if err != nil {
				w.fields = fields
				e := &RowError{File: w.p.path, Line: recLine, Column: col, Err: err}
				if col >= 1 && col <= len(w.p.names) {
					e.ColumnName = w.p.names[col-1]
				}
				if !w.bad(r, e) {
					return
				}
				continue
			}
		}
		w.fields = fields
		if !w.emit(r, fields, recLine) {
			return
		}
	}
}
