package secagg

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ecdh"
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"slices"
)

// Party is one participant's state machine. Call its methods in round order:
// AdvertiseKeys, ShareKeys, MaskInput, Unmask. A method called out of order,
// or with a message that fails validation, returns an error and leaves the
// state unchanged (nothing secret is revealed by a rejected message). A Party
// is not safe for concurrent use; one session uses one Party.
//
// A Party is bound to one session: every message it accepts must carry
// cfg.Session, its state only moves forward, and it cannot be restarted. Its
// Input is spent when MaskInput sends the masked input, so no Party of any
// later session can send the same input again (see Input): after an abort
// that follows MaskedInputCollection, a retry needs a fresh input.
type Party struct {
	cfg   Config
	id    uint32
	input *Input
	state Round

	encSK, maskSK *ecdh.PrivateKey
	u1            []uint32                 // sorted, from the KeyRoster
	keys          map[uint32]AdvertiseKeys // U1's public keys
	selfSeed      []byte                   // b_u
	u2            []uint32                 // sorted, includes id
	held          map[uint32]heldShares    // shares of each U2 member's secrets held by this party
	pairKeys      map[uint32][]byte        // pairwise mask keys with the U1 peers
	shareKeys     map[uint32][]byte        // AES-GCM keys for the shares peer → this party
	revealed      map[uint32]shareKind     // what this party has revealed, per owner
}

type heldShares struct {
	maskKey  []byte // share of s_owner^SK
	selfSeed []byte // share of b_owner
}

type shareKind int

const (
	selfSeedShare shareKind = iota + 1
	maskKeyShare
)

// NewParty starts a session for party id with the single-use fixed-point
// input (Len = cfg.VectorLen; see Encoding and NewInput). It refuses, with an
// error wrapping ErrInputSpent, an input already sent in a session.
func NewParty(cfg Config, id uint32, input *Input) (*Party, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !slices.Contains(cfg.Parties, id) {
		return nil, fmt.Errorf("secagg: party %d is not in the roster", id)
	}
	if input == nil {
		return nil, fmt.Errorf("secagg: party %d: nil input", id)
	}
	if input.Len() != cfg.VectorLen {
		return nil, fmt.Errorf("secagg: party %d: input has %d words, want %d", id, input.Len(), cfg.VectorLen)
	}
	if err := input.check(); err != nil {
		return nil, fmt.Errorf("secagg: party %d: session %x: %w", id, cfg.Session, err)
	}
	cfg.Parties = cfg.roster()
	cfg.Session = bytes.Clone(cfg.Session)
	return &Party{cfg: cfg, id: id, input: input, state: RoundAdvertiseKeys,
		revealed: make(map[uint32]shareKind)}, nil
}

// ID returns the party's ID.
func (p *Party) ID() uint32 { return p.id }

func (p *Party) errorf(r Round, format string, args ...any) error {
	return fmt.Errorf("secagg: party %d: round %s: %s", p.id, r, fmt.Sprintf(format, args...))
}

func (p *Party) expect(r Round) error {
	if p.state != r {
		return p.errorf(r, "message for round %s while the party is in round %s", r, p.state)
	}
	return nil
}

// AdvertiseKeys generates the party's two ephemeral X25519 key pairs and
// returns the round-0 message.
func (p *Party) AdvertiseKeys() (*AdvertiseKeys, error) {
	if err := p.expect(RoundAdvertiseKeys); err != nil {
		return nil, err
	}
	var err error
	if p.encSK, err = ecdh.X25519().GenerateKey(rand.Reader); err != nil {
		return nil, p.errorf(RoundAdvertiseKeys, "generate key: %v", err)
	}
	if p.maskSK, err = ecdh.X25519().GenerateKey(rand.Reader); err != nil {
		return nil, p.errorf(RoundAdvertiseKeys, "generate key: %v", err)
	}
	p.state = RoundShareKeys
	return &AdvertiseKeys{Session: bytes.Clone(p.cfg.Session), From: p.id,
		EncKey: p.encSK.PublicKey().Bytes(), MaskKey: p.maskSK.PublicKey().Bytes()}, nil
}

