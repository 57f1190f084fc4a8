package describe

import (
	"math/big"

	"github.com/dplearn/dplearn/noise"
)

// gridCounts holds, for a sorted public grid g_0 < … < g_{m−1}, the number
// of values equal to each grid point and the number in each open cell
// (−∞, g_0), (g_0, g_1), …, (g_{m−1}, ∞). From them
// lt(j) = #{x < g_j} and le(j) = #{x ≤ g_j}.
type gridCounts struct {
	grid []float64
	eq   []int64 // len m
	cell []int64 // len m+1
}

func newGridCounts(grid []float64) *gridCounts {
	return &gridCounts{grid: grid, eq: make([]int64, len(grid)), cell: make([]int64, len(grid)+1)}
}

// add counts one value.
func (c *gridCounts) add(x float64) {
	// first j with grid[j] ≥ x
	lo, hi := 0, len(c.grid)
	for lo < hi {
		mid := (lo + hi) / 2
		if c.grid[mid] < x {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	if lo < len(c.grid) && c.grid[lo] == x {
		c.eq[lo]++
	} else {
		c.cell[lo]++
	}
}

// n is the number of values counted.
func (c *gridCounts) n() int64 {
	var s int64
	for _, v := range c.eq {
		s += v
	}
	for _, v := range c.cell {
		s += v
	}
	return s
}

// ranks returns lt(j) and le(j) for every grid point.
func (c *gridCounts) ranks() (lt, le []int64) {
	lt = make([]int64, len(c.grid))
	le = make([]int64, len(c.grid))
	var run int64
	for j := range c.grid {
		run += c.cell[j]
		lt[j] = run
		run += c.eq[j]
		le[j] = run
	}
	return lt, le
}

// quantileScores returns u_j = −dist(q·n, [lt(j), le(j)]), the distance from
// the target rank q·n to the ranks grid point j can take, exactly. Between
// neighbouring datasets (one value replaced, and n the number of values
// counted, which may change by one when a value moves in or out of this
// set) every score changes by at most 1: lt(j) and le(j) each move by at
// most 1, in the same direction, and when n changes by ±1 the counts
// change by 0 or ±1 in the same direction while q·n moves by ±q, so the
// difference of the target and either end moves by at most max(q, 1 − q) ≤ 1.
func quantileScores(c *gridCounts, q float64, n int64) []*big.Rat {
	lt, le := c.ranks()
	target := new(big.Rat).SetFloat64(q)
	target.Mul(target, new(big.Rat).SetInt64(n))
	u := make([]*big.Rat, len(c.grid))
	for j := range c.grid {
		d := new(big.Rat)
		a := new(big.Rat).SetInt64(lt[j])
		b := new(big.Rat).SetInt64(le[j])
		switch {
		case target.Cmp(a) < 0:
			d.Sub(a, target)
		case target.Cmp(b) > 0:
			d.Sub(target, b)
		}
		u[j] = d.Neg(d)
	}
	return u
}

// quantileRelease selects a grid point for the q-quantile by the
// exponential mechanism with the scores of quantileScores at ε: Δ = 1 per
// record, sens = K under a privacy unit (Data.unitFactor).
func quantileRelease(src noise.Source, c *gridCounts, q float64, n int64, epsilon, sens float64) (float64, error) {
	j, err := ExpMech(src, quantileScores(c, q, n), epsilon, sens)
	if err != nil {
		return 0, err
	}
	return c.grid[j], nil
}

// rankError returns dist(q·n, [lt(j), le(j)]) for the grid point v (tests,
// and the coverage check of the error bar).
func rankError(c *gridCounts, q float64, n int64, v float64) float64 {
	lt, le := c.ranks()
	for j, g := range c.grid {
		if g == v {
			t := q * float64(n)
			switch {
			case t < float64(lt[j]):
				return float64(lt[j]) - t
			case t > float64(le[j]):
				return t - float64(le[j])
			}
			return 0
		}
	}
	return -1
}
