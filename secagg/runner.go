package secagg

import (
	"context"
	"errors"
	"fmt"
	"github.com/dplearn/dplearn/internal/logx"
	"log/slog"
	"sync"
	"time"
)

// RunOptions configures an in-process run of the protocol (Run).
type RunOptions struct {
	// RoundTimeout bounds how long the server waits for each round's
	// messages; parties that have not answered by then are dropped. Default
	// 30 s.
	RoundTimeout time.Duration
	// Drop simulates parties that disconnect just before sending their
	// message of the given round (the server notices at once, as with a
	// closed connection).
	Drop map[uint32]Round
	// Stall simulates parties that stop answering, silently, from the given
	// round on; the server waits for RoundTimeout.
	Stall map[uint32]Round
	// Observe, if set, is called (from the server's goroutine) with every
	// message the server receives or sends: exactly the server's view.
	Observe func(Message)
	// Logger receives one record per round (Info "secagg: round closed"
	// with round, expected, received, missing) and each party failure or
	// rejected message (Warn, with party and err): party ids and counts
	// only, never inputs, masks or shares. nil discards.
	Logger *slog.Logger
	// Workers is passed to Server.Workers.
	Workers int
}

type envelope struct {
	from  uint32
	round Round
	msg   Message // nil: the party dropped or failed
	err   error
}

// Run executes one session in process: one goroutine per party, the server
// in the calling goroutine, messages over channels. inputs maps every party
// of cfg.Parties to its single-use fixed-point input (NewInput); a party
// that sends its masked input spends it, so the same inputs cannot be run
// again, whether this session completes or aborts (see Input). It returns
// the server's Result, or an error (an *AbortError if too few parties
// remain). All goroutines have exited when Run returns.
func Run(ctx context.Context, cfg Config, inputs map[uint32]*Input, opt RunOptions) (*Result, error) {
	srv, err := NewServer(cfg)
	if err != nil {
		return nil, err
	}
	srv.Workers = opt.Workers
	log := logx.OrDiscard(opt.Logger)
	if opt.RoundTimeout <= 0 {
		opt.RoundTimeout = 30 * time.Second
	}
	parties := make(map[uint32]*Party, len(cfg.Parties))
	for _, id := range cfg.Parties {
		p, err := NewParty(cfg, id, inputs[id])
		if err != nil {
			return nil, err
		}
		parties[id] = p
	}
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	outbox := make(chan envelope, 4*len(parties))
	inboxes := make(map[uint32]chan Message, len(parties))
	var wg sync.WaitGroup
	for id, p := range parties {
		in := make(chan Message, 4)
		inboxes[id] = in
		wg.Add(1)
		go func() {
			defer wg.Done()
			runParty(runCtx, p, in, outbox, opt)
		}()
	}
	defer wg.Wait() // after cancel (deferred later runs first)
	defer cancel()

	observe := func(m Message) {
		if opt.Observe != nil {
			opt.Observe(m)
		}
	}
	send := func(to uint32, m Message) {
		if m != nil { // nil is the runner's start signal, not a protocol message
			observe(m)
		}
		select {
		case inboxes[to] <- m:
		case <-runCtx.Done():
		}
	}
	collect := func() error {
		r := srv.Round()
		expected := srv.Expected()
		waiting := make(map[uint32]bool, len(expected))
		for _, id := range expected {
			waiting[id] = true
		}
		var partyErrs []error
		timer := time.NewTimer(opt.RoundTimeout)
		defer timer.Stop()
	loop:
		for len(waiting) > 0 {
			select {
			case env := <-outbox:
				if env.round != r {
					continue // a straggler from an earlier round; already dropped
				}
				delete(waiting, env.from)
				if env.err != nil {
					partyErrs = append(partyErrs, env.err)
					log.Warn("secagg: party failed", "round", r.String(), "party", env.from, logx.Err(env.err))
					continue
				}
				if env.msg == nil {
					continue
				}
				observe(env.msg)
				if err := srv.Receive(env.msg); err != nil {
					partyErrs = append(partyErrs, err)
					log.Warn("secagg: rejected a message", "round", r.String(), "party", env.from, logx.Err(err))
				}
			case <-timer.C:
				break loop
			case <-runCtx.Done():
				return nil
			}
		}
		log.Info("secagg: round closed", "round", r.String(), "expected", len(expected),
			"received", len(expected)-len(srv.Pending()), "missing", srv.Pending())
		return errors.Join(partyErrs...)
	}
	withCause := func(err, cause error) error {
		var ab *AbortError
		if errors.As(err, &ab) && cause != nil {
			ab.Cause = cause
		}
		return err
	}

	for id := range parties {
		send(id, nil) // start: each party advertises its keys
	}
	cause := collect()
	if err := runCtx.Err(); err != nil {
		return nil, fmt.Errorf("secagg: round %s: %w", srv.Round(), err)
	}
	roster, err := srv.CloseAdvertiseKeys()
	if err != nil {
		return nil, withCause(err, cause)
	}
	for _, k := range roster.Keys {
		send(k.From, roster)
	}
	cause = collect()
	if err := runCtx.Err(); err != nil {
		return nil, fmt.Errorf("secagg: round %s: %w", srv.Round(), err)
	}
	relays, err := srv.CloseShareKeys()
	if err != nil {
		return nil, withCause(err, cause)
	}
	for _, rel := range relays {
		send(rel.To, rel)
	}
	cause = collect()
	if err := runCtx.Err(); err != nil {
		return nil, fmt.Errorf("secagg: round %s: %w", srv.Round(), err)
	}
	reqs, err := srv.CloseMaskedInput()
	if err != nil {
		return nil, withCause(err, cause)
	}
	for _, req := range reqs {
		send(req.To, req)
	}
	cause = collect()
	if err := runCtx.Err(); err != nil {
		return nil, fmt.Errorf("secagg: round %s: %w", srv.Round(), err)
	}
	res, err := srv.Finish(runCtx)
	if err != nil {
		return nil, withCause(err, cause)
	}
	return res, nil
}

// runParty drives one Party: it answers each server message in turn.
func runParty(ctx context.Context, p *Party, in <-chan Message, out chan<- envelope, opt RunOptions) {
	reply := func(env envelope) {
		select {
		case out <- env:
		case <-ctx.Done():
		}
	}
	for {
		var m Message
		select {
		case m = <-in:
		case <-ctx.Done():
			return
		}
		var r Round
		switch m.(type) {
		case nil:
			r = RoundAdvertiseKeys
		case *KeyRoster:
			r = RoundShareKeys
		case *ShareRelay:
			r = RoundMaskedInput
		case *UnmaskRequest:
			r = RoundUnmasking
		default:
			reply(envelope{from: p.id, round: p.state, err: fmt.Errorf("secagg: party %d: unexpected message %T", p.id, m)})
			continue
		}
		if at, ok := opt.Stall[p.id]; ok && r >= at {
			<-ctx.Done()
			return
		}
		if at, ok := opt.Drop[p.id]; ok && r >= at {
			reply(envelope{from: p.id, round: r})
			return
		}
		var (
			msg Message
			err error
		)
		switch m := m.(type) {
		case nil:
			msg, err = p.AdvertiseKeys()
		case *KeyRoster:
			msg, err = p.ShareKeys(m)
		case *ShareRelay:
			msg, err = p.MaskInput(m)
		case *UnmaskRequest:
			msg, err = p.Unmask(m)
		}
		if err != nil {
			reply(envelope{from: p.id, round: r, err: err})
			return
		}
		reply(envelope{from: p.id, round: r, msg: msg})
		if r == RoundUnmasking {
			return
		}
	}
}
