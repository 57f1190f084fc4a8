package coordinator

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"html/template"
	"log"
	"log/slog"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/internal/logx"
)

// statusPage renders a Snapshot: plain HTML, no script. Every value is
// escaped by html/template (task errors and refusal reasons come from the
// nodes).
var statusPage = template.Must(template.New("status").Funcs(template.FuncMap{
	"ago": func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.UTC().Format("2006-01-02 15:04:05Z")
	},
	// last is a task's latest protocol event (its round), if any.
	"last": func(log []string) string {
		if len(log) == 0 {
			return ""
		}
		return log[len(log)-1]
	},
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>dplearn consortium</title>
<style>body{font-family:sans-serif;margin:1em}table{border-collapse:collapse;margin-bottom:1.5em}td,th{border:1px solid #999;padding:3px 8px;text-align:left}.online{color:#060}.offline{color:#a00}</style>
</head><body>
<h1>dplearn consortium</h1>
<p id="generated">Status at {{ago .Time}}</p>
<h2>Nodes</h2>
<table id="nodes"><tr><th>node</th><th>state</th><th>last seen</th><th>datasets</th></tr>
{{range .Nodes}}<tr><td>{{.Name}}</td><td class="{{if .Online}}online{{else}}offline{{end}}">{{if .Online}}online{{else}}offline{{end}}</td><td>{{ago .LastSeen}}</td><td>{{range .Datasets}}{{.Name}} (N = {{.N}}) {{end}}</td></tr>
{{end}}</table>
<h2>Tasks</h2>
<table id="tasks"><tr><th>task</th><th>analyst</th><th>state</th><th>mechanism</th><th>ε, δ per site</th><th>sites</th><th>last round</th><th>outcome</th></tr>
{{range .Tasks}}<tr><td>{{.ID}}</td><td>{{.Analyst}}</td><td>{{.State}}</td><td>{{.Spec.Mechanism}} {{.Spec.Model}}</td><td>{{.Spec.Epsilon}}, {{.Spec.Delta}}</td>
<td>{{range $s, $st := .Sites}}{{$s}}: {{$st.State}}{{if $st.Rule}} (rule {{$st.Rule}}){{end}}<br>{{end}}</td>
<td>{{last .Log}}</td>
<td>{{if .Result}}{{.Result.Guarantee}}{{if .Result.Labels}}, {{len .Result.Labels}} labels{{else}}, attempt {{.Result.Attempts}}{{end}}{{else}}{{.Error}}{{end}}</td></tr>
{{end}}</table>
<h2>Budgets (as the nodes report them)</h2>
<table id="budgets"><tr><th>node</th><th>ledger</th><th>spent ε</th><th>budget ε</th><th>remaining ε</th><th>spent δ</th><th>budget δ</th><th>releases</th></tr>
{{range $b := .Budgets}}{{range $b.Report.Ledgers}}<tr><td>{{$b.Node}}</td><td>{{.Kind}} {{.Name}}</td><td>{{.SpentEpsilon}}</td><td>{{.BudgetEpsilon}}</td><td>{{.RemainingEpsilon}}</td><td>{{.SpentDelta}}</td><td>{{.BudgetDelta}}</td><td>{{.Charges}}</td></tr>
{{end}}{{end}}</table>
</body></html>
`))

// StatusHandler serves the status page: read-only, GET only.
func (c *Coordinator) StatusHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "read-only", http.StatusMethodNotAllowed)
			return
		}
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Header().Set("Content-Security-Policy", "default-src 'none'; style-src 'unsafe-inline'")
		if err := statusPage.Execute(w, c.Snapshot()); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
		}
	})
}

// statusErrorLog returns the status page server's error log: each line
// becomes a record of l (the TLS handshake and request errors net/http
// reports).
func statusErrorLog(l *slog.Logger) *log.Logger {
	return slog.NewLogLogger(&statusErrHandler{l.Handler()}, slog.LevelWarn)
}

// statusErrHandler renames net/http's records msgStatusPage, their text
// an "err" attribute, so that they render as the status page's lines.
type statusErrHandler struct{ slog.Handler }

func (h *statusErrHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, msgStatusPage, r.PC)
	out.AddAttrs(slog.String("err", strings.TrimRight(r.Message, "\n")))
	return h.Handler.Handle(ctx, out)
}

// ServeStatus serves the status page over TLS 1.3 on addr to clients
// presenting a certificate from the consortium's CA whose name is one of
// viewers (the analysts), until ctx ends. ready, if set, receives the
// address. A failure is also logged (Config.Logger).
func (c *Coordinator) ServeStatus(ctx context.Context, addr string, viewers []string, ready func(string)) error {
	err := c.serveStatus(ctx, addr, viewers, ready)
	if err != nil {
		c.m.log.Error(msgStatusPage, logx.Err(err))
	}
	return err
}

func (c *Coordinator) serveStatus(ctx context.Context, addr string, viewers []string, ready func(string)) error {
	tc := c.cfg.Identity.ServerTLS()
	tc.VerifyConnection = func(cs tls.ConnectionState) error {
		name, err := certs.PeerName(cs)
		if err != nil {
			return err
		}
		if !slices.Contains(viewers, name) {
			return fmt.Errorf("status page: %s is not an analyst of this consortium", name)
		}
		return nil
	}
	lis, err := tls.Listen("tcp", addr, tc)
	if err != nil {
		return fmt.Errorf("status page: %w", err)
	}
	srv := &http.Server{Handler: c.StatusHandler(), ReadHeaderTimeout: 10 * time.Second, BaseContext: func(net.Listener) context.Context { return ctx },
		ErrorLog: statusErrorLog(c.m.log)}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	if ready != nil {
		ready(lis.Addr().String())
	}
	if err := srv.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
