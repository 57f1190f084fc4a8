package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/capenet"
)

// logLevels maps --log-level to the lowest level written; "off" (the
// default) writes no diagnostics, only the event log.
var logLevels = map[string]slog.Level{"error": slog.LevelError, "warn": slog.LevelWarn, "info": slog.LevelInfo, "debug": slog.LevelDebug}

// addLogLevelFlag registers --log-level on a cape command; the returned
// function checks its value.
func addLogLevelFlag(cmd *cobra.Command) func() (string, error) {
	f := cmd.Flags().String("log-level", "off", "diagnostic records (slog) on stderr, besides the event log: off, error, warn, info or debug; in the --format's encoding (text or JSON lines)")
	return func() (string, error) {
		if _, ok := logLevels[*f]; ok || *f == "off" {
			return *f, nil
		}
		return "", fmt.Errorf("--log-level %q: want off, error, warn, info or debug", *f)
	}
}

// newCapeLogger builds a cape command's one *slog.Logger, which it passes
// to the transport, capenet and capefm:
//
//   - the transport's warnings (a refused TLS handshake, a lost stream)
//     become lines of the event log, sink, as they always did
//     (capenet.SlogHandler);
//   - with --log-level other than off, every record at that level or above
//     is also written to w by slog's text handler (--format json: its JSON
//     handler): attempts, rounds, messages sent and received with their
//     sizes, refusals. The records carry names, rounds, sizes and timings,
//     never a party's data (TestCapeLogHasNoPrivateValues).
func newCapeLogger(w io.Writer, format outputFormat, level string, sink func(capenet.Event)) *slog.Logger {
	hs := []slog.Handler{capenet.SlogHandler(sink)}
	if l, ok := logLevels[level]; ok {
		opts := &slog.HandlerOptions{Level: l}
		if format == formatJSON {
			hs = append(hs, slog.NewJSONHandler(w, opts))
		} else {
			hs = append(hs, slog.NewTextHandler(w, opts))
		}
	}
	return slog.New(slog.NewMultiHandler(hs...))
}
