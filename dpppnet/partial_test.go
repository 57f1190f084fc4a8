package dpppnet

import (
	"testing"
)

// TestServeRowsPastBudgetPartial: Serve given more rows of its own than
// its budget allows (ServeOptions.Left, as a ledger file across runs
// would) labels the first ones it allows, over both the in-memory hub
// and gRPC, and says how many — it is not refused wholesale (issue 27).
func TestServeRowsPastBudgetPartial(t *testing.T) {
	f := getFixture(t)
	for _, nk := range bothNets {
		d := f.deploy(t)
		const asked, allowed = 5, 3
		res, err := d.runOn(t, nk, f, f.Rows[:asked], nil, ServeOptions{Left: func() int { return allowed }})
		if err != nil {
			t.Fatalf("net %v: %v, want the rows that remain labelled", nk, err)
		}
		if want := "labelled 3 of 5 requested: budget allows 3 more"; res.Partial != want {
			t.Errorf("net %v: Partial = %q, want %q", nk, res.Partial, want)
		}
		if len(res.Labels) != allowed {
			t.Fatalf("net %v: %d labels, want %d", nk, len(res.Labels), allowed)
		}
		d.checkReference(t, res)
	}
}
