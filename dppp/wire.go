package dppp

import (
	"errors"

	"github.com/dplearn/dplearn/internal/wire"
)

// ErrMalformed is wrapped by every decoding error: short input, trailing
// bytes, a wrong version or type byte, a count beyond the limits, a
// non-finite float where a finite one is required.
var ErrMalformed = errors.New("dppp: malformed message")

// Limits on decoded sizes. They bound allocations before anything is read.
const (
	// MaxTeachers is the largest roster (paillier.MaxParties).
	MaxTeachers = 1000
	// MaxClasses bounds K.
	MaxClasses = 1 << 12
	// MaxFeatures bounds the length of a query row.
	MaxFeatures = 1 << 16
	// MaxBatch bounds the queries in one batch (one ciphertext).
	MaxBatch = 1 << 12
	// maxName is the longest teacher name in bytes.
	maxName = 64
	// maxReason is the longest refusal reason in bytes.
	maxReason = 1024
	// maxBlob bounds an encoded Paillier object (ciphertext or partial
	// decryption of an 8192-bit key).
	maxBlob = 1 << 14
)

// wireVersion is the version byte that starts every payload. Version 2
// (issue 22): Params carry Colluders, Absent and Honest in place of γ, a
// Vote its proof of plaintext knowledge, a Decrypt the proofs and set
// signatures; SignSet and SetSignature are new. A version-1 payload (or
// privacy record) is refused, never misread.
const wireVersion = 3

// writer and reader are the shared strict encoding of package wire; every
// decoding error wraps ErrMalformed.
type (
	writer = wire.Writer
	reader = wire.Reader
)

// newReader reads b.
func newReader(b []byte) *reader { return wire.NewReader(b, ErrMalformed) }
