package synth

import "math/big"

// Certified interval arithmetic for the Filter's parameters: every function
// returns a bound that provably lies on the stated side of the exact real
// value (directed rounding of math/big at certPrec bits plus explicit series
// remainders). Nothing here is privacy noise; it decides the rational γ' of
// the skip sampler and proves the inequalities in the Filter doc comment.

const certPrec = 256

func newF() *big.Float { return new(big.Float).SetPrec(certPrec) }

func up(z *big.Float) *big.Float   { return z.SetMode(big.ToPositiveInf) }
func down(z *big.Float) *big.Float { return z.SetMode(big.ToNegativeInf) }

// expBounds returns lo ≤ e^x ≤ hi for an exactly representable x ≥ 0.
// Method: y = x/2^k ≤ ½; S = Σ_{j≤40} y^j/j! ≤ e^y ≤ S + 2y^41/41! (the
// Lagrange remainder with e^ξ ≤ e^½ < 2); then square k times, rounding
// down for lo and up for hi.
func expBounds(x *big.Float) (lo, hi *big.Float) {
	if x.Sign() < 0 {
		panic("synth: expBounds needs x ≥ 0")
	}
	y := newF().Set(x)
	k := 0
	half := big.NewFloat(0.5)
	for y.Cmp(half) > 0 {
		y.SetMantExp(y, -1) // exact halving
		k++
	}
	const terms = 40
	sLo, sHi := down(newF()).SetInt64(1), up(newF()).SetInt64(1)
	tLo, tHi := down(newF()).SetInt64(1), up(newF()).SetInt64(1) // y^j/j!
	for j := 1; j <= terms; j++ {
		jf := newF().SetInt64(int64(j))
		tLo.Mul(tLo, y).Quo(tLo, jf)
		tHi.Mul(tHi, y).Quo(tHi, jf)
		sLo.Add(sLo, tLo)
		sHi.Add(sHi, tHi)
	}
	// Remainder: 2·y^41/41! ≤ 2·tHi·y/41.
	rem := up(newF()).Mul(tHi, y)
	rem.Quo(rem, newF().SetInt64(terms+1)).Mul(rem, big.NewFloat(2))
	sHi.Add(sHi, rem)
	for i := 0; i < k; i++ {
		sLo.Mul(sLo, sLo)
		sHi.Mul(sHi, sHi)
	}
	return sLo, sHi
}

// expNegBounds returns lo ≤ e^{−x} ≤ hi for x ≥ 0.
func expNegBounds(x *big.Float) (lo, hi *big.Float) {
	eLo, eHi := expBounds(x)
	one := newF().SetInt64(1)
	return down(newF()).Quo(one, eHi), up(newF()).Quo(one, eLo)
}

// negLog1mUpper returns an upper bound of −ln(1 − p) = Σ_{k≥1} p^k/k for an
// upper bound pHi ≤ ½ of p: Σ_{k≤60} pHi^k/k + pHi^61/(61(1 − pHi)).
func negLog1mUpper(pHi *big.Float) *big.Float {
	if pHi.Cmp(big.NewFloat(0.5)) > 0 {
		panic("synth: negLog1mUpper needs p ≤ ½")
	}
	const terms = 60
	s := up(newF())
	pow := up(newF()).SetInt64(1)
	for k := 1; k <= terms; k++ {
		pow.Mul(pow, pHi)
		t := up(newF()).Quo(pow, newF().SetInt64(int64(k)))
		s.Add(s, t)
	}
	pow.Mul(pow, pHi)
	den := down(newF()).Sub(newF().SetInt64(1), pHi)
	den.Mul(den, newF().SetInt64(terms+1))
	s.Add(s, up(newF()).Quo(pow, den))
	return s
}
