package accounting

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"gonum.org/v1/gonum/dsp/fourier"
)

// DefaultPLDGrid is the default width Δ of the loss grid.
const DefaultPLDGrid = 1e-4

// DefaultPLDTail is the default mass τ truncated per tail and per step.
const DefaultPLDTail = 1e-15

// pldSlack is the relative float slack s added to every loss before rounding.
const pldSlack = 1e-10

// PLDOptions configure the discretisation of a privacy-loss distribution.
// The zero value gives the defaults.
type PLDOptions struct {
	// Grid is the width Δ of the loss grid (0: DefaultPLDGrid). The reported
	// ε exceeds the truth by at most k·Δ after k compositions.
	Grid float64
	// Tail is the probability mass truncated per tail at each step (0:
	// DefaultPLDTail); every truncated mass is counted in δ.
	Tail float64
	// Optimistic rounds every loss down and drops truncated masses: the
	// result is a lower bound on the true δ(ε) and ε(δ), for brackets and
	// tests, never a guarantee.
	Optimistic bool
	// MaxPoints, if > 0, bounds the grid points of a composition: a
	// composed PLD with more points per direction is re-discretised on a
	// grid twice as wide (losses rounded up again, pessimistic; the shift,
	// at most the old width, is counted in ErrorBound), as often as
	// needed. Powers P^(2^j) of one release then keep about as many points
	// as P while the grid widens by √2 per squaring, so k releases are
	// over-charged by about 3.4·kΔ instead of kΔ on a grid √k times
	// finer than would otherwise fit: the composition of k = 20,000
	// releases can start on a grid of 10⁻⁶ (see the PLD doc comment).
	// Options that differ only in Grid (by a power of two) compose.
	MaxPoints int
}

func (o PLDOptions) normalise() (PLDOptions, error) {
	if o.Grid == 0 {
		o.Grid = DefaultPLDGrid
	}
	if o.Tail == 0 {
		o.Tail = DefaultPLDTail
	}
	if !finite(o.Grid) || o.Grid < 1e-7 || o.Grid > 1 {
		return o, fmt.Errorf("accounting: PLD grid must be in [1e-7, 1], got %v", o.Grid)
	}
	if !finite(o.Tail) || o.Tail < 0 || o.Tail > 1e-6 {
		return o, fmt.Errorf("accounting: PLD tail mass must be in [0, 1e-6], got %v", o.Tail)
	}
	if o.MaxPoints < 0 || (o.MaxPoints > 0 && o.MaxPoints < 64) || o.MaxPoints > maxGrid {
		return o, fmt.Errorf("accounting: PLD MaxPoints must be 0 or in [64, 2^26], got %d", o.MaxPoints)
	}
	return o, nil
}

// index returns the grid index of loss l: ⌈(l + s)/Δ⌉ (pessimistic) or
// ⌊(l − s)/Δ⌋ (optimistic), s = pldSlack·max(1, |l|).
func (o PLDOptions) index(l float64) int64 {
	s := pldSlack * math.Max(1, math.Abs(l))
	if o.Optimistic {
		return int64(math.Floor((l - s) / o.Grid))
	}
	return int64(math.Ceil((l + s) / o.Grid))
}

// lossPMF is one direction of a discretised PLD: mass probs[i] at loss
// (lo + i)·Δ, mass inf at +∞.
type lossPMF struct {
	lo    int64
	probs []float64
	inf   float64 // P-mass at +∞ (pessimistic: includes truncated high tails)
	trunc float64 // τ: total truncated mass (union bound)
	err   float64 // η: ℓ1 bound on the numerical error of probs
	steps int     // releases composed, each rounded once
	shift float64 // Σ over releases of the largest upward shift of a loss
}

// roundShift returns the largest upward shift of a loss of magnitude ≤ m by
// index (pessimistic): less than Δ + s(m).
func (o PLDOptions) roundShift(m float64) float64 {
	return o.Grid + pldSlack*math.Max(1, m)
}

// PLD is a discretised privacy-loss distribution, pessimistic unless built
// with PLDOptions.Optimistic: Delta and Epsilon never report less than the
// truth. It holds one direction when the mechanism is symmetric (the Q‖P
// loss has the same law as the P‖Q loss) and both otherwise. A PLD is
// immutable; Compose and SelfCompose return new ones. docs/accounting.md
// has the known answers and a usage guide.
//
// For a pair of output distributions (P, Q) of a mechanism on neighbouring
// inputs, the privacy loss of an outcome y is L(y) = ln P(y) − ln Q(y)
// (+∞ where Q(y) = 0 < P(y)), and the privacy-loss distribution (PLD) is the
// law of L(Y) for Y ~ P. The hockey-stick divergence — the exact δ of the pair
// at ε — is a function of the PLD alone: with Q(y) = P(y)e^{−L(y)},
//
//	δ(ε) = Σ_y (P(y) − e^ε Q(y))₊ = Σ_{l>ε} p(l)(1 − e^{ε−l}) + p(∞).      (1)
//
// Composition. For independent releases the losses add, so the PLD of a
// composition is the convolution of the PLDs, and the +∞ masses combine as
// 1 − Π(1 − p_i(∞)). Under adaptive composition the same holds for dominating
// pairs (Zhu, Dong & Wang 2022, Theorem 10): if every release's pair of
// output laws, whatever was released before, has hockey-stick divergence at
// most that of (P_i, Q_i) at every ε ∈ ℝ, the composition is dominated by the
// product (Π P_i, Π Q_i). Both directions (P‖Q and Q‖P) must be covered; δ is
// their maximum.
//
// Pessimistic discretisation. (1) is non-decreasing in every loss value l
// (1 − e^{ε−l} grows with l), so replacing each loss by a larger one can only
// increase δ(ε), for every ε and after any number of compositions (the
// composed loss is a sum of per-release losses, each larger). The accountant
// therefore rounds every loss UP to the grid Δℤ (index ⌈(l + s)/Δ⌉ with
// s = 10⁻¹⁰·max(1, |l|) covering the float error of l), moves the mass of
// truncated low-loss tails UP onto the lowest kept grid point, and moves
// truncated high-loss tails and truncated outcomes to +∞. Every such step
// raises losses pointwise, so the reported δ(ε) is ≥ the true δ(ε) and the
// reported ε(δ) is ≥ the true ε(δ).
//
// Error bound (derived). Let L be the true composed loss of k releases and
// L̃ the accountant's. Each release's loss is rounded up once, by less than
// Δ + s (s for its largest |l|; for the discrete Gaussian plus the float
// slack of its log-ratios), and grid sums are exact, so L̃ ≤ L + k(Δ + s)
// except on the event
// that some truncation applied, whose P-probability is at most τ, the sum
// of all truncated masses (union bound). Hence, by (1),
//
//	δ_true(ε) ≤ δ̃(ε) ≤ δ_true(ε − k(Δ+s)) + τ + η,
//
// where η bounds the numerical error of the FFT convolutions (below). In
// terms of ε: ε_true(δ) ≤ ε̃(δ) ≤ ε_true(δ − τ − η) + k(Δ + s).
// PLD.ErrorBound reports k(Δ + s) and τ + η; with the default grid Δ = 10⁻⁴
// and τ = 10⁻¹⁵ per truncation, 100 releases are over-charged by at most
// 0.01 in ε and ~10⁻¹³ in δ.
//
// Numerical error. Convolutions of short vectors are direct (relative error
// below 10⁻¹¹ over a composition, covered by the relative factor applied to
// δ, see sumSafety); long ones use a real FFT of length N = 2^m. For
// non-negative a, b (‖a‖₁, ‖b‖₁ ≤ 1) the computed convolution is within
// c·u·log₂N·(‖a‖₂ + ‖b‖₂) of the exact one in ℓ2, hence within √N times that
// in ℓ1: Higham 2002, Theorem 24.2, bounds the relative ℓ2 error of a
// Cooley-Tukey FFT by log₂N·(μ + γ₄(√2 + μ)) ≈ 6.7u·log₂N (u = 2⁻⁵³,
// twiddles accurate to μ ≈ u); two forward transforms, the product and the
// inverse transform give c ≈ 10, and c = 30 is used (TestPLDFFTErrorBound
// measures the actual error against direct convolution: ~100× below).
// Negative outputs are clamped to 0 (towards the true non-negative value).
// Error vectors convolved later with non-negative vectors of mass ≤ 1 do not
// grow in ℓ1, so the bounds add over the convolutions: η. The weights of (1)
// lie in [0, 1], so η bounds the error of δ; it is added to the reported δ.
//
// Optimistic mode (PLDOptions.Optimistic) mirrors every step — losses
// rounded down, truncated masses dropped, η subtracted — and gives a LOWER
// bound on the true δ(ε) and ε(δ). It is for checking brackets only and must
// never be printed as a guarantee.
type PLD struct {
	opts PLDOptions
	dirs []lossPMF // 1 (symmetric) or 2 (P‖Q, Q‖P)
}

