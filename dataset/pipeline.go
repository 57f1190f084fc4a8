package dataset

import (
	"bufio"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// chunkSize is the read size of the CSV splitter; chunks end at a record
// boundary, so a chunk holds chunkSize bytes give or take one record.
const chunkSize = 4 << 20

// maxWorkerWidth is the widest row for which workers keep per-chunk
// statistics.
const maxWorkerWidth = 256

// maxRecord bounds a single record (and the chunk buffer that holds it).
const maxRecord = 64 << 20

// chunk is a unit of parallel work: whole records and where they start.
type chunk struct {
	seq    int
	data   []byte // CSV: whole records (the worker may rewrite it in place)
	line   int    // CSV: physical line number of the first byte of data
	quoted bool   // CSV: data contains '"'
	pq     *pqBatch
	err    error // a splitter error to report at this position in the file
}

// result is a processed chunk.
type result struct {
	seq     int
	rows    []float64         // encoded rows (Stream, Load)
	mom     *suffstat.Moments // their statistics (Moments)
	n       int               // rows encoded
	skipped int               // rows skipped
	dropped int               // rows dropped for a missing value
	flags   []bool            // per encoded row: dropped (KeepDropped, Stream)
	kept    []string          // per encoded row: the Keep columns' raw values
	badCols map[string]int64  // skipped bad rows by the column at fault
	err     error             // first fatal error in the chunk
	buf     []byte            // the chunk's buffer, for reuse
}

// source yields the header and then chunks of records, sequentially.
type source interface {
	header() ([]string, error)
	next() (*chunk, error) // io.EOF at the end
}

type pipeline struct {
	path    string
	in      io.Reader // when non-nil, read from it instead of opening path
	schema  *schema.Schema
	opt     Options
	moments bool // accumulate statistics in the workers

	width   int
	workers int
	sep     byte  // CSV field delimiter
	keepIdx []int // field indices of Options.Keep
	enc     *schema.Encoder
	nh      int // fields per record
	names   []string
	rows    atomic.Int64
	counts  *countingReader
	free    chan []byte
	free64  chan []float64
	pqHex   []bool // Parquet: column i is numeric in the schema (its numbers go to the encoder as numbers)
	// csvNum: CSV field i belongs to a numeric column of the schema (and is
	// not passed through by Keep), so the splitter parses it (splitNumbers).
	csvNum []bool
}

// countingReader counts the bytes read from the file (for Summary and
// progress).
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

// open sniffs the format: Parquet by magic or extension, gzip by magic or
// extension, CSV otherwise. f is nil when reading from a stream, which
// cannot be Parquet (it needs random access).
func (p *pipeline) open(in io.Reader, f *os.File) (source, error) {
	p.counts = &countingReader{r: in}
	br := bufio.NewReaderSize(p.counts, 64<<10)
	head, _ := br.Peek(4)
	lower := strings.ToLower(p.path)
	if string(head) == "PAR1" || strings.HasSuffix(lower, ".parquet") {
		if f == nil {
			return nil, fmt.Errorf("%s: Parquet needs random access: read it from a file path", p.path)
		}
		return newParquetSource(p, f)
	}
	var r io.Reader = br
	if (len(head) >= 2 && head[0] == 0x1f && head[1] == 0x8b) || strings.HasSuffix(lower, ".gz") {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, fmt.Errorf("%s: gzip: %w", p.path, err)
		}
		r = zr
	}
	return &csvSource{p: p, r: r, line: 1, sep: p.sep}, nil
}

