package certs

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// Signed statements bind a message to the party that sent it, end to end:
// a relay (an aggregator) can pass a statement on but cannot forge or alter
// it, and a party cannot sign for another (its certificate names it).
//
// A statement is a domain string and a list of parts; its digest is
//
//	SHA-256( len(domain) ‖ domain ‖ len(part_1) ‖ part_1 ‖ … ‖ len(part_k) ‖ part_k )
//
// with every length 4 bytes big-endian, so no two different statements
// share an encoding (the domain separates protocols and versions; the
// parts must include whatever the statement is about: session, round,
// sender). The signature is ECDSA P-256 (ASN.1) with the party's
// certificate key, verified against a certificate that chains to the
// verifier's CA for client authentication and whose party name (NameOf) is
// the name the verifier expects.

// MaxStatementCert and MaxStatementSig bound the certificate and signature
// a verifier accepts (decoders use them to refuse oversized fields).
const (
	MaxStatementCert = 16 << 10
	MaxStatementSig  = 512
)

// StatementDigest returns the SHA-256 digest that SignStatement signs.
func StatementDigest(domain string, parts ...[]byte) []byte {
	h := sha256.New()
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(domain)))
	h.Write(n[:])
	h.Write([]byte(domain))
	for _, p := range parts {
		binary.BigEndian.PutUint32(n[:], uint32(len(p)))
		h.Write(n[:])
		h.Write(p)
	}
	return h.Sum(nil)
}

// SignStatement signs the statement (domain, parts) with p's certificate
// key and returns p's certificate (DER) and the signature (ASN.1 ECDSA).
func SignStatement(p *Party, domain string, parts ...[]byte) (cert, sig []byte, err error) {
	if p == nil || len(p.Certificate.Certificate) == 0 {
		return nil, nil, errors.New("certs: signing a statement: no party certificate")
	}
	signer, ok := p.Certificate.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("certs: %s's certificate key cannot sign", p.Name)
	}
	sig, err = signer.Sign(rand.Reader, StatementDigest(domain, parts...), crypto.SHA256)
	if err != nil {
		return nil, nil, fmt.Errorf("certs: %s signing a %s statement: %w", p.Name, domain, err)
	}
	return p.Certificate.Certificate[0], sig, nil
}

// VerifyStatement checks that sig is a signature of the statement (domain,
// parts) by the key of cert (DER), that cert chains to roots for client
// authentication, and that its party name is name. The error says which
// check failed, in words a log reader can act on.
func VerifyStatement(roots *x509.CertPool, cert []byte, name string, sig []byte, domain string, parts ...[]byte) error {
	key, err := statementKey(roots, cert, name)
	if err != nil {
		return err
	}
	return checkStatement(key, sig, domain, parts)
}

func statementKey(roots *x509.CertPool, der []byte, name string) (*ecdsa.PublicKey, error) {
	if len(der) == 0 {
		return nil, errors.New("no certificate")
	}
	if len(der) > MaxStatementCert {
		return nil, fmt.Errorf("a certificate of %d bytes (at most %d)", len(der), MaxStatementCert)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certificate: %w", err)
	}
	if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return nil, fmt.Errorf("certificate not from this deployment's CA: %w", err)
	}
	got, err := NameOf(cert)
	if err != nil {
		return nil, err
	}
	if got != name {
		return nil, fmt.Errorf("signed by %q's certificate, not %q's", got, name)
	}
	key, ok := cert.PublicKey.(*ecdsa.PublicKey)
	if !ok {
		return nil, fmt.Errorf("a %T certificate key (want ECDSA)", cert.PublicKey)
	}
	return key, nil
}

func checkStatement(key *ecdsa.PublicKey, sig []byte, domain string, parts [][]byte) error {
	if len(sig) == 0 {
		return errors.New("no signature")
	}
	if len(sig) > MaxStatementSig {
		return fmt.Errorf("a signature of %d bytes (at most %d)", len(sig), MaxStatementSig)
	}
	if !ecdsa.VerifyASN1(key, StatementDigest(domain, parts...), sig) {
		return errors.New("the signature does not match the statement")
	}
	return nil
}

// StatementSigner signs statements as one party and verifies other
// parties' statements against the same CA, caching each certificate it has
// verified (by certificate and expected name) so that a chain is checked
// once per peer rather than once per message. It is safe for concurrent
// use.
type StatementSigner struct {
	party *Party
	mu    sync.Mutex
	keys  map[[sha256.Size]byte]map[string]*ecdsa.PublicKey
}

// NewStatementSigner returns a signer and verifier for party p.
func NewStatementSigner(p *Party) (*StatementSigner, error) {
	if p == nil || p.Roots == nil || len(p.Certificate.Certificate) == 0 {
		return nil, errors.New("certs: a statement signer needs a party certificate and its CA")
	}
	return &StatementSigner{party: p, keys: map[[sha256.Size]byte]map[string]*ecdsa.PublicKey{}}, nil
}

// Name is the name of the signing party.
func (s *StatementSigner) Name() string { return s.party.Name }

// Sign signs the statement as the party (SignStatement).
func (s *StatementSigner) Sign(domain string, parts ...[]byte) (cert, sig []byte, err error) {
	return SignStatement(s.party, domain, parts...)
}

// Verify checks a statement signed by the party named name (VerifyStatement
// against the party's CA).
func (s *StatementSigner) Verify(name string, cert, sig []byte, domain string, parts ...[]byte) error {
	h := sha256.Sum256(cert)
	s.mu.Lock()
	key := s.keys[h][name]
	s.mu.Unlock()
	if key == nil {
		k, err := statementKey(s.party.Roots, cert, name)
		if err != nil {
			return err
		}
		key = k
	}
	if err := checkStatement(key, sig, domain, parts); err != nil {
		return err
	}
	s.mu.Lock()
	if s.keys[h] == nil {
		s.keys[h] = map[string]*ecdsa.PublicKey{}
	}
	s.keys[h][name] = key
	s.mu.Unlock()
	return nil
}
