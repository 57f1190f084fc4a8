// Package capenet runs capeFM (package capefm) between separate processes
// over package transport: gRPC with mutual TLS 1.3, or the in-memory hub
// with the same checks. capefm stays free of network code; this package is
// the adapter between capefm's Hub interface and Site state machine on one
// side and transport.Hub / transport.Conn on the other, plus the announce
// step and the logs.
//
//	aggregator  Serve(ctx, hub transport.Hub, template capefm.Params, opts)
//	site        Join(ctx, conn transport.Conn, site *capefm.Site, opts)
//
// # Envelopes
//
// Every capefm message travels as one transport envelope: protocol
// "capefm" (capefm.Protocol), the fixed transport session SessionID (one
// hub serves one fit; each attempt's own 32-byte session is inside every
// payload), round = Message.Round(), type = Message.Type(), payload =
// MarshalBinary(). The hub's roster is the expected site names (HubConfig),
// its payload cap MaxPayload(D, S), and it allows one message of a type per
// round per attempt (AllowRepeats; the state machines refuse duplicates).
// Serve gates the hub to the current round (transport.Hub.SetRound) and,
// once an attempt runs, to payloads carrying the attempt's session
// (SetGate): a replay or straggler from another attempt is refused at the
// door with reason refused-by-protocol, and its sender told so.
//
// # Announce
//
// A site announces itself when it connects (capefm.Announce: its name, its
// public N_s, its schema fingerprint). The hub has already bound the
// connection to the name in the site's certificate; the aggregator
// (capefm.Gather) refuses an announcement naming anyone else, one with
// another schema fingerprint, or from a name it does not expect, and tells
// the site why (capefm.Outcome). It waits for every expected site, or for
// JoinTimeout with at least MinSites, then builds the Params of the first
// attempt from the announced sizes, so the aggregator's command line needs
// only the names. N_s is public under bounded DP (the guarantee treats the
// sizes as known), so announcing it costs nothing.
//
// # Signed keys
//
// TLS binds each message to its sender only between the site and the
// aggregator, and secure aggregation's keys reach the sites through the
// aggregator. So every site signs its keys with its certificate
// (capefm.SiteConfig.Signer, a certs.StatementSigner), Serve checks them
// with the aggregator's certificate before relaying (ServeOptions.
// KeyVerifier: a site whose keys fail counts as missing, logged as
// "refused" with reason "key-signature"), and every site checks every
// other site's again before deriving any key: a site that receives a key
// failing the check (which only a misbehaving aggregator relays) logs
// "refused-keys" and Join returns an error naming the site. See
// capefm.KeySigner.
//
// # Failures
//
// A site whose connection closes is reported lost for the attempt unless it
// reconnects within ReconnectGrace (the transport reconnects by itself
// after a network hiccup); capefm.Serve then redoes the attempt without it
// if the noise was not yet fixed, or aborts naming it. A site that
// announces itself after the roster was fixed (late, or restarted) is told
// it cannot join. When the fit ends, every site receives the outcome, and
// Serve waits briefly for the sites to hang up so that it is delivered.
//
// # Logs
//
// Both sides report Events: a line in words (Message: "round 3/7
// MaskedInput: 4 of 5 sites sent masked inputs, site-3 timed out (1.2 s)")
// and the same as fields; TextLog prints lines, JSONLog one JSON object per
// line. SlogHandler turns the transport's own warnings (a TLS handshake
// refused for a certificate of another CA) into events. Events never hold
// anything computed from a site's data.
//
// Diagnostics go to ServeOptions.Logger and JoinOptions.Logger
// (*slog.Logger, nil discards): capefm's attempt and round records and one
// Debug record per message with its size. One logger can serve the
// transport too: SlogHandler takes only records whose message starts with
// "transport:".
package capenet
