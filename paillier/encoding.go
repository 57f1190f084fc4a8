package paillier

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
)

// Binary encoding, version 1. Every object starts with a 6-byte header:
// the magic "DPPL", the version byte 1 and a kind byte. Integers are
// unsigned big-endian; every field has a fixed length that follows from the
// key, so each object has exactly one encoding and decoders check the total
// length, the ranges of all elements (elements of Z*_{n^2} in [1, n^2) and
// coprime to n) and, for variable-length moduli, the absence of leading
// zero bytes. See the package documentation for the layouts.
const (
	encMagic   = "DPPL"
	encVersion = 1
	headerLen  = len(encMagic) + 2
	keyIDLen   = sha256.Size
)

// Object kinds in the header.
const (
	kindPublicKey          byte = 1
	kindCiphertext         byte = 2
	kindThresholdPublicKey byte = 3
	kindKeyShare           byte = 4
	// kindPartialDecryptionEZ was the partial decryption with an (e, z)
	// proof, which batch verification cannot use; it is no longer read.
	kindPartialDecryptionEZ byte = 5
	kindPartialDecryption   byte = 6
	kindPlaintextProof      byte = 7
)

var kindNames = map[byte]string{
	kindPublicKey:           "public key",
	kindCiphertext:          "ciphertext",
	kindThresholdPublicKey:  "threshold public key",
	kindKeyShare:            "key share",
	kindPartialDecryptionEZ: "partial decryption with an (e, z) proof (an older format, no longer read)",
	kindPartialDecryption:   "partial decryption",
	kindPlaintextProof:      "plaintext proof",
}

func header(kind byte) []byte {
	return append([]byte(encMagic), encVersion, kind)
}

// checkHeader validates the header and returns the body.
func checkHeader(b []byte, kind byte) ([]byte, error) {
	if len(b) < headerLen {
		return nil, fmt.Errorf("%d bytes, shorter than the %d-byte header", len(b), headerLen)
	}
	if string(b[:len(encMagic)]) != encMagic {
		return nil, errors.New("bad magic (not a dplearn Paillier object)")
	}
	if v := b[len(encMagic)]; v != encVersion {
		return nil, fmt.Errorf("unsupported version %d (this build reads version %d)", v, encVersion)
	}
	if k := b[len(encMagic)+1]; k != kind {
		name, ok := kindNames[k]
		if !ok {
			name = fmt.Sprintf("unknown kind %d", k)
		}
		return nil, fmt.Errorf("object is a %s, want a %s", name, kindNames[kind])
	}
	return b[headerLen:], nil
}

// reader consumes fixed-length fields from a body.
type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int, what string) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = fmt.Errorf("truncated %s: need %d bytes, have %d", what, n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) u16(what string) int {
	b := r.take(2, what)
	if b == nil {
		return 0
	}
	return int(binary.BigEndian.Uint16(b))
}

func (r *reader) u32(what string) int {
	b := r.take(4, what)
	if b == nil {
		return 0
	}
	return int(binary.BigEndian.Uint32(b))
}

func (r *reader) int(n int, what string) *big.Int {
	b := r.take(n, what)
	if b == nil {
		return nil
	}
	return new(big.Int).SetBytes(b)
}

func (r *reader) done() error {
	if r.err != nil {
		return r.err
	}
	if len(r.b) != 0 {
		return fmt.Errorf("%d trailing bytes", len(r.b))
	}
	return nil
}

func putU16(b []byte, v int) []byte { return binary.BigEndian.AppendUint16(b, uint16(v)) }
func putU32(b []byte, v int) []byte { return binary.BigEndian.AppendUint32(b, uint32(v)) }

// putFixed appends x as exactly width big-endian bytes (x < 256^width).
func putFixed(b []byte, x *big.Int, width int) []byte {
	out := make([]byte, width)
	x.FillBytes(out)
	return append(b, out...)
}

// elemLen is the fixed byte length of elements modulo n^2.
func (pk *PublicKey) elemLen() int { return (pk.nSquared.BitLen() + 7) / 8 }

