package capefm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"sync"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/cape"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/secagg"
)

// Ledger is the site's privacy budget. A Site charges it once per attempt,
// with the attempt's per-site (ε, δ), before it hands out its release; if
// Charge fails the site releases nothing. ledger.Ledger fits behind a
// small adapter (its Charge takes a context and a ledger.Charge).
type Ledger interface {
	Charge(label string, epsilon, delta float64) error
}

// LedgerChecker is optionally implemented by a Ledger: CanCharge reports,
// without spending, whether (ε, δ) is still affordable. A Site asks it when
// it receives an Offer, so a site with too little budget refuses before any
// site has spent anything instead of failing at its release (which would
// abort an attempt in which other sites already spent theirs).
type LedgerChecker interface {
	CanCharge(epsilon, delta float64) error
}

// DefaultMaxAttempts is the number of attempts of one fit a site accepts
// when SiteConfig.MaxAttempts is 0.
const DefaultMaxAttempts = 3

// SiteConfig is what a site agreed to on its own side (its flags): it
// refuses an Offer whose Params differ.
type SiteConfig struct {
	// Name is the site's name (its certificate's name).
	Name      string
	Mechanism Mechanism
	Kind      regress.Kind
	// Schema is the fingerprint of the schema the site encodes its rows
	// with (schema.Fingerprint).
	Schema         [32]byte
	Epsilon, Delta float64
	// Split is the budget split of Gaussian FM (0 means 0.5).
	Split float64
	// NoiseRatio is the capeFM noise ratio R = Var ê / Var g the site
	// agrees to (0 means DefaultNoiseRatio); ignored by the baselines.
	NoiseRatio float64
	// MinColluders: the site refuses capeFM Params that assume fewer than
	// max(MinColluders, accounting.CAPEColluders(S), S_C of any earlier
	// attempt of the fit it accepted) colluding sites.
	MinColluders int
	// MinSites: the site refuses a roster of fewer sites (0 means 2).
	MinSites int
	// MaxAttempts: the site refuses attempt numbers above it (0 means
	// DefaultMaxAttempts).
	MaxAttempts int
	// Source draws the site's noise (noise.NewSecure(); a seeded source is
	// for tests and marks every report insecure).
	Source noise.Source
	// Ledger is charged before each release (required).
	Ledger Ledger
	// Signer signs this site's secure-aggregation keys and verifies the
	// other sites' (KeySigner): required for capeFM unless UnsignedKeys.
	Signer KeySigner
	// Declaration optionally holds the site's schema as Schema
	// fingerprints it (SchemaDeclaration): sent in the announcement so
	// that the aggregator can name the column and field of a mismatch.
	// NewSite checks that it hashes to Schema.
	Declaration []byte
	// AllowDeltaAboveOneOverN accepts offers whose δ is not below 1/N
	// for the roster's N (by default refused: accounting.CheckDeltaN). Only for
	// experiments that sweep δ on purpose (the seed's δ panels).
	AllowDeltaAboveOneOverN bool
	// Unit and MaxRows: the privacy unit the site bounded its rows by
	// (both zero for the row-level guarantee). The site's statistics must
	// be regress.UnitStats with the same column and K; the site then
	// announces its number of units and refuses Params with another unit
	// or K.
	Unit    string
	MaxRows int
	// UnsignedKeys runs capeFM without key signatures: the site neither
	// signs its keys nor checks the others', so a malicious aggregator can
	// substitute keys and read this site's zero-sum draw ê_s (KeySigner).
	// Only for runs where the aggregator is this same program (Run in
	// process) or for loopback tests without certificates (--insecure).
	UnsignedKeys bool
}

func (c *SiteConfig) noiseRatio() float64 {
	if c.NoiseRatio == 0 {
		return DefaultNoiseRatio
	}
	return c.NoiseRatio
}

func (c *SiteConfig) split() float64 {
	if c.Split == 0 {
		return 0.5
	}
	return c.Split
}

