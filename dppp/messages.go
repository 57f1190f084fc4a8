package dppp

import (
	"crypto/sha256"
	"fmt"
	"math"
)

// Message type bytes (the second byte of every payload).
const (
	typeParams  = 1
	typeOffer   = 2
	typeAccept  = 3
	typeQuery   = 4
	typeVote    = 5
	typeDecrypt = 6
	typePartial = 7
	typeRefuse  = 8
	typeRequest = 9
	typeAnswer  = 10
	typeSet     = 11
	typeSetSig  = 12
)

// Message is implemented by every protocol message.
type Message interface {
	// Type is the message's name.
	Type() string
	// SessionID is the deployment's session.
	SessionID() [32]byte
	MarshalBinary() ([]byte, error)
}

// Offer (aggregator → teacher) proposes the parameters.
type Offer struct{ Params Params }

// Accept (teacher → aggregator) agrees to the parameters with the given hash.
type Accept struct {
	Session [32]byte
	From    uint32
	Hash    [32]byte
}

// Query (aggregator → every teacher) asks for votes on one batch of at most
// QPC rows.
type Query struct {
	Session [32]byte
	Batch   uint64
	Rows    [][]float64
}

// Vote (teacher → aggregator) is one teacher's encrypted packed noisy vote
// on a batch.
type Vote struct {
	Session    [32]byte
	Batch      uint64
	From       uint32
	Ciphertext []byte // paillier ciphertext encoding
	// Proof proves knowledge of the plaintext, bound to
	// VoteContext(session, params hash, batch, From).
	Proof []byte
}

// SetEntry is one contributor of a closed batch: its ID and the SHA-256 of
// its vote's ciphertext and proof.
type SetEntry struct {
	From       uint32
	Ciphertext [32]byte
	Proof      [32]byte
}

// SignSet (aggregator → every contributor of a closed batch) asks the
// contributor to sign the batch's contributor set (the consistency round):
// ascending IDs, each with its vote's hashes.
type SignSet struct {
	Session [32]byte
	Batch   uint64
	Set     []SetEntry
}

// SetSignature (teacher → aggregator) is a contributor's signature of the
// set of a SignSet (SetStatement), with its certificate; both are empty
// for a teacher run with TeacherConfig.Unsigned.
type SetSignature struct {
	Session [32]byte
	Batch   uint64
	From    uint32
	Cert    []byte
	Sig     []byte
}

// Decrypt (aggregator → a teacher) asks for a partial decryption of Sum,
// the product of the listed contributors' votes, with every listed vote's
// proof and every contributor's signature of the set.
type Decrypt struct {
	Session      [32]byte
	Batch        uint64
	Sum          []byte
	Contributors []uint32
	Ciphertexts  [][]byte
	Proofs       [][]byte
	Certs, Sigs  [][]byte
}

// Set returns the contributor set a Decrypt lists (the hashes of its
// ciphertexts and proofs), or nil if the lists' lengths differ.
func (m *Decrypt) Set() []SetEntry {
	if len(m.Contributors) != len(m.Ciphertexts) || len(m.Proofs) != len(m.Ciphertexts) {
		return nil
	}
	out := make([]SetEntry, len(m.Contributors))
	for i, id := range m.Contributors {
		out[i] = SetEntry{From: id, Ciphertext: sha256.Sum256(m.Ciphertexts[i]), Proof: sha256.Sum256(m.Proofs[i])}
	}
	return out
}

// Partial (teacher → aggregator) is a partial decryption with its proof.
type Partial struct {
	Session [32]byte
	Batch   uint64
	From    uint32
	Share   []byte // paillier partial decryption encoding
}

// Refuse (teacher → aggregator) declines a Query or Decrypt, with a reason.
type Refuse struct {
	Session [32]byte
	Batch   uint64
	From    uint32
	Reason  string
}

// Request (client → aggregator) asks for labels of rows.
type Request struct {
	Session   [32]byte
	ID        uint64
	Rows      [][]float64
	Histogram bool
}

// Answer (aggregator → client) returns labels and, if asked, the noisy
// histograms (centred by the public noise mean).
type Answer struct {
	Session [32]byte
	ID      uint64
	Labels  []uint32
	Hist    [][]float64
}

