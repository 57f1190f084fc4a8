package dppp

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/internal/partyname"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/paillier"
)

// NoiseKind names the distributed noise each teacher adds to its vote.
type NoiseKind uint8

// The noise kinds.
const (
	// Binomial: each teacher adds Coins fair coins per class; the sum of
	// binomials is binomial, so the exact accountant applies to the sum of
	// the honest shares.
	Binomial NoiseKind = 1
	// DGauss: each teacher adds N_Z(0, σ²) per class; the sum is not a
	// discrete Gaussian and is accounted by the distributed discrete
	// Gaussian bound of Kairouz, Liu & Steinke (PRIVACY-NOTES item 13).
	DGauss NoiseKind = 2
)

func (k NoiseKind) String() string {
	switch k {
	case Binomial:
		return "binomial"
	case DGauss:
		return "dgauss"
	}
	return fmt.Sprintf("noise(%d)", uint8(k))
}

// ParseNoiseKind parses "binomial" or "dgauss".
func ParseNoiseKind(s string) (NoiseKind, error) {
	switch s {
	case "binomial":
		return Binomial, nil
	case "dgauss":
		return DGauss, nil
	}
	return 0, fmt.Errorf("dppp: unknown noise kind %q (want binomial or dgauss)", s)
}

// Histogram sensitivities (PRIVACY-NOTES item 12): one changed training
// record changes one teacher's vote from class a to class b.
const (
	SensitivityL1   = 2
	SensitivityLInf = 1
)

// SensitivityL2 is √2.
var SensitivityL2 = math.Sqrt2

// Config is what a party configures by itself: the public settings of a
// deployment. The aggregator calibrates Params from it; every teacher
// calibrates Params from its own Config and refuses an offer that differs.
type Config struct {
	// Teachers is the roster; teacher i (0-based) has ID i+1, which is its
	// Paillier share index.
	Teachers []string
	// Threshold t of the Paillier key (0: ⌊2N/3⌋, the seed's default).
	Threshold int
	// Colluders is C, the number of teachers that may collude with the
	// aggregator (0: the default ⌈N/3⌉ − 1; NoneAssumed: none). The
	// coalition sees everything the aggregator sees and holds these
	// teachers' key shares and noise shares.
	Colluders int
	// Absent is A, the number of teachers that may be absent from a batch
	// (0: the default N − t; NoneAssumed: none). A batch is decrypted only
	// with at least N − A contributors, so it holds at least
	// H = N − A − C honest noise shares, and each share is sized so that H
	// of them carry the whole calibrated noise. C < t ≤ N − A and H ≥ 1 are
	// required.
	Absent int
	// Classes K and Features (the length of a query row).
	Classes, Features int
	Noise             NoiseKind
	// Epsilon and Delta are the per-query guarantee: the noise is sized so
	// that one query is (Epsilon, Delta)-DP by the exact privacy-loss
	// distribution. With Queries > 0 they must be 0 in the configuration and
	// are derived by Calibrate (see Queries).
	Epsilon, Delta float64
	// BudgetEpsilon and BudgetDelta bound the composition of all answered
	// queries (PLD accountant, Params.Composed).
	BudgetEpsilon, BudgetDelta float64
	// Queries, when > 0, calibrates to the total budget instead: the noise
	// is the least for which Queries answered queries compose to
	// (BudgetEpsilon, BudgetDelta) under the PLD accountant, and the
	// per-query (Epsilon, Delta) of Params is derived: Delta =
	// BudgetDelta/Queries and Epsilon the accountant's ε of one query at that
	// δ (what each query is checked against by a Budget; ledger files are
	// charged per run: RunCharge).
	Queries int
	// QueriesPerCiphertext is the number of queries packed into one
	// plaintext (0: as many as fit).
	QueriesPerCiphertext int
	// Model is the fingerprint of the teachers' input spec / model family
	// (e.g. SHA-256 of classify.Spec.Fingerprint()); all teachers must
	// answer the same question.
	Model [32]byte
}

