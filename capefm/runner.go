package capefm

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/dplearn/dplearn/accounting"
)

// RunOptions configures an in-process run (Run).
type RunOptions struct {
	// RoundTimeout bounds the wait for each round's messages; sites that
	// have not answered by then count as missing. Default 30 s.
	RoundTimeout time.Duration
	// Drop simulates sites that disconnect just before sending their
	// message of the given round (the aggregator notices at once, as with a
	// closed connection) and never come back. Round 5 (SumBroadcast, which
	// sites only receive) and 6 both mean "lost after the noise was fixed,
	// before its release".
	Drop map[string]Round
	// Stall simulates sites that stop answering, silently, from the given
	// round on; the aggregator waits for RoundTimeout.
	Stall map[string]Round
	// MaxAttempts bounds the attempts of the fit (default DefaultMaxAttempts).
	MaxAttempts int
	// RedoAfterRelease, for capeFM, starts a new attempt after a site was
	// lost once the noise was fixed, composing the lost attempt's releases
	// into the guarantee (Params.Prior); by default the fit aborts.
	RedoAfterRelease bool
	// Logf, if set, receives one line per round and attempt.
	Logf func(format string, args ...any)
	// Observe, if set, is called (from Run's goroutine) with every message
	// the aggregator sends or accepts: exactly its view.
	Observe func(Message)
	// NewSession returns a fresh session ID per attempt (default: 32 bytes
	// from crypto/rand).
	NewSession func() ([32]byte, error)
}

// AttemptLog records one attempt of a run (for the console, not the report).
type AttemptLog struct {
	Attempt    uint32
	Sites      []string
	Err        error // nil for the attempt that produced the model
	NoiseFixed bool
}

// RunResult is the outcome of Run: the model of the last attempt and the
// log of every attempt.
type RunResult struct {
	*Result
	Attempts []AttemptLog
}

type upEnv struct {
	from    string
	session [32]byte // of the message answered
	round   Round    // of the answer
	payload []byte
	err     error
	dropped bool
}

// Run fits a model in process: one goroutine per site, the aggregator in
// the calling goroutine, every message marshalled to bytes and back (as a
// transport would carry it). template holds the fit's public parameters:
// Mechanism, Kind, Schema, D, Epsilon, Delta, Split, Sites (the roster),
// MinSites, Colluders (a negative value means accounting.CAPEColluders(S)
// for each attempt's S); Session, Attempt and Tau are set per attempt.
// sites holds one Site per roster name.
//
// A site lost before the noise is fixed starts a new attempt without it
// (fresh session and noise, τ recalibrated) while at least MinSites remain
// and MaxAttempts allows; a site lost after it aborts the fit with an
// *AbortError naming it (or, with RedoAfterRelease, starts a new attempt
// whose guarantee composes the lost one). A *RefusedError ends the fit. All
// goroutines have exited when Run returns.
func Run(ctx context.Context, template Params, sites []*Site, opt RunOptions) (*RunResult, error) {
	if opt.RoundTimeout <= 0 {
		opt.RoundTimeout = 30 * time.Second
	}
	if opt.MaxAttempts <= 0 {
		opt.MaxAttempts = DefaultMaxAttempts
	}
	if opt.NewSession == nil {
		opt.NewSession = func() (s [32]byte, err error) { _, err = rand.Read(s[:]); return s, err }
	}
	logf := func(format string, args ...any) {
		if opt.Logf != nil {
			opt.Logf(format, args...)
		}
	}
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

	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	outbox := make(chan upEnv, 8*len(sites)+8)
	inboxes := make(map[string]chan []byte, len(sites))
	var wg sync.WaitGroup
	for _, s := range sites {
		in := make(chan []byte, 16)
		inboxes[s.Name()] = in
		wg.Add(1)
		go func() {
			defer wg.Done()
			runSite(runCtx, s, in, outbox, opt)
		}()
	}
	defer wg.Wait()
	defer cancel()

	dead := map[string]bool{}
	live := slices.Clone(template.Sites)
	prior := slices.Clone(template.Prior)
	var logs []AttemptLog
	for attempt := uint32(1); ; attempt++ {
		p := template.Clone()
		p.Sites, p.Attempt, p.Prior = slices.Clone(live), attempt, slices.Clone(prior)
		if template.Colluders < 0 {
			p.Colluders = accounting.CAPEColluders(len(live))
		}
		var err error
		if p.Session, err = opt.NewSession(); err != nil {
			return nil, fmt.Errorf("capefm: run: session: %w", err)
		}
		if err := p.Calibrate(); err != nil {
			return nil, err
		}
		agg, err := NewAggregator(p)
		if err != nil {
			return nil, err
		}
		names := make([]string, len(live))
		for i, s := range live {
			names[i] = s.Name
		}
		logf("attempt %d: %d sites (%v), τ = %g", attempt, len(live), names, p.Tau)
		res, err := runAttempt(runCtx, agg, inboxes, outbox, dead, opt, logf)
		entry := AttemptLog{Attempt: attempt, Sites: names, Err: err, NoiseFixed: agg.NoiseFixed()}
		logs = append(logs, entry)
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
			return nil, fmt.Errorf("capefm: run: %d site(s) remain, fewer than the minimum %d: %w", len(live), p.MinSites, err)
		}
		if int(attempt) >= opt.MaxAttempts {
			return nil, fmt.Errorf("capefm: run: %d attempts used: %w", attempt, err)
		}
		logf("attempt %d failed (%v); retrying without %v", attempt, err, ab.Missing)
	}
}