func (p *pipeline) run(ctx context.Context, consume func(*result) error) (sum Summary, err error) {
	if p.schema == nil {
		return sum, errors.New("dataset: nil schema")
	}
	if err := ctx.Err(); err != nil {
		return sum, fmt.Errorf("%s: %w", p.path, err)
	}
	var size int64 = -1
	var f *os.File
	if p.sep, err = delimiter(p.opt.Delimiter); err != nil {
		return sum, err
	}
	in := p.in
	if in == nil && p.path == "-" {
		in = p.opt.Stdin
		if in == nil {
			in = os.Stdin
		}
		p.path = "stdin"
	}
	if in == nil {
		if f, err = os.Open(p.path); err != nil {
			return sum, fmt.Errorf("dataset: %w", err)
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			size = st.Size()
		} else if err == nil && st.IsDir() {
			return sum, fmt.Errorf("dataset: %s: %w", p.path, ErrNotTable)
		}
		in = f
	}
	src, err := p.open(in, f)
	if err != nil {
		return sum, err
	}
	header, err := src.header()
	if err != nil {
		return sum, err
	}
	p.names = header
	p.nh = len(header)
	p.enc, err = p.schema.NewEncoder(header, schema.EncoderOptions{TargetOptional: p.opt.TargetOptional, IgnoreTarget: p.opt.IgnoreTarget})
	if err != nil {
		if d := likelyDelimiter(header, p.sep); d != 0 {
			return sum, fmt.Errorf("%s: header: %w", p.path, &DelimiterError{Header: header[0], Likely: d})
		}
		var me *schema.MissingColumnsError
		if errors.As(err, &me) {
			return sum, fmt.Errorf("%s: header: %w; the header has %s", p.path, err, headerList(header))
		}
		return sum, fmt.Errorf("%s: header: %w", p.path, err)
	}
	if p.keepIdx, err = keepIndices(header, p.opt.Keep); err != nil {
		return sum, fmt.Errorf("%s: header: %w", p.path, err)
	}
	p.width = p.enc.Width()
	sum.HasTarget = p.enc.HasTarget()
	if _, ok := src.(*csvSource); ok {
		p.csvNum = p.numericFields(header)
	}

	workers := p.opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	p.workers = workers
	if p.moments {
		if err := CheckWidth(p.width, workers, 0); err != nil {
			return sum, fmt.Errorf("%s: %w", p.path, err)
		}
	}
	if p.width > maxWorkerWidth {
		// Per-chunk accumulators would cost O(workers·K²) memory and a
		// K² merge per chunk: hand the rows to the consumer instead.
		p.moments = false
	}
	inflight := 2*workers + 1
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tokens := make(chan struct{}, inflight)
	chunks := make(chan *chunk)
	results := make(chan *result, inflight+1)
	p.free = make(chan []byte, inflight+1)
	p.free64 = make(chan []float64, inflight+1)
	moms := make(chan *suffstat.Moments, inflight+1)

	if p.opt.Progress != nil {
		stop := p.progress(size)
		defer stop()
	}

	// Splitter: reads sequentially, one token per chunk in flight.
	go func() {
		defer close(chunks)
		for seq := 0; ; seq++ {
			select {
			case tokens <- struct{}{}:
			case <-ctx.Done():
				return
			}
			c, err := src.next()
			if err == io.EOF {
				return
			}
			if err != nil {
				// Report the error in file order, after earlier chunks.
				c = &chunk{err: err}
			}
			c.seq = seq
			select {
			case chunks <- c:
			case <-ctx.Done():
				return
			}
			if err != nil {
				return
			}
		}
	}()

	var wg sync.WaitGroup
	counts := make([]*schema.Counts, workers)
	for w := 0; w < workers; w++ {
		wg.Add(1)
		counts[w] = p.enc.NewCounts()
		go func() {
			defer wg.Done()
			wk := &worker{p: p, dst: make([]float64, p.width), counts: counts[w]}
			for c := range chunks {
				r := &result{seq: c.seq, buf: c.data}
				if !p.moments {
					select {
					case r.rows = <-p.free64:
					default:
					}
				}
				switch {
				case c.err != nil:
					r.err = c.err
				case ctx.Err() != nil:
					r.err = ctx.Err()
				default:
					if p.moments {
						select {
						case r.mom = <-moms:
						default:
							r.mom = suffstat.New(p.width)
							r.mom.SetWorkers(1)
						}
					}
					wk.process(c, r)
				}
				results <- r
			}
		}()
	}
	go func() {
		wg.Wait()
		close(results)
	}()

	// Consumer: results in file order.
	pending := make(map[int]*result)
	next := 0
	var firstErr error
	for r := range results {
		if firstErr != nil {
			continue // draining
		}
		pending[r.seq] = r
		for {
			r, ok := pending[next]
			if !ok {
				break
			}
			delete(pending, next)
			next++
			<-tokens
			sum.Rows += int64(r.n)
			sum.Skipped += int64(r.skipped)
			sum.Dropped += int64(r.dropped)
			for name, n := range r.badCols {
				if sum.SkippedByColumn == nil {
					sum.SkippedByColumn = map[string]int64{}
				}
				sum.SkippedByColumn[name] += n
			}
			err := r.err
			if err == nil && ctx.Err() != nil {
				err = ctx.Err()
			}
			if err == nil {
				err = consume(r)
			}
			p.recycle(r, moms)
			if err != nil {
				firstErr = err
				cancel()
				break
			}
			p.rows.Store(sum.Rows)
		}
	}
	sum.Bytes = p.counts.n.Load()
	// Every worker has finished: results is closed only after wg.Wait.
	total := p.enc.NewCounts()
	for _, c := range counts {
		total.Add(c)
	}
	sum.Columns = total
	// A cancellation that stopped the splitter between chunks leaves no
	// result carrying the error: without this check a cancelled read would
	// return a truncated table as if it were complete.
	if firstErr == nil && ctx.Err() != nil {
		firstErr = ctx.Err()
	}
	if firstErr != nil {
		if errors.Is(firstErr, context.Canceled) || errors.Is(firstErr, context.DeadlineExceeded) {
			return sum, fmt.Errorf("%s: read stopped: %w", p.path, firstErr)
		}
		return sum, firstErr
	}
	if sum.Rows == 0 {
		if sum.Dropped > 0 {
			return sum, fmt.Errorf("%s: %w (all %s dropped for missing values)", p.path, ErrNoRows, Plural(sum.Dropped+sum.Skipped, "row"))
		}
		if sum.Skipped > 0 {
			return sum, fmt.Errorf("%s: %w (all %s skipped as bad)", p.path, ErrNoRows, Plural(sum.Skipped, "row"))
		}
		return sum, fmt.Errorf("%s: %w", p.path, ErrNoRows)
	}
	return sum, nil
}

