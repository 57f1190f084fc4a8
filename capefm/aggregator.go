package capefm

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/dplearn/dplearn/cape"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/report"
	"github.com/dplearn/dplearn/secagg"
)

// AbortError reports an attempt that could not complete because sites did
// not answer. Before the zero-sum noise is fixed (NoiseFixed false) no site
// has released anything: a new attempt may start without the missing sites,
// with τ recalibrated for the new S and fresh noise. Once it is fixed (the
// SumBroadcast was sent), a missing release means the noise does not cancel:
// the aggregator never publishes, and the releases that did arrive count as
// spent by their sites.
type AbortError struct {
	Attempt    uint32
	Round      Round
	Missing    []string // sites that did not answer (or were lost in earlier rounds), sorted
	NoiseFixed bool
	Cause      error
}

func (e *AbortError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "capefm: attempt %d aborted in round %s: site(s) %s did not answer", e.Attempt, e.Round, strings.Join(e.Missing, ", "))
	if e.NoiseFixed {
		b.WriteString("; the zero-sum noise was already fixed, so without their releases it does not cancel: nothing is published, and the releases that arrived count as spent")
	} else {
		b.WriteString("; nothing was released: a new attempt may start without them, with τ recalibrated and fresh noise")
	}
	if e.Cause != nil {
		fmt.Fprintf(&b, " (%v)", e.Cause)
	}
	return b.String()
}

func (e *AbortError) Unwrap() error { return e.Cause }

// Recoverable reports whether no release was made in the attempt, so a new
// attempt needs no composition.
func (e *AbortError) Recoverable() bool { return !e.NoiseFixed }

// RefusedError reports a site that refused the offered parameters, or whose
// Hello disagrees with them. It ends the fit: the configurations differ.
type RefusedError struct {
	Site   string
	Reason string
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("capefm: site %s refused the parameters: %s", e.Site, e.Reason)
}

// Result is the outcome of a completed attempt.
type Result struct {
	// Coef is the model in the encoded feature space.
	Coef []float64
	// Objective is the released (noisy) average objective Λ1, Λ2 before
	// post-processing (Λ0 = 0: not released); nil for the coefficient
	// baselines.
	Objective *regress.Quadratic
	// PostProcess is the post-processing the aggregator solved Objective
	// with (Coef = Objective.Minimize(PostProcess); objectivePostProcess):
	// central gaussian-fm's rule for the combined objective's noise. It is
	// the zero value for the coefficient baselines.
	PostProcess regress.PostProcess
	// Lambda is the ridge added in post-processing (PostProcess.Lambda: 0
	// for a linear objective, which is clipped at PostProcess.Floor
	// instead); Trimmed counts the eigen-directions spectral trimming
	// removed (always 0 under clipping, whose floor is above the trimming
	// floor). Trimmed is a function of released values (post-processing),
	// kept for the console and out of the report, which holds no figure
	// that depends on the data.
	Lambda  float64
	Trimmed int
	// Privacy is the report attached to the model.
	Privacy report.Privacy
	// Params and Calibration of the attempt that produced the model.
	Params      Params
	Calibration *Calibration
}

// Aggregator is the aggregator's state machine for one attempt. Send
// Offer() to every site of the roster, feed it the sites' messages with
// Receive, and call Close when every expected site has answered or the
// round's deadline has passed: it returns the messages to send next
// (Party() = 0: to every site of the attempt) or an error (*AbortError,
// *RefusedError). After the Release round, Close combines the releases and
// Result returns the model. An Aggregator is not safe for concurrent use.
type Aggregator struct {
	p     Params
	hash  [32]byte
	cal   *Calibration
	state Round
	names map[uint32]string

	hellos   map[uint32]*Hello
	srv      *secagg.Server
	keyAuth  map[uint32]KeyAuth // signatures of the advertised keys, relayed unchanged
	verifier KeySigner          // if set, checks them first (ServeOptions.KeyVerifier)
	decl     []byte             // the fit's schema declaration for the Offer (ServeOptions.Declaration)
	sum      []uint64
	included []uint32
	fixed    bool // the noise is fixed (SumBroadcast sent)
	acc      []int64
	relF     map[uint32][]float64 // float releases (baselines), summed in roster order
	arrived  map[uint32]bool
	failed   error
	result   *Result
}

