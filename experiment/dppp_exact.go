package experiment

import (
	"fmt"
	"math"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/dppp"
)

// Exact expected label accuracy (issue 27, "DPPP within 2 points of
// PATE"): for a fixed ensemble the only randomness of a series is the
// privacy noise, so its expectation over the noise is computable per query
// and the gap between two mechanisms can be told apart from the runs'
// Monte-Carlo noise. With votes c (counts per class), truth t and i.i.d.
// noise Z_k per class,
//
//	P(label = t) = Σ_z P(Z = z) · Π_{k<t} P(Z ≤ c_t + z − c_k − 1) · Π_{k>t} P(Z ≤ c_t + z − c_k)
//
// for integer noise with ties to the lowest class (dppp.Params.Tally), and
// ∫ φ(u) Π_{k≠t} Φ((c_t − c_k + σu)/σ) du for the Gaussian noisy max.

// dpppNoisePMF is the law of the summed noise of one count in the
// experiment's plaintext path (every one of the N teachers adds a share):
// B(N·Coins, ½) (centred: its mean shifts every class alike) or the sum of
// N discrete Gaussians N_ℤ(0, σ²). It returns the pmf on lo, lo+1, ….
func dpppNoisePMF(p *dppp.Params, teachers int) (lo int, f []float64, err error) {
	switch p.Noise {
	case dppp.Binomial:
		n := float64(teachers) * float64(p.Coins)
		sd := math.Sqrt(n) / 2
		a := max(0, int(math.Floor(n/2-14*sd)))
		b := min(int(n), int(math.Ceil(n/2+14*sd)))
		f = make([]float64, b-a+1)
		lg := func(x float64) float64 { v, _ := math.Lgamma(x + 1); return v }
		for i := range f {
			k := float64(a + i)
			f[i] = math.Exp(lg(n) - lg(k) - lg(n-k) - n*math.Ln2)
		}
		return a, f, nil
	case dppp.DGauss:
		lo, f, _, err := accounting.DGaussSumPMF(p.Sigma, teachers)
		return lo, f, err
	}
	return 0, nil, fmt.Errorf("experiment: unknown noise %v", p.Noise)
}

// exactIntegerAccuracy is the expected accuracy over s's queries of the
// noisy argmax with i.i.d. integer noise of pmf f (offset irrelevant).
func (s *dpppSetup) exactIntegerAccuracy(f []float64) float64 {
	cdf := make([]float64, len(f))
	acc := 0.0
	for i, v := range f {
		acc += v
		cdf[i] = acc
	}
	at := func(i int) float64 { // P(Z ≤ i) on offsets 0..len(f)−1
		if i < 0 {
			return 0
		}
		if i >= len(cdf) {
			return 1
		}
		return cdf[i]
	}
	total := 0.0
	for j := range s.votes {
		c, t := s.counts(j), s.truth[j]
		pj := 0.0
		for z, fz := range f {
			if fz < 1e-300 {
				continue
			}
			prod := fz
			for k := range c {
				if k == t {
					continue
				}
				d := int(c[t]-c[k]) + z
				if k < t {
					d--
				}
				prod *= at(d)
				if prod == 0 {
					break
				}
			}
			pj += prod
		}
		total += pj
	}
	return total / float64(len(s.votes))
}

// exactGaussianAccuracy is the expected accuracy of the Gaussian noisy max
// of σ per count (midpoint rule on u ∈ [−10, 10], step 10⁻³: error far
// below 10⁻⁶).
func (s *dpppSetup) exactGaussianAccuracy(sigma float64) float64 {
	const h = 1e-3
	total := 0.0
	for j := range s.votes {
		c, t := s.counts(j), s.truth[j]
		pj := 0.0
		for u := -10 + h/2; u < 10; u += h {
			prod := math.Exp(-u*u/2) / math.Sqrt(2*math.Pi) * h
			for k := range c {
				if k != t {
					prod *= 0.5 * math.Erfc(-(float64(c[t]-c[k])/sigma+u)/math.Sqrt2)
				}
			}
			pj += prod
		}
		total += pj
	}
	return total / float64(len(s.votes))
}

// dpppExactGaps returns the exact expected accuracies at (ε, δ) of the
// PATE Gaussian noisy max and DPPP γ = 1 with binomial and discrete
// Gaussian noise (the series the "within 2 points" claim compares), and
// each DPPP noise's sd per count over PATE's σ.
func (s *dpppSetup) dpppExactGaps(eps, delta float64) (pate, bin, dg, binRatio, dgRatio float64, err error) {
	gs, err := pateGaussianSigma(eps, delta)
	if err != nil {
		return
	}
	pate = s.exactGaussianAccuracy(gs)
	for _, kind := range []dppp.NoiseKind{dppp.Binomial, dppp.DGauss} {
		p, e := s.calibrate(kind, 1, 1, eps, delta)
		if e != nil {
			return 0, 0, 0, 0, 0, e
		}
		_, f, e := dpppNoisePMF(p, s.teachers)
		if e != nil {
			return 0, 0, 0, 0, 0, e
		}
		var m, v float64
		for i, x := range f {
			m += float64(i) * x
		}
		for i, x := range f {
			v += (float64(i) - m) * (float64(i) - m) * x
		}
		a := s.exactIntegerAccuracy(f)
		if kind == dppp.Binomial {
			bin, binRatio = a, math.Sqrt(v)/gs
		} else {
			dg, dgRatio = a, math.Sqrt(v)/gs
		}
	}
	return pate, bin, dg, binRatio, dgRatio, nil
}
