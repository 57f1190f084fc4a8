package capefm

import (
	"crypto/sha256"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dplearn/dplearn/internal/partyname"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/secagg"
)

// Mechanism names what the sites release.
type Mechanism string

// The mechanisms.
const (
	// CapeFM is Gaussian FM with CAPE's zero-sum noise (the seed's
	// Algorithm 3, corrected): the model's noise is that of one Gaussian FM
	// on the pooled data, up to the factor VarianceRatio.
	CapeFM Mechanism = "capefm"
	// GaussianFMLocal is the seed's conventional decentralised comparison:
	// every site releases its own Gaussian FM objective with the full noise
	// for (ε, δ) on its N_s rows; the aggregator averages them (weights
	// N_s/N).
	GaussianFMLocal Mechanism = "gaussian-fm-local"
	// FMLocal, ObjPertLocal and NoisyGDLocal: every site fits the regress
	// mechanism fm, objpert or noisygd on its own rows at (ε, δ) and releases
	// its coefficient vector; the aggregator averages them (weights N_s/N).
	FMLocal      Mechanism = "fm-local"
	ObjPertLocal Mechanism = "objpert-local"
	NoisyGDLocal Mechanism = "noisygd-local"
)

// Mechanisms lists the accepted mechanism names.
func Mechanisms() []Mechanism {
	return []Mechanism{CapeFM, GaussianFMLocal, FMLocal, ObjPertLocal, NoisyGDLocal}
}

func (m Mechanism) valid() bool { return slices.Contains(Mechanisms(), m) }

// coefficientBaseline returns the regress mechanism a coefficient-averaging
// baseline runs at each site, or "".
func (m Mechanism) coefficientBaseline() string {
	switch m {
	case FMLocal:
		return "fm"
	case ObjPertLocal:
		return "objpert"
	case NoisyGDLocal:
		return "noisygd"
	}
	return ""
}

// pureEpsilon reports whether the mechanism is ε-DP (δ unused).
func (m Mechanism) pureEpsilon() bool { return m == FMLocal }

// SiteInfo is one site in the roster: its name (the name in its
// certificate), its ID (≥ 1; also its Shamir x coordinate in secure
// aggregation) and its public number of rows N_s.
type SiteInfo struct {
	Name string
	ID   uint32
	N    int64
}

// Params are the public parameters of one attempt of a fit, agreed by every
// site before anything is spent. The aggregator fills them (NewParams, then
// Calibrate for capeFM); each site checks them against its own
// configuration (SiteConfig.Check) and answers with their Hash.
type Params struct {
	// Session identifies the attempt: 32 fresh random bytes, also the
	// secure-aggregation session. Every attempt has a new one.
	Session [32]byte
	// Attempt numbers the attempts of one fit, from 1.
	Attempt uint32
	// Mechanism is CapeFM or a conventional baseline.
	Mechanism Mechanism
	// Kind is regress.Linear or regress.Logistic.
	Kind regress.Kind
	// Schema is the fingerprint of the schema every site encodes its rows
	// with (schema.Fingerprint).
	Schema [32]byte
	// D is the number of encoded features (intercept included).
	D int
	// Epsilon and Delta are the per-site target of this attempt.
	Epsilon, Delta float64
	// Split is the share of the whitened squared sensitivity given to Λ1
	// (the rest to Λ2), in (0, 1); Gaussian FM's default is 0.5.
	Split float64
	// Sites is the roster of this attempt, sorted by ID.
	Sites []SiteInfo
	// Colluders is S_C, the number of sites that may collude with the
	// aggregator (accounting.CAPEColluders(S) by default). capeFM needs
	// S_C < secagg.DefaultThreshold(S).
	Colluders int
	// MinSites is the smallest roster the fit may continue with after
	// dropouts (≥ 2).
	MinSites int
	// Tau is τ, the standard deviation of each whitened coordinate of the
	// zero-sum draw ê_s (capeFM only; 0 for the baselines). Calibrate sets
	// the smallest τ meeting (ε, δ), rounded up to 6 significant digits.
	Tau float64
	// NoiseRatio is R = Var ê_s / Var g_s (capeFM only; 0 for the
	// baselines): each site's local noise g_s has variance τ²/R. The seed
	// uses R = S; DefaultNoiseRatio is 100 (see its documentation). Any
	// R > 0 is accounted for exactly (accounting.CAPEParams.NoiseRatio).
	NoiseRatio float64
	// Prior lists the Gaussian-DP parameters η of earlier attempts of this
	// fit that reached the release round (their releases compose with this
	// one; see Accounting.ComposedEta).
	Prior []float64
	// Unit names the privacy-unit column and MaxRows is K, the rows per
	// unit each site keeps (dataset.UnitMoments): a person-level guarantee
	// (replace-one-unit). Both zero: the row-level guarantee. With a unit,
	// Sites[i].N is the site's number of units U_s (public), not its rows;
	// each site divides its sums by U·K (U = Σ U_s) and every sensitivity
	// is the row-level formula at U and U_s (Params.RowsPerUnit; the
	// derivation is in the package documentation, Privacy units). Both are
	// in the canonical encoding, so every site agrees on them by the hash.
	Unit    string
	MaxRows int
}

