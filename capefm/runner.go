package capefm

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/internal/logx"
)

// ServeOptions configures Serve.
type ServeOptions struct {
	// Declaration, if set, is the fit's schema as the template's Schema
	// fingerprints it (SchemaDeclaration): Gather names the column and
	// field of a site announcing another schema, and every Offer carries
	// it so that a site refusing the fingerprint names them too.
	Declaration []byte
	// RoundTimeout bounds the wait for each round's messages; sites that
	// have not answered by then count as missing. Default 30 s.
	RoundTimeout time.Duration
	// MaxAttempts bounds the attempts of the fit (default DefaultMaxAttempts).
	MaxAttempts int
	// RedoAfterRelease, for capeFM, starts a new attempt after a site was
	// lost once the noise was fixed, composing the lost attempt's releases
	// into the guarantee (Params.Prior); by default the fit aborts.
	RedoAfterRelease bool
	// Logger receives one record per attempt (Info) and per round (Debug),
	// and the aggregator's problems with sites (Warn: refusals, lost
	// sends), as attributes (attempt, round, site, sites, answered, missing,
	// elapsed, err): names, rounds and timings only, never a site's
	// statistics, shares or the model. nil discards.
	Logger *slog.Logger
	// Observe, if set, is called (from Serve's goroutine) with every message
	// the aggregator sends or accepts: exactly its view.
	Observe func(Message)
	// NewSession returns a fresh session ID per attempt (default: 32 bytes
	// from crypto/rand).
	NewSession func() ([32]byte, error)
	// OnAttempt, if set, is called when an attempt starts, with its
	// parameters and calibration.
	OnAttempt func(p Params, cal *Calibration)
	// OnAttemptEnd, if set, is called when an attempt ends (Err nil: it
	// produced the model).
	OnAttemptEnd func(AttemptLog)
	// OnRound, if set, is called when a round of an attempt is closed:
	// who was expected, who answered, who timed out or disconnected.
	OnRound func(RoundReport)
	// OnRefused, if set, is called when the aggregator refuses a site's
	// message (a replay, a wrong round, a key advertisement that fails its
	// signature check: *KeyAuthError), with the site's name and why.
	OnRefused func(site string, err error)
	// KeyVerifier, if set, checks every site's signed key advertisement
	// (KeySigner; the aggregator's own certificate from the deployment's CA)
	// before accepting it: a site whose advertisement is unsigned or fails
	// the check counts as missing from the attempt at once, so that the
	// honest sites never see it (they would abandon the attempt).
	KeyVerifier KeySigner
}

// RoundReport describes one round of an attempt once the aggregator stopped
// waiting for it (for logs: names and timings only, nothing from the data).
type RoundReport struct {
	Attempt uint32
	Round   Round
	// Expected are the sites that were to answer; Answered those whose
	// message was accepted; the rest TimedOut (no answer by the round's
	// deadline), Disconnected (their connection closed), or Failed (they
	// reported an error, in-process runs).
	Expected, Answered, TimedOut, Disconnected, Failed []string
	Elapsed                                            time.Duration
}

// RunOptions configures an in-process run (Run): Serve's options and
// simulated faults.
type RunOptions struct {
	RoundTimeout     time.Duration
	MaxAttempts      int
	RedoAfterRelease bool
	Logger           *slog.Logger
	Observe          func(Message)
	NewSession       func() ([32]byte, error)
	// Drop simulates sites that disconnect just before sending their
	// message of the given round (the aggregator notices at once, as with a
	// closed connection) and never come back. Round 5 (SumBroadcast, which
	// sites only receive) and 6 both mean "lost after the noise was fixed,
	// before its release".
	Drop map[string]Round
	// Stall simulates sites that stop answering, silently, from the given
	// round on; the aggregator waits for RoundTimeout.
	Stall map[string]Round
	// KeyVerifier: as in ServeOptions.
	KeyVerifier KeySigner
}

// AttemptLog records one attempt of a run (for the console, not the report).
type AttemptLog struct {
	Attempt    uint32
	Sites      []string
	Err        error // nil for the attempt that produced the model
	NoiseFixed bool
}

