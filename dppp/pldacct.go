package dppp

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/dplearn/dplearn/accounting"
)

// PLDGrid is the loss-grid width Δ of DPPP's privacy-loss-distribution
// accountant (accounting.PLDOptions.Grid) when it over-charges little at
// it. The accountant is pessimistic: every printed ε is at least the true
// ε, and over-charges by at most about k·Δ after k queries (0.1 after 100
// queries: 1% of a total ε of 10). A grid of 10⁻³ instead of the
// accounting package's default 10⁻⁴ makes one composition about 30×
// cheaper (64 queries of 115 coins: 17 ms instead of 0.5 s on the 2-core
// build machine), which keeps calibration, done by the aggregator and
// again by every teacher, below a second.
const PLDGrid = 1e-3

// A deployment calibrated to Q queries whose over-charge bound Q·PLDGrid
// exceeds pldSlackShare of its total ε (Q·10⁻³ > ε/100: 1,000 queries at
// ε = 10) is accounted on a finer grid Δ₀ = ε/(pldFineShare·Q) (at least
// pldMinGrid) with the powers kept to pldMaxPoints grid points
// (accounting.PLDOptions.MaxPoints: the grid widens as the composition
// grows). Its over-charge, counted by the accountant, is then about
// Q·Δ₀ + 3.4·Q·(width of the loss)/pldMaxPoints: at Q = 20,000 and
// ε = 10, 0.07 of 10 (measured: TestPLDLargeQueries) where a grid of 10⁻³
// over-charged by 20 and calibration failed.
const (
	pldSlackShare = 100
	pldFineShare  = 200
	pldMinGrid    = 1e-6
	pldMaxPoints  = 1 << 16
)

// maxQueriesCap bounds the MaxQueries search.
const maxQueriesCap = 1 << 20

// pldOptionsFor returns the accountant's options for a deployment
// calibrated to `queries` queries of the total ε `budget` (queries = 0:
// per-query calibration, the grid PLDGrid).
func pldOptionsFor(budget float64, queries int) accounting.PLDOptions {
	if queries <= 0 || float64(queries)*PLDGrid <= budget/pldSlackShare {
		return accounting.PLDOptions{Grid: PLDGrid}
	}
	g := math.Min(PLDGrid, math.Max(pldMinGrid, budget/(pldFineShare*float64(queries))))
	return accounting.PLDOptions{Grid: g, MaxPoints: pldMaxPoints}
}

// pldOptions are p's accountant options (public: the budget and Q, so
// every party derives the same).
func (p *Params) pldOptions() accounting.PLDOptions {
	return pldOptionsFor(p.BudgetEpsilon, p.Queries)
}

// pldAccountant caches the privacy-loss distribution of one query of a
// deployment's noisy histogram and its powers P^(2^j) (P composed 2^j
// times), so that the composition of any k queries costs at most log₂ k
// further convolutions. It is built once per Params by Calibrate and is
// read-only afterwards (safe to share between clones and goroutines).
type pldAccountant struct {
	one    *accounting.PLD
	powers []*accounting.PLD // powers[j] = one composed 2^j times
}

// queryPLD returns the PLD of one query of p's histogram: binomial with
// H·Coins coins in the honest shares (accounting.BinomialHistogramPLD), or
// the sum of H discrete Gaussian shares of σ (DGaussSumHistogramPLD), both
// moved counts together.
func (p *Params) queryPLD() (*accounting.PLD, error) {
	switch p.Noise {
	case Binomial:
		return accounting.BinomialHistogramPLD(int64(p.Honest)*p.Coins, p.pldOptions())
	case DGauss:
		return accounting.DGaussSumHistogramPLD(p.Sigma, p.Honest, p.pldOptions())
	}
	return nil, fmt.Errorf("dppp: unknown noise kind %v", p.Noise)
}

func newPLDAccountant(one *accounting.PLD) *pldAccountant {
	return &pldAccountant{one: one, powers: []*accounting.PLD{one}}
}

// power returns P^(2^j), extending the cache when grow is true (only while
// the accountant is being built by Calibrate, never afterwards); c is the
// caller's composer (FFT plans and buffers of its loop; results do not
// depend on it).
func (a *pldAccountant) power(j int, grow bool, c *accounting.PLDComposer) (*accounting.PLD, error) {
	if j < len(a.powers) {
		return a.powers[j], nil
	}
	cur := a.powers[len(a.powers)-1]
	for i := len(a.powers); i <= j; i++ {
		next, err := c.Compose(cur, cur)
		if err != nil {
			return nil, err
		}
		if grow {
			a.powers = append(a.powers, next)
		}
		cur = next
	}
	return cur, nil
}