// Site is one site's state machine. It holds the site's validated
// statistics (and rows, for the baselines that need them) for the whole fit
// and runs one attempt at a time: an Offer for a new attempt abandons the
// current one. Feed it the aggregator's messages with Handle; each answer is
// the message to send back. A Site is safe for concurrent use (Handle calls
// are serialised).
//
// Single use. Every attempt draws fresh zero-sum noise (a new
// cape.ZeroSumSite, whose draw enters exactly one secure-aggregation
// session) and fresh local noise; a Site refuses an Offer for a session it
// has already seen or for an attempt number not above the last one, refuses
// a second SumBroadcast in an attempt, and releases at most once per
// attempt, after charging its Ledger.
type Site struct {
	cfg  SiteConfig
	data regress.Data
	n    int64
	d    int

	mu       sync.Mutex
	sessions map[[32]byte]bool
	last     uint32 // highest attempt number accepted
	att      *siteAttempt
	released []float64 // η of the capeFM attempts this site released in
	nrel     int       // releases sent, all mechanisms
	// frozenSC is the largest S_C of a capeFM attempt this site accepted
	// (−1: none yet), frozenAt that attempt: a later attempt assuming fewer
	// colluders is refused (issue 22 item 6: dropping a site must not lower
	// the protection against the same colluders).
	frozenSC int
	frozenAt uint32
}

type siteState int

const (
	awaitAgreed siteState = iota
	awaitKeyRoster
	awaitShareRelay
	awaitUnmask
	awaitSum
	siteDone
)

func (s siteState) String() string {
	return [...]string{"waiting for Agreed", "waiting for KeyRoster", "waiting for ShareRelay", "waiting for UnmaskRequest", "waiting for SumBroadcast", "done"}[s]
}

type siteAttempt struct {
	p     Params
	hash  [32]byte
	cal   *Calibration
	id    uint32
	state siteState
	zs    *cape.ZeroSumSite
	party *secagg.Party
	keys  *secagg.AdvertiseKeys // this site's advertisement
}

// NewSite validates the configuration and the site's data (item 23 of
// PRIVACY-NOTES: the whole table is checked before any protocol starts, so a
// bad record never becomes a visible, data-dependent abort): the statistics
// must be finite and within the bounds every schema-encoded table obeys
// (Σ‖x‖² ≤ N, |y| ≤ 1 or y ∈ {0, 1}), rows (if given) row by row.
func NewSite(cfg SiteConfig, data regress.Data) (*Site, error) {
	if !ValidName(cfg.Name) {
		return nil, fmt.Errorf("capefm: site name %q is not 1-64 letters, digits, '-', '_' or '.'", cfg.Name)
	}
	if !cfg.Mechanism.valid() {
		return nil, fmt.Errorf("capefm: site %s: unknown mechanism %q", cfg.Name, cfg.Mechanism)
	}
	if cfg.Kind != regress.Linear && cfg.Kind != regress.Logistic {
		return nil, fmt.Errorf("capefm: site %s: model must be linear or logistic, got %q", cfg.Name, cfg.Kind)
	}
	if cfg.Source == nil {
		return nil, fmt.Errorf("capefm: site %s: no noise source", cfg.Name)
	}
	if cfg.Ledger == nil {
		return nil, fmt.Errorf("capefm: site %s: no budget ledger", cfg.Name)
	}
	if cfg.Signer != nil && cfg.UnsignedKeys {
		return nil, fmt.Errorf("capefm: site %s: a key signer and unsigned keys: choose one", cfg.Name)
	}
	if cfg.Mechanism == CapeFM && cfg.Signer == nil && !cfg.UnsignedKeys {
		return nil, fmt.Errorf("capefm: site %s: no key signer: capeFM needs the site's certificate to sign its secure-aggregation keys (without it the aggregator can substitute keys and read the site's noise); UnsignedKeys only for in-process runs and loopback tests", cfg.Name)
	}
	if !(cfg.Epsilon > 0) || math.IsInf(cfg.Epsilon, 0) || !(cfg.Delta >= 0 && cfg.Delta < 1) {
		return nil, fmt.Errorf("capefm: site %s: invalid (ε, δ) = (%v, %v)", cfg.Name, cfg.Epsilon, cfg.Delta)
	}
	if sp := cfg.split(); !(sp > 0 && sp < 1) {
		return nil, fmt.Errorf("capefm: site %s: budget split must be in (0, 1), got %v", cfg.Name, cfg.Split)
	}
	if r := cfg.noiseRatio(); !(r >= MinNoiseRatio && r <= MaxNoiseRatio) {
		return nil, fmt.Errorf("capefm: site %s: noise ratio must be in [%g, %g], got %v", cfg.Name, MinNoiseRatio, MaxNoiseRatio, cfg.NoiseRatio)
	}
	if data.Stats == nil {
		return nil, fmt.Errorf("capefm: site %s: no statistics", cfg.Name)
	}
	n, err := siteCount(cfg, data)
	if err != nil {
		return nil, fmt.Errorf("capefm: site %s: %w", cfg.Name, err)
	}
	if err := ValidateData(cfg.Kind, data); err != nil {
		return nil, fmt.Errorf("capefm: site %s: %w", cfg.Name, err)
	}
	if mech := cfg.Mechanism.coefficientBaseline(); mech != "" {
		est, err := regress.New(mech)
		if err != nil {
			return nil, err
		}
		if est.NeedsRows(cfg.Kind) && data.Rows == nil {
			return nil, fmt.Errorf("capefm: site %s: mechanism %s needs the encoded rows", cfg.Name, cfg.Mechanism)
		}
	}
	if len(cfg.Declaration) > 0 {
		if fp, err := declarationFingerprint(cfg.Declaration); err != nil || fp != cfg.Schema {
			return nil, fmt.Errorf("capefm: site %s: the schema declaration does not hash to the schema fingerprint %s (SchemaDeclaration of the same schema)", cfg.Name, fmtHash(cfg.Schema))
		}
	}
	return &Site{cfg: cfg, data: data, n: n, d: data.Stats.K() - 1,
		sessions: make(map[[32]byte]bool), frozenSC: -1}, nil
}

