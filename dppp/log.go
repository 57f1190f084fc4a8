package dppp

import (
	"log/slog"

	"github.com/dplearn/dplearn/internal/logx"
)

// The messages of the records the Driver and Run log (DriverOptions.Logger,
// RunOptions.Logger). Their attributes are teachers' names ("teacher",
// and lists "unsigned", "asked", "decryptors", "rejected"), batch numbers,
// counts ("members", "teachers", "queries", "votes", "contributors",
// "valid", "threshold"), message types and sizes ("type", "bytes", Debug),
// the parameters' hash, timings ("seconds",
// "timeout"), what was awaited ("what"), a refusal's reason and an error
// ("err"): public or the protocol's own words, never a vote, a noise
// share or a (partial) decryption (TestRunLogIsStructuredAndPrivate).
const (
	msgAccepted         = "dppp: teacher accepted the parameters"
	msgAcceptedOther    = "dppp: teacher accepted other parameters"
	msgRefusedParams    = "dppp: teacher refused the parameters"
	msgAgreed           = "dppp: teachers agreed to the parameters"
	msgRevote           = "dppp: batch abandoned; voting again"
	msgRefused          = "dppp: teacher refused"
	msgBatchErr         = "dppp: batch message refused"
	msgLostBefore       = "dppp: teacher lost before answering"
	msgNoAnswer         = "dppp: no answer within the round timeout"
	msgVoted            = "dppp: batch voted"
	msgDropped          = "dppp: vote dropped"
	msgNothingDecrypted = "dppp: batch refused, nothing decrypted"
	msgUnsigned         = "dppp: contributor set UNSIGNED"
	msgSigned           = "dppp: contributor set signed"
	msgAnswered         = "dppp: batch answered"
	msgAsking           = "dppp: asking for partial decryptions"
	msgEncoding         = "dppp: encoding a message failed"
	msgTeacherLost      = "dppp: teacher lost"
	msgUnreadable       = "dppp: unreadable message from a teacher"
	msgStatus           = "dppp: budget status"
	msgPartial          = "dppp: budget allowed part of the rows"
	// Debug records, not progress lines (no template): Run's messages and
	// their sizes.
	msgSent     = "dppp: message sent"
	msgReceived = "dppp: message received"
)

// templates renders the records above as the progress lines a command
// prints (see Templates).
var templates = logx.Templates{
	msgAccepted:         "{teacher} accepted the parameters ({members} of {teachers})",
	msgAcceptedOther:    "{teacher} accepted other parameters: left out",
	msgRefusedParams:    "{teacher} refused the parameters: {reason}",
	msgAgreed:           "{members} of {teachers} teachers agreed to parameters {params}…",
	msgRevote:           "{err}; voting the {queries} queries again in a new batch (new noise, charged again)",
	msgRefused:          "batch {batch}: {teacher} refused: {reason}",
	msgBatchErr:         "batch {batch}: {err}",
	msgLostBefore:       "batch {batch}: {teacher} lost before its {what}",
	msgNoAnswer:         "batch {batch}: no {what} within {timeout} from {teacher}",
	msgVoted:            "batch {batch}: {queries} queries, {votes} of {teachers} teachers voted ({seconds:%.2f} s)",
	msgDropped:          "batch {batch}: dropped {teacher}'s vote: {reason}",
	msgNothingDecrypted: "batch {batch}: refused, nothing decrypted: {err}",
	msgUnsigned:         "batch {batch}: WARNING: {unsigned} answered the consistency round UNSIGNED (--insecure or TeacherConfig.Unsigned): no set signature protects their votes from being in two decrypted sums (differencing); only their own memory does",
	msgSigned:           "batch {batch}: contributor set of {contributors} votes signed by every contributor",
	msgAnswered:         "batch {batch}: answered: {contributors} contributors, decrypted by {decryptors}, rejected {rejected} ({seconds:%.2f} s)",
	msgAsking:           "batch {batch}: asking {asked} to decrypt ({valid} of t = {threshold} valid so far)",
	msgEncoding:         "encoding {type}: {err}",
	msgTeacherLost:      "teacher {teacher} lost",
	msgUnreadable:       "teacher {teacher}: {err}",
	msgStatus:           "{status}",
	msgPartial:          "{text}",
}

// ProgressLine renders a record of this package's Driver or Run as the
// progress line it stands for (as the Logf lines of earlier versions
// read); ok is false for any other record. A command prints its progress
// with logx.LineHandler over a Templates whose Line is this.
func ProgressLine(r slog.Record) (line string, ok bool) { return templates.Line(r) }
