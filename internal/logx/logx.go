// Package logx holds the one logging convention of the protocol packages
// (capefm, secagg, capenet, transport, dppp, dpppnet, the consortium's
// coordinator and node): they take a *slog.Logger, nil meaning discard,
// and log names, rounds, attempts, peers, sizes and timings as
// attributes, never anything computed from a party's data. Where records
// are also a user's progress output (dppp, the consortium), Templates and
// LineHandler print them as human lines.
package logx

import "log/slog"

// discard is stateless (its handler drops everything), so sharing it is
// not shared mutable state.
var discard = slog.New(slog.DiscardHandler)

// OrDiscard returns l, or a logger that drops every record when l is nil.
func OrDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return discard
	}
	return l
}

// Err renders an error as an attribute "err" (its message; slog would
// otherwise print an empty object for most errors in JSON).
func Err(err error) slog.Attr {
	if err == nil {
		return slog.String("err", "")
	}
	return slog.String("err", err.Error())
}