// runAttempt drives one Aggregator through its rounds.
func runAttempt(ctx context.Context, agg *Aggregator, inboxes map[string]chan []byte, outbox chan upEnv, dead map[string]bool, opt RunOptions, logf func(string, ...any)) (*Result, error) {
	p := agg.Params()
	observe := func(m Message) {
		if opt.Observe != nil {
			opt.Observe(m)
		}
	}
	send := func(m Message) error {
		payload, err := m.MarshalBinary()
		if err != nil {
			return err
		}
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
			if dead[name] {
				continue
			}
			select {
			case inboxes[name] <- payload:
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(opt.RoundTimeout):
				logf("attempt %d: site %s does not read its messages", p.Attempt, name)
			}
		}
		return nil
	}
	collect := func() error {
		start := time.Now()
		r := agg.Round()
		expected := len(agg.Expected())
		timer := time.NewTimer(opt.RoundTimeout)
		defer timer.Stop()
		failed := map[string]bool{} // sites that reported an error instead of answering this round
		for {
			pending := agg.Pending()
			waiting := 0
			for _, id := range pending {
				if name := agg.Name(id); !dead[name] && !failed[name] {
					waiting++
				}
			}
			if waiting == 0 {
				break
			}
			select {
			case env := <-outbox:
				if env.dropped {
					dead[env.from] = true
					logf("attempt %d round %s: site %s disconnected", p.Attempt, r, env.from)
					continue
				}
				if env.err != nil {
					logf("attempt %d round %s: site %s: %v", p.Attempt, r, env.from, env.err)
				}
				if env.payload == nil {
					if env.session == p.Session && env.round == r {
						failed[env.from] = true
					}
					continue
				}
				m, err := Unmarshal(env.payload)
				if err != nil {
					logf("attempt %d round %s: from site %s: %v", p.Attempt, r, env.from, err)
					continue
				}
				if id := m.Party(); agg.Name(id) != env.from {
					logf("attempt %d round %s: site %s sent a message naming site %d: refused", p.Attempt, r, env.from, id)
					continue
				}
				if err := agg.Receive(m); err != nil {
					var ref *RefusedError
					if errors.As(err, &ref) {
						return err
					}
					logf("attempt %d round %s: refused: %v", p.Attempt, r, err)
					continue
				}
				observe(m)
			case <-timer.C:
				var late []string
				for _, id := range agg.Pending() {
					late = append(late, agg.Name(id))
				}
				logf("attempt %d round %s: timed out waiting for %v", p.Attempt, r, late)
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		var missing []string
		for _, id := range agg.Pending() {
			missing = append(missing, agg.Name(id))
		}
		logf("attempt %d round %d (%s): %d of %d sites answered, missing %v (%v)", p.Attempt, r, r, expected-len(missing), expected, missing, time.Since(start).Round(time.Millisecond))
		return nil
	}

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