// KeyID returns the SHA-256 digest of the public key's canonical encoding;
// ciphertexts carry it so that a ciphertext under another key is rejected.
func (pk *PublicKey) KeyID() [32]byte { return pk.id }

// marshal is the canonical encoding: header | u16 len(n) | n (no leading
// zero byte).
func (pk *PublicKey) marshal() []byte {
	nb := pk.n.Bytes()
	out := putU16(header(kindPublicKey), len(nb))
	return append(out, nb...)
}

// MarshalBinary returns the canonical encoding of the public key.
func (pk *PublicKey) MarshalBinary() ([]byte, error) { return pk.marshal(), nil }

// ParsePublicKey decodes a public key, rejecting moduli below
// MinModulusBits and non-canonical encodings.
func ParsePublicKey(b []byte) (*PublicKey, error) {
	return parsePublicKey(b, MinModulusBits)
}

func parsePublicKey(b []byte, minBits int) (*PublicKey, error) {
	body, err := checkHeader(b, kindPublicKey)
	if err != nil {
		return nil, fmt.Errorf("paillier: decode public key: %w", err)
	}
	r := &reader{b: body}
	n, err := r.modulus()
	if err == nil {
		err = r.done()
	}
	if err != nil {
		return nil, fmt.Errorf("paillier: decode public key: %w", err)
	}
	pk, err := newPublicKey(n, minBits)
	if err != nil {
		return nil, fmt.Errorf("paillier: decode public key: %w", err)
	}
	return pk, nil
}

// modulus reads u16 length | n and checks it is minimal.
func (r *reader) modulus() (*big.Int, error) {
	l := r.u16("modulus length")
	if r.err == nil && (l == 0 || l > maxModulusBits/8) {
		return nil, fmt.Errorf("modulus length %d bytes outside [1, %d]", l, maxModulusBits/8)
	}
	nb := r.take(l, "modulus")
	if r.err != nil {
		return nil, r.err
	}
	if nb[0] == 0 {
		return nil, errors.New("modulus has a leading zero byte (non-canonical)")
	}
	return new(big.Int).SetBytes(nb), nil
}

// MarshalBinary encodes the ciphertext: header | key ID (32) | c (fixed
// width, the byte length of n^2).
func (ct *Ciphertext) MarshalBinary() ([]byte, error) {
	if ct == nil || ct.pk == nil {
		return nil, errors.New("paillier: encode ciphertext: nil")
	}
	out := append(header(kindCiphertext), ct.pk.id[:]...)
	return putFixed(out, ct.c, ct.pk.elemLen()), nil
}

// ParseCiphertext decodes a ciphertext under pk: the key ID must match, the
// length must be exact, and c must lie in Z*_{n^2}.
func (pk *PublicKey) ParseCiphertext(b []byte) (*Ciphertext, error) {
	if pk == nil || pk.n == nil {
		return nil, fmt.Errorf("paillier: decode ciphertext: %w", errNoKey)
	}
	body, err := checkHeader(b, kindCiphertext)
	if err != nil {
		return nil, fmt.Errorf("paillier: decode ciphertext: %w", err)
	}
	r := &reader{b: body}
	id := r.take(keyIDLen, "key ID")
	c := r.int(pk.elemLen(), "ciphertext")
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("paillier: decode ciphertext: %w", err)
	}
	if !bytes.Equal(id, pk.id[:]) {
		return nil, errors.New("paillier: decode ciphertext: encrypted under a different public key")
	}
	if err := pk.checkUnit(c); err != nil {
		return nil, fmt.Errorf("paillier: decode ciphertext: %w", err)
	}
	return &Ciphertext{c: c, pk: pk}, nil
}

// ID returns the SHA-256 digest of the threshold public key's encoding.
func (tpk *ThresholdPublicKey) ID() [32]byte { return tpk.tid }

// marshal: header | u16 len(n) | n | u16 N | u16 t | v | v_1 ... v_N, the
// elements at the fixed byte length of n^2.
func (tpk *ThresholdPublicKey) marshal() []byte {
	nb := tpk.n.Bytes()
	w := tpk.elemLen()
	out := putU16(header(kindThresholdPublicKey), len(nb))
	out = append(out, nb...)
	out = putU16(out, tpk.parties)
	out = putU16(out, tpk.threshold)
	out = putFixed(out, tpk.v, w)
	for _, x := range tpk.vi {
		out = putFixed(out, x, w)
	}
	return out
}

