package dpppnet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/dplearn/dplearn/certs"
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
	// Identity is the teacher's certificate (from the deployment's CA): it
	// signs the teacher's votes, and the teacher decrypts a sum only if
	// every listed vote is signed by its teacher (see TypeVoteSignature).
	// nil (--insecure): votes are not signed and the listed votes are not
	// verified, so a malicious aggregator could substitute them.
	Identity *certs.Party
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
// every batch, partially decrypts only what the state machine allows
// (minimum contributors, its own vote listed, its budget), and returns
// when the aggregator says it is done.
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
	var verifier *sigVerifier
	sigs := map[uint64]map[uint32]*voteSig{}
	if opt.Identity != nil {
		verifier = newSigVerifier(opt.Identity)
	} else {
		logf("no identity: this teacher's votes are not signed and the votes listed in a decryption request are not verified (a malicious aggregator could substitute them)")
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
		if env.Type == TypeVoteSignatures {
			session, batch, list, err := parseSigs(env.Payload, bundleHeader)
			if err != nil || params == nil || session != params.Session {
				logf("ignored a vote signatures message: %v", err)
				continue
			}
			byID := map[uint32]*voteSig{}
			for _, v := range list {
				byID[v.From] = v
			}
			sigs[batch] = byID
			for b := range sigs {
				if b+2 < batch {
					delete(sigs, b)
				}
			}
			continue
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
			logf("accepted parameters %x… (N = %d, t = %d, min contributors %d, %s noise, ε = %g, δ = %g per query, at most %d queries)",
				m.Params.Hash(), m.Params.N(), m.Params.Threshold, m.Params.MinContributors, m.Params.Noise, m.Params.Epsilon, m.Params.Delta, m.Params.MaxQueries)
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
				if opt.Identity != nil {
					vs, err := signVote(opt.Identity, m.Session, m.Batch, id, v.Ciphertext)
					if err != nil {
						return res, err
					}
					if err := conn.Send(ctx, transport.Envelope{Round: env.Round, Type: TypeVoteSignature, Payload: marshalVoteSig(m.Session, m.Batch, vs)}); err != nil {
						logf("batch %d: sending the vote's signature: %v", m.Batch, err)
					}
				}
				logf("batch %d: voted on %d queries", m.Batch, len(m.Rows))
				res.Votes++
				ans = v
			}
		case *dppp.Decrypt:
			err := checkSigned(t.Name(), verifier, params, id, sigs[m.Batch], m)
			var pd *dppp.Partial
			if err == nil {
				pd, err = t.HandleDecrypt(m)
			}
			if err != nil {
				logf("batch %d: refused to decrypt: %v", m.Batch, err)
				res.Refusals++
				ans = &dppp.Refuse{Session: m.Session, Batch: m.Batch, From: id, Reason: err.Error()}
			} else {
				logf("batch %d: partially decrypted the sum of %d contributors (%d queries charged so far)", m.Batch, len(m.Contributors), t.Answered())
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

// checkSigned checks that every vote listed in d but the teacher's own (own,
// which dppp checks byte for byte) carries its teacher's signature (v nil:
// no check).
func checkSigned(name string, v *sigVerifier, p *dppp.Params, own uint32, sigs map[uint32]*voteSig, d *dppp.Decrypt) error {
	if v == nil || p == nil || len(d.Contributors) != len(d.Ciphertexts) {
		return nil // dppp refuses a mismatched request itself
	}
	for i, id := range d.Contributors {
		if id == own {
			continue
		}
		if err := v.verify(sigs[id], p.TeacherName(id), d.Session, d.Batch, id, d.Ciphertexts[i]); err != nil {
			return fmt.Errorf("%w: %s: batch %d: the vote listed as contributor %d (%s) is not signed by that teacher (%v): refusing to decrypt a sum of votes whose senders are not proven", dppp.ErrRefused, name, d.Batch, id, p.TeacherName(id), err)
		}
	}
	return nil
}
