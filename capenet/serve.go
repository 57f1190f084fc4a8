package capenet

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/report"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/transport"
)

// SessionID is the transport session of every capeFM fit: one hub serves
// one fit, and every attempt of it has its own 32-byte capefm session
// inside the payloads (checked by the hub's gate and the state machines),
// so the transport session need not be secret or fresh.
const SessionID = "dplearn-capefm-v2"

// Session returns the transport session capeFM runs in.
func Session() transport.Session {
	return transport.Session{Protocol: capefm.Protocol, ID: []byte(SessionID)}
}

// DefaultHubName is the aggregator's party name (its certificate's).
const DefaultHubName = "aggregator"

// MaxPayload returns the payload cap for a fit with D features and S sites:
// the largest capeFM message (a release, masked input or sum of L = D +
// D(D+1)/2 words, or a secure-aggregation message with S shares, or the key
// roster with S signed advertisements: about 650 bytes each with the
// certificate) with room to spare. Anything larger is refused by the hub
// (ReasonOversized).
func MaxPayload(d, sites int) int {
	l := d + d*(d+1)/2
	return 8*l + (512+keyAuthRoom)*sites + 4096 + capefm.MaxDeclaration
}

// keyAuthRoom is the room per site for its key signature and certificate
// (about 570 bytes with the certificates of package certs).
const keyAuthRoom = 2048

// HubConfig returns the transport configuration of a capeFM hub: the
// session, the expected site names as the roster, the payload cap, and
// repeats allowed (a site sends a Hello in every attempt, in the same round
// and of the same type; the state machines refuse real duplicates).
func HubConfig(sites []string, d int) transport.HubConfig {
	return transport.HubConfig{
		Session:      Session(),
		Roster:       slices.Clone(sites),
		MaxPayload:   MaxPayload(d, len(sites)),
		AllowRepeats: true,
	}
}

// ServeOptions configures Serve.
type ServeOptions struct {
	// Schema, if set, is the fit's schema (fingerprinting to the
	// template's): a site announcing another schema is then told which
	// column and field differ (capefm.GatherOptions.Declaration).
	Schema *schema.Schema
	// RoundTimeout bounds each protocol round (default 30 s).
	RoundTimeout time.Duration
	// JoinTimeout bounds the wait for the expected sites' announcements
	// (default RoundTimeout). Serve starts as soon as every expected site
	// has announced, or after JoinTimeout with at least template.MinSites.
	JoinTimeout time.Duration
	// MaxAttempts bounds the attempts (default capefm.DefaultMaxAttempts).
	MaxAttempts int
	// RedoAfterRelease: after a site lost once the noise was fixed, start
	// a new attempt whose guarantee composes the lost one (capefm); by
	// default the fit aborts.
	RedoAfterRelease bool
	// ReconnectGrace is how long a site whose connection closed has to
	// come back before it counts as lost for the attempt (default 2 s; the
	// transport reconnects by itself after a network hiccup).
	ReconnectGrace time.Duration
	// Events receives the log (TextLog, JSONLog, or any sink): the
	// progress a person or a monitor reads.
	Events func(Event)
	// Logger receives diagnostics as slog records: capefm's per-attempt
	// and per-round records (capefm.ServeOptions.Logger) and one Debug
	// record per message sent or received (site, type, round, bytes).
	// Names, rounds, sizes and timings only. nil discards.
	Logger *slog.Logger
	// NewSession returns each attempt's capefm session (default random).
	NewSession func() ([32]byte, error)
	// FinishTimeout bounds the wait, after the outcome was sent to every
	// site, for the sites to disconnect, so that the outcome is delivered
	// before the hub closes (default 5 s).
	FinishTimeout time.Duration
	// KeyVerifier checks every site's signed secure-aggregation keys
	// before the aggregator relays them (capefm.ServeOptions.KeyVerifier):
	// the aggregator's own certificate (certs.NewStatementSigner). A site
	// whose keys fail counts as missing from the attempt, and the honest
	// sites never see them. Nil: the keys are relayed unchecked (each site
	// still checks every other site's).
	KeyVerifier capefm.KeySigner
}