// MarshalBinary returns the canonical encoding of the threshold public key.
func (tpk *ThresholdPublicKey) MarshalBinary() ([]byte, error) { return tpk.marshal(), nil }

// ParseThresholdPublicKey decodes a threshold public key (modulus of at
// least MinModulusBits bits).
func ParseThresholdPublicKey(b []byte) (*ThresholdPublicKey, error) {
	return parseThresholdPublicKey(b, MinModulusBits)
}

func parseThresholdPublicKey(b []byte, minBits int) (*ThresholdPublicKey, error) {
	body, err := checkHeader(b, kindThresholdPublicKey)
	if err != nil {
		return nil, fmt.Errorf("paillier: decode threshold public key: %w", err)
	}
	r := &reader{b: body}
	n, err := r.modulus()
	if err != nil {
		return nil, fmt.Errorf("paillier: decode threshold public key: %w", err)
	}
	pk, err := newPublicKey(n, minBits)
	if err != nil {
		return nil, fmt.Errorf("paillier: decode threshold public key: %w", err)
	}
	parties := r.u16("party count")
	threshold := r.u16("threshold")
	if r.err == nil && (parties < 1 || parties > MaxParties) {
		return nil, fmt.Errorf("paillier: decode threshold public key: %d parties, want 1 to %d", parties, MaxParties)
	}
	w := pk.elemLen()
	v := r.int(w, "verification base")
	vi := make([]*big.Int, 0, parties)
	for i := 0; i < parties && r.err == nil; i++ {
		vi = append(vi, r.int(w, fmt.Sprintf("verification key %d", i+1)))
	}
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("paillier: decode threshold public key: %w", err)
	}
	tpk, err := newThresholdPublicKey(pk, parties, threshold, v, vi)
	if err != nil {
		return nil, fmt.Errorf("paillier: decode threshold public key: %w", err)
	}
	return tpk, nil
}

// MarshalBinary encodes the share with its public key, so that a share file
// is self-contained: header | u32 len(tpk) | tpk encoding | u16 index | s_i
// (fixed width, the byte length of n^2).
func (ks *KeyShare) MarshalBinary() ([]byte, error) {
	if ks == nil || ks.pub == nil || ks.s == nil {
		return nil, errors.New("paillier: encode key share: incomplete")
	}
	pub := ks.pub.marshal()
	out := putU32(header(kindKeyShare), len(pub))
	out = append(out, pub...)
	out = putU16(out, ks.index)
	return putFixed(out, ks.s, ks.pub.elemLen()), nil
}

// ParseKeyShare decodes a key share and checks it against its verification
// key (v^(Delta s_i) = v_i), so a corrupted or mismatched share file is
// reported at load time rather than as failed proofs later.
func ParseKeyShare(b []byte) (*KeyShare, error) {
	return parseKeyShare(b, MinModulusBits)
}

func parseKeyShare(b []byte, minBits int) (*KeyShare, error) {
	body, err := checkHeader(b, kindKeyShare)
	if err != nil {
		return nil, fmt.Errorf("paillier: decode key share: %w", err)
	}
	r := &reader{b: body}
	l := r.u32("public key length")
	pubBytes := r.take(l, "threshold public key")
	if r.err != nil {
		return nil, fmt.Errorf("paillier: decode key share: %w", r.err)
	}
	tpk, err := parseThresholdPublicKey(pubBytes, minBits)
	if err != nil {
		return nil, fmt.Errorf("paillier: decode key share: %w", err)
	}
	index := r.u16("party index")
	s := r.int(tpk.elemLen(), "share")
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("paillier: decode key share: %w", err)
	}
	if index < 1 || index > tpk.parties {
		return nil, fmt.Errorf("paillier: decode key share: party %d outside [1, %d]", index, tpk.parties)
	}
	if s.Sign() == 0 || s.Cmp(tpk.nSquared) >= 0 {
		// s_i < n m < n^2; s_i = 0 has probability 1/(nm).
		return nil, fmt.Errorf("paillier: decode key share %d: share is zero or not below n^2", index)
	}
	ks := &KeyShare{pub: tpk, index: index, s: s}
	if err := ks.Verify(); err != nil {
		return nil, fmt.Errorf("paillier: decode key share: %w", err)
	}
	return ks, nil
}

