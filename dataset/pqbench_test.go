package dataset

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// BenchmarkMomentsParquet reads 100,000 rows × 50 double columns.
func BenchmarkMomentsParquet(b *testing.B) {
	const n, cols = 100000, 50
	fields := parquet.Group{}
	var names, feats []string
	for j := 0; j < cols; j++ {
		name := fmt.Sprintf("c%d", j)
		if j == cols-1 {
			name = "y"
		} else {
			feats = append(feats, fmt.Sprintf(`{"name": %q, "range": [-100, 100]}`, name))
		}
		names = append(names, name)
		fields[name] = parquet.Leaf(parquet.DoubleType)
	}
	sch := parquet.NewSchema("t", fields)
	path := filepath.Join(b.TempDir(), "b.parquet")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := parquet.NewWriter(f, sch)
	rng := rand.New(rand.NewPCG(1, 2))
	rows := make([]parquet.Row, 0, 1000)
	cols2 := sch.Columns()
	for i := 0; i < n; i++ {
		row := make(parquet.Row, cols)
		for j := range cols2 {
			row[j] = parquet.ValueOf(rng.Float64()*200-100).Level(0, 0, j)
		}
		rows = append(rows, row)
		if len(rows) == cap(rows) {
			if _, err := w.WriteRows(rows); err != nil {
				b.Fatal(err)
			}
			rows = rows[:0]
		}
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	s := mustSchema(b, `{"target": {"name": "y", "range": [-100, 100]}, "features": [`+strings.Join(feats, ",")+`]}`)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		_, sum, err := Moments(context.Background(), path, s, Options{})
		if err != nil || sum.Rows != n {
			b.Fatal(err, sum)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "rows/s")
}
