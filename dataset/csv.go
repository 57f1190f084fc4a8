package dataset

import (
	"bytes"
	"fmt"
	"io"
	"strings"

	"github.com/dplearn/dplearn/internal/decimal"
)

// csvSource splits a CSV byte stream into chunks of whole records.
type csvSource struct {
	p     *pipeline
	r     io.Reader
	sep   byte   // field delimiter
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
	// Not io.ReadFull: it reports a short read as io.ErrUnexpectedEOF, the
	// same error a truncated gzip stream gives, which must not pass as a
	// normal end of file.
	for len(buf) < size {
		n, err := s.r.Read(buf[len(buf):size])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			s.eof = true
			break
		}
		if err != nil {
			return buf, fmt.Errorf("%s: read: %w", s.p.path, err)
		}
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
		blank := 0
		for len(data) > 0 && (data[0] == '\n' || data[0] == '\r') {
			if data[0] == '\n' {
				blank++
			}
			data = data[1:]
		}
		end := -1
		if next, complete := scanRecord(data, 0, s.sep); complete {
			end = next
		}
		if end < 0 && s.eof {
			end = len(data)
		}
		if end >= 0 {
			if len(data) == 0 {
				return nil, fmt.Errorf("%s: %w", s.p.path, ErrNoHeader)
			}
			s.line += blank
			rec := append([]byte(nil), data[:end]...)
			fields, _, nl, col, err := parseRecord(rec, 0, nil, s.sep)
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

// boundary returns the index just past the last complete record in data
// (which starts at a record boundary), or -1, and whether data[:end] holds a
// '"'. Without quotes this is the last '\n'. With quotes the records are
// scanned sequentially from the line of the first quote, with exactly the
// rules the workers parse with (a record broken by bad quoting ends at the
// next '\n'), so splitter and parser always agree.
func boundary(data []byte, sep byte) (end int, quoted bool) {
	q := bytes.IndexByte(data, '"')
	if q < 0 {
		return bytes.LastIndexByte(data, '\n') + 1, false
	}
	pos := bytes.LastIndexByte(data[:q], '\n') + 1
	end = pos
	for pos < len(data) {
		next, complete := scanRecord(data, pos, sep)
		if !complete {
			break
		}
		pos, end = next, next
	}
	return end, end > q
}

// scanRecord finds the end of the record at data[pos] without modifying
// data; complete is false when the record may continue past the data.
func scanRecord(data []byte, pos int, sep byte) (next int, complete bool) {
	_, next, _, _, err := parseRecordMode(data, pos, nil, false, sep)
	return next, err != ErrUnterminated && next > pos && data[next-1] == '\n'
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
		end, quoted := 0, false
		if s.eof {
			end = len(buf)
			quoted = bytes.IndexByte(buf, '"') >= 0
		} else {
			end, quoted = boundary(buf, s.sep)
		}
		if end > 0 || s.eof {
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
func parseRecord(data []byte, pos int, fields [][]byte, sep byte) (_ [][]byte, next, nl, col int, err error) {
	return parseRecordMode(data, pos, fields, true, sep)
}

// parseRecordMode is parseRecord; with write false it neither unescapes nor
// collects fields (for the splitter).
func parseRecordMode(data []byte, pos int, fields [][]byte, write bool, sep byte) (_ [][]byte, next, nl, col int, err error) {
	for {
		if pos < len(data) && data[pos] == '"' {
			w, i := pos+1, pos+1
			for {
				j := bytes.IndexByte(data[i:], '"')
				if j < 0 {
					return fields, len(data), nl + bytes.Count(data[i:], []byte{'\n'}), len(fields) + 1, ErrUnterminated
				}
				nl += bytes.Count(data[i:i+j], []byte{'\n'})
				if write && w != i {
					copy(data[w:], data[i:i+j])
				}
				w += j
				i += j + 1
				if i < len(data) && data[i] == '"' { // escaped quote
					if write {
						data[w] = '"'
					}
					w++
					i++
					continue
				}
				break
			}
			if write {
				fields = append(fields, data[pos+1:w])
			}
			switch {
			case i >= len(data):
				return fields, i, nl, 0, nil
			case data[i] == sep:
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
			next := skipLine(data, i)
			return fields, next, nl + endsLine(data, next), len(fields), ErrQuoteEnd
		}
		i := pos
		for i < len(data) {
			c := data[i]
			if c == sep || c == '\n' || c == '"' {
				break
			}
			i++
		}
		switch {
		case i == len(data):
			if write {
				fields = append(fields, trimCR(data[pos:i]))
			}
			return fields, i, nl, 0, nil
		case data[i] == sep:
			if write {
				fields = append(fields, data[pos:i])
			}
			pos = i + 1
		case data[i] == '\n':
			if write {
				fields = append(fields, trimCR(data[pos:i]))
			}
			return fields, i + 1, nl + 1, 0, nil
		default: // '"'
			next := skipLine(data, i)
			return fields, next, nl + endsLine(data, next), len(fields) + 1, ErrBareQuote
		}
	}
}

// endsLine is 1 if data[:next] ends with '\n', else 0.
func endsLine(data []byte, next int) int {
	if next > 0 && data[next-1] == '\n' {
		return 1
	}
	return 0
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
	sep := w.p.sep
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
			if w.p.csvNum != nil {
				fields = w.splitNumbers(rec, sep)
				w.numbers, w.textErrors = true, true
				ok := w.emit(r, fields, recLine)
				w.numbers, w.textErrors = false, false
				if !ok {
					return
				}
				continue
			}
			for {
				j := bytes.IndexByte(rec, sep)
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
			fields, pos, nl, col, err = parseRecord(data, pos, fields, sep)
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
		if w.p.csvNum != nil {
			w.parseNumbers(fields)
			w.numbers, w.textErrors = true, true
		}
		ok := w.emit(r, fields, recLine)
		w.numbers, w.textErrors = false, false
		if !ok {
			return
		}
	}
}

// DelimiterError reports a header that parsed as one column although it
// holds another likely delimiter: the file is probably not comma-separated.
type DelimiterError struct {
	Header string // the one column the header parsed as (truncated)
	Likely byte   // the delimiter the header most likely uses
}

func (e *DelimiterError) Error() string {
	return fmt.Sprintf("the header parsed as one column %q; the file looks %s-separated: pass --delimiter %s",
		e.Header, DelimiterName(e.Likely), DelimiterFlag(e.Likely))
}

// DelimiterName names a delimiter in words ("tab", "';'").
func DelimiterName(d byte) string {
	if d == '\t' {
		return "tab"
	}
	return fmt.Sprintf("'%c'", d)
}

// DelimiterFlag is how to write the delimiter as a shell argument.
func DelimiterFlag(d byte) string {
	if d == '\t' {
		return "tab"
	}
	return fmt.Sprintf("'%c'", d)
}

// delimiter validates Options.Delimiter (0: ',').
func delimiter(d byte) (byte, error) {
	switch d {
	case 0:
		return ',', nil
	case '"', '\n', '\r', ' ':
		return 0, fmt.Errorf("dataset: %q cannot be a field delimiter", d)
	}
	return d, nil
}

// likelyDelimiter returns the delimiter a one-column header most likely
// uses instead of sep (the candidate occurring most often), or 0.
func likelyDelimiter(header []string, sep byte) byte {
	if len(header) != 1 {
		return 0
	}
	best, n := byte(0), 0
	for _, d := range []byte{',', ';', '\t', '|'} {
		if d == sep {
			continue
		}
		if c := strings.Count(header[0], string(d)); c > n {
			best, n = d, c
		}
	}
	return best
}

// keepIndices returns the header positions of the named columns.
func keepIndices(header, names []string) ([]int, error) {
	var idx []int
	for _, n := range names {
		found := -1
		for i, h := range header {
			if strings.TrimSpace(strings.TrimPrefix(h, "\ufeff")) == n {
				found = i
				break
			}
		}
		if found < 0 {
			return nil, fmt.Errorf("column %q to pass through (--id) is not in the header", n)
		}
		idx = append(idx, found)
	}
	return idx, nil
}

// Plural returns "1 row", "2 rows": the count and the noun, pluralised
// with an s.
func Plural(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// numericFields returns, per header field, whether the splitter should
// parse it as a number: the field is a numeric feature or a numeric
// (ranged) target of the schema, matched by name as schema.NewEncoder
// matches, and not a Keep column (whose text passes through as is).
// Anything else (categories, labels, unused columns) stays text.
func (p *pipeline) numericFields(header []string) []bool {
	numeric := map[string]bool{}
	for _, f := range p.schema.Features {
		if !f.Categorical() {
			numeric[f.Name] = true
		}
	}
	if t := p.schema.Target; !t.Binary() && !p.opt.IgnoreTarget {
		numeric[t.Name] = true
	}
	out := make([]bool, len(header))
	any := false
	for i, h := range header {
		out[i] = numeric[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))]
		any = any || out[i]
	}
	for _, i := range p.keepIdx {
		out[i] = false
	}
	if !any {
		return nil
	}
	return out
}

// parseNumbers parses, as splitNumbers does, the fields of a record split
// by parseRecord (quoted fields unescaped): a numeric column's field that
// is a plain decimal in its entirety becomes a number.
func (w *worker) parseNumbers(fields [][]byte) {
	nums, isNum := w.nums[:0], w.isNum[:0]
	for col, f := range fields {
		v, n, ok := 0.0, 0, false
		if col < len(w.p.csvNum) && w.p.csvNum[col] {
			v, n, ok = decimal.Prefix(f)
		}
		ok = ok && n == len(f)
		if !ok {
			v = 0
		}
		nums, isNum = append(nums, v), append(isNum, ok)
	}
	w.nums, w.isNum = nums, isNum
}

// splitNumbers splits an unquoted record (without its line end) at sep
// into w.fields, exactly as bytes.IndexByte splitting would, and in the
// same scan parses each field of a numeric column that is a plain decimal
// (decimal.Prefix) into w.nums, setting w.isNum. Such a field reaches the
// encoder as the float64 its text parses to (schema.Encoder.EncodeNumbers:
// the same path, the same bits); every other field is text, parsed by the
// encoder as before.
func (w *worker) splitNumbers(rec []byte, sep byte) [][]byte {
	fields, nums, isNum := w.fields[:0], w.nums[:0], w.isNum[:0]
	numCol := w.p.csvNum
	for {
		col := len(fields)
		if col < len(numCol) && numCol[col] {
			if v, n, ok := decimal.Prefix(rec); ok && (n == len(rec) || rec[n] == sep) {
				fields, nums, isNum = append(fields, rec[:n]), append(nums, v), append(isNum, true)
				if n == len(rec) {
					break
				}
				rec = rec[n+1:]
				continue
			}
		}
		nums, isNum = append(nums, 0), append(isNum, false)
		j := bytes.IndexByte(rec, sep)
		if j < 0 {
			fields = append(fields, rec)
			break
		}
		fields = append(fields, rec[:j])
		rec = rec[j+1:]
	}
	w.fields, w.nums, w.isNum = fields, nums, isNum
	return fields
}