// Params are the public parameters of a deployment, agreed before anything
// is spent: the Config, the key fingerprint and everything calibrated from
// them. They have a canonical binary encoding and a hash.
type Params struct {
	Session [32]byte
	Config
	// Key is the threshold public key's ID (SHA-256 of its encoding).
	Key [32]byte
	// MinContributors is N − A: no sum with fewer contributors is ever
	// decrypted (PRIVACY-NOTES item 24; every contributor signs the set).
	MinContributors int
	// Honest is H = N − A − C, the number of honest noise shares every
	// decrypted sum holds at least, and the number the noise calibration
	// assumes.
	Honest int
	// HistogramCoins is n, the binomial coins the histogram needs in total
	// (exact accountant); Coins = ⌈n / Honest⌉ is one teacher's share
	// (binomial only).
	HistogramCoins, Coins int64
	// Sigma is one teacher's discrete Gaussian σ (dgauss only) and
	// NoiseBound the public bound on |noise| of one share (dgauss: ⌈20σ⌉,
	// exceeded with probability below 2^-280; binomial: Coins).
	Sigma      float64
	NoiseBound int64
	// Packing layout: SlotBits per count, QPC queries (QPC·K slots) per
	// ciphertext.
	SlotBits, QPC int
	// MaxQueries is the number of queries the budget allows by the
	// PLD accountant (see Composed).
	MaxQueries int

	// acct caches the PLD of one query and its powers (set by Calibrate;
	// nil in decoded Params, which then compute it on demand).
	acct *pldAccountant
}

// MismatchError is a refusal of parameters that differ from what a teacher
// agreed to.
type MismatchError struct {
	Teacher string
	Field   string
	Want    string
	Got     string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("dppp: teacher %s refuses the parameters: %s: offered %s, want %s", e.Teacher, e.Field, e.Got, e.Want)
}

// ErrBudget is wrapped by refusals of queries past the budget.
var ErrBudget = errors.New("dppp: query budget exhausted")

func (c *Config) withDefaults() Config {
	out := *c
	out.Teachers = append([]string(nil), c.Teachers...)
	if out.Threshold == 0 {
		out.Threshold = 2 * len(c.Teachers) / 3
	}
	// Defaults are stored as their values, and a value of none as
	// NoneAssumed, so that applying the defaults again changes nothing and
	// "none" has one encoding.
	n := len(c.Teachers)
	if out.Absent == 0 {
		out.Absent = n - out.Threshold
	}
	if out.Colluders == 0 {
		out.Colluders = (n+2)/3 - 1
	}
	for _, v := range []*int{&out.Absent, &out.Colluders} {
		if *v == 0 {
			*v = NoneAssumed
		}
	}
	return out
}

// NoneAssumed, as Config.Colluders or Config.Absent, assumes no colluding
// (or no absent) teacher at all: 0 in those fields means the default.
const NoneAssumed = -1

// Trust returns C and A as assumed (NoneAssumed read as 0).
func (c *Config) Trust() (colluders, absent int) {
	return max(c.Colluders, 0), max(c.Absent, 0)
}

