package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/dpppnet"
	"github.com/dplearn/dplearn/internal/logx"
)

// dpppLogFlags are the diagnostic-log flags of dppp serve, teach, query and
// simulate: --log-level (capelog.go's flag and levels) and --log-format.
type dpppLogFlags struct {
	level  func() (string, error)
	format string
}

func addDPPPLogFlags(cmd *cobra.Command) *dpppLogFlags {
	f := &dpppLogFlags{level: addLogLevelFlag(cmd)}
	cmd.Flags().Lookup("log-level").Usage = "diagnostic records (slog) on stderr, besides the progress lines: off, error, warn, info or debug (--log-format text or json)"
	cmd.Flags().StringVar(&f.format, "log-format", "text", "encoding of the --log-level records: text (key=value) or json (one JSON object a line)")
	return f
}

// check validates the flags (before any work).
func (f *dpppLogFlags) check() error {
	if _, err := f.level(); err != nil {
		return err
	}
	if f.format != "text" && f.format != "json" {
		return fmt.Errorf("--log-format %q: want text or json", f.format)
	}
	return nil
}

// args are the flags again, for a child process ('dppp simulate --processes').
func (f *dpppLogFlags) args() []string {
	lv, _ := f.level()
	return []string{"--log-level", lv, "--log-format", f.format}
}

// diagnostics returns the --log-level handler (nil with off).
func (f *dpppLogFlags) diagnostics(w io.Writer) slog.Handler {
	lv, _ := f.level()
	l, ok := logLevels[lv]
	if !ok {
		return nil
	}
	opts := &slog.HandlerOptions{Level: l}
	if f.format == "json" {
		return slog.NewJSONHandler(w, opts)
	}
	return slog.NewTextHandler(w, opts)
}

// loggers returns a party's two loggers, both writing to w (a lockedWriter
// shared by every party of the process):
//
//   - proto, for dppp and dpppnet: each record that stands for a progress
//     line (dpppnet.ProgressLine) is printed as the line, timestamped and
//     prefixed (the user-facing output, as before --log-level existed);
//     with --log-level, every record at that level or above is also
//     written as a structured record, carrying self = the party's name;
//   - trans, for the transport: its warnings as text records (as before),
//     or with --log-level warn, info or debug the structured handler
//     alone (so that a warning is not written twice).
//
// The records carry names, batch numbers, counts and timings, never a
// teacher's votes, noise shares or decryptions (dppp's
// TestRunLogIsStructuredAndPrivate).
func (f *dpppLogFlags) loggers(w io.Writer, prefix, self string) (proto, trans *slog.Logger) {
	lines := logx.LineHandler(w, prefix, dpppnet.ProgressLine)
	warn := slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn})
	diag := f.diagnostics(w)
	if diag == nil {
		return slog.New(lines), slog.New(warn)
	}
	diag = diag.WithAttrs([]slog.Attr{slog.String("self", self)})
	proto = slog.New(slog.NewMultiHandler(lines, diag))
	if diag.Enabled(context.Background(), slog.LevelWarn) {
		return proto, slog.New(diag)
	}
	return proto, slog.New(slog.NewMultiHandler(warn, diag))
}