// zLen is the fixed byte length of proof responses, which are below
// 2^(B+1).
func (tpk *ThresholdPublicKey) zLen() int { return (tpk.proofRandomBits() + 1 + 7) / 8 }

// MarshalBinary encodes the partial decryption with its proof: header |
// threshold key ID (32) | u16 index | c_i (W) | a (W) | b (W) | z (fixed
// width ceil((B+1)/8), B as in Proof), W the byte length of n^2.
func (pd *PartialDecryption) MarshalBinary() ([]byte, error) {
	if pd == nil || pd.pub == nil || pd.ci == nil || pd.proof == nil || pd.proof.a == nil || pd.proof.b == nil || pd.proof.z == nil {
		return nil, errors.New("paillier: encode partial decryption: incomplete")
	}
	tpk := pd.pub
	if pd.proof.z.BitLen() > tpk.proofRandomBits()+1 || pd.proof.z.Sign() < 0 || pd.proof.a.Sign() <= 0 || pd.proof.b.Sign() <= 0 ||
		pd.proof.a.Cmp(tpk.nSquared) >= 0 || pd.proof.b.Cmp(tpk.nSquared) >= 0 {
		return nil, errors.New("paillier: encode partial decryption: proof out of range")
	}
	out := append(header(kindPartialDecryption), tpk.tid[:]...)
	out = putU16(out, pd.index)
	out = putFixed(out, pd.ci, tpk.elemLen())
	out = putFixed(out, pd.proof.a, tpk.elemLen())
	out = putFixed(out, pd.proof.b, tpk.elemLen())
	return putFixed(out, pd.proof.z, tpk.zLen()), nil
}

// ParsePartialDecryption decodes a partial decryption for this key. It
// checks lengths, ranges and that c_i and the proof's commitments are in
// Z*_{n^2}; the proof itself is checked by VerifyPartial, VerifyPartials and
// Combine, which also need the ciphertext.
func (tpk *ThresholdPublicKey) ParsePartialDecryption(b []byte) (*PartialDecryption, error) {
	if tpk == nil || tpk.n == nil || tpk.delta == nil {
		return nil, fmt.Errorf("paillier: decode partial decryption: %w", errNoKey)
	}
	body, err := checkHeader(b, kindPartialDecryption)
	if err != nil {
		return nil, fmt.Errorf("paillier: decode partial decryption: %w", err)
	}
	r := &reader{b: body}
	id := r.take(keyIDLen, "key ID")
	index := r.u16("party index")
	ci := r.int(tpk.elemLen(), "c_i")
	a := r.int(tpk.elemLen(), "proof commitment a")
	bb := r.int(tpk.elemLen(), "proof commitment b")
	z := r.int(tpk.zLen(), "proof response")
	if err := r.done(); err != nil {
		return nil, fmt.Errorf("paillier: decode partial decryption: %w", err)
	}
	if !bytes.Equal(id, tpk.tid[:]) {
		return nil, errors.New("paillier: decode partial decryption: made under a different threshold key")
	}
	if index < 1 || index > tpk.parties {
		return nil, fmt.Errorf("paillier: decode partial decryption: party %d outside [1, %d]", index, tpk.parties)
	}
	if err := tpk.checkUnit(ci); err != nil {
		return nil, fmt.Errorf("paillier: decode partial decryption of party %d: c_i: %w", index, err)
	}
	p := &Proof{a: a, b: bb, z: z}
	if err := tpk.checkProofShape(p); err != nil {
		return nil, fmt.Errorf("paillier: decode partial decryption of party %d: %w", index, err)
	}
	return &PartialDecryption{pub: tpk, index: index, ci: ci, proof: p}, nil
}
