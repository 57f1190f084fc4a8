package secagg

import (
	"bytes"
	"crypto/ecdh"
	"fmt"
)

// Messages. Every message is a plain struct of integers, byte slices and
// slices of such structs, so it maps one-to-one onto a protobuf message for a
// gRPC transport (uint32 → uint32, []byte → bytes, []uint64 → repeated
// fixed64). Every message carries the session ID; the receiver checks it,
// the round (by the message's type), the sender against the roster and the
// round's participant set, duplicates, and every length. Integrity and
// authenticity of the party↔server channel are the transport's job (mutual
// TLS binds the sender ID to a certificate); the Shamir shares, which the
// server relays, are additionally encrypted end to end between parties.
//
//	round           party → server     server → party
//	AdvertiseKeys   AdvertiseKeys      KeyRoster       (U1: parties whose keys arrived)
//	ShareKeys       ShareKeys          ShareRelay      (U2: parties whose shares arrived)
//	MaskedInput     MaskedInput        UnmaskRequest   (U3: parties whose masked input arrived)
//	Unmasking       UnmaskResponse     —               (server outputs the sum over U3)
//
// A protobuf rendering (field numbers are a suggestion; the Go structs are
// the reference):
//
//	message AdvertiseKeys  { bytes session = 1; uint32 from = 2; bytes enc_key = 3; bytes mask_key = 4; }
//	message KeyRoster      { bytes session = 1; repeated AdvertiseKeys keys = 2; }
//	message EncryptedShare { uint32 from = 1; uint32 to = 2; bytes ciphertext = 3; }
//	message ShareKeys      { bytes session = 1; uint32 from = 2; repeated EncryptedShare shares = 3; }
//	message ShareRelay     { bytes session = 1; uint32 to = 2; repeated EncryptedShare shares = 3; }
//	message MaskedInput    { bytes session = 1; uint32 from = 2; repeated fixed64 masked = 3; }
//	message UnmaskRequest  { bytes session = 1; uint32 to = 2; repeated uint32 survivors = 3; repeated uint32 dropped = 4; }
//	message RevealedShare  { uint32 owner = 1; bytes y = 2; }
//	message UnmaskResponse { bytes session = 1; uint32 from = 2; repeated RevealedShare self_mask_shares = 3; repeated RevealedShare mask_key_shares = 4; }
//
// The transport must check that the sender field of a party's message is
// the party named in its TLS client certificate, and must deliver each
// server message only to the party it is addressed to (ShareRelay carries
// ciphertexts only the addressee can open, but the survivors lists and the
// roster are not secret). A party uploads about 8L + 135n bytes per session
// (plus the session ID in each message) and downloads about 8 + 165n bytes.

// Message is implemented by every protocol message.
type Message interface {
	// MessageRound is the round the message belongs to.
	MessageRound() Round
	// Party is the sending party (party → server) or the addressed party
	// (server → party); 0 for the broadcast KeyRoster.
	Party() uint32
}

// X25519KeyLen is the length of an X25519 public key.
const X25519KeyLen = 32

// AdvertiseKeys (round AdvertiseKeys, party → server) carries the party's two
// fresh X25519 public keys: EncKey (c_u^PK, for encrypting shares between
// parties) and MaskKey (s_u^PK, for pairwise masks).
type AdvertiseKeys struct {
	Session []byte
	From    uint32
	EncKey  []byte // 32 bytes
	MaskKey []byte // 32 bytes
}

// KeyRoster (server → every party of U1) lists the AdvertiseKeys messages
// received, sorted by sender: this defines U1.
type KeyRoster struct {
	Session []byte
	Keys    []AdvertiseKeys
}

// EncryptedShare is one party's Shamir shares for one peer, encrypted with
// AES-256-GCM under a key only the two parties can derive.
// Plaintext: From (4 bytes) ‖ To (4 bytes) ‖ share of s_From^SK (33) ‖ share
// of b_From (33). Associated data: session ‖ "ShareKeys" ‖ From ‖ To.
type EncryptedShare struct {
	From       uint32
	To         uint32
	Ciphertext []byte // ShareCiphertextLen bytes
}

// ShareCiphertextLen is the length of EncryptedShare.Ciphertext.
const ShareCiphertextLen = sharePlainLen + 16

const sharePlainLen = 4 + 4 + 2*ShareLen

// ShareKeys (round ShareKeys, party → server) carries one EncryptedShare
// for every other member of U1, sorted by recipient.
type ShareKeys struct {
	Session []byte
	From    uint32
	Shares  []EncryptedShare
}

// ShareRelay (server → party v of U2) carries the shares addressed to v from
// every other member of U2, sorted by sender: this defines U2 for v.
type ShareRelay struct {
	Session []byte
	To      uint32
	Shares  []EncryptedShare
}