// schemaField names the column and field behind a schema fingerprint
// mismatch from the offer's declaration (verified against the offered
// fingerprint) and the site's own; without both it keeps the fingerprints.
func (s *Site) schemaField(offered []byte, offeredFP [32]byte, me *MismatchError) (field, want, got string) {
	field, want, got = me.Field, me.Want, me.Got
	if len(offered) == 0 || len(s.cfg.Declaration) == 0 {
		return
	}
	theirs, err := schema.Parse(offered)
	if err != nil {
		return
	}
	if fp, err := schema.Fingerprint(theirs); err != nil || fp != offeredFP {
		return
	}
	ours, err := schema.Parse(s.cfg.Declaration)
	if err != nil {
		return
	}
	d := schema.Diff(ours, theirs)
	if d == nil {
		return
	}
	where := "schema"
	if d.Column != "" {
		where = fmt.Sprintf("schema column %q", d.Column)
	}
	return fmt.Sprintf("%s %s (fingerprint %s, offered %s)", where, d.Field, me.Want, me.Got), d.A, d.B
}

// siteCount returns the site's public count N_s: its rows, or with a
// privacy unit its number of units U_s, after checking that the statistics
// were bounded to cfg.MaxRows rows per unit of cfg.Unit (regress.UnitStats)
// exactly when the configuration says so.
func siteCount(cfg SiteConfig, data regress.Data) (int64, error) {
	u, isUnit := regress.UnitOf(data.Stats)
	switch {
	case cfg.MaxRows < 0 || cfg.MaxRows > MaxRowsPerUnit:
		return 0, fmt.Errorf("max rows per unit K = %d, want 1 to %d", cfg.MaxRows, MaxRowsPerUnit)
	case (cfg.MaxRows == 0) != (cfg.Unit == ""):
		return 0, fmt.Errorf("privacy unit %q with max rows per unit K = %d: give both or neither", cfg.Unit, cfg.MaxRows)
	case cfg.MaxRows > 0 && !cfg.Mechanism.unitMechanism():
		return 0, fmt.Errorf("mechanism %s has no sensitivity derived for a privacy unit of K rows; use capefm, gaussian-fm-local or fm-local", cfg.Mechanism)
	case cfg.MaxRows > 0 && (!isUnit || u.Column != cfg.Unit || u.MaxRows != cfg.MaxRows):
		return 0, fmt.Errorf("privacy unit %q, K = %d: the statistics are not bounded to K rows per unit of that column (regress.UnitStats over dataset.UnitMoments)", cfg.Unit, cfg.MaxRows)
	case cfg.MaxRows == 0 && isUnit:
		return 0, fmt.Errorf("the statistics are bounded per unit of %q but the site has no privacy unit configured", u.Column)
	case isUnit && data.Rows != nil:
		return 0, errors.New("a privacy unit with encoded rows: the unit-level mechanisms read only the statistics")
	case isUnit:
		return u.Units, nil
	}
	return data.Stats.N(), nil
}

// encTol is the tolerance on the encoding bounds (as regress's row checks).
const encTol = 1e-9