// Validate checks a configuration (defaults applied).
func (c *Config) Validate() error {
	n := len(c.Teachers)
	if n < 2 || n > MaxTeachers {
		return fmt.Errorf("dppp: need 2..%d teachers, got %d", MaxTeachers, n)
	}
	seen := map[string]bool{}
	for _, name := range c.Teachers {
		if err := partyname.Validate(name); err != nil {
			return fmt.Errorf("dppp: bad teacher name: %w", err)
		}
		if seen[name] {
			return fmt.Errorf("dppp: teacher %q listed twice", name)
		}
		seen[name] = true
	}
	if c.Threshold < 2 || c.Threshold > n {
		return fmt.Errorf("dppp: threshold t = %d must be in [2, N = %d]", c.Threshold, n)
	}
	if c.Colluders < NoneAssumed || c.Absent < NoneAssumed {
		return fmt.Errorf("dppp: colluders C = %d and absent A = %d must be ≥ 0", c.Colluders, c.Absent)
	}
	cc, aa := c.Trust()
	if c.Threshold <= cc {
		return fmt.Errorf("dppp: threshold t = %d must exceed the colluders C = %d (else the coalition decrypts single votes)", c.Threshold, cc)
	}
	if c.Threshold > n-aa {
		return fmt.Errorf("dppp: threshold t = %d must be at most N − A = %d − %d (else the present teachers cannot decrypt)", c.Threshold, n, aa)
	}
	if n-aa-cc < 1 {
		return fmt.Errorf("dppp: N − A − C = %d − %d − %d = %d honest shares: at least 1 is needed", n, aa, cc, n-aa-cc)
	}
	if c.Classes < 2 || c.Classes > MaxClasses {
		return fmt.Errorf("dppp: classes K = %d must be in [2, %d]", c.Classes, MaxClasses)
	}
	if c.Features < 1 || c.Features > MaxFeatures {
		return fmt.Errorf("dppp: features = %d must be in [1, %d]", c.Features, MaxFeatures)
	}
	if c.Noise != Binomial && c.Noise != DGauss {
		return fmt.Errorf("dppp: unknown noise kind %v", c.Noise)
	}
	if c.Queries < 0 || c.Queries > maxQueriesCap {
		return fmt.Errorf("dppp: calibration queries %d must be in [0, %d]", c.Queries, maxQueriesCap)
	}
	if c.Queries > 0 {
		if c.Epsilon != 0 || c.Delta != 0 {
			return fmt.Errorf("dppp: give either a per-query (ε, δ) = (%v, %v) or a number of queries %d to calibrate the total budget to, not both", c.Epsilon, c.Delta, c.Queries)
		}
		if !(c.BudgetEpsilon > 0) || math.IsInf(c.BudgetEpsilon, 0) || !(c.BudgetDelta > 0 && c.BudgetDelta < 1) {
			return fmt.Errorf("dppp: budget (%v, %v): need ε > 0 finite and δ in (0, 1)", c.BudgetEpsilon, c.BudgetDelta)
		}
		return c.validateRest()
	}
	if !(c.Epsilon > 0) || math.IsInf(c.Epsilon, 0) || !(c.Delta > 0 && c.Delta < 1) {
		return fmt.Errorf("dppp: per-query (ε, δ) = (%v, %v): need ε > 0 finite and δ in (0, 1)", c.Epsilon, c.Delta)
	}
	if !(c.BudgetEpsilon >= c.Epsilon) || math.IsInf(c.BudgetEpsilon, 0) || !(c.BudgetDelta >= c.Delta && c.BudgetDelta < 1) {
		return fmt.Errorf("dppp: budget (%v, %v) must be finite and at least the per-query (%v, %v)", c.BudgetEpsilon, c.BudgetDelta, c.Epsilon, c.Delta)
	}
	return c.validateRest()
}

func (c *Config) validateRest() error {
	if c.QueriesPerCiphertext < 0 || c.QueriesPerCiphertext > MaxBatch {
		return fmt.Errorf("dppp: queries per ciphertext %d must be in [0, %d]", c.QueriesPerCiphertext, MaxBatch)
	}
	return nil
}

// Calibrate computes the parameters of a deployment from a configuration
// and the threshold public key. It is deterministic: a teacher that calls it
// with its own configuration gets the same Params (Session aside).
func Calibrate(cfg Config, tpk *paillier.ThresholdPublicKey) (*Params, error) {
	c := cfg.withDefaults()
	if err := c.Validate(); err != nil {
		return nil, err
	}
	n := len(c.Teachers)
	if tpk == nil || tpk.Parties() != n || tpk.Threshold() != c.Threshold {
		return nil, fmt.Errorf("dppp: the key must be an (N = %d, t = %d) threshold key", n, c.Threshold)
	}
	p := &Params{Config: c, Key: tpk.ID()}
	lo, hi, err := p.calibrateNoise()
	if err != nil {
		return nil, err
	}
	pk := tpk.Public()
	fit := paillier.MaxSlots(pk, lo, hi, n) / c.Classes
	if fit < 1 {
		return nil, fmt.Errorf("dppp: one query's %d classes do not fit in one plaintext", c.Classes)
	}
	p.QPC = fit
	if c.QueriesPerCiphertext > 0 {
		if c.QueriesPerCiphertext > fit {
			return nil, fmt.Errorf("dppp: %d queries per ciphertext asked, at most %d fit", c.QueriesPerCiphertext, fit)
		}
		p.QPC = c.QueriesPerCiphertext
	}
	pack, err := p.packing(pk)
	if err != nil {
		return nil, err
	}
	p.SlotBits = pack.SlotBits()
	k, err := p.maxQueries()
	if err != nil {
		return nil, err
	}
	p.MaxQueries = k
	return p, nil
}

