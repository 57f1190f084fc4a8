package accounting

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/dsp/fourier"
)

// The reference path below is the composition code of the starting commit
// (2f28e1c), kept verbatim apart from names: a fresh FFT plan and fresh
// buffers for every convolution. The convolver must reproduce it bit for
// bit, since the accountant's printed guarantees are pinned by known-answer
// tests here and in package dppp.

func convolveOld(a, b []float64) ([]float64, float64) {
	m := len(a) + len(b) - 1
	if len(a)*len(b) <= directLimit {
		out := make([]float64, m)
		for i, x := range a {
			if x == 0 {
				continue
			}
			for j, y := range b {
				out[i+j] += x * y
			}
		}
		return out, 0
	}
	return fftConvolveOld(a, b)
}

func fftConvolveOld(a, b []float64) ([]float64, float64) {
	m := len(a) + len(b) - 1
	n := 1
	for n < m {
		n <<= 1
	}
	f := fourier.NewFFT(n)
	pa := make([]float64, n)
	copy(pa, a)
	ca := f.Coefficients(nil, pa)
	cb := ca
	if len(a) != len(b) || &a[0] != &b[0] {
		pb := make([]float64, n)
		copy(pb, b)
		cb = f.Coefficients(nil, pb)
	}
	for i := range ca {
		ca[i] *= cb[i]
	}
	out := f.Sequence(pa, ca)[:m]
	inv := 1 / float64(n)
	for i := range out {
		out[i] *= inv
		if out[i] < 0 {
			out[i] = 0
		}
	}
	return out, fftErrorBound(a, b, n)
}

func composeLossOld(a, b *lossPMF, o PLDOptions) lossPMF {
	probs, eta := convolveOld(a.probs, b.probs)
	out := lossPMF{
		lo:    a.lo + b.lo,
		probs: probs,
		inf:   1 - (1-a.inf)*(1-b.inf),
		trunc: a.trunc + b.trunc,
		err:   a.err + b.err + a.err*b.err + eta,
		steps: a.steps + b.steps,
		shift: a.shift + b.shift,
	}
	out.truncate(o)
	return out
}

func composeOld(p, q *PLD) (*PLD, error) {
	if p.opts.Grid != q.opts.Grid {
		if p.opts.Grid > q.opts.Grid {
			p, q = q, p
		}
		var err error
		if p, err = p.coarsenTo(q.opts.Grid); err != nil {
			return nil, err
		}
	}
	n := max(len(p.dirs), len(q.dirs))
	out := &PLD{opts: p.opts, dirs: make([]lossPMF, n)}
	for i := range n {
		out.dirs[i] = composeLossOld(&p.dirs[min(i, len(p.dirs)-1)], &q.dirs[min(i, len(q.dirs)-1)], p.opts)
	}
	if m := out.opts.MaxPoints; m > 0 {
		for out.GridSize() > m {
			out = out.coarsen()
		}
	}
	return out, nil
}

