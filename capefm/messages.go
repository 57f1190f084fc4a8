package capefm

import (
	"fmt"
	"math"
	"unicode/utf8"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/secagg"
)

// Round numbers the protocol's steps. Every message type belongs to one
// round; a transport envelope carries it as its round field.
type Round uint8

// The rounds (see the package documentation for the table).
const (
	RoundHello         Round = 0 // Offer ↓, Hello | Refuse ↑, Agreed ↓
	RoundAdvertiseKeys Round = 1 // secagg: AdvertiseKeys ↑, KeyRoster ↓
	RoundShareKeys     Round = 2 // secagg: ShareKeys ↑, ShareRelay ↓
	RoundMaskedInput   Round = 3 // secagg: MaskedInput ↑ (carries masked ê_s), UnmaskRequest ↓
	RoundUnmasking     Round = 4 // secagg: UnmaskResponse ↑
	RoundSumBroadcast  Round = 5 // SumBroadcast ↓: Σê and the included sites; the noise is fixed
	RoundRelease       Round = 6 // Release ↑: the site's perturbed objective (or coefficients)
	RoundCombine       Round = 7 // aggregator only: check contributors, combine, post-process, report
	roundDone          Round = 8
)

func (r Round) String() string {
	switch r {
	case RoundHello:
		return "Hello"
	case RoundAdvertiseKeys:
		return "AdvertiseKeys"
	case RoundShareKeys:
		return "ShareKeys"
	case RoundMaskedInput:
		return "MaskedInput"
	case RoundUnmasking:
		return "Unmasking"
	case RoundSumBroadcast:
		return "SumBroadcast"
	case RoundRelease:
		return "Release"
	case RoundCombine:
		return "Combine"
	case roundDone:
		return "Done"
	}
	return fmt.Sprintf("Round(%d)", uint8(r))
}

// Protocol is the protocol name a transport envelope carries.
const Protocol = "capefm"

// Message is implemented by every protocol message. MarshalBinary gives the
// envelope payload; Unmarshal reverses it.
type Message interface {
	// Round is the round the message belongs to.
	Round() Round
	// Type is the message's name, the envelope's type field.
	Type() string
	// Party is the sending site (site → aggregator) or the addressed site
	// (aggregator → site); 0 for a broadcast to every site of the attempt.
	Party() uint32
	// Upstream reports whether the message goes site → aggregator.
	Upstream() bool
	// SessionID is the attempt's session.
	SessionID() [32]byte
	MarshalBinary() ([]byte, error)
}

// Offer (round Hello, aggregator → every site) proposes the attempt's
// public parameters. Declaration, if not empty, is the fit's schema as
// Params.Schema fingerprints it: a site whose schema differs checks it
// against the fingerprint and names the column and field in its refusal.
// It is not part of the agreed parameters (the fingerprint is).
type Offer struct {
	Params      Params
	Declaration []byte
}

// Hello (round Hello, site → aggregator) accepts an Offer: the site's name,
// the fingerprint of the schema it encodes with, its number of rows, the
// hash of the Params it agreed to, and whether its noise source is secure.
type Hello struct {
	Session    [32]byte
	From       uint32
	Name       string
	Schema     [32]byte
	N          int64
	ParamsHash [32]byte
	Secure     bool
}

// Refuse (round Hello, site → aggregator) declines an Offer; Reason names
// the parameter and both values (public parameters only, never data).
type Refuse struct {
	Session [32]byte
	From    uint32
	Name    string
	Reason  string
}

// Agreed (round Hello, aggregator → every site) closes the agreement: every
// site of Sites answered with ParamsHash. A site checks both before it
// advertises keys.
type Agreed struct {
	Session    [32]byte
	ParamsHash [32]byte
	Sites      []uint32
}

