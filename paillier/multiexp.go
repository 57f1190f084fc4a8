package paillier

import (
	"errors"
	"math/big"
	"runtime"
	"sync"
)

// multiExp returns prod bases[k]^exps[k] mod m for non-negative exponents
// (Straus's simultaneous exponentiation, with a sliding window per base):
// the squarings are shared by all bases, so the cost is
//
//	max_k |e_k| squarings + sum_k (|e_k|/(w_k+1) + 2^(w_k-1)) multiplications
//
// where w_k is the window of base k (chosen by its exponent's length), in
// place of sum_k |e_k| squarings and as many multiplications for separate
// exponentiations. With k bases of b-bit exponents that is about
// b + k (b/(w+1) + 2^(w-1)) multiplications against 1.2 k b. The bases are
// split in up to GOMAXPROCS groups computed in parallel (a product of
// products). Bases need not be units; exponent 0 contributes 1.
func multiExp(bases, exps []*big.Int, m *big.Int) *big.Int {
	if len(bases) != len(exps) {
		panic("paillier: multiExp: bases and exponents differ in number")
	}
	workers := min(runtime.GOMAXPROCS(0), len(bases)/8) // small inputs: one goroutine
	if workers <= 1 {
		return straus(bases, exps, m)
	}
	parts := make([]*big.Int, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*len(bases)/workers, (w+1)*len(bases)/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			parts[w] = straus(bases[lo:hi], exps[lo:hi], m)
		}()
	}
	wg.Wait()
	acc := parts[0]
	for _, p := range parts[1:] {
		acc.Mul(acc, p)
		acc.Mod(acc, m)
	}
	return acc
}

// windowFor returns the sliding-window width minimising
// bits/(w+1) + 2^(w-1), the multiplications per base for a bits-bit
// exponent (the table of odd powers g, g^3, ..., g^(2^w-1) costs 2^(w-1)).
func windowFor(bits int) int {
	best, cost := 1, bits/2+1
	for w := 2; w <= 8; w++ {
		if c := bits/(w+1) + 1<<(w-1); c < cost {
			best, cost = w, c
		}
	}
	return best
}

// straus is multiExp on one goroutine.
func straus(bases, exps []*big.Int, m *big.Int) *big.Int {
	type digit struct {
		base int
		odd  uint // odd window value
	}
	top := 0
	for _, e := range exps {
		if e.Sign() < 0 {
			panic("paillier: multiExp: negative exponent")
		}
		top = max(top, e.BitLen())
	}
	// at[p] lists the windows whose lowest bit is at position p.
	at := make([][]digit, top)
	tables := make([][]*big.Int, len(bases))
	sq := new(big.Int)
	for k, e := range exps {
		if e.Sign() == 0 {
			continue
		}
		w := windowFor(e.BitLen())
		g := new(big.Int).Mod(bases[k], m)
		tab := make([]*big.Int, 1<<(w-1)) // tab[j] = g^(2j+1)
		tab[0] = g
		if len(tab) > 1 {
			sq.Mul(g, g)
			sq.Mod(sq, m)
			for j := 1; j < len(tab); j++ {
				tab[j] = new(big.Int).Mul(tab[j-1], sq)
				tab[j].Mod(tab[j], m)
			}
		}
		tables[k] = tab
		// Sliding window from the top: a window starts at a set bit i and
		// covers bits i..i-w+1, shortened so that its lowest bit is set.
		for i := e.BitLen() - 1; i >= 0; {
			if e.Bit(i) == 0 {
				i--
				continue
			}
			lo := max(i-w+1, 0)
			for e.Bit(lo) == 0 {
				lo++
			}
			var v uint
			for b := i; b >= lo; b-- {
				v = v<<1 | e.Bit(b)
			}
			at[lo] = append(at[lo], digit{base: k, odd: v})
			i = lo - 1
		}
	}
	acc := big.NewInt(1)
	started := false
	for p := top - 1; p >= 0; p-- {
		if started {
			acc.Mul(acc, acc)
			acc.Mod(acc, m)
		}
		for _, d := range at[p] {
			acc.Mul(acc, tables[d.base][d.odd>>1])
			acc.Mod(acc, m)
			started = true
		}
	}
	return acc.Mod(acc, m)
}

// multiExpSigned is multiExp for exponents of either sign: the bases with
// negative exponents are multiplied together first and inverted once. It
// fails if that product is not invertible modulo m.
func multiExpSigned(bases, exps []*big.Int, m *big.Int) (*big.Int, error) {
	var pb, pe, nb, ne []*big.Int
	for k, e := range exps {
		if e.Sign() < 0 {
			nb = append(nb, bases[k])
			ne = append(ne, new(big.Int).Neg(e))
		} else {
			pb = append(pb, bases[k])
			pe = append(pe, e)
		}
	}
	pos := multiExp(pb, pe, m)
	if len(nb) == 0 {
		return pos, nil
	}
	neg := multiExp(nb, ne, m)
	if neg.ModInverse(neg, m) == nil {
		return nil, errors.New("a base with a negative exponent is not invertible")
	}
	pos.Mul(pos, neg)
	return pos.Mod(pos, m), nil
}