// RunResult is the outcome of Serve or Run: the model of the last attempt
// and the log of every attempt.
type RunResult struct {
	*Result
	Attempts []AttemptLog
}

// Hub is the aggregator's side of a transport as Serve uses it. Run
// provides an in-process Hub; a network transport adapts its own (see the
// package documentation, Transport mapping).
type Hub interface {
	// Send delivers m to the named site. Serve calls it once per
	// addressee: for every site of the attempt when m.Party() is 0.
	Send(ctx context.Context, site string, m Message) error
	// Receive returns the next event from any site. It must return ctx's
	// error once ctx is done: Serve gives each round a deadline.
	Receive(ctx context.Context) (Event, error)
	// SetRound announces the attempt's session and the round whose
	// upstream messages Serve accepts from now on (for a transport's round
	// gate); it is called before the round's first message is sent.
	SetRound(session [32]byte, r Round)
}

// Event is what a Hub reports from a site: a message (Msg), a
// disconnection (Lost: the site will not answer in this attempt), or a site
// that reported it cannot answer the message of Session and Round (Failed;
// in-process runs, where the site's error is visible).
type Event struct {
	// Site is the sender's authenticated name.
	Site    string
	Msg     Message
	Lost    bool
	Failed  error
	Session [32]byte
	Round   Round
}

// Serve runs the aggregator's side of a fit over a Hub: attempts, rounds,
// per-round deadlines, dropouts and retries. template holds the fit's
// public parameters: Mechanism, Kind, Schema, D, Epsilon, Delta, Split,
// Sites (the roster), MinSites, Colluders (a negative value means
// accounting.CAPEColluders(S) for the first attempt's S), NoiseRatio
// (capeFM; 0 means DefaultNoiseRatio) and Prior (usually empty); Session,
// Attempt and Tau are set per attempt.
//
// S_C is frozen at the first attempt's roster: a redo after a dropout keeps
// it (a smaller roster never assumes fewer colluders, or an aggregator could
// drop a site to redo the fit against the same colluder at a smaller S_C;
// issue 22 item 6), and every Site refuses an offer with fewer colluders than
// one it accepted before. If secure aggregation of the smaller roster cannot
// hide the noise from that many colluders, the fit stops.
//
// A site lost before the noise is fixed starts a new attempt without it
// (fresh session and noise, τ recalibrated) while at least MinSites remain
// and MaxAttempts allows; a site lost after it aborts the fit with an
// *AbortError naming it (or, with RedoAfterRelease, starts a new attempt
// whose guarantee composes the lost one). A *RefusedError ends the fit.
func Serve(ctx context.Context, template Params, hub Hub, opt ServeOptions) (*RunResult, error) {
	if opt.RoundTimeout <= 0 {
		opt.RoundTimeout = 30 * time.Second
	}
	if opt.MaxAttempts <= 0 {
		opt.MaxAttempts = DefaultMaxAttempts
	}
	if opt.NewSession == nil {
		opt.NewSession = func() (s [32]byte, err error) { _, err = rand.Read(s[:]); return s, err }
	}
	log := logx.OrDiscard(opt.Logger)
	live := slices.Clone(template.Sites)
	prior := slices.Clone(template.Prior)
	// S_C, frozen at the first roster (see above).
	colluders := template.Colluders
	if colluders < 0 {
		colluders = accounting.CAPEColluders(len(live))
	}
	var logs []AttemptLog
	for attempt := uint32(1); ; attempt++ {
		p := template.Clone()
		p.Sites, p.Attempt, p.Prior = slices.Clone(live), attempt, slices.Clone(prior)
		p.Colluders = colluders
		if p.Mechanism == CapeFM && p.NoiseRatio == 0 {
			p.NoiseRatio = DefaultNoiseRatio
		}
		var err error
		if p.Session, err = opt.NewSession(); err != nil {
			return nil, fmt.Errorf("capefm: serve: session: %w", err)
		}
		if err := p.Calibrate(); err != nil {
			if attempt > 1 {
				return nil, fmt.Errorf("capefm: attempt %d with %d sites: S_C = %d colluders was fixed at the first roster and may not fall: %w", attempt, len(live), colluders, err)
			}
			return nil, err
		}
		agg, err := NewAggregator(p)
		if err != nil {
			return nil, err
		}
		agg.verifier = opt.KeyVerifier
		if len(opt.Declaration) <= MaxDeclaration {
			agg.decl = opt.Declaration
		}
		names := make([]string, len(live))
		for i, s := range live {
			names[i] = s.Name
		}
		alog := log.With("attempt", attempt)
		alog.Info("capefm: attempt started", "sites", names, "tau", p.Tau)
		if opt.OnAttempt != nil {
			opt.OnAttempt(agg.Params(), agg.Calibration())
		}
		res, err := runAttempt(ctx, agg, hub, opt, alog)
		logs = append(logs, AttemptLog{Attempt: attempt, Sites: names, Err: err, NoiseFixed: agg.NoiseFixed()})
		if opt.OnAttemptEnd != nil {
			opt.OnAttemptEnd(logs[len(logs)-1])
		}
		if err == nil {
			return &RunResult{Result: res, Attempts: logs}, nil
		}
		var ab *AbortError
		if !errors.As(err, &ab) {
			return nil, err
		}
		if ab.NoiseFixed {
			if !opt.RedoAfterRelease || p.Mechanism != CapeFM {
				return nil, err
			}
			prior = append(prior, agg.Calibration().Eta)
		}
		live = slices.DeleteFunc(live, func(s SiteInfo) bool { return slices.Contains(ab.Missing, s.Name) })
		if len(live) < p.MinSites {
			return nil, fmt.Errorf("capefm: %d site(s) remain, fewer than the minimum %d: %w", len(live), p.MinSites, err)
		}
		if int(attempt) >= opt.MaxAttempts {
			return nil, fmt.Errorf("capefm: %d attempts used: %w", attempt, err)
		}
		alog.Warn("capefm: attempt failed; retrying without the missing sites", "missing", ab.Missing, "noise_fixed", ab.NoiseFixed, logx.Err(err))
	}
}