// calibrateNoise sets MinContributors = N − A, Honest = H = N − A − C and
// the noise for H honest shares (p.Config has its defaults and is valid),
// and returns the range of one share's slot values.
func (p *Params) calibrateNoise() (lo, hi int64, err error) {
	c := &p.Config
	n := len(c.Teachers)
	cc, aa := c.Trust()
	// Validate ensured C < t ≤ N − A and H ≥ 1, so MinContributors ≥ t ≥ 2.
	p.MinContributors = n - aa
	p.Honest = n - aa - cc
	// The noise meets (ε, δ) over q queries by the exact PLD of the
	// histogram (both moved counts together): q = 1 at the per-query
	// (ε, δ), or q = Queries at the total budget.
	eps, delta, q := c.Epsilon, c.Delta, 1
	if c.Queries > 0 {
		eps, delta, q = c.BudgetEpsilon, c.BudgetDelta, c.Queries
	}
	switch c.Noise {
	case Binomial:
		hn, err := accounting.BinomialHistogramCoins(eps, delta, q, pldOptionsFor(c.BudgetEpsilon, c.Queries))
		if err != nil {
			return 0, 0, fmt.Errorf("dppp: calibrating the binomial noise: %w", err)
		}
		p.HistogramCoins = hn
		h := int64(p.Honest)
		p.Coins = (hn + h - 1) / h
		p.NoiseBound = p.Coins
		lo, hi = 0, p.Coins+1
	case DGauss:
		s, err := accounting.DGaussSumHistogramSigma(eps, delta, p.Honest, q, pldOptionsFor(c.BudgetEpsilon, c.Queries))
		if err != nil {
			return 0, 0, fmt.Errorf("dppp: calibrating the discrete Gaussian noise: %w", err)
		}
		p.Sigma = s
		p.NoiseBound = int64(math.Ceil(20 * s))
		lo, hi = -p.NoiseBound, p.NoiseBound+1
	default:
		return 0, 0, fmt.Errorf("dppp: unknown noise kind %v", c.Noise)
	}
	// The PLD of one query at the calibrated noise (H·Coins ≥ n coins: more
	// coins are post-processing of fewer), cached for Composed. Calibrated
	// to Q queries, Composed(Q) must fit the budget as this accountant
	// computes it (on a widening grid, accounting.PLDOptions.MaxPoints,
	// the result depends slightly on the noise and the order of the
	// compositions): the noise is raised by a coin per share (or σ by
	// 0.05%) until it does.
	var one *accounting.PLD
	for try := 0; ; try++ {
		if one, err = p.queryPLD(); err != nil {
			return 0, 0, err
		}
		p.acct = newPLDAccountant(one)
		if c.Queries == 0 {
			break
		}
		g, err := p.Composed(c.Queries)
		if err != nil {
			return 0, 0, err
		}
		if g.Epsilon <= c.BudgetEpsilon {
			break
		}
		if try >= 100 {
			return 0, 0, fmt.Errorf("dppp: %d queries compose to ε = %v > %v after raising the noise 100 times", c.Queries, g.Epsilon, c.BudgetEpsilon)
		}
		switch c.Noise {
		case Binomial:
			p.Coins++
			p.HistogramCoins = int64(p.Honest) * p.Coins
			p.NoiseBound = p.Coins
			hi = p.Coins + 1
		case DGauss:
			p.Sigma *= 1.0005
			p.NoiseBound = int64(math.Ceil(20 * p.Sigma))
			lo, hi = -p.NoiseBound, p.NoiseBound+1
		}
	}
	if c.Queries > 0 {
		// Derived per-query guarantee: δ = D/Q (so Q per-query charges sum
		// to D in δ) and the accountant's ε of one query there.
		p.Delta = c.BudgetDelta / float64(c.Queries)
		e, err := one.Epsilon(p.Delta)
		if err != nil {
			return 0, 0, fmt.Errorf("dppp: per-query ε at δ = %v: %w", p.Delta, err)
		}
		p.Epsilon = e
	}
	return lo, hi, nil
}

