package dataset

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestLoadReader checks that reading a stream gives exactly what reading
// the same bytes from a file gives, for plain and gzip CSV, and that errors
// carry the stream's name.
func TestLoadReader(t *testing.T) {
	s := mustSchema(t, testSchema)
	var b strings.Builder
	b.WriteString("y,a,b\n")
	for i := 0; i < 5000; i++ {
		b.WriteString([]string{"1.5,3,u\n", "-2,7.25,v\n", "\"4\",11,w\r\n"}[i%3])
	}
	data := []byte(b.String())
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write(data)
	zw.Close()
	want, _, err := Load(context.Background(), writeFile(t, "d.csv", data), s, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for name, in := range map[string][]byte{"plain": data, "gzip": gz.Bytes()} {
		got, sum, err := LoadReader(context.Background(), bytes.NewReader(in), "embedded.csv", s, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if sum.Rows != 5000 || got.K != want.K || len(got.Rows) != len(want.Rows) {
			t.Fatalf("%s: %d rows, K=%d", name, sum.Rows, got.K)
		}
		for i := range got.Rows {
			if got.Rows[i] != want.Rows[i] {
				t.Fatalf("%s: value %d differs: %v vs %v", name, i, got.Rows[i], want.Rows[i])
			}
		}
	}
	_, _, err = LoadReader(context.Background(), strings.NewReader("y,a,b\n1,2,u\n1,x,u\n"), "embedded.csv", s, Options{})
	var re *RowError
	if !errors.As(err, &re) || !strings.HasPrefix(err.Error(), "embedded.csv:3:2:") {
		t.Fatalf("error %v", err)
	}
	if _, _, err := LoadReader(context.Background(), strings.NewReader("PAR1...."), "x.parquet", s, Options{}); err == nil || !strings.Contains(err.Error(), "random access") {
		t.Fatalf("parquet stream: %v", err)
	}
	if _, _, err := LoadReader(context.Background(), nil, "x", s, Options{}); err == nil {
		t.Fatal("nil reader accepted")
	}
}

func TestSubset(t *testing.T) {
	tb := &Table{K: 2, Rows: []float64{0, 1, 10, 11, 20, 21}}
	got := tb.Subset([]int{2, 0})
	if got.K != 2 || len(got.Rows) != 4 || got.Rows[0] != 20 || got.Rows[3] != 1 {
		t.Fatalf("%+v", got)
	}
	got.Rows[0] = -1
	if tb.Rows[4] != 20 {
		t.Fatal("Subset shares memory with the table")
	}
}