func selfComposeOld(p *PLD, k int) (*PLD, error) {
	powers := []*PLD{p}
	for j := 1; 1<<j <= k; j++ {
		next, err := composeOld(powers[j-1], powers[j-1])
		if err != nil {
			return nil, err
		}
		powers = append(powers, next)
	}
	top := len(powers) - 1
	acc := powers[top]
	for j := top - 1; j >= 0; j-- {
		if (k>>j)&1 == 0 {
			continue
		}
		var err error
		if acc, err = composeOld(acc, powers[j]); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// sameBits reports the first index where x and y differ as float64 bit
// patterns (−1 if none and the lengths agree).
func sameBits(x, y []float64) int {
	for i := range min(len(x), len(y)) {
		if math.Float64bits(x[i]) != math.Float64bits(y[i]) {
			return i
		}
	}
	if len(x) != len(y) {
		return min(len(x), len(y))
	}
	return -1
}

// samePLD fails t unless p and q are bit-identical (options, every field of
// every direction).
func samePLD(t *testing.T, name string, p, q *PLD) {
	t.Helper()
	if p.opts != q.opts || len(p.dirs) != len(q.dirs) {
		t.Fatalf("%s: options %+v/%+v, %d/%d directions", name, p.opts, q.opts, len(p.dirs), len(q.dirs))
	}
	for k := range p.dirs {
		a, b := p.dirs[k], q.dirs[k]
		if i := sameBits(a.probs, b.probs); i >= 0 {
			t.Fatalf("%s dir %d: probs differ at %d of %d/%d", name, k, i, len(a.probs), len(b.probs))
		}
		fa := []float64{a.inf, a.trunc, a.err, a.shift, float64(a.lo), float64(a.steps)}
		fb := []float64{b.inf, b.trunc, b.err, b.shift, float64(b.lo), float64(b.steps)}
		if i := sameBits(fa, fb); i >= 0 {
			t.Fatalf("%s dir %d: inf/trunc/err/shift/lo/steps %v vs %v", name, k, fa, fb)
		}
	}
}

// One convolver reused over random operands of random lengths (direct and
// FFT paths, squaring and distinct operands, growing and shrinking FFT
// lengths, so stale plans and dirty scratch buffers would show) gives
// bit-for-bit the results and error bounds of fresh convolutions.
func TestPLDConvolverMatchesFresh(t *testing.T) {
	rng := rand.New(rand.NewPCG(24, 7))
	cv := new(convolver)
	vec := func(n int) []float64 {
		v := make([]float64, n)
		for i := range v {
			v[i] = rng.Float64() * rng.Float64()
		}
		return v
	}
	lens := []int{1, 2, 7, 300, 2048, 2049, 5000, 3000, 9000, 1 << 13, 40000, 2500, 17}
	fftCalls := 0
	for trial := range 40 {
		a := vec(lens[rng.IntN(len(lens))])
		b := a
		if trial%3 != 0 {
			b = vec(lens[rng.IntN(len(lens))])
		}
		want, wantEta := convolveOld(a, b)
		got, gotEta := cv.convolve(a, b)
		if i := sameBits(got, want); i >= 0 || math.Float64bits(gotEta) != math.Float64bits(wantEta) {
			t.Fatalf("trial %d (%d×%d, square %v): differs at %d; η %v vs %v", trial, len(a), len(b), &a[0] == &b[0], i, gotEta, wantEta)
		}
		if len(a)*len(b) > directLimit {
			fftCalls++
		}
	}
	if fftCalls < 10 || len(cv.plans) < 3 {
		t.Fatalf("only %d FFT convolutions over %d plan lengths: the test does not exercise reuse", fftCalls, len(cv.plans))
	}
}

// SelfCompose (one convolver through the squaring and multiplying loops),
// Compose and a PLDComposer reused over several compositions equal the starting commit's composition bit for bit, on the
// default grid and with MaxPoints (coarsening between convolutions).
func TestPLDSelfComposeMatchesOld(t *testing.T) {
	bin := mustPLD(t)(BinomialHistogramPLD(224, PLDOptions{}))
	dg := mustPLD(t)(DGaussSumHistogramPLD(2.162, 7, PLDOptions{}))
	capped := mustPLD(t)(BinomialHistogramPLD(224, PLDOptions{MaxPoints: 1 << 14}))
	gauss := mustPLD(t)(GaussianPLD(3, 1, PLDOptions{Grid: 1e-3}))
	for _, c := range []struct {
		name string
		p    *PLD
		k    int
	}{
		{"binomial", bin, 13},
		{"dgauss", dg, 11},
		{"binomial-maxpoints", capped, 27},
		{"gaussian", gauss, 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			want := mustPLD(t)(selfComposeOld(c.p, c.k))
			samePLD(t, "SelfCompose", mustPLD(t)(c.p.SelfCompose(c.k)), want)
			oldTwo := mustPLD(t)(composeOld(c.p, c.p))
			oldThree := mustPLD(t)(composeOld(oldTwo, c.p))
			two := mustPLD(t)(c.p.Compose(c.p))
			samePLD(t, "Compose", mustPLD(t)(two.Compose(c.p)), oldThree)
			// One PLDComposer through a loop, as package dppp uses it.
			var comp PLDComposer
			acc := c.p
			for i, want := range []*PLD{oldTwo, oldThree, mustPLD(t)(composeOld(oldThree, oldTwo))} {
				op := c.p
				if i == 2 {
					op = two
				}
				acc = mustPLD(t)(comp.Compose(acc, op))
				samePLD(t, fmt.Sprintf("PLDComposer step %d", i), acc, want)
			}
			if want.GridSize() < 2048 {
				t.Fatalf("grid of %d points: the FFT path is not exercised", want.GridSize())
			}
		})
	}
}

// BenchmarkPLDCompose: SelfCompose(100) of the binomial (224 coins) and
// discrete Gaussian (σ = 2.162, 7 shares) histogram PLDs on the default
// grid, by the starting commit's path ("old": a fresh FFT plan and buffers
// per convolution) and by the convolver ("new"), in the same run.
func BenchmarkPLDCompose(b *testing.B) {
	for _, c := range []struct {
		name string
		mk   func() (*PLD, error)
	}{
		{"binomial", func() (*PLD, error) { return BinomialHistogramPLD(224, PLDOptions{}) }},
		{"dgauss", func() (*PLD, error) { return DGaussSumHistogramPLD(2.162, 7, PLDOptions{}) }},
	} {
		p, err := c.mk()
		if err != nil {
			b.Fatal(err)
		}
		for _, path := range []string{"old", "new"} {
			b.Run(fmt.Sprintf("%s/%s", c.name, path), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					var err error
					if path == "old" {
						_, err = selfComposeOld(p, 100)
					} else {
						_, err = p.SelfCompose(100)
					}
					if err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
