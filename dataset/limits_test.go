package dataset

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestCheckWidth: the widest width CheckWidth names fits and one more does
// not, for one and several workers; the error wraps ErrTooWide and names
// the limit.
func TestCheckWidth(t *testing.T) {
	const limit = 1 << 30
	for _, w := range []int{1, 2, 8} {
		err := CheckWidth(100001, w, limit)
		if !errors.Is(err, ErrTooWide) || !strings.Contains(err.Error(), "limit of 1 GiB") {
			t.Fatalf("100,001 columns, %d workers: %v", w, err)
		}
		var widest int
		if _, serr := fmt.Sscanf(err.Error()[strings.Index(err.Error(), "at most "):], "at most %d columns fit", &widest); serr != nil {
			t.Fatalf("no widest width in %q: %v", err, serr)
		}
		if CheckWidth(widest, w, limit) != nil || CheckWidth(widest+1, w, limit) == nil {
			t.Fatalf("%d workers: widest %d is not the boundary", w, widest)
		}
		if StatsBytes(widest, w) > limit || StatsBytes(widest+1, w) <= limit {
			t.Fatalf("StatsBytes disagrees at %d", widest)
		}
	}
	if StatsLimit() <= 0 {
		t.Fatal("no memory limit")
	}
}

// TestMomentsRefusesWideSchema: a schema of 100,000 features is refused
// before any statistics are allocated (it crashed the runtime with "fatal
// error: out of memory").
func TestMomentsRefusesWideSchema(t *testing.T) {
	const d = 100000
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
	s := mustSchema(t, js.String())
	path := writeFile(t, "wide.csv", []byte(head.String()+"\n"+row.String()+"\n"))
	_, _, err := Moments(context.Background(), path, s, Options{Workers: 1})
	if !errors.Is(err, ErrTooWide) {
		t.Fatalf("100,000 features: %v", err)
	}
}