// ValidateData checks a site's statistics (and rows, if any) against the
// bounds of the schema encoding: finite, N ≥ 1, K ≥ 2, Σ‖x‖² ≤ N, and the
// target in [−1, 1] (linear) or {0, 1} (logistic). Rows are checked one by
// one (‖x‖² ≤ 1, y in range) and must number N. The error names the
// statistic or the row; it is for the data owner's console only.
func ValidateData(kind regress.Kind, data regress.Data) error {
	st := data.Stats
	if st == nil {
		return errors.New("no statistics")
	}
	if e, ok := st.(interface{ Err() error }); ok && e.Err() != nil {
		return fmt.Errorf("statistics: %w", e.Err())
	}
	k, n := st.K(), st.N()
	if k < 2 {
		return fmt.Errorf("statistics have %d columns; need at least one feature and the target", k)
	}
	if k-1 > MaxFeatures {
		return fmt.Errorf("%d features, limit %d", k-1, MaxFeatures)
	}
	if n < 1 {
		return errors.New("the table is empty")
	}
	N := float64(n)
	tol := N * encTol
	for i := 0; i < k; i++ {
		if v := st.Sum(i); math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > N+tol {
			return fmt.Errorf("statistics: Σz[%d] = %v is not finite or beyond the encoding bound N = %d", i, v, n)
		}
		for j := i; j < k; j++ {
			v := st.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) || math.Abs(v) > N+tol {
				return fmt.Errorf("statistics: Σz[%d]z[%d] = %v is not finite or beyond the encoding bound N = %d", i, j, v, n)
			}
		}
		if st.At(i, i) < 0 {
			return fmt.Errorf("statistics: Σz[%d]² = %v is negative", i, st.At(i, i))
		}
	}
	t := k - 1
	tr := 0.0
	for i := 0; i < t; i++ {
		tr += st.At(i, i)
	}
	if tr > N+tol {
		return fmt.Errorf("statistics: Σ‖x‖² = %v exceeds N = %d: rows outside the unit ball (not schema-encoded?)", tr, n)
	}
	switch kind {
	case regress.Linear:
		if st.At(t, t) > N+tol {
			return fmt.Errorf("statistics: Σy² = %v exceeds N = %d: targets outside [−1, 1]", st.At(t, t), n)
		}
	case regress.Logistic:
		if s := st.Sum(t); s < -tol || s > N+tol || math.Abs(st.At(t, t)-s) > tol+1e-12*N {
			return fmt.Errorf("statistics: the target is not 0/1 (Σy = %v, Σy² = %v)", s, st.At(t, t))
		}
	default:
		return fmt.Errorf("model must be linear or logistic, got %q", kind)
	}
	if data.Rows == nil {
		return nil
	}
	if int64(len(data.Rows)) != n*int64(k) {
		return fmt.Errorf("rows: %d values for N = %d rows of %d columns", len(data.Rows), n, k)
	}
	for r := int64(0); r < n; r++ {
		row := data.Rows[r*int64(k) : (r+1)*int64(k)]
		ss := 0.0
		for j, v := range row {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("row %d column %d: %v", r+1, j, v)
			}
			if j < t {
				ss += v * v
			}
		}
		if ss > 1+encTol {
			return fmt.Errorf("row %d: ‖x‖² = %v > 1 (not schema-encoded?)", r+1, ss)
		}
		y := row[t]
		if kind == regress.Linear && math.Abs(y) > 1+encTol {
			return fmt.Errorf("row %d: target %v outside [−1, 1]", r+1, y)
		}
		if kind == regress.Logistic && y != 0 && y != 1 {
			return fmt.Errorf("row %d: target %v is not 0 or 1", r+1, y)
		}
	}
	return nil
}

// Name returns the site's name.
func (s *Site) Name() string { return s.cfg.Name }

// N returns the site's public count: its number of rows, or of units
// with a privacy unit.
func (s *Site) N() int64 { return s.n }

// D returns the site's number of encoded features.
func (s *Site) D() int { return s.d }

// Releases returns how many releases the site has sent (all attempts).
func (s *Site) Releases() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.nrel
}

// Check compares offered Params with what the site agreed to (and with
// the earlier attempts of the fit it accepted) and returns a
// *MismatchError naming the first field that differs, or nil.
func (s *Site) Check(p *Params) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.check(p)
}

