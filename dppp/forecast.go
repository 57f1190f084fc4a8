package dppp

import (
	"fmt"
	"math"

	"github.com/dplearn/dplearn/accounting"
)

// Forecast is what the noise does to the teachers' plurality, computed
// before a deployment from public quantities only (the Params: N, t, C, A,
// H, the noise kind and its calibration, K classes).
//
// Let the decrypted sum hold m noise shares (m = Contributors, between
// N − A and N). Every count gets independent noise Z with the law of the
// sum of m shares (binomial: B(m·Coins, ½) centred; dgauss: the m-fold
// convolution of N_ℤ(0, σ²)), computed exactly from the pmf. A query whose
// plurality class p leads every other class by at least the margin M ≥ 1
// is labelled p unless some rival r has Z_r − Z_p ≥ M (a tie goes to the
// lowest class, which may be r). With T(M) = P(Z_r − Z_p ≥ M), the law of
// the difference of two independent noises:
//
//	Lower(M) = Σ_z P(Z = z)·P(Z ≤ z + M − 1)^(K−1)   ≤ P(label = plurality)
//	Upper(M) = 1 − T(M+1)                             ≥ P(label = plurality)
//
// whenever the runner-up's margin is exactly M. Lower is the exact
// agreement of the worst case, all K−1 rivals at margin M and every tie
// lost (rivals further behind only help p); Upper is the runner-up alone
// with ties won (exact for K = 2 with p = 0). Both are computed exactly
// from the noise pmf (no simulation); the bracket closes for K = 2 and the
// truth lies near Lower when rivals are close, near Upper when only one
// is.
type Forecast struct {
	// Contributors is m, the noise shares in each decrypted sum assumed.
	Contributors int
	// NoiseSD is the standard deviation of one count's noise.
	NoiseSD float64
	// Lower and Upper are indexed by the margin M = 0..N (index 0 unused:
	// a tie has no plurality).
	Lower, Upper []float64
	// Margin90 and Margin99 are the smallest margins M ≤ N with Lower(M) ≥
	// 0.9 (0.99), or 0 when even a unanimous vote (M = N) falls short.
	Margin90, Margin99 int
}

// Forecast computes the forecast for decrypted sums of `contributors`
// shares (0: all N teachers).
func (p *Params) Forecast(contributors int) (*Forecast, error) {
	n := p.N()
	if contributors == 0 {
		contributors = n
	}
	if contributors < 1 || contributors > n {
		return nil, fmt.Errorf("dppp: forecast for %d contributors of %d teachers", contributors, n)
	}
	pmf, sd, err := p.sumNoisePMF(contributors)
	if err != nil {
		return nil, err
	}
	// d[j] = P(Z_r − Z_p = j − (len(pmf) − 1)).
	L := len(pmf)
	d := make([]float64, 2*L-1)
	for i, a := range pmf {
		if a == 0 {
			continue
		}
		for j, b := range pmf {
			d[i-j+L-1] += a * b
		}
	}
	// cdf[i] = P(Z ≤ i) on pmf's support.
	cdf := make([]float64, L)
	acc := 0.0
	for i, a := range pmf {
		acc += a
		cdf[i] = math.Min(acc, 1)
	}
	worst := func(m int) float64 {
		s := 0.0
		for z, a := range pmf {
			j := min(z+m-1, L-1)
			s += a * math.Pow(cdf[j], float64(p.Classes-1))
		}
		return math.Min(s, 1)
	}
	// tail(M) = P(D ≥ M).
	tail := func(m int) float64 {
		s := 0.0
		for j := m + L - 1; j < len(d); j++ {
			if j >= 0 {
				s += d[j]
			}
		}
		return math.Min(s, 1)
	}
	f := &Forecast{Contributors: contributors, NoiseSD: sd, Lower: make([]float64, n+1), Upper: make([]float64, n+1)}
	for m := 1; m <= n; m++ {
		f.Lower[m] = worst(m)
		f.Upper[m] = 1 - tail(m+1)
		if f.Margin90 == 0 && f.Lower[m] >= 0.9 {
			f.Margin90 = m
		}
		if f.Margin99 == 0 && f.Lower[m] >= 0.99 {
			f.Margin99 = m
		}
	}
	return f, nil
}

// sumNoisePMF is the pmf of one count's noise in a sum of m shares (its
// support shifted: only differences are used) and its standard deviation.
// Binomial: B(m·Coins, ½) on ±10 standard deviations (outside mass below
// 10⁻²¹); dgauss: accounting.DGaussSumPMF.
func (p *Params) sumNoisePMF(m int) ([]float64, float64, error) {
	switch p.Noise {
	case Binomial:
		n := int64(m) * p.Coins
		sd := math.Sqrt(float64(n)) / 2
		w := int64(math.Ceil(10*sd)) + 1
		lo, hi := max(n/2-w, 0), min(n/2+w, n)
		out := make([]float64, hi-lo+1)
		// log pmf by lgamma, normalised on the window (relative error of
		// the forecast ≈ 1e-12, far below what it is used for).
		lg := func(x int64) float64 { v, _ := math.Lgamma(float64(x) + 1); return v }
		s := 0.0
		for y := lo; y <= hi; y++ {
			out[y-lo] = math.Exp(lg(n) - lg(y) - lg(n-y) - float64(n)*math.Ln2)
			s += out[y-lo]
		}
		for i := range out {
			out[i] /= s
		}
		return out, sd, nil
	case DGauss:
		_, pmf, _, err := accounting.DGaussSumPMF(p.Sigma, m)
		if err != nil {
			return nil, 0, err
		}
		mean, v := 0.0, 0.0
		for i, x := range pmf {
			mean += float64(i) * x
		}
		for i, x := range pmf {
			v += (float64(i) - mean) * (float64(i) - mean) * x
		}
		return pmf, math.Sqrt(v), nil
	}
	return nil, 0, fmt.Errorf("dppp: unknown noise kind %v", p.Noise)
}

