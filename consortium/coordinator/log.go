package coordinator

import (
	"log/slog"

	"github.com/dplearn/dplearn/internal/logx"
)

// The messages of the records the coordinator logs (Config.Logger).
// Attributes: the task's ID ("task"), party names ("node", "nodes",
// "analyst", "absent"), the datasets a node registered with their public N
// ("datasets"), a DPPP deployment's name, task states and the reasons the
// analyst is also shown ("state", "reason"), message types, addresses,
// counts and errors ("err"). Never a row, a statistic, a noise draw or a
// coefficient: the coordinator sees none of them but the published model,
// which it stores for the analyst and does not log
// (TestCoordinatorLogHasNoPrivateValues).
const (
	msgListening     = "consortium: coordinator listening"
	msgRegistered    = "consortium: node registered"
	msgDisconnected  = "consortium: node disconnected"
	msgSubmitted     = "consortium: task submitted"
	msgOffered       = "consortium: task offered"
	msgOfferedAbsent = "consortium: task offered, some nodes absent"
	msgRunning       = "consortium: task running"
	msgRunningDPPP   = "consortium: dppp task running"
	msgEnded         = "consortium: task ended"
	msgEndedReason   = "consortium: task ended, with a reason"
	msgStoreFailed   = "consortium: STORE WRITE FAILED"
	msgAuditFailed   = "consortium: AUDIT WRITE FAILED"
	msgEncodeFailed  = "consortium: encoding a message failed"
	msgSendFailed    = "consortium: send failed"
	msgStatusPage    = "consortium: status page"
)

// templates renders the records above as the progress lines the
// coordinator command prints (they read as the Logf lines of earlier
// versions did).
var templates = logx.Templates{
	msgListening:     "coordinator listening on {address} (mutual TLS 1.3) for {nodes} node(s) and {analysts} analyst(s)",
	msgRegistered:    "node {node} registered: {datasets}",
	msgDisconnected:  "node {node} disconnected",
	msgSubmitted:     "task {task} submitted by {analyst}",
	msgOffered:       "task {task} offered to {nodes}",
	msgOfferedAbsent: "task {task} offered to {nodes}; absent: {absent}",
	msgRunning:       "task {task} running with {nodes}",
	msgRunningDPPP:   "task {task} running (dppp {deployment}) with {nodes}",
	msgEnded:         "task {task} {state}",
	msgEndedReason:   "task {task} {state}: {reason}",
	msgStoreFailed:   "STORE WRITE FAILED for task {task}: {err}",
	msgAuditFailed:   "AUDIT WRITE FAILED: {err}",
	msgEncodeFailed:  "encode {type}: {err}",
	msgSendFailed:    "send {type} to {party}: {err}",
	msgStatusPage:    "status page: {err}",
}

// ProgressLine renders a record of the coordinator as the progress line it
// stands for; ok is false for any other record (the transport's, a
// diagnostic). The coordinator command prints its progress with
// logx.LineHandler(w, "", ProgressLine).
func ProgressLine(r slog.Record) (line string, ok bool) { return templates.Line(r) }
