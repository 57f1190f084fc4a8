package dataset

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// pqWide has every kind of column the reader serves: doubles (some out of
// range, transformed), float32, int32 and int64 numbers, an optional double
// (nulls), a categorical string, a categorical integer, and a labelled
// binary target.
type pqWide struct {
	D   float64  `parquet:"d"`
	L   float64  `parquet:"l"`
	F   float32  `parquet:"f"`
	I   int32    `parquet:"i"`
	J   int64    `parquet:"j"`
	O   *float64 `parquet:"o,optional"`
	Cat string   `parquet:"cat"`
	CI  int32    `parquet:"ci"`
	Y   string   `parquet:"y"`
}

const wideSchema = `{"target": {"name": "y", "positive": "yes", "negative": "no"},
 "features": [{"name": "d", "range": [-1, 1]}, {"name": "l", "transform": "log", "range": [0, 5]},
  {"name": "f", "range": [-2, 2]}, {"name": "i", "range": [0, 1000]}, {"name": "j", "range": [-1e12, 1e12]},
  {"name": "o", "range": [0, 1]}, {"name": "cat", "categories": ["a", "b", "c"]},
  {"name": "ci", "categories": ["1", "2", "3"]}]}`

func wideRecords(n int, nulls bool) []pqWide {
	rng := rand.New(rand.NewPCG(4, 4))
	recs := make([]pqWide, n)
	for r := range recs {
		o := rng.Float64()
		w := pqWide{D: rng.NormFloat64(), L: math.Exp(rng.Float64() * 6), F: float32(rng.NormFloat64() * 2),
			I: rng.Int32N(1200), J: rng.Int64() >> rng.IntN(60), O: &o,
			Cat: []string{"a", "b", "c"}[rng.IntN(3)], CI: 1 + rng.Int32N(3), Y: []string{"yes", "no"}[rng.IntN(2)]}
		if nulls && r%97 == 5 {
			w.O = nil
		}
		recs[r] = w
	}
	return recs
}

// wideCSV writes recs as CSV with every number in its shortest exact
// decimal, the text the row-API reader used to hand the encoder.
func wideCSV(t testing.TB, recs []pqWide) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wide.csv")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "d,l,f,i,j,o,cat,ci,y")
	g := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	for _, r := range recs {
		o := ""
		if r.O != nil {
			o = g(*r.O)
		}
		fmt.Fprintf(w, "%s,%s,%s,%d,%d,%s,%s,%d,%s\n", g(r.D), g(r.L), g(float64(r.F)), r.I, r.J, o, r.Cat, r.CI, r.Y)
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	return path
}

