package dpppnet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/transport"
)

// TeachOptions configures Teach.
type TeachOptions struct {
	// IdleTimeout: Teach gives up when the aggregator sends nothing for
	// this long (default 10 min).
	IdleTimeout time.Duration
	// Logger receives the teacher's records (nil: none): parameters
	// accepted or refused, each batch voted, signed and decrypted, with
	// batch numbers, counts and errors as attributes, never the
	// teacher's votes, noise shares or partial decryptions; ProgressLine
	// renders them as progress lines.
	Logger *slog.Logger
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
	log := logx.OrDiscard(opt.Logger)
	res := &TeachResult{}
	var id uint32
	var params *dppp.Params
	if t.Unsigned() {
		log.Warn(msgTeacherUnsigned)
	}
	send := func(round uint64, m dppp.Message) error {
		b, err := m.MarshalBinary()
		if err != nil {
			return err
		}
		if err := conn.Send(ctx, transport.Envelope{Round: round, Type: m.Type(), Payload: b}); err != nil {
			if _, ok := transport.RefusalReason(err); ok {
				log.Warn(msgSentRefused, "type", m.Type(), "round", round, logx.Err(err))
				return nil
			}
			return fmt.Errorf("dpppnet: sending %s: %w", m.Type(), err)
		}
		log.Debug(msgSent, "type", m.Type(), "round", round, "bytes", len(b))
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
				log.Warn(msgGap, "err", gap.Error())
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
			log.Info(msgAggregatorDone, "text", res.Done)
			return res, nil
		}
		m, err := dppp.Unmarshal(env.Payload)
		if err != nil {
			log.Warn(msgMalformed, "type", env.Type, logx.Err(err))
			continue
		}
		var ans dppp.Message
		switch m := m.(type) {
		case *dppp.Offer:
			a, err := t.Accept(m)
			if err != nil {
				log.Warn(msgRefusedOffer, logx.Err(err))
				ans = &dppp.Refuse{Session: m.Params.Session, From: id, Reason: err.Error()}
				if serr := send(env.Round, ans); serr != nil {
					return res, errors.Join(err, serr)
				}
				return res, err
			}
			id = a.From
			params = m.Params.Clone()
			cc, aa := m.Params.Trust()
			log.Info(msgAcceptedParams, "params", fmt.Sprintf("%x", m.Params.Hash()), "teachers", m.Params.N(), "threshold", m.Params.Threshold, "colluders", cc, "absent", aa,
				"min_contributors", m.Params.MinContributors, "honest", m.Params.Honest, "noise", m.Params.Noise.String(), "epsilon", m.Params.Epsilon, "delta", m.Params.Delta, "max_queries", m.Params.MaxQueries)
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
				log.Warn(msgRefusedVote, "batch", m.Batch, logx.Err(err))
				res.Refusals++
				ans = &dppp.Refuse{Session: m.Session, Batch: m.Batch, From: id, Reason: err.Error()}
			} else {
				log.Info(msgVotedOn, "batch", m.Batch, "queries", len(m.Rows), "answered", t.Answered())
				res.Votes++
				ans = v
			}
		case *dppp.SignSet:
			sig, err := t.HandleSignSet(m)
			if err != nil {
				log.Warn(msgRefusedSign, "batch", m.Batch, logx.Err(err))
				res.Refusals++
				ans = &dppp.Refuse{Session: m.Session, Batch: m.Batch, From: id, Reason: err.Error()}
			} else {
				log.Info(msgSignedSet, "batch", m.Batch, "contributors", len(m.Set))
				ans = sig
			}
		case *dppp.Decrypt:
			pd, err := t.HandleDecrypt(m)
			if err != nil {
				log.Warn(msgRefusedDecrypt, "batch", m.Batch, logx.Err(err))
				res.Refusals++
				ans = &dppp.Refuse{Session: m.Session, Batch: m.Batch, From: id, Reason: err.Error()}
			} else {
				log.Info(msgDecrypted, "batch", m.Batch, "contributors", len(m.Contributors))
				res.Partials++
				ans = pd
			}
		default:
			log.Warn(msgIgnoredType, "type", m.Type())
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
