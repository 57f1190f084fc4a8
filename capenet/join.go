package capenet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/report"
	"github.com/dplearn/dplearn/transport"
)

// JoinOptions configures Join.
type JoinOptions struct {
	// IdleTimeout: Join gives up when the aggregator sends nothing for
	// this long (default 10 min; the aggregator itself waits at most its
	// join timeout and one round timeout per round).
	IdleTimeout time.Duration
	// Events receives the site's log (the progress a person reads).
	Events func(Event)
	// Logger receives one Debug record per message sent or received
	// (site, type, round, attempt, bytes): sizes and names, never
	// payloads. nil discards.
	Logger *slog.Logger
	// BeforeSend is a test hook, called before each message is sent with
	// the message and its encoding; a non-nil error stops Join with that
	// error, nothing sent. The CLI test binary's --test-fault flag uses it to
	// make a site exit, replay or send an oversized message at a round.
	BeforeSend func(ctx context.Context, m capefm.Message, payload []byte, current *capefm.Params) error
}

// JoinResult is a site's view of a completed fit.
type JoinResult struct {
	// Outcome is the aggregator's last word (OK: a model was published).
	Outcome *capefm.Outcome
	// Releases counts the releases the site made (each charged to its
	// ledger), Attempts the offers it accepted.
	Releases, Attempts int
}

// OutcomeError is a fit that ended without a model, or without this site,
// as the aggregator reported it.
type OutcomeError struct {
	Text     string
	Releases int // releases this site made in the fit (charged)
}

func (e *OutcomeError) Error() string {
	msg := "capenet: the aggregator ended this site's part: " + quoteUnsafe(e.Text)
	if e.Releases > 0 {
		msg += fmt.Sprintf(" (this site released %d time(s); each release was charged to its ledger)", e.Releases)
	}
	return msg
}