// NewSession returns p with a fresh random session ID.
func (p *Params) NewSession() (*Params, error) {
	q := p.Clone()
	if _, err := rand.Read(q.Session[:]); err != nil {
		return nil, err
	}
	return q, nil
}

// Clone returns a deep copy.
func (p *Params) Clone() *Params {
	q := *p
	q.Teachers = append([]string(nil), p.Teachers...)
	return &q
}

// N is the number of teachers.
func (p *Params) N() int { return len(p.Teachers) }

// TeacherID returns the ID (1-based) of a teacher name, or 0.
func (p *Params) TeacherID(name string) uint32 {
	for i, t := range p.Teachers {
		if t == name {
			return uint32(i + 1)
		}
	}
	return 0
}

// TeacherName returns the name of a teacher ID, or "".
func (p *Params) TeacherName(id uint32) string {
	if id < 1 || int(id) > len(p.Teachers) {
		return ""
	}
	return p.Teachers[id-1]
}

func (p *Params) slotRange() (int64, int64) {
	if p.Noise == Binomial {
		return 0, p.Coins + 1
	}
	return -p.NoiseBound, p.NoiseBound + 1
}

func (p *Params) packing(pk *paillier.PublicKey) (*paillier.Packing, error) {
	lo, hi := p.slotRange()
	return paillier.NewPacking(pk, p.QPC*p.Classes, lo, hi, p.N())
}

// Guarantee is a composed (ε, δ) with the accountant that proved it.
type Guarantee struct {
	Queries    int
	Epsilon    float64
	Delta      float64
	Accountant string
}

func (g Guarantee) String() string {
	return fmt.Sprintf("(%s, %.3g)-DP after %d queries [%s]", fmtUp(g.Epsilon), g.Delta, g.Queries, g.Accountant)
}

// fmtUp prints ε rounded up to 4 significant digits (PRIVACY-NOTES item 20).
func fmtUp(x float64) string {
	if x == 0 {
		return "0"
	}
	e := math.Floor(math.Log10(math.Abs(x))) - 3
	s := math.Pow(10, e)
	return fmt.Sprintf("%.4g", math.Ceil(x/s)*s)
}

// Composed returns the guarantee of k answered queries at the budget's δ
// by the PLD accountant: the exact privacy-loss distribution of one query
// of the implemented histogram (binomial with H·Coins coins in the honest
// shares, or the sum of H discrete Gaussian shares of σ; the two counts a
// changed vote moves taken together), composed k times (DPPP's queries are
// adaptive, and the pair of output laws of every query is either identical
// or that pair, so it dominates: accounting/pld.go), discretised
// pessimistically on a grid of PLDGrid and converted to ε at δ, rounded
// up. Cost: the one-query PLD and its powers 2^j are cached by Calibrate,
// so k queries cost at most log₂ k convolutions (milliseconds at PLDGrid);
// Params decoded from the wire rebuild them on each call.
func (p *Params) Composed(k int) (Guarantee, error) {
	if k <= 0 {
		return Guarantee{Accountant: "none"}, nil
	}
	e, err := p.pldEpsilon(k, p.BudgetDelta)
	if err != nil {
		return Guarantee{Queries: k, Epsilon: math.Inf(1), Delta: p.BudgetDelta, Accountant: "infeasible at the budget's δ"}, nil
	}
	return Guarantee{Queries: k, Epsilon: e, Delta: p.BudgetDelta, Accountant: p.pldName()}, nil
}

// maxQueries finds the largest k ≤ maxQueriesCap the budget allows by the
// PLD accountant (Composed(k) within the budget).
func (p *Params) maxQueries() (int, error) {
	a, err := p.accountant()
	if err != nil {
		return 0, err
	}
	k, err := a.maxWithin(p.BudgetEpsilon, p.BudgetDelta)
	if err != nil {
		return 0, err
	}
	if k == 0 {
		return 0, fmt.Errorf("dppp: the budget (%v, %v) does not cover one query", p.BudgetEpsilon, p.BudgetDelta)
	}
	return k, nil
}

