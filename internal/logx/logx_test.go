package logx

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
)

func TestOrDiscard(t *testing.T) {
	if got := OrDiscard(nil); got == nil || got.Enabled(context.Background(), slog.LevelError) {
		t.Fatalf("OrDiscard(nil) = %v: want a logger with every level disabled", got)
	}
	var b bytes.Buffer
	l := slog.New(slog.NewTextHandler(&b, nil))
	if OrDiscard(l) != l {
		t.Fatal("OrDiscard(l) did not return l")
	}
	OrDiscard(l).Info("hello", Err(errors.New("boom")))
	if !strings.Contains(b.String(), "err=boom") {
		t.Fatalf("Err attribute not rendered: %q", b.String())
	}
}