// MaskedInput (round MaskedInput, party → server) carries
// y_u = x_u + PRG(b_u) + Σ_{v∈U2, v≠u} ±PRG(s_{u,v}) mod 2^64.
type MaskedInput struct {
	Session []byte
	From    uint32
	Masked  []uint64 // VectorLen words
}

// UnmaskRequest (server → party of U3) names U3 (Survivors, whose self-mask
// shares the server needs) and U2 \ U3 (Dropped, whose mask-key shares it
// needs). An honest party answers only if the two lists are disjoint and
// together are exactly U2, and only once.
type UnmaskRequest struct {
	Session   []byte
	To        uint32
	Survivors []uint32 // sorted
	Dropped   []uint32 // sorted
}

// RevealedShare is a party's Shamir share of Owner's secret.
type RevealedShare struct {
	Owner uint32
	Y     []byte // ShareLen bytes
}

// UnmaskResponse (round Unmasking, party → server) carries the shares of the
// self-mask seeds of the survivors and of the mask keys of the dropped
// parties, in the order of the request's lists.
type UnmaskResponse struct {
	Session        []byte
	From           uint32
	SelfMaskShares []RevealedShare
	MaskKeyShares  []RevealedShare
}

func (*AdvertiseKeys) MessageRound() Round  { return RoundAdvertiseKeys }
func (*KeyRoster) MessageRound() Round      { return RoundAdvertiseKeys }
func (*ShareKeys) MessageRound() Round      { return RoundShareKeys }
func (*ShareRelay) MessageRound() Round     { return RoundShareKeys }
func (*MaskedInput) MessageRound() Round    { return RoundMaskedInput }
func (*UnmaskRequest) MessageRound() Round  { return RoundMaskedInput }
func (*UnmaskResponse) MessageRound() Round { return RoundUnmasking }

func (m *AdvertiseKeys) Party() uint32 {
	if m == nil {
		return 0
	}
	return m.From
}
func (m *KeyRoster) Party() uint32 { return 0 }
func (m *ShareKeys) Party() uint32 {
	if m == nil {
		return 0
	}
	return m.From
}
func (m *ShareRelay) Party() uint32 {
	if m == nil {
		return 0
	}
	return m.To
}
func (m *MaskedInput) Party() uint32 {
	if m == nil {
		return 0
	}
	return m.From
}
func (m *UnmaskRequest) Party() uint32 {
	if m == nil {
		return 0
	}
	return m.To
}
func (m *UnmaskResponse) Party() uint32 {
	if m == nil {
		return 0
	}
	return m.From
}

// isNil reports whether m is nil or a typed nil pointer.
func isNil(m Message) bool {
	switch m := m.(type) {
	case nil:
		return true
	case *AdvertiseKeys:
		return m == nil
	case *KeyRoster:
		return m == nil
	case *ShareKeys:
		return m == nil
	case *ShareRelay:
		return m == nil
	case *MaskedInput:
		return m == nil
	case *UnmaskRequest:
		return m == nil
	case *UnmaskResponse:
		return m == nil
	}
	return false
}

// msgError formats a rejection naming the round and the party.
func msgError(r Round, party uint32, format string, args ...any) error {
	return fmt.Errorf("secagg: round %s: party %d: %s", r, party, fmt.Sprintf(format, args...))
}

func checkSession(r Round, party uint32, got, want []byte) error {
	if !bytes.Equal(got, want) {
		return msgError(r, party, "message for another session")
	}
	return nil
}

// validate checks the lengths and the keys of an AdvertiseKeys message.
func (m *AdvertiseKeys) validate(session []byte) error {
	if m == nil {
		return fmt.Errorf("secagg: round %s: nil message", RoundAdvertiseKeys)
	}
	if err := checkSession(RoundAdvertiseKeys, m.From, m.Session, session); err != nil {
		return err
	}
	if len(m.EncKey) != X25519KeyLen || len(m.MaskKey) != X25519KeyLen {
		return msgError(RoundAdvertiseKeys, m.From, "public keys have %d and %d bytes, want %d", len(m.EncKey), len(m.MaskKey), X25519KeyLen)
	}
	if bytes.Equal(m.EncKey, m.MaskKey) {
		return msgError(RoundAdvertiseKeys, m.From, "the two public keys are equal")
	}
	if _, err := ecdh.X25519().NewPublicKey(m.EncKey); err != nil {
		return msgError(RoundAdvertiseKeys, m.From, "encryption key: %v", err)
	}
	if _, err := ecdh.X25519().NewPublicKey(m.MaskKey); err != nil {
		return msgError(RoundAdvertiseKeys, m.From, "mask key: %v", err)
	}
	return nil
}