// check is Check with s.mu held.
func (s *Site) check(p *Params) error {
	mis := func(field, want, got string) error {
		return &MismatchError{Site: s.cfg.Name, Field: field, Want: want, Got: got}
	}
	c := &s.cfg
	if p.Mechanism != c.Mechanism {
		return mis("mechanism", string(c.Mechanism), string(p.Mechanism))
	}
	if p.Kind != c.Kind {
		return mis("model", string(c.Kind), string(p.Kind))
	}
	if p.Schema != c.Schema {
		return mis("schema fingerprint", fmtHash(c.Schema), fmtHash(p.Schema))
	}
	if p.D != s.d {
		return mis("features D", strconv.Itoa(s.d), strconv.Itoa(p.D))
	}
	if !equalFloat(p.Epsilon, c.Epsilon) {
		return mis("epsilon", fmt.Sprint(c.Epsilon), fmt.Sprint(p.Epsilon))
	}
	if !equalFloat(p.Delta, c.Delta) {
		return mis("delta", fmt.Sprint(c.Delta), fmt.Sprint(p.Delta))
	}
	if !equalFloat(p.Split, c.split()) {
		return mis("budget split", fmt.Sprint(c.split()), fmt.Sprint(p.Split))
	}
	if p.Unit != c.Unit {
		return mis("privacy unit", strconv.Quote(c.Unit), strconv.Quote(p.Unit))
	}
	if p.MaxRows != c.MaxRows {
		return mis("max rows per unit K", strconv.Itoa(c.MaxRows), strconv.Itoa(p.MaxRows))
	}
	me, ok := p.SiteByName(c.Name)
	if !ok {
		return mis("sites", "a roster listing "+c.Name, describeSites(p.Sites))
	}
	if me.N != s.n {
		return mis(p.countNoun()+" N of "+c.Name, strconv.FormatInt(s.n, 10), strconv.FormatInt(me.N, 10))
	}
	// δ against the pooled N (units with a privacy unit): the one rule of
	// every front end (accounting.CheckDeltaN). A guarantee with δ ≥ 1/N permits
	// publishing a whole record (person) with probability δ; the site
	// refuses to take part in one. Only the aggregator's roster knows N, so
	// the check is made here, when the roster is offered.
	if err := accounting.CheckDeltaN(p.Delta, p.N()); err != nil && !c.AllowDeltaAboveOneOverN {
		return mis("delta", fmt.Sprintf("below 1/N = %g for N = %d %s in all sites (δ ≥ 1/N permits publishing a whole record with probability δ; e.g. %g)",
			1/float64(p.N()), p.N(), p.countNoun(), accounting.SuggestDelta(p.N())), fmt.Sprint(p.Delta))
	}
	minSites := max(c.MinSites, 2)
	if len(p.Sites) < minSites {
		return mis("number of sites", fmt.Sprintf("≥ %d", minSites), strconv.Itoa(len(p.Sites)))
	}
	if p.MinSites < minSites {
		return mis("minimum sites", fmt.Sprintf("≥ %d", minSites), strconv.Itoa(p.MinSites))
	}
	if p.Mechanism == CapeFM {
		if !equalFloat(p.NoiseRatio, c.noiseRatio()) {
			return mis("noise ratio R", fmt.Sprint(c.noiseRatio()), fmt.Sprint(p.NoiseRatio))
		}
		if want := max(c.MinColluders, accounting.CAPEColluders(len(p.Sites))); p.Colluders < want {
			return mis("colluders S_C", fmt.Sprintf("≥ %d", want), strconv.Itoa(p.Colluders))
		}
		if s.frozenSC >= 0 && p.Colluders < s.frozenSC {
			return mis("colluders S_C", fmt.Sprintf("≥ %d (fixed when this site accepted attempt %d; a later attempt may not assume fewer colluders)", s.frozenSC, s.frozenAt), strconv.Itoa(p.Colluders))
		}
	}
	maxAtt := c.MaxAttempts
	if maxAtt == 0 {
		maxAtt = DefaultMaxAttempts
	}
	if int(p.Attempt) > maxAtt {
		return mis("attempt", fmt.Sprintf("≤ %d", maxAtt), strconv.Itoa(int(p.Attempt)))
	}
	// Every capeFM release this site made in this fit must be composed.
	rest := slices.Clone(p.Prior)
	for _, e := range s.released {
		i := slices.IndexFunc(rest, func(x float64) bool { return x >= e })
		if i < 0 {
			return mis("prior releases", fmt.Sprintf("a list covering this site's earlier releases (η = %v)", s.released), fmt.Sprint(p.Prior))
		}
		rest = slices.Delete(rest, i, i+1)
	}
	return nil
}

