package dpppnet

import (
	"log/slog"

	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/internal/logx"
)

// The messages of the records Serve, Teach and Query log (their options'
// Logger; Serve's Driver logs dppp's records too). Attributes: parties'
// names ("party", "client"), batch, round and request numbers, counts,
// the parameters' public fields and hash, message types, the budget and
// final lines ("text") and errors ("err"); never a vote, a noise share or
// a (partial) decryption.
const (
	msgDone            = "dpppnet: run finished"
	msgRequest         = "dpppnet: client request"
	msgRequestRefused  = "dpppnet: client request refused"
	msgRequestAnswered = "dpppnet: client request answered"
	msgSendFailed      = "dpppnet: send failed"
	msgEncoding        = "dpppnet: encoding a message failed"
	msgClientEvent     = "dpppnet: client connection event"
	msgConnected       = "dpppnet: teacher connected"
	msgDisconnected    = "dpppnet: teacher disconnected"
	msgRefusedMessage  = "dpppnet: refused a message"
	msgIgnoredClient   = "dpppnet: ignored a message from a client"
	msgIgnored         = "dpppnet: ignored a message"
	// Debug records, not progress lines (no template).
	msgSent     = "dpppnet: message sent"
	msgReceived = "dpppnet: message received"

	msgTeacherUnsigned = "dpppnet: teacher runs UNSIGNED"
	msgSentRefused     = "dpppnet: the aggregator refused a message"
	msgGap             = "dpppnet: lost messages from the aggregator"
	msgAggregatorDone  = "dpppnet: aggregator's last word"
	msgMalformed       = "dpppnet: ignored a malformed message"
	msgRefusedOffer    = "dpppnet: refused the offered parameters"
	msgAcceptedParams  = "dpppnet: accepted the parameters"
	msgRefusedVote     = "dpppnet: refused to vote"
	msgVotedOn         = "dpppnet: voted"
	msgRefusedSign     = "dpppnet: refused to sign the contributor set"
	msgSignedSet       = "dpppnet: signed the contributor set"
	msgRefusedDecrypt  = "dpppnet: refused to decrypt"
	msgDecrypted       = "dpppnet: partially decrypted"
	msgIgnoredType     = "dpppnet: ignored a message of an unexpected type"

	msgParams  = "dpppnet: parameters"
	msgPartial = "dpppnet: budget allowed part of the request"
	msgLabels  = "dpppnet: request labelled"
	msgBudget  = "dpppnet: budget status"
)

// templates renders the records above as the progress lines the commands
// print (they read as the Logf lines of earlier versions did).
var templates = logx.Templates{
	msgDone:            "{text}",
	msgRequest:         "request {request} from {client}: {rows} rows",
	msgRequestRefused:  "request {request} from {client} refused: {err}",
	msgRequestAnswered: "request {request} from {client}: answered {answered} of {rows} queries",
	msgSendFailed:      "sending {type} to {party}: {err}",
	msgEncoding:        "encoding {type}: {err}",
	msgClientEvent:     "client {client}: {event}",
	msgConnected:       "{party} connected",
	msgDisconnected:    "{party} disconnected ({err})",
	msgRefusedMessage:  "refused a message from {party}: {err}",
	msgIgnoredClient:   "ignored a message from client {client}: {err}",
	msgIgnored:         "ignored a message from {party}: {err}",

	msgTeacherUnsigned: "UNSIGNED: this teacher neither signs contributor sets nor checks the other contributors' signatures; a malicious aggregator can have two different sums holding its vote decrypted (differencing). Tests and --insecure runs only",
	msgSentRefused:     "the aggregator refused this teacher's {type} of round {round}: {err}",
	msgGap:             "lost messages from the aggregator: {err}",
	msgAggregatorDone:  "aggregator: {text}",
	msgMalformed:       "ignored a malformed {type:%q} message: {err}",
	msgRefusedOffer:    "refused the offered parameters: {err}",
	msgAcceptedParams:  "accepted parameters {params}… (N = {teachers}, t = {threshold}, colluders C = {colluders}, absent A = {absent}: min contributors N − A = {min_contributors}, noise for H = {honest} honest shares; {noise} noise, ε = {epsilon}, δ = {delta} per query, at most {max_queries} queries)",
	msgRefusedVote:     "batch {batch}: refused to vote: {err}",
	msgVotedOn:         "batch {batch}: voted on {queries} queries (charged before voting: {answered} queries so far)",
	msgRefusedSign:     "batch {batch}: refused to sign the contributor set: {err}",
	msgSignedSet:       "batch {batch}: signed the contributor set of {contributors} votes",
	msgRefusedDecrypt:  "batch {batch}: refused to decrypt: {err}",
	msgDecrypted:       "batch {batch}: partially decrypted the sum of {contributors} contributors (every signature and proof checked)",
	msgIgnoredType:     "ignored a {type} message",

	msgParams:  "parameters {params}…: {teachers} teachers, t = {threshold}, colluders C = {colluders}, absent A = {absent} (noise for H = {honest} honest shares), {noise} noise, ε = {epsilon}, δ = {delta} per query, {qpc} queries per batch",
	msgPartial: "{text}",
	msgLabels:  "request {request}: {labels} labels",
	msgBudget:  "{text}",
}

// ProgressLine renders a record of Serve, Teach, Query or of dppp's
// Driver as the progress line it stands for; ok is false for any other
// record (the transport's, a diagnostic). The commands print their
// progress with logx.LineHandler(w, prefix, ProgressLine).
func ProgressLine(r slog.Record) (line string, ok bool) {
	if line, ok := templates.Line(r); ok {
		return line, true
	}
	return dppp.ProgressLine(r)
}

// LineLogger returns a logger calling emit with the progress line of each
// of this package's (and dppp's) records at Info or above, for a caller
// that forwards the lines elsewhere (what a Logf of earlier versions
// received); emit must be safe for concurrent use.
func LineLogger(emit func(line string)) *slog.Logger {
	return slog.New(logx.LineFunc(ProgressLine, emit))
}