// NewAggregator starts an attempt with calibrated Params (Calibrate).
func NewAggregator(p Params) (*Aggregator, error) {
	p = p.Clone()
	cal, err := p.Calibration()
	if err != nil {
		return nil, err
	}
	hash, err := p.Hash()
	if err != nil {
		return nil, err
	}
	names := make(map[uint32]string, len(p.Sites))
	for _, s := range p.Sites {
		names[s.ID] = s.Name
	}
	return &Aggregator{p: p, hash: hash, cal: cal, state: RoundHello, names: names,
		hellos: make(map[uint32]*Hello), arrived: make(map[uint32]bool)}, nil
}

// Params returns the attempt's parameters.
func (a *Aggregator) Params() Params { return a.p.Clone() }

// Calibration returns the attempt's calibration.
func (a *Aggregator) Calibration() *Calibration { return a.cal }

// Round returns the round the aggregator is collecting messages for.
func (a *Aggregator) Round() Round { return a.state }

// NoiseFixed reports whether the SumBroadcast was sent: from then on the
// attempt's releases count as spent, and a missing one aborts it.
func (a *Aggregator) NoiseFixed() bool { return a.fixed }

// Name returns the name of site id.
func (a *Aggregator) Name(id uint32) string { return a.names[id] }

// Offer returns the message that opens the attempt (to every site).
func (a *Aggregator) Offer() *Offer {
	return &Offer{Params: a.p.Clone(), Declaration: slices.Clone(a.decl)}
}

// Expected returns the sites that may send a message in the current round.
func (a *Aggregator) Expected() []uint32 {
	switch a.state {
	case RoundHello:
		return a.p.IDs()
	case RoundAdvertiseKeys, RoundShareKeys, RoundMaskedInput, RoundUnmasking:
		return a.srv.Expected()
	case RoundRelease:
		return slices.Clone(a.included)
	}
	return nil
}

// Pending returns the expected sites that have not answered yet.
func (a *Aggregator) Pending() []uint32 {
	switch a.state {
	case RoundHello:
		var out []uint32
		for _, id := range a.p.IDs() {
			if a.hellos[id] == nil {
				out = append(out, id)
			}
		}
		return out
	case RoundAdvertiseKeys, RoundShareKeys, RoundMaskedInput, RoundUnmasking:
		return a.srv.Pending()
	case RoundRelease:
		var out []uint32
		for _, id := range a.included {
			if !a.arrived[id] {
				out = append(out, id)
			}
		}
		return out
	}
	return nil
}

func (a *Aggregator) errorf(m Message, format string, args ...any) error {
	return fmt.Errorf("capefm: aggregator: attempt %d: round %s: %s from site %d (%s): %s", a.p.Attempt, a.state, m.Type(), m.Party(), a.names[m.Party()], fmt.Sprintf(format, args...))
}

// Receive validates and records a site's message. It refuses, naming the
// round and the site, a message of another session (a replay from an
// earlier attempt), of another round, from a site outside the round's set,
// a duplicate, and any field of the wrong length. A Refuse, or a Hello whose
// name, schema fingerprint, N or parameter hash differs from the Params,
// fails the attempt (*RefusedError).
func (a *Aggregator) Receive(m Message) error {
	if m == nil {
		return errors.New("capefm: aggregator: nil message")
	}
	if a.failed != nil {
		return fmt.Errorf("capefm: aggregator: attempt already failed: %w", a.failed)
	}
	if !m.Upstream() {
		return a.errorf(m, "an aggregator-to-site message")
	}
	if m.SessionID() != a.p.Session {
		return a.errorf(m, "message for another session (a replay or a straggler from an earlier attempt)")
	}
	if m.Round() != a.state {
		return a.errorf(m, "message for round %s", m.Round())
	}
	from := m.Party()
	if !slices.Contains(a.Expected(), from) {
		return a.errorf(m, "site is not among the sites of round %s", a.state)
	}
	switch x := m.(type) {
	case *Hello:
		return a.receiveHello(x)
	case *Refuse:
		if x.Name != a.names[from] {
			return a.errorf(m, "refusal names site %q", x.Name)
		}
		a.failed = &RefusedError{Site: x.Name, Reason: x.Reason}
		return a.failed
	case *SecAgg:
		if a.srv == nil {
			return a.errorf(m, "no secure aggregation in mechanism %s", a.p.Mechanism)
		}
		if k, ok := x.Msg.(*secagg.AdvertiseKeys); ok && a.verifier != nil {
			var auth KeyAuth
			if len(x.Auth) == 1 {
				auth = x.Auth[0]
			}
			if err := verifyKeys(a.verifier, &a.p, a.hash, a.names[k.From], k, auth); err != nil {
				return fmt.Errorf("capefm: aggregator: attempt %d: round %s: %w: refused, the site counts as missing", a.p.Attempt, a.state, err)
			}
		}
		if err := a.srv.Receive(x.Msg); err != nil {
			return err
		}
		if k, ok := x.Msg.(*secagg.AdvertiseKeys); ok && len(x.Auth) == 1 {
			if a.keyAuth == nil {
				a.keyAuth = make(map[uint32]KeyAuth)
			}
			a.keyAuth[k.From] = x.Auth[0]
		}
		return nil
	case *Release:
		return a.receiveRelease(x)
	}
	return a.errorf(m, "unexpected message type")
}