// Report returns the calibration in words, one line each: the noise, the
// seed's Theorem 1 and cpSGD figures as secondary lines, the budget.
func (p *Params) Report() []string {
	n := p.N()
	h := p.Honest
	cc, aa := p.Trust()
	lines := []string{
		fmt.Sprintf("teachers N = %d, threshold t = %d, colluders C = %d, absent A = %d: every decrypted sum has ≥ N − A = %d contributors, each signing the set; the noise assumes ≥ H = N − A − C = %d honest shares in it", n, p.Threshold, cc, aa, p.MinContributors, h),
		fmt.Sprintf("histogram of K = %d classes, sensitivity L1 %d, L2 √2, L∞ %d (PRIVACY-NOTES item 12)", p.Classes, SensitivityL1, SensitivityLInf),
	}
	target := fmt.Sprintf("(%g, %g) per query", p.Epsilon, p.Delta)
	if p.Queries > 0 {
		target = fmt.Sprintf("the total budget (%g, %g) over %d queries", p.BudgetEpsilon, p.BudgetDelta, p.Queries)
	}
	switch p.Noise {
	case Binomial:
		lines = append(lines,
			fmt.Sprintf("noise: binomial, n = %d coins per class for %s (exact privacy-loss distribution of the histogram, both moved counts); each teacher adds %d coins (⌈n/%d⌉), the %d honest shares hold %d ≥ n", p.HistogramCoins, target, p.Coins, h, h, int64(h)*p.Coins))
		if nd, err := accounting.BinomialExactN(p.Epsilon/2, p.Delta/2, 1); err == nil && p.Queries == 0 {
			lines = append(lines, fmt.Sprintf("  (per count at (ε/2, δ/2), composed over the 2 moved counts, would need n = %d coins)", nd))
		}
	case DGauss:
		lines = append(lines, fmt.Sprintf("noise: distributed discrete Gaussian, each teacher adds N_Z(0, σ²) with σ = %.6g per class, the sum of %d honest shares accounted exactly for %s (the sum of discrete Gaussians is not one: PRIVACY-NOTES item 13); shares bounded by |z| ≤ %d", p.Sigma, h, target, p.NoiseBound))
	}
	if q, err := p.QueryGuarantee(); err == nil {
		lines = append(lines, fmt.Sprintf("one query alone: %v", q))
	}
	lines = append(lines, fmt.Sprintf("packing: %d queries × %d classes per ciphertext, %d-bit slots", p.QPC, p.Classes, p.SlotBits))
	if g, err := p.Composed(p.MaxQueries); err == nil {
		lines = append(lines, fmt.Sprintf("budget (%g, %g): at most %d queries; %v", p.BudgetEpsilon, p.BudgetDelta, p.MaxQueries, g))
		if e, ok := p.kovComposed(p.MaxQueries); ok {
			lines = append(lines, fmt.Sprintf("  (the per-query (%s, %.3g) composed by Kairouz-Oh-Viswanath would give ε = %s)", fmtUp(p.Epsilon), p.Delta, fmtUp(e)))
		}
	}
	if f, err := p.Forecast(0); err == nil {
		lines = append(lines, f.Lines(p)...)
	}
	return lines
}

