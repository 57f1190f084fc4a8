package main

import (
	"context"

	"fmt"
	"math/big"

	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/report"
)

// aggLedger is the aggregator's budget ledger of 'dppp serve --ledger':
// the run's in-memory dppp.Budget (the tightest accountant of the noise
// kind, within one run) and a ledger file kept across runs, the same file
// format and code as a teacher's --ledger and a capeFM site's (package
// accounting: every query charged (ε, δ), composed across runs by basic
// composition, checked exactly, under a file lock). A query is charged to
// the file first, then to the run's budget; it is answered only if both
// accept, so the aggregator refuses past its budget across restarts.
type aggLedger struct {
	path string
	file siteLedger
	run  *dppp.Budget
	p    *dppp.Params
	note string
}

// openAggLedger opens (or creates, with p's total budget) the ledger at
// path for the aggregator and checks that it can pay for queries more
// queries (at least one, also when serving clients only: a restarted serve
// past its budget refuses before any teacher is asked) before anything
// starts.
func openAggLedger(ctx context.Context, path string, p *dppp.Params, queries int) (*aggLedger, error) {
	l, note, err := openSiteLedger(ctx, path, "dppp aggregator", p.BudgetEpsilon, p.BudgetDelta, true)
	if err != nil {
		return nil, err
	}
	sl, ok := l.(siteLedger)
	if !ok {
		return nil, fmt.Errorf("ledger %s: not a ledger file", path)
	}
	a := &aggLedger{path: path, file: sl, run: dppp.NewBudget(p), p: p, note: note}
	if err := a.canPay(max(queries, 1)); err != nil {
		return nil, err
	}
	return a, nil
}

// canPay checks, without charging, that the file can pay for k more
// queries (dpppnet.ServeOptions.CanPay).
func (a *aggLedger) canPay(k int) error {
	left, _, err := ledgerLeft(a.file, a.p.Epsilon, a.p.Delta)
	if err != nil {
		return fmt.Errorf("ledger %s: %w", a.path, err)
	}
	if left.Cmp(big.NewInt(int64(k))) < 0 {
		return fmt.Errorf("ledger %s cannot pay for %d queries at ε = %g, δ = %g each: %w; %s", a.path, k, a.p.Epsilon, a.p.Delta, ledger.ErrOverBudget, a.status())
	}
	return nil
}

// Charge implements dppp.Ledger.
func (a *aggLedger) Charge(label string, eps, delta float64) error {
	if err := a.file.Charge(label, eps, delta); err != nil {
		return fmt.Errorf("%w: ledger %s: %w", dppp.ErrBudget, a.path, err)
	}
	return a.run.Charge(label, eps, delta)
}

// status is one line: this run's spend by the tight accountant, and the
// file's spend and remainder across runs.
func (a *aggLedger) status() string {
	k := a.run.Answered()
	return "this run: " + runSpent(a.p, k) + "; " + fileLedgerStatus(a.file, a.path, a.p.Epsilon, a.p.Delta, max(0, a.p.MaxQueries-k))
}

// runSpent is a party's spend within one run of p, without the remainder
// (printed once, beside a ledger file's: issue 27).
func runSpent(p *dppp.Params, k int) string {
	g, err := p.Composed(k)
	if err != nil {
		return fmt.Sprintf("%d queries answered (%v)", k, err)
	}
	return fmt.Sprintf("spent %v of the budget (%g, %g)", g, p.BudgetEpsilon, p.BudgetDelta)
}

// runStatus is a party's spend within one run of p: k queries composed by
// the noise kind's accountant, and the queries the run's budget has left.
func runStatus(p *dppp.Params, k int) string {
	g, err := p.Composed(k)
	if err != nil {
		return fmt.Sprintf("%d queries answered (%v)", k, err)
	}
	return fmt.Sprintf("spent %v of the budget (%g, %g); %d of %d queries remain", g, p.BudgetEpsilon, p.BudgetDelta, max(0, p.MaxQueries-k), p.MaxQueries)
}

// fileLedgerStatus describes a ledger file: spent and remaining, across
// runs (basic composition), and the one number of queries that remain: the
// fewer of those of (ε, δ) the file can still pay for and runLeft, what
// this run's budget allows (so that no line says both "20 of 20 remain"
// and "0 more remain").
func fileLedgerStatus(sl siteLedger, path string, eps, delta float64, runLeft int) string {
	k, st, err := ledgerLeft(sl, eps, delta)
	if err != nil {
		return fmt.Sprintf("ledger %s: %v", path, err)
	}
	spent := st.Spent()
	left := k.String()
	note := ""
	if r := big.NewInt(int64(runLeft)); r.Cmp(k) < 0 {
		left = r.String()
		note = fmt.Sprintf(" (this run's budget; the file could pay for %v)", k)
	}
	return fmt.Sprintf("ledger %s (all runs, basic composition): spent ε = %s, δ = %s of (%g, %g) in %d queries; %s more queries remain%s",
		path, report.Up(spent.Epsilon), report.Up(spent.Delta), st.Budget.Epsilon, st.Budget.Delta, len(st.Charges), left, note)
}

// ledgerLeft returns the number of queries of (ε, δ) a ledger file can
// still pay for, exactly: the largest k with the charges so far plus k·(ε,
// δ) within the budget, all summed as exact rationals (as the ledger's
// Charge decides), and the ledger's state.
func ledgerLeft(sl siteLedger, eps, delta float64) (*big.Int, ledger.State, error) {
	st, err := sl.l.State(sl.ctx)
	if err != nil {
		return nil, st, err
	}
	left := func(budget, per float64, get func(ledger.Charge) float64) *big.Int {
		r := new(big.Rat).SetFloat64(budget)
		for _, c := range st.Charges {
			r.Sub(r, new(big.Rat).SetFloat64(get(c)))
		}
		if r.Sign() < 0 {
			return new(big.Int)
		}
		q := r.Quo(r, new(big.Rat).SetFloat64(per))
		return new(big.Int).Quo(q.Num(), q.Denom())
	}
	k := left(st.Budget.Epsilon, eps, func(c ledger.Charge) float64 { return c.Epsilon })
	if delta > 0 {
		if kd := left(st.Budget.Delta, delta, func(c ledger.Charge) float64 { return c.Delta }); kd.Cmp(k) < 0 {
			k = kd
		}
	}
	return k, st, nil
}