// MaxRowsPerUnit is the largest K Params accept (dataset's cap).
const MaxRowsPerUnit = 1 << 20

// maxUnitName bounds the unit column's name in bytes.
const maxUnitName = 256

// unitMechanism reports whether m has a unit-level derivation: the
// FM-family releases of capefm and gaussian-fm-local (their sensitivities
// at U and U_s, regress.UnitStats) and fm-local (regress's fm on
// regress.UnitStats). objpert and noisygd read rows: regress has no
// unit-level sensitivity for them.
func (m Mechanism) unitMechanism() bool {
	return m == CapeFM || m == GaussianFMLocal || m == FMLocal
}

// DefaultNoiseRatio is the noise ratio R = Var ê_s / Var g_s used when none
// is given: 100. The zero-sum part ê_s cancels in the model, so a large R
// costs nothing there, while it hides each honest site's own release
// better; for the same guarantee the model's noise variance relative to
// central Gaussian FM on the pooled data is κ(R) = S(S_H + R)/(S_H(R + 1))
// (accounting.CAPEModelVarianceRatio), which falls from the seed's
// κ(S) = 1.875 (S = 5, S_C = 1) to κ(100) = 1.287, close to its floor
// S/S_H = 1.25 (κ(1000) = 1.254 gains little more). Without colluders
// κ(100) = (S + 100)/101: 1.040 for S = 5, against the seed's 2S/(S + 1) =
// 1.667. The price is a larger ê_s (τ grows about as √(R/S_H)), which the
// 64-bit fixed point holds with room to spare (Calibration checks it).
const DefaultNoiseRatio = 100

// MinNoiseRatio and MaxNoiseRatio bound the noise ratio Params accept.
const (
	MinNoiseRatio         = 1.0 / 1024
	MaxNoiseRatio float64 = 1 << 20
)

// N returns Σ N_s.
func (p *Params) N() int64 {
	var n int64
	for _, s := range p.Sites {
		n += s.N
	}
	return n
}

// IDs returns the roster's IDs, sorted.
func (p *Params) IDs() []uint32 {
	out := make([]uint32, len(p.Sites))
	for i, s := range p.Sites {
		out[i] = s.ID
	}
	return out
}

// Site returns the roster entry with the given ID.
func (p *Params) Site(id uint32) (SiteInfo, bool) {
	for _, s := range p.Sites {
		if s.ID == id {
			return s, true
		}
	}
	return SiteInfo{}, false
}

// SiteByName returns the roster entry with the given name.
func (p *Params) SiteByName(name string) (SiteInfo, bool) {
	for _, s := range p.Sites {
		if s.Name == name {
			return s, true
		}
	}
	return SiteInfo{}, false
}

// RowsPerUnit returns K, the divisor factor of the sites' sums: each
// site divides by N()·RowsPerUnit() (U·K with a privacy unit, N rows
// without), while every sensitivity is evaluated at N() (U units).
func (p *Params) RowsPerUnit() int64 { return int64(max(p.MaxRows, 1)) }

