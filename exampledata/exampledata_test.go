package exampledata

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/dplearn/dplearn/schema"
)

// TestEmbeddedParse checks that every embedded schema parses and matches its
// CSV's header, and that every row encodes.
func TestEmbeddedParse(t *testing.T) {
	want := map[string]int{"cps1988": 28155, "smokeban": 10000}
	for _, d := range All() {
		s, err := schema.Parse(d.Schema)
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		lines := bytes.Split(bytes.TrimSpace(d.CSV), []byte("\n"))
		if len(lines)-1 != want[d.Name] {
			t.Fatalf("%s: %d rows", d.Name, len(lines)-1)
		}
		split := func(l []byte) [][]byte {
			f := bytes.Split(bytes.TrimRight(l, "\r"), []byte(","))
			for i := range f {
				f[i] = bytes.Trim(f[i], `"`)
			}
			return f
		}
		var header []string
		for _, h := range split(lines[0]) {
			header = append(header, string(h))
		}
		e, err := s.NewEncoder(header, schema.EncoderOptions{})
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		row := make([]float64, e.Width())
		for i, l := range lines[1:] {
			if err := e.Encode(split(l), row); err != nil {
				t.Fatalf("%s line %d: %v", d.Name, i+2, err)
			}
		}
	}
	if _, err := Get("nope"); err == nil {
		t.Fatal("unknown dataset accepted")
	}
}

func TestEverySchemaParses(t *testing.T) {
	names := SchemaNames()
	if len(names) != 5 {
		t.Fatalf("schemas %v", names)
	}
	for _, n := range names {
		b, err := Schema(n)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := schema.Parse(b); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	if _, err := Schema("nope"); err == nil {
		t.Error("unknown schema accepted")
	}
}

// TestFilesMatchSharedData checks that every embedded copy, decompressed,
// is byte-identical to the project's example data when that directory is
// present (in CI: ../shared/data), and that each one parses with its
// schema through the regular reader.
func TestFilesMatchSharedData(t *testing.T) {
	for _, name := range Files() {
		b, err := File(name)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > 2 && b[0] == 0x1f && b[1] == 0x8b {
			zr, err := gzip.NewReader(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			if b, err = io.ReadAll(zr); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
		}
		shared, err := os.ReadFile(filepath.Join("..", "..", "shared", "data", name))
		if errors.Is(err, os.ErrNotExist) {
			t.Logf("%s: ../shared/data absent, comparison skipped", name)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(b, shared) {
			t.Errorf("%s: the embedded copy differs from ../shared/data/%s", name, name)
		}
	}
	if _, err := File("nope.csv"); err == nil {
		t.Error("unknown file served")
	}
}
