package noise

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"fmt"
	"math/big"
	"math/bits"
)

// rng buffers bytes from a Source and turns them into uniform integers by
// rejection sampling (never by floating-point arithmetic). One rng serves one
// call (a scalar or a whole vector); it is not shared between goroutines.
type rng struct {
	src Source
	// ks, when set, is an AES-256-CTR keystream keyed from src that
	// replaces direct reads (large vectors).
	ks  cipher.Stream
	buf []byte
	pos int
	// scratch space reused across draws (no allocation in the hot path)
	scratch []byte
	u, kd   big.Int
}

func newRNG(src Source) (*rng, error) { return newRNGSize(src, 128) }

// newRNGSize returns an rng that reads size bytes at a time (vectors use a
// larger buffer to amortise the cost of each read).
func newRNGSize(src Source, size int) (*rng, error) {
	if src == nil {
		return nil, fmt.Errorf("noise: nil Source")
	}
	r := &rng{src: src, buf: make([]byte, size), pos: size}
	if size >= 4096 {
		// Large vectors: one 384-bit read from src keys an AES-256-CTR
		// keystream (standard-library cryptographic PRG) for the rest.
		var key [48]byte
		if _, err := readFull(src, key[:]); err != nil {
			return nil, err
		}
		block, err := aes.NewCipher(key[:32])
		if err != nil {
			return nil, fmt.Errorf("noise: keystream: %w", err)
		}
		r.ks = cipher.NewCTR(block, key[32:])
	}
	return r, nil
}

func (r *rng) fill() error {
	if r.ks != nil {
		clear(r.buf)
		r.ks.XORKeyStream(r.buf, r.buf)
		r.pos = 0
		return nil
	}
	n := 0
	for n < len(r.buf) {
		m, err := r.src.Read(r.buf[n:])
		n += m
		if err != nil {
			return fmt.Errorf("noise: read randomness from %s: %w", r.src, err)
		}
		if m == 0 {
			return fmt.Errorf("noise: randomness source %s returned no bytes", r.src)
		}
	}
	r.pos = 0
	return nil
}

func (r *rng) uint64() (uint64, error) {
	if r.pos+8 > len(r.buf) {
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	v := binary.LittleEndian.Uint64(r.buf[r.pos:])
	r.pos += 8
	return v, nil
}

// uintn returns a uniform integer in [0, n); n must be > 0.
func (r *rng) uintn(n uint64) (uint64, error) {
	if n&(n-1) == 0 {
		v, err := r.uint64()
		return v & (n - 1), err
	}
	mask := uint64(1)<<bits.Len64(n) - 1
	for {
		v, err := r.uint64()
		if err != nil {
			return 0, err
		}
		if v &= mask; v < n {
			return v, nil
		}
	}
}

// bigIntn returns a uniform integer in [0, n); n must be > 0.
func (r *rng) bigIntn(n *big.Int) (*big.Int, error) {
	return r.bigIntnInto(new(big.Int), n)
}

// bigIntnInto sets out to a uniform integer in [0, n) and returns it.
func (r *rng) bigIntnInto(out, n *big.Int) (*big.Int, error) {
	if n.IsUint64() {
		v, err := r.uintn(n.Uint64())
		return out.SetUint64(v), err
	}
	bl := n.BitLen()
	nb := (bl + 7) / 8
	if cap(r.scratch) < nb {
		r.scratch = make([]byte, nb)
	}
	b := r.scratch[:nb]
	for {
		for i := range b {
			if r.pos >= len(r.buf) {
				if err := r.fill(); err != nil {
					return nil, err
				}
			}
			b[i] = r.buf[r.pos]
			r.pos++
		}
		if extra := nb*8 - bl; extra > 0 {
			b[0] &= byte(0xff >> extra)
		}
		out.SetBytes(b)
		if out.Cmp(n) < 0 {
			return out, nil
		}
	}
}
