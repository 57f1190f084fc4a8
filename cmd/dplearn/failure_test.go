package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/dataset"
)

// TestFitRefusesWideSchema: fit with a schema of 100,000 features is
// refused, before anything is read or allocated, naming the memory limit
// (it crashed with "fatal error: out of memory", issue 23 item 8).
func TestFitRefusesWideSchema(t *testing.T) {
	const d = 100000
	dir := t.TempDir()
	var js, head, row strings.Builder
	js.WriteString(`{"target": {"name": "y", "range": [0, 1]}, "features": [`)
	head.WriteString("y")
	row.WriteString("0.5")
	for i := 0; i < d; i++ {
		if i > 0 {
			js.WriteString(",")
		}
		fmt.Fprintf(&js, `{"name": "x%d", "range": [0, 1]}`, i)
		fmt.Fprintf(&head, ",x%d", i)
		row.WriteString(",0.5")
	}
	js.WriteString("]}")
	sch := writeFile(t, dir, "wide.json", js.String())
	data := writeFile(t, dir, "wide.csv", head.String()+"\n"+row.String()+"\n")
	out := filepath.Join(dir, "m.json")
	_, err := runCLI(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm",
		"--epsilon", "1", "--delta", "1e-9", "--out", out)
	if !errors.Is(err, dataset.ErrTooWide) || !strings.Contains(err.Error(), "limit of") || !strings.Contains(err.Error(), "at most") {
		t.Fatalf("100,000 features: %v", err)
	}
	if _, serr := os.Stat(out); serr == nil {
		t.Fatal("a model was written")
	}
}