// SecAgg carries one secure-aggregation message (rounds 1-4) whose input is
// the site's zero-sum draw ê_s. Msg is one of *secagg.AdvertiseKeys,
// *secagg.KeyRoster, *secagg.ShareKeys, *secagg.ShareRelay,
// *secagg.MaskedInput, *secagg.UnmaskRequest, *secagg.UnmaskResponse, with
// a 32-byte session.
//
// Auth authenticates key advertisements (see KeySigner): for an
// *secagg.AdvertiseKeys it holds the sender's signature (one entry), for a
// *secagg.KeyRoster one entry per key, in the roster's order, relayed
// unchanged by the aggregator; nil for unsigned keys and for every other
// message.
type SecAgg struct {
	Msg  secagg.Message
	Auth []KeyAuth
}

// KeyAuth is a site's signature of its advertised keys (KeyStatement):
// its certificate (DER) and the signature (ASN.1 ECDSA by the
// certificate's key). Both empty: unsigned.
type KeyAuth struct {
	Cert, Sig []byte
}

func (k *KeyAuth) empty() bool { return len(k.Cert) == 0 && len(k.Sig) == 0 }

// SumBroadcast (round SumBroadcast, aggregator → every site) carries the
// secure sum Q = Σ ê_s (fixed point) and the sites whose draws it includes.
// For the baselines Sum is empty: it only asks for the releases.
type SumBroadcast struct {
	Session  [32]byte
	Sum      []uint64
	Included []uint32
}

// Release (round Release, site → aggregator) is the site's one release of
// the attempt. capeFM: Fixed holds the L whitened coordinates of
// (N_s/N)·Λ_s + e_s + g_s in units of 2^−FracBits (Calibration.FracBits).
// Baselines: Values holds the noisy site objective [Λ1, upper Λ2]
// (gaussian-fm-local) or the coefficient vector (the others).
type Release struct {
	Session [32]byte
	From    uint32
	Fixed   []int64
	Values  []float64
}

// Announce (round Hello, site → aggregator, before any attempt) is what a
// site sends when it connects: its name (which the transport binds to its
// certificate), its public number of rows N_s, the fingerprint of the
// schema it encodes with, and whether its noise source is secure. The
// aggregator gathers the announcements of the expected sites (Gather) and
// builds the roster of the first Offer from them, so it needs no N_s on its
// command line; N_s is public under bounded DP. Its session is all zeros
// (there is no attempt yet).
//
// With a privacy unit, N is the site's number of units U_s and Unit and
// MaxRows (K) say how the site bounded its rows; both zero at row level.
// Declaration, if not empty, is the site's schema as Schema fingerprints
// it (the JSON encoding of the parsed schema, public like every schema
// bound): the aggregator checks that it hashes to Schema and, when the
// fingerprints differ, names the column and field that differ
// (schema.Diff). It explains a mismatch; agreement is still by Schema.
type Announce struct {
	Name        string
	N           int64
	Schema      [32]byte
	Secure      bool
	Unit        string
	MaxRows     int
	Declaration []byte
}

// MaxDeclaration bounds Announce.Declaration in bytes; a site whose schema
// encodes to more sends none (a mismatch is then reported by fingerprint
// only).
const MaxDeclaration = 32 << 10

// Outcome (aggregator → one site) ends the site's part in the fit: OK
// reports a published model, otherwise Text says why the site is not (or
// no longer) taking part: an announcement refused, a fit aborted, a site
// that arrived after the roster was fixed. Session is the attempt's, or
// zeros before any attempt. A site stops when it receives one.
type Outcome struct {
	Session [32]byte
	OK      bool
	Text    string
}

// maxText bounds Outcome.Text in bytes.
const maxText = 4096

// Type codes (the payload's second byte).
const (
	codeOffer uint8 = iota + 1
	codeHello
	codeRefuse
	codeAgreed
	codeAdvertiseKeys
	codeKeyRoster
	codeShareKeys
	codeShareRelay
	codeMaskedInput
	codeUnmaskRequest
	codeUnmaskResponse
	codeSumBroadcast
	codeRelease
	codeAnnounce
	codeOutcome
)

