package describe

import (
	"fmt"
	"testing"
)

// TestPerColumn checks the grouping (columns in first-appearance order,
// parts in order) and the per-column sums against hand totals, and that
// the columns add up to the whole suggestion's basic composition.
func TestPerColumn(t *testing.T) {
	s := &Suggestion{Parts: []SuggestPart{
		{Column: "wage", What: "median", Epsilon: 0.125},
		{Column: "region", What: "levels", Epsilon: 0.25, Delta: 1e-7},
		{Column: "wage", What: "lower", Epsilon: 0.5},
		{Column: "wage", What: "upper", Epsilon: 0.5},
		{Column: "smsa", What: "levels", Epsilon: 0.25, Delta: 2e-7},
	}, Epsilon: 1.625, Delta: 3e-7}
	cols, err := s.PerColumn()
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		col        string
		eps, delta float64
		parts      int
	}{{"wage", 1.125, 0, 3}, {"region", 0.25, 1e-7, 1}, {"smsa", 0.25, 2e-7, 1}}
	if len(cols) != len(want) {
		t.Fatalf("%d columns, want %d: %+v", len(cols), len(want), cols)
	}
	var eps, delta float64
	for i, w := range want {
		c := cols[i]
		if c.Column != w.col || c.Epsilon != w.eps || c.Delta != w.delta || len(c.Parts) != w.parts {
			t.Errorf("column %d = %s ε=%g δ=%g (%d parts), want %s ε=%g δ=%g (%d parts)", i, c.Column, c.Epsilon, c.Delta, len(c.Parts), w.col, w.eps, w.delta, w.parts)
		}
		eps += c.Epsilon
		delta += c.Delta
	}
	if cols[0].Parts[1].What != "lower" || cols[0].Parts[2].What != "upper" {
		t.Errorf("wage parts out of order: %+v", cols[0].Parts)
	}
	if eps != s.Epsilon || delta != s.Delta {
		t.Errorf("columns add up to (%g, %g), suggestion spent (%g, %g)", eps, delta, s.Epsilon, s.Delta)
	}
	bad := &Suggestion{Parts: []SuggestPart{{Column: "x", Epsilon: -1}}}
	if _, err := bad.PerColumn(); err == nil {
		t.Error("a negative ε was composed")
	}
}

func ExampleSuggestion_PerColumn() {
	s := &Suggestion{Parts: []SuggestPart{
		{Column: "wage", What: "lower bound", Epsilon: 0.25},
		{Column: "region", What: "levels", Epsilon: 0.125, Delta: 1e-6},
		{Column: "wage", What: "upper bound", Epsilon: 0.25},
	}}
	cols, _ := s.PerColumn()
	for _, c := range cols {
		fmt.Printf("%s: ε = %g, δ = %g over %d releases\n", c.Column, c.Epsilon, c.Delta, len(c.Parts))
	}
	// Output:
	// wage: ε = 0.5, δ = 0 over 2 releases
	// region: ε = 0.125, δ = 1e-06 over 1 releases
}
