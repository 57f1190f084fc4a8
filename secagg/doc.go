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
// # Safety rules
//
// Within a session, an honest party never reveals both its share of b_v and
// its share of s_v^SK for the same v: with both, the server could unmask y_v
// alone. Party refuses a request that asks for both (ErrBothShares), a
// request that does not split exactly U2 into survivors and dropped, a
// request that lists the party itself as dropped, a second request, and a
// request with fewer than the required survivors.
//
// Across sessions, an input is sent at most once. Each session's masks are
// fresh, so the sums of the same inputs over two survivor sets give the
// server their difference, an individual input when the sets differ by one
// party. This is reachable even by a merely curious server: it needs only t
// unmasking answers to reconstruct, so a session that aborts in Unmasking
// for want of MinSurvivors answers can leave it holding Σ_{U3} x; a rerun of
// the same inputs without the slow party would complete the attack. So a
// Party is built from a single-use Input (NewInput), which the first masked
// input sent spends: any other Party, in any session, refuses it
// (ErrInputSpent). A retry after an abort therefore needs fresh inputs —
// for CAPE, freshly drawn noise (package cape enforces this).
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
// # Threat model
//
// What is assumed:
//
//   - Authenticated channels between each party and the server, binding
//     every message to the party that sent it: the transport must accept a
//     party's message only if its sender field (From) is the party named in
//     the peer's authenticated identity (mutual TLS with one certificate per
//     party, the name in the certificate; the capeFM transport supplies
//     this), and deliver each server message only to its addressee. This
//     package checks sessions, rounds, rosters, duplicates and lengths, but
//     cannot tell who sent a message. Without such channels anyone on the
//     path can play the server and mount every attack listed below, or
//     impersonate a party to the server.
//   - An honest-but-curious server: it follows the protocol — in particular
//     it broadcasts to every party the same KeyRoster holding the keys the
//     parties actually advertised, relays the shares unchanged, and sends
//     every party the same split of U2 into survivors and dropped — and
//     tries to learn from what it sees. Under that assumption, and with the
//     server colluding with fewer than t parties, the joint view reveals
//     nothing about the honest parties' inputs beyond their sum over U3
//     (Bonawitz et al., Section 6, honest-but-curious security).
//   - A fixed roster known to every party in advance (Config.Parties), a
//     fresh unpredictable session ID per session, crypto/rand as the source
//     of every key, seed and share polynomial, and no co-located timing
//     adversary (see Side channels).
//
// What it does not protect against (an actively malicious server):
//
//   - Key substitution. Advertised public keys are not signed and there is
//     no public-key infrastructure between the parties: the KeyRoster is
//     assembled by the server, and a party checks only that its own entry
//     holds the keys it sent. A server that sends party u a roster in which
//     every peer v's keys (c_v^PK, s_v^PK) are replaced by X25519 keys of its
//     own plays all of u's peers at once: it decrypts every share of b_u and
//     s_u^SK that u encrypts in ShareKeys (it is the other end of each key
//     agreement), relays to u shares of its own choosing encrypted under the
//     keys u derives, so u accepts them and sends y_u, reconstructs b_u from
//     the n−1 decrypted shares (plus u's own share, which u returns in
//     Unmasking, if t = n), knows every pairwise mask key s_{u,v} (again the
//     other end of the agreement), and so removes every mask from y_u and
//     reads x_u. Substituting only the encryption keys already suffices when
//     t ≤ n−1 (then the decrypted shares also give s_u^SK). Only u's copy of
//     the roster is altered, so the server can do this to any party, or to
//     every party of a session (each sent a different roster); the parties
//     notice nothing before y_u has left (TestKeySubstitutionReadsAnInput
//     carries this out with t = n). Mutual TLS between each party and
//     the server does not prevent it, since the keys reach the parties only
//     through the server. Closing it needs signatures: each party signs
//     (session, From, EncKey, MaskKey) with a long-term key certified to its
//     name, the roster carries the signatures and certificates, and every
//     entry is verified before ShareKeys does any key agreement (Bonawitz
//     et al.'s actively secure variant). This package leaves that to its
//     caller, which owns the identities: package capefm does it (its
//     KeySigner: every site signs its advertisement, bound to the session,
//     the agreed parameters, the attempt, its roster ID and name, with its
//     TLS certificate's key, and verifies every other site's against its CA
//     before calling ShareKeys; capefm's TestKeySubstitutionRefused turns
//     this attack around). Used on its own, without such a layer, this
//     package is open to it.
//   - Sybils. For the same reason the server can simulate parties: it
//     answers AdvertiseKeys with keys of its own for every roster ID except
//     a target's (ignoring the genuine parties' messages), lets the
//     simulated parties "survive" and learns Σ_{U3} x minus its own inputs,
//     which is the target's x_u. The threshold and MinSurvivors do not help,
//     because simulated parties count as survivors. With signed keys (as in
//     capefm) the server can only use the identities of parties that
//     collude with it;
//     even then the output itself is the sum of the honest survivors'
//     inputs, so a session whose only honest survivor is u reveals x_u by
//     design (MinSurvivors bounds how many inputs are summed, not how many
//     of them are honest).
//   - Other active deviations that harm correctness, not privacy: the server
//     can abort at will, choose which parties to declare dropped (one sum per
//     session, over any U3 of at least max(t, MinSurvivors) parties), or
//     output a wrong sum; a malicious party can add any value or send
//     inconsistent shares. The sum is not verifiable. The actively secure
//     variant also adds a ConsistencyCheck round (every party signs U3 and
//     checks t signatures) that this package omits.
//
// What is enforced even against a malicious server:
//
//   - A lie about the dropout set in Unmasking. A server that tells some
//     parties that v survived (to collect shares of b_v) and others that v
//     dropped (to collect shares of s_v^SK) would, with t shares of each,
//     strip both masks of y_v. Each honest party reveals one kind of share
//     per owner over all requests of its session and answers one request
//     (the rule above), and v refuses a request that lists v as dropped. The honest parties
//     therefore split into disjoint sets A (revealing b_v shares) and B
//     (s_v^SK shares); c colluding parties can supply both kinds; the attack
//     needs |A| + c ≥ t and |B| + c ≥ t, hence 2(t − c) ≤ n − c, i.e.
//     c ≥ 2t − n. Config requires t > n/2, so it fails with no colluders,
//     and it fails exactly when c < 2t − n; DefaultThreshold gives
//     2t − n − 1 ≥ ⌈n/3⌉ − 1, CAPE's S_C (TestInconsistentDropoutSetsCannotUnmask,
//     TestDefaultThresholdCoversSplitViewWithColluders). This presumes no
//     key substitution or sybils: a server able to do those needs no lie.
//   - A rerun of spent inputs over a different survivor set (Input).
//   - Tampered messages: every share ciphertext is authenticated (AES-GCM
//     with session, round, sender and receiver as associated data), and a
//     dropped party's reconstructed mask key is checked against its
//     advertised public key.
package secagg
