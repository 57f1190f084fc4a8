package secagg

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Round names a round of the protocol. Each message type belongs to exactly
// one round.
type Round int

// The rounds of the semi-honest protocol (Bonawitz et al. 2017, Fig. 4
// without the ConsistencyCheck round of the malicious version).
const (
	RoundAdvertiseKeys Round = iota // party → server: two X25519 public keys
	RoundShareKeys                  // party → server → party: encrypted Shamir shares
	RoundMaskedInput                // party → server: the masked input vector
	RoundUnmasking                  // party → server: the shares that remove the masks
	roundDone
)

// String returns the round's name as used in the paper.
func (r Round) String() string {
	switch r {
	case RoundAdvertiseKeys:
		return "AdvertiseKeys"
	case RoundShareKeys:
		return "ShareKeys"
	case RoundMaskedInput:
		return "MaskedInputCollection"
	case RoundUnmasking:
		return "Unmasking"
	case roundDone:
		return "Done"
	}
	return fmt.Sprintf("Round(%d)", int(r))
}

// Config is the public configuration every party and the server agree on
// before a session starts.
type Config struct {
	// Session identifies this run of the protocol: 16 to 64 bytes, fresh and
	// unpredictable for every run (e.g. 32 bytes from crypto/rand chosen by
	// the server and announced with the roster). It salts every derived key
	// and is checked in every message, so keys, masks and nonces are never
	// reused across sessions.
	Session []byte
	// Parties is the roster of party IDs (distinct, ≥ 1). A party's ID is
	// also its Shamir x coordinate.
	Parties []uint32
	// Threshold t: t shares reconstruct a secret, t−1 reveal nothing. It
	// must satisfy n/2 < t ≤ n (n = len(Parties)); the sum is computed only
	// if at least t parties survive every round. See DefaultThreshold.
	Threshold int
	// MinSurvivors (≥ Threshold; 0 means Threshold) is the smallest number
	// of parties whose inputs may make up the sum. Applications that must
	// not proceed with fewer than, say, all parties set it to n.
	MinSurvivors int
	// VectorLen is the length L of every input vector (≥ 1).
	VectorLen int
}

// DefaultThreshold returns ⌊2n/3⌋ + 1, the threshold Bonawitz et al. use
// against an active adversary; it tolerates up to ⌈n/3⌉ − 1 dropouts and
// keeps the sum private against the server colluding with up to ⌊2n/3⌋
// parties in the semi-honest model. It is at least 2 for n ≥ 2.
func DefaultThreshold(n int) int { return max(2*n/3+1, 2) }

const (
	minSessionLen = 16
	maxSessionLen = 64
	maxParties    = 1 << 16
	maxVectorLen  = 1 << 28
)

// Validate checks the configuration.
func (c Config) Validate() error {
	if len(c.Session) < minSessionLen || len(c.Session) > maxSessionLen {
		return fmt.Errorf("secagg: config: session ID has %d bytes, want %d to %d", len(c.Session), minSessionLen, maxSessionLen)
	}
	n := len(c.Parties)
	if n < 2 || n > maxParties {
		return fmt.Errorf("secagg: config: %d parties, want 2 to %d", n, maxParties)
	}
	seen := make(map[uint32]bool, n)
	for _, id := range c.Parties {
		if id == 0 {
			return errors.New("secagg: config: party ID 0 is reserved (it is the Shamir secret's x coordinate)")
		}
		if seen[id] {
			return fmt.Errorf("secagg: config: duplicate party ID %d", id)
		}
		seen[id] = true
	}
	if c.Threshold <= n/2 || c.Threshold > n {
		return fmt.Errorf("secagg: config: threshold %d for %d parties, want %d ≤ t ≤ %d (t > n/2)", c.Threshold, n, n/2+1, n)
	}
	if c.MinSurvivors != 0 && (c.MinSurvivors < c.Threshold || c.MinSurvivors > n) {
		return fmt.Errorf("secagg: config: minimum survivors %d, want %d to %d (≥ threshold)", c.MinSurvivors, c.Threshold, n)
	}
	if c.VectorLen < 1 || c.VectorLen > maxVectorLen {
		return fmt.Errorf("secagg: config: vector length %d, want 1 to %d", c.VectorLen, maxVectorLen)
	}
	return nil
}

// needed returns the number of parties that must survive each round.
func (c Config) needed() int { return max(c.Threshold, c.MinSurvivors) }

// roster returns a sorted copy of the party IDs.
func (c Config) roster() []uint32 {
	r := slices.Clone(c.Parties)
	slices.Sort(r)
	return r
}

// AbortError reports that too few parties remain to continue: the round,
// how many remain, how many are needed and which parties are missing. No
// output is produced after an abort.
type AbortError struct {
	Round   Round
	Have    int
	Need    int
	Missing []uint32 // parties of the previous round's set that did not answer, sorted
	Earlier []uint32 // roster parties already lost in earlier rounds, sorted
	Cause   error    // optional: errors reported by parties in this round
}

func (e *AbortError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "secagg: abort in round %s: %d parties remain, need at least %d; missing parties %v",
		e.Round, e.Have, e.Need, e.Missing)
	if len(e.Earlier) > 0 {
		fmt.Fprintf(&b, " (lost in earlier rounds: %v)", e.Earlier)
	}
	if e.Cause != nil {
		fmt.Fprintf(&b, " (%v)", e.Cause)
	}
	return b.String()
}

func (e *AbortError) Unwrap() error { return e.Cause }

// ErrBothShares is returned (wrapped) by a party asked to reveal both the
// self-mask share and the mask-key share of the same peer, which would let
// the server unmask that peer's individual input.
var ErrBothShares = errors.New("secagg: refused to reveal both the self-mask share and the mask-key share of one party")
