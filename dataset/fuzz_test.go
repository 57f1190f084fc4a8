package dataset

import (
	"bytes"
	"context"
	"encoding/csv"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/dplearn/dplearn/schema"
)

// FuzzReadCSV feeds arbitrary bytes to the CSV reader. It must never panic,
// must give the same result for any chunk size and worker count, and, where
// encoding/csv is a valid oracle (no '\r', no BOM), must accept exactly the
// inputs that encoding/csv plus the schema's encoder accept, with the same
// rows. Seed corpus: testdata/fuzz/FuzzReadCSV.
func FuzzReadCSV(f *testing.F) {
	for _, s := range []string{
		"a,b,y\n1,u,2\n3,v,-1\n",
		"a,b,y\r\n1,\"u\",2\r\n",
		"\"a\",\"b\",\"y\"\n\"1\",\"w\",\"4\"",
		"a,b,y\n1,\"u\n\",2\n",
		"a,b,y\n1,u\"x,2\n",
		"a,b,y\n1,\"u\"x,2\n",
		"a,b,y\n1,\"u,2\n",
		"a,b,y\nNaN,u,Inf\n",
		"a,b,y\n1,u\n",
		"",
		"\n\n",
		"y,a,b,c\n1,2,v,\"\"\"\"\n",
	} {
		f.Add([]byte(s))
	}
	s, err := schema.Parse([]byte(testSchema))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "f.csv")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		tab, sum, err := Load(ctx, path, s, Options{Workers: 2, chunkSize: 16})
		tab2, sum2, err2 := Load(ctx, path, s, Options{Workers: 1})
		if (err == nil) != (err2 == nil) {
			t.Fatalf("chunking changes the outcome: %v vs %v", err, err2)
		}
		if err == nil {
			if sum.Rows != sum2.Rows || !equalRows(tab.Rows, tab2.Rows) {
				t.Fatalf("chunking changes the rows: %d vs %d", sum.Rows, sum2.Rows)
			}
			m, msum, merr := Moments(ctx, path, s, Options{chunkSize: 32})
			if merr != nil || msum.Rows != sum.Rows || m.N() != sum.Rows {
				t.Fatalf("Moments disagrees with Load: %v, %d rows vs %d", merr, msum.Rows, sum.Rows)
			}
		} else if errors.Is(err, ErrRecordTooLarge) {
			t.Fatalf("unexpected: %v", err)
		}
		if bytes.ContainsRune(data, '\r') || bytes.HasPrefix(data, []byte("\ufeff")) {
			return
		}
		want, oerr := oracle(s, data)
		if (oerr == nil) != (err == nil) {
			t.Fatalf("oracle err %v, ours %v", oerr, err)
		}
		if err == nil && !equalRows(want, tab.Rows) {
			t.Fatalf("rows differ from the oracle")
		}
	})
}

func equalRows(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// oracle reads data with encoding/csv and encodes it with the schema.
func oracle(s *schema.Schema, data []byte) ([]float64, error) {
	r := csv.NewReader(bytes.NewReader(data))
	r.ReuseRecord = false
	header, err := r.Read()
	if err != nil {
		return nil, err
	}
	enc, err := s.NewEncoder(header, schema.EncoderOptions{})
	if err != nil {
		return nil, err
	}
	var rows []float64
	dst := make([]float64, enc.Width())
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		fields := make([][]byte, len(rec))
		for i := range rec {
			fields[i] = []byte(rec[i])
		}
		if err := enc.Encode(fields, dst); err != nil {
			return nil, err
		}
		rows = append(rows, dst...)
	}
	if len(rows) == 0 {
		return nil, ErrNoRows
	}
	return rows, nil
}