// atom is an exact loss value with its P-mass.
type atom struct {
	loss, p float64
}

// discretise puts finite atoms on the grid; inf is the +∞ mass (already
// including truncated masses in pessimistic mode), trunc the truncated mass.
func discretise(atoms []atom, inf, trunc float64, o PLDOptions) (lossPMF, error) {
	if len(atoms) == 0 {
		return lossPMF{lo: 0, probs: []float64{0}, inf: inf, trunc: trunc, steps: 1, shift: o.Grid}, nil
	}
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	for _, a := range atoms {
		i := o.index(a.loss)
		lo, hi = min(lo, i), max(hi, i)
	}
	if hi-lo >= maxGrid {
		return lossPMF{}, fmt.Errorf("accounting: PLD losses span %d grid points (more than 2^26); use a coarser grid", hi-lo+1)
	}
	probs := make([]float64, hi-lo+1)
	for _, a := range atoms {
		probs[o.index(a.loss)-lo] += a.p
	}
	m := 0.0
	for _, a := range atoms {
		m = math.Max(m, math.Abs(a.loss))
	}
	return lossPMF{lo: lo, probs: probs, inf: inf, trunc: trunc, steps: 1, shift: o.roundShift(m)}, nil
}

// maxGrid is the largest number of grid points of one release's PLD.
const maxGrid = 1 << 26

// PLDFromLogPMFs returns the PLD of the pair (P, Q) given on a common finite
// support: logP[i], logQ[i] are ln P(i), ln Q(i) (−Inf for probability 0).
// missP is the P-mass outside the listed support (for a pmf truncated by the
// caller) and missQ likewise for Q; each is counted at loss +∞ in its
// direction (pessimistic: by (1), δ ≤ δ(listed parts) + missing mass, since
// (P(y) − e^εQ(y))₊ ≤ (P_in(y) − e^εQ_in(y))₊ + P_out(y)). Both directions,
// P‖Q and Q‖P, are kept and δ is their maximum.
func PLDFromLogPMFs(logP, logQ []float64, missP, missQ float64, opts PLDOptions) (*PLD, error) {
	o, err := opts.normalise()
	if err != nil {
		return nil, err
	}
	if len(logP) != len(logQ) || len(logP) == 0 {
		return nil, fmt.Errorf("accounting: PLD pmfs need equal non-zero lengths, got %d and %d", len(logP), len(logQ))
	}
	for _, m := range []float64{missP, missQ} {
		if !finite(m) || m < 0 || m >= 1 {
			return nil, fmt.Errorf("accounting: PLD missing mass must be in [0, 1), got %v", m)
		}
	}
	for i := range logP {
		if math.IsNaN(logP[i]) || math.IsNaN(logQ[i]) || logP[i] > 0 || logQ[i] > 0 {
			return nil, fmt.Errorf("accounting: PLD log-probability %d is invalid (ln P = %v, ln Q = %v)", i, logP[i], logQ[i])
		}
	}
	dir := func(a, b []float64, miss float64) (lossPMF, error) {
		var atoms []atom
		var inf float64
		for i := range a {
			if math.IsInf(a[i], -1) {
				continue
			}
			p := math.Exp(a[i])
			if math.IsInf(b[i], -1) {
				inf += p
				continue
			}
			atoms = append(atoms, atom{a[i] - b[i], p})
		}
		trunc := 0.0
		if !o.Optimistic {
			trunc = miss
			inf += miss
		}
		return discretise(atoms, math.Min(inf, 1), trunc, o)
	}
	pq, err := dir(logP, logQ, missP)
	if err != nil {
		return nil, err
	}
	qp, err := dir(logQ, logP, missQ)
	if err != nil {
		return nil, err
	}
	return &PLD{opts: o, dirs: []lossPMF{pq, qp}}, nil
}