func (a *Aggregator) receiveHello(h *Hello) error {
	if a.hellos[h.From] != nil {
		return a.errorf(h, "duplicate message")
	}
	want, _ := a.p.Site(h.From)
	mis := func(field, w, g string) error {
		a.failed = &RefusedError{Site: want.Name, Reason: (&MismatchError{Site: want.Name, Field: field, Want: w, Got: g}).Error()}
		return a.failed
	}
	switch {
	case h.Name != want.Name:
		return mis("name", want.Name, h.Name)
	case h.Schema != a.p.Schema:
		return mis("schema fingerprint", fmtHash(a.p.Schema), fmtHash(h.Schema))
	case h.N != want.N:
		return mis(a.p.countNoun()+" N", fmt.Sprint(want.N), fmt.Sprint(h.N))
	case h.ParamsHash != a.hash:
		return mis("parameters hash", fmtHash(a.hash), fmtHash(h.ParamsHash))
	}
	c := *h
	a.hellos[h.From] = &c
	return nil
}

func (a *Aggregator) receiveRelease(r *Release) error {
	if a.arrived[r.From] {
		return a.errorf(r, "duplicate release")
	}
	switch {
	case a.p.Mechanism == CapeFM:
		if len(r.Fixed) != a.cal.L || len(r.Values) != 0 {
			return a.errorf(r, "release has %d fixed-point and %d float values, want %d fixed-point", len(r.Fixed), len(r.Values), a.cal.L)
		}
		acc := a.acc
		if acc == nil {
			acc = make([]int64, a.cal.L)
		} else {
			acc = slices.Clone(acc)
		}
		for i, v := range r.Fixed {
			s, ok := addInt64(acc[i], v)
			if !ok {
				return a.errorf(r, "coordinate %d overflows the sum: corrupted release", i)
			}
			acc[i] = s
		}
		a.acc = acc
	default:
		want := a.cal.L
		if a.p.Mechanism.coefficientBaseline() != "" {
			want = a.p.D
		}
		if len(r.Values) != want || len(r.Fixed) != 0 {
			return a.errorf(r, "release has %d fixed-point and %d float values, want %d float", len(r.Fixed), len(r.Values), want)
		}
		if a.relF == nil {
			a.relF = make(map[uint32][]float64)
		}
		a.relF[r.From] = slices.Clone(r.Values)
	}
	a.arrived[r.From] = true
	return nil
}

// abort ends the attempt with an *AbortError naming the missing sites.
func (a *Aggregator) abort(missing []uint32, cause error) error {
	names := make([]string, 0, len(missing))
	for _, id := range missing {
		names = append(names, a.names[id])
	}
	slices.Sort(names)
	err := &AbortError{Attempt: a.p.Attempt, Round: a.state, Missing: names, NoiseFixed: a.fixed, Cause: cause}
	a.failed = err
	a.state = roundDone
	return err
}

// fromSecAgg turns a secure-aggregation abort into an *AbortError.
func (a *Aggregator) fromSecAgg(err error) error {
	var ab *secagg.AbortError
	if errors.As(err, &ab) {
		missing := append(slices.Clone(ab.Missing), ab.Earlier...)
		slices.Sort(missing)
		return a.abort(slices.Compact(missing), ab.Cause)
	}
	return a.abort(a.Pending(), err)
}

