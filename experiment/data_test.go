package experiment

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEmbeddedDataFallback loads every example dataset without a data
// directory (a fresh clone) and, when ../shared/data is present, checks
// that the embedded copy encodes to exactly the same rows.
func TestEmbeddedDataFallback(t *testing.T) {
	shared := filepath.Join("..", "..", "shared", "data")
	_, err := os.Stat(shared)
	haveShared := err == nil
	for name := range realDatasets {
		emb, err := loadReal("", name, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if emb.N() == 0 || !strings.Contains(emb.Note, "embedded copy") {
			t.Fatalf("%s: %d rows, note %q", name, emb.N(), emb.Note)
		}
		if !haveShared {
			continue
		}
		ext, err := loadReal(shared, name, nil)
		if err != nil {
			t.Fatal(err)
		}
		if ext.K != emb.K || len(ext.Rows) != len(emb.Rows) {
			t.Fatalf("%s: shapes differ", name)
		}
		for i := range ext.Rows {
			if ext.Rows[i] != emb.Rows[i] {
				t.Fatalf("%s: row value %d differs", name, i)
			}
		}
	}
	if _, err := loadReal(filepath.Join(t.TempDir(), "none"), "diabetes", nil); !errors.Is(err, ErrNoData) {
		t.Fatalf("missing --data-dir: %v", err)
	}
}