// GaussianPLD returns the PLD of the Gaussian mechanism with noise σ and L2
// sensitivity Δ: under P = N(0, σ²) against Q = N(Δ, σ²) the loss of y is
// (Δ² − 2Δy)/(2σ²), distributed N(μ, 2μ) with μ = Δ²/(2σ²), and the same
// in the other direction (symmetric). Grid cell ((i−1)Δ_g, iΔ_g] is put at
// iΔ_g (pessimistic; optimistic: [iΔ_g, (i+1)Δ_g) at iΔ_g), with masses from
// the normal CDF; the tails beyond ±z standard deviations (mass ≤ τ each)
// go to the lowest cell and to +∞ (optimistic: to the highest cell and
// dropped).
func GaussianPLD(sigma, sens float64, opts PLDOptions) (*PLD, error) {
	o, err := opts.normalise()
	if err != nil {
		return nil, err
	}
	if err := checkPositive("σ", sigma); err != nil {
		return nil, err
	}
	if err := checkPositive("sensitivity", sens); err != nil {
		return nil, err
	}
	mu := sens * sens / (2 * sigma * sigma)
	sd := math.Sqrt(2 * mu)
	if mu > 1e4 || mu < 1e-12 {
		return nil, fmt.Errorf("accounting: Gaussian PLD needs Δ/σ in [1e-6, 141], got %v", sens/sigma)
	}
	z := 1.0
	for normCDF(-z) > o.Tail/2 {
		z += 0.25
	}
	// upper(x) = P(L > x), accurate in both tails.
	upper := func(x float64) float64 { return normCDF(-(x - mu) / sd) }
	lower := func(x float64) float64 { return normCDF((x - mu) / sd) }
	mass := func(a, b float64) float64 { // P(a < L ≤ b)
		if a >= mu {
			return upper(a) - upper(b)
		}
		return lower(b) - lower(a)
	}
	g := o.Grid
	iLo := int64(math.Floor((mu - z*sd) / g))
	iHi := int64(math.Ceil((mu + z*sd) / g))
	n := iHi - iLo + 1
	if n > maxGrid {
		return nil, fmt.Errorf("accounting: Gaussian PLD needs %d grid points; use a coarser grid", n)
	}
	probs := make([]float64, n)
	// Each cell is a difference F(b) − F(a) of the normal CDF (or of its
	// upper tail above μ), each value within ε_F ≤ 10⁻¹⁶ of the truth
	// (Erfc to about an ulp, its argument to a relative u). The error vector
	// is then a difference sequence E_i − E_{i−1} with |E_i| ≤ ε_F on each
	// side of μ, plus u·p_i for the subtraction; convolving with
	// non-negative vectors of mass ≤ 1 keeps that form, and against the
	// non-decreasing weights of (1), which lie in [0, 1], summation by parts
	// bounds its effect on δ by 2ε_F per side. So 4ε_F + u ≤ 10⁻¹⁵ bounds the
	// effect on δ of these errors, for this release and any composition.
	d := lossPMF{lo: iLo, probs: probs, steps: 1, err: 1e-15, shift: g}
	if o.Optimistic {
		for i := iLo; i <= iHi; i++ { // [iΔ, (i+1)Δ) → i
			probs[i-iLo] = mass(float64(i)*g, float64(i+1)*g)
		}
		probs[n-1] += upper(float64(iHi+1) * g) // high tail rounded down onto the top cell
		// the low tail P(L < iLo·Δ) is dropped
	} else {
		for i := iLo; i <= iHi; i++ { // ((i−1)Δ, iΔ] → i
			probs[i-iLo] = mass(float64(i-1)*g, float64(i)*g)
		}
		low := lower(float64(iLo-1) * g)
		high := upper(float64(iHi) * g)
		probs[0] += low
		d.inf = high
		d.trunc = low + high
	}
	return &PLD{opts: o, dirs: []lossPMF{d}}, nil
}

// scalarAtoms returns the loss atoms of one count under P = f against the
// count moved by one: loss(y) = ln f(y) − ln f(y ± 1), for y = lo..lo+len−1
// with P-mass p[y−lo]. Atoms with infinite loss go to inf. The P-mass of the
// outermost outcomes, up to τ from each end, is truncated (pessimistic: to
// +∞; optimistic: dropped); miss is P-mass not listed (pessimistic: to +∞).
func scalarAtoms(p []float64, loss func(i int) float64, miss float64, o PLDOptions) (atoms []atom, inf, trunc float64) {
	a, b := 0, len(p)
	var cut float64
	for a < b && cut+p[a] <= o.Tail {
		cut += p[a]
		a++
	}
	cut2 := 0.0
	for b > a && cut2+p[b-1] <= o.Tail {
		cut2 += p[b-1]
		b--
	}
	for i := a; i < b; i++ {
		if p[i] == 0 {
			continue
		}
		l := loss(i)
		if math.IsInf(l, 1) {
			inf += p[i]
			continue
		}
		atoms = append(atoms, atom{l, p[i]})
	}
	if !o.Optimistic {
		trunc = cut + cut2 + miss
		inf += trunc
	}
	return atoms, inf, trunc
}

// pairPLD returns the discretised PLD of two independent coordinates whose
// losses add: every pair of atoms is rounded once, so a histogram release
// is rounded once per release (the error bound counts k roundings for k
// releases).
//
// extra is an upward shift already added to every scalar loss (for float
// error; it is counted in the release's shift twice, once per count).
func pairPLD(a, b []atom, ainf, binf, trunc, extra float64, o PLDOptions) (lossPMF, error) {
	if len(a)*len(b) > 1<<27 {
		return lossPMF{}, fmt.Errorf("accounting: histogram PLD has %d×%d loss atoms, too many", len(a), len(b))
	}
	sort.Slice(a, func(i, j int) bool { return a[i].loss < a[j].loss })
	sort.Slice(b, func(i, j int) bool { return b[i].loss < b[j].loss })
	inf := 1 - (1-ainf)*(1-binf)
	if len(a) == 0 || len(b) == 0 {
		return lossPMF{probs: []float64{0}, inf: 1, trunc: trunc, steps: 1, shift: o.Grid}, nil
	}
	lo := o.index(a[0].loss + b[0].loss)
	hi := o.index(a[len(a)-1].loss + b[len(b)-1].loss)
	if hi-lo >= maxGrid {
		return lossPMF{}, fmt.Errorf("accounting: histogram PLD losses span %d grid points (more than 2^26); use a coarser grid", hi-lo+1)
	}
	probs := make([]float64, hi-lo+1)
	for _, x := range a {
		for _, y := range b {
			probs[o.index(x.loss+y.loss)-lo] += x.p * y.p
		}
	}
	m := math.Max(math.Abs(a[0].loss+b[0].loss), math.Abs(a[len(a)-1].loss+b[len(b)-1].loss))
	return lossPMF{lo: lo, probs: probs, inf: inf, trunc: trunc, steps: 1, shift: o.roundShift(m) + 2*math.Abs(extra)}, nil
}