// TestParquetColumnsMatchCSV: a Parquet file of every column kind, in
// several row groups and many pages, encodes to the same rows, bit for bit,
// as the same table in CSV, and gives the same error for a null.
func TestParquetColumnsMatchCSV(t *testing.T) {
	s := mustSchema(t, wideSchema)
	recs := wideRecords(20000, false)
	path := filepath.Join(t.TempDir(), "wide.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w := parquet.NewGenericWriter[pqWide](f, parquet.PageBufferSize(4096), parquet.MaxRowsPerRowGroup(6000))
	for lo := 0; lo < len(recs); lo += 1000 {
		if _, err := w.Write(recs[lo : lo+1000]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	got, _, err := Load(context.Background(), path, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	want, _, err := Load(context.Background(), wideCSV(t, recs), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Rows) != len(want.Rows) {
		t.Fatalf("%d values, want %d", len(got.Rows), len(want.Rows))
	}
	for i := range want.Rows {
		if math.Float64bits(got.Rows[i]) != math.Float64bits(want.Rows[i]) {
			t.Fatalf("row %d, column %d: %v, CSV gives %v", i/want.K, i%want.K, got.Rows[i], want.Rows[i])
		}
	}

	nulls := wideRecords(300, true)
	npath := writeWide(t, nulls)
	_, _, err = Moments(context.Background(), npath, s, Options{})
	if err == nil || !strings.Contains(err.Error(), "wide.parquet:6:6: column \"o\"") {
		t.Fatalf("null: err = %v", err)
	}
}

func writeWide(t testing.TB, recs []pqWide) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wide.parquet")
	if err := parquet.WriteFile(path, recs, parquet.PageBufferSize(1024)); err != nil {
		t.Fatal(err)
	}
	return path
}

// BenchmarkParquetVsCSV reads the same 100,000 × 50 table (six-decimal
// values) as Parquet doubles and as CSV, in the same run, and reports
// rows/s of each: the columnar file should be at least as fast per row.
func BenchmarkParquetVsCSV(b *testing.B) {
	const n, cols = 100000, 50
	dir := b.TempDir()
	fields := parquet.Group{}
	var names, feats []string
	for j := 0; j < cols; j++ {
		name := fmt.Sprintf("c%02d", j)
		if j == cols-1 {
			name = "y"
		} else {
			feats = append(feats, fmt.Sprintf(`{"name": %q, "range": [-100, 100]}`, name))
		}
		names = append(names, name)
		fields[name] = parquet.Leaf(parquet.DoubleType)
	}
	sch := parquet.NewSchema("t", fields)
	pqPath, csvPath := filepath.Join(dir, "b.parquet"), filepath.Join(dir, "b.csv")
	pf, err := os.Create(pqPath)
	if err != nil {
		b.Fatal(err)
	}
	cf, err := os.Create(csvPath)
	if err != nil {
		b.Fatal(err)
	}
	cw := bufio.NewWriter(cf)
	fmt.Fprintln(cw, strings.Join(names, ","))
	pw := parquet.NewWriter(pf, sch)
	rng := rand.New(rand.NewPCG(1, 2))
	cols2 := sch.Columns() // sorted by name: c00..c48, y
	var line []byte
	for i := 0; i < n; i++ {
		row := make(parquet.Row, cols)
		line = line[:0]
		for j := range cols2 {
			v, _ := strconv.ParseFloat(strconv.FormatFloat(rng.Float64()*200-100, 'f', 6, 64), 64)
			row[j] = parquet.ValueOf(v).Level(0, 0, j)
			if j > 0 {
				line = append(line, ',')
			}
			line = strconv.AppendFloat(line, v, 'f', 6, 64)
		}
		line = append(line, '\n')
		cw.Write(line)
		if _, err := pw.WriteRows([]parquet.Row{row}); err != nil {
			b.Fatal(err)
		}
	}
	if err := pw.Close(); err != nil {
		b.Fatal(err)
	}
	pf.Close()
	cw.Flush()
	cf.Close()
	s := mustSchema(b, `{"target": {"name": "y", "range": [-100, 100]}, "features": [`+strings.Join(feats, ",")+`]}`)
	for _, tc := range []struct{ name, path string }{{"csv", csvPath}, {"parquet", pqPath}} {
		b.Run(tc.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				_, sum, err := Moments(context.Background(), tc.path, s, Options{})
				if err != nil || sum.Rows != n {
					b.Fatal(err, sum)
				}
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
		})
	}
}

// TestMomentsReader: the statistics of a gzip-compressed CSV stream equal
// those of the same file read by path, bit for bit, and errors name the
// stream.
func TestMomentsReader(t *testing.T) {
	s := mustSchema(t, wideSchema)
	path := wideCSV(t, wideRecords(3000, false))
	want, _, err := Moments(context.Background(), path, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	zw.Write(raw)
	zw.Close()
	got, sum, err := MomentsReader(context.Background(), &z, "remote/wide.csv.gz", s, Options{})
	if err != nil || sum.Rows != 3000 {
		t.Fatal(err, sum)
	}
	a, _ := want.MarshalBinary()
	b, _ := got.MarshalBinary()
	if !bytes.Equal(a, b) {
		t.Fatal("statistics of the stream differ from the file's")
	}
	bad := strings.Replace(string(raw), ",yes\n", ",maybe\n", 1)
	_, _, err = MomentsReader(context.Background(), strings.NewReader(bad), "remote/bad.csv", s, Options{})
	if err == nil || !strings.HasPrefix(err.Error(), "remote/bad.csv:") || !strings.Contains(err.Error(), `column "y"`) {
		t.Fatalf("err = %v", err)
	}
}
