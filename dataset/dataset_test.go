package dataset

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

const testSchema = `{"target": {"name": "y", "range": [-10, 10]},
 "features": [{"name": "a", "range": [0, 10]}, {"name": "b", "categories": ["u", "v", "w"]}]}`

func mustSchema(t testing.TB, js string) *schema.Schema {
	t.Helper()
	s, err := schema.Parse([]byte(js))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func writeFile(t testing.TB, name string, data []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if strings.HasSuffix(name, ".gz") {
		var b bytes.Buffer
		zw := gzip.NewWriter(&b)
		zw.Write(data)
		zw.Close()
		data = b.Bytes()
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// encodeNaive encodes a small CSV with encoding/csv-free logic: records are
// given as field slices, so the expected rows come straight from the schema.
func encodeRecords(t testing.TB, s *schema.Schema, header []string, recs [][]string) []float64 {
	t.Helper()
	enc, err := s.NewEncoder(header, schema.EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []float64
	dst := make([]float64, enc.Width())
	for _, r := range recs {
		f := make([][]byte, len(r))
		for i := range r {
			f[i] = []byte(r[i])
		}
		if err := enc.Encode(f, dst); err != nil {
			t.Fatal(err)
		}
		out = append(out, dst...)
	}
	return out
}

func TestReadFormats(t *testing.T) {
	s := mustSchema(t, testSchema)
	header := []string{"a", "b", "y"}
	recs := [][]string{{"1", "u", "2"}, {"3", "v", "-1"}, {"5", "w,x", "4"}, {"7", `say "hi"`, "0"}, {"2.5", "u", "-20"}}
	// The schema has no "w,x" or `say "hi"` categories: use them only where
	// the test needs quoting, mapped back to valid categories below.
	valid := [][]string{{"1", "u", "2"}, {"3", "v", "-1"}, {"5", "w", "4"}, {"7", "v", "0"}, {"2.5", "u", "-20"}}
	_ = recs
	want := encodeRecords(t, s, header, valid)
	for _, tc := range []struct{ name, file, text string }{
		{"plain", "d.csv", "a,b,y\n1,u,2\n3,v,-1\n5,w,4\n7,v,0\n2.5,u,-20\n"},
		{"crlf", "d.csv", "a,b,y\r\n1,u,2\r\n3,v,-1\r\n5,w,4\r\n7,v,0\r\n2.5,u,-20\r\n"},
		{"no final newline", "d.csv", "a,b,y\n1,u,2\n3,v,-1\n5,w,4\n7,v,0\n2.5,u,-20"},
		{"quoted", "d.csv", "\"a\",\"b\",\"y\"\n\"1\",\"u\",2\n3,\"v\",\"-1\"\r\n5,\"w\",4\n7,v,0\n2.5,u,\"-20\""},
		{"reordered columns", "d.csv", "y,b,a\n2,u,1\n-1,v,3\n4,w,5\n0,v,7\n-20,u,2.5\n"},
		{"extra columns and blank lines", "d.csv", "id,a,b,y\n\n1,1,u,2\n2,3,v,-1\n\r\n3,5,w,4\n4,7,v,0\n5,2.5,u,-20\n\n"},
		{"bom and spaces", "d.csv", "\ufeffa,b,y\n 1 ,u,2\n3,v, -1\n5,w,4\n7,v,0\n2.5,u,-20\n"},
		{"gzip", "d.csv.gz", "a,b,y\n1,u,2\n3,v,-1\n5,w,4\n7,v,0\n2.5,u,-20\n"},
		{"quoted newline in unused column", "d.csv", "note,a,b,y\n\"x\ny\",1,u,2\n\"\"\"q\"\"\",3,v,-1\n,5,w,4\nz,7,v,0\n\"a,b\",2.5,u,-20\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, tc.file, []byte(tc.text))
			for _, cs := range []int{0, 1, 7} { // default, tiny and odd chunk sizes
				opt := Options{chunkSize: cs, Workers: 3}
				tab, sum, err := Load(context.Background(), path, s, opt)
				if err != nil {
					t.Fatal(err)
				}
				if sum.Rows != 5 || tab.N() != 5 || tab.K != 5 {
					t.Fatalf("rows %d, table %d×%d", sum.Rows, tab.N(), tab.K)
				}
				for i := range want {
					if tab.Rows[i] != want[i] {
						t.Fatalf("chunk %d: row %d differs: %v vs %v", cs, i/5, tab.Rows[i/5*5:i/5*5+5], want[i/5*5:i/5*5+5])
					}
				}
				m, _, err := Moments(context.Background(), path, s, opt)
				if err != nil {
					t.Fatal(err)
				}
				ref := suffstat.New(5)
				ref.AddRows(want)
				for i := 0; i < 5; i++ {
					if math.Abs(m.Sum(i)-ref.Sum(i)) > 1e-14 {
						t.Fatalf("Sum(%d) = %v, want %v", i, m.Sum(i), ref.Sum(i))
					}
					for j := 0; j < 5; j++ {
						if math.Abs(m.At(i, j)-ref.At(i, j)) > 1e-14 {
							t.Fatalf("At(%d,%d) = %v, want %v", i, j, m.At(i, j), ref.At(i, j))
						}
					}
				}
			}
		})
	}
}

func TestReadErrors(t *testing.T) {
	s := mustSchema(t, testSchema)
	for _, tc := range []struct {
		name, text string
		want       string // substring of the error
		is         error
		skipped    int64 // with SkipBadRows (-1: fatal even then)
	}{
		{"empty", "", "empty file", ErrNoHeader, -1},
		{"only blank lines", "\n\r\n", "empty file", ErrNoHeader, -1},
		{"header only", "a,b,y\n", "no data rows", ErrNoRows, -1},
		{"missing column", "a,y\n1,2\n", `missing column(s) "b"`, nil, -1},
		{"not a number", "a,b,y\n1,u,2\nabc,u,2\n", `d.csv:3:1: column "a": value "abc": not a number`, schema.ErrNotNumber, 1},
		{"nan", "a,b,y\n1,u,2\n1,u,NaN\n", `d.csv:3:3: column "y"`, schema.ErrMissingValue, 1},
		{"infinity", "a,b,y\n1,u,2\n1,u,Infinity\n", `d.csv:3:3: column "y"`, schema.ErrNotFinite, 1},
		{"inf", "a,b,y\n1,u,2\n-Inf,u,1\n", `d.csv:3:1: column "a"`, schema.ErrNotFinite, 1},
		{"overflow", "a,b,y\n1,u,2\n1e999,u,1\n", `d.csv:3:1: column "a"`, schema.ErrNotFinite, 1},
		{"empty value", "a,b,y\n1,u,2\n,u,1\n", `d.csv:3:1: column "a"`, schema.ErrMissingValue, 1},
		{"unknown category", "a,b,y\n1,u,2\n1,q,1\n", `d.csv:3:2: column "b"`, schema.ErrUnknownCategory, 1},
		{"too few fields", "a,b,y\n1,u,2\n1,u\n", `d.csv:3:3: wrong number of fields: record has 2, header has 3`, ErrFieldCount, 1},
		{"too many fields", "a,b,y\n1,u,2\n1,u,2,4\n", `d.csv:3:4: wrong number of fields: record has 4, header has 3`, ErrFieldCount, 1},
		{"bare quote", "a,b,y\n1,u,2\n1,u\"x,2\n3,v,1\n", `d.csv:3:2: bad quoting`, ErrBareQuote, 1},
		{"text after closing quote", "a,b,y\n1,\"u\"x,2\n3,v,1\n", `d.csv:2:2: bad quoting`, ErrQuoteEnd, 1},
		{"unterminated (truncated)", "a,b,y\n1,u,2\n1,\"u,2\n", `d.csv:3:2: bad quoting: quoted field not closed`, ErrUnterminated, -1},
		{"line after multi-line record", "a,b,y,n\n1,u,2,\"x\ny\"\n1,u,zz,k\n", `d.csv:4:3: column "y"`, schema.ErrNotNumber, 1},
		{"bad header quoting", "a,\"b\"x,y\n1,u,2\n", `d.csv:1:2: header: bad quoting`, ErrQuoteEnd, -1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, "d.csv", []byte(tc.text))
			_, _, err := Moments(context.Background(), path, s, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("err = %v, want errors.Is %v", err, tc.is)
			}
			_, sum, err := Moments(context.Background(), path, s, Options{SkipBadRows: true})
			if tc.skipped < 0 {
				if err == nil {
					t.Fatal("SkipBadRows: no error")
				}
				return
			}
			if err != nil {
				t.Fatalf("SkipBadRows: %v", err)
			}
			if sum.Skipped != tc.skipped {
				t.Fatalf("skipped %d, want %d", sum.Skipped, tc.skipped)
			}
		})
	}
}

func TestRowErrorType(t *testing.T) {
	s := mustSchema(t, testSchema)
	path := writeFile(t, "d.csv", []byte("a,b,y\n1,u,2\n1,u,x\n"))
	_, _, err := Moments(context.Background(), path, s, Options{})
	var re *RowError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, not a *RowError", err)
	}
	if re.File != path || re.Line != 3 || re.Column != 3 || re.ColumnName != "y" {
		t.Fatalf("RowError = %+v", re)
	}
}