// BinomialHistogramPLD returns the PLD of one release of the DPPP binomial
// noisy histogram with n coins in the honest shares: every count gets
// independent noise B(n, ½) (the public mean n/2 subtracted afterwards,
// which is post-processing), and neighbouring inputs — one teacher's vote
// moved from class a to class b — move count a by −1 and count b by +1
// (L1 sensitivity 2, L∞ 1). All other counts have identical laws and
// contribute zero loss, so with b(y) = C(n,y)2⁻ⁿ the loss of (y_a, y_b) is
//
//	L = ln[b(y_a)/b(y_a+1)] + ln[b(y_b)/b(y_b−1)]
//	  = ln[(y_a+1)/(n−y_a)] + ln[(n−y_b+1)/y_b],
//
// the sum of two independent scalar losses (the first +∞ at y_a = n, the
// second at y_b = 0, each with P-mass 2⁻ⁿ). The reverse direction Q‖P is
// the same move with the two classes exchanged, so it has the same law and
// one direction is kept. The losses are the exact ratios above (no lgamma
// differences). Outcomes with |y − n/2| > 10√n (P-mass ≤ 2e⁻²⁰⁰ by
// Hoeffding) are not enumerated and are counted at +∞.
func BinomialHistogramPLD(n int64, opts PLDOptions) (*PLD, error) {
	o, err := opts.normalise()
	if err != nil {
		return nil, err
	}
	if n < 1 || n > 1<<32 {
		return nil, fmt.Errorf("accounting: binomial coins must be in [1, 2^32], got %d", n)
	}
	fn := float64(n)
	w := int64(math.Ceil(10 * math.Sqrt(fn)))
	lo, hi := max(n/2-w, 0), min(n/2+w+1, n)
	miss := 0.0
	if lo > 0 || hi < n {
		miss = 2 * math.Exp(-200)
	}
	p := binomialWindow(n, lo, hi)
	// count a: Q moves it by −1, loss ln b(y)/b(y+1) = ln((y+1)/(n−y)).
	la := func(i int) float64 {
		y := float64(lo + int64(i))
		if y == fn {
			return math.Inf(1)
		}
		return math.Log((y + 1) / (fn - y))
	}
	// count b: Q moves it by +1, loss ln b(y)/b(y−1) = ln((n−y+1)/y).
	lb := func(i int) float64 {
		y := float64(lo + int64(i))
		if y == 0 {
			return math.Inf(1)
		}
		return math.Log((fn - y + 1) / y)
	}
	return histogramPLD(p, la, lb, miss, 0, o)
}

// binomialWindow returns B(n, ½)(y) for y = lo..hi by the ratio recurrence
// b(y+1)/b(y) = (n−y)/(y+1) from the mode, normalised by the window's sum:
// each value has relative error ≤ (hi − lo + 2)·2u (≤ 3·10⁻¹⁰ for
// n ≤ 2³²), unlike lgamma differences whose absolute error grows with
// ln n! (the mass outside the window, ≤ 2e⁻²⁰⁰, is also spread over it,
// which only raises P).
func binomialWindow(n, lo, hi int64) []float64 {
	p := make([]float64, hi-lo+1)
	m := n / 2
	p[m-lo] = 1
	for y := m; y < hi; y++ {
		p[y+1-lo] = p[y-lo] * float64(n-y) / float64(y+1)
	}
	for y := m; y > lo; y-- { // b(y−1) = b(y)·y/(n−y+1)
		p[y-1-lo] = p[y-lo] * float64(y) / float64(n-y+1)
	}
	var sum float64
	for _, x := range p {
		sum += x
	}
	for i := range p {
		p[i] /= sum
	}
	return p
}

func histogramPLD(p []float64, la, lb func(int) float64, miss, extra float64, o PLDOptions) (*PLD, error) {
	a, ainf, ta := scalarAtoms(p, la, miss, o)
	b, binf, tb := scalarAtoms(p, lb, miss, o)
	d, err := pairPLD(a, b, math.Min(ainf, 1), math.Min(binf, 1), ta+tb, extra, o)
	if err != nil {
		return nil, err
	}
	return &PLD{opts: o, dirs: []lossPMF{d}}, nil
}

// dgaussWindow returns T = ⌈12σ⌉ + 1, the truncation of one share.
func dgaussWindow(sigma float64) int { return int(math.Ceil(12*sigma)) + 1 }

// dgaussTail returns an upper bound on the mass of N_ℤ(0, σ²) outside
// [−T, T] relative to the unnormalised mass inside: with
// z² ≥ (T+1)² + 2(T+1)(z−T−1) for z ≥ T+1,
// Σ_{|z|>T} e^{−z²/2σ²} ≤ 2e^{−(T+1)²/2σ²}/(1 − e^{−(T+1)/σ²}).
func dgaussTail(sigma float64, t int) float64 {
	s2 := sigma * sigma
	t1 := float64(t + 1)
	return 2 * math.Exp(-t1*t1/(2*s2)) / -math.Expm1(-t1/s2)
}

// DGaussSumPMF returns the pmf of the sum of `shares` independent discrete
// Gaussians N_ℤ(0, σ²) (pmf ∝ e^{−z²/2σ²} on ℤ), which is not itself a
// discrete Gaussian: p[i] is the probability of lo + i. Each share is
// truncated to |z| ≤ T with T = ⌈12σ⌉ + 1 and renormalised on [−T, T]
// (relative tail mass ≤ dgaussTail, about e^{−72}), the sum is computed by
// direct convolution, and sum entries below 10⁻⁴⁰ of the peak are trimmed;
// missing is an upper bound on the mass of the true sum outside the listed
// support plus the total-variation distance caused by the truncations, to be
// counted in δ.
func DGaussSumPMF(sigma float64, shares int) (lo int, p []float64, missing float64, err error) {
	if !finite(sigma) || sigma < 0.1 || sigma > 1e4 {
		return 0, nil, 0, fmt.Errorf("accounting: discrete Gaussian σ must be in [0.1, 1e4], got %v", sigma)
	}
	if shares < 1 || shares > 1e5 {
		return 0, nil, 0, fmt.Errorf("accounting: shares must be in [1, 1e5], got %d", shares)
	}
	t := dgaussWindow(sigma)
	cost := float64(shares) * math.Sqrt(float64(shares)) * float64(2*t+1) * float64(2*t+1) * 1.3
	if cost > 4e9 {
		return 0, nil, 0, fmt.Errorf("accounting: sum of %d discrete Gaussians of σ = %v is too large to enumerate", shares, sigma)
	}
	one := make([]float64, 2*t+1)
	var z float64
	for i := range one {
		x := float64(i - t)
		one[i] = math.Exp(-x * x / (2 * sigma * sigma))
		z += one[i]
	}
	// Normalise by the window's mass plus the tail bound, which is ≥ the
	// true normaliser: the listed pmf is then ≤ the true one pointwise (a
	// restriction of the true law to "every share within ±T"), as the
	// bound in PLDFromLogPMFs needs; the mass of the event "some share
	// outside" is ≤ H·tail/z.
	tail := dgaussTail(sigma, t)
	for i := range one {
		one[i] /= z + tail
	}
	missing = float64(shares) * tail / z
	lo = -t
	p = one
	for h := 1; h < shares; h++ {
		q := make([]float64, len(p)+len(one)-1)
		for i, x := range p {
			if x == 0 {
				continue
			}
			for j, y := range one {
				q[i+j] += x * y
			}
		}
		lo -= t
		// trim entries below 1e-40 of the peak, counting their mass
		peak := 0.0
		for _, x := range q {
			peak = math.Max(peak, x)
		}
		a, b := 0, len(q)
		for a < b && q[a] < 1e-40*peak {
			missing += q[a]
			a++
		}
		for b > a && q[b-1] < 1e-40*peak {
			missing += q[b-1]
			b--
		}
		lo += a
		p = q[a:b]
	}
	return lo, p, missing, nil
}

