// Package secagg implements secure aggregation with dropout recovery after
// Bonawitz, Ivanov, Kreuter, Marcedone, McMahan, Patel, Ramage, Segal and
// Seth, "Practical Secure Aggregation for Privacy-Preserving Machine
// Learning", ACM CCS 2017 (the honest-but-curious variant of their protocol).
//
// n parties each hold a vector x_u of L words in Z_{2^64}; a server learns
// Σ_{u∈U} x_u over the set U of parties that survived until their masked
// input was collected, and nothing else about the individual x_u, even when
// some parties drop out mid-protocol.
//
// # Protocol
//
// The logic is transport-independent: a Party and a Server state machine
// exchange the typed messages of messages.go. Run executes a session in
// process (goroutines and channels, per-round timeout, simulated dropouts);
// a network transport carries the same messages (see Message).
//
//  0. AdvertiseKeys. Each party generates two fresh X25519 key pairs
//     (crypto/ecdh): (c_u^SK, c_u^PK) to encrypt Shamir shares to its peers
//     and (s_u^SK, s_u^PK) for pairwise masks, and sends both public keys.
//     The server broadcasts the keys it received (this defines U1).
//  1. ShareKeys. Each party draws a 32-byte self-mask seed b_u and
//     Shamir-shares b_u and s_u^SK among U1 with threshold t, then sends each
//     peer v its two shares encrypted with AES-256-GCM under a key derived
//     (HKDF-SHA-256) from the X25519 agreement of c_u^SK and c_v^PK, with
//     the session, the round, u and v in the associated data. The server
//     relays them (U2 = parties whose shares arrived).
//  2. MaskedInputCollection. Each party sends
//     y_u = x_u + PRG(b_u) + Σ_{v∈U2, u<v} PRG(s_{u,v}) − Σ_{v∈U2, u>v} PRG(s_{u,v}),
//     where s_{u,v} is derived from the X25519 agreement of s_u^SK and s_v^PK
//     (U3 = parties whose masked input arrived).
//  3. Unmasking. The server sends U3 and U2 \ U3 to U3. Each party returns its
//     share of b_v for v ∈ U3 and its share of s_v^SK for v ∈ U2 \ U3. From
//     t responses the server reconstructs every b_v (removing the self
//     masks) and every dropped s_v^SK (regenerating the pairwise masks that
//     no longer cancel), and outputs Σ_{u∈U3} x_u.
//
// The pairwise masks of two survivors cancel in the sum; a dropped party's
// masks are removed with its reconstructed key; the self mask b_u protects a
// party that is merely slow: if its masked input arrives after the server
// declared it dropped, the server holds s_u^SK but not b_u.
//
// # Safety rule
//
// An honest party never reveals both its share of b_v and its share of
// s_v^SK for the same v: with both, the server could unmask y_v alone. Party
// refuses a request that asks for both (ErrBothShares), a request that does
// not split exactly U2 into survivors and dropped, a second request, and a
// request with fewer than the required survivors.
//
// # Threshold convention
//
// Secrets are shared with a random polynomial of degree t−1 over GF(P),
// P = 2^256 + 297 (the smallest prime above 2^256, so every 32-byte string
// is a field element). t shares reconstruct; any t−1 shares are independent
// of the secret. A party's share is the polynomial at x = its ID (IDs ≥ 1).
// Config requires n/2 < t ≤ n (so two disjoint sets of t parties cannot
// exist) and DefaultThreshold is ⌊2n/3⌋ + 1. Correctness needs at least t
// (and at least Config.MinSurvivors) parties in every round; otherwise the
// server returns an *AbortError naming the round and the missing parties,
// and produces no output. Privacy of every honest party's input holds
// against the server colluding with fewer than t parties in the
// honest-but-curious model (Bonawitz et al.'s security analysis); with
// DefaultThreshold this covers CAPE's S_C = ⌈S/3⌉ − 1 colluding sites with a
// wide margin.
//
// # Keys, nonces and masks
//
// Every symmetric key is derived with HKDF-SHA-256 (crypto/hkdf, RFC 5869;
// the standard library's implementation, equivalent to
// golang.org/x/crypto/hkdf) with the session ID as salt and an info string
// naming the purpose and the parties (see prg.go). The session ID is fresh
// per run and the X25519 keys and seeds are fresh per session, so every
// derived key serves one message or one mask stream: the GCM nonce and the
// CTR counter start at zero without reuse. Masks are the AES-128-CTR
// keystream (AES-NI when available) read as little-endian uint64 words, so
// all platforms expand the same mask.
//
// # Fixed point
//
// Inputs are words of Z_{2^64}; Encoding maps reals to them with scale
// 2^FracBits and checks, before anything is summed, that n values of
// magnitude ≤ Bound cannot overflow: n·(Bound·2^FracBits + ½) < 2^63. Under
// that bound the decoded sum is exact.
//
// # Side channels
//
// Shamir arithmetic uses math/big, which is not constant-time; X25519, HKDF,
// AES-GCM and AES-CTR come from the standard library's constant-time
// implementations. Run parties where a co-located timing adversary is out of
// scope, as the paper's model assumes.
//
// # What the malicious-secure version adds
//
// Against an actively malicious server (their "active" security variant),
// the protocol adds: a public-key infrastructure so that parties
// sign their AdvertiseKeys messages and verify each other's signatures
// (preventing the server from simulating parties, a Sybil attack); a
// ConsistencyCheck round between MaskedInputCollection and Unmasking in
// which every party signs U3 and the server forwards the signatures, so
// that all honest parties agree on U3 before revealing any share; the
// threshold t > 2n/3; and the parties abort if they see fewer than t valid
// signatures. This package implements the semi-honest version; its messages
// leave room for the signatures, and the transport's mutual TLS authenticates
// parties to the server but not to each other.
package secagg
