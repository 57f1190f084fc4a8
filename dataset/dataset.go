// Package dataset streams tables from disk into encoded rows and their
// sufficient statistics: CSV (header row, RFC 4180 quoting, \n or \r\n line
// ends, gzip-compressed when the name ends in .gz or the content starts with
// the gzip magic) and Parquet. The schema's encoding and clipping are applied
// on the fly, parsing is spread over all cores, and memory stays constant
// whatever the number of rows: the file is read in chunks of a few MiB, a
// bounded number of which are in flight.
//
// A CSV worker splits each record and parses the fields of the schema's
// numeric columns in one scan: a plain decimal (sign, digits, point; the
// common case) reaches the encoder as the float64 its text parses to,
// which the encoder treats exactly as that text (the same bits, counts and
// errors); anything else stays text and is parsed by the encoder.
//
// Three entry points share one pipeline: Moments returns the sufficient
// statistics (the only thing the Functional Mechanism family needs), Stream
// hands encoded row batches to a callback in file order, and Load keeps all
// encoded rows in memory for mechanisms that need them.
//
// # Parquet
//
// Flat tables (no nested or repeated columns) of numeric, boolean or string
// columns, read one row group batch at a time. Each value reaches the
// schema's encoder as the text a CSV field would hold: numbers in their
// shortest round-trip form, booleans as "1"/"0", strings as they are, nulls
// as an empty field (a missing value). In a Parquet RowError, Line is the
// 1-based row number. The frame (magic numbers, footer length) is checked
// before decoding, and a panic in the third-party decoder is returned as an
// error.
//
// # Determinism
//
// Chunk boundaries depend only on the file's bytes, and per-chunk partial
// statistics are merged in file order, so Moments returns bit-identical
// results for any number of workers. Wide rows (K > 256) are accumulated in
// file order by one accumulator instead, which bounds memory by O(K²) rather
// than O(workers·K²); its result is bit-identical for a given number of
// workers.
//
// # Errors
//
// A record that cannot be read or encoded stops the read with a *RowError
// naming the file, the physical line where the record starts, the 1-based
// field (CSV column) number and the column name:
//
//	data.csv:17:3: column "age": value "abc": not a number
//
// With Options.SkipBadRows such records are skipped and counted in
// Summary.Skipped instead. Some faults stop the read in both modes: a
// missing header, a header that lacks a schema column, an unterminated
// quoted field (a truncated file), an I/O or decompression error. A file
// with no data rows returns an error wrapping ErrNoRows.
//
// Cancelling the context stops the read promptly; the returned error then
// wraps ctx.Err().
//
// # Dialects, streams and missing values
//
// Options.Delimiter reads ';'-, tab- or '|'-separated files; a header that
// parses as one column holding another likely delimiter returns a
// *DelimiterError naming it. The path "-" reads Options.Stdin. Records
// dropped by a schema's "missing": "drop" policy are kept as all-zero rows
// with Options.KeepDropped (the fit's choice: see the schema package doc for
// why this keeps N public), left out with Options.SkipDropped, and a bad
// row otherwise, so no reader changes N silently; Summary.Dropped counts them
// and Summary.Columns tallies per column what the encoder clipped, imputed
// or dropped. Those counts depend on the data: they are for the local
// console, never for a release.
package dataset

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// Options tunes a read. The zero value is a quiet, strict read on all cores.
type Options struct {
	// Workers is the number of parsing goroutines; ≤ 0 means GOMAXPROCS.
	Workers int
	// SkipBadRows skips records that cannot be encoded (and records with the
	// wrong number of fields or bad quoting), counting them in
	// Summary.Skipped, instead of stopping at the first. Which rows are
	// skipped depends on the private data, so the number of rows used is
	// no longer a public constant: a mechanism that treats N as public
	// (bounded DP) must say so in its report.
	SkipBadRows bool
	// KeepBadRows, with SkipBadRows, keeps each skipped record as an
	// all-zero encoded row, as KeepDropped keeps a dropped one: it is
	// counted in Summary.Rows (and in Summary.Skipped), so the number of
	// rows is the number of records read, a public constant, whatever the
	// number of bad ones (the fit's choice). A record cut off by an
	// unterminated quote still stops the read (where it ends is unknown).
	KeepBadRows bool
	// Progress, when non-nil, receives a progress line (rows, MB/s, ETA)
	// a few times a second and a final line. The CLI passes stderr only
	// when it is a terminal.
	Progress io.Writer
	// TargetOptional allows the target column to be absent (prediction);
	// its slot in each encoded row is then 0.
	TargetOptional bool
	// IgnoreTarget never reads the target column (prediction): its slot in
	// each encoded row is 0, whatever the column holds.
	IgnoreTarget bool
	// Parquet bounds the memory and work a Parquet file may demand (see
	// ParquetLimits); the zero value takes the defaults.
	Parquet ParquetLimits
	// Delimiter is the CSV field delimiter: 0 means ','; ';' and '\t' are
	// the common others. A header that holds one column with another
	// likely delimiter in it returns a *DelimiterError.
	Delimiter byte
	// Stdin is read when the path is "-" (nil: os.Stdin); errors then name
	// the file "stdin". Parquet cannot be read from a stream.
	Stdin io.Reader
	// KeepDropped keeps a record dropped by a "missing": "drop" policy as
	// an all-zero encoded row (features, intercept slot and target), counted
	// in Summary.Rows and Summary.Dropped, instead of leaving it out (see
	// the package doc: this keeps the number of rows a public constant for
	// the privacy analysis). StreamBatches flags such rows.
	KeepDropped bool
	// SkipDropped leaves such records out (evaluation, where N is not a
	// privacy parameter). With neither option a dropped record is a bad row
	// (an error, or skipped and counted with SkipBadRows): a reader that
	// did not choose cannot change N silently.
	SkipDropped bool
	// Keep names columns whose raw text StreamBatches hands over with each
	// row (identifiers to pass through); each must be in the header.
	Keep []string

	chunkSize int // tests: CSV read size (default chunkSize)
}