// Handle processes one message from the aggregator and returns the
// message to send back. For an Offer it returns a *Hello, or a *Refuse
// together with the error explaining it (a *MismatchError when the Params
// differ from the site's configuration). Every other error means the
// message was refused and nothing is sent; the site's state is unchanged
// except where noted (a SumBroadcast ends the attempt whatever happens).
func (s *Site) Handle(ctx context.Context, m Message) (Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if m == nil {
		return nil, fmt.Errorf("capefm: site %s: nil message", s.cfg.Name)
	}
	if m.Upstream() {
		return nil, fmt.Errorf("capefm: site %s: received a site-to-aggregator message (%s)", s.cfg.Name, m.Type())
	}
	if o, ok := m.(*Offer); ok {
		return s.offer(o)
	}
	a := s.att
	if a == nil {
		return nil, fmt.Errorf("capefm: site %s: %s outside any attempt", s.cfg.Name, m.Type())
	}
	if m.SessionID() != a.p.Session {
		return nil, fmt.Errorf("capefm: site %s: %s for another session than attempt %d's (a replay or a straggler)", s.cfg.Name, m.Type(), a.p.Attempt)
	}
	if to := m.Party(); to != 0 && to != a.id {
		return nil, fmt.Errorf("capefm: site %s: %s addressed to site %d", s.cfg.Name, m.Type(), to)
	}
	errf := func(format string, args ...any) error {
		return fmt.Errorf("capefm: site %s: attempt %d: round %s: %s", s.cfg.Name, a.p.Attempt, m.Round(), fmt.Sprintf(format, args...))
	}
	expect := func(st siteState) error {
		if a.state != st {
			return errf("unexpected %s while %s", m.Type(), a.state)
		}
		return nil
	}
	switch x := m.(type) {
	case *Agreed:
		if err := expect(awaitAgreed); err != nil {
			return nil, err
		}
		if x.ParamsHash != a.hash {
			return nil, errf("the aggregator reports agreement on other parameters (hash %s, ours %s)", fmtHash(x.ParamsHash), fmtHash(a.hash))
		}
		if !slices.Equal(x.Sites, a.p.IDs()) {
			return nil, errf("agreement lists sites %v, the parameters %v", x.Sites, a.p.IDs())
		}
		keys, err := a.party.AdvertiseKeys()
		if err != nil {
			return nil, err
		}
		auth, err := s.signKeys(a, keys)
		if err != nil {
			return nil, err
		}
		a.keys, a.state = keys, awaitKeyRoster
		return &SecAgg{Msg: keys, Auth: auth}, nil
	case *SecAgg:
		var (
			out  secagg.Message
			err  error
			next siteState
		)
		switch y := x.Msg.(type) {
		case *secagg.KeyRoster:
			if err := expect(awaitKeyRoster); err != nil {
				return nil, err
			}
			if err := s.checkRoster(a, y, x.Auth); err != nil {
				a.state = siteDone // the attempt is abandoned: no key is derived from this roster
				return nil, fmt.Errorf("capefm: site %s: attempt %d: round %s: %w", s.cfg.Name, a.p.Attempt, m.Round(), err)
			}
			var sk *secagg.ShareKeys
			sk, err = a.party.ShareKeys(y)
			out, next = sk, awaitShareRelay
		case *secagg.ShareRelay:
			if err := expect(awaitShareRelay); err != nil {
				return nil, err
			}
			var mi *secagg.MaskedInput
			mi, err = a.party.MaskInput(y)
			out, next = mi, awaitUnmask
		case *secagg.UnmaskRequest:
			if err := expect(awaitUnmask); err != nil {
				return nil, err
			}
			var ur *secagg.UnmaskResponse
			ur, err = a.party.Unmask(y)
			out, next = ur, awaitSum
		default:
			return nil, errf("unexpected secure-aggregation message %s", x.Type())
		}
		if err != nil {
			return nil, err
		}
		a.state = next
		return &SecAgg{Msg: out}, nil
	case *SumBroadcast:
		if err := expect(awaitSum); err != nil {
			return nil, err
		}
		a.state = siteDone // one release per attempt, whatever happens below
		return s.release(ctx, a, x)
	}
	return nil, errf("unexpected message %s", m.Type())
}