// Lines is the forecast in words: the agreement bracket at a few margins,
// the margins needed for 90% and 99%, and a warning when the noise swamps
// what N teachers can vote.
func (f *Forecast) Lines(p *Params) []string {
	n := p.N()
	lines := []string{fmt.Sprintf("forecast (public quantities only; sums of m = %d noise shares, noise sd %.3g per count): P(label = the teachers' plurality) for a plurality leading every other class by M votes, [all rivals at M (lower), runner-up alone (upper)]:", f.Contributors, f.NoiseSD)}
	row := ""
	for _, m := range forecastMargins(n) {
		row += fmt.Sprintf(" M = %d: [%.3f, %.3f];", m, f.Lower[m], f.Upper[m])
	}
	lines = append(lines, " "+row)
	need := func(m int, what string) string {
		if m == 0 {
			return fmt.Sprintf("%s agreement: not reachable even by a unanimous vote (M = N = %d)", what, n)
		}
		return fmt.Sprintf("%s agreement needs a margin of M ≥ %d of N = %d votes", what, m, n)
	}
	lines = append(lines, "  "+need(f.Margin90, "90%")+"; "+need(f.Margin99, "99%"))
	if w := f.Warning(p); w != "" {
		lines = append(lines, w)
	}
	return lines
}

// Warning is non-empty when the noise swamps what N teachers can vote:
// even a unanimous vote is labelled as voted with probability below 0.9
// (lower bound), or a 90% agreement needs more than half of N as margin.
func (f *Forecast) Warning(p *Params) string {
	n := p.N()
	switch {
	case f.Margin90 == 0:
		return fmt.Sprintf("WARNING: the noise swamps the votes: even a unanimous vote of all %d teachers is labelled as voted with probability only %.3f (worst case, ties lost), below 0.9. Add teachers, raise the budget, or ask fewer queries.", n, f.Lower[n])
	case 2*f.Margin90 > n:
		return fmt.Sprintf("WARNING: the noise is large for %d teachers: 90%% agreement needs a plurality leading by %d votes (more than half of them). Add teachers, raise the budget, or ask fewer queries.", n, f.Margin90)
	}
	return ""
}

// forecastMargins are the margins printed: 1, 2, N/4, N/2, N (distinct).
func forecastMargins(n int) []int {
	var out []int
	for _, m := range []int{1, 2, n / 4, n / 2, n} {
		if m >= 1 && (len(out) == 0 || m > out[len(out)-1]) {
			out = append(out, m)
		}
	}
	return out
}

// CalibrateNoise calibrates the noise and the budget of a configuration
// without a key (for calculators and forecasts): the Params have no key,
// packing or session (Key, QPC and SlotBits are zero) and are not for a
// deployment.
func CalibrateNoise(cfg Config) (*Params, error) {
	c := cfg.withDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	p := &Params{Config: c}
	if _, _, err := p.calibrateNoise(); err != nil {
		return nil, err
	}
	k, err := p.maxQueries()
	if err != nil {
		return nil, err
	}
	p.MaxQueries = k
	return p, nil
}

// TeachersNeeded returns the fewest teachers N' in [N, maxN] (N that of
// cfg) for which a unanimous vote of all N' teachers is labelled as voted
// with probability at least `agreement` in the forecast's worst case
// (Forecast(0).Lower(N') ≥ agreement, all N' contributing), cfg otherwise
// unchanged: the same budget, noise and classes; C and A at their defaults
// for N' unless cfg sets them (NoneAssumed stays none). It returns 0 when
// even maxN teachers fall short. The search bisects on N' (the agreement
// grows with N' but for the rounding of the default C and A, so the answer
// is checked, not assumed: Lower(N') ≥ agreement holds at the N' returned);
// each step is one calibration.
func TeachersNeeded(cfg Config, agreement float64, maxN int) (int, error) {
	meets := func(n int) (bool, error) {
		c := cfg
		c.Teachers = make([]string, n)
		for i := range c.Teachers {
			c.Teachers[i] = fmt.Sprintf("t%d", i+1)
		}
		c.Threshold = 0
		p, err := CalibrateNoise(c)
		if err != nil {
			return false, err
		}
		f, err := p.Forecast(0)
		if err != nil {
			return false, err
		}
		return f.Lower[n] >= agreement, nil
	}
	lo := len(cfg.Teachers)
	if lo < 2 || maxN < lo {
		return 0, fmt.Errorf("dppp: teachers needed: N = %d, at most %d", lo, maxN)
	}
	if ok, err := meets(lo); err != nil || ok {
		return lo, err
	}
	hi := maxN
	if ok, err := meets(hi); err != nil || !ok {
		return 0, err
	}
	// !meets(lo), meets(hi).
	for hi-lo > 1 {
		m := lo + (hi-lo)/2
		ok, err := meets(m)
		if err != nil {
			return 0, err
		}
		if ok {
			hi = m
		} else {
			lo = m
		}
	}
	return hi, nil
}
