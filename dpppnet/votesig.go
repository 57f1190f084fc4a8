package dpppnet

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/dplearn/dplearn/certs"
)

// Vote signatures bind every vote to the teacher that cast it.
//
// A decrypting teacher checks that its own vote is among the listed
// contributors and that the ciphertext is their product, but on its own it
// cannot tell whether the other listed ciphertexts are the votes those
// teachers sent. Without more, a malicious aggregator can ask each of t
// teachers j to decrypt S = v_victim, listing j's own vote, the ciphertext
// S·v_j⁻¹ under another teacher's ID and encryptions of 0 under the
// others': every check passes and the aggregator combines t partial
// decryptions of one teacher's vote (TestNetMaliciousAggregatorForgedContributors).
//
// So each teacher with an identity (TeachOptions.Identity, its certificate
// from the deployment's CA) signs, with its certificate's key, the statement
// (certs.SignStatement, length-framed and domain-separated)
//
//	"dplearn-dppp-vote-v2" ‖ session ‖ batch (8 bytes) ‖ teacher ID (4) ‖ SHA-256(ciphertext)
//
// and sends the signature and its certificate (TypeVoteSignature) with its
// vote. The aggregator relays the signatures of the listed contributors
// (TypeVoteSignatures) before each decryption request, and the teacher
// refuses to decrypt unless every listed ciphertext carries a valid
// signature by a certificate from its own CA whose party name is the
// roster name of that contributor. The aggregator cannot forge them; a
// teacher cannot sign for another (its certificate names it).
const (
	// TypeVoteSignature: a teacher's signature of its vote (teacher →
	// aggregator, with the vote).
	TypeVoteSignature = "vote-signature"
	// TypeVoteSignatures: the signatures of a decryption request's
	// contributors (aggregator → teacher, before the request).
	TypeVoteSignatures = "vote-signatures"
)

const voteSigDomain = "dplearn-dppp-vote-v2"

// Payload headers: 2 bytes, then the 32-byte session (the hub's gate reads
// the session at [2:34], as in dppp's messages).
var (
	sigHeader    = [2]byte{'S', 1}
	bundleHeader = [2]byte{'S', 2}
)

// voteSig is one teacher's signature of its vote in one batch.
type voteSig struct {
	From uint32
	Cert []byte // DER
	Sig  []byte // ASN.1 ECDSA
}

// voteStatement is the statement a teacher signs (certs.SignStatement):
// the session, the batch, the teacher's ID and the SHA-256 of its vote.
func voteStatement(session [32]byte, batch uint64, from uint32, ct []byte) [][]byte {
	var b [12]byte
	binary.BigEndian.PutUint64(b[:8], batch)
	binary.BigEndian.PutUint32(b[8:], from)
	c := sha256.Sum256(ct)
	return [][]byte{session[:], b[:8], b[8:], c[:]}
}

// signVote signs a vote with the party's certificate key.
func signVote(id *certs.Party, session [32]byte, batch uint64, from uint32, ct []byte) (*voteSig, error) {
	cert, sig, err := certs.SignStatement(id, voteSigDomain, voteStatement(session, batch, from, ct)...)
	if err != nil {
		return nil, fmt.Errorf("dpppnet: signing the vote: %w", err)
	}
	return &voteSig{From: from, Cert: cert, Sig: sig}, nil
}

// sigVerifier checks vote signatures against the party's CA
// (certs.StatementSigner, which caches verified certificates).
type sigVerifier struct {
	v   *certs.StatementSigner
	err error
}

func newSigVerifier(id *certs.Party) *sigVerifier {
	v, err := certs.NewStatementSigner(id)
	return &sigVerifier{v: v, err: err}
}