// offer starts a new attempt (or refuses).
func (s *Site) offer(o *Offer) (Message, error) {
	p := o.Params.Clone()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("capefm: site %s: offer: %w", s.cfg.Name, err)
	}
	if s.sessions[p.Session] {
		return nil, fmt.Errorf("capefm: site %s: offer for session %x… already seen: replay refused", s.cfg.Name, p.Session[:6])
	}
	if p.Attempt <= s.last {
		return nil, fmt.Errorf("capefm: site %s: offer for attempt %d after attempt %d: stale offer refused", s.cfg.Name, p.Attempt, s.last)
	}
	s.sessions[p.Session] = true
	refuse := func(err error) (Message, error) {
		id := uint32(0)
		if me, ok := p.SiteByName(s.cfg.Name); ok {
			id = me.ID
		}
		return &Refuse{Session: p.Session, From: id, Name: s.cfg.Name, Reason: err.Error()}, err
	}
	if err := s.check(&p); err != nil {
		var me *MismatchError
		if errors.As(err, &me) && me.Field == "schema fingerprint" {
			me.Field, me.Want, me.Got = s.schemaField(o.Declaration, p.Schema, me)
		}
		return refuse(err)
	}
	cal, err := p.Calibration()
	if err != nil {
		return refuse(fmt.Errorf("capefm: site %s: %w", s.cfg.Name, err))
	}
	eps, delta := s.charge(&p)
	if lc, ok := s.cfg.Ledger.(LedgerChecker); ok {
		if err := lc.CanCharge(eps, delta); err != nil {
			return refuse(fmt.Errorf("capefm: site %s: budget: %w", s.cfg.Name, err))
		}
	}
	hash, err := p.Hash()
	if err != nil {
		return nil, err
	}
	me, _ := p.SiteByName(s.cfg.Name)
	// A new attempt abandons the previous one: its noise is dropped here
	// and can never be used again (cape and secagg make draws single use).
	s.att = nil
	s.last = p.Attempt
	if p.Mechanism == CapeFM && p.Colluders > s.frozenSC {
		s.frozenSC, s.frozenAt = p.Colluders, p.Attempt
	}
	a := &siteAttempt{p: p, hash: hash, cal: cal, id: me.ID}
	if p.Mechanism == CapeFM {
		zs, err := cape.NewZeroSumSite(cal.ZeroSum, me.ID, s.cfg.Source)
		if err != nil {
			return nil, fmt.Errorf("capefm: site %s: %w", s.cfg.Name, err)
		}
		cfg, err := cape.SecAggConfig(cal.ZeroSum, p.Session[:])
		if err != nil {
			return nil, fmt.Errorf("capefm: site %s: %w", s.cfg.Name, err)
		}
		party, err := zs.NewParty(cfg)
		if err != nil {
			return nil, fmt.Errorf("capefm: site %s: %w", s.cfg.Name, err)
		}
		a.zs, a.party, a.state = zs, party, awaitAgreed
	} else {
		a.state = awaitSum
	}
	s.att = a
	return &Hello{Session: p.Session, From: me.ID, Name: s.cfg.Name, Schema: s.cfg.Schema, N: s.n,
		ParamsHash: hash, Secure: s.cfg.Source.Secure()}, nil
}

// charge returns the (ε, δ) a release in an attempt with these Params
// costs the site: the target (ε, δ) (δ = 0 for the pure-ε baseline).
func (s *Site) charge(p *Params) (float64, float64) {
	if p.Mechanism.pureEpsilon() {
		return p.Epsilon, 0
	}
	return p.Epsilon, p.Delta
}

// pooledStats presents a site's statistics with the pooled N, so that
// regress.Objective returns Σ_{n∈s} λ_n / N = (N_s/N)·Λ_s.
type pooledStats struct {
	regress.Stats
	n int64
}

func (p pooledStats) N() int64 { return p.n }

// testHookRelease, if set (tests only), receives a capeFM site's release
// decomposed in 2^−FracBits units: the snapped whitened statistic, the
// zero-sum share (already shifted) and the local noise.
var testHookRelease func(site uint32, snapped, e, g []int64)

// release computes the site's one release of the attempt, charges the
// ledger and returns it.
func (s *Site) release(ctx context.Context, a *siteAttempt, b *SumBroadcast) (Message, error) {
	p, cal := &a.p, a.cal
	errf := func(format string, args ...any) error {
		return fmt.Errorf("capefm: site %s: attempt %d: release: %s", s.cfg.Name, p.Attempt, fmt.Sprintf(format, args...))
	}
	out := &Release{Session: p.Session, From: a.id}
	var eta float64
	switch p.Mechanism {
	case CapeFM:
		// e_s; refuses a sum over fewer than all sites (cape.ErrNoiseDoesNotCancel).
		share, err := a.zs.Finish(b.Sum, b.Included)
		if err != nil {
			return nil, err
		}
		fixed, err := s.capeRelease(p, cal, a.id, share)
		if err != nil {
			return nil, errf("%v", err)
		}
		out.Fixed, eta = fixed, cal.Eta
	case GaussianFMLocal:
		if len(b.Sum) != 0 || !slices.Equal(b.Included, p.IDs()) {
			return nil, errf("the release request must carry no sum and list every site")
		}
		q, err := regress.Objective(p.Kind, s.data.Stats)
		if err != nil {
			return nil, errf("%v", err)
		}
		i := slices.Index(p.IDs(), a.id)
		if err := noise.AddGaussian(s.cfg.Source, q.Lambda1, cal.SiteTau1[i]); err != nil {
			return nil, errf("Λ1 noise: %v", err)
		}
		if err := noise.AddGaussian(s.cfg.Source, q.Upper, cal.SiteTau2[i]); err != nil {
			return nil, errf("Λ2 noise: %v", err)
		}
		out.Values = append(q.Lambda1, q.Upper...)
	default:
		if len(b.Sum) != 0 || !slices.Equal(b.Included, p.IDs()) {
			return nil, errf("the release request must carry no sum and list every site")
		}
		est, err := regress.New(p.Mechanism.coefficientBaseline())
		if err != nil {
			return nil, errf("%v", err)
		}
		res, err := est.Fit(ctx, s.data, regress.Config{Kind: p.Kind, Epsilon: p.Epsilon, Delta: p.Delta,
			Lambda: -1, Split: p.Split, Source: s.cfg.Source})
		if err != nil {
			return nil, errf("%v", err)
		}
		out.Values = res.Coef
	}
	eps, delta := s.charge(p)
	label := fmt.Sprintf("%s %s attempt %d session %x", Protocol, p.Mechanism, p.Attempt, p.Session[:8])
	if err := s.cfg.Ledger.Charge(label, eps, delta); err != nil {
		clear(out.Fixed)
		clear(out.Values)
		return nil, errf("budget ledger refused the charge (%v); nothing released", err)
	}
	s.nrel++
	if p.Mechanism == CapeFM {
		s.released = append(s.released, eta)
	}
	return out, nil
}

