package coordinator_test

import (
	"log/slog"
	"testing"

	"github.com/dplearn/dplearn/internal/logx"
)

// lineLogger returns a logger writing the progress lines that line renders
// to the test's log, each after prefix.
func lineLogger(t testing.TB, prefix string, line func(slog.Record) (string, bool)) *slog.Logger {
	return slog.New(logx.LineFunc(line, func(l string) { t.Log(prefix + l) }))
}