// Check compares offered parameters with those this party calibrated
// itself (want), Session aside, and names the first field that differs.
func (p *Params) Check(teacher string, want *Params) error {
	mis := func(field string, got, w any) error {
		return &MismatchError{Teacher: teacher, Field: field, Got: fmt.Sprint(got), Want: fmt.Sprint(w)}
	}
	if strings.Join(p.Teachers, ",") != strings.Join(want.Teachers, ",") {
		return mis("teachers", p.Teachers, want.Teachers)
	}
	type f struct {
		name      string
		got, want any
	}
	for _, x := range []f{
		{"threshold", p.Threshold, want.Threshold},
		{"colluders", p.Colluders, want.Colluders},
		{"absent", p.Absent, want.Absent},
		{"classes", p.Classes, want.Classes},
		{"features", p.Features, want.Features},
		{"noise", p.Noise, want.Noise},
		{"epsilon", math.Float64bits(p.Epsilon), math.Float64bits(want.Epsilon)},
		{"delta", math.Float64bits(p.Delta), math.Float64bits(want.Delta)},
		{"budget-epsilon", math.Float64bits(p.BudgetEpsilon), math.Float64bits(want.BudgetEpsilon)},
		{"budget-delta", math.Float64bits(p.BudgetDelta), math.Float64bits(want.BudgetDelta)},
		{"queries-per-ciphertext", p.QueriesPerCiphertext, want.QueriesPerCiphertext},
		{"calibration-queries", p.Queries, want.Queries},
		{"model", fmt.Sprintf("%x", p.Model[:8]), fmt.Sprintf("%x", want.Model[:8])},
		{"key", fmt.Sprintf("%x", p.Key[:8]), fmt.Sprintf("%x", want.Key[:8])},
		{"min-contributors", p.MinContributors, want.MinContributors},
		{"honest", p.Honest, want.Honest},
		{"histogram-coins", p.HistogramCoins, want.HistogramCoins},
		{"coins", p.Coins, want.Coins},
		{"sigma", math.Float64bits(p.Sigma), math.Float64bits(want.Sigma)},
		{"noise-bound", p.NoiseBound, want.NoiseBound},
		{"slot-bits", p.SlotBits, want.SlotBits},
		{"qpc", p.QPC, want.QPC},
		{"max-queries", p.MaxQueries, want.MaxQueries},
	} {
		if x.got != x.want {
			if x.name == "epsilon" || x.name == "delta" || x.name == "budget-epsilon" || x.name == "budget-delta" || x.name == "sigma" {
				return mis(x.name, math.Float64frombits(x.got.(uint64)), math.Float64frombits(x.want.(uint64)))
			}
			return mis(x.name, x.got, x.want)
		}
	}
	return nil
}

// MarshalBinary is the canonical encoding of the parameters.
func (p *Params) MarshalBinary() ([]byte, error) {
	if len(p.Teachers) > MaxTeachers {
		return nil, fmt.Errorf("dppp: too many teachers")
	}
	w := &writer{}
	w.U8(wireVersion)
	w.U8(typeParams)
	p.write(w)
	return w.Bytes(), nil
}

func (p *Params) write(w *writer) {
	w.Raw(p.Session[:])
	w.U32(uint32(len(p.Teachers)))
	for _, t := range p.Teachers {
		w.Str16(t)
	}
	w.U32(uint32(p.Threshold))
	w.U32(uint32(int32(p.Colluders)))
	w.U32(uint32(int32(p.Absent)))
	w.U32(uint32(p.Classes))
	w.U32(uint32(p.Features))
	w.U8(uint8(p.Noise))
	for _, v := range []float64{p.Epsilon, p.Delta, p.BudgetEpsilon, p.BudgetDelta} {
		w.F64(v)
	}
	w.U32(uint32(p.QueriesPerCiphertext))
	w.U32(uint32(p.Queries))
	w.Raw(p.Model[:])
	w.Raw(p.Key[:])
	w.U32(uint32(p.MinContributors))
	w.U32(uint32(p.Honest))
	w.U64(uint64(p.HistogramCoins))
	w.U64(uint64(p.Coins))
	w.F64(p.Sigma)
	w.U64(uint64(p.NoiseBound))
	w.U32(uint32(p.SlotBits))
	w.U32(uint32(p.QPC))
	w.U32(uint32(p.MaxQueries))
}

func readParams(r *reader) *Params {
	p := &Params{}
	p.Session = r.Fixed32("session")
	n := r.Count("teachers", MaxTeachers, 2)
	for i := 0; i < n && r.Err() == nil; i++ {
		p.Teachers = append(p.Teachers, r.Str16("teacher", maxName))
	}
	p.Threshold = small(r, "threshold")
	for _, v := range []*int{&p.Colluders, &p.Absent} {
		x := int32(r.U32("trust"))
		if x < NoneAssumed || x > 1<<20 {
			r.Fail("colluders or absent %d out of range", x)
		}
		*v = int(x)
	}
	p.Classes = small(r, "classes")
	p.Features = small(r, "features")
	p.Noise = NoiseKind(r.U8("noise"))
	for _, v := range []*float64{&p.Epsilon, &p.Delta, &p.BudgetEpsilon, &p.BudgetDelta} {
		*v = r.Finite("float")
	}
	p.QueriesPerCiphertext = small(r, "qpc")
	p.Queries = small(r, "calibration queries")
	p.Model = r.Fixed32("model")
	p.Key = r.Fixed32("key")
	p.MinContributors = small(r, "min")
	p.Honest = small(r, "honest")
	p.HistogramCoins = i62(r, "coins")
	p.Coins = i62(r, "coins")
	p.Sigma = r.Finite("sigma")
	p.NoiseBound = i62(r, "bound")
	p.SlotBits = small(r, "slot bits")
	p.QPC = small(r, "qpc")
	p.MaxQueries = small(r, "max queries")
	return p
}

