// Package transport carries the messages of dplearn's networked protocols
// (secure aggregation, capeFM, DPPP) between a hub (the aggregator) and its
// parties (sites, teachers), over gRPC with mutual TLS 1.3. The protocols
// stay state machines without network code: they exchange Envelopes whose
// payload is their own binary encoding, through two interfaces that have a
// gRPC implementation and an in-memory one with the same checks:
//
//	party side  Conn:  Send(ctx, Envelope), Recv(ctx), Close()
//	            Dial (gRPC) or Memory.Dial (in process)
//	hub side    Hub:   Inbox(), Events(), SendTo(ctx, party, Envelope),
//	                   Connected(), AwaitConnected, SetRound, SetGate, Close()
//	            Listen (gRPC, *Server) or NewMemory (in process, *Memory)
//
// # Wire
//
// One service, dplearn.transport.v1.Relay (transportpb/transport.proto):
//
//	rpc Send(Envelope) returns (Ack);              party → hub, one call per envelope
//	rpc Receive(Attach) returns (stream Envelope); hub → party, one stream per party
//
// Unary Send makes every upstream envelope individually acknowledged or
// refused: Conn.Send returns only once the hub has checked the envelope and
// queued it for the protocol, or with the refusal's reason, so a party knows
// whether its masked input arrived. The downstream is one server stream per
// party, opened by Dial; its presence is the party's "connected" state, its
// end (closed connection, or keepalive noticing a dead peer) is a Detached
// event. A party whose connection is lost re-opens the stream (backoff,
// bounded attempts) with the seq of the last envelope it received; the hub
// replaces the old stream and resends what the party missed from a window of
// recent envelopes (HubConfig.Resend), or the party sees a *GapError. The
// Receive header returns the last seq the hub accepted from the party, so a
// restarted party process continues its numbering.
//
// # Identity and checks
//
// The hub reads the sending party's name from its verified client
// certificate (package certs: the DNS SAN NAME.dplearn.invalid, signed by
// the deployment's CA), never from the message, and refuses, with a gRPC
// status carrying the Reason and a sentence naming the party:
//
//   - a handshake without a certificate from the CA, or below TLS 1.3 (logged
//     by the hub; the party's Dial fails);
//   - a name not in the roster (ReasonUnknownParty);
//   - a sender field that is not the certificate's name (ReasonSenderMismatch);
//   - another protocol, session or recipient (ReasonWrongProtocol,
//     ReasonWrongSession, ReasonWrongRecipient);
//   - a sequence number already used by that sender in this session
//     (ReasonReplay: replays and duplicates), and, unless
//     HubConfig.AllowRepeats, a second envelope of the same (round, type)
//     (ReasonDuplicate);
//   - an envelope for another round than the one the protocol set with
//     SetRound (ReasonWrongRound), or refused by the protocol's gate
//     (ReasonRefusedByProtocol);
//   - a payload over the protocol's cap HubConfig.MaxPayload
//     (ReasonOversized); gRPC's own message limit (cap + 1 KiB) stops
//     anything larger before it is read.
//
// Every refusal is logged (HubConfig.Logger, a *slog.Logger: Warn
// "transport: refused an envelope" with party, reason and err; nil
// discards) and reported as a Refused Event; the party's Send returns a
// *Refusal with the same Reason (RefusalReason). A party checks the hub
// in return: TLS 1.3 with the hub's certificate from
// the same CA carrying the expected hub name, and every downstream envelope's
// protocol, session, sender, recipient and order.
//
// # Liveness
//
// Deadlines come from the caller's context on every call (the protocol's
// per-round timeout). The hub pings a party whose connection is idle for
// ServerConfig.KeepaliveTime (default 5 s) and drops it if the ping is not
// answered within KeepaliveTimeout (5 s), so a dead or unreachable party is
// a Detached event within about 10 s; a killed process (closed socket) is
// noticed at once. Parties ping the hub every 10 s (gRPC's minimum).
//
// A party never waits for a dead hub without a bound: once its connection
// has been down for ClientConfig.PeerTimeout (default 20 s), or re-attaching
// failed Attempts times, every Send (also one in progress) and Recv returns
// a *HubGoneError ("the hub aggregator at A is gone: no answer for 20s").
//
// # Floods
//
// What a party with a valid certificate can cost the hub is bounded: the
// first HubConfig.RefusalLogBurst (5) refusals per party per
// RefusalLogInterval (10 s) are logged and reported one by one, the rest
// summarised in one line and one event (ReasonSummary); a party may hold
// ServerConfig.MaxConnsPerParty (4) connections and MaxCallsPerParty (4)
// calls in progress (more: ReasonTooMany); at most MaxHandshakes (32)
// connections are in their TLS handshake at once.
//
// # Insecure mode
//
// ServerConfig.Insecure and ClientConfig.Insecure run plaintext without
// certificates, for local tests only: the constructors refuse any address
// that is not a loopback IP or "localhost" (without resolving names), party
// names are taken from the messages, and a warning is logged.
//
// There is no package-level mutable state: every hub and client carries its
// own configuration, logger and queues.
package transport
