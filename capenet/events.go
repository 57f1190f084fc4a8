package capenet

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/dplearn/dplearn/capefm"
)

// Event is one line of a party's log: what happened, in words (Message)
// and as fields for machines. Events hold names, rounds, timings and public
// parameters only, never anything computed from a site's data.
type Event struct {
	Time time.Time `json:"time"`
	// Kind says what happened. Aggregator: "listening", "connected",
	// "disconnected", "lost", "announce", "announce-refused", "roster",
	// "attempt", "round", "attempt-failed", "refused" (the transport or the
	// protocol refused a message), "transport" (a transport warning, e.g. a
	// TLS handshake from a certificate of another CA), "model", "aborted".
	// Site: "connected", "announced", "offer", "accepted", "refused-offer",
	// "sent", "ignored", "released", "outcome", "transport", "refused-keys"
	// (a relayed key failed its signature check: the site leaves the fit).
	Kind    string `json:"event"`
	Attempt uint32 `json:"attempt,omitempty"`
	// Round is the protocol round (0-7, see capefm); nil when the event has
	// none.
	Round     *int     `json:"round,omitempty"`
	RoundName string   `json:"round_name,omitempty"`
	Site      string   `json:"site,omitempty"`
	Sites     []string `json:"sites,omitempty"`
	// Round summaries: who answered, timed out, disconnected.
	Answered     []string `json:"answered,omitempty"`
	TimedOut     []string `json:"timed_out,omitempty"`
	Disconnected []string `json:"disconnected,omitempty"`
	Failed       []string `json:"failed,omitempty"`
	// Reason is a refusal's reason: the transport's ("replay", "oversized",
	// ...), "protocol" (the state machine refused it) or "key-signature" (a
	// key advertisement failed its signature check).
	Reason    string  `json:"reason,omitempty"`
	ElapsedMS float64 `json:"elapsed_ms,omitempty"`
	// N is an announced site's public number of rows (of units with a
	// privacy unit), or Σ N_s of a roster.
	N int64 `json:"n,omitempty"`
	// Address is the hub's listening address ("listening").
	Address string `json:"address,omitempty"`
	// Message is the event in words: the line the text log prints.
	Message string `json:"message"`
}

func roundPtr(r capefm.Round) *int { v := int(r); return &v }

// TextLog returns an event sink that writes each event's Message as one
// line, prefixed with prefix (e.g. "aggregator: "). It is safe for
// concurrent use.
func TextLog(w io.Writer, prefix string) func(Event) {
	var mu sync.Mutex
	return func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s%s %s\n", prefix, e.Time.Format("15:04:05.000"), e.Message)
	}
}

// JSONLog returns an event sink that writes each event as one JSON object
// per line. It is safe for concurrent use.
func JSONLog(w io.Writer) func(Event) {
	var mu sync.Mutex
	enc := json.NewEncoder(w)
	return func(e Event) {
		mu.Lock()
		defer mu.Unlock()
		_ = enc.Encode(e)
	}
}

// emitter fills in the time and drops events when there is no sink.
type emitter func(Event)

func (f emitter) emit(e Event) {
	if f == nil {
		return
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	f(e)
}

// SlogHandler returns a slog.Handler that turns the transport's warnings
// (level Warn and above, message starting "transport:") into Events of
// kind "transport" (for example a refused TLS handshake, which reaches no
// protocol code). Records carrying a "reason" attribute are refusals that
// Serve already reports from the hub's events, records below Warn
// (attachments) are reported as "connected"/"disconnected", and the
// protocols' own records (capefm, capenet) are reported by their events;
// all are dropped here, so that one logger can serve the transport and the
// protocol.
func SlogHandler(sink func(Event)) slog.Handler {
	return &slogHandler{sink: emitter(sink)}
}

type slogHandler struct {
	sink  emitter
	attrs []slog.Attr
}

func (h *slogHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *slogHandler) Handle(_ context.Context, r slog.Record) error {
	if !strings.HasPrefix(r.Message, "transport:") {
		return nil
	}
	var b strings.Builder
	b.WriteString(r.Message)
	skip := false
	site := ""
	add := func(a slog.Attr) bool {
		switch a.Key {
		case "reason":
			skip = true
		case "party":
			site = a.Value.String()
		}
		fmt.Fprintf(&b, " %s=%s", a.Key, a.Value.String())
		return true
	}
	for _, a := range h.attrs {
		add(a)
	}
	r.Attrs(add)
	if skip {
		return nil
	}
	h.sink.emit(Event{Time: r.Time, Kind: "transport", Site: site, Message: b.String()})
	return nil
}

func (h *slogHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &slogHandler{sink: h.sink, attrs: append(append([]slog.Attr(nil), h.attrs...), as...)}
}

func (h *slogHandler) WithGroup(string) slog.Handler { return h }

// verb says what the sites did in a round, for the round lines.
func verb(r capefm.Round) string {
	switch r {
	case capefm.RoundHello:
		return "agreed to the parameters"
	case capefm.RoundAdvertiseKeys:
		return "advertised their keys"
	case capefm.RoundShareKeys:
		return "sent their key shares"
	case capefm.RoundMaskedInput:
		return "sent masked inputs"
	case capefm.RoundUnmasking:
		return "sent unmasking shares"
	case capefm.RoundRelease:
		return "sent their releases"
	}
	return "answered"
}

// lastRound is the number of the protocol's last round (Combine).
const lastRound = int(capefm.RoundCombine)

// roundLabel renders "round 3/7 MaskedInput".
func roundLabel(r capefm.Round) string {
	return fmt.Sprintf("round %d/%d %s", int(r), lastRound, r)
}

// seconds renders a duration as "1.2 s".
func seconds(d time.Duration) string {
	return fmt.Sprintf("%.1f s", d.Seconds())
}

// roundEvent turns a capefm round report into an event with a line such as
// "round 3/7 MaskedInput: 4 of 5 sites sent masked inputs, site-3 timed out (1.2 s)".
func roundEvent(rep capefm.RoundReport) Event {
	var b strings.Builder
	if rep.Attempt > 1 {
		fmt.Fprintf(&b, "attempt %d, ", rep.Attempt)
	}
	fmt.Fprintf(&b, "%s: %d of %d sites %s", roundLabel(rep.Round), len(rep.Answered), len(rep.Expected), verb(rep.Round))
	for _, x := range []struct {
		names []string
		what  string
	}{{rep.TimedOut, "timed out"}, {rep.Disconnected, "disconnected"}, {rep.Failed, "failed"}} {
		if len(x.names) > 0 {
			fmt.Fprintf(&b, ", %s %s", strings.Join(x.names, ", "), x.what)
		}
	}
	fmt.Fprintf(&b, " (%s)", seconds(rep.Elapsed))
	return Event{Kind: "round", Attempt: rep.Attempt, Round: roundPtr(rep.Round), RoundName: rep.Round.String(),
		Sites: rep.Expected, Answered: rep.Answered, TimedOut: rep.TimedOut, Disconnected: rep.Disconnected, Failed: rep.Failed,
		ElapsedMS: float64(rep.Elapsed.Microseconds()) / 1000, Message: b.String()}
}