func (*Offer) Type() string   { return "offer" }
func (*Accept) Type() string  { return "accept" }
func (*Query) Type() string   { return "query" }
func (*Vote) Type() string    { return "vote" }
func (*Decrypt) Type() string { return "decrypt" }
func (*Partial) Type() string { return "partial" }
func (*Refuse) Type() string  { return "refuse" }
func (*Request) Type() string { return "request" }
func (*Answer) Type() string  { return "answer" }
func (*SignSet) Type() string { return "sign-set" }
func (*SetSignature) Type() string {
	return "set-signature"
}

func (m *Offer) SessionID() [32]byte   { return m.Params.Session }
func (m *Accept) SessionID() [32]byte  { return m.Session }
func (m *Query) SessionID() [32]byte   { return m.Session }
func (m *Vote) SessionID() [32]byte    { return m.Session }
func (m *Decrypt) SessionID() [32]byte { return m.Session }
func (m *Partial) SessionID() [32]byte { return m.Session }
func (m *Refuse) SessionID() [32]byte  { return m.Session }
func (m *Request) SessionID() [32]byte { return m.Session }
func (m *Answer) SessionID() [32]byte  { return m.Session }
func (m *SignSet) SessionID() [32]byte { return m.Session }
func (m *SetSignature) SessionID() [32]byte {
	return m.Session
}

func header(t uint8) *writer {
	w := &writer{}
	w.U8(wireVersion)
	w.U8(t)
	return w
}

func writeRows(w *writer, rows [][]float64) error {
	if len(rows) > MaxBatch {
		return fmt.Errorf("dppp: %d rows, limit %d", len(rows), MaxBatch)
	}
	d := 0
	if len(rows) > 0 {
		d = len(rows[0])
	}
	if d > MaxFeatures {
		return fmt.Errorf("dppp: %d features, limit %d", d, MaxFeatures)
	}
	w.U32(uint32(len(rows)))
	w.U32(uint32(d))
	for _, r := range rows {
		if len(r) != d {
			return fmt.Errorf("dppp: ragged rows")
		}
		for _, v := range r {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return fmt.Errorf("dppp: non-finite feature")
			}
			w.F64(v)
		}
	}
	return nil
}

func readRows(r *reader) [][]float64 {
	n := r.Count("rows", MaxBatch, 0)
	d := int(r.U32("features"))
	if r.Err() != nil {
		return nil
	}
	if n == 0 && d != 0 {
		r.Fail("rows: width without rows")
		return nil
	}
	if d > MaxFeatures || uint64(n)*uint64(d)*8 > uint64(r.Len()) {
		r.Fail("rows: %d×%d values, %d bytes left", n, d, r.Len())
		return nil
	}
	rows := make([][]float64, n)
	for i := range rows {
		rows[i] = make([]float64, d)
		for j := range rows[i] {
			rows[i][j] = r.Finite("feature")
		}
	}
	return rows
}

// readBlob reads a blob of 1 to maxBlob bytes (what checkBlob lets the
// encoder write).
func readBlob(r *reader, what string) []byte {
	p := r.Blob(what, maxBlob)
	if r.Err() == nil && len(p) == 0 {
		r.Fail("%s: empty", what)
	}
	return p
}

func checkBlob(p []byte, what string) error {
	if len(p) == 0 || len(p) > maxBlob {
		return fmt.Errorf("dppp: %s of %d bytes", what, len(p))
	}
	return nil
}

func (m *Offer) MarshalBinary() ([]byte, error) {
	w := header(typeOffer)
	m.Params.write(w)
	return w.Bytes(), nil
}

func (m *Accept) MarshalBinary() ([]byte, error) {
	w := header(typeAccept)
	w.Raw(m.Session[:])
	w.U32(m.From)
	w.Raw(m.Hash[:])
	return w.Bytes(), nil
}