// Run fits a model in process: one goroutine per site, the aggregator
// (Serve) in the calling goroutine, every message marshalled to bytes and
// back as a transport would carry it. sites holds one Site per roster
// name; opt may simulate dropouts. All goroutines have exited when Run
// returns. See Serve for the attempts and template.
func Run(ctx context.Context, template Params, sites []*Site, opt RunOptions) (*RunResult, error) {
	byName := make(map[string]*Site, len(sites))
	for _, s := range sites {
		if s == nil {
			return nil, errors.New("capefm: run: nil site")
		}
		if byName[s.Name()] != nil {
			return nil, fmt.Errorf("capefm: run: site %s given twice", s.Name())
		}
		byName[s.Name()] = s
	}
	for _, r := range template.Sites {
		if byName[r.Name] == nil {
			return nil, fmt.Errorf("capefm: run: no Site for roster entry %s", r.Name)
		}
	}
	sopt := ServeOptions{RoundTimeout: opt.RoundTimeout, MaxAttempts: opt.MaxAttempts, RedoAfterRelease: opt.RedoAfterRelease,
		Logger: opt.Logger, Observe: opt.Observe, NewSession: opt.NewSession, KeyVerifier: opt.KeyVerifier}
	if sopt.RoundTimeout <= 0 {
		sopt.RoundTimeout = 30 * time.Second
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	hub := &memHub{outbox: make(chan upEnv, 8*len(sites)+8), inboxes: make(map[string]chan []byte, len(sites)),
		gone: make(map[string]bool), timeout: sopt.RoundTimeout}
	var wg sync.WaitGroup
	for _, s := range sites {
		in := make(chan []byte, 16)
		hub.inboxes[s.Name()] = in
		wg.Add(1)
		go func() {
			defer wg.Done()
			runSite(runCtx, s, in, hub.outbox, opt)
		}()
	}
	defer wg.Wait()
	defer cancel()
	return Serve(runCtx, template, hub, sopt)
}

// memHub is Run's in-process Hub: payload bytes over channels.
type memHub struct {
	mu      sync.Mutex
	inboxes map[string]chan []byte
	outbox  chan upEnv
	gone    map[string]bool // sites whose goroutine exited (dropped)
	timeout time.Duration
}

func (h *memHub) SetRound([32]byte, Round) {}

func (h *memHub) Send(ctx context.Context, site string, m Message) error {
	payload, err := m.MarshalBinary()
	if err != nil {
		return err
	}
	h.mu.Lock()
	in, gone := h.inboxes[site], h.gone[site]
	h.mu.Unlock()
	if in == nil {
		return fmt.Errorf("capefm: run: no site %s", site)
	}
	if gone {
		return nil // disconnected: the message is lost
	}
	select {
	case in <- payload:
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(h.timeout):
		// A stalled site that stopped reading: the message is lost.
	}
	return nil
}

func (h *memHub) Receive(ctx context.Context) (Event, error) {
	for {
		select {
		case env := <-h.outbox:
			ev := Event{Site: env.from, Session: env.session, Round: env.round}
			switch {
			case env.dropped:
				h.mu.Lock()
				h.gone[env.from] = true
				h.mu.Unlock()
				ev.Lost = true
				return ev, nil
			case env.payload != nil:
				m, err := Unmarshal(env.payload)
				if err != nil {
					ev.Failed = err
					return ev, nil
				}
				ev.Msg = m
				return ev, nil
			case env.err != nil:
				ev.Failed = env.err
				return ev, nil
			}
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

type upEnv struct {
	from    string
	session [32]byte // of the message answered
	round   Round    // of the answer
	payload []byte
	err     error
	dropped bool
}

// runAttempt drives one Aggregator through its rounds over the hub.
func runAttempt(ctx context.Context, agg *Aggregator, hub Hub, opt ServeOptions, log *slog.Logger) (*Result, error) {
	p := agg.Params()
	lost := map[string]bool{}
	observe := func(m Message) {
		if opt.Observe != nil {
			opt.Observe(m)
		}
	}
	send := func(m Message) error {
		observe(m)
		var to []string
		if id := m.Party(); id != 0 {
			to = []string{agg.Name(id)}
		} else {
			for _, s := range p.Sites {
				to = append(to, s.Name)
			}
		}
		for _, name := range to {
			if lost[name] {
				continue
			}
			if err := hub.Send(ctx, name, m); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				log.Warn("capefm: send failed", "site", name, "type", m.Type(), logx.Err(err))
			}
		}
		return nil
	}
	collect := func() error {
		start := time.Now()
		r := agg.Round()
		rlog := log.With("round", int(r), "round_name", r.String())
		expectedIDs := agg.Expected()
		expected := len(expectedIDs)
		rctx, cancel := context.WithTimeout(ctx, opt.RoundTimeout)
		defer cancel()
		failed := map[string]bool{} // sites that reported an error instead of answering this round
		for {
			waiting := 0
			for _, id := range agg.Pending() {
				if name := agg.Name(id); !lost[name] && !failed[name] {
					waiting++
				}
			}
			if waiting == 0 {
				break
			}
			ev, err := hub.Receive(rctx)
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				var late []string
				for _, id := range agg.Pending() {
					late = append(late, agg.Name(id))
				}
				rlog.Warn("capefm: round timed out", "missing", late, "timeout", opt.RoundTimeout.String())
				break
			}
			switch {
			case ev.Lost:
				lost[ev.Site] = true
				rlog.Warn("capefm: site disconnected", "site", ev.Site)
				continue
			case ev.Msg == nil:
				rlog.Warn("capefm: site failed", "site", ev.Site, logx.Err(ev.Failed))
				if ev.Session == p.Session && ev.Round == r {
					failed[ev.Site] = true
				}
				continue
			}
			m := ev.Msg
			if _, late := m.(*Announce); late {
				// A site announcing itself now arrived after the roster was
				// fixed, or restarted and lost its state: it cannot take
				// part in this fit.
				inAttempt := slices.ContainsFunc(p.Sites, func(s SiteInfo) bool { return s.Name == ev.Site })
				if inAttempt {
					lost[ev.Site] = true
				}
				rlog.Info("capefm: late announcement: told the site it cannot join", "site", ev.Site)
				if err := hub.Send(ctx, ev.Site, &Outcome{Session: p.Session, Text: fmt.Sprintf("the fit is under way (attempt %d, round %s): a site that announces itself now (late, or restarted) cannot join it", p.Attempt, r)}); err != nil && ctx.Err() != nil {
					return ctx.Err()
				}
				continue
			}
			if id := m.Party(); agg.Name(id) != ev.Site {
				rlog.Warn("capefm: refused a message naming another site", "site", ev.Site, "named", id)
				continue
			}
			if err := agg.Receive(m); err != nil {
				var ref *RefusedError
				if errors.As(err, &ref) {
					return err
				}
				if kae := (*KeyAuthError)(nil); errors.As(err, &kae) {
					failed[ev.Site] = true // no second chance in this attempt
				}
				rlog.Warn("capefm: refused a message", "site", ev.Site, logx.Err(err))
				if opt.OnRefused != nil {
					opt.OnRefused(ev.Site, err)
				}
				continue
			}
			observe(m)
		}
		var missing []string
		rep := RoundReport{Attempt: p.Attempt, Round: r, Elapsed: time.Since(start)}
		pending := agg.Pending()
		for _, id := range expectedIDs {
			name := agg.Name(id)
			rep.Expected = append(rep.Expected, name)
			switch {
			case !slices.Contains(pending, id):
				rep.Answered = append(rep.Answered, name)
			case lost[name]:
				rep.Disconnected = append(rep.Disconnected, name)
			case failed[name]:
				rep.Failed = append(rep.Failed, name)
			default:
				rep.TimedOut = append(rep.TimedOut, name)
			}
		}
		for _, id := range pending {
			missing = append(missing, agg.Name(id))
		}
		rlog.Debug("capefm: round closed", "expected", expected, "answered", expected-len(missing), "missing", missing, "elapsed", rep.Elapsed.Round(time.Millisecond).String())
		if opt.OnRound != nil {
			opt.OnRound(rep)
		}
		return nil
	}

	hub.SetRound(p.Session, RoundHello)
	if err := send(agg.Offer()); err != nil {
		return nil, err
	}
	for {
		if err := collect(); err != nil {
			return nil, err
		}
		msgs, err := agg.Close(ctx)
		if err != nil {
			return nil, err
		}
		if agg.Round() == roundDone {
			return agg.Result()
		}
		hub.SetRound(p.Session, agg.Round())
		for _, m := range msgs {
			if err := send(m); err != nil {
				return nil, err
			}
		}
	}
}

// answerRound returns the round of the message a site sends in answer to m.
func answerRound(m Message) Round {
	switch m.(type) {
	case *Offer:
		return RoundHello
	case *Agreed:
		return RoundAdvertiseKeys
	case *SumBroadcast:
		return RoundRelease
	}
	return m.Round() + 1 // KeyRoster → ShareKeys, ShareRelay → MaskedInput, UnmaskRequest → Unmasking
}

// runSite drives one Site: it answers each message in turn.
func runSite(ctx context.Context, s *Site, in <-chan []byte, out chan<- upEnv, opt RunOptions) {
	reply := func(env upEnv) {
		env.from = s.Name()
		select {
		case out <- env:
		case <-ctx.Done():
		}
	}
	for {
		var payload []byte
		select {
		case payload = <-in:
		case <-ctx.Done():
			return
		}
		m, err := Unmarshal(payload)
		if err != nil {
			reply(upEnv{err: err})
			continue
		}
		if _, ok := m.(*Outcome); ok {
			continue // the site's part is over; Run ends with Serve
		}
		r := answerRound(m)
		env := upEnv{session: m.SessionID(), round: r}
		if at, ok := opt.Stall[s.Name()]; ok && r >= at {
			<-ctx.Done()
			return
		}
		if at, ok := opt.Drop[s.Name()]; ok && r >= at {
			env.dropped = true
			reply(env)
			return
		}
		ans, err := s.Handle(ctx, m)
		env.err = err
		if ans != nil {
			b, merr := ans.MarshalBinary()
			if merr != nil {
				env.err = errors.Join(err, merr)
			} else {
				env.payload = b
			}
		}
		reply(env)
	}
}