// Hash is SHA-256 of the canonical encoding.
func (p *Params) Hash() [32]byte {
	b, _ := p.MarshalBinary()
	return sha256.Sum256(b)
}

// Share draws one teacher's plaintext contribution to a batch: for each of
// the len(votes) queries (≤ QPC) its one-hot vote plus its noise share on
// each of the K classes, in slot order (query-major); unused query slots
// are 0. Binomial shares are Binomial(Coins, ½) (not centred: the public
// mean is removed after decryption); dgauss shares are N_Z(0, σ²), refused
// (an error, probability < 2^-280) beyond ±NoiseBound.
func (p *Params) Share(src noise.Source, votes []int) ([]int64, error) {
	if len(votes) > p.QPC {
		return nil, fmt.Errorf("dppp: %d votes, at most %d per ciphertext", len(votes), p.QPC)
	}
	out := make([]int64, p.QPC*p.Classes)
	var s2 *big.Rat
	if p.Noise == DGauss {
		s := new(big.Rat).SetFloat64(p.Sigma)
		s2 = new(big.Rat).Mul(s, s)
	}
	for q, v := range votes {
		if v < 0 || v >= p.Classes {
			return nil, fmt.Errorf("dppp: vote %d outside [0, %d)", v, p.Classes)
		}
		for k := 0; k < p.Classes; k++ {
			var z int64
			var err error
			if p.Noise == Binomial {
				z, err = noise.Binomial(src, p.Coins)
			} else {
				z, err = noise.DiscreteGaussian(src, s2)
				if err == nil && (z > p.NoiseBound || z < -p.NoiseBound) {
					err = fmt.Errorf("dppp: discrete Gaussian share %d beyond the public bound %d", z, p.NoiseBound)
				}
			}
			if err != nil {
				return nil, err
			}
			if k == v {
				z++
			}
			out[q*p.Classes+k] = z
		}
	}
	return out, nil
}

// Tally turns the per-slot sums of a decrypted batch (raw, QPC·K values,
// contributors shares summed) into noisy histograms centred by the public
// noise mean (binomial: contributors·Coins/2) and labels (argmax, lowest
// class on ties), for the first count queries.
func (p *Params) Tally(raw []int64, contributors, count int) (hist [][]float64, labels []int, err error) {
	if len(raw) != p.QPC*p.Classes || count > p.QPC || count < 0 {
		return nil, nil, fmt.Errorf("dppp: tally of %d values for %d queries", len(raw), count)
	}
	mean := 0.0
	if p.Noise == Binomial {
		mean = float64(contributors) * float64(p.Coins) / 2
	}
	for q := 0; q < count; q++ {
		row := raw[q*p.Classes : (q+1)*p.Classes]
		h := make([]float64, p.Classes)
		best := 0
		for k, v := range row {
			h[k] = float64(v) - mean
			if v > row[best] {
				best = k
			}
		}
		hist = append(hist, h)
		labels = append(labels, best)
	}
	return hist, labels, nil
}

// small reads a u32 that must be below 2^20.
func small(r *reader, what string) int {
	v := r.U32(what)
	if v >= 1<<20 {
		r.Fail("%s = %d too large", what, v)
		return 0
	}
	return int(v)
}

// i62 reads a u64 that must be below 2^62.
func i62(r *reader, what string) int64 {
	v := r.U64(what)
	if v >= 1<<62 {
		r.Fail("%s = %d too large", what, v)
		return 0
	}
	return int64(v)
}