func (*Offer) Round() Round        { return RoundHello }
func (*Hello) Round() Round        { return RoundHello }
func (*Refuse) Round() Round       { return RoundHello }
func (*Agreed) Round() Round       { return RoundHello }
func (*SumBroadcast) Round() Round { return RoundSumBroadcast }
func (*Release) Round() Round      { return RoundRelease }
func (*Announce) Round() Round     { return RoundHello }
func (*Outcome) Round() Round      { return RoundCombine }
func (m *SecAgg) Round() Round {
	switch m.Msg.(type) {
	case *secagg.AdvertiseKeys, *secagg.KeyRoster:
		return RoundAdvertiseKeys
	case *secagg.ShareKeys, *secagg.ShareRelay:
		return RoundShareKeys
	case *secagg.MaskedInput, *secagg.UnmaskRequest:
		return RoundMaskedInput
	case *secagg.UnmaskResponse:
		return RoundUnmasking
	}
	return roundDone
}

func (*Offer) Type() string        { return "offer" }
func (*Hello) Type() string        { return "hello" }
func (*Refuse) Type() string       { return "refuse" }
func (*Agreed) Type() string       { return "agreed" }
func (*SumBroadcast) Type() string { return "sum-broadcast" }
func (*Release) Type() string      { return "release" }
func (*Announce) Type() string     { return "announce" }
func (*Outcome) Type() string      { return "outcome" }
func (m *SecAgg) Type() string {
	switch m.Msg.(type) {
	case *secagg.AdvertiseKeys:
		return "advertise-keys"
	case *secagg.KeyRoster:
		return "key-roster"
	case *secagg.ShareKeys:
		return "share-keys"
	case *secagg.ShareRelay:
		return "share-relay"
	case *secagg.MaskedInput:
		return "masked-input"
	case *secagg.UnmaskRequest:
		return "unmask-request"
	case *secagg.UnmaskResponse:
		return "unmask-response"
	}
	return "invalid"
}

func (*Offer) Party() uint32        { return 0 }
func (m *Hello) Party() uint32      { return m.From }
func (m *Refuse) Party() uint32     { return m.From }
func (*Agreed) Party() uint32       { return 0 }
func (*SumBroadcast) Party() uint32 { return 0 }
func (m *Release) Party() uint32    { return m.From }
func (*Announce) Party() uint32     { return 0 }
func (*Outcome) Party() uint32      { return 0 }
func (m *SecAgg) Party() uint32 {
	if m.Msg == nil {
		return 0
	}
	return m.Msg.Party()
}

func (*Offer) Upstream() bool        { return false }
func (*Hello) Upstream() bool        { return true }
func (*Refuse) Upstream() bool       { return true }
func (*Agreed) Upstream() bool       { return false }
func (*SumBroadcast) Upstream() bool { return false }
func (*Release) Upstream() bool      { return true }
func (*Announce) Upstream() bool     { return true }
func (*Outcome) Upstream() bool      { return false }
func (m *SecAgg) Upstream() bool {
	switch m.Msg.(type) {
	case *secagg.AdvertiseKeys, *secagg.ShareKeys, *secagg.MaskedInput, *secagg.UnmaskResponse:
		return true
	}
	return false
}

func (m *Offer) SessionID() [32]byte        { return m.Params.Session }
func (m *Hello) SessionID() [32]byte        { return m.Session }
func (m *Refuse) SessionID() [32]byte       { return m.Session }
func (m *Agreed) SessionID() [32]byte       { return m.Session }
func (m *SumBroadcast) SessionID() [32]byte { return m.Session }
func (m *Release) SessionID() [32]byte      { return m.Session }
func (*Announce) SessionID() [32]byte       { return [32]byte{} }
func (m *Outcome) SessionID() [32]byte      { return m.Session }
func (m *SecAgg) SessionID() [32]byte {
	var s [32]byte
	copy(s[:], secaggSession(m.Msg))
	return s
}