// ShareKeys checks the roster U1, draws the self-mask seed b_u, Shamir-shares
// b_u and s_u^SK among U1 with threshold t, and returns the shares encrypted
// for each peer.
func (p *Party) ShareKeys(m *KeyRoster) (*ShareKeys, error) {
	const r = RoundShareKeys
	if err := p.expect(r); err != nil {
		return nil, err
	}
	if m == nil {
		return nil, p.errorf(r, "nil key roster")
	}
	if !bytes.Equal(m.Session, p.cfg.Session) {
		return nil, p.errorf(r, "key roster for another session")
	}
	keys := make(map[uint32]AdvertiseKeys, len(m.Keys))
	u1 := make([]uint32, 0, len(m.Keys))
	pubs := make(map[string]uint32, 2*len(m.Keys))
	for i := range m.Keys {
		k := m.Keys[i]
		if err := k.validate(p.cfg.Session); err != nil {
			return nil, p.errorf(r, "key roster: %v", err)
		}
		if !slices.Contains(p.cfg.Parties, k.From) {
			return nil, p.errorf(r, "key roster names party %d, which is not in the roster", k.From)
		}
		if len(u1) > 0 && k.From <= u1[len(u1)-1] {
			return nil, p.errorf(r, "key roster is not sorted by party or lists party %d twice", k.From)
		}
		for _, pk := range [][]byte{k.EncKey, k.MaskKey} {
			if other, dup := pubs[string(pk)]; dup {
				return nil, p.errorf(r, "key roster: parties %d and %d share a public key", other, k.From)
			}
			pubs[string(pk)] = k.From
		}
		keys[k.From] = k
		u1 = append(u1, k.From)
	}
	own, ok := keys[p.id]
	if !ok {
		return nil, p.errorf(r, "key roster does not list this party")
	}
	if !bytes.Equal(own.EncKey, p.encSK.PublicKey().Bytes()) || !bytes.Equal(own.MaskKey, p.maskSK.PublicKey().Bytes()) {
		return nil, p.errorf(r, "key roster lists keys for this party that it did not send")
	}
	if len(u1) < p.cfg.needed() {
		return nil, p.errorf(r, "key roster has %d parties, need at least %d", len(u1), p.cfg.needed())
	}

	seed := make([]byte, SecretLen)
	if _, err := rand.Read(seed); err != nil {
		return nil, p.errorf(r, "draw self-mask seed: %v", err)
	}
	sShares, err := splitSecret(p.maskSK.Bytes(), p.cfg.Threshold, u1, rand.Reader)
	if err != nil {
		return nil, p.errorf(r, "share mask key: %v", err)
	}
	bShares, err := splitSecret(seed, p.cfg.Threshold, u1, rand.Reader)
	if err != nil {
		return nil, p.errorf(r, "share self-mask seed: %v", err)
	}
	out := &ShareKeys{Session: bytes.Clone(p.cfg.Session), From: p.id, Shares: make([]EncryptedShare, 0, len(u1)-1)}
	held := make(map[uint32]heldShares, len(u1))
	pairKeys := make(map[uint32][]byte, len(u1))
	inKeys := make(map[uint32][]byte, len(u1))
	for i, v := range u1 {
		if v == p.id {
			held[v] = heldShares{maskKey: sShares[i].Y, selfSeed: bShares[i].Y}
			continue
		}
		// Both key agreements with v happen now, so a bad (e.g. low-order)
		// public key is caught before anything is shared.
		pk, err := pairMaskKey(p.maskSK, keys[v].MaskKey, p.cfg.Session, p.id, v)
		if err != nil {
			return nil, p.errorf(r, "pairwise mask key with party %d: %v", v, err)
		}
		pairKeys[v] = pk
		outKey, inKey, err := p.shareKeyPair(keys[v].EncKey, v)
		if err != nil {
			return nil, p.errorf(r, "share encryption key with party %d: %v", v, err)
		}
		inKeys[v] = inKey
		aead, err := newAEAD(outKey)
		if err != nil {
			return nil, p.errorf(r, "peer %d: %v", v, err)
		}
		plain := make([]byte, 0, sharePlainLen)
		plain = binary.BigEndian.AppendUint32(plain, p.id)
		plain = binary.BigEndian.AppendUint32(plain, v)
		plain = append(plain, sShares[i].Y...)
		plain = append(plain, bShares[i].Y...)
		ct := aead.Seal(nil, make([]byte, aead.NonceSize()), plain, shareAD(p.cfg.Session, p.id, v))
		out.Shares = append(out.Shares, EncryptedShare{From: p.id, To: v, Ciphertext: ct})
	}
	p.keys, p.u1, p.selfSeed, p.held, p.pairKeys, p.shareKeys = keys, u1, seed, held, pairKeys, inKeys
	p.state = RoundMaskedInput
	return out, nil
}

