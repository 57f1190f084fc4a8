package capenet

import (
	"errors"
	"fmt"
	"log/slog"
	"testing"
)

// TestSlogHandler: of the records a shared logger carries, only the
// transport's warnings without a refusal reason become events, with the
// party as Site and the attributes in the message.
func TestSlogHandler(t *testing.T) {
	cases := []struct {
		name  string
		log   func(*slog.Logger)
		event string // "" for none
		site  string
	}{
		{"transport warning", func(l *slog.Logger) {
			l.Warn("transport: TLS handshake refused", "remote", "127.0.0.1:5")
		}, "transport: TLS handshake refused remote=127.0.0.1:5", ""},
		{"with party", func(l *slog.Logger) {
			l.With("party", "site-2").Warn("transport: envelopes lost", "err", errors.New("gap").Error())
		}, "transport: envelopes lost party=site-2 err=gap", "site-2"},
		{"refusal (reported by Serve)", func(l *slog.Logger) {
			l.Warn("transport: refused an envelope", "party", "site-1", "reason", "replay")
		}, "", ""},
		{"transport info", func(l *slog.Logger) { l.Info("transport: party attached", "party", "site-1") }, "", ""},
		{"protocol warning", func(l *slog.Logger) {
			l.Warn("capefm: site disconnected", "site", "site-3")
		}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []Event
			c.log(slog.New(SlogHandler(func(e Event) { got = append(got, e) })))
			switch {
			case c.event == "" && len(got) != 0:
				t.Errorf("events %v, want none", got)
			case c.event != "" && (len(got) != 1 || got[0].Kind != "transport" || got[0].Message != c.event || got[0].Site != c.site):
				t.Errorf("events %s, want one transport event %q site %q", fmt.Sprint(got), c.event, c.site)
			}
		})
	}
}
