// Package dpppnet runs DPPP (package dppp) between separate processes over
// package transport: gRPC with mutual TLS 1.3, or the in-memory hub with the
// same checks. dppp stays free of network code; this package carries its
// binary messages and adds deadlines, lost-party handling and logs.
//
//	aggregator  Serve(ctx, hub, params, key, rows, opts)  → labels, histograms
//	teacher     Teach(ctx, conn, teacher, opts)
//
// # Client
//
// Two ways, both leaving the aggregator with what it learns anyway (the
// noisy histogram of each query, from which labels are computed; never a
// single teacher's vote: nothing is decrypted unless ≥ MinContributors
// votes are in the sum, which every decrypting teacher checks):
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
// # Vote signatures
//
// A teacher with an identity (TeachOptions.Identity: its certificate)
// signs each vote and sends the signature (TypeVoteSignature) with it; the
// aggregator relays the listed contributors' signatures (TypeVoteSignatures)
// before each decryption request, and the teacher refuses to decrypt unless
// every listed vote is signed by the certificate, from its own CA, of the
// teacher it is listed for. Without this, a malicious aggregator could make
// t teachers decrypt a single teacher's vote by listing forged ciphertexts
// under the other contributors' IDs (see votesig.go).
//
// # Deadlines and lost teachers
//
// Each phase of a batch (votes; each round of decryption requests) waits at
// most RoundTimeout. A teacher that disconnects, or does not answer within
// the phase, is lost for that phase: a missing vote leaves it out of the
// sum (the batch is refused if fewer than MinContributors voted); a missing
// partial decryption is recorded (Aggregator.Reject) and further
// contributors are asked, so up to N − t lost teachers do not stop a batch.
// A teacher that reconnects is sent the next batch again.
package dpppnet