func (p *pipeline) recycle(r *result, moms chan *suffstat.Moments) {
	if r.buf != nil {
		select {
		case p.free <- r.buf[:0]:
		default:
		}
	}
	if r.rows != nil {
		select {
		case p.free64 <- r.rows[:0]:
		default:
		}
	}
	r.flags, r.kept = nil, nil
	if r.mom != nil {
		r.mom.Reset()
		select {
		case moms <- r.mom:
		default:
		}
	}
}

// getBuf returns a reusable buffer with capacity at least n.
func (p *pipeline) getBuf(n int) []byte {
	select {
	case b := <-p.free:
		if cap(b) >= n {
			return b[:0]
		}
	default:
	}
	return make([]byte, 0, n)
}

// worker parses and encodes chunks.
type worker struct {
	p      *pipeline
	fields [][]byte
	text   []byte // Parquet: values formatted as text
	ends   []int  // Parquet: end of each value in text
	// Parquet and CSV: while numbers is set, field i is nums[i] where
	// isNum[i] (schema.Encoder.EncodeNumbersCounted).
	numbers bool
	// textErrors (CSV): on an encoding error, encode the text fields again
	// for the error (its value quoted as the file holds it).
	textErrors bool
	nums       []float64
	isNum      []bool
	dst        []float64
	rows       []float64 // Moments mode: reused row buffer
	counts     *schema.Counts
}