// Serve runs the aggregator of one capeFM fit over a transport hub (gRPC
// with mutual TLS from transport.Listen, or transport.NewMemory in
// process), configured with HubConfig. template holds the fit's public
// parameters as for capefm.Serve, with Sites naming the expected sites (in
// the order of their IDs) and N left 0 unless known in advance: the sites
// announce their N_s when they connect (capefm.Gather). Serve then runs the
// attempts (capefm.Serve), logs every round, and sends every site the
// outcome (capefm.Outcome). It returns the model of the successful attempt,
// or the error that ended the fit (*capefm.GatherError, *capefm.AbortError,
// *capefm.RefusedError, ...).
func Serve(ctx context.Context, hub transport.Hub, template capefm.Params, opt ServeOptions) (*capefm.RunResult, error) {
	if opt.RoundTimeout <= 0 {
		opt.RoundTimeout = 30 * time.Second
	}
	if opt.JoinTimeout <= 0 {
		opt.JoinTimeout = opt.RoundTimeout
	}
	if opt.ReconnectGrace <= 0 {
		opt.ReconnectGrace = 2 * time.Second
	}
	if opt.FinishTimeout <= 0 {
		opt.FinishTimeout = 5 * time.Second
	}
	log := emitter(opt.Events)
	a := &hubAdapter{hub: hub, log: log, dlog: logx.OrDiscard(opt.Logger), grace: opt.ReconnectGrace, detached: map[string]time.Time{}}
	expected := make([]string, len(template.Sites))
	known := map[string]int64{}
	for i, s := range template.Sites {
		expected[i] = s.Name
		if s.N != 0 {
			known[s.Name] = s.N
		}
	}
	roster, err := capefm.Gather(ctx, a, capefm.GatherOptions{
		Expected: expected, MinSites: template.MinSites, Timeout: opt.JoinTimeout, Schema: template.Schema, KnownN: known,
		Unit: template.Unit, MaxRows: template.MaxRows, Declaration: opt.Schema,
		OnAnnounce: func(site string, an *capefm.Announce, refusal error, lost bool) {
			switch {
			case lost:
				log.emit(Event{Kind: "announce-lost", Site: site, Message: fmt.Sprintf("%s disconnected before the fit started: it is no longer counted", site)})
			case refusal != nil:
				reason := refusal.Error()
				var ar *capefm.AnnounceRefusal
				if errors.As(refusal, &ar) {
					reason = ar.Reason
				}
				log.emit(Event{Kind: "announce-refused", Site: site, Message: fmt.Sprintf("refused %s's announcement: %s", site, reason)})
			default:
				noise := "secure noise"
				if !an.Secure {
					noise = "INSECURE seeded noise"
				}
				log.emit(Event{Kind: "announce", Site: site, N: an.N, Message: fmt.Sprintf("%s announced N = %d %s, schema %x…, %s", site, an.N, countNoun(an), an.Schema[:6], noise)})
			}
		},
	})
	if err != nil {
		out := &capefm.Outcome{Text: "no fit: " + err.Error()}
		log.emit(Event{Kind: "aborted", Message: out.Text})
		a.finish(ctx, expected, out, opt.FinishTimeout)
		return nil, err
	}
	var names, sizes []string
	var total int64
	for _, s := range roster {
		names = append(names, s.Name)
		sizes = append(sizes, fmt.Sprintf("%s %d", s.Name, s.N))
		total += s.N
	}
	msg := fmt.Sprintf("roster fixed: %d of %d expected sites (%s), N = %d", len(roster), len(expected), strings.Join(sizes, ", "), total)
	if missing := missingNames(expected, names); len(missing) > 0 {
		msg += "; starting without " + strings.Join(missing, ", ")
	}
	log.emit(Event{Kind: "roster", Sites: names, N: total, Message: msg})
	template.Sites = roster
	var decl []byte
	if opt.Schema != nil {
		if decl, err = capefm.SchemaDeclaration(opt.Schema); err != nil {
			return nil, err
		}
	}
	res, err := capefm.Serve(ctx, template, a, capefm.ServeOptions{
		Declaration:  decl,
		RoundTimeout: opt.RoundTimeout, MaxAttempts: opt.MaxAttempts, RedoAfterRelease: opt.RedoAfterRelease,
		NewSession: opt.NewSession, KeyVerifier: opt.KeyVerifier, Logger: opt.Logger,
		OnRefused: func(site string, err error) {
			reason := "protocol"
			if kae := (*capefm.KeyAuthError)(nil); errors.As(err, &kae) {
				reason = "key-signature"
			}
			log.emit(Event{Kind: "refused", Site: site, Reason: reason, Message: fmt.Sprintf("refused a message from %s: %v", site, err)})
		},
		OnAttempt: func(p capefm.Params, cal *capefm.Calibration) {
			ids := make([]string, len(p.Sites))
			for i, s := range p.Sites {
				ids[i] = s.Name
			}
			m := fmt.Sprintf("attempt %d: %d sites, mechanism %s, ε = %g, δ = %g", p.Attempt, len(p.Sites), p.Mechanism, p.Epsilon, p.Delta)
			if p.Mechanism == capefm.CapeFM {
				m += fmt.Sprintf(", S_C = %d, R = %g, τ = %s, κ = %s (model noise variance / central gaussian-fm)", p.Colluders, p.NoiseRatio, report.Up(p.Tau), report.Up(cal.Kappa))
			}
			log.emit(Event{Kind: "attempt", Attempt: p.Attempt, Sites: ids, Message: m})
		},
		OnAttemptEnd: func(l capefm.AttemptLog) {
			if l.Err == nil {
				return
			}
			m := fmt.Sprintf("attempt %d failed: %v", l.Attempt, l.Err)
			log.emit(Event{Kind: "attempt-failed", Attempt: l.Attempt, Sites: l.Sites, Message: m})
		},
		OnRound: func(rep capefm.RoundReport) { log.emit(roundEvent(rep)) },
	})
	// Tell every site of the roster how the fit ended, then give them a
	// moment to receive it and hang up.
	out := &capefm.Outcome{}
	if err != nil {
		out.Text = "the fit ended without a model: " + err.Error()
		log.emit(Event{Kind: "aborted", Message: out.Text})
	} else {
		out.OK, out.Session = true, res.Params.Session
		out.Text = fmt.Sprintf("model published (attempt %d, %d sites): %s per site", res.Params.Attempt, len(res.Params.Sites), res.Privacy.Guarantee())
		log.emit(Event{Kind: "model", Attempt: res.Params.Attempt, Message: out.Text})
	}
	a.finish(ctx, names, out, opt.FinishTimeout)
	return res, err
}