func secaggSession(m secagg.Message) []byte {
	switch m := m.(type) {
	case *secagg.AdvertiseKeys:
		return m.Session
	case *secagg.KeyRoster:
		return m.Session
	case *secagg.ShareKeys:
		return m.Session
	case *secagg.ShareRelay:
		return m.Session
	case *secagg.MaskedInput:
		return m.Session
	case *secagg.UnmaskRequest:
		return m.Session
	case *secagg.UnmaskResponse:
		return m.Session
	}
	return nil
}

// header writes the version, the type code and the session.
func header(code uint8, session [32]byte) *writer {
	w := &writer{}
	w.U8(wireVersion)
	w.U8(code)
	w.Raw(session[:])
	return w
}

// MarshalBinary encodes the Offer: header, then the canonical Params.
func (m *Offer) MarshalBinary() ([]byte, error) {
	p, err := m.Params.MarshalBinary()
	if err != nil {
		return nil, err
	}
	if len(m.Declaration) > MaxDeclaration {
		return nil, fmt.Errorf("capefm: offer: schema declaration of %d bytes, limit %d", len(m.Declaration), MaxDeclaration)
	}
	w := header(codeOffer, m.Params.Session)
	w.Raw(p)
	w.Blob(m.Declaration)
	return w.Bytes(), nil
}

func (m *Hello) MarshalBinary() ([]byte, error) {
	if !ValidName(m.Name) {
		return nil, fmt.Errorf("capefm: hello: invalid site name %q", m.Name)
	}
	w := header(codeHello, m.Session)
	w.U32(m.From)
	w.Str16(m.Name)
	w.Raw(m.Schema[:])
	w.U64(uint64(m.N))
	w.Raw(m.ParamsHash[:])
	if m.Secure {
		w.U8(1)
	} else {
		w.U8(0)
	}
	return w.Bytes(), nil
}

func (m *Refuse) MarshalBinary() ([]byte, error) {
	if !ValidName(m.Name) {
		return nil, fmt.Errorf("capefm: refuse: invalid site name %q", m.Name)
	}
	reason := clipText(m.Reason, maxReason)
	w := header(codeRefuse, m.Session)
	w.U32(m.From)
	w.Str16(m.Name)
	w.Str16(reason)
	return w.Bytes(), nil
}

func (m *Agreed) MarshalBinary() ([]byte, error) {
	if len(m.Sites) > MaxSites {
		return nil, fmt.Errorf("capefm: agreed: %d sites", len(m.Sites))
	}
	w := header(codeAgreed, m.Session)
	w.Raw(m.ParamsHash[:])
	w.U32(uint32(len(m.Sites)))
	for _, s := range m.Sites {
		w.U32(s)
	}
	return w.Bytes(), nil
}

func (m *SumBroadcast) MarshalBinary() ([]byte, error) {
	if len(m.Sum) > maxVector || len(m.Included) > MaxSites {
		return nil, fmt.Errorf("capefm: sum broadcast: %d words, %d sites", len(m.Sum), len(m.Included))
	}
	w := header(codeSumBroadcast, m.Session)
	w.U32(uint32(len(m.Sum)))
	for _, v := range m.Sum {
		w.U64(v)
	}
	w.U32(uint32(len(m.Included)))
	for _, s := range m.Included {
		w.U32(s)
	}
	return w.Bytes(), nil
}

func (m *Announce) MarshalBinary() ([]byte, error) {
	if !ValidName(m.Name) {
		return nil, fmt.Errorf("capefm: announce: invalid site name %q", m.Name)
	}
	if m.N < 1 {
		return nil, fmt.Errorf("capefm: announce: N = %d rows", m.N)
	}
	if m.MaxRows < 0 || m.MaxRows > MaxRowsPerUnit || len(m.Unit) > maxUnitName {
		return nil, fmt.Errorf("capefm: announce: privacy unit %q, K = %d", m.Unit, m.MaxRows)
	}
	if len(m.Declaration) > MaxDeclaration {
		return nil, fmt.Errorf("capefm: announce: schema declaration of %d bytes, limit %d", len(m.Declaration), MaxDeclaration)
	}
	w := header(codeAnnounce, [32]byte{})
	w.Str16(m.Name)
	w.U64(uint64(m.N))
	w.Raw(m.Schema[:])
	if m.Secure {
		w.U8(1)
	} else {
		w.U8(0)
	}
	w.Str16(m.Unit)
	w.U32(uint32(m.MaxRows))
	w.Blob(m.Declaration)
	return w.Bytes(), nil
}

