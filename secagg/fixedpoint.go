package secagg

import (
	"fmt"
	"math"
	"math/bits"
)

// Encoding maps real vectors to fixed point over Z_{2^64} and back.
//
// A real x is encoded as the integer q = round(x·2^FracBits) (ties away from
// zero), stored in two's complement as a uint64; the scale is 2^FracBits, so
// the resolution is 2^−FracBits. Sums are computed mod 2^64 and decoded as
// signed 64-bit integers. The sum of Parties values, each with |x| ≤ Bound, is
// exact (no wrap-around) when
//
//	Parties · round(Bound·2^FracBits) ≤ 2^63 − 1,
//
// which Validate checks in exact integer arithmetic before anything is
// summed; Encode refuses values
// outside [−Bound, Bound]. Multiplication by a power of two is exact in
// floating point, so the only rounding is the final round to an integer;
// values already on the 2^−FracBits grid are encoded exactly.
type Encoding struct {
	FracBits uint    // scale 2^FracBits; at most 62
	Bound    float64 // public bound on |value| per coordinate per party
	Parties  int     // maximum number of summands
}

// Validate checks the overflow bound.
func (e Encoding) Validate() error {
	if e.FracBits > 62 {
		return fmt.Errorf("secagg: encoding: FracBits %d > 62", e.FracBits)
	}
	if !(e.Bound > 0) || math.IsInf(e.Bound, 0) {
		return fmt.Errorf("secagg: encoding: bound %v must be positive and finite", e.Bound)
	}
	if e.Parties < 1 {
		return fmt.Errorf("secagg: encoding: %d parties, need ≥ 1", e.Parties)
	}
	overflow := fmt.Errorf("secagg: encoding: %d parties × bound %g × 2^%d ≥ 2^63: the sum could overflow; lower FracBits or the bound",
		e.Parties, e.Bound, e.FracBits)
	maxQ := math.Round(math.Ldexp(e.Bound, int(e.FracBits))) // the largest |encoded value|, an integer
	if maxQ >= math.Ldexp(1, 63) {
		return overflow
	}
	hi, lo := bits.Mul64(uint64(e.Parties), uint64(maxQ))
	if hi != 0 || lo > math.MaxInt64 {
		return overflow
	}
	return nil
}

// Scale returns 2^FracBits.
func (e Encoding) Scale() float64 { return math.Ldexp(1, int(e.FracBits)) }

// Encode returns the fixed-point encoding of x. It rejects NaN, ±Inf and
// values with |x| > Bound, naming the coordinate.
func (e Encoding) Encode(x []float64) ([]uint64, error) {
	if err := e.Validate(); err != nil {
		return nil, err
	}
	out := make([]uint64, len(x))
	for i, v := range x {
		q, err := e.encodeOne(v)
		if err != nil {
			return nil, fmt.Errorf("secagg: encode coordinate %d: %w", i, err)
		}
		out[i] = uint64(q)
	}
	return out, nil
}

func (e Encoding) encodeOne(v float64) (int64, error) {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("value %v is not finite", v)
	}
	if math.Abs(v) > e.Bound {
		return 0, fmt.Errorf("|%g| exceeds the declared bound %g", v, e.Bound)
	}
	return int64(math.Round(math.Ldexp(v, int(e.FracBits)))), nil
}

// EncodeInt is Encode for one value, returning the signed integer.
func (e Encoding) EncodeInt(v float64) (int64, error) {
	if err := e.Validate(); err != nil {
		return 0, err
	}
	return e.encodeOne(v)
}

// Decode maps fixed-point words (a sum of at most Parties encodings) back to
// reals: int64(w)·2^−FracBits.
func (e Encoding) Decode(w []uint64) []float64 {
	out := make([]float64, len(w))
	for i, v := range w {
		out[i] = math.Ldexp(float64(int64(v)), -int(e.FracBits))
	}
	return out
}

// SumBound returns the largest |decoded sum| the encoding admits; a decoded
// sum beyond it means the inputs broke the declared bound.
func (e Encoding) SumBound() float64 {
	return float64(e.Parties) * (e.Bound + math.Ldexp(0.5, -int(e.FracBits)))
}
