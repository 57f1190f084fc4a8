package dataset

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkMomentsCSV reads a 50,000 × 50 CSV (6 decimals) into statistics.
// The reference (pandas.read_csv) is measured by ./bench.
func BenchmarkMomentsCSV(b *testing.B) {
	dir := b.TempDir()
	path := filepath.Join(dir, "b.csv")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	const n, cols = 50000, 50
	var names, feats []string
	for j := 0; j < cols-1; j++ {
		names = append(names, fmt.Sprintf("c%d", j))
		feats = append(feats, fmt.Sprintf(`{"name": "c%d", "range": [-100, 100]}`, j))
	}
	names = append(names, "y")
	fmt.Fprintln(w, strings.Join(names, ","))
	rng := rand.New(rand.NewPCG(1, 2))
	var line []byte
	for i := 0; i < n; i++ {
		line = line[:0]
		for j := 0; j < cols; j++ {
			if j > 0 {
				line = append(line, ',')
			}
			line = strconv.AppendFloat(line, rng.Float64()*200-100, 'f', 6, 64)
		}
		line = append(line, '\n')
		w.Write(line)
	}
	w.Flush()
	f.Close()
	st, _ := os.Stat(path)
	s := mustSchema(b, `{"target": {"name": "y", "range": [-100, 100]}, "features": [`+strings.Join(feats, ",")+`]}`)
	b.SetBytes(st.Size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, _, err := Moments(context.Background(), path, s, Options{Workers: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