// Summary describes a completed read.
type Summary struct {
	Rows    int64 // records encoded
	Skipped int64 // records skipped (SkipBadRows), kept as zero rows with KeepBadRows
	Bytes   int64 // bytes read from the file (compressed size for .gz)
	// HasTarget is false when Options.TargetOptional let the target column
	// be absent (its slot in every row is then 0).
	HasTarget bool
	// Dropped counts the records dropped for a missing value by a
	// "missing": "drop" policy (kept as zero rows with KeepDropped).
	Dropped int64
	// Columns tallies per schema column what the encoder did: values
	// clipped to the declared range, imputed, undeclared categories read
	// as the reference level, and the column that dropped each dropped
	// record. SkippedByColumn counts skipped bad records (SkipBadRows) by
	// the column at fault. All of these depend on the private data: show
	// them to the data holder, never release them (PRIVACY-NOTES item 23).
	Columns         *schema.Counts
	SkippedByColumn map[string]int64
}

// RowError locates a record that cannot be read or encoded.
type RowError struct {
	File       string
	Line       int    // 1-based physical line where the record starts
	Column     int    // 1-based field number; 0 when the whole record is at fault
	ColumnName string // header name of that field, when known
	Err        error  // the reason; a *schema.FieldError for bad values
}

func (e *RowError) Error() string {
	if e.Column > 0 {
		return fmt.Sprintf("%s:%d:%d: %v", e.File, e.Line, e.Column, e.Err)
	}
	return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err)
}

func (e *RowError) Unwrap() error { return e.Err }

// Errors wrapped by RowError or returned (wrapped) by the readers; test with
// errors.Is.
var (
	ErrNoHeader       = errors.New("empty file: no header row")
	ErrNoRows         = errors.New("no data rows")
	ErrFieldCount     = errors.New("wrong number of fields")
	ErrBareQuote      = errors.New(`bad quoting: '"' in an unquoted field`)
	ErrQuoteEnd       = errors.New(`bad quoting: character after a closing '"'`)
	ErrUnterminated   = errors.New(`bad quoting: quoted field not closed before end of file (truncated file?)`)
	ErrRecordTooLarge = errors.New(`record longer than 64 MiB (an unbalanced '"'?)`)
	ErrNotTable       = errors.New("is a directory, not a table file")
)

// Table holds encoded rows in memory, row-major: row r is
// Rows[r*K : (r+1)*K], features first and the target last.
type Table struct {
	K    int
	Rows []float64
}

// N returns the number of rows.
func (t *Table) N() int {
	if t.K == 0 {
		return 0
	}
	return len(t.Rows) / t.K
}

// Row returns row r (a view, not a copy).
func (t *Table) Row(r int) []float64 { return t.Rows[r*t.K : (r+1)*t.K] }

// Subset returns a new table holding copies of the rows idx, in that order
// (train/test splits: pass the two halves of a permutation).
func (t *Table) Subset(idx []int) *Table {
	o := &Table{K: t.K, Rows: make([]float64, 0, len(idx)*t.K)}
	for _, i := range idx {
		o.Rows = append(o.Rows, t.Row(i)...)
	}
	return o
}

