package dpppnet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/transport"
)

// TeachOptions configures Teach.
type TeachOptions struct {
	// IdleTimeout: Teach gives up when the aggregator sends nothing for
	// this long (default 10 min).
	IdleTimeout time.Duration
	// Logf receives the teacher's log lines (nil: none).
	Logf func(format string, args ...any)
	// AfterSend is a TEST HOOK called after each message was sent; a
	// non-nil error stops Teach with that error (the connection is left to
	// the caller to close), as if the process died.
	AfterSend func(m dppp.Message) error
}

// TeachResult is a teacher's view of a run.
type TeachResult struct {
	// Done is the aggregator's last word ("" if none arrived).
	Done string
	// Votes and Partials count the votes and partial decryptions sent;
	// Refusals the requests refused.
	Votes, Partials, Refusals int
	// Answered is the number of queries charged to the teacher's budget.
	Answered int
}

// Teach runs one teacher over a connection to the aggregator's hub
// (transport.Dial, or Memory.Dial in process): it answers the offer (the
// state machine checks it against the teacher's own Config), votes on
// every batch (charged first), signs the contributor set of each batch it
// voted in (one set per batch), partially decrypts only what the state
// machine allows (the set it signed, signed by every contributor, every
// vote's proof valid), and returns when the aggregator says it is done.
func Teach(ctx context.Context, conn transport.Conn, t *dppp.Teacher, opt TeachOptions) (*TeachResult, error) {
	if opt.IdleTimeout <= 0 {
		opt.IdleTimeout = 10 * time.Minute
	}
	logf := opt.Logf
	if logf == nil {
		logf = func(string, ...any) {}
	}
	res := &TeachResult{}
	var id uint32
	var params *dppp.Params
	if t.Unsigned() {
		logf("UNSIGNED: this teacher neither signs contributor sets nor checks the other contributors' signatures; a malicious aggregator can have two different sums holding its vote decrypted (differencing). Tests and --insecure runs only")
	}
	send := func(round uint64, m dppp.Message) error {
		b, err := m.MarshalBinary()
		if err != nil {
			return err
		}
		if err := conn.Send(ctx, transport.Envelope{Round: round, Type: m.Type(), Payload: b}); err != nil {
			if _, ok := transport.RefusalReason(err); ok {
				logf("the aggregator refused this teacher's %s of round %d: %v", m.Type(), round, err)
				return nil
			}
			return fmt.Errorf("dpppnet: sending %s: %w", m.Type(), err)
		}
		if opt.AfterSend != nil {
			return opt.AfterSend(m)
		}
		return nil
	}
	for {
		rctx, cancel := context.WithTimeout(ctx, opt.IdleTimeout)
		env, err := conn.Recv(rctx)
		idle := errors.Is(rctx.Err(), context.DeadlineExceeded)
		cancel()
		if err != nil {
			var gap *transport.GapError
			if errors.As(err, &gap) {
				logf("lost messages from the aggregator: %v", gap)
				continue
			}
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			msg := fmt.Sprintf("dpppnet: %s: no word from the aggregator", t.Name())
			if idle {
				msg += fmt.Sprintf(" for %v", opt.IdleTimeout)
			}
			return res, fmt.Errorf("%s (%d queries charged): %w", msg, t.Answered(), err)
		}
		if env.Type == TypeDone {
			res.Done = quote(string(env.Payload))
			res.Answered = t.Answered()
			logf("aggregator: %s", res.Done)
			return res, nil
		}
		m, err := dppp.Unmarshal(env.Payload)
		if err != nil {
			logf("ignored a malformed %q message: %v", env.Type, err)
			continue
		}
		var ans dppp.Message
		switch m := m.(type) {
		case *dppp.Offer:
			a, err := t.Accept(m)
			if err != nil {
				logf("refused the offered parameters: %v", err)
				ans = &dppp.Refuse{Session: m.Params.Session, From: id, Reason: err.Error()}
				if serr := send(env.Round, ans); serr != nil {
					return res, errors.Join(err, serr)
				}
				return res, err
			}
			id = a.From
			params = m.Params.Clone()
			cc, aa := m.Params.Trust()
			logf("accepted parameters %x… (N = %d, t = %d, colluders C = %d, absent A = %d: min contributors N − A = %d, noise for H = %d honest shares; %s noise, ε = %g, δ = %g per query, at most %d queries)",
				m.Params.Hash(), m.Params.N(), m.Params.Threshold, cc, aa, m.Params.MinContributors, m.Params.Honest, m.Params.Noise, m.Params.Epsilon, m.Params.Delta, m.Params.MaxQueries)
			ans = a
		case *dppp.Query:
			var v *dppp.Vote
			var err error
			if params != nil {
				err = CheckRows(m.Rows, params.Features)
			}
			if err == nil {
				v, err = t.HandleQuery(ctx, m)
			}
			if err != nil {
				logf("batch %d: refused to vote: %v", m.Batch, err)
				res.Refusals++
				ans = &dppp.Refuse{Session: m.Session, Batch: m.Batch, From: id, Reason: err.Error()}
			} else {
				logf("batch %d: voted on %d queries (charged before voting: %d queries so far)", m.Batch, len(m.Rows), t.Answered())
				res.Votes++
				ans = v
			}
		case *dppp.SignSet:
			sig, err := t.HandleSignSet(m)
			if err != nil {
				logf("batch %d: refused to sign the contributor set: %v", m.Batch, err)
				res.Refusals++
				ans = &dppp.Refuse{Session: m.Session, Batch: m.Batch, From: id, Reason: err.Error()}
			} else {
				logf("batch %d: signed the contributor set of %d votes", m.Batch, len(m.Set))
				ans = sig
			}
		case *dppp.Decrypt:
			pd, err := t.HandleDecrypt(m)
			if err != nil {
				logf("batch %d: refused to decrypt: %v", m.Batch, err)
				res.Refusals++
				ans = &dppp.Refuse{Session: m.Session, Batch: m.Batch, From: id, Reason: err.Error()}
			} else {
				logf("batch %d: partially decrypted the sum of %d contributors (every signature and proof checked)", m.Batch, len(m.Contributors))
				res.Partials++
				ans = pd
			}
		default:
			logf("ignored a %s message", m.Type())
			continue
		}
		if err := send(env.Round, ans); err != nil {
			res.Answered = t.Answered()
			return res, err
		}
	}
}

// quote returns text from the network as is if it is printable, or quoted.
func quote(s string) string {
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}
