package dppp

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// Signer signs and verifies a teacher's statements with the teacher's
// identity (issue 22: the consistency round).
//
// After a batch is closed, the aggregator sends its contributor set
// (SignSet: every contributor's ID and the hashes of its vote and proof) to
// every contributor. A contributor signs the set only if its own vote is
// in it byte for byte, the set has at least MinContributors distinct roster
// teachers, and it has signed no other set for that batch; a decrypting
// teacher requires every listed contributor's signature on exactly the set
// it decrypts. An honest teacher signs one set per batch, so two different
// decrypted sums never share an honest vote, whoever decrypts them: the
// differencing attack (sum of all minus sum of all but the victim,
// decrypted by two disjoint honest quorums) is refused by the victim's and
// every other honest contributor's signature, not by one decryptor's
// memory.
//
// *certs.StatementSigner implements Signer with the party's certificate
// from the deployment's CA (the key of its mutual TLS); EphemeralSigners
// gives in-process runs per-run ed25519 keys so that they check the same
// signatures. The guarantee is only as good as the identities: an
// aggregator holding the CA key could issue itself a certificate in any
// teacher's name.
type Signer interface {
	// Sign signs the statement (domain, parts) as this party and returns
	// its certificate (or public key) and the signature.
	Sign(domain string, parts ...[]byte) (cert, sig []byte, err error)
	// Verify checks that sig signs the statement (domain, parts) with
	// cert's key and that cert is the identity of the party name.
	Verify(name string, cert, sig []byte, domain string, parts ...[]byte) error
}

// SetDomain separates dppp's set statements from every other signed
// statement of a deployment.
const SetDomain = "dplearn-dppp-set-v1"

// SetStatement returns the parts of the statement a contributor signs for
// the contributor set of a batch: the session, the parameters' hash, the
// batch (8 bytes) and the set (per entry: ID (4 bytes), SHA-256 of the
// ciphertext, SHA-256 of the proof).
func SetStatement(session, paramsHash [32]byte, batch uint64, set []SetEntry) [][]byte {
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], batch)
	enc := make([]byte, 0, 68*len(set))
	for _, e := range set {
		enc = binary.BigEndian.AppendUint32(enc, e.From)
		enc = append(enc, e.Ciphertext[:]...)
		enc = append(enc, e.Proof[:]...)
	}
	return [][]byte{session[:], paramsHash[:], b[:], enc}
}

func setEqual(a, b []SetEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// EphemeralSigners returns one Signer per name, with fresh ed25519 keys
// known to all of them (a per-run PKI for in-process runs: Run, tests,
// `dplearn dppp simulate`). A signer's "certificate" is its public key;
// Verify accepts a key only under the name it was made for.
func EphemeralSigners(names []string) (map[string]Signer, error) {
	reg := &ephemeralRegistry{keys: map[string]ed25519.PublicKey{}}
	out := map[string]Signer{}
	for _, n := range names {
		pub, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			return nil, err
		}
		reg.keys[n] = pub
		out[n] = &ephemeralSigner{reg: reg, priv: priv}
	}
	return out, nil
}

type ephemeralRegistry struct {
	mu   sync.Mutex
	keys map[string]ed25519.PublicKey
}

type ephemeralSigner struct {
	reg  *ephemeralRegistry
	priv ed25519.PrivateKey
}

func statementBytes(domain string, parts [][]byte) []byte {
	var b []byte
	b = binary.BigEndian.AppendUint32(b, uint32(len(domain)))
	b = append(b, domain...)
	for _, p := range parts {
		b = binary.BigEndian.AppendUint32(b, uint32(len(p)))
		b = append(b, p...)
	}
	return b
}

func (s *ephemeralSigner) Sign(domain string, parts ...[]byte) ([]byte, []byte, error) {
	pub := s.priv.Public().(ed25519.PublicKey)
	return append([]byte(nil), pub...), ed25519.Sign(s.priv, statementBytes(domain, parts)), nil
}

func (s *ephemeralSigner) Verify(name string, cert, sig []byte, domain string, parts ...[]byte) error {
	s.reg.mu.Lock()
	want, ok := s.reg.keys[name]
	s.reg.mu.Unlock()
	if !ok {
		return fmt.Errorf("no key for %s", name)
	}
	if !bytes.Equal(want, cert) {
		return fmt.Errorf("the key is not %s's", name)
	}
	if !ed25519.Verify(want, statementBytes(domain, parts), sig) {
		return errors.New("the signature does not match the statement")
	}
	return nil
}