func (m *Outcome) MarshalBinary() ([]byte, error) {
	w := header(codeOutcome, m.Session)
	if m.OK {
		w.U8(1)
	} else {
		w.U8(0)
	}
	w.Str16(clipText(m.Text, maxText))
	return w.Bytes(), nil
}

// clipText cuts s to at most n bytes at a UTF-8 boundary.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// maxVector bounds the length of a release or a sum: L for D = MaxFeatures.
const maxVector = MaxFeatures + MaxFeatures*(MaxFeatures+1)/2

func (m *Release) MarshalBinary() ([]byte, error) {
	if len(m.Fixed) > maxVector || len(m.Values) > maxVector || (len(m.Fixed) == 0) == (len(m.Values) == 0) {
		return nil, fmt.Errorf("capefm: release: want exactly one of %d fixed-point or %d float values to be non-empty (≤ %d)", len(m.Fixed), len(m.Values), maxVector)
	}
	w := header(codeRelease, m.Session)
	w.U32(m.From)
	w.U32(uint32(len(m.Fixed)))
	for _, v := range m.Fixed {
		w.U64(uint64(v))
	}
	w.U32(uint32(len(m.Values)))
	for _, v := range m.Values {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("capefm: release: non-finite value")
		}
		w.F64(v)
	}
	return w.Bytes(), nil
}

