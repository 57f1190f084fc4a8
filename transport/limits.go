package transport

import (
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"
)

// Flood limits: defaults of HubConfig.RefusalLogBurst and
// RefusalLogInterval, and of ServerConfig.MaxConnsPerParty and
// MaxCallsPerParty.
const (
	// DefaultRefusalLogBurst refusals per party per interval are logged and
	// reported (Refused events) in full; the rest are counted and
	// summarised in one line and one event when the interval ends.
	DefaultRefusalLogBurst = 5
	// DefaultRefusalLogInterval is the interval of the refusal summaries.
	DefaultRefusalLogInterval = 10 * time.Second
	// DefaultMaxConnsPerParty caps the connections open at once under one
	// party name: a party uses one, and briefly two while it reconnects
	// before the hub noticed the old one is dead.
	DefaultMaxConnsPerParty = 4
	// DefaultMaxCallsPerParty caps the calls (Send and Receive) in
	// progress at once from one party, over all its connections: a party
	// has one Receive and at most one Send at a time, two Receives while it
	// re-attaches.
	DefaultMaxCallsPerParty = 4
	// maxStreamsPerConn is gRPC's per-connection stream limit.
	maxStreamsPerConn = 8
	// maxLimiterKeys bounds the parties a refusal limiter tracks one by
	// one; beyond it they share one entry.
	maxLimiterKeys = 1024
)

// ReasonSummary marks the Refused event (and log line) that summarises the
// refusals of one party that were counted but not reported one by one
// (HubConfig.RefusalLogBurst).
const ReasonSummary Reason = "refusal-summary"

// ReasonTooMany is the refusal of a connection or call over a party's cap
// (ServerConfig.MaxConnsPerParty, MaxCallsPerParty).
const ReasonTooMany Reason = "too-many"

// refusalLimiter lets the first burst refusals of each key (a party
// name) per interval through, counts the rest by reason and, when the
// interval ends, hands the count to summarise. It keeps the log and the
// Refused events of a hub bounded under a flood: at most burst + 1 lines
// per party per interval.
type refusalLimiter struct {
	burst     int
	interval  time.Duration
	summarise func(key string, n int, reasons map[string]int, interval time.Duration)

	mu      sync.Mutex
	windows map[string]*refusalWindow
	closed  bool
}

type refusalWindow struct {
	start   time.Time
	logged  int
	more    int
	reasons map[string]int
	timer   *time.Timer
}

func newRefusalLimiter(burst int, interval time.Duration, summarise func(string, int, map[string]int, time.Duration)) *refusalLimiter {
	return &refusalLimiter{burst: burst, interval: interval, summarise: summarise, windows: map[string]*refusalWindow{}}
}

// allow reports whether a refusal of key for reason is to be reported in
// full; if not, it was counted for the summary.
func (l *refusalLimiter) allow(key, reason string) bool {
	now := time.Now()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return false
	}
	w := l.windows[key]
	if w == nil && len(l.windows) >= maxLimiterKeys {
		l.prune(now)
		if len(l.windows) >= maxLimiterKeys {
			key = "(other parties)"
			w = l.windows[key]
		}
	}
	if w == nil || now.Sub(w.start) >= l.interval {
		// A window that ended is summarised by its own timer.
		w = &refusalWindow{start: now}
		l.windows[key] = w
	}
	if w.logged < l.burst {
		w.logged++
		return true
	}
	if w.more == 0 {
		w.reasons = map[string]int{}
		w.timer = time.AfterFunc(l.interval-now.Sub(w.start), func() { l.flush(key, w) })
	}
	w.more++
	w.reasons[reason]++
	return false
}

// prune drops the windows that ended and have nothing to summarise.
// l.mu held.
func (l *refusalLimiter) prune(now time.Time) {
	for k, w := range l.windows {
		if now.Sub(w.start) >= l.interval && w.more == 0 {
			delete(l.windows, k)
		}
	}
}

// flush summarises window w of key, once.
func (l *refusalLimiter) flush(key string, w *refusalWindow) {
	l.mu.Lock()
	n, reasons := w.more, w.reasons
	w.more, w.reasons = 0, nil
	l.mu.Unlock()
	if n > 0 {
		l.summarise(key, n, reasons, l.interval)
	}
}

// close summarises every pending window at once and stops counting.
func (l *refusalLimiter) close() {
	l.mu.Lock()
	l.closed = true
	pending := map[string]*refusalWindow{}
	for k, w := range l.windows {
		if w.more > 0 {
			w.timer.Stop()
			pending[k] = w
		}
	}
	l.mu.Unlock()
	for k, w := range pending {
		l.flush(k, w)
	}
}

// summaryText is the sentence of a summary: "transport: 2345 more
// refusals from site-1 in the last 10s (replay 2000, wrong-round 345)".
func summaryText(what, key string, n int, reasons map[string]int, interval time.Duration, burst int) string {
	keys := slices.Sorted(maps.Keys(reasons))
	slices.SortStableFunc(keys, func(a, b string) int { return reasons[b] - reasons[a] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, reasons[k])
	}
	return fmt.Sprintf("transport: %d more %s from %s in the last %v (%s); only the first %d per %v are logged one by one", n, what, key, interval, strings.Join(parts, ", "), burst, interval)
}

// logLimited is a slog line limited like refusals (for the hub's own
// warnings that a peer can trigger at will).
func logLimited(l *refusalLimiter, log *slog.Logger, key, reason, msg string, args ...any) {
	if l.allow(key, reason) {
		log.Warn(msg, args...)
	}
}
