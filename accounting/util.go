package accounting

import (
	"fmt"
	"math"
)

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

func checkPositive(name string, x float64) error {
	if !finite(x) || x <= 0 {
		return fmt.Errorf("accounting: %s must be finite and > 0, got %v", name, x)
	}
	return nil
}

func checkDelta(delta float64) error {
	if !finite(delta) || delta <= 0 || delta >= 1 {
		return fmt.Errorf("accounting: δ must be in (0, 1), got %v", delta)
	}
	return nil
}

// logAdd returns log(e^a + e^b).
func logAdd(a, b float64) float64 {
	if math.IsInf(a, -1) {
		return b
	}
	if math.IsInf(b, -1) {
		return a
	}
	if a < b {
		a, b = b, a
	}
	return a + math.Log1p(math.Exp(b-a))
}

// signedLog is a real number stored as sign·e^log.
type signedLog struct {
	log  float64
	sign int
}

func (s signedLog) add(t signedLog) signedLog {
	if t.sign == 0 || math.IsInf(t.log, -1) {
		return s
	}
	if s.sign == 0 || math.IsInf(s.log, -1) {
		return t
	}
	if s.sign == t.sign {
		return signedLog{logAdd(s.log, t.log), s.sign}
	}
	if s.log == t.log {
		return signedLog{math.Inf(-1), 0}
	}
	if s.log > t.log {
		return signedLog{s.log + math.Log1p(-math.Exp(t.log-s.log)), s.sign}
	}
	return signedLog{t.log + math.Log1p(-math.Exp(s.log-t.log)), t.sign}
}

// normCDF returns Φ(x).
func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

// logNormCDF returns log Φ(x), accurate in the far left tail.
func logNormCDF(x float64) float64 {
	if x > -30 {
		return math.Log(normCDF(x))
	}
	// Asymptotic series: Φ(x) = φ(x)/|x| · (1 − 1/x² + 3/x⁴ − 15/x⁶ + …).
	x2 := x * x
	return -x2/2 - math.Log(-x*math.Sqrt(2*math.Pi)) + math.Log1p(-1/x2+3/(x2*x2)-15/(x2*x2*x2))
}

// bisect finds the smallest x in [lo, hi] (to relative tolerance tol) such
// that ok(x) holds, for a predicate that is false below a threshold and true
// above it. It returns hi's side of the bracket, so ok(result) is true.
func bisect(lo, hi, tol float64, ok func(float64) bool) (float64, error) {
	if !ok(hi) {
		return 0, fmt.Errorf("accounting: no solution below %g", hi)
	}
	for i := 0; i < 400 && hi-lo > tol*hi; i++ {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, nil
}

// smallestInt returns the smallest n ≥ 1 with ok(n), for a monotone ok
// (false below some n, true from it on), by doubling then bisection; found
// is false when no n ≤ limit qualifies.
func smallestInt(ok func(int64) bool, limit int64) (n int64, found bool) {
	hi := int64(1)
	for !ok(hi) {
		hi *= 2
		if hi > limit {
			return 0, false
		}
	}
	lo := hi / 2 // ok(lo) is false, or lo == 0
	for hi-lo > 1 {
		mid := lo + (hi-lo)/2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi, true
}
