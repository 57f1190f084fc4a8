package synth

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dplearn/dplearn/noise"
)

// Entry is one cell of a released summary: its index, its noisy count
// (Value) and the weight it carries in the synthetic data.
type Entry struct {
	Cell   uint64
	Value  int64
	Weight float64
}

// Filter is the high-pass filter of Cormode, Procopiuc, Srivastava & Tran
// (ICDT 2012, "Differentially private summaries for sparse data") applied
// to the geometric mechanism without materialising the noisy table.
//
// # The mechanism it reproduces
//
// Every one of the M cells gets c + X with X two-sided geometric,
// P(X = x) = (1−α)/(1+α)·α^|x|, α = e^{−ε/2} (L1 sensitivity
// HistogramSensitivity = 2 under replace-one), and only cells whose noisy
// count is ≥ θ are published. The noisy table is ε-DP; the filter is
// post-processing.
//
// # The shortcut
//
// Non-empty cells (O(N) of them) are noised and filtered directly. An
// empty cell passes with probability p = P(X ≥ θ) = α^θ/(1+α), and given
// that it passes its value is θ + G with G ~ Geometric(α) (memorylessness).
// So the passing empty cells are a Bernoulli(p) subset of the M₀ empty
// cells, which is sampled by skipping: the gaps between successive passing
// cells are i.i.d. geometric. Cost O(N + M₀p), memory O(N + M₀p): the
// bins^d cells are never materialised. (Cormode et al. draw the number of
// passing cells from Binomial(M₀, p) and place them uniformly at random
// among the empty cells; the skip process has exactly that law.)
//
// # Exactness and the privacy it prints
//
// The skip gaps are drawn exactly by noise.GeometricFast with a rational
// γ′, so the implemented survival probability is p′ = 1 − e^{−γ′}, not p
// (which is transcendental). γ′ is chosen by certified arithmetic as an
// upper bound of −ln(1 − p) at 64 significant bits, so p ≤ p′ ≤ p(1+2^-60).
// The section below proves that with p ≤ p′ ≤ min(p/α, p + 1 − α) the implemented
// per-cell laws still differ by at most e^{ε/2} between counts c and c + 1
// for every c ≥ 0, hence the implemented release is exactly ε-DP (two cells
// change under replace-one). NewFilter refuses parameters where the proof
// does not go through. θ must be ≥ 2 (at θ = 1 the bound on the empty
// cell's "not published" outcome has no slack for p′ > p).
//
// # Per-cell privacy loss of the implementation
//
// Write P_c for the law of one cell's output (⊥ = not published, or a value
// v ≥ θ) when its true count is c. For c ≥ 1 it is exact:
// P_c(v) = (1−α)/(1+α)·α^|v−c|, P_c(⊥) = P(X < θ − c). For the empty cell
// the implementation gives P′_0(v) = p′(1−α)α^{v−θ}, P′_0(⊥) = 1 − p′.
//
//   - c ≥ 1 versus c + 1: values give ratios α^{±1}; ⊥ gives
//     P(X ≤ t)/P(X ≤ t−1) ∈ [1, 1/α]. So the loss is ≤ ε/2.
//   - 0 versus 1, value v ≥ θ ≥ 2: P′_0(v)/P_1(v) = p′(1+α)α^{1−θ} =
//     (p′/p)·α ∈ [α, 1] when p ≤ p′ ≤ p/α.
//   - 0 versus 1, ⊥: P′_0(⊥)/P_1(⊥) = (1 − p′)/(1 − p/α) (P_1(⊥) =
//     1 − α^{θ−1}/(1+α) = 1 − p/α). It is ≤ 1/α iff α(1 − p′) ≤ 1 − p/α,
//     implied by p′ ≥ p and α(1 − p) ≤ 1 − p/α ⟺ α^{θ−1}(1 − α²) ≤ 1 − α²
//     (true for θ ≥ 1); and it is ≥ α iff α − p ≤ 1 − p′ ⟺ p′ ≤ p + 1 − α.
//
// Replace-one changes two cells by one each, so the release is ε-DP
// exactly, with ε attained by the values of any non-empty cell.
// TestFilterPrivacyLossIsExact evaluates these laws numerically.
type Filter struct {
	Epsilon float64
	Theta   int64
	// Cells is the domain size M.
	Cells uint64
	// GammaSkip is the rational γ′ of the skip sampler; PZero = 1 − e^{−γ′}
	// (as float64, for reporting) is the survival probability of an empty
	// cell.
	GammaSkip *big.Rat
	PZero     float64
	// scale is the discrete Laplace scale 2/ε (exact rational), halfEps ε/2.
	scale, halfEps *big.Rat
}

