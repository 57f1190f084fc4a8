package dpbeam

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/memfs"
	"github.com/parquet-go/parquet-go"

	"github.com/dplearn/dplearn/statsfile"
)

type pqRow struct {
	A float64 `parquet:"a"`
	B int64   `parquet:"b"`
	Y float64 `parquet:"y"`
}

// TestRemoteFilesystem reads through Beam's filesystem API (memfs://, in
// memory, standing in for gs://): CSV, gzip CSV and Parquet inputs, and the
// statistics file written back to it. The statistics equal the single pass
// over local copies bit for bit.
func TestRemoteFilesystem(t *testing.T) {
	ctx := context.Background()
	d, s, _ := cps(t)
	local := t.TempDir()
	splitCSV(t, local, d.CSV, 4)
	paths, _ := filepath.Glob(filepath.Join(local, "part-*"))
	put := func(name string, data []byte) string {
		t.Helper()
		p := "memfs://" + t.Name() + "/" + name
		fs, err := filesystem.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		w, err := fs.OpenWrite(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(data)
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		put(filepath.Base(p), b)
	}
	out := "memfs://" + t.Name() + "/out/stats.json"
	o := Options{Inputs: []string{"memfs://" + t.Name() + "/part-*"}, Schema: s}
	if _, err := WriteStatsFile(ctx, o, out); err != nil {
		t.Fatal(err)
	}
	fs, _ := filesystem.New(ctx, out)
	rc, err := fs.OpenRead(ctx, out)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := io.ReadAll(rc)
	rc.Close()
	got, err := statsfile.Decode(data, out, s)
	if err != nil {
		t.Fatal(err)
	}
	sameBits(t, got.Moments, singlePass(t, s, paths...))

	// Parquet needs random access: copied to a local temporary file.
	ps, _ := schemaOf(t, `{"target": {"name": "y", "range": [-3, 3]}, "features": [{"name": "a", "range": [-2, 2]}, {"name": "b", "range": [0, 100]}]}`)
	rng := rand.New(rand.NewPCG(8, 8))
	var pqPaths []string
	for f := 0; f < 3; f++ {
		rows := make([]pqRow, 5000)
		for i := range rows {
			rows[i] = pqRow{A: rng.NormFloat64(), B: rng.Int64N(120), Y: rng.NormFloat64()}
		}
		p := filepath.Join(local, fmt.Sprintf("t%d.parquet", f))
		if err := parquet.WriteFile(p, rows); err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(p)
		put(filepath.Base(p), b)
		pqPaths = append(pqPaths, p)
	}
	po := Options{Inputs: []string{"memfs://" + t.Name() + "/t*.parquet"}, Schema: ps}
	pout := filepath.Join(t.TempDir(), "pq-stats.json")
	if _, err := WriteStatsFile(ctx, po, pout); err != nil {
		t.Fatal(err)
	}
	st, err := statsfile.Read(pout, ps)
	if err != nil {
		t.Fatal(err)
	}
	if st.Moments.N() != 15000 {
		t.Fatalf("N = %d", st.Moments.N())
	}
	sameBits(t, st.Moments, singlePass(t, ps, pqPaths...))
}