// MarshalBinary encodes the secure-aggregation message; its session must be
// 32 bytes and every key, ciphertext and share must have its fixed length.
func (m *SecAgg) MarshalBinary() ([]byte, error) {
	sess := secaggSession(m.Msg)
	if len(sess) != 32 {
		return nil, fmt.Errorf("capefm: secagg message %T: session has %d bytes, want 32", m.Msg, len(sess))
	}
	var s [32]byte
	copy(s[:], sess)
	keys := func(w *writer, k *secagg.AdvertiseKeys) error {
		if len(k.EncKey) != secagg.X25519KeyLen || len(k.MaskKey) != secagg.X25519KeyLen {
			return fmt.Errorf("capefm: secagg keys of party %d have wrong lengths", k.From)
		}
		w.U32(k.From)
		w.Raw(k.EncKey)
		w.Raw(k.MaskKey)
		return nil
	}
	shares := func(w *writer, sh []secagg.EncryptedShare) error {
		if len(sh) > maxShares {
			return fmt.Errorf("capefm: %d shares", len(sh))
		}
		w.U32(uint32(len(sh)))
		for _, e := range sh {
			if len(e.Ciphertext) != secagg.ShareCiphertextLen {
				return fmt.Errorf("capefm: share %d→%d has %d bytes, want %d", e.From, e.To, len(e.Ciphertext), secagg.ShareCiphertextLen)
			}
			w.U32(e.From)
			w.U32(e.To)
			w.Raw(e.Ciphertext)
		}
		return nil
	}
	ids := func(w *writer, xs []uint32) error {
		if len(xs) > MaxSites {
			return fmt.Errorf("capefm: %d IDs", len(xs))
		}
		w.U32(uint32(len(xs)))
		for _, x := range xs {
			w.U32(x)
		}
		return nil
	}
	revealed := func(w *writer, rs []secagg.RevealedShare) error {
		if len(rs) > maxShares {
			return fmt.Errorf("capefm: %d revealed shares", len(rs))
		}
		w.U32(uint32(len(rs)))
		for _, r := range rs {
			if len(r.Y) != secagg.ShareLen {
				return fmt.Errorf("capefm: revealed share of %d has %d bytes, want %d", r.Owner, len(r.Y), secagg.ShareLen)
			}
			w.U32(r.Owner)
			w.Raw(r.Y)
		}
		return nil
	}
	auth := func(w *writer, i int) {
		var a KeyAuth
		if i < len(m.Auth) {
			a = m.Auth[i]
		}
		w.Blob(a.Cert)
		w.Blob(a.Sig)
	}
	nkeys := 0
	switch x := m.Msg.(type) {
	case *secagg.AdvertiseKeys:
		nkeys = 1
	case *secagg.KeyRoster:
		nkeys = len(x.Keys)
	}
	if len(m.Auth) != 0 && len(m.Auth) != nkeys {
		return nil, fmt.Errorf("capefm: %s with %d key signatures for %d keys", m.Type(), len(m.Auth), nkeys)
	}
	for _, a := range m.Auth {
		if len(a.Cert) > certs.MaxStatementCert || len(a.Sig) > certs.MaxStatementSig {
			return nil, fmt.Errorf("capefm: %s: key signature of %d bytes with a certificate of %d", m.Type(), len(a.Sig), len(a.Cert))
		}
	}
	var w *writer
	var err error
	switch x := m.Msg.(type) {
	case *secagg.AdvertiseKeys:
		w = header(codeAdvertiseKeys, s)
		err = keys(w, x)
		auth(w, 0)
	case *secagg.KeyRoster:
		w = header(codeKeyRoster, s)
		if len(x.Keys) > MaxSites {
			return nil, fmt.Errorf("capefm: key roster of %d", len(x.Keys))
		}
		w.U32(uint32(len(x.Keys)))
		for i := range x.Keys {
			if !bytesEqual(x.Keys[i].Session, sess) {
				return nil, fmt.Errorf("capefm: key roster entry %d for another session", i)
			}
			if err = keys(w, &x.Keys[i]); err != nil {
				break
			}
			auth(w, i)
		}
	case *secagg.ShareKeys:
		w = header(codeShareKeys, s)
		w.U32(x.From)
		err = shares(w, x.Shares)
	case *secagg.ShareRelay:
		w = header(codeShareRelay, s)
		w.U32(x.To)
		err = shares(w, x.Shares)
	case *secagg.MaskedInput:
		w = header(codeMaskedInput, s)
		w.U32(x.From)
		if len(x.Masked) > maxVector {
			return nil, fmt.Errorf("capefm: masked input of %d words", len(x.Masked))
		}
		w.U32(uint32(len(x.Masked)))
		for _, v := range x.Masked {
			w.U64(v)
		}
	case *secagg.UnmaskRequest:
		w = header(codeUnmaskRequest, s)
		w.U32(x.To)
		if err = ids(w, x.Survivors); err == nil {
			err = ids(w, x.Dropped)
		}
	case *secagg.UnmaskResponse:
		w = header(codeUnmaskResponse, s)
		w.U32(x.From)
		if err = revealed(w, x.SelfMaskShares); err == nil {
			err = revealed(w, x.MaskKeyShares)
		}
	default:
		return nil, fmt.Errorf("capefm: unknown secagg message %T", m.Msg)
	}
	if err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// Unmarshal decodes a payload produced by a message's MarshalBinary. It
// refuses (error wrapping ErrMalformed) a wrong version or type byte, short
// input, trailing bytes, counts beyond the limits and invalid parameters;
// it never panics. Semantic checks (session, round, sender, lengths against
// the parameters) are the state machines' job.
func Unmarshal(b []byte) (Message, error) {
	r := newReader(b)
	if v := r.U8("version"); r.Err() == nil && v != wireVersion {
		r.Fail("version %d, want %d", v, wireVersion)
	}
	code := r.U8("type")
	session := r.Fixed32("session")
	if r.Err() != nil {
		return nil, r.Err()
	}
	sess := session[:]
	keys := func() secagg.AdvertiseKeys {
		k := secagg.AdvertiseKeys{Session: append([]byte(nil), sess...)}
		k.From = r.U32("party")
		k.EncKey = append([]byte(nil), r.Take(secagg.X25519KeyLen, "encryption key")...)
		k.MaskKey = append([]byte(nil), r.Take(secagg.X25519KeyLen, "mask key")...)
		return k
	}
	auth := func() KeyAuth {
		a := KeyAuth{Cert: r.Blob("key certificate", certs.MaxStatementCert), Sig: r.Blob("key signature", certs.MaxStatementSig)}
		if len(a.Cert) == 0 {
			a.Cert = nil
		}
		if len(a.Sig) == 0 {
			a.Sig = nil
		}
		return a
	}
	shares := func() []secagg.EncryptedShare {
		n := r.Count("shares", maxShares, 8+secagg.ShareCiphertextLen)
		out := make([]secagg.EncryptedShare, n)
		for i := range out {
			out[i].From = r.U32("share sender")
			out[i].To = r.U32("share recipient")
			out[i].Ciphertext = append([]byte(nil), r.Take(secagg.ShareCiphertextLen, "share ciphertext")...)
		}
		return out
	}
	ids := func(what string) []uint32 {
		n := r.Count(what, MaxSites, 4)
		out := make([]uint32, n)
		for i := range out {
			out[i] = r.U32(what)
		}
		return out
	}
	revealed := func(what string) []secagg.RevealedShare {
		n := r.Count(what, maxShares, 4+secagg.ShareLen)
		out := make([]secagg.RevealedShare, n)
		for i := range out {
			out[i].Owner = r.U32("share owner")
			out[i].Y = append([]byte(nil), r.Take(secagg.ShareLen, "share")...)
		}
		return out
	}
	var m Message
	switch code {
	case codeOffer:
		p, err := readParams(r)
		if err != nil {
			return nil, err
		}
		if p.Session != session {
			r.Fail("offer: header session differs from the params' session")
		}
		o := &Offer{Params: *p}
		if decl := r.Blob("schema declaration", MaxDeclaration); len(decl) > 0 {
			o.Declaration = decl
		}
		m = o
	case codeHello:
		h := &Hello{Session: session}
		h.From = r.U32("site ID")
		h.Name = r.Str16("site name", maxName)
		h.Schema = r.Fixed32("schema fingerprint")
		h.N = int64(r.U64("N"))
		h.ParamsHash = r.Fixed32("params hash")
		switch r.U8("secure flag") {
		case 0:
		case 1:
			h.Secure = true
		default:
			r.Fail("hello: secure flag is not 0 or 1")
		}
		if r.Err() == nil && !ValidName(h.Name) {
			r.Fail("hello: invalid site name")
		}
		m = h
	case codeRefuse:
		x := &Refuse{Session: session}
		x.From = r.U32("site ID")
		x.Name = r.Str16("site name", maxName)
		x.Reason = r.Str16("reason", maxReason)
		if r.Err() == nil && !ValidName(x.Name) {
			r.Fail("refuse: invalid site name")
		}
		m = x
	case codeAgreed:
		a := &Agreed{Session: session}
		a.ParamsHash = r.Fixed32("params hash")
		a.Sites = ids("sites")
		m = a
	case codeAdvertiseKeys:
		k := keys()
		m = &SecAgg{Msg: &k, Auth: auths([]KeyAuth{auth()})}
	case codeKeyRoster:
		n := r.Count("key roster", MaxSites, 4+2*secagg.X25519KeyLen+8)
		kr := &secagg.KeyRoster{Session: append([]byte(nil), sess...), Keys: make([]secagg.AdvertiseKeys, n)}
		as := make([]KeyAuth, n)
		for i := range kr.Keys {
			kr.Keys[i] = keys()
			as[i] = auth()
		}
		m = &SecAgg{Msg: kr, Auth: auths(as)}
	case codeShareKeys:
		x := &secagg.ShareKeys{Session: append([]byte(nil), sess...)}
		x.From = r.U32("party")
		x.Shares = shares()
		m = &SecAgg{Msg: x}
	case codeShareRelay:
		x := &secagg.ShareRelay{Session: append([]byte(nil), sess...)}
		x.To = r.U32("party")
		x.Shares = shares()
		m = &SecAgg{Msg: x}
	case codeMaskedInput:
		x := &secagg.MaskedInput{Session: append([]byte(nil), sess...)}
		x.From = r.U32("party")
		n := r.Count("masked input", maxVector, 8)
		x.Masked = make([]uint64, n)
		for i := range x.Masked {
			x.Masked[i] = r.U64("masked word")
		}
		m = &SecAgg{Msg: x}
	case codeUnmaskRequest:
		x := &secagg.UnmaskRequest{Session: append([]byte(nil), sess...)}
		x.To = r.U32("party")
		x.Survivors = ids("survivors")
		x.Dropped = ids("dropped")
		m = &SecAgg{Msg: x}
	case codeUnmaskResponse:
		x := &secagg.UnmaskResponse{Session: append([]byte(nil), sess...)}
		x.From = r.U32("party")
		x.SelfMaskShares = revealed("self-mask shares")
		x.MaskKeyShares = revealed("mask-key shares")
		m = &SecAgg{Msg: x}
	case codeSumBroadcast:
		x := &SumBroadcast{Session: session}
		n := r.Count("sum", maxVector, 8)
		x.Sum = make([]uint64, n)
		for i := range x.Sum {
			x.Sum[i] = r.U64("sum word")
		}
		x.Included = ids("included sites")
		m = x
	case codeRelease:
		x := &Release{Session: session}
		x.From = r.U32("site ID")
		nf := r.Count("fixed-point release", maxVector, 8)
		if nf > 0 {
			x.Fixed = make([]int64, nf)
			for i := range x.Fixed {
				x.Fixed[i] = int64(r.U64("release word"))
			}
		}
		nv := r.Count("float release", maxVector, 8)
		if nv > 0 {
			x.Values = make([]float64, nv)
			for i := range x.Values {
				x.Values[i] = r.Finite("release value")
			}
		}
		if r.Err() == nil && (nf == 0) == (nv == 0) {
			r.Fail("release: want exactly one of the fixed-point and float vectors")
		}
		m = x
	case codeAnnounce:
		if session != ([32]byte{}) {
			r.Fail("announce: session is not zero")
		}
		x := &Announce{}
		x.Name = r.Str16("site name", maxName)
		x.N = int64(r.U64("N"))
		x.Schema = r.Fixed32("schema fingerprint")
		switch r.U8("secure flag") {
		case 0:
		case 1:
			x.Secure = true
		default:
			r.Fail("announce: secure flag is not 0 or 1")
		}
		x.Unit = r.Str16("privacy unit", maxUnitName)
		x.MaxRows = int(r.U32("max rows per unit"))
		if decl := r.Blob("schema declaration", MaxDeclaration); len(decl) > 0 {
			x.Declaration = decl
		}
		if r.Err() == nil && x.MaxRows > MaxRowsPerUnit {
			r.Fail("announce: max rows per unit K = %d", x.MaxRows)
		}
		if r.Err() == nil && !ValidName(x.Name) {
			r.Fail("announce: invalid site name")
		}
		if r.Err() == nil && (x.N < 1 || x.N > math.MaxInt64/int64(MaxSites)) {
			r.Fail("announce: N = %d rows", x.N)
		}
		m = x
	case codeOutcome:
		x := &Outcome{Session: session}
		switch r.U8("ok flag") {
		case 0:
		case 1:
			x.OK = true
		default:
			r.Fail("outcome: ok flag is not 0 or 1")
		}
		x.Text = r.Str16("text", maxText)
		if r.Err() == nil && !utf8.ValidString(x.Text) {
			r.Fail("outcome: text is not UTF-8")
		}
		m = x
	default:
		r.Fail("unknown type %d", code)
	}
	if err := r.Done(); err != nil {
		return nil, err
	}
	return m, nil
}

// auths returns as, or nil if every entry is empty (unsigned keys), so
// that decoding and encoding agree on one representation.
func auths(as []KeyAuth) []KeyAuth {
	for i := range as {
		if !as[i].empty() {
			return as
		}
	}
	return nil
}