func missingNames(want, got []string) []string {
	var out []string
	for _, n := range want {
		if !slices.Contains(got, n) {
			out = append(out, n)
		}
	}
	return out
}

// hubAdapter is capefm.Hub over a transport.Hub.
type hubAdapter struct {
	hub   transport.Hub
	log   emitter
	dlog  *slog.Logger
	grace time.Duration
	// detached holds sites whose connection closed and who have not come
	// back yet, with the time it closed; after grace they are reported
	// lost. Used from Serve's goroutine only.
	detached map[string]time.Time
}

// sendTimeout bounds one queued send to one site: a site that stopped
// reading must not hold up the others.
const sendTimeout = 5 * time.Second

func (a *hubAdapter) Send(ctx context.Context, site string, m capefm.Message) error {
	b, err := m.MarshalBinary()
	if err != nil {
		return err
	}
	a.dlog.Debug("capenet: send", "site", site, "type", m.Type(), "round", int(m.Round()), "bytes", len(b))
	sctx, cancel := context.WithTimeout(ctx, sendTimeout)
	defer cancel()
	return a.hub.SendTo(sctx, site, transport.Envelope{Round: uint64(m.Round()), Type: m.Type(), Payload: b})
}

// SetRound gates the hub: envelopes of this round only, and, once an
// attempt runs, only payloads carrying its session (a replay or a
// straggler from another attempt is refused at the door, and its sender is
// told so).
func (a *hubAdapter) SetRound(session [32]byte, r capefm.Round) {
	a.hub.SetRound(uint64(r))
	if session == ([32]byte{}) {
		a.hub.SetGate(nil)
		return
	}
	a.hub.SetGate(func(env transport.Envelope) error {
		if env.Type == "announce" {
			return nil // answered by the protocol: too late to join
		}
		if len(env.Payload) < 34 || !bytes.Equal(env.Payload[2:34], session[:]) {
			return fmt.Errorf("capefm: a %q message that is not for the current attempt (session %x…): a replay or a straggler", env.Type, session[:6])
		}
		return nil
	})
}