// emit encodes one record, or records why it cannot be. It returns false when
// the chunk must stop (a fatal error was stored in r).
func (w *worker) emit(r *result, fields [][]byte, line int) bool {
	p := w.p
	var rerr *RowError
	if len(fields) != p.nh {
		col := len(fields) + 1
		if len(fields) > p.nh {
			col = p.nh + 1
		}
		rerr = &RowError{File: p.path, Line: line, Column: col,
			Err: fmt.Errorf("%w: record has %d, header has %d", ErrFieldCount, len(fields), p.nh)}
		if col <= p.nh {
			rerr.ColumnName = p.names[col-1]
		}
	} else {
		k := p.width
		start := len(r.rows)
		if p.moments {
			start = len(w.rows)
			w.rows = append(w.rows, w.dst...)
		} else {
			r.rows = append(r.rows, w.dst...)
		}
		var dst []float64
		if p.moments {
			dst = w.rows[start : start+k]
		} else {
			dst = r.rows[start : start+k]
		}
		var err error
		if w.numbers {
			err = p.enc.EncodeNumbersCounted(fields, w.nums[:len(fields)], w.isNum[:len(fields)], dst, w.counts)
			if err != nil && w.textErrors {
				// The same column fails on the text path (a number takes
				// the path of its text), with the field's text in the
				// message; counts are not touched twice.
				if terr := p.enc.Encode(fields, dst); terr != nil {
					err = terr
				}
			}
		} else {
			err = p.enc.EncodeCounted(fields, dst, w.counts)
		}
		dropped := err != nil && errors.Is(err, schema.ErrDropped)
		if dropped && p.opt.KeepDropped {
			clear(dst)
			r.dropped++
			err = nil
		}
		if err == nil {
			r.n++
			if p.opt.KeepDropped && !p.moments {
				r.flags = append(r.flags, dropped)
			}
			for _, i := range p.keepIdx {
				if w.numbers && w.isNum[i] {
					r.kept = append(r.kept, strconv.FormatFloat(w.nums[i], 'g', -1, 64))
				} else {
					r.kept = append(r.kept, string(fields[i]))
				}
			}
			return true
		}
		if p.moments {
			w.rows = w.rows[:start]
		} else {
			r.rows = r.rows[:start]
		}
		if dropped && p.opt.SkipDropped {
			r.dropped++
			return true
		}
		if dropped {
			err = fmt.Errorf("%w; this reader neither keeps nor leaves out dropped records (Options.KeepDropped, Options.SkipDropped): declare \"impute\" instead, or complete the data", err)
		}
		rerr = &RowError{File: p.path, Line: line, Err: err}
		var fe *schema.FieldError
		if errors.As(err, &fe) {
			rerr.Column = fe.Index + 1
			rerr.ColumnName = fe.Column
		}
	}
	return w.bad(r, rerr)
}

// bad handles a bad record: skip and count it, or stop.
func (w *worker) bad(r *result, e *RowError) bool {
	if w.p.opt.SkipBadRows && !errors.Is(e.Err, ErrUnterminated) {
		r.skipped++
		if w.p.opt.KeepBadRows {
			w.zeroRow(r)
		}
		name := e.ColumnName
		if name == "" {
			name = "(whole record)"
		}
		if r.badCols == nil {
			r.badCols = map[string]int64{}
		}
		r.badCols[name]++
		return true
	}
	r.err = e
	return false
}

// zeroRow appends an all-zero encoded row for a bad record that is kept
// (Options.KeepBadRows), with the bookkeeping of an encoded row.
func (w *worker) zeroRow(r *result) {
	p := w.p
	zero := make([]float64, p.width)
	if p.moments {
		w.rows = append(w.rows, zero...)
	} else {
		r.rows = append(r.rows, zero...)
	}
	r.n++
	if p.opt.KeepDropped && !p.moments {
		r.flags = append(r.flags, true)
	}
	for range p.keepIdx {
		r.kept = append(r.kept, "")
	}
}

func (w *worker) process(c *chunk, r *result) {
	if c.pq != nil {
		w.parquetChunk(c, r)
	} else {
		w.csvChunk(c, r)
	}
	if w.p.moments {
		if r.err == nil && len(w.rows) > 0 {
			if err := r.mom.AddRows(w.rows); err != nil {
				r.err = fmt.Errorf("%s: %w", w.p.path, err)
			}
		}
		w.rows = w.rows[:0]
	}
}

// headerList quotes the first header names for an error message.
func headerList(header []string) string {
	const max = 12
	var q []string
	for i, h := range header {
		if i == max {
			q = append(q, fmt.Sprintf("… (%d columns)", len(header)))
			break
		}
		q = append(q, strconv.Quote(h))
	}
	return strings.Join(q, ", ")
}