// verify checks that s signs ct as the vote of teacher from (roster name
// name) in the batch.
func (v *sigVerifier) verify(s *voteSig, name string, session [32]byte, batch uint64, from uint32, ct []byte) error {
	if s == nil {
		return errors.New("no signature")
	}
	if s.From != from {
		return fmt.Errorf("the signature is teacher %d's", s.From)
	}
	if v.err != nil {
		return v.err
	}
	if err := v.v.Verify(name, s.Cert, s.Sig, voteSigDomain, voteStatement(session, batch, from, ct)...); err != nil {
		return fmt.Errorf("vote of the listed ciphertext: %w", err)
	}
	return nil
}

type sigWriter struct{ b []byte }

func (w *sigWriter) u32(x uint32) { w.b = binary.BigEndian.AppendUint32(w.b, x) }
func (w *sigWriter) blob(p []byte) {
	w.u32(uint32(len(p)))
	w.b = append(w.b, p...)
}
func (w *sigWriter) sig(s *voteSig) {
	w.u32(s.From)
	w.blob(s.Cert)
	w.blob(s.Sig)
}

type sigReader struct {
	b   []byte
	err error
}

func (r *sigReader) take(n int) []byte {
	if r.err != nil || n < 0 || n > len(r.b) {
		r.err = errors.New("truncated")
		return nil
	}
	p := r.b[:n]
	r.b = r.b[n:]
	return p
}

func (r *sigReader) u32() uint32 {
	p := r.take(4)
	if p == nil {
		return 0
	}
	return binary.BigEndian.Uint32(p)
}

func (r *sigReader) blob(max int) []byte {
	n := r.u32()
	if r.err == nil && int(n) > max {
		r.err = fmt.Errorf("a field of %d bytes (at most %d)", n, max)
		return nil
	}
	return append([]byte(nil), r.take(int(n))...)
}

func (r *sigReader) sig() *voteSig {
	return &voteSig{From: r.u32(), Cert: r.blob(certs.MaxStatementCert), Sig: r.blob(certs.MaxStatementSig)}
}

// marshalVoteSig encodes a teacher's TypeVoteSignature payload.
func marshalVoteSig(session [32]byte, batch uint64, s *voteSig) []byte {
	w := &sigWriter{b: append(append([]byte{}, sigHeader[:]...), session[:]...)}
	w.b = binary.BigEndian.AppendUint64(w.b, batch)
	w.sig(s)
	return w.b
}

// marshalVoteSigs encodes the aggregator's TypeVoteSignatures payload.
func marshalVoteSigs(session [32]byte, batch uint64, sigs []*voteSig) []byte {
	w := &sigWriter{b: append(append([]byte{}, bundleHeader[:]...), session[:]...)}
	w.b = binary.BigEndian.AppendUint64(w.b, batch)
	w.u32(uint32(len(sigs)))
	for _, s := range sigs {
		w.sig(s)
	}
	return w.b
}

// parseSigs decodes either payload (header h), returning the session, the
// batch and the signatures.
func parseSigs(p []byte, h [2]byte) (session [32]byte, batch uint64, sigs []*voteSig, err error) {
	r := &sigReader{b: p}
	if hd := r.take(2); hd == nil || hd[0] != h[0] || hd[1] != h[1] {
		return session, 0, nil, errors.New("dpppnet: not a vote signature message")
	}
	copy(session[:], r.take(32))
	if b := r.take(8); b != nil {
		batch = binary.BigEndian.Uint64(b)
	}
	n := 1
	if h == bundleHeader {
		n = int(r.u32())
		if r.err == nil && n > len(r.b)/8 {
			r.err = fmt.Errorf("%d signatures in %d bytes", n, len(r.b))
		}
	}
	for i := 0; i < n && r.err == nil; i++ {
		sigs = append(sigs, r.sig())
	}
	if r.err == nil && len(r.b) != 0 {
		r.err = fmt.Errorf("%d trailing bytes", len(r.b))
	}
	if r.err != nil {
		return session, 0, nil, fmt.Errorf("dpppnet: malformed vote signature message: %w", r.err)
	}
	return session, batch, sigs, nil
}
