package logx

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Templates maps a record's fixed message to the human line it stands
// for: "{key}" is replaced by the value of the record's attribute key (an
// attribute added by Logger.With included), as fmt's %v writes it;
// "{key:%.2f}" formats it with that verb. A package whose records are also a
// user's progress output (dppp, dpppnet) keeps its templates beside its
// log calls, so that the line and the record cannot drift apart.
type Templates map[string]string

// Line renders r by the template of its message; ok is false when the
// message has none (a diagnostic record, not a progress line).
func (t Templates) Line(r slog.Record) (line string, ok bool) {
	tmpl, ok := t[r.Message]
	if !ok {
		return "", false
	}
	vals := map[string]slog.Value{}
	r.Attrs(func(a slog.Attr) bool {
		vals[a.Key] = a.Value
		return true
	})
	var b strings.Builder
	for {
		i := strings.IndexByte(tmpl, '{')
		j := -1
		if i >= 0 {
			j = strings.IndexByte(tmpl[i+1:], '}')
		}
		if j < 0 {
			b.WriteString(tmpl)
			return b.String(), true
		}
		key := tmpl[i+1 : i+1+j]
		b.WriteString(tmpl[:i])
		key, verb, _ := strings.Cut(key, ":")
		if v, ok := vals[key]; ok && verb != "" {
			fmt.Fprintf(&b, verb, v.Resolve().Any())
		} else if ok {
			b.WriteString(render(v))
		} else {
			b.WriteString("{" + key + "}")
		}
		tmpl = tmpl[i+2+j:]
	}
}

// render writes a value as fmt's %v does (%g for floats; an error
// attribute made by Err is a string already).
func render(v slog.Value) string {
	switch v.Kind() {
	case slog.KindFloat64:
		return strconv.FormatFloat(v.Float64(), 'g', -1, 64)
	case slog.KindDuration:
		return v.Duration().String()
	default:
		return v.Resolve().String()
	}
}

// LineHandler returns a handler writing, for each record at Info or above
// that line renders (ok), one line "15:04:05.000 <prefix><line>" to w
// (safe for concurrent use); other records are dropped. It is how a
// command prints a protocol's progress lines from the protocol's one
// *slog.Logger (line: the protocol's Templates.Line).
func LineHandler(w io.Writer, prefix string, line func(slog.Record) (string, bool)) slog.Handler {
	var mu sync.Mutex
	return &lineHandler{line: line, emit: func(at time.Time, s string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s %s%s\n", at.Format("15:04:05.000"), prefix, s)
	}}
}

// Message renders a record as its message: the line function for a
// command's own progress lines, whose message is already the human line.
func Message(r slog.Record) (string, bool) { return r.Message, true }

// Printf returns a printf writing each line through LineHandler(w, prefix,
// Message): a command's own progress lines (not a protocol's records),
// timestamped and prefixed as the protocol's lines are. It is safe for
// concurrent use.
func Printf(w io.Writer, prefix string) func(format string, args ...any) {
	l := slog.New(LineHandler(w, prefix, Message))
	return func(format string, args ...any) { l.Info(fmt.Sprintf(format, args...)) }
}

// LineFunc returns a handler calling emit with the line of each record at
// Info or above that line renders (ok), for a caller that forwards
// progress lines elsewhere (an event stream, its own log); emit must be
// safe for concurrent use if the logger is.
func LineFunc(line func(slog.Record) (string, bool), emit func(line string)) slog.Handler {
	return &lineHandler{line: line, emit: func(_ time.Time, s string) { emit(s) }}
}

type lineHandler struct {
	line func(slog.Record) (string, bool)
	emit func(at time.Time, line string)
	with []slog.Attr
}

func (h *lineHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelInfo }

func (h *lineHandler) Handle(_ context.Context, r slog.Record) error {
	if len(h.with) > 0 {
		r = r.Clone()
		r.AddAttrs(h.with...)
	}
	line, ok := h.line(r)
	if !ok {
		return nil
	}
	at := r.Time
	if at.IsZero() {
		at = time.Now()
	}
	h.emit(at, line)
	return nil
}

func (h *lineHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &lineHandler{line: h.line, emit: h.emit, with: append(append([]slog.Attr(nil), h.with...), as...)}
}

func (h *lineHandler) WithGroup(string) slog.Handler { return h }