// ThresholdFor returns the filter threshold θ: the smallest θ ≥ 2 for which
// the expected number of empty cells that pass, at most M·α^θ/(1+α), is at
// most target. Cormode et al. set θ from the size of the summary to be
// published (our reading of their guidance); with target = N (public) the
// filtered summary is about the size of the data, whatever the domain size
// M.
func ThresholdFor(epsilon float64, cells uint64, target float64) int64 {
	a := math.Exp(-epsilon / 2)
	lm := math.Log(float64(cells)) - math.Log1p(a) - math.Log(math.Max(target, 1))
	if lm <= 0 {
		return 2
	}
	th := int64(math.Ceil(lm / (epsilon / 2)))
	return max(th, 2)
}

// NewFilter prepares the filter for ε, threshold θ ≥ 2 and a domain of M
// cells, computing γ′ and proving the privacy inequalities (Filter doc).
func NewFilter(epsilon float64, theta int64, cells uint64) (*Filter, error) {
	if !(epsilon > 0) || math.IsInf(epsilon, 0) {
		return nil, fmt.Errorf("synth: filter ε must be finite and > 0, got %v", epsilon)
	}
	if theta < 2 {
		return nil, fmt.Errorf("synth: filter threshold θ must be ≥ 2, got %d", theta)
	}
	if cells < 1 || cells > MaxDomainCells {
		return nil, fmt.Errorf("synth: filter domain of %d cells is outside [1, 2^62]", cells)
	}
	b := lossBounds(epsilon, theta)
	if b.pHi.Cmp(big.NewFloat(0.5)) > 0 {
		return nil, fmt.Errorf("synth: filter survival probability above ½ at ε=%v, θ=%d", epsilon, theta)
	}
	// γ′ ≥ −ln(1 − p), rounded up to 64 bits so the rational stays small.
	g := negLog1mUpper(b.pHi)
	g64 := new(big.Float).SetPrec(64).SetMode(big.ToPositiveInf).Set(g)
	gamma, _ := g64.Rat(nil)
	if gamma.Sign() <= 0 {
		return nil, fmt.Errorf("synth: filter survival probability underflows at ε=%v, θ=%d (raise ε or lower θ)", epsilon, theta)
	}
	if err := b.check(g64); err != nil {
		return nil, fmt.Errorf("synth: ε=%v, θ=%d: %w", epsilon, theta, err)
	}
	gf, _ := g64.Float64()
	f := &Filter{
		Epsilon: epsilon, Theta: theta, Cells: cells, GammaSkip: gamma,
		PZero:   -math.Expm1(-gf),
		scale:   new(big.Rat).Quo(big.NewRat(2, 1), new(big.Rat).SetFloat64(epsilon)),
		halfEps: new(big.Rat).Quo(new(big.Rat).SetFloat64(epsilon), big.NewRat(2, 1)),
	}
	return f, nil
}

// bounds holds certified bounds of α = e^{−ε/2} and p = α^θ/(1+α).
type bounds struct {
	aLo, aHi, pLo, pHi *big.Float
}

func lossBounds(epsilon float64, theta int64) bounds {
	half := newF().SetFloat64(epsilon)
	half.SetMantExp(half, -1)
	aLo, aHi := expNegBounds(half)
	xt := newF().Mul(half, newF().SetInt64(theta)) // exact: 53 + 64 bits < 256
	atLo, atHi := expNegBounds(xt)
	one := newF().SetInt64(1)
	pLo := down(newF()).Quo(atLo, up(newF()).Add(one, aHi))
	pHi := up(newF()).Quo(atHi, down(newF()).Add(one, aLo))
	return bounds{aLo: aLo, aHi: aHi, pLo: pLo, pHi: pHi}
}