// countNoun is what Sites[i].N counts: "rows", or "units" with a privacy
// unit.
func (p *Params) countNoun() string {
	if p.MaxRows > 0 {
		return "units"
	}
	return "rows"
}

// Released returns L = D + D(D+1)/2, the number of released objective
// coefficients (Λ1 and the upper triangle of Λ2).
func (p *Params) Released() int { return p.D + p.D*(p.D+1)/2 }

// ValidName reports whether s can name a site: internal/partyname's rule
// (certs.ValidateName), so a name an in-process run accepts is one a
// deployment's certificates can carry.
func ValidName(s string) bool { return partyname.Validate(s) == nil }

// Validate checks the parameters (not the calibration: see Calibration).
func (p *Params) Validate() error {
	if p.Session == ([32]byte{}) {
		return fmt.Errorf("capefm: params: session ID is all zeros")
	}
	if p.Attempt < 1 {
		return fmt.Errorf("capefm: params: attempt must be ≥ 1, got %d", p.Attempt)
	}
	if !p.Mechanism.valid() {
		return fmt.Errorf("capefm: params: unknown mechanism %q", p.Mechanism)
	}
	if p.Kind != regress.Linear && p.Kind != regress.Logistic {
		return fmt.Errorf("capefm: params: model must be linear or logistic, got %q", p.Kind)
	}
	if p.D < 1 || p.D > MaxFeatures {
		return fmt.Errorf("capefm: params: D = %d features, want 1 to %d", p.D, MaxFeatures)
	}
	if !(p.Epsilon > 0) || math.IsInf(p.Epsilon, 0) {
		return fmt.Errorf("capefm: params: ε must be finite and > 0, got %v", p.Epsilon)
	}
	if p.Mechanism.pureEpsilon() {
		if !(p.Delta >= 0 && p.Delta < 1) {
			return fmt.Errorf("capefm: params: δ must be in [0, 1), got %v", p.Delta)
		}
	} else if !(p.Delta > 0 && p.Delta < 1) {
		return fmt.Errorf("capefm: params: mechanism %s needs δ in (0, 1), got %v", p.Mechanism, p.Delta)
	}
	if !(p.Split > 0 && p.Split < 1) {
		return fmt.Errorf("capefm: params: budget split must be in (0, 1), got %v", p.Split)
	}
	S := len(p.Sites)
	if S < 2 || S > MaxSites {
		return fmt.Errorf("capefm: params: %d sites, want 2 to %d", S, MaxSites)
	}
	if p.MaxRows < 0 || p.MaxRows > MaxRowsPerUnit {
		return fmt.Errorf("capefm: params: max rows per unit K = %d, want 0 (row level) or 1 to %d", p.MaxRows, MaxRowsPerUnit)
	}
	if (p.MaxRows == 0) != (p.Unit == "") {
		return fmt.Errorf("capefm: params: privacy unit %q with max rows per unit K = %d: give both or neither", p.Unit, p.MaxRows)
	}
	if len(p.Unit) > maxUnitName {
		return fmt.Errorf("capefm: params: privacy unit name of %d bytes, want at most %d", len(p.Unit), maxUnitName)
	}
	if p.MaxRows > 0 && !p.Mechanism.unitMechanism() {
		return fmt.Errorf("capefm: params: mechanism %s has no sensitivity derived for a privacy unit of K rows; use capefm, gaussian-fm-local or fm-local", p.Mechanism)
	}
	// Units·K per site and U·K in all must fit in an int64.
	maxN := math.MaxInt64 / int64(MaxSites) / int64(max(p.MaxRows, 1))
	names := map[string]bool{}
	var total int64
	for i, s := range p.Sites {
		if !ValidName(s.Name) {
			return fmt.Errorf("capefm: params: site name %q is not 1-64 letters, digits, '-', '_' or '.'", s.Name)
		}
		if names[s.Name] {
			return fmt.Errorf("capefm: params: site name %q repeated", s.Name)
		}
		names[s.Name] = true
		if s.ID == 0 {
			return fmt.Errorf("capefm: params: site %s has ID 0", s.Name)
		}
		if i > 0 && s.ID <= p.Sites[i-1].ID {
			return fmt.Errorf("capefm: params: roster not sorted by ID or ID %d repeated", s.ID)
		}
		if s.N < 1 || s.N > maxN {
			return fmt.Errorf("capefm: params: site %s has N = %d %s, want 1 to %d", s.Name, s.N, p.countNoun(), maxN)
		}
		total += s.N
	}
	if p.MinSites < 2 || p.MinSites > S {
		return fmt.Errorf("capefm: params: minimum sites %d, want 2 to %d (the roster)", p.MinSites, S)
	}
	if p.Mechanism == CapeFM {
		if limit := secagg.DefaultThreshold(S) - 1; p.Colluders < 0 || p.Colluders > limit {
			return fmt.Errorf("capefm: params: %d colluders; secure aggregation of %d sites (threshold %d) hides the noise shares from at most %d", p.Colluders, S, limit+1, limit)
		}
		if !(p.Tau > 0) || math.IsInf(p.Tau, 0) {
			return fmt.Errorf("capefm: params: τ must be finite and > 0 for capefm, got %v (call Calibrate)", p.Tau)
		}
		if !(p.NoiseRatio >= MinNoiseRatio && p.NoiseRatio <= MaxNoiseRatio) {
			return fmt.Errorf("capefm: params: noise ratio R = Var ê / Var g must be in [%g, %g] for capefm, got %v", MinNoiseRatio, MaxNoiseRatio, p.NoiseRatio)
		}
	} else {
		if p.Colluders < 0 || p.Colluders >= S {
			return fmt.Errorf("capefm: params: %d colluders, want 0 to %d", p.Colluders, S-1)
		}
		if p.Tau != 0 {
			return fmt.Errorf("capefm: params: τ is only used by capefm, got %v for %s", p.Tau, p.Mechanism)
		}
		if p.NoiseRatio != 0 {
			return fmt.Errorf("capefm: params: the noise ratio is only used by capefm, got %v for %s", p.NoiseRatio, p.Mechanism)
		}
	}
	for i, e := range p.Prior {
		if !(e >= 0) || math.IsInf(e, 0) {
			return fmt.Errorf("capefm: params: prior attempt %d has η = %v", i+1, e)
		}
	}
	if len(p.Prior) >= int(p.Attempt) {
		return fmt.Errorf("capefm: params: %d prior releases in attempt %d", len(p.Prior), p.Attempt)
	}
	return nil
}