// capeRelease returns, in units of 2^−F (F = cal.FracBits), the whitened
// release snap_G((N_s/N)·Λ_s / c) + g_s + e_s, where snap_G rounds to the
// grid G = noise.GaussianGrid(τ_g, L) and g_s is AddGaussian's discrete
// Gaussian on that grid: together exactly noise.AddGaussian of the
// statistic, to which the zero-sum share is added in integers.
func (s *Site) capeRelease(p *Params, cal *Calibration, id uint32, share *cape.ZeroSumShare) ([]int64, error) {
	if len(share.Fixed) != cal.L || share.FracBits != cal.EFracBits {
		return nil, fmt.Errorf("zero-sum share has %d coordinates at 2^-%d, want %d at 2^-%d", len(share.Fixed), share.FracBits, cal.L, cal.EFracBits)
	}
	// Σ_{rows kept at s} λ / (N·K): with a privacy unit the divisor is U·K
	// (the sum over at most K rows per unit), the sensitivity that of U
	// units (whitening, siteSensitivities); K = 1 without.
	q, err := regress.Objective(p.Kind, pooledStats{Stats: s.data.Stats, n: cal.N * p.RowsPerUnit()})
	if err != nil {
		return nil, err
	}
	v := make([]float64, cal.L)
	for i, x := range q.Lambda1 {
		v[i] = x / cal.C1
	}
	for i, x := range q.Upper {
		v[cal.L1+i] = x / cal.C2
	}
	g := make([]float64, cal.L)
	if err := noise.AddGaussian(s.cfg.Source, g, cal.TauG); err != nil {
		return nil, fmt.Errorf("local noise: %v", err)
	}
	F := int(cal.FracBits)
	unit := math.Ldexp(cal.Grid, F) // grid in units: 1, or G ≥ 1 when F = 0
	shift := cal.FracBits - cal.EFracBits
	out := make([]int64, cal.L)
	var snapped, es, gs []int64
	if testHookRelease != nil {
		snapped, es, gs = make([]int64, cal.L), make([]int64, cal.L), make([]int64, cal.L)
	}
	for i := range v {
		k := math.RoundToEven(v[i] / cal.Grid) // exact division by a power of two
		x := k * unit
		z := math.Ldexp(g[i], F)
		if math.Abs(x) > 1<<52 || math.Abs(z) > 1<<52 {
			return nil, fmt.Errorf("coordinate %d leaves the fixed-point range", i)
		}
		e := share.Fixed[i]
		if e > math.MaxInt64>>shift || e < math.MinInt64>>shift {
			return nil, fmt.Errorf("zero-sum share coordinate %d leaves the fixed-point range", i)
		}
		e <<= shift
		r, ok := addInt64(int64(x)+int64(z), e)
		if !ok {
			return nil, fmt.Errorf("coordinate %d overflows", i)
		}
		out[i] = r
		if testHookRelease != nil {
			snapped[i], es[i], gs[i] = int64(x), e, int64(z)
		}
	}
	if testHookRelease != nil {
		testHookRelease(id, snapped, es, gs)
	}
	return out, nil
}

// addInt64 returns a + b and whether it did not overflow.
func addInt64(a, b int64) (int64, bool) {
	c := a + b
	return c, (c > a) == (b > 0)
}
