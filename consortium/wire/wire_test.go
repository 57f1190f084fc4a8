package wire

import (
	"context"
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/dplearn/dplearn/transport"
)

// TestRemainingEpsilonRoundsDown: the remainder printed to analysts is the
// largest float64 not above budget − spent (computed exactly), and 0 when
// nothing is left.
func TestRemainingEpsilonRoundsDown(t *testing.T) {
	cases := [][2]float64{{1, 0.25}, {1, 1}, {1, 2}, {0.3, 0.1}, {1, 0x1p-60}, {0.7, 0.6}}
	r := rand.New(rand.NewPCG(1, 2))
	for range 1000 {
		cases = append(cases, [2]float64{r.Float64() * 10, r.Float64() * 10})
	}
	for _, c := range cases {
		got := LedgerState{BudgetEpsilon: c[0], SpentEpsilon: c[1]}.RemainingEpsilon()
		exact := new(big.Rat).Sub(new(big.Rat).SetFloat64(c[0]), new(big.Rat).SetFloat64(c[1]))
		if exact.Sign() <= 0 {
			if got != 0 {
				t.Errorf("budget %v spent %v: remaining %v, want 0", c[0], c[1], got)
			}
			continue
		}
		up := math.Nextafter(got, math.Inf(1))
		if new(big.Rat).SetFloat64(got).Cmp(exact) > 0 || new(big.Rat).SetFloat64(up).Cmp(exact) <= 0 {
			t.Errorf("budget %v spent %v: remaining %v is not the largest float64 ≤ %s", c[0], c[1], got, exact.FloatString(25))
		}
	}
	if got := (LedgerState{BudgetEpsilon: 1, SpentEpsilon: 0x1p-60}).RemainingEpsilon(); got != math.Nextafter(1, 0) {
		t.Errorf("1 − 2^−60: %v", got)
	}
}

// TestTaskHubGates: a task's hub delivers only its own sites' capeFM
// envelopes of the current round that pass the protocol's gate; the rest
// are dropped and reported as Refused events (as the real hub refuses
// them), and SendTo refuses parties outside the task.
func TestTaskHubGates(t *testing.T) {
	mem, err := transport.NewMemory(transport.HubConfig{Session: Session(), Roster: []string{"a", "b", "c"}, Name: "coordinator"})
	if err != nil {
		t.Fatal(err)
	}
	defer mem.Close()
	th := NewTaskHub("t1", []string{"a", "b"}, mem)
	th.SetRound(3)
	th.SetGate(func(e transport.Envelope) error {
		if e.Type == "bad" {
			return errors.New("gate says no")
		}
		return nil
	})
	cases := []struct {
		from string
		c    Cape
		ok   bool
	}{
		{"a", Cape{Task: "t1", Round: 3, Type: "masked-input"}, true},
		{"c", Cape{Task: "t1", Round: 3, Type: "masked-input"}, false}, // not a site of t1
		{"b", Cape{Task: "t1", Round: 2, Type: "masked-input"}, false}, // wrong round
		{"b", Cape{Task: "t1", Round: 3, Type: "bad"}, false},          // gate
		{"b", Cape{Task: "t1", Round: 3, Type: "masked-input"}, true},
	}
	for i, c := range cases {
		th.Deliver(c.from, c.c)
		select {
		case env := <-th.Inbox():
			if !c.ok || env.Sender != c.from || env.Type != c.c.Type {
				t.Errorf("case %d: delivered %+v", i, env)
			}
		case ev := <-th.Events():
			if c.ok || ev.Kind != transport.Refused || ev.Party != c.from {
				t.Errorf("case %d: event %+v", i, ev)
			}
		case <-time.After(time.Second):
			t.Errorf("case %d: nothing delivered or reported", i)
		}
	}
	if err := th.SendTo(context.Background(), "c", transport.Envelope{Type: "offer"}); err == nil {
		t.Error("sent to a party outside the task")
	}
}

// TestCheckQueryRows: a DPPP task's rows are refused when empty, ragged,
// not finite, or past MaxQueryValues values (the envelope's bound).
func TestCheckQueryRows(t *testing.T) {
	wide := make([][]float64, MaxQueryValues/10+1)
	for i := range wide {
		wide[i] = make([]float64, 10)
	}
	cases := []struct {
		name string
		rows [][]float64
		ok   bool
	}{
		{"fine", [][]float64{{1, 2}, {3, 4}}, true},
		{"at the bound", wide[:MaxQueryValues/10], true},
		{"past the bound", wide, false},
		{"none", nil, false},
		{"ragged", [][]float64{{1, 2}, {3}}, false},
		{"NaN", [][]float64{{1, math.NaN()}}, false},
	}
	for _, c := range cases {
		if err := CheckQueryRows(c.rows); (err == nil) != c.ok {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}