func (m *Query) MarshalBinary() ([]byte, error) {
	w := header(typeQuery)
	w.Raw(m.Session[:])
	w.U64(m.Batch)
	if err := writeRows(w, m.Rows); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

func (m *Vote) MarshalBinary() ([]byte, error) {
	if err := checkBlob(m.Ciphertext, "ciphertext"); err != nil {
		return nil, err
	}
	w := header(typeVote)
	w.Raw(m.Session[:])
	w.U64(m.Batch)
	w.U32(m.From)
	w.Blob(m.Ciphertext)
	if err := checkBlob(m.Proof, "proof"); err != nil {
		return nil, err
	}
	w.Blob(m.Proof)
	return w.Bytes(), nil
}

func writeSet(w *writer, set []SetEntry) error {
	if len(set) > MaxTeachers {
		return fmt.Errorf("dppp: %d contributors", len(set))
	}
	w.U32(uint32(len(set)))
	for _, e := range set {
		w.U32(e.From)
		w.Raw(e.Ciphertext[:])
		w.Raw(e.Proof[:])
	}
	return nil
}

func readSet(r *reader) []SetEntry {
	n := r.Count("set", MaxTeachers, 68)
	out := make([]SetEntry, 0, n)
	for i := 0; i < n && r.Err() == nil; i++ {
		out = append(out, SetEntry{From: r.U32("from"), Ciphertext: r.Fixed32("ciphertext hash"), Proof: r.Fixed32("proof hash")})
	}
	return out
}

func (m *SignSet) MarshalBinary() ([]byte, error) {
	w := header(typeSet)
	w.Raw(m.Session[:])
	w.U64(m.Batch)
	if err := writeSet(w, m.Set); err != nil {
		return nil, err
	}
	return w.Bytes(), nil
}

func (m *SetSignature) MarshalBinary() ([]byte, error) {
	if len(m.Cert) > maxBlob || len(m.Sig) > maxBlob {
		return nil, fmt.Errorf("dppp: set signature of %d + %d bytes", len(m.Cert), len(m.Sig))
	}
	w := header(typeSetSig)
	w.Raw(m.Session[:])
	w.U64(m.Batch)
	w.U32(m.From)
	w.Blob(m.Cert)
	w.Blob(m.Sig)
	return w.Bytes(), nil
}

// Decrypt layouts. The contributors' ciphertexts are usually encodings of
// one length that begin with the same bytes as the sum (paillier's header
// and key ID: 38 of 550 bytes at 2048 bits); the shared-prefix layout sends
// that prefix once, inside the sum, and of each ciphertext only its tail,
// without a length (7.5 % fewer bytes per contributor). It is used whenever
// it applies, with the longest common prefix, so each message has exactly
// one encoding.
const (
	decryptBlobs        = 0 // per contributor: u32 id | blob
	decryptSharedPrefix = 1 // u32 ids | u16 prefix length P | per contributor: ciphertext[P:]
)

// sharedPrefix returns the length of the longest common prefix of sum and
// every ciphertext, or 0 if the shared-prefix layout does not apply (no
// ciphertexts, or one of another length than sum).
func sharedPrefix(sum []byte, cts [][]byte) int {
	if len(cts) == 0 {
		return 0
	}
	l := len(sum)
	for _, c := range cts {
		if len(c) != len(sum) {
			return 0
		}
		k := 0
		for k < l && c[k] == sum[k] {
			k++
		}
		l = k
	}
	return l
}

func (m *Decrypt) MarshalBinary() ([]byte, error) {
	if err := checkBlob(m.Sum, "sum"); err != nil {
		return nil, err
	}
	if len(m.Contributors) != len(m.Ciphertexts) || len(m.Contributors) > MaxTeachers ||
		len(m.Proofs) != len(m.Contributors) || len(m.Certs) != len(m.Contributors) || len(m.Sigs) != len(m.Contributors) {
		return nil, fmt.Errorf("dppp: %d contributors, %d ciphertexts, %d proofs, %d signatures", len(m.Contributors), len(m.Ciphertexts), len(m.Proofs), len(m.Sigs))
	}
	for i := range m.Proofs {
		if err := checkBlob(m.Proofs[i], "proof"); err != nil {
			return nil, err
		}
		if len(m.Certs[i]) > maxBlob || len(m.Sigs[i]) > maxBlob {
			return nil, fmt.Errorf("dppp: set signature of %d + %d bytes", len(m.Certs[i]), len(m.Sigs[i]))
		}
	}
	for _, c := range m.Ciphertexts {
		if err := checkBlob(c, "ciphertext"); err != nil {
			return nil, err
		}
	}
	w := header(typeDecrypt)
	w.Raw(m.Session[:])
	w.U64(m.Batch)
	w.Blob(m.Sum)
	w.U32(uint32(len(m.Contributors)))
	prefix := sharedPrefix(m.Sum, m.Ciphertexts)
	if prefix == 0 {
		w.U8(decryptBlobs)
		for i, c := range m.Contributors {
			w.U32(c)
			w.Blob(m.Ciphertexts[i])
		}
		m.writeAuth(w)
		return w.Bytes(), nil
	}
	w.U8(decryptSharedPrefix)
	for _, c := range m.Contributors {
		w.U32(c)
	}
	w.U16(uint16(prefix))
	for _, c := range m.Ciphertexts {
		w.Raw(c[prefix:])
	}
	m.writeAuth(w)
	return w.Bytes(), nil
}

// writeAuth writes the proofs and set signatures after the ciphertexts.
func (m *Decrypt) writeAuth(w *writer) {
	for i := range m.Contributors {
		w.Blob(m.Proofs[i])
		w.Blob(m.Certs[i])
		w.Blob(m.Sigs[i])
	}
}

// readAuth reads what writeAuth wrote for n contributors.
func (m *Decrypt) readAuth(r *reader, n int) {
	for i := 0; i < n && r.Err() == nil; i++ {
		m.Proofs = append(m.Proofs, readBlob(r, "proof"))
		m.Certs = append(m.Certs, r.Blob("certificate", maxBlob))
		m.Sigs = append(m.Sigs, r.Blob("signature", maxBlob))
	}
}

// readDecrypt decodes the body of a Decrypt message.
func readDecrypt(r *reader) *Decrypt {
	d := &Decrypt{Session: r.Fixed32("session"), Batch: r.U64("batch")}
	d.Sum = readBlob(r, "sum")
	n := r.Count("contributors", MaxTeachers, 4)
	switch r.U8("decrypt layout") {
	case decryptBlobs:
		for i := 0; i < n && r.Err() == nil; i++ {
			d.Contributors = append(d.Contributors, r.U32("contributor"))
			d.Ciphertexts = append(d.Ciphertexts, readBlob(r, "ciphertext"))
		}
		d.readAuth(r, n)
		if r.Err() == nil && sharedPrefix(d.Sum, d.Ciphertexts) != 0 {
			r.Fail("decrypt: ciphertexts sent whole where they share a prefix with the sum")
		}
	case decryptSharedPrefix:
		for i := 0; i < n && r.Err() == nil; i++ {
			d.Contributors = append(d.Contributors, r.U32("contributor"))
		}
		p := int(r.U16("prefix length"))
		if r.Err() != nil {
			return d
		}
		if n == 0 || p == 0 || p > len(d.Sum) {
			r.Fail("decrypt: prefix of %d bytes for %d contributors and a %d-byte sum", p, n, len(d.Sum))
			return d
		}
		tail := len(d.Sum) - p
		if uint64(n)*uint64(tail) > uint64(r.Len()) {
			r.Fail("decrypt: %d ciphertext tails of %d bytes, %d bytes left", n, tail, r.Len())
			return d
		}
		for i := 0; i < n; i++ {
			c := make([]byte, 0, len(d.Sum))
			c = append(c, d.Sum[:p]...)
			d.Ciphertexts = append(d.Ciphertexts, append(c, r.Take(tail, "ciphertext")...))
		}
		d.readAuth(r, n)
		if sharedPrefix(d.Sum, d.Ciphertexts) != p {
			r.Fail("decrypt: prefix of %d bytes is not the longest shared one", p)
		}
	default:
		r.Fail("decrypt: unknown layout")
	}
	return d
}

func (m *Partial) MarshalBinary() ([]byte, error) {
	if err := checkBlob(m.Share, "partial decryption"); err != nil {
		return nil, err
	}
	w := header(typePartial)
	w.Raw(m.Session[:])
	w.U64(m.Batch)
	w.U32(m.From)
	w.Blob(m.Share)
	return w.Bytes(), nil
}

func (m *Refuse) MarshalBinary() ([]byte, error) {
	reason := m.Reason
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	w := header(typeRefuse)
	w.Raw(m.Session[:])
	w.U64(m.Batch)
	w.U32(m.From)
	w.Str16(reason)
	return w.Bytes(), nil
}

func (m *Request) MarshalBinary() ([]byte, error) {
	w := header(typeRequest)
	w.Raw(m.Session[:])
	w.U64(m.ID)
	if err := writeRows(w, m.Rows); err != nil {
		return nil, err
	}
	if m.Histogram {
		w.U8(1)
	} else {
		w.U8(0)
	}
	return w.Bytes(), nil
}

func (m *Answer) MarshalBinary() ([]byte, error) {
	if len(m.Labels) > 1<<24 || (len(m.Hist) != 0 && len(m.Hist) != len(m.Labels)) {
		return nil, fmt.Errorf("dppp: answer with %d labels and %d histograms", len(m.Labels), len(m.Hist))
	}
	w := header(typeAnswer)
	w.Raw(m.Session[:])
	w.U64(m.ID)
	w.U32(uint32(len(m.Labels)))
	for _, l := range m.Labels {
		w.U32(l)
	}
	k := 0
	if len(m.Hist) > 0 {
		k = len(m.Hist[0])
	}
	if k > MaxClasses {
		return nil, fmt.Errorf("dppp: %d classes", k)
	}
	w.U32(uint32(k))
	for _, h := range m.Hist {
		if len(h) != k {
			return nil, fmt.Errorf("dppp: ragged histograms")
		}
		for _, v := range h {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("dppp: non-finite histogram")
			}
			w.F64(v)
		}
	}
	return w.Bytes(), nil
}

