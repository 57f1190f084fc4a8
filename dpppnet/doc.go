// Package dpppnet runs DPPP (package dppp) between separate processes over
// package transport: gRPC with mutual TLS 1.3, or the in-memory hub with the
// same checks. dppp stays free of network code and holds the protocol's one
// aggregator loop (dppp.Driver) and every check; this package is a thin
// adapter: it carries dppp's binary messages as envelopes (a dppp.Link over
// a transport.Hub), gates the hub to the current round and session, serves
// the clients' requests and tells the teachers when the run is over.
//
//	aggregator  Serve(ctx, hub, params, key, rows, opts)  → labels, histograms
//	teacher     Teach(ctx, conn, teacher, opts)
//
// # Client
//
// Two ways, both leaving the aggregator with what it learns anyway (the
// noisy histogram of each query, from which labels are computed; never a
// single teacher's vote: nothing is decrypted unless ≥ N − A votes are in
// the sum, every one signed into that one set by its teacher, which every
// decrypting teacher checks):
//
//   - the aggregator is the client: Serve labels the rows it is given (the
//     CLI's `serve --queries FILE --out LABELS.csv`);
//   - a client party (ServeOptions.Clients, on the hub's roster, with its
//     own certificate): Query receives the Offer (the public parameters,
//     including the session its requests must carry), sends dppp.Request
//     messages of at most QPC rows at round 0, and gets a dppp.Answer
//     (labels, and histograms if asked) or a "request-refused" line. A
//     request sent while a batch runs is refused by the hub as of another
//     round and sent again. The query rows go to every teacher in any
//     design (each must predict them).
//
// # Envelopes
//
// Every dppp message travels as one transport envelope: protocol "dppp",
// the fixed transport session SessionID (one hub serves one deployment; the
// dppp session, random per run, is inside every payload and checked by the
// hub's gate and the state machines), round 0 for the offer and the
// teachers' acceptances and round = batch ID for everything of a batch,
// type = Message.Type(), payload = MarshalBinary(). The hub is gated to
// the current round (a late vote of a closed batch is refused at the door)
// and to payloads carrying the session. When the run ends the aggregator
// sends every teacher a "done" envelope whose payload is a line of text.
//
// # Set signatures
//
// Each teacher's dppp.Teacher holds a dppp.Signer: over the network a
// *certs.StatementSigner with the teacher's certificate (the key of its
// mutual TLS), so it signs the contributor set of each batch it voted in
// (one set per batch) and, before decrypting, verifies every other listed
// contributor's signature against its own CA and the roster name. The
// signatures travel in dppp's own messages (SignSet, SetSignature,
// Decrypt); this package adds nothing to them. A teacher without an
// identity (--insecure) runs dppp.TeacherConfig.Unsigned and says so in
// its log.
//
// # Deadlines and lost teachers
//
// Each phase of a batch (votes; set signatures; each round of decryption
// requests) waits at most RoundTimeout. A teacher that disconnects, or does not answer within
// the phase, is lost for that phase: a missing vote leaves it out of the
// sum (the batch is refused if fewer than N − A voted); a missing set
// signature abandons the batch (nothing decrypted; its rows are voted again
// in a new batch, without that teacher); a missing partial decryption is
// recorded (Aggregator.Reject) and further contributors are asked, so up
// to N − t teachers lost after signing do not stop a batch. A teacher that
// reconnects is sent the next batch again.
package dpppnet