// compose returns the PLD of k queries from the cached powers (the binary
// expansion of k, highest power first: the same operations in the same
// order as maxWithin's search, so both give bit-identical results).
func (a *pldAccountant) compose(k int) (*accounting.PLD, error) {
	if k < 1 || k > maxQueriesCap {
		return nil, fmt.Errorf("dppp: composition of %d queries: want 1..%d", k, maxQueriesCap)
	}
	var c accounting.PLDComposer
	top := bits.Len(uint(k)) - 1
	acc, err := a.power(top, false, &c)
	if err != nil {
		return nil, err
	}
	for j := top - 1; j >= 0; j-- {
		if (k>>j)&1 == 0 {
			continue
		}
		pw, err := a.power(j, false, &c)
		if err != nil {
			return nil, err
		}
		if acc, err = c.Compose(acc, pw); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// maxWithin returns the largest k ≤ maxQueriesCap whose composition has
// ε(δ) ≤ eps by the accountant, deciding the bits of k from the highest
// down (the accountant's ε is non-decreasing in k: composing one more query
// adds a non-negative-mean loss and δ(ε) of a composition is at least that of
// its part, by post-processing). Cost: one squaring per bit of the answer
// plus one composition per bit tried. It returns 0 when one query does not
// fit.
func (a *pldAccountant) maxWithin(eps, delta float64) (int, error) {
	fits := func(d *accounting.PLD) bool {
		e, err := d.Epsilon(delta)
		return err == nil && e <= eps
	}
	if !fits(a.one) {
		return 0, nil
	}
	// Grow the powers while they fit.
	var comp accounting.PLDComposer
	top := 0
	for (2 << top) <= maxQueriesCap {
		pw, err := a.power(top+1, true, &comp)
		if err != nil {
			return 0, err
		}
		if !fits(pw) {
			break
		}
		top++
	}
	// k = 2^top fits; add lower bits greedily.
	acc := a.powers[top]
	k := 1 << top
	for j := top - 1; j >= 0; j-- {
		if k+(1<<j) > maxQueriesCap {
			continue
		}
		c, err := comp.Compose(acc, a.powers[j])
		if err != nil {
			return 0, err
		}
		if fits(c) {
			acc, k = c, k+(1<<j)
		}
	}
	// acc is compose(k) (same operations, same order), which is what
	// Composed prints; TestMaxQueriesPLD recomputes it from scratch.
	return k, nil
}

// accountant returns the cached accountant, or builds a fresh one (not
// stored: Params decoded from the wire have none) when p has none.
func (p *Params) accountant() (*pldAccountant, error) {
	if p.acct != nil {
		return p.acct, nil
	}
	one, err := p.queryPLD()
	if err != nil {
		return nil, err
	}
	return newPLDAccountant(one), nil
}

// pldEpsilon is the accountant's ε of k queries at δ, rounded up.
func (p *Params) pldEpsilon(k int, delta float64) (float64, error) {
	a, err := p.accountant()
	if err != nil {
		return 0, err
	}
	c, err := a.compose(k)
	if err != nil {
		return 0, err
	}
	return c.Epsilon(delta)
}

// QueryGuarantee is the guarantee of one query alone at the per-query δ,
// by the PLD accountant (the per-query (ε, δ), derived when the noise was
// calibrated to a total budget).
func (p *Params) QueryGuarantee() (Guarantee, error) {
	e, err := p.pldEpsilon(1, p.Delta)
	if err != nil {
		return Guarantee{}, err
	}
	return Guarantee{Queries: 1, Epsilon: e, Delta: p.Delta, Accountant: p.pldName()}, nil
}

// pldName names the accountant and its starting grid.
func (p *Params) pldName() string {
	o := p.pldOptions()
	if o.MaxPoints > 0 || o.Grid != PLDGrid {
		return fmt.Sprintf("exact privacy-loss distribution of the noisy histogram, composed (pessimistic, grid %.3g widening to keep %d points)", o.Grid, o.MaxPoints)
	}
	return "exact privacy-loss distribution of the noisy histogram, composed (pessimistic, grid 1e-3)"
}

// kovComposed is the previous accountant, kept as a secondary figure: the
// per-query (ε, δ) composed by Kairouz-Oh-Viswanath (or basic composition)
// at the budget's δ. It is looser than the PLD by about 7× (issue 27).
func (p *Params) kovComposed(k int) (float64, bool) {
	best := math.Inf(1)
	if float64(k)*p.Delta <= p.BudgetDelta {
		best = float64(k) * p.Epsilon
	}
	if k > 1 && k <= 1000000 && 1-math.Pow(1-p.Delta, float64(k)) < p.BudgetDelta {
		if e, err := accounting.OptimalComposition(p.Epsilon, p.Delta, k, p.BudgetDelta); err == nil && e < best {
			best = e
		}
	}
	return best, !math.IsInf(best, 1)
}
