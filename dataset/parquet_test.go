package dataset

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/dplearn/dplearn/schema"
)

type pqRec struct {
	A float64  `parquet:"a"`
	B string   `parquet:"b"`
	Y *float64 `parquet:"y,optional"`
	N int32    `parquet:"n"`
}

func writeParquet(t testing.TB, name string, recs []pqRec) string {
	t.Helper()
	var b bytes.Buffer
	if err := parquet.Write(&b, recs, parquet.PageBufferSize(256)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func f64(v float64) *float64 { return &v }

func TestParquet(t *testing.T) {
	s := mustSchema(t, testSchema)
	recs := []pqRec{{1, "u", f64(2), 0}, {3, "v", f64(-1), 1}, {5, "w", f64(4), 2}, {7, "v", f64(0), 3}, {2.5, "u", f64(-20), 4}}
	path := writeParquet(t, "d.parquet", recs)
	want := encodeRecords(t, s, []string{"a", "b", "y"}, [][]string{{"1", "u", "2"}, {"3", "v", "-1"}, {"5", "w", "4"}, {"7", "v", "0"}, {"2.5", "u", "-20"}})
	tab, sum, err := Load(context.Background(), path, s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Rows != 5 || len(tab.Rows) != len(want) {
		t.Fatalf("rows %d, values %d", sum.Rows, len(tab.Rows))
	}
	for i := range want {
		if tab.Rows[i] != want[i] {
			t.Fatalf("value %d: %v, want %v", i, tab.Rows[i], want[i])
		}
	}
	m, _, err := Moments(context.Background(), path, s, Options{})
	if err != nil || m.N() != 5 {
		t.Fatalf("Moments: %v", err)
	}

	// A null target is a missing value at row 2, column 3.
	recs[1].Y = nil
	path = writeParquet(t, "null.parquet", recs)
	_, _, err = Moments(context.Background(), path, s, Options{})
	if !errors.Is(err, schema.ErrMissingValue) || !strings.Contains(err.Error(), "null.parquet:2:3:") {
		t.Fatalf("null: err = %v", err)
	}
	_, sum, err = Moments(context.Background(), path, s, Options{SkipBadRows: true})
	if err != nil || sum.Skipped != 1 || sum.Rows != 4 {
		t.Fatalf("null, skip: %v %+v", err, sum)
	}
}

func TestParquetMalformed(t *testing.T) {
	s := mustSchema(t, testSchema)
	var recs []pqRec
	for i := 0; i < 2000; i++ {
		recs = append(recs, pqRec{float64(i % 10), "v", f64(1), int32(i)})
	}
	good, err := os.ReadFile(writeParquet(t, "g.parquet", recs))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"magic only", []byte("PAR1")},
		{"truncated footer", good[:len(good)-10]},
		{"truncated half", good[:len(good)/2]},
		{"garbage", bytes.Repeat([]byte("PAR1xyz"), 100)},
		{"corrupt middle", func() []byte {
			b := bytes.Clone(good)
			for i := len(b) / 4; i < len(b)/2; i++ {
				b[i] ^= 0x5a
			}
			return b
		}()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.parquet")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, _, err := Moments(context.Background(), path, s, Options{}); err == nil {
				t.Fatal("no error")
			}
		})
	}
}

// FuzzReadParquet mutates a valid Parquet file: the reader must return an
// error or rows, never panic. Seed corpus: testdata/fuzz/FuzzReadParquet.
func FuzzReadParquet(f *testing.F) {
	var recs []pqRec
	for i := 0; i < 50; i++ {
		recs = append(recs, pqRec{float64(i % 10), []string{"u", "v", "w"}[i%3], f64(float64(i%7 - 3)), int32(i)})
	}
	var b bytes.Buffer
	if err := parquet.Write(&b, recs); err != nil {
		f.Fatal(err)
	}
	f.Add(b.Bytes())
	f.Add(b.Bytes()[:b.Len()/2])
	s, err := schema.Parse([]byte(testSchema))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.parquet")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		m, sum, err := Moments(context.Background(), path, s, Options{SkipBadRows: true})
		if err == nil && (m.N() != sum.Rows || sum.Rows == 0) {
			t.Fatalf("N %d, rows %d", m.N(), sum.Rows)
		}
	})
}

// TestParquetErrorShowsDecimal: a float value the encoder rejects is shown
// in decimal, not in the hex form it travelled in.
func TestParquetErrorShowsDecimal(t *testing.T) {
	s := mustSchema(t, `{"target": {"name": "y", "range": [-10, 10]},
	 "features": [{"name": "a", "transform": "log", "range": [0, 3]}, {"name": "b", "categories": ["u", "v"]}]}`)
	path := writeParquet(t, "neg.parquet", []pqRec{{1.5, "u", f64(1), 0}, {-2.5, "v", f64(1), 1}})
	_, _, err := Moments(context.Background(), path, s, Options{})
	if err == nil || !strings.Contains(err.Error(), `neg.parquet:2:1: column "a": value "-2.5"`) {
		t.Fatalf("err = %v", err)
	}
}
