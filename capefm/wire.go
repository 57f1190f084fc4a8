package capefm

import (
	"errors"

	"github.com/dplearn/dplearn/internal/wire"
)

// ErrMalformed is wrapped by every decoding error: short input, trailing
// bytes, a wrong version or type byte, a count beyond the limits, a
// non-finite float where a finite one is required.
var ErrMalformed = errors.New("capefm: malformed message")

// Limits on decoded sizes. They bound allocations before anything is read,
// so a hostile length prefix cannot make the decoder allocate more than the
// input could fill.
const (
	// MaxSites is the largest roster (secagg's limit).
	MaxSites = 1 << 16
	// MaxFeatures is the largest D; the released vector then has
	// D + D(D+1)/2 ≈ 8.4 million coordinates.
	MaxFeatures = 1 << 12
	// maxName is the longest site name in bytes.
	maxName = 64
	// maxReason is the longest refusal reason in bytes.
	maxReason = 1024
	// maxShares bounds the number of encrypted or revealed shares in one
	// secagg message.
	maxShares = MaxSites
)

// wireVersion is the version byte that starts every payload.
const wireVersion = 4 // 3: key advertisements carry their signatures (KeyAuth); 4: privacy unit in Params and Announce, schema declarations in Announce and Offer

// writer and reader are the shared strict encoding of package wire; every
// decoding error wraps ErrMalformed.
type (
	writer = wire.Writer
	reader = wire.Reader
)

// newReader reads b.
func newReader(b []byte) *reader { return wire.NewReader(b, ErrMalformed) }