const paramsMagic = "CFMP"

// MarshalBinary returns the canonical encoding of p (wireVersion, big-endian):
//
//	"CFMP" version:u8 session:[32] attempt:u32 mechanism:str16 kind:str16
//	schema:[32] D:u32 ε:f64 δ:f64 split:f64 τ:f64 R:f64 colluders:u32
//	minSites:u32 S:u32 S×(ID:u32 N:u64 name:str16) priors:u32 priors×f64
//	unit:str16 K:u32
//
// It fails unless p is valid, so that every encoded Params is.
func (p *Params) MarshalBinary() ([]byte, error) {
	if err := p.Validate(); err != nil {
		return nil, err
	}
	var w writer
	w.Raw([]byte(paramsMagic))
	w.U8(wireVersion)
	w.Raw(p.Session[:])
	w.U32(p.Attempt)
	w.Str16(string(p.Mechanism))
	w.Str16(string(p.Kind))
	w.Raw(p.Schema[:])
	w.U32(uint32(p.D))
	w.F64(p.Epsilon)
	w.F64(p.Delta)
	w.F64(p.Split)
	w.F64(p.Tau)
	w.F64(p.NoiseRatio)
	w.U32(uint32(p.Colluders))
	w.U32(uint32(p.MinSites))
	w.U32(uint32(len(p.Sites)))
	for _, s := range p.Sites {
		w.U32(s.ID)
		w.U64(uint64(s.N))
		w.Str16(s.Name)
	}
	w.U32(uint32(len(p.Prior)))
	for _, e := range p.Prior {
		w.F64(e)
	}
	w.Str16(p.Unit)
	w.U32(uint32(p.MaxRows))
	return w.Bytes(), nil
}