// bigCSV writes n random rows of the test schema and returns the path and
// the records.
func bigCSV(t testing.TB, n int, seed uint64) (string, [][]string) {
	rng := rand.New(rand.NewPCG(seed, 1))
	var b bytes.Buffer
	b.WriteString("a,b,y\n")
	recs := make([][]string, n)
	cats := []string{"u", "v", "w"}
	for i := range recs {
		r := []string{fmt.Sprintf("%.6f", rng.Float64()*12-1), cats[rng.IntN(3)], fmt.Sprintf("%.6f", rng.NormFloat64()*5)}
		recs[i] = r
		if i%7 == 0 {
			fmt.Fprintf(&b, "%s,\"%s\",%s\r\n", r[0], r[1], r[2])
		} else {
			fmt.Fprintf(&b, "%s,%s,%s\n", r[0], r[1], r[2])
		}
	}
	return writeFile(t, "big.csv", b.Bytes()), recs
}

func TestMomentsDeterministicAcrossWorkers(t *testing.T) {
	s := mustSchema(t, testSchema)
	n := 20000
	if testing.Short() {
		n = 5000
	}
	path, recs := bigCSV(t, n, 3)
	rows := encodeRecords(t, s, []string{"a", "b", "y"}, recs)
	ref := suffstat.New(5)
	ref.AddRows(rows)
	var first []byte
	for _, w := range []int{1, 2, 5} {
		m, sum, err := Moments(context.Background(), path, s, Options{Workers: w, chunkSize: 4096})
		if err != nil {
			t.Fatal(err)
		}
		if sum.Rows != int64(n) {
			t.Fatalf("rows %d, want %d", sum.Rows, n)
		}
		for i := 0; i < 5; i++ {
			for j := i; j < 5; j++ {
				if d := math.Abs(m.At(i, j) - ref.At(i, j)); d > 1e-13*float64(n) { // rounding bound ≈ 320·u·Σ|z_i z_j|
					t.Fatalf("At(%d,%d) differs by %g", i, j, d)
				}
			}
		}
		b, _ := m.MarshalBinary()
		if first == nil {
			first = b
		} else if !bytes.Equal(first, b) {
			t.Fatalf("workers=%d: statistics differ bitwise from workers=1", w)
		}
	}
	// Stream delivers the rows in file order.
	var got []float64
	if _, err := Stream(context.Background(), path, s, Options{chunkSize: 4096}, func(r []float64) error {
		got = append(got, r...)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("stream: %d values, want %d", len(got), len(rows))
	}
	for i := range rows {
		if got[i] != rows[i] {
			t.Fatalf("stream: value %d differs", i)
		}
	}
}

func TestCancel(t *testing.T) {
	s := mustSchema(t, testSchema)
	path, _ := bigCSV(t, 5000, 4)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := Moments(ctx, path, s, Options{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// Cancel at the first delivered chunk of a file far larger than any
	// chunk (recycled buffers can make chunks larger than chunkSize, so a
	// small file may arrive in two).
	big, _ := bigCSV(t, 50000, 4)
	ctx, cancel = context.WithCancel(context.Background())
	defer cancel()
	calls := 0
	_, err := Stream(ctx, big, s, Options{chunkSize: 1024}, func([]float64) error {
		calls++
		if calls == 1 {
			cancel()
		}
		return nil
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	stop := errors.New("enough")
	if _, err := Stream(context.Background(), path, s, Options{chunkSize: 1024}, func([]float64) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("err = %v, want the callback's error", err)
	}
}

func TestProgress(t *testing.T) {
	s := mustSchema(t, testSchema)
	path, _ := bigCSV(t, 1000, 5)
	var b bytes.Buffer
	if _, _, err := Moments(context.Background(), path, s, Options{Progress: &b}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "1000 rows") {
		t.Fatalf("progress output %q lacks the row count", b.String())
	}
}

func TestMissingFile(t *testing.T) {
	s := mustSchema(t, testSchema)
	_, _, err := Moments(context.Background(), filepath.Join(t.TempDir(), "nope.csv"), s, Options{})
	if !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("err = %v", err)
	}
}

// TestQuotedAcrossChunks: quoted fields with embedded newlines and bad
// quoting far into a file, for chunk sizes that split records anywhere.
func TestQuotedAcrossChunks(t *testing.T) {
	s := mustSchema(t, testSchema)
	var b strings.Builder
	b.WriteString("note,a,b,y\n")
	line := 2
	n := 300
	for i := 0; i < n; i++ {
		fmt.Fprintf(&b, "\"multi\nline \"\"%d\"\"\",%d,u,1\n", i, i%10)
		line += 2
	}
	badLine := line
	b.WriteString("x,1,u\"v,2\n") // bare quote
	for i := 0; i < 50; i++ {
		b.WriteString("plain,1,v,2\n")
	}
	path := writeFile(t, "q.csv", []byte(b.String()))
	for _, cs := range []int{0, 5, 64, 1000} {
		_, _, err := Moments(context.Background(), path, s, Options{chunkSize: cs})
		want := fmt.Sprintf("q.csv:%d:3: bad quoting", badLine)
		if !errors.Is(err, ErrBareQuote) || !strings.Contains(err.Error(), want) {
			t.Fatalf("chunk %d: err = %v, want %q", cs, err, want)
		}
		_, sum, err := Moments(context.Background(), path, s, Options{chunkSize: cs, SkipBadRows: true})
		if err != nil || sum.Rows != int64(n+50) || sum.Skipped != 1 {
			t.Fatalf("chunk %d, skip: %v, %+v", cs, err, sum)
		}
	}
}

func TestTargetOptional(t *testing.T) {
	s := mustSchema(t, testSchema)
	path := writeFile(t, "p.csv", []byte("a,b\n1,u\n3,v\n"))
	if _, _, err := Load(context.Background(), path, s, Options{}); err == nil || !strings.Contains(err.Error(), `missing column(s) "y"`) {
		t.Fatalf("err = %v, want the missing target named", err)
	}
	tab, sum, err := Load(context.Background(), path, s, Options{TargetOptional: true})
	if err != nil {
		t.Fatal(err)
	}
	if sum.HasTarget || tab.N() != 2 || tab.Row(1)[tab.K-1] != 0 {
		t.Fatalf("HasTarget %v, rows %d, target slot %v", sum.HasTarget, tab.N(), tab.Row(1)[tab.K-1])
	}
	_, sum, _ = Load(context.Background(), writeFile(t, "q.csv", []byte("a,b,y\n1,u,1\n")), s, Options{TargetOptional: true})
	if !sum.HasTarget {
		t.Fatal("HasTarget false with the target present")
	}
}

// TestWideRows covers K > maxWorkerWidth, where the consumer accumulates.
func TestWideRows(t *testing.T) {
	cats := make([]string, 300)
	for i := range cats {
		cats[i] = fmt.Sprintf("%q", fmt.Sprintf("k%d", i))
	}
	s := mustSchema(t, `{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "c", "categories": [`+strings.Join(cats, ",")+`]}, {"name": "a", "range": [0, 1]}]}`)
	var b strings.Builder
	b.WriteString("c,a,y\n")
	for i := 0; i < 3000; i++ {
		fmt.Fprintf(&b, "k%d,%g,%g\n", (i*7)%300, float64(i%10)/10, float64(i%3)/2)
	}
	path := writeFile(t, "w.csv", []byte(b.String()))
	tab, _, err := Load(context.Background(), path, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if tab.K <= maxWorkerWidth {
		t.Fatalf("K = %d, want > %d", tab.K, maxWorkerWidth)
	}
	ref := suffstat.New(tab.K)
	ref.AddRows(tab.Rows)
	m, sum, err := Moments(context.Background(), path, s, Options{chunkSize: 8192})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Rows != 3000 || m.N() != 3000 {
		t.Fatalf("rows %d", sum.Rows)
	}
	for i := 0; i < tab.K; i += 7 {
		for j := i; j < tab.K; j += 5 {
			if d := math.Abs(m.At(i, j) - ref.At(i, j)); d > 1e-12 {
				t.Fatalf("At(%d,%d) differs by %g", i, j, d)
			}
		}
	}
}

func TestTruncatedGzip(t *testing.T) {
	s := mustSchema(t, testSchema)
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	fmt.Fprintf(zw, "a,b,y\n")
	for i := 0; i < 20000; i++ {
		fmt.Fprintf(zw, "%d,u,%d\n", i%10, i%7)
	}
	zw.Close()
	data := b.Bytes()
	path := filepath.Join(t.TempDir(), "t.csv.gz")
	if err := os.WriteFile(path, data[:len(data)*2/3], 0o600); err != nil {
		t.Fatal(err)
	}
	_, _, err := Moments(context.Background(), path, s, Options{SkipBadRows: true})
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Fatalf("err = %v, want a truncation error", err)
	}
}

// TestLongHeaderAfterBlankLines: a header longer than the first read,
// preceded by blank lines, keeps line numbers right.
func TestLongHeaderAfterBlankLines(t *testing.T) {
	s := mustSchema(t, testSchema)
	var b strings.Builder
	b.WriteString("\n\n")
	for i := 0; i < 2000; i++ {
		fmt.Fprintf(&b, "pad%d,", i)
	}
	b.WriteString("a,b,y\n")
	pad := strings.Repeat("0,", 2000)
	b.WriteString(pad + "1,u,2\n")
	b.WriteString(pad + "1,u,x\n")
	path := writeFile(t, "h.csv", []byte(b.String()))
	_, _, err := Moments(context.Background(), path, s, Options{})
	if err == nil || !strings.Contains(err.Error(), "h.csv:5:2003:") {
		t.Fatalf("err = %v, want line 5, field 2003", err)
	}
}

// TestGzipEqualsPlain: the statistics of a compressed file are bit-identical
// to those of the plain file.
func TestGzipEqualsPlain(t *testing.T) {
	s := mustSchema(t, testSchema)
	plain, _ := bigCSV(t, 3000, 8)
	data, err := os.ReadFile(plain)
	if err != nil {
		t.Fatal(err)
	}
	gz := writeFile(t, "big.csv.gz", data)
	var enc [2][]byte
	for i, p := range []string{plain, gz} {
		m, _, err := Moments(context.Background(), p, s, Options{chunkSize: 2048})
		if err != nil {
			t.Fatal(err)
		}
		enc[i], _ = m.MarshalBinary()
	}
	if !bytes.Equal(enc[0], enc[1]) {
		t.Fatal("gzip and plain statistics differ")
	}
}
