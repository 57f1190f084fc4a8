package node

import (
	"log/slog"

	"github.com/dplearn/dplearn/dpppnet"
	"github.com/dplearn/dplearn/internal/logx"
)

// The messages of the records a node logs (Config.Logger, with the
// attribute "node", the node's name). Attributes: the task's ID ("task"),
// the analyst, the dataset's or deployment's name, the mechanism, the
// task's (ε, δ) and number of queries (public parts of the analyst's
// signed specification), the policy rule and reason of a refusal (what the
// analyst is also told), the capeFM and DPPP progress lines ("event";
// DPPP's records pass through with their own attributes), the coordinator's
// name and address, counts, durations and errors ("err"). Never a row, a
// statistic, a noise draw or a released value
// (TestNodeLogHasNoPrivateValues).
const (
	msgConnected      = "consortium: connected to the coordinator"
	msgConnectionLost = "consortium: connection to the coordinator ended"
	msgIgnored        = "consortium: ignored a message"
	msgAnswerFailed   = "consortium: sending the answer failed"
	msgRefused        = "consortium: task refused"
	msgAccepted       = "consortium: task accepted"
	msgAcceptedDPPP   = "consortium: dppp task accepted"
	msgTaskEvent      = "consortium: task event"
	msgLedgerReport   = "consortium: ledger report failed"
	msgAuditFailed    = "consortium: AUDIT LOG WRITE FAILED"
)

// templates renders the records above as the progress lines the node
// command prints (they read as the Logf lines of earlier versions did).
var templates = logx.Templates{
	msgConnected:      "connected to {coordinator} at {address}; registered {datasets} dataset(s)",
	msgConnectionLost: "connection to the coordinator ended: {err}; reconnecting in {backoff}",
	msgIgnored:        "ignored: {err}",
	msgAnswerFailed:   "task {task}: sending the answer: {err}",
	msgRefused:        "task {task} from {analyst}: REFUSED by rule {rule}: {reason}",
	msgAccepted:       "task {task} from {analyst}: accepted ({mechanism} on {dataset}, ε = {epsilon}, δ = {delta})",
	msgAcceptedDPPP:   "task {task} from {analyst}: accepted (dppp, {queries} queries to deployment {dataset})",
	msgTaskEvent:      "task {task}: {event}",
	msgLedgerReport:   "ledger report: {err}",
	msgAuditFailed:    "AUDIT LOG WRITE FAILED: {err}",
}

// ProgressLine renders a record of a node as the progress line it stands
// for: the node's own records by their templates, and the DPPP teacher's
// (dpppnet.Teach, logging to the node's logger with the task's ID) as
// "task ID: " and dpppnet's line. ok is false for any other record (the
// transport's, a diagnostic). The node command prints its progress with
// logx.LineHandler(w, "", ProgressLine).
func ProgressLine(r slog.Record) (line string, ok bool) {
	if line, ok := templates.Line(r); ok {
		return line, true
	}
	line, ok = dpppnet.ProgressLine(r)
	if !ok {
		return "", false
	}
	task := ""
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "task" {
			task = a.Value.String()
		}
		return true
	})
	if task == "" {
		return line, true
	}
	return "task " + task + ": " + line, true
}
