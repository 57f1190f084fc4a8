package secagg

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// ErrInputSpent is returned (wrapped) when an Input that has already been
// masked and sent in a session is offered to another Party, whatever
// happened to that session (completed, aborted or still running).
var ErrInputSpent = errors.New("secagg: input already sent (masked) in an earlier session; an input may enter at most one session: a retry needs a fresh input (for privacy noise, a fresh draw)")

// Input is a party's secret input vector x_u, usable in at most one session.
//
// Why single use: each session's masks are fresh, so two sums of the same
// inputs over survivor sets U3 ≠ U3' — from a session the server declared
// aborted in Unmasking although it already held t unmasking responses (it
// needs only t, while MinSurvivors may ask for more), or from a completed
// session, followed by a rerun with one party fewer — give the server
// Σ_{U3} x − Σ_{U3'} x, which is an individual input when the sets differ by
// one party. The per-session safety rule (ErrBothShares) cannot see across
// sessions, so the input itself carries the rule: the first Party that sends
// a masked input built from it spends it (under a lock, so concurrent
// sessions cannot both win), its words are erased, and every later Party —
// in any session, including the same one — refuses it with ErrInputSpent,
// at NewParty or at MaskInput. Before a masked input is sent, nothing about
// x_u has left the party, so an Input whose session aborted earlier (in
// AdvertiseKeys or ShareKeys) is still usable.
//
// An Input is safe for concurrent use.
type Input struct {
	mu      sync.Mutex
	n       int
	words   []uint64 // nil once spent
	spentIn []byte   // the session in which it was masked; nil until then
}

// NewInput returns a single-use input holding a copy of words (fixed-point
// words of Z_{2^64}, see Encoding).
func NewInput(words []uint64) *Input {
	return &Input{n: len(words), words: slices.Clone(words)}
}

// Len returns the number of words.
func (in *Input) Len() int { return in.n }

// SpentIn returns the session ID in which the input was masked and sent, or
// nil if it has not been.
func (in *Input) SpentIn() []byte {
	in.mu.Lock()
	defer in.mu.Unlock()
	return bytes.Clone(in.spentIn)
}

// spentErr returns an error wrapping ErrInputSpent if the input is spent.
// The caller holds in.mu.
func (in *Input) spentErr() error {
	if in.spentIn == nil {
		return nil
	}
	return fmt.Errorf("%w (it was masked in session %x)", ErrInputSpent, in.spentIn)
}

// check returns an error wrapping ErrInputSpent if the input is spent.
func (in *Input) check() error {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.spentErr()
}

// spend marks the input as sent in session and returns its words (now owned
// by the caller, and erased from the Input), or an error wrapping
// ErrInputSpent.
func (in *Input) spend(session []byte) ([]uint64, error) {
	in.mu.Lock()
	defer in.mu.Unlock()
	if err := in.spentErr(); err != nil {
		return nil, err
	}
	w := in.words
	in.words = nil
	in.spentIn = bytes.Clone(session)
	return w, nil
}