// UnmarshalBinary decodes a canonical encoding and validates it; trailing
// bytes, a wrong magic or version and any invalid field are refused.
func (p *Params) UnmarshalBinary(b []byte) error {
	r := newReader(b)
	q, err := readParams(r)
	if err != nil {
		return err
	}
	if err := r.Done(); err != nil {
		return err
	}
	*p = *q
	return nil
}

func readParams(r *reader) (*Params, error) {
	if string(r.Take(len(paramsMagic), "params magic")) != paramsMagic && r.Err() == nil {
		r.Fail("params: wrong magic")
	}
	if v := r.U8("params version"); r.Err() == nil && v != wireVersion {
		r.Fail("params: version %d, want %d", v, wireVersion)
	}
	p := &Params{}
	p.Session = r.Fixed32("session")
	p.Attempt = r.U32("attempt")
	p.Mechanism = Mechanism(r.Str16("mechanism", 64))
	p.Kind = regress.Kind(r.Str16("kind", 64))
	p.Schema = r.Fixed32("schema fingerprint")
	p.D = int(r.U32("D"))
	p.Epsilon = r.Finite("ε")
	p.Delta = r.Finite("δ")
	p.Split = r.Finite("split")
	p.Tau = r.Finite("τ")
	p.NoiseRatio = r.Finite("noise ratio")
	p.Colluders = int(r.U32("colluders"))
	p.MinSites = int(r.U32("minimum sites"))
	n := r.Count("sites", MaxSites, 4+8+2)
	p.Sites = make([]SiteInfo, n)
	for i := range p.Sites {
		p.Sites[i].ID = r.U32("site ID")
		p.Sites[i].N = int64(r.U64("site N"))
		p.Sites[i].Name = r.Str16("site name", maxName)
	}
	np := r.Count("prior releases", 1<<16, 8)
	if np > 0 {
		p.Prior = make([]float64, np)
		for i := range p.Prior {
			p.Prior[i] = r.Finite("prior η")
		}
	}
	p.Unit = r.Str16("privacy unit", maxUnitName)
	p.MaxRows = int(r.U32("max rows per unit"))
	if r.Err() != nil {
		return nil, r.Err()
	}
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return p, nil
}

// Hash returns SHA-256 over a domain separator and the canonical encoding:
// what a site's Hello answers with, so the aggregator knows every site
// agreed to the same bytes.
func (p *Params) Hash() ([32]byte, error) {
	b, err := p.MarshalBinary()
	if err != nil {
		return [32]byte{}, err
	}
	h := sha256.New()
	h.Write([]byte("dplearn/capefm/params/v3\x00"))
	h.Write(b)
	var out [32]byte
	copy(out[:], h.Sum(nil))
	return out, nil
}

// Clone returns a deep copy.
func (p *Params) Clone() Params {
	q := *p
	q.Sites = slices.Clone(p.Sites)
	q.Prior = slices.Clone(p.Prior)
	return q
}

// Roster builds a roster from site names and row counts: IDs 1..S in the
// order given, sorted by ID.
func Roster(names []string, n []int64) ([]SiteInfo, error) {
	if len(names) != len(n) {
		return nil, fmt.Errorf("capefm: %d site names and %d row counts", len(names), len(n))
	}
	out := make([]SiteInfo, len(names))
	for i := range names {
		out[i] = SiteInfo{Name: names[i], ID: uint32(i + 1), N: n[i]}
	}
	return out, nil
}

// MismatchError is a refusal of parameters that differ from what a party
// agreed to: Field names the parameter, Want what the refusing party
// expected, Got what it was offered.
type MismatchError struct {
	Site  string // the site concerned
	Field string
	Want  string
	Got   string
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("capefm: site %s: parameter %s: offered %s, want %s", e.Site, e.Field, e.Got, e.Want)
}

// fmtHash renders a fingerprint briefly.
func fmtHash(h [32]byte) string { return fmt.Sprintf("%x…", h[:6]) }

// equalFloat compares two float64 exactly (the encoding is exact).
func equalFloat(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }

// describeSites renders a roster for errors.
func describeSites(s []SiteInfo) string {
	var b strings.Builder
	for i, x := range s {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s(%d, N=%d)", x.Name, x.ID, x.N)
	}
	return b.String()
}