// shareKeyPair agrees on a secret with peer v's encryption key and derives
// the two AES-256-GCM keys: this party → v, and v → this party.
func (p *Party) shareKeyPair(peerEncKey []byte, v uint32) (out, in []byte, err error) {
	pk, err := ecdh.X25519().NewPublicKey(peerEncKey)
	if err != nil {
		return nil, nil, err
	}
	secret, err := p.encSK.ECDH(pk)
	if err != nil {
		return nil, nil, fmt.Errorf("key agreement: %w", err)
	}
	if out, err = deriveKey(secret, p.cfg.Session, infoShareEnc, p.id, v); err != nil {
		return nil, nil, err
	}
	if in, err = deriveKey(secret, p.cfg.Session, infoShareEnc, v, p.id); err != nil {
		return nil, nil, err
	}
	return out, in, nil
}

// newAEAD returns AES-256-GCM under key.
func newAEAD(key []byte) (cipher.AEAD, error) {
	blk, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(blk)
}

// shareAD is the associated data binding a share ciphertext to the session,
// the round, the sender and the receiver.
func shareAD(session []byte, from, to uint32) []byte {
	ad := make([]byte, 0, len(session)+len("ShareKeys")+8)
	ad = append(ad, session...)
	ad = append(ad, "ShareKeys"...)
	ad = binary.BigEndian.AppendUint32(ad, from)
	return binary.BigEndian.AppendUint32(ad, to)
}

// MaskInput decrypts and stores the shares relayed from U2, and returns the
// masked input y_u = x_u + PRG(b_u) + Σ_{v∈U2\{u}} ±PRG(s_{u,v}) (plus for
// u < v, minus for u > v). This spends the party's Input: if another Party
// has already sent it (in any session), MaskInput refuses with an error
// wrapping ErrInputSpent and sends nothing.
func (p *Party) MaskInput(m *ShareRelay) (*MaskedInput, error) {
	const r = RoundMaskedInput
	if err := p.expect(r); err != nil {
		return nil, err
	}
	if err := p.input.check(); err != nil {
		return nil, fmt.Errorf("secagg: party %d: round %s: session %x: %w", p.id, r, p.cfg.Session, err)
	}
	if m == nil {
		return nil, p.errorf(r, "nil share relay")
	}
	if !bytes.Equal(m.Session, p.cfg.Session) {
		return nil, p.errorf(r, "share relay for another session")
	}
	if m.To != p.id {
		return nil, p.errorf(r, "share relay addressed to party %d", m.To)
	}
	u2 := []uint32{p.id}
	held := map[uint32]heldShares{p.id: p.held[p.id]}
	var prev uint32
	for i, s := range m.Shares {
		if s.To != p.id {
			return nil, p.errorf(r, "relayed share %d from party %d is addressed to party %d", i, s.From, s.To)
		}
		if _, ok := p.keys[s.From]; !ok || s.From == p.id {
			return nil, p.errorf(r, "relayed share from party %d, which is not a peer in U1", s.From)
		}
		if i > 0 && s.From <= prev {
			return nil, p.errorf(r, "relayed shares are not sorted by sender or repeat party %d", s.From)
		}
		prev = s.From
		if len(s.Ciphertext) != ShareCiphertextLen {
			return nil, p.errorf(r, "share from party %d has %d bytes, want %d", s.From, len(s.Ciphertext), ShareCiphertextLen)
		}
		aead, err := newAEAD(p.shareKeys[s.From])
		if err != nil {
			return nil, p.errorf(r, "share from party %d: %v", s.From, err)
		}
		plain, err := aead.Open(nil, make([]byte, aead.NonceSize()), s.Ciphertext, shareAD(p.cfg.Session, s.From, p.id))
		if err != nil {
			return nil, p.errorf(r, "share from party %d fails authentication: %v", s.From, err)
		}
		if binary.BigEndian.Uint32(plain) != s.From || binary.BigEndian.Uint32(plain[4:]) != p.id {
			return nil, p.errorf(r, "share from party %d names the wrong parties", s.From)
		}
		held[s.From] = heldShares{maskKey: plain[8 : 8+ShareLen], selfSeed: plain[8+ShareLen:]}
		u2 = append(u2, s.From)
	}
	slices.Sort(u2)
	if len(u2) < p.cfg.needed() {
		return nil, p.errorf(r, "shares relayed from %d parties (with this one), need at least %d", len(u2), p.cfg.needed())
	}

	streams := make([]maskStream, 0, len(u2))
	selfKey, err := deriveKey(p.selfSeed, p.cfg.Session, infoSelfMask, p.id)
	if err != nil {
		return nil, p.errorf(r, "%v", err)
	}
	st, err := newMaskStream(selfKey, +1, 0)
	if err != nil {
		return nil, p.errorf(r, "%v", err)
	}
	streams = append(streams, st)
	for _, v := range u2 {
		if v == p.id {
			continue
		}
		key := p.pairKeys[v]
		sign := +1
		if p.id > v {
			sign = -1
		}
		st, err := newMaskStream(key, sign, 0)
		if err != nil {
			return nil, p.errorf(r, "%v", err)
		}
		streams = append(streams, st)
	}
	// Last fallible step: from here on the masked input is sent.
	y, err := p.input.spend(p.cfg.Session)
	if err != nil {
		return nil, fmt.Errorf("secagg: party %d: round %s: session %x: %w", p.id, r, p.cfg.Session, err)
	}
	applyMasks(y, streams)
	p.u2, p.held = u2, held
	for _, k := range p.pairKeys {
		clear(k)
	}
	for _, k := range p.shareKeys {
		clear(k)
	}
	p.pairKeys, p.shareKeys = nil, nil
	p.state = RoundUnmasking
	return &MaskedInput{Session: bytes.Clone(p.cfg.Session), From: p.id, Masked: y}, nil
}