// Close ends the current round and returns the messages to send (a
// broadcast has Party() = 0). It returns an *AbortError if a site is
// missing, a *RefusedError if one refused.
func (a *Aggregator) Close(ctx context.Context) ([]Message, error) {
	if a.failed != nil {
		return nil, a.failed
	}
	switch a.state {
	case RoundHello:
		if missing := a.Pending(); len(missing) > 0 {
			return nil, a.abort(missing, nil)
		}
		if a.p.Mechanism != CapeFM {
			a.included, a.fixed, a.state = a.p.IDs(), true, RoundRelease
			return []Message{&SumBroadcast{Session: a.p.Session, Included: a.p.IDs()}}, nil
		}
		cfg, err := cape.SecAggConfig(a.cal.ZeroSum, a.p.Session[:])
		if err != nil {
			return nil, err
		}
		if a.srv, err = secagg.NewServer(cfg); err != nil {
			return nil, err
		}
		a.state = RoundAdvertiseKeys
		return []Message{&Agreed{Session: a.p.Session, ParamsHash: a.hash, Sites: a.p.IDs()}}, nil
	case RoundAdvertiseKeys:
		kr, err := a.srv.CloseAdvertiseKeys()
		if err != nil {
			return nil, a.fromSecAgg(err)
		}
		a.state = RoundShareKeys
		// The sites' signatures travel with their keys, unchanged: every
		// site checks every other site's (Site, KeySigner).
		var as []KeyAuth
		for _, k := range kr.Keys {
			as = append(as, a.keyAuth[k.From])
		}
		return []Message{&SecAgg{Msg: kr, Auth: auths(as)}}, nil
	case RoundShareKeys:
		rel, err := a.srv.CloseShareKeys()
		if err != nil {
			return nil, a.fromSecAgg(err)
		}
		a.state = RoundMaskedInput
		out := make([]Message, len(rel))
		for i, r := range rel {
			out[i] = &SecAgg{Msg: r}
		}
		return out, nil
	case RoundMaskedInput:
		req, err := a.srv.CloseMaskedInput()
		if err != nil {
			return nil, a.fromSecAgg(err)
		}
		a.state = RoundUnmasking
		out := make([]Message, len(req))
		for i, r := range req {
			out[i] = &SecAgg{Msg: r}
		}
		return out, nil
	case RoundUnmasking:
		res, err := a.srv.Finish(ctx)
		if err != nil {
			return nil, a.fromSecAgg(err)
		}
		if err := cape.CheckContributors(a.cal.ZeroSum, res.Included, a.p.IDs()); err != nil {
			return nil, a.abort(missingFrom(a.p.IDs(), res.Included), err)
		}
		a.sum, a.included = res.Sum, res.Included
		a.fixed, a.state = true, RoundRelease
		return []Message{&SumBroadcast{Session: a.p.Session, Sum: slices.Clone(res.Sum), Included: slices.Clone(res.Included)}}, nil
	case RoundRelease:
		arrived := sortedIDs(a.arrived)
		if a.p.Mechanism == CapeFM {
			if err := cape.CheckContributors(a.cal.ZeroSum, a.included, arrived); err != nil {
				return nil, a.abort(missingFrom(a.included, arrived), err)
			}
		} else if missing := missingFrom(a.included, arrived); len(missing) > 0 {
			return nil, a.abort(missing, nil)
		}
		a.state = RoundCombine
		res, err := a.combine()
		if err != nil {
			a.failed, a.state = err, roundDone
			return nil, err
		}
		a.result, a.state = res, roundDone
		return nil, nil
	}
	return nil, fmt.Errorf("capefm: aggregator: nothing to close in round %s", a.state)
}

// Result returns the model once the Release round was closed successfully.
func (a *Aggregator) Result() (*Result, error) {
	if a.result == nil {
		if a.failed != nil {
			return nil, a.failed
		}
		return nil, fmt.Errorf("capefm: aggregator: no result in round %s", a.state)
	}
	return a.result, nil
}

func missingFrom(want, got []uint32) []uint32 {
	var out []uint32
	for _, id := range want {
		if !slices.Contains(got, id) {
			out = append(out, id)
		}
	}
	return out
}

