package secagg

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
)

// Key derivation and mask expansion.
//
// Every symmetric key is derived with HKDF-SHA-256 (RFC 5869) from a secret
// (an X25519 shared secret or a party's self-mask seed), with the session ID
// as salt and an info string naming the purpose, the round and the parties:
//
//	"dplearn/secagg/v1/share-enc" ‖ sender ‖ receiver   AES-256-GCM key for the shares sender→receiver
//	"dplearn/secagg/v1/pair-mask" ‖ min(u,v) ‖ max(u,v) AES-128-CTR key of the pairwise mask of u and v
//	"dplearn/secagg/v1/self-mask" ‖ u                   AES-128-CTR key of u's self mask
//
// (IDs as 4-byte big-endian). Because sessions use fresh ephemeral X25519 keys
// and fresh seeds, and the session ID enters every derivation, each derived
// key is used for exactly one message or one mask stream; the AES-GCM nonce
// and the CTR initial counter are therefore the fixed all-zero block, which is
// safe for single-use keys.
//
// Mask keys are 128-bit (AES-128-CTR, 1.4× faster than AES-256 and the
// bulk of a party's work): the protocol's security level is that of X25519,
// about 2^128, and even a multi-target search over the n² mask keys of a
// session (≤ 2^32) leaves about 2^96 work. Share-encryption keys are
// 256-bit; they cost nothing measurable.

const (
	infoShareEnc = "dplearn/secagg/v1/share-enc"
	infoPairMask = "dplearn/secagg/v1/pair-mask"
	infoSelfMask = "dplearn/secagg/v1/self-mask"
)

// Key lengths in bytes.
const (
	shareKeyLen = 32 // AES-256-GCM
	maskKeyLen  = 16 // AES-128-CTR
)

func deriveKey(secret, session []byte, purpose string, ids ...uint32) ([]byte, error) {
	n := shareKeyLen
	if purpose != infoShareEnc {
		n = maskKeyLen
	}
	info := make([]byte, 0, len(purpose)+4*len(ids))
	info = append(info, purpose...)
	for _, id := range ids {
		info = binary.BigEndian.AppendUint32(info, id)
	}
	k, err := hkdf.Key(sha256.New, secret, session, string(info), n)
	if err != nil {
		return nil, fmt.Errorf("secagg: derive %s key: %w", purpose, err)
	}
	return k, nil
}

// maskChunk is the number of uint64 words processed per stream per step:
// 16 KiB of keystream and 16 KiB of the vector stay in the L1/L2 cache while
// every mask stream is applied to them.
const maskChunk = 2048

// maskStream is one mask being expanded: an AES-128-CTR keystream and the
// sign with which it enters the vector.
type maskStream struct {
	ctr  cipher.Stream
	sign int // +1 adds the mask, −1 subtracts it
}

// newMaskStream starts the mask with the given key at word off: the mask is
// the little-endian uint64 reading of the AES-128-CTR keystream with an
// all-zero initial counter block, and word off starts at byte 8·off, so a
// long vector can be processed in independent pieces.
func newMaskStream(key []byte, sign int, off int) (maskStream, error) {
	if len(key) != maskKeyLen {
		return maskStream{}, fmt.Errorf("secagg: mask key has %d bytes, want %d", len(key), maskKeyLen)
	}
	blk, err := aes.NewCipher(key)
	if err != nil {
		return maskStream{}, fmt.Errorf("secagg: mask cipher: %w", err)
	}
	var iv [aes.BlockSize]byte
	binary.BigEndian.PutUint64(iv[8:], uint64(off/2))
	ctr := cipher.NewCTR(blk, iv[:])
	if off%2 == 1 {
		var skip [8]byte
		ctr.XORKeyStream(skip[:], skip[:])
	}
	return maskStream{ctr: ctr, sign: sign}, nil
}

// applyMasks adds every stream's mask (with its sign) to dst, chunk by chunk
// so that dst stays in cache. The streams advance by len(dst) words.
func applyMasks(dst []uint64, streams []maskStream) {
	buf := make([]byte, 8*maskChunk)
	zero := make([]byte, 8*maskChunk)
	for len(dst) > 0 {
		n := min(len(dst), maskChunk)
		d, b := dst[:n], buf[:8*n]
		for _, s := range streams {
			s.ctr.XORKeyStream(b, zero[:len(b)]) // b = keystream
			if s.sign > 0 {
				addWords(d, b)
			} else {
				subWords(d, b)
			}
		}
		dst = dst[n:]
	}
}

// addWords sets d[i] += LE64(b[8i:]) (mod 2^64). The loop is unrolled by
// four and written so the compiler drops the bounds checks; each
// LittleEndian.Uint64 compiles to one load on little-endian machines.
func addWords(d []uint64, b []byte) {
	b = b[:8*len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		w := b[8*i : 8*i+32]
		dd := d[i : i+4 : i+4]
		dd[0] += binary.LittleEndian.Uint64(w[0:8])
		dd[1] += binary.LittleEndian.Uint64(w[8:16])
		dd[2] += binary.LittleEndian.Uint64(w[16:24])
		dd[3] += binary.LittleEndian.Uint64(w[24:32])
	}
	for ; i < len(d); i++ {
		d[i] += binary.LittleEndian.Uint64(b[8*i:])
	}
}

// subWords sets d[i] -= LE64(b[8i:]) (mod 2^64), like addWords.
func subWords(d []uint64, b []byte) {
	b = b[:8*len(d)]
	i := 0
	for ; i+4 <= len(d); i += 4 {
		w := b[8*i : 8*i+32]
		dd := d[i : i+4 : i+4]
		dd[0] -= binary.LittleEndian.Uint64(w[0:8])
		dd[1] -= binary.LittleEndian.Uint64(w[8:16])
		dd[2] -= binary.LittleEndian.Uint64(w[16:24])
		dd[3] -= binary.LittleEndian.Uint64(w[24:32])
	}
	for ; i < len(d); i++ {
		d[i] -= binary.LittleEndian.Uint64(b[8*i:])
	}
}