// Moments reads path in one streaming pass and returns the sufficient
// statistics of its encoded rows, flushed (safe to read from several
// goroutines).
func Moments(ctx context.Context, path string, s *schema.Schema, opt Options) (*suffstat.Moments, Summary, error) {
	return (&pipeline{path: path, schema: s, opt: opt, moments: true}).accumulate(ctx)
}

// accumulate runs a Moments-mode pipeline and merges the workers'
// statistics (Moments, MomentsReader).
func (p *pipeline) accumulate(ctx context.Context) (*suffstat.Moments, Summary, error) {
	var total *suffstat.Moments
	sum, err := p.run(ctx, func(r *result) error {
		if total == nil {
			total = suffstat.New(p.width)
			total.SetWorkers(p.workers)
		}
		if r.mom != nil {
			return total.Merge(r.mom)
		}
		if len(r.rows) > 0 {
			return total.AddRows(r.rows)
		}
		return nil
	})
	if err != nil {
		return nil, sum, err
	}
	total.Flush() // safe for concurrent reads
	return total, sum, nil
}

// Batch is one batch of StreamBatches: n encoded rows with what the
// options asked to carry alongside.
type Batch struct {
	Rows []float64 // n×K, row-major
	// Dropped[i] is true when row i is the zero row of a record dropped for
	// a missing value (Options.KeepDropped; nil otherwise).
	Dropped []bool
	// Keep holds the raw text of the Options.Keep columns, n×len(Keep),
	// row-major (nil without Keep).
	Keep []string
}

// StreamBatches is Stream with the per-row facts of Batch. The batch and its
// slices are reused after fn returns; copy what you keep.
func StreamBatches(ctx context.Context, path string, s *schema.Schema, opt Options, fn func(b Batch) error) (Summary, error) {
	p := &pipeline{path: path, schema: s, opt: opt}
	return p.run(ctx, func(r *result) error {
		if len(r.rows) == 0 {
			return nil
		}
		return fn(Batch{Rows: r.rows, Dropped: r.flags, Keep: r.kept})
	})
}

// Stream reads path and calls fn with row-major batches of encoded rows
// (n×K, K = the encoder's width) in file order. The slice is reused after
// fn returns; copy what you keep. Batches hold a few thousand rows, so
// memory stays constant. An error from fn stops the read and is
// returned.
func Stream(ctx context.Context, path string, s *schema.Schema, opt Options, fn func(rows []float64) error) (Summary, error) {
	p := &pipeline{path: path, schema: s, opt: opt}
	return p.run(ctx, func(r *result) error {
		if len(r.rows) == 0 {
			return nil
		}
		return fn(r.rows)
	})
}

// Load reads all encoded rows of path into memory.
func Load(ctx context.Context, path string, s *schema.Schema, opt Options) (*Table, Summary, error) {
	return load(ctx, &pipeline{path: path, schema: s, opt: opt})
}

// LoadReader is Load for a stream of CSV (or gzip-compressed CSV) bytes,
// such as embedded data; name labels its errors (name:line:column). Parquet
// needs random access: use Load with a path.
func LoadReader(ctx context.Context, r io.Reader, name string, s *schema.Schema, opt Options) (*Table, Summary, error) {
	if r == nil {
		return nil, Summary{}, errors.New("dataset: nil reader")
	}
	return load(ctx, &pipeline{path: name, in: r, schema: s, opt: opt})
}

func load(ctx context.Context, p *pipeline) (*Table, Summary, error) {
	t := &Table{}
	sum, err := p.run(ctx, func(r *result) error {
		t.Rows = append(t.Rows, r.rows...)
		return nil
	})
	if err != nil {
		return nil, sum, err
	}
	t.K = p.width
	return t, sum, nil
}

// ReadHeader returns the column names of a table (CSV header row, or the
// Parquet schema) without reading its data rows; "-" reads Options.Stdin.
func ReadHeader(path string, opt Options) ([]string, error) {
	// An empty schema: the Parquet reader consults it for its value
	// formatting only, which reading the header does not use.
	p := &pipeline{path: path, opt: opt, schema: &schema.Schema{}}
	var err error
	if p.sep, err = delimiter(opt.Delimiter); err != nil {
		return nil, err
	}
	var f *os.File
	in := io.Reader(nil)
	if path == "-" {
		in = opt.Stdin
		if in == nil {
			in = os.Stdin
		}
		p.path = "stdin"
	} else {
		if f, err = os.Open(path); err != nil {
			return nil, fmt.Errorf("dataset: %w", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.IsDir() {
			return nil, fmt.Errorf("dataset: %s: %w", path, ErrNotTable)
		}
		in = f
	}
	src, err := p.open(in, f)
	if err != nil {
		return nil, err
	}
	return src.header()
}