// quoteUnsafe returns text from the network as is if it is printable, or
// quoted.
func quoteUnsafe(s string) string {
	for _, r := range s {
		if !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// Join runs one site of a capeFM fit over a connection to the aggregator's
// hub (transport.Dial, or Memory.Dial in process): it announces the site
// (name, N_s, schema fingerprint), answers the aggregator's messages with
// the site's state machine (which checks every offered parameter, its
// ledger and the calibration before it spends anything), and returns when
// the aggregator reports the outcome. A refused offer is sent back to the
// aggregator and returned as the error (a *capefm.MismatchError naming the
// field, or the ledger's refusal).
func Join(ctx context.Context, conn transport.Conn, site *capefm.Site, opt JoinOptions) (*JoinResult, error) {
	if opt.IdleTimeout <= 0 {
		opt.IdleTimeout = 10 * time.Minute
	}
	log := emitter(opt.Events)
	dlog := logx.OrDiscard(opt.Logger).With("site", site.Name())
	res := &JoinResult{}
	var current *capefm.Params
	send := func(m capefm.Message) error {
		b, err := m.MarshalBinary()
		if err != nil {
			return err
		}
		if opt.BeforeSend != nil {
			if err := opt.BeforeSend(ctx, m, b, current); err != nil {
				return err
			}
		}
		var attempt uint32
		if current != nil {
			attempt = current.Attempt
		}
		dlog.Debug("capenet: send", "type", m.Type(), "round", int(m.Round()), "attempt", attempt, "bytes", len(b))
		if err := conn.Send(ctx, transport.Envelope{Round: uint64(m.Round()), Type: m.Type(), Payload: b}); err != nil {
			if r, ok := transport.RefusalReason(err); ok && r == transport.ReasonWrongRound && m.Type() == "announce" {
				return fmt.Errorf("capenet: the aggregator's fit has already started, without this site (%w)", err)
			}
			return fmt.Errorf("capenet: sending %s: %w", m.Type(), err)
		}
		return nil
	}
	an := site.Announce()
	if err := send(an); err != nil {
		return nil, err
	}
	log.emit(Event{Kind: "announced", Site: site.Name(), N: an.N, Message: fmt.Sprintf("announced %s: N = %d %s, schema %x…; waiting for the other sites and the offer", site.Name(), an.N, countNoun(an), an.Schema[:6])})
	for {
		rctx, cancel := context.WithTimeout(ctx, opt.IdleTimeout)
		env, err := conn.Recv(rctx)
		idle := errors.Is(rctx.Err(), context.DeadlineExceeded)
		cancel()
		if err != nil {
			var gap *transport.GapError
			if errors.As(err, &gap) {
				log.emit(Event{Kind: "transport", Message: "lost messages from the aggregator: " + gap.Error()})
				continue
			}
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			msg := fmt.Sprintf("capenet: %s: no outcome from the aggregator", site.Name())
			if idle {
				msg += fmt.Sprintf(" (nothing received for %v)", opt.IdleTimeout)
			}
			if res.Releases > 0 {
				msg += fmt.Sprintf("; this site released %d time(s), each charged to its ledger, so the fit may have published a model or not", res.Releases)
			}
			return res, fmt.Errorf("%s: %w", msg, err)
		}
		dlog.Debug("capenet: received", "type", env.Type, "round", env.Round, "bytes", len(env.Payload))
		m, err := capefm.Unmarshal(env.Payload)
		if err != nil {
			log.emit(Event{Kind: "ignored", Message: fmt.Sprintf("ignored a malformed %q message from the aggregator: %v", env.Type, err)})
			continue
		}
		if o, ok := m.(*capefm.Outcome); ok {
			res.Outcome = o
			log.emit(Event{Kind: "outcome", Message: "outcome: " + quoteUnsafe(o.Text)})
			if !o.OK {
				return res, &OutcomeError{Text: o.Text, Releases: res.Releases}
			}
			return res, nil
		}
		if o, ok := m.(*capefm.Offer); ok {
			p := o.Params.Clone()
			current = &p
			log.emit(Event{Kind: "offer", Attempt: p.Attempt, Round: roundPtr(capefm.RoundHello), RoundName: "Hello", Message: describeOffer(&p)})
		}
		ans, herr := site.Handle(ctx, m)
		if kae := (*capefm.KeyAuthError)(nil); errors.As(herr, &kae) {
			// A key that fails its signature check reached this site: the
			// aggregator relayed it (a malicious aggregator, or one that does
			// not check the keys it relays). The site derived nothing from it;
			// it stops taking part in this fit and says why.
			log.emit(Event{Kind: "refused-keys", Message: "REFUSED the key roster: " + herr.Error() + "; this site leaves the fit (check the aggregator)"})
			return res, fmt.Errorf("capenet: %s left the fit: %w", site.Name(), herr)
		}
		if ans == nil {
			if herr != nil {
				log.emit(Event{Kind: "ignored", Message: "ignored a message: " + herr.Error()})
			}
			continue
		}
		if ref, ok := ans.(*capefm.Refuse); ok {
			log.emit(Event{Kind: "refused-offer", Message: "refused the offered parameters: " + ref.Reason})
			if err := send(ans); err != nil {
				return res, errors.Join(herr, err)
			}
			return res, herr
		}
		if err := send(ans); err != nil {
			return res, err
		}
		ev := Event{Kind: "sent", Round: roundPtr(ans.Round()), RoundName: ans.Round().String()}
		if current != nil {
			ev.Attempt = current.Attempt
		}
		switch ans.(type) {
		case *capefm.Hello:
			res.Attempts++
			ev.Kind, ev.Message = "accepted", fmt.Sprintf("%s: parameters checked against this site's flags, calibration and ledger: accepted", roundLabel(capefm.RoundHello))
		case *capefm.Release:
			res.Releases++
			ev.Kind = "released"
			ev.Message = fmt.Sprintf("%s: released this site's perturbed objective", roundLabel(capefm.RoundRelease))
			if current != nil {
				ev.Message += fmt.Sprintf(" (ε = %g, δ = %g charged to the ledger)", current.Epsilon, current.Delta)
			}
		default:
			ev.Message = fmt.Sprintf("%s: sent %s", roundLabel(ans.Round()), ans.Type())
		}
		log.emit(ev)
	}
}

// describeOffer renders an offer's public parameters for the site's log.
func describeOffer(p *capefm.Params) string {
	names := make([]string, len(p.Sites))
	for i, s := range p.Sites {
		names[i] = fmt.Sprintf("%s %d", s.Name, s.N)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "attempt %d offered: %s %s, %d sites (%s), ε = %g, δ = %g", p.Attempt, p.Mechanism, p.Kind, len(p.Sites), strings.Join(names, ", "), p.Epsilon, p.Delta)
	if p.Mechanism == capefm.CapeFM {
		fmt.Fprintf(&b, ", S_C = %d, R = %g, τ = %s", p.Colluders, p.NoiseRatio, report.Up(p.Tau))
	}
	if len(p.Prior) > 0 {
		fmt.Fprintf(&b, ", composing %d earlier release(s)", len(p.Prior))
	}
	return b.String()
}