// DGaussSumHistogramPLD returns the PLD of one release of the DPPP
// distributed discrete Gaussian histogram: every count gets the sum of
// `shares` independent N_ℤ(0, σ²) (honest shares; pmf g from DGaussSumPMF),
// and a changed teacher moves one count by −1 and another by +1. As for
// BinomialHistogramPLD the loss is the sum of the two scalar losses
// ln[g(y_a)/g(y_a+1)] and ln[g(y_b)/g(y_b−1)] (+∞ beyond the listed
// support), the reverse direction has the same law, and DGaussSumPMF's
// missing mass is counted at +∞ for each count (pessimistic by the
// inequality in PLDFromLogPMFs).
func DGaussSumHistogramPLD(sigma float64, shares int, opts PLDOptions) (*PLD, error) {
	o, err := opts.normalise()
	if err != nil {
		return nil, err
	}
	_, p, miss, err := DGaussSumPMF(sigma, shares)
	if err != nil {
		return nil, err
	}
	// Each entry of p is a sum of products of positive numbers, H−1
	// convolutions deep, so its relative error is at most
	// r = shares·(2T+1)·u; a log-ratio of two entries is then off by at
	// most 2r, which is added to (optimistic: subtracted from) every loss.
	r := float64(shares) * float64(2*dgaussWindow(sigma)+1) * 0x1p-53
	if o.Optimistic {
		r = -r
	}
	ratio := func(i, j int) float64 {
		if j < 0 || j >= len(p) || p[j] == 0 {
			return math.Inf(1)
		}
		return math.Log(p[i]) - math.Log(p[j]) + 2*r
	}
	la := func(i int) float64 { return ratio(i, i+1) }
	lb := func(i int) float64 { return ratio(i, i-1) }
	return histogramPLD(p, la, lb, miss, 2*r, o)
}

// Compose returns the PLD of the composition of p and q (their releases in
// either order, adaptively chosen or not: see the PLD doc comment on
// dominating pairs). Both must use the same options.
//
// With PLDOptions.MaxPoints, p and q may have grids differing by a power of
// two (one was coarsened): the finer is first coarsened to the wider grid,
// and the result is coarsened until it has at most MaxPoints points.
func (p *PLD) Compose(q *PLD) (*PLD, error) {
	return p.compose(q, new(convolver))
}

// A PLDComposer composes PLDs like PLD.Compose, reusing FFT plans and
// scratch buffers between its calls (a composition loop: repeated squaring,
// a search over composition counts). Its results are bit-identical to
// PLD.Compose's. The zero value is ready; it is not safe for concurrent
// use, so keep one per loop, not in shared state.
type PLDComposer struct{ cv convolver }

// Compose returns p.Compose(q), computed with c's plans and buffers.
func (c *PLDComposer) Compose(p, q *PLD) (*PLD, error) { return p.compose(q, &c.cv) }

// compose is Compose with the FFT plans and scratch buffers of cv (shared
// by the convolutions of one composition loop; the result does not depend
// on cv's state).
func (p *PLD) compose(q *PLD, cv *convolver) (*PLD, error) {
	po, qo := p.opts, q.opts
	po.Grid, qo.Grid = 0, 0
	if po != qo {
		return nil, errors.New("accounting: composing PLDs with different options or modes")
	}
	if p.opts.Grid != q.opts.Grid {
		if p.opts.MaxPoints == 0 {
			return nil, errors.New("accounting: composing PLDs with different grids")
		}
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
		out.dirs[i] = composeLoss(&p.dirs[min(i, len(p.dirs)-1)], &q.dirs[min(i, len(q.dirs)-1)], p.opts, cv)
	}
	if m := out.opts.MaxPoints; m > 0 {
		for out.GridSize() > m {
			out = out.coarsen()
		}
	}
	return out, nil
}

// coarsenTo coarsens p until its grid is g (a power-of-two multiple of
// p's grid).
func (p *PLD) coarsenTo(g float64) (*PLD, error) {
	for i := 0; p.opts.Grid < g; i++ {
		if i > 60 {
			return nil, fmt.Errorf("accounting: grid %v is not a power-of-two multiple of %v", g, p.opts.Grid)
		}
		p = p.coarsen()
	}
	if p.opts.Grid != g {
		return nil, fmt.Errorf("accounting: grid %v is not a power-of-two multiple of the other PLD's", g)
	}
	return p, nil
}

// coarsen returns p on a grid twice as wide: the mass at index i (loss
// iΔ) moves to index ⌈i/2⌉ of the new grid (loss 2⌈i/2⌉Δ ≥ iΔ, raised by at
// most Δ: pessimistic, by the argument of the PLD doc comment, and counted
// in the shift) or, optimistic, to ⌊i/2⌋. Masses are only added, so the
// numerical error bound η is unchanged.
func (p *PLD) coarsen() *PLD {
	out := &PLD{opts: p.opts, dirs: make([]lossPMF, len(p.dirs))}
	out.opts.Grid = 2 * p.opts.Grid
	half := func(i int64) int64 {
		if p.opts.Optimistic {
			return floorDiv2(i)
		}
		return -floorDiv2(-i) // ⌈i/2⌉
	}
	for k, d := range p.dirs {
		lo := half(d.lo)
		hi := half(d.lo + int64(len(d.probs)) - 1)
		probs := make([]float64, hi-lo+1)
		for i, v := range d.probs {
			probs[half(d.lo+int64(i))-lo] += v
		}
		c := d
		c.lo, c.probs = lo, probs
		c.shift += p.opts.Grid
		out.dirs[k] = c
	}
	return out
}

// floorDiv2 is ⌊i/2⌋ for any sign.
func floorDiv2(i int64) int64 { return i >> 1 }

// SelfCompose returns the PLD of k releases of p, by repeated squaring
// (about 2 log₂ k convolutions): the powers P^(2^j) by squaring, then,
// from the highest set bit of k down, the composition so far with each
// power whose bit is set (with MaxPoints the result depends on the order,
// and callers that cache the powers — package dppp — use this one).
func (p *PLD) SelfCompose(k int) (*PLD, error) {
	if k < 1 || k > 1<<30 {
		return nil, fmt.Errorf("accounting: composition count must be in [1, 2^30], got %d", k)
	}
	cv := new(convolver)
	powers := []*PLD{p}
	for j := 1; 1<<j <= k; j++ {
		next, err := powers[j-1].compose(powers[j-1], cv)
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
		if acc, err = acc.compose(powers[j], cv); err != nil {
			return nil, err
		}
	}
	return acc, nil
}