func (a *hubAdapter) Receive(ctx context.Context) (capefm.Event, error) {
	for {
		now := time.Now()
		next := time.Duration(-1)
		for name, at := range a.detached {
			left := a.grace - now.Sub(at)
			if left <= 0 {
				delete(a.detached, name)
				a.log.emit(Event{Kind: "lost", Site: name, Message: fmt.Sprintf("%s did not reconnect within %v: counted as lost", name, a.grace)})
				return capefm.Event{Site: name, Lost: true}, nil
			}
			if next < 0 || left < next {
				next = left
			}
		}
		var wake <-chan time.Time
		var timer *time.Timer
		if next >= 0 {
			timer = time.NewTimer(next)
			wake = timer.C
		}
		ev, ok, err := a.next(ctx, wake)
		if timer != nil {
			timer.Stop()
		}
		if err != nil || ok {
			return ev, err
		}
	}
}

// next waits for one envelope or transport event; ok reports an event for
// capefm, otherwise the caller loops (a logged transport event, or wake).
func (a *hubAdapter) next(ctx context.Context, wake <-chan time.Time) (capefm.Event, bool, error) {
	// Connection events first, so that the log shows a site connecting
	// before what it sent.
	select {
	case ev := <-a.hub.Events():
		a.event(ev)
		return capefm.Event{}, false, nil
	default:
	}
	select {
	case env := <-a.hub.Inbox():
		a.dlog.Debug("capenet: received", "site", env.Sender, "type", env.Type, "round", env.Round, "bytes", len(env.Payload))
		m, err := capefm.Unmarshal(env.Payload)
		if err == nil && (m.Type() != env.Type || uint64(m.Round()) != env.Round) {
			err = fmt.Errorf("envelope says round %d %q, payload is round %d %q", env.Round, env.Type, m.Round(), m.Type())
		}
		if err != nil {
			a.log.emit(Event{Kind: "refused", Site: env.Sender, Reason: "malformed", Message: fmt.Sprintf("refused a message from %s: %v", env.Sender, err)})
			return capefm.Event{Site: env.Sender, Failed: err}, true, nil
		}
		return capefm.Event{Site: env.Sender, Msg: m}, true, nil
	case ev := <-a.hub.Events():
		a.event(ev)
		return capefm.Event{}, false, nil
	case <-wake:
		return capefm.Event{}, false, nil
	case <-a.hub.Done():
		return capefm.Event{}, false, errors.New("capenet: the hub closed")
	case <-ctx.Done():
		return capefm.Event{}, false, ctx.Err()
	}
}

// event logs a transport event and notes detachments.
func (a *hubAdapter) event(ev transport.Event) {
	switch ev.Kind {
	case transport.Attached:
		if _, ok := a.detached[ev.Party]; ok {
			delete(a.detached, ev.Party)
			a.log.emit(Event{Kind: "connected", Site: ev.Party, Message: ev.Party + " reconnected"})
		} else {
			a.log.emit(Event{Kind: "connected", Site: ev.Party, Message: ev.Party + " connected"})
		}
	case transport.Detached:
		a.detached[ev.Party] = ev.Time
		a.log.emit(Event{Kind: "disconnected", Site: ev.Party, Message: fmt.Sprintf("%s disconnected (%v)", ev.Party, ev.Err)})
	case transport.Refused:
		reason, _ := transport.RefusalReason(ev.Err)
		a.log.emit(Event{Kind: "refused", Site: ev.Party, Reason: string(reason), Message: fmt.Sprintf("refused a message from %s: %v", ev.Party, ev.Err)})
	}
}

// finish sends the outcome to every site and waits (up to timeout) until
// they have disconnected, so it is delivered before the hub closes.
func (a *hubAdapter) finish(ctx context.Context, sites []string, out *capefm.Outcome, timeout time.Duration) {
	a.hub.SetGate(func(transport.Envelope) error { return errors.New("capefm: the fit is over") })
	for _, s := range sites {
		if err := a.Send(ctx, s, out); err != nil && ctx.Err() != nil {
			return
		}
	}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		connected := a.hub.Connected()
		if !slices.ContainsFunc(sites, func(s string) bool { return slices.Contains(connected, s) }) {
			return
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
		case <-a.hub.Done():
			return
		}
	}
}

// countNoun is what an announcement's N counts: rows, or units of the
// privacy unit (at most K rows each).
func countNoun(a *capefm.Announce) string {
	if a.MaxRows > 0 {
		return fmt.Sprintf("units of %q (at most %d rows each)", a.Unit, a.MaxRows)
	}
	return "rows"
}