// check proves p ≤ p′ ≤ min(p/α, p + 1 − α) for p′ = 1 − e^{−γ′}, the
// condition proved in the Filter doc comment. p ≤ p′ holds because γ′ ≥ −ln(1 − p).
func (b bounds) check(gamma *big.Float) error {
	eLo, _ := expNegBounds(gamma)
	one := newF().SetInt64(1)
	pPrimeHi := up(newF()).Sub(one, eLo)
	if gamma.Cmp(pPrimeHi) < 0 {
		pPrimeHi.Set(gamma) // 1 − e^{−γ′} ≤ γ′: accurate when γ′ is tiny
	}
	// p′ ≤ p/α  ⟸  p′_hi·α_hi ≤ p_lo.
	if up(newF()).Mul(pPrimeHi, b.aHi).Cmp(b.pLo) > 0 {
		return fmt.Errorf("cannot certify p′ ≤ p/α for the skip sampler")
	}
	// p′ ≤ p + 1 − α  ⟸  p′_hi ≤ p_lo + 1 − α_hi.
	rhs := down(newF()).Add(b.pLo, down(newF()).Sub(one, b.aHi))
	if pPrimeHi.Cmp(rhs) > 0 {
		return fmt.Errorf("cannot certify p′ ≤ p + 1 − α for the skip sampler")
	}
	return nil
}

// Apply runs the filter on a sparse histogram over the filter's domain and
// returns the published cells (non-empty cells first, in cell order, then
// the passing empty cells in cell order), each with Value = its noisy count
// (≥ θ) and Weight = Value.
func (f *Filter) Apply(h *Histogram, src noise.Source) ([]Entry, error) {
	for i, c := range h.Cells {
		if c >= f.Cells || (i > 0 && c <= h.Cells[i-1]) || h.Counts[i] < 1 {
			return nil, fmt.Errorf("synth: filter: histogram is not sorted, positive and inside the %d-cell domain", f.Cells)
		}
	}
	noisy := append([]int64(nil), h.Counts...)
	if err := noise.AddDiscreteLaplace(src, noisy, f.scale); err != nil {
		return nil, fmt.Errorf("synth: filter noise: %w", err)
	}
	var out []Entry
	for i, v := range noisy {
		if v >= f.Theta {
			out = append(out, Entry{Cell: h.Cells[i], Value: v, Weight: float64(v)})
		}
	}
	zeros, err := f.emptyPassing(h.Cells, src)
	if err != nil {
		return nil, err
	}
	if len(zeros) > 0 {
		g, err := noise.GeometricFast(src, f.halfEps, len(zeros))
		if err != nil {
			return nil, fmt.Errorf("synth: filter values of empty cells: %w", err)
		}
		for i, c := range zeros {
			v := f.Theta + g[i]
			if v < f.Theta {
				return nil, fmt.Errorf("synth: filter value overflows int64")
			}
			out = append(out, Entry{Cell: c, Value: v, Weight: float64(v)})
		}
	}
	return out, nil
}

// emptyPassing returns the empty cells (cells not in the sorted list
// nonEmpty) that pass the filter: each independently with probability
// p′ = 1 − e^{−γ′}, found by geometric skips over the M₀ empty cells.
func (f *Filter) emptyPassing(nonEmpty []uint64, src noise.Source) ([]uint64, error) {
	m0 := int64(f.Cells) - int64(len(nonEmpty))
	if m0 <= 0 {
		return nil, nil
	}
	batch := int(min(float64(m0)*f.PZero*1.1+16, 1<<16))
	var out []uint64
	pos := int64(-1) // rank among the empty cells of the last passing one
	j := 0           // non-empty cells at or below the current cell
	for {
		gaps, err := noise.GeometricFastCensored(src, f.GammaSkip, batch, m0)
		if err != nil {
			return nil, fmt.Errorf("synth: filter skips: %w", err)
		}
		for _, g := range gaps {
			// Next passing empty cell: skip g empty cells after pos.
			if g >= m0-1-pos {
				return out, nil
			}
			pos += g + 1
			for j < len(nonEmpty) && nonEmpty[j] <= uint64(pos)+uint64(j) {
				j++
			}
			out = append(out, uint64(pos)+uint64(j))
		}
	}
}