// composeLoss convolves two directions and truncates the tails (truncate
// copies the kept points out of cv's scratch output).
func composeLoss(a, b *lossPMF, o PLDOptions, cv *convolver) lossPMF {
	probs, eta := cv.convolve(a.probs, b.probs)
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

// truncate removes tails of mass ≤ τ each: pessimistic — the low tail onto
// the lowest kept point (losses raised), the high tail to +∞; optimistic —
// the low tail dropped, the high tail onto the highest kept point (losses
// lowered).
func (d *lossPMF) truncate(o PLDOptions) {
	p := d.probs
	a, b := 0, len(p)
	var low, high float64
	for a < b-1 && low+p[a] <= o.Tail {
		low += p[a]
		a++
	}
	for b-1 > a && high+p[b-1] <= o.Tail {
		high += p[b-1]
		b--
	}
	kept := append([]float64(nil), p[a:b]...)
	if o.Optimistic {
		kept[len(kept)-1] += high
	} else {
		kept[0] += low
		d.inf = math.Min(1, d.inf+high)
		d.trunc += low + high
	}
	d.lo += int64(a)
	d.probs = kept
}

// directLimit is the largest len(a)·len(b) convolved directly.
const directLimit = 1 << 22

// convolver holds the FFT plans and scratch buffers reused by the
// convolutions of one composition (Compose, SelfCompose): an FFT plan
// depends only on its length, and every buffer is fully rewritten before it
// is read, so the results are bit-identical to fresh allocations
// (TestPLDConvolverMatchesFresh). Not safe for concurrent use; the zero
// value is ready.
type convolver struct {
	plans  map[int]*fourier.FFT
	pa, pb []float64    // zero-padded operands, then the inverse transform
	ca, cb []complex128 // their coefficients
	out    []float64    // direct convolution
}

// plan returns the (cached) real FFT plan of length n.
func (cv *convolver) plan(n int) *fourier.FFT {
	if f, ok := cv.plans[n]; ok {
		return f
	}
	if cv.plans == nil {
		cv.plans = make(map[int]*fourier.FFT)
	}
	f := fourier.NewFFT(n)
	cv.plans[n] = f
	return f
}

// grow returns buf resized to n (reallocated only when too small); its
// contents are unspecified.
func grow[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}

// padded copies x into buf resized to n and zeroes the rest.
func padded(buf, x []float64, n int) []float64 {
	buf = grow(buf, n)
	copy(buf, x)
	clear(buf[len(x):])
	return buf
}

// convolve returns a*b and an ℓ1 bound η on its numerical error beyond the
// relative rounding of direct sums (0 for direct convolution). The result
// lives in cv's scratch space: valid until cv's next convolution.
func (cv *convolver) convolve(a, b []float64) ([]float64, float64) {
	m := len(a) + len(b) - 1
	if len(a)*len(b) <= directLimit {
		out := grow(cv.out, m)
		cv.out = out
		clear(out)
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
	return cv.fftConvolve(a, b)
}

// fftConvolve convolves by a real FFT of length N = 2^⌈log₂ m⌉ and returns
// the ℓ1 error bound η = 30·u·log₂N·√N·(‖a‖₂ + ‖b‖₂) derived in the
// PLD doc comment. The result lives in cv's scratch space.
func (cv *convolver) fftConvolve(a, b []float64) ([]float64, float64) {
	m := len(a) + len(b) - 1
	n := 1
	for n < m {
		n <<= 1
	}
	f := cv.plan(n)
	cv.pa = padded(cv.pa, a, n)
	cv.ca = grow(cv.ca, n/2+1)
	ca := f.Coefficients(cv.ca, cv.pa)
	cb := ca
	if len(a) != len(b) || &a[0] != &b[0] { // squaring needs one transform
		cv.pb = padded(cv.pb, b, n)
		cv.cb = grow(cv.cb, n/2+1)
		cb = f.Coefficients(cv.cb, cv.pb)
	}
	for i := range ca {
		ca[i] *= cb[i]
	}
	out := f.Sequence(cv.pa, ca)[:m]
	inv := 1 / float64(n)
	for i := range out {
		out[i] *= inv
		if out[i] < 0 {
			out[i] = 0
		}
	}
	return out, fftErrorBound(a, b, n)
}

func fftErrorBound(a, b []float64, n int) float64 {
	const u = 0x1p-53
	return 30 * u * math.Log2(float64(n)) * math.Sqrt(float64(n)) * (norm2(a) + norm2(b))
}

func norm2(x []float64) float64 {
	var s float64
	for _, v := range x {
		s += v * v
	}
	return math.Sqrt(s)
}

// sumSafety is the relative factor covering the float rounding of the sum
// (1) over n terms in [0, 1] (n·2⁻⁵²) plus the relative error of the pmfs
// (binomial recurrence ≤ 3·10⁻¹⁰, discrete Gaussian convolution ≤
// shares·(2T+1)·u ≤ 10⁻⁹ within DGaussSumPMF's size limit) and of the direct
// convolutions (≤ 2048·u each, ≤ 10⁻¹¹ over a composition): 10⁻⁹ in all.
func sumSafety(n int) float64 { return float64(n)*0x1p-52 + 1e-9 }

// rawDelta is (1) for one direction without safety terms.
func (d *lossPMF) rawDelta(eps, g float64) float64 {
	var s float64
	for i := len(d.probs) - 1; i >= 0; i-- {
		l := float64(d.lo+int64(i)) * g
		if l <= eps {
			break
		}
		s += d.probs[i] * -math.Expm1(eps-l)
	}
	return s + d.inf
}

// delta returns the reported δ of one direction: rawDelta plus (pessimistic)
// or minus (optimistic) the numerical error η and the summation safety.
func (d *lossPMF) delta(eps float64, o PLDOptions) float64 {
	r := d.rawDelta(eps, o.Grid)
	s := sumSafety(len(d.probs))
	if o.Optimistic {
		return math.Max(0, r*(1-s)-d.err)
	}
	return math.Min(1, r*(1+s)+d.err)
}

// Delta returns δ(ε) by (1): the maximum over the directions of
// Σ_{l>ε} p(l)(1 − e^{ε−l}) + p(∞), plus the numerical error bound η and a
// relative summation safety (pessimistic mode). It is never below the true
// δ(ε) of the composed mechanism.
func (p *PLD) Delta(epsilon float64) (float64, error) {
	if math.IsNaN(epsilon) || math.IsInf(epsilon, 0) {
		return 0, fmt.Errorf("accounting: ε must be finite, got %v", epsilon)
	}
	var d float64
	for i := range p.dirs {
		d = math.Max(d, p.dirs[i].delta(epsilon, p.opts))
	}
	return d, nil
}

// epsilon returns the smallest ε ≥ 0 with delta(ε) ≤ target for one
// direction (+Inf if none). On the cell (l_{j−1}, l_j] of the grid,
// δ_raw(ε) = S_j − e^ε T_j with S_j = p(∞) + Σ_{i≥j} p_i and
// T_j = Σ_{i≥j} p_i e^{−l_i}, so the solution is ln((S_j − t)/T_j) for the
// raw target t; it is then moved up by ulps until delta(ε) ≤ target holds
// as evaluated.
func (d *lossPMF) epsilon(target float64, o PLDOptions) float64 {
	if d.delta(0, o) <= target {
		return 0
	}
	s := sumSafety(len(d.probs))
	var t float64
	if o.Optimistic {
		t = (target + d.err) / (1 - s)
	} else {
		t = (target - d.err) / (1 + s)
	}
	if t <= d.inf {
		return math.Inf(1)
	}
	g := o.Grid
	S, T := d.inf, 0.0
	eps := 0.0
	for j := len(d.probs) - 1; j >= 0; j-- {
		lj := float64(d.lo+int64(j)) * g
		if lj <= 0 {
			break
		}
		S += d.probs[j]
		T += d.probs[j] * math.Exp(-lj)
		prev := math.Max(0, lj-g) // δ_raw at the cell's lower end
		if S-math.Exp(prev)*T > t {
			eps = math.Log((S - t) / T)
			eps = math.Min(math.Max(eps, prev), lj)
			break
		}
	}
	if o.Optimistic {
		return eps
	}
	for k := 0; d.delta(eps, o) > target; k++ {
		if k > 60 {
			return math.Inf(1)
		}
		eps = math.Nextafter(eps, math.Inf(1)) + float64(k)*1e-15*math.Max(1, eps)
	}
	return eps
}

// Epsilon returns the smallest ε ≥ 0 with Delta(ε) ≤ δ (pessimistic mode:
// rounded up, never below the true ε(δ)); it returns an error when no finite
// ε exists (the +∞ mass and counted errors reach δ).
func (p *PLD) Epsilon(delta float64) (float64, error) {
	if err := checkDelta(delta); err != nil {
		return 0, err
	}
	var e float64
	for i := range p.dirs {
		e = math.Max(e, p.dirs[i].epsilon(delta, p.opts))
	}
	if math.IsInf(e, 1) {
		return e, fmt.Errorf("accounting: no finite ε at δ = %v: the mass at infinite loss and the counted errors reach δ (%v)", delta, p.InfMass())
	}
	return e, nil
}

// InfMass returns the largest mass at +∞ loss over the directions (which
// includes truncated masses in pessimistic mode).
func (p *PLD) InfMass() float64 {
	var m float64
	for _, d := range p.dirs {
		m = math.Max(m, d.inf)
	}
	return m
}

// GridSize returns the largest number of grid points of a direction.
func (p *PLD) GridSize() int {
	n := 0
	for _, d := range p.dirs {
		n = max(n, len(d.probs))
	}
	return n
}

// Options returns the (normalised) options p was built with.
func (p *PLD) Options() PLDOptions { return p.opts }

// PLDErrorBound is the counted error of a pessimistic PLD (see the package
// comment): ε_true(δ) ≤ ε̃(δ) ≤ ε_true(δ − DeltaSlack) + EpsilonSlack.
type PLDErrorBound struct {
	// Releases is k, the number of releases composed (each rounded once).
	Releases int
	// EpsilonSlack bounds the upward shift of the composed loss: the sum over
	// the releases of Δ + s(max |l|) (+ the float slack of computed
	// log-ratios), about kΔ.
	EpsilonSlack float64
	// Truncated is τ, the total mass moved by truncations.
	Truncated float64
	// Numerical is η, the ℓ1 bound on the FFT error.
	Numerical float64
	// DeltaSlack is τ + η.
	DeltaSlack float64
}

// ErrorBound returns the counted error bound of p (the worst direction).
func (p *PLD) ErrorBound() PLDErrorBound {
	var b PLDErrorBound
	for _, d := range p.dirs {
		b.Releases = max(b.Releases, d.steps)
		b.Truncated = math.Max(b.Truncated, d.trunc)
		b.Numerical = math.Max(b.Numerical, d.err)
		b.EpsilonSlack = math.Max(b.EpsilonSlack, d.shift)
	}
	b.DeltaSlack = b.Truncated + b.Numerical
	return b
}

// BinomialHistogramEpsilon returns the PLD accountant's ε at δ for `queries`
// releases of the binomial histogram with n coins (BinomialHistogramPLD,
// SelfCompose, Epsilon): rounded up, never below the true ε.
func BinomialHistogramEpsilon(n int64, queries int, delta float64, opts PLDOptions) (float64, error) {
	p, err := BinomialHistogramPLD(n, opts)
	if err != nil {
		return 0, err
	}
	return composedEpsilon(p, queries, delta)
}

// DGaussSumHistogramEpsilon returns the PLD accountant's ε at δ for
// `queries` releases of the discrete Gaussian histogram with `shares` honest
// shares of N_ℤ(0, σ²) each (DGaussSumHistogramPLD): rounded up.
func DGaussSumHistogramEpsilon(sigma float64, shares, queries int, delta float64, opts PLDOptions) (float64, error) {
	p, err := DGaussSumHistogramPLD(sigma, shares, opts)
	if err != nil {
		return 0, err
	}
	return composedEpsilon(p, queries, delta)
}

func composedEpsilon(p *PLD, queries int, delta float64) (float64, error) {
	c, err := p.SelfCompose(queries)
	if err != nil {
		return 0, err
	}
	return c.Epsilon(delta)
}

// gaussianGuess returns the Gaussian noise standard deviation for which
// `queries` releases of a Gaussian histogram (L2 sensitivity √2) meet
// (ε, δ) under GDP: σ = √(2·queries)/μ(ε, δ). It only seeds the searches.
func gaussianGuess(epsilon, delta float64, queries int) (float64, error) {
	mu, err := GDPMuFor(epsilon, delta)
	if err != nil {
		return 0, err
	}
	return math.Sqrt(2*float64(queries)) / mu, nil
}

func checkCalibration(epsilon, delta float64, queries int) error {
	if err := checkPositive("ε", epsilon); err != nil {
		return err
	}
	if err := checkDelta(delta); err != nil {
		return err
	}
	if queries < 1 || queries > 1<<20 {
		return fmt.Errorf("accounting: queries must be in [1, 2^20], got %d", queries)
	}
	return nil
}

// smallestAccepted returns the smallest x > floor accepted by ok, to the
// precision at which done(lo, hi) stops (lo rejected, hi accepted, or lo =
// floor), for ok false below a threshold and true above it: it starts at
// guess, moves by factor until the threshold is bracketed — the step
// doubling at every move (factor f, then 1 + 2(f − 1), …), so a guess far
// from the threshold costs O(log distance) evaluations, not O(distance) —
// then bisects at mid(lo, hi). The returned value is always one that ok
// accepted.
func smallestAccepted(ok func(float64) bool, guess, factor, floor, limit float64,
	done func(lo, hi float64) bool, mid func(lo, hi float64) float64) (float64, bool) {
	var lo, hi float64
	grow := func() { factor = 1 + 2*(factor-1) }
	if ok(guess) {
		hi = guess
		for lo = hi / factor; lo > floor && ok(lo); lo = hi / factor {
			hi = lo
			grow()
		}
		lo = math.Max(lo, floor)
	} else {
		lo = guess
		for hi = guess * factor; !ok(hi); hi = lo * factor {
			if hi > limit {
				return 0, false
			}
			lo = hi
			grow()
		}
	}
	for !done(lo, hi) {
		m := mid(lo, hi)
		if m <= lo || m >= hi {
			break
		}
		if ok(m) {
			hi = m
		} else {
			lo = m
		}
	}
	return hi, true
}

// coarseOptions returns the options of the first calibration stage: a grid
// ten times coarser (at most 0.01), whose result seeds the search on the
// requested grid, but never so coarse that its over-charge over `queries`
// releases, queries·Δ, exceeds a tenth of ε (at 1,000 queries and ε = 10 a
// grid of 0.01 over-charges by the whole ε, and its answer was 3× the
// fine one). Only the final, requested-grid search decides.
//
// With MaxPoints, the coarse stage keeps an eighth of the points (at least
// 4,096): its powers are then about 8× cheaper, and its counted
// over-charge, still bounded and pessimistic, only seeds the fine search.
func coarseOptions(o PLDOptions, epsilon float64, queries int) PLDOptions {
	o.Grid = math.Max(o.Grid, math.Min(math.Min(10*o.Grid, 0.01), epsilon/(10*float64(queries))))
	if o.MaxPoints > 0 {
		o.MaxPoints = max(o.MaxPoints/8, min(o.MaxPoints, 1<<12))
	}
	return o
}

// BinomialHistogramCoins returns the smallest number n of binomial coins in
// the honest shares such that `queries` releases of the binomial histogram
// are (ε, δ)-DP by the PLD accountant (BinomialHistogramEpsilon(n) ≤ ε,
// verified on the returned n). Search: from the Gaussian guess n₀ = 4σ₀²
// (B(n, ½) has variance n/4; σ₀ from GDPMuFor for L2 sensitivity √2),
// doubling/halving until the threshold is bracketed and bisecting, first on
// a 10× coarser grid (cheap), then on the requested grid from that result
// (steps of 0.5%, then bisection to one coin). More coins are post-processing
// of fewer (B(n+1, ½) = B(n, ½) + an independent coin), so the true ε is
// non-increasing in n; the accountant's is too up to its grid error, and
// the result is accepted while n − 1 was rejected in the final bisection.
func BinomialHistogramCoins(epsilon, delta float64, queries int, opts PLDOptions) (int64, error) {
	if err := checkCalibration(epsilon, delta, queries); err != nil {
		return 0, err
	}
	o, err := opts.normalise()
	if err != nil {
		return 0, err
	}
	s, err := gaussianGuess(epsilon, delta, queries)
	if err != nil {
		return 0, err
	}
	okWith := func(o PLDOptions) func(float64) bool {
		return func(n float64) bool {
			e, err := BinomialHistogramEpsilon(int64(n), queries, delta, o)
			return err == nil && e <= epsilon
		}
	}
	done := func(lo, hi float64) bool { return hi-lo <= 1 }
	mid := func(lo, hi float64) float64 { return math.Floor((lo + hi) / 2) }
	const limit = 1 << 36
	// The coarse stage only seeds: to 0.25% (one coin below 400).
	coarseDone := func(lo, hi float64) bool { return hi-lo <= math.Max(1, hi/400) }
	guess, found := smallestAccepted(okWith(coarseOptions(o, epsilon, queries)), math.Max(math.Ceil(4*s*s), 2), 2, 0, limit, coarseDone, mid)
	if !found {
		guess = limit
	}
	n, found := smallestAccepted(okWith(o), guess, 1.005, 0, limit, done, mid)
	if !found {
		return 0, fmt.Errorf("accounting: binomial histogram needs more than 2^36 coins for (%v, %v) over %d queries", epsilon, delta, queries)
	}
	return int64(n), nil
}

// DGaussSumHistogramSigma returns σ per share (relative precision 10⁻⁴,
// rounded up) such that `queries` releases of the discrete Gaussian
// histogram with `shares` honest shares of N_ℤ(0, σ²) are (ε, δ)-DP by the
// PLD accountant (verified on the returned σ). The search is that of
// BinomialHistogramCoins over σ, from the Gaussian guess σ₀/√shares (steps
// of ×1.5 on the coarse grid, 0.5% on the requested one). The accountant's ε
// decreases with σ in every case tested (TestPLDMonotone,
// TestPLDCalibration), and the returned σ is always one it accepts.
func DGaussSumHistogramSigma(epsilon, delta float64, shares, queries int, opts PLDOptions) (float64, error) {
	if err := checkCalibration(epsilon, delta, queries); err != nil {
		return 0, err
	}
	if shares < 1 {
		return 0, fmt.Errorf("accounting: shares must be ≥ 1, got %d", shares)
	}
	o, err := opts.normalise()
	if err != nil {
		return 0, err
	}
	s, err := gaussianGuess(epsilon, delta, queries)
	if err != nil {
		return 0, err
	}
	okWith := func(o PLDOptions) func(float64) bool {
		return func(sigma float64) bool {
			e, err := DGaussSumHistogramEpsilon(sigma, shares, queries, delta, o)
			return err == nil && e <= epsilon
		}
	}
	done := func(lo, hi float64) bool { return hi-lo <= 1e-4*hi }
	mid := func(lo, hi float64) float64 { return lo + (hi-lo)/2 }
	const floor, limit = 0.1, 1e4
	coarseDone := func(lo, hi float64) bool { return hi-lo <= 2.5e-3*hi } // seeds only
	guess, found := smallestAccepted(okWith(coarseOptions(o, epsilon, queries)), math.Max(s/math.Sqrt(float64(shares)), 0.2), 1.5, floor, limit, coarseDone, mid)
	if !found {
		guess = limit
	}
	sigma, found := smallestAccepted(okWith(o), guess, 1.005, floor, limit, done, mid)
	if !found {
		return 0, fmt.Errorf("accounting: no discrete Gaussian σ ≤ 1e4 meets (%v, %v) over %d queries", epsilon, delta, queries)
	}
	return sigma, nil
}