// pairMaskKey derives the AES key of the pairwise mask of u and v from u's
// mask secret key and v's mask public key; both parties derive the same key.
func pairMaskKey(sk *ecdh.PrivateKey, peerPub []byte, session []byte, u, v uint32) ([]byte, error) {
	pk, err := ecdh.X25519().NewPublicKey(peerPub)
	if err != nil {
		return nil, err
	}
	secret, err := sk.ECDH(pk)
	if err != nil {
		return nil, fmt.Errorf("key agreement: %w", err)
	}
	return deriveKey(secret, session, infoPairMask, min(u, v), max(u, v))
}

// Unmask answers the server's request: for every survivor, this party's share
// of its self-mask seed; for every dropped party, this party's share of its
// mask key. It refuses (ErrBothShares) to reveal both kinds for one party,
// within a request or across requests, and refuses a request whose lists are
// not exactly U2 or leave fewer than the threshold of survivors.
func (p *Party) Unmask(m *UnmaskRequest) (*UnmaskResponse, error) {
	const r = RoundUnmasking
	if m == nil {
		return nil, p.errorf(r, "nil unmask request")
	}
	// The safety rule is checked first, whatever the state.
	inSurv := make(map[uint32]bool, len(m.Survivors))
	for _, v := range m.Survivors {
		inSurv[v] = true
		if p.revealed[v] == maskKeyShare {
			return nil, fmt.Errorf("%w: party %d already revealed the mask-key share of party %d; round %s", ErrBothShares, p.id, v, r)
		}
	}
	for _, v := range m.Dropped {
		if inSurv[v] {
			return nil, fmt.Errorf("%w: party %d was asked for both shares of party %d; round %s", ErrBothShares, p.id, v, r)
		}
		if p.revealed[v] == selfSeedShare {
			return nil, fmt.Errorf("%w: party %d already revealed the self-mask share of party %d; round %s", ErrBothShares, p.id, v, r)
		}
	}
	if err := p.expect(r); err != nil {
		return nil, err
	}
	if !bytes.Equal(m.Session, p.cfg.Session) {
		return nil, p.errorf(r, "unmask request for another session")
	}
	if m.To != p.id {
		return nil, p.errorf(r, "unmask request addressed to party %d", m.To)
	}
	if !slices.IsSorted(m.Survivors) || !slices.IsSorted(m.Dropped) {
		return nil, p.errorf(r, "unmask request lists are not sorted")
	}
	all := append(slices.Clone(m.Survivors), m.Dropped...)
	slices.Sort(all)
	if !slices.Equal(all, p.u2) {
		return nil, p.errorf(r, "unmask request lists parties %v, want exactly U2 = %v", all, p.u2)
	}
	if !inSurv[p.id] {
		return nil, p.errorf(r, "unmask request does not list this party as a survivor")
	}
	if len(m.Survivors) < p.cfg.needed() {
		return nil, p.errorf(r, "unmask request has %d survivors, need at least %d", len(m.Survivors), p.cfg.needed())
	}
	out := &UnmaskResponse{Session: bytes.Clone(p.cfg.Session), From: p.id,
		SelfMaskShares: make([]RevealedShare, len(m.Survivors)),
		MaskKeyShares:  make([]RevealedShare, len(m.Dropped))}
	for i, v := range m.Survivors {
		out.SelfMaskShares[i] = RevealedShare{Owner: v, Y: bytes.Clone(p.held[v].selfSeed)}
		p.revealed[v] = selfSeedShare
	}
	for i, v := range m.Dropped {
		out.MaskKeyShares[i] = RevealedShare{Owner: v, Y: bytes.Clone(p.held[v].maskKey)}
		p.revealed[v] = maskKeyShare
	}
	// Forget the secrets: the session is over for this party.
	clear(p.selfSeed)
	p.held, p.encSK, p.maskSK = nil, nil, nil
	p.state = roundDone
	return out, nil
}
