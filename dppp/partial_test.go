package dppp

import (
	"context"
	"errors"
	"testing"
)

// TestRunLabelsWhatRemains: rows past the aggregator's budget are not
// refused wholesale (issue 27): Run labels the first MaxQueries rows,
// which match the plaintext path, says "labelled 3 of 5 requested: budget
// allows 3 more", and no teacher votes on a row past the budget.
func TestRunLabelsWhatRemains(t *testing.T) {
	skipCryptoUnderRace(t)
	f := getFixture(t)
	cfg := f.config(Binomial)
	cfg.QueriesPerCiphertext = 2
	cfg.BudgetDelta = 3e-5
	budgetFor(t, f, &cfg, 3)
	d := f.deploy(t, cfg, nil)
	if d.p.MaxQueries != 3 {
		t.Fatalf("MaxQueries = %d, want 3", d.p.MaxQueries)
	}
	res, err := Run(context.Background(), d.p, f.TPK, d.teachers, f.Rows[:5], RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatalf("a request past the budget: %v, want the rows that remain labelled", err)
	}
	if want := "labelled 3 of 5 requested: budget allows 3 more"; res.Partial != want {
		t.Errorf("Partial = %q, want %q", res.Partial, want)
	}
	if len(res.Labels) != 3 || len(res.Batches) != 2 {
		t.Fatalf("%d labels in %d batches, want 3 in 2", len(res.Labels), len(res.Batches))
	}
	d.checkReference(t, res)
	for _, tt := range d.teachers {
		if tt.Answered() != 3 {
			t.Errorf("teacher %s voted on %d queries, want 3", tt.Name(), tt.Answered())
		}
	}
}

// TestLabelAllowedNoneLeft: with nothing left (DriverOptions.Left = 0) the
// driver refuses with ErrBudget before any teacher is asked, and a
// request within what remains has no partial line.
func TestLabelAllowedNoneLeft(t *testing.T) {
	f := getFixture(t)
	d := f.deploy(t, f.config(Binomial), nil)
	agg, err := NewAggregator(d.p, f.TPK, AggregatorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		left, rows, allowed int
		partial             string
	}{
		{0, 3, 0, ""},
		{2, 3, 2, "labelled 2 of 3 requested: budget allows 2 more"},
		{5, 3, 3, ""},
	} {
		res := &RunResult{}
		drv := NewDriver(agg, &chanLink{p: d.p, res: res}, DriverOptions{Left: func() int { return tc.left }}, res)
		if got := drv.Allowed(); got != min(tc.left, d.p.MaxQueries) {
			t.Errorf("left %d: Allowed = %d", tc.left, got)
		}
		if tc.allowed > 0 {
			if got := PartialText(min(tc.allowed, tc.rows), tc.rows); (tc.partial != "") && got != tc.partial {
				t.Errorf("PartialText = %q, want %q", got, tc.partial)
			}
			continue
		}
		_, _, partial, err := drv.LabelAllowed(context.Background(), f.Rows[:tc.rows])
		if !errors.Is(err, ErrBudget) || partial != "" || len(res.Batches) != 0 {
			t.Errorf("nothing left: err %v, partial %q, %d batches; want ErrBudget before any batch", err, partial, len(res.Batches))
		}
	}
}