func sortedIDs(m map[uint32]bool) []uint32 {
	out := make([]uint32, 0, len(m))
	for id := range m {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// weightedFloat returns Σ_s (N_s/N)·release_s of the baselines' float
// releases, summed in site-ID order so that the result does not depend on
// the order in which the releases arrived.
func (a *Aggregator) weightedFloat() []float64 {
	ids := make([]uint32, 0, len(a.relF))
	for id := range a.relF {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var acc []float64
	for _, id := range ids {
		v := a.relF[id]
		if acc == nil {
			acc = make([]float64, len(v))
		}
		site, _ := a.p.Site(id)
		w := float64(site.N) / float64(a.cal.N)
		for i, x := range v {
			acc[i] += w * x
		}
	}
	return acc
}

// combine sums (capeFM) or averages (baselines) the releases, post-processes
// and writes the report.
func (a *Aggregator) combine() (*Result, error) {
	p, cal := &a.p, a.cal
	res := &Result{Params: p.Clone(), Calibration: cal}
	var noise2 float64
	switch {
	case p.Mechanism == CapeFM:
		q := &regress.Quadratic{D: p.D, Lambda1: make([]float64, cal.L1), Upper: make([]float64, cal.L2)}
		F := -int(cal.FracBits)
		for i := range q.Lambda1 {
			q.Lambda1[i] = math.Ldexp(float64(a.acc[i]), F) * cal.C1
		}
		for i := range q.Upper {
			q.Upper[i] = math.Ldexp(float64(a.acc[cal.L1+i]), F) * cal.C2
		}
		res.Objective, noise2 = q, cal.Noise2
	case p.Mechanism == GaussianFMLocal:
		accF := a.weightedFloat()
		q := &regress.Quadratic{D: p.D, Lambda1: accF[:cal.L1], Upper: accF[cal.L1:]}
		res.Objective, noise2 = q, cal.Noise2
	default:
		res.Coef = a.weightedFloat()
	}
	if res.Objective != nil {
		pp, err := objectivePostProcess(p.Kind, p.D, noise2)
		if err != nil {
			return nil, err
		}
		w, trimmed, err := res.Objective.Minimize(pp)
		if err != nil {
			return nil, fmt.Errorf("capefm: post-processing the released objective: %w", err)
		}
		res.Coef, res.Trimmed, res.PostProcess, res.Lambda = w, trimmed, pp, pp.Lambda
	}
	res.Privacy = a.privacy(res.PostProcess)
	return res, nil
}

// objectivePostProcess is the post-processing of the combined objective
// of capeFM (the sum of the sites' releases) and gaussian-fm-local (the
// N_s/N-weighted average of the sites' objectives): central gaussian-fm's
// default rule (regress.GaussianFMPostProcess) at noise2, the per-entry
// standard deviation of the noise on the combined Λ2 (Calibration.Noise2):
// for a linear model eigenvalue clipping at the public floor
// regress.EigenFloor(d, noise2, regress.DefaultEigenFloorFactor) =
// 2·noise2·√d with no ridge (docs/mechanisms.md, "Eigenvalue clipping"),
// for a logistic one the ridge regress.DefaultLambdaFactor·noise2 with
// spectral trimming.
//
// Why noise2 is gaussian-fm's τ2: the floor is the expected spectral norm
// of the noise matrix on Λ2 when its upper-triangle entries are i.i.d.
// N(0, τ2²) (regress.EigenFloor). capeFM's combined Λ2 carries, per entry,
// the sum over the S sites of their local noise g_s (the zero-sum parts
// cancel exactly), independent across entries and sites, of standard
// deviation √S·τ_g in whitened units and so C2·√S·τ_g = Noise2 on Λ2
// (Calibration.capeFM); gaussian-fm-local's average Σ_s (N_s/N)·Λ2_s
// carries independent N(0, Σ_s (N_s/N)²·τ2_s²) = N(0, Noise2²) entries.
// Either combined objective is thus a Gaussian FM release of the pooled
// average objective with per-entry noise Noise2 on Λ2, and gets central
// gaussian-fm's post-processing for that noise: capeFM matches a pooled
// fit with κ times its noise variance, the rule included.
//
// It reads public values only (the model kind, d, and Noise2, a function
// of the agreed Params and the public site sizes), so it is
// post-processing of the released sum: no privacy cost, and nothing in
// what the sites send depends on it.
func objectivePostProcess(kind regress.Kind, d int, noise2 float64) (regress.PostProcess, error) {
	pp, err := regress.GaussianFMPostProcess(kind, d, noise2)
	if err != nil {
		return regress.PostProcess{}, fmt.Errorf("capefm: post-processing the released objective: %w", err)
	}
	return pp, nil
}

// UnitNeighbouring is the neighbouring relation of a fit with a privacy
// unit (p.MaxRows > 0): the person-level relation of regress.UnitNeighbouring
// at one site, with what is public and the consortium's assumption about
// persons at several sites.
//
// # Persons at several sites
//
// Each site bounds its own rows to K per unit; nothing links IDs across
// sites (that would need a private join). The guarantee is for a person
// whose rows are all at one site (at most M = 1 site per person): replacing
// that person's rows moves one site's release by at most the per-site
// sensitivity at U_s, which is what the calibration covers. A person at m
// sites is m neighbouring steps away (each step replaces their rows at one
// site), so the guarantee degrades by group privacy (m·η for η-Gaussian-DP
// mechanisms); it is printed as an assumption, and capefm has no bound M > 1
// (it would scale every view's sensitivity by M).
func UnitNeighbouring(p *Params, cal *Calibration) string {
	return fmt.Sprintf("replace-one-unit (bounded DP on persons): neighbouring datasets differ in all rows of one person (privacy unit %q, at most K = %d rows per unit kept at each site, a uniformly random subset); each site's number of units U_s and their total N = U = %d are public, the number of rows per unit (and so of rows) is not released; assumption: every person has rows at one site only (at most M = 1 site per person; a person at m sites is protected only as a group of m persons)",
		p.Unit, p.MaxRows, cal.N)
}

// privacy writes the report: public parameters and calibration only (pp
// is objectivePostProcess's, a function of public values).
func (a *Aggregator) privacy(pp regress.PostProcess) report.Privacy {
	p, cal := &a.p, a.cal
	var insecure []string
	for _, id := range p.IDs() {
		if h := a.hellos[id]; h != nil && !h.Secure {
			insecure = append(insecure, a.names[id])
		}
	}
	pr := report.Privacy{Private: true, Epsilon: cal.ComposedEpsilon, Delta: cal.ComposedDelta, Neighbouring: report.Neighbouring}
	if p.Mechanism.pureEpsilon() {
		pr.Delta = 0
	}
	pr.Randomness = "secure (crypto/rand) at every site, as each site reported"
	if len(insecure) > 0 {
		pr.Randomness = "INSECURE seeded noise at site(s) " + strings.Join(insecure, ", ")
		pr.Insecure = true
	}
	sizes := make([]string, len(p.Sites))
	for i, s := range p.Sites {
		sizes[i] = fmt.Sprintf("%s %d", s.Name, s.N)
	}
	sitesNote := fmt.Sprintf("sites and their public numbers of rows N_s: %s (N = %d)", strings.Join(sizes, ", "), cal.N)
	if p.MaxRows > 0 {
		pr.Neighbouring = UnitNeighbouring(p, cal)
		sitesNote = fmt.Sprintf("sites and their public numbers of units N_s = U_s: %s (N = U = %d units; every sensitivity is evaluated at these unit counts, each site divides its sums over at most K rows per unit by U·K = %d)",
			strings.Join(sizes, ", "), cal.N, cal.N*p.RowsPerUnit())
	}
	split := fmt.Sprintf("%.2f/%.2f", p.Split, 1-p.Split)
	// The rule's lines: central gaussian-fm's clip line (τ2 = the combined
	// Λ2's per-entry noise, printed by the line before these), or the
	// ridge and trimming.
	objectivePP := []string{"Λ2 noised on its upper triangle and mirrored (symmetric)"}
	if pp.Floor > 0 {
		objectivePP = append(objectivePP, regress.ClipLine(pp))
	} else {
		objectivePP = append(objectivePP,
			fmt.Sprintf("ridge λ = %s added to the diagonal of the noisy Λ2 (data-independent: %g × the per-entry noise of the released Λ2)", report.Up(pp.Lambda), regress.DefaultLambdaFactor),
			fmt.Sprintf("spectral trimming: eigen-directions with eigenvalue ≤ %g·λ removed (includes the PSD projection)", regress.TrimFraction))
	}
	objectivePP = append(objectivePP, regress.Lambda0NotReleased)
	switch {
	case p.Mechanism == CapeFM:
		pr.Mechanism = fmt.Sprintf("capefm (Gaussian FM on %d sites with CAPE zero-sum noise: Tasnim et al., Section 5, Algorithms 2-3, with the corrections of PRIVACY-NOTES items 1-4, 8, 9 and 18)", cal.S)
		acc := fmt.Sprintf("exact CAPE privacy-loss curve (PRIVACY-NOTES item 18), per site, for a record at a site outside the adversary, against each adversary of the trust model: (i) the aggregator with up to S_C colluding sites (every site's release, the secure sum Σê, the colluders' data and noise) sees privacy loss N(μ_h, 2μ_h) with μ_h = Δ_h²·R(R+S_H)/(2τ²·S_H(R+1)) = %s; (ii) any one site alone, which reads the model and removes its own local noise g_s, is left with the other S−1 sites' local noise: μ_lone = Δ_h²·R/(2τ²·(S−1)) = %s; the guarantee uses μ = max(μ_h, μ_lone), i.e. it is √(2μ)-Gaussian-DP and δ(ε) = Φ(√(μ/2) − ε/√(2μ)) − e^ε·Φ(−√(μ/2) − ε/√(2μ)); S = %d sites, S_C = %d, noise ratio R = Var ê/Var g = %s, τ = %s (whitened units; ê_s ~ N(0, τ²), g_s ~ N(0, τ²/R)), Δ_h = %s (every site's L2 sensitivity of its whitened release, Λ1 and Λ2 jointly with budget split %s of the squared sensitivity, bounded by the joint supremum of one replaced record over both blocks (regress/joint.go), grid slack and the lattice margin ×(1 + 2⁻³²) included: the noise is discrete Gaussian on a grid, covered by the continuous curve with that margin, capefm documentation, Lattice), μ = %s",
			report.Up(cal.CoalitionMu), report.Up(cal.LoneSiteMu), cal.S, cal.Colluders, report.Up(cal.NoiseRatio), report.Up(cal.Tau), report.Up(cal.Sensitivity), split, report.Up(cal.Mu))
		if len(p.Prior) > 0 {
			prior := make([]string, len(p.Prior))
			for i, e := range p.Prior {
				prior[i] = report.Up(e)
			}
			acc += fmt.Sprintf("; composed with %d earlier attempt(s) of this fit that reached the release round (Gaussian-DP composition): η = √(Σ η_i²) over η_i = %s and this attempt's √(2μ) = %s gives η = %s, i.e. ε = %s at δ = %s (this attempt alone: (%s, %s))",
				len(p.Prior), strings.Join(prior, ", "), report.Up(cal.Eta), report.Up(cal.ComposedEta),
				report.Up(cal.ComposedEpsilon), report.Up(p.Delta), report.Up(p.Epsilon), report.Up(cal.SiteDelta))
		} else {
			acc += fmt.Sprintf("; achieved δ = %s", report.Up(cal.SiteDelta))
		}
		pr.Accountant = acc
		pr.Releases = []report.Release{
			{Name: "Λ1 part of each site's release, Σ_{n∈s} λ_n / N = (N_s/N)·Λ1_s", Entries: cal.L1, Norm: "L2",
				Sensitivity: cal.Delta1, Noise: "gaussian (CAPE: zero-sum e_s plus local g_s)", Scale: cal.C1 * cal.Tau},
			{Name: "Λ2 upper-triangle part of each site's release, (N_s/N)·Λ2_s", Entries: cal.L2, Norm: "L2 (Frobenius)",
				Sensitivity: cal.Delta2, Noise: "gaussian (CAPE: zero-sum e_s plus local g_s)", Scale: cal.C2 * cal.Tau},
		}
		pr.PostProcessing = append([]string{
			fmt.Sprintf("the aggregator sums the %d releases in fixed point: the zero-sum parts cancel exactly, leaving per-entry noise Λ1 %s, Λ2 %s (τ2 of the post-processing) in the released average objective",
				cal.S, report.Down(cal.Noise1), report.Down(cal.Noise2)),
		}, objectivePP...)
		pr.Notes = []string{
			fmt.Sprintf("trust model: honest-but-curious sites and aggregator; the adversary is the aggregator with at most S_C = %d of the S = %d sites, or any one site on its own (the guarantee covers both); S_C was fixed at the fit's first roster and a redo after a dropout never lowers it (every site refuses an attempt that does); secure aggregation (Bonawitz et al. 2017, threshold %d of %d) hides every site's ê_s; without it the zero-sum noise gives no privacy; privacy only, not integrity: the aggregator can still abort, choose which sites count as dropped, or publish a wrong model",
				cal.Colluders, cal.S, secagg.DefaultThreshold(cal.S), cal.S),
			fmt.Sprintf("the released model alone, for an outsider (neither a site nor the aggregator: each site knows its own noise and the aggregator every release, and both are covered by the per-site guarantee above, not by this line), is (%s, %s)-DP: one Gaussian FM on the pooled data with the S sites' local noise, %s-Gaussian-DP",
				report.Up(p.Epsilon), report.Up(cal.ModelDelta), report.Up(cal.ModelEta)),
			fmt.Sprintf("noise variance of the released objective: κ = %s × that of central gaussian-fm on the pooled data at the same (ε, δ) (κ(R) = S·max((S_H+R)/(S_H(R+1)), 1/(S−1)) = %s, floor max(S/S_H, S/(S−1)) = %s: a site knows its own local noise; the seed's split R = S would give %s); the seed's Lemma 1 (ratio 1) relies on its Theorem 1, which does not hold",
				report.Up(cal.VarianceRatio), report.Up(cal.Kappa), report.Up(math.Max(float64(cal.S)/float64(cal.Honest), float64(cal.S)/float64(cal.S-1))), report.Up(VarianceRatioFormula(cal.S, cal.Colluders, 0))),
			"the seed's Theorem 1 δ(ε) (CAPE as published) is not a guarantee and is not printed (PRIVACY-NOTES item 18)",
			"weights N_s/N are applied before the noise (each site releases its sum over the pooled N), so the zero-sum noise cancels exactly and every site's sensitivity equals the pooled one, (N_s/N)·Δ(N_s) = Δ(N)",
			sitesNote,
		}
		if p.MaxRows > 0 {
			pr.Notes = append(pr.Notes, fmt.Sprintf("a person with rows at m sites outside the adversary is protected as a group of m units: m·η-Gaussian-DP with η = %s (group privacy of Gaussian DP, Dong, Roth & Su 2019, Theorem 2.14), not by the printed (ε, δ)", report.Up(cal.ComposedEta)))
		}
	case p.Mechanism == GaussianFMLocal:
		pr.Mechanism = fmt.Sprintf("gaussian-fm-local (conventional decentralised Gaussian FM on %d sites: each site releases its own Gaussian FM objective with the full noise for (ε, δ) on its N_s rows; the aggregator averages them with weights N_s/N)", cal.S)
		pr.Accountant = fmt.Sprintf("per site: Λ1 and Λ2 calibrated jointly as one whitened Gaussian mechanism on the site's own N_s rows (budget split %s of the squared sensitivity; sensitivity the joint supremum of one replaced record over both blocks, regress/joint.go), analytic Gaussian (Balle & Wang 2018); achieved δ ≤ %s at every site; the average is post-processing", split, report.Up(cal.SiteDelta))
		for i, s := range p.Sites {
			ss, _ := regress.SensitivitiesFor(p.Kind, p.D, s.N)
			pr.Releases = append(pr.Releases,
				report.Release{Name: fmt.Sprintf("Λ1 of site %s (average over its rows)", s.Name), Entries: cal.L1, Norm: "L2", Sensitivity: ss.Lambda1, Noise: "gaussian", Scale: cal.SiteTau1[i]},
				report.Release{Name: fmt.Sprintf("Λ2 upper triangle of site %s", s.Name), Entries: cal.L2, Norm: "L2 (Frobenius)", Sensitivity: ss.Lambda2, Noise: "gaussian", Scale: cal.SiteTau2[i]})
		}
		pr.PostProcessing = append([]string{
			fmt.Sprintf("the aggregator averages the %d releases with weights N_s/N: per-entry noise Λ1 %s, Λ2 %s (τ2 of the post-processing) in the averaged objective", cal.S, report.Down(cal.Noise1), report.Down(cal.Noise2)),
		}, objectivePP...)
		pr.Notes = []string{
			fmt.Sprintf("noise variance of the averaged objective: %s × that of central gaussian-fm on the pooled data at the same (ε, δ) (the seed's Section 5.1: a factor S for equal sizes)", report.Up(cal.VarianceRatio)),
			"trust model: none between the parties beyond authenticated channels; every site's release is private on its own",
			sitesNote,
		}
	default:
		mech := p.Mechanism.coefficientBaseline()
		pr.Mechanism = fmt.Sprintf("%s (conventional decentralised baseline on %d sites: each site fits %s on its own N_s rows at (ε, δ) and releases its coefficients; the aggregator averages them with weights N_s/N)", p.Mechanism, cal.S, mech)
		pr.Accountant = fmt.Sprintf("per site, the accountant of mechanism %s on the site's own N_s rows (see its documentation); the average is post-processing", mech)
		pr.PostProcessing = []string{"weighted average of the sites' released coefficients"}
		pr.Notes = []string{"trust model: none between the parties beyond authenticated channels; every site's release is private on its own", sitesNote}
	}
	return pr
}