// Unmarshal decodes any message. It rejects a wrong version or type byte,
// short input, trailing bytes, counts beyond the limits and non-finite
// floats, wrapping ErrMalformed.
func Unmarshal(b []byte) (Message, error) {
	r := newReader(b)
	if v := r.U8("version"); r.Err() == nil && v != wireVersion {
		r.Fail("version %d, want %d", v, wireVersion)
	}
	t := r.U8("type")
	if r.Err() != nil {
		return nil, r.Err()
	}
	var m Message
	switch t {
	case typeOffer:
		m = &Offer{Params: *readParams(r)}
	case typeAccept:
		a := &Accept{Session: r.Fixed32("session"), From: r.U32("from")}
		a.Hash = r.Fixed32("hash")
		m = a
	case typeQuery:
		q := &Query{Session: r.Fixed32("session"), Batch: r.U64("batch")}
		q.Rows = readRows(r)
		m = q
	case typeVote:
		v := &Vote{Session: r.Fixed32("session"), Batch: r.U64("batch"), From: r.U32("from")}
		v.Ciphertext = readBlob(r, "ciphertext")
		v.Proof = readBlob(r, "proof")
		m = v
	case typeSet:
		q := &SignSet{Session: r.Fixed32("session"), Batch: r.U64("batch")}
		q.Set = readSet(r)
		m = q
	case typeSetSig:
		q := &SetSignature{Session: r.Fixed32("session"), Batch: r.U64("batch"), From: r.U32("from")}
		q.Cert = r.Blob("certificate", maxBlob)
		q.Sig = r.Blob("signature", maxBlob)
		m = q
	case typeDecrypt:
		m = readDecrypt(r)
	case typePartial:
		p := &Partial{Session: r.Fixed32("session"), Batch: r.U64("batch"), From: r.U32("from")}
		p.Share = readBlob(r, "partial")
		m = p
	case typeRefuse:
		f := &Refuse{Session: r.Fixed32("session"), Batch: r.U64("batch"), From: r.U32("from")}
		f.Reason = r.Str16("reason", maxReason)
		m = f
	case typeRequest:
		q := &Request{Session: r.Fixed32("session"), ID: r.U64("id")}
		q.Rows = readRows(r)
		switch r.U8("histogram") {
		case 0:
		case 1:
			q.Histogram = true
		default:
			r.Fail("histogram flag not 0/1")
		}
		m = q
	case typeAnswer:
		a := &Answer{Session: r.Fixed32("session"), ID: r.U64("id")}
		n := r.Count("labels", 1<<24, 4)
		for i := 0; i < n && r.Err() == nil; i++ {
			a.Labels = append(a.Labels, r.U32("label"))
		}
		k := int(r.U32("classes"))
		if r.Err() == nil && n == 0 && k != 0 {
			r.Fail("histogram width without labels")
		}
		if r.Err() == nil && (k > MaxClasses || uint64(k)*uint64(n)*8 != uint64(r.Len())) {
			r.Fail("histograms: %d×%d values, %d bytes left", n, k, r.Len())
		}
		if k > 0 {
			for i := 0; i < n && r.Err() == nil; i++ {
				h := make([]float64, k)
				for j := range h {
					h[j] = r.Finite("histogram")
				}
				a.Hist = append(a.Hist, h)
			}
		}
		m = a
	default:
		r.Fail("unknown message type %d", t)
	}
	if err := r.Done(); err != nil {
		return nil, err
	}
	return m, nil
}
