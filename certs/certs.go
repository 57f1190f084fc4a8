// Package certs makes and loads the certificates that identify the parties
// of dplearn's networked protocols: one certificate authority (CA) per
// deployment and one key pair and certificate per named party (the
// aggregator, each site, each teacher).
//
// # Identity binding rule
//
// A party's name is 1 to 64 characters from a-z, 0-9, '-' and '.', starting
// and ending with a letter or digit (ValidateName). Its certificate, signed
// by the deployment's CA, carries the name twice:
//
//   - the DNS subject alternative name NAME.dplearn.invalid (PartyDNSName),
//     exactly one such SAN per certificate; this is the binding that counts.
//     ".invalid" is a top-level domain reserved never to resolve (RFC 6761),
//     so the SAN can never be mistaken for, or collide with, a real host name;
//   - the subject common name NAME (for people reading the certificate),
//     with organization "dplearn" and organizational unit "party".
//
// NameOf accepts a certificate only if both agree. Extra host names and IP
// addresses (Options.Hosts) may be added as SANs for other tools, but
// dplearn never uses them for identity: a client checks the server's party
// name (ServerName = PartyDNSName(server)), not the address it dialled, and
// a server reads the client's party name from the verified chain.
//
// Keys are ECDSA P-256. Every party certificate carries both the server and
// the client extended key usage, so one certificate serves a party in
// either role. TLS configurations are TLS 1.3 only and, on the server, require
// and verify a client certificate from the same CA.
//
// # Files
//
//	DIR/ca/ca.crt        the CA certificate (0644)
//	DIR/ca/ca.key        the CA private key (0600): keep it offline
//	DIR/NAME/party.crt   NAME's certificate (0644)
//	DIR/NAME/party.key   NAME's private key (0600)
//	DIR/NAME/ca.crt      a copy of the CA certificate, so DIR/NAME is
//	                     everything machine NAME needs
//
// Directories are created 0700. No existing file is ever overwritten: every
// file is written to a temporary file in its directory, synced, and linked
// to its final name, which fails if the name exists.
package certs

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"strings"
	"time"

	"github.com/dplearn/dplearn/internal/partyname"
)

// DefaultValidity is the validity period of certificates when
// Options.Validity is zero: one year.
const DefaultValidity = 365 * 24 * time.Hour

// PartyDNSSuffix is appended to a party's name to form the DNS SAN that
// binds the name to the certificate.
const PartyDNSSuffix = ".dplearn.invalid"

// MaxNameLen is the longest party name.
const MaxNameLen = partyname.MaxLen

// caDirName is the CA's directory in the layout; no party may take it.
const caDirName = partyname.Reserved

// clockSkew backdates NotBefore so that machines whose clocks are slightly
// behind accept a fresh certificate.
const clockSkew = 5 * time.Minute

// ValidateName reports whether name is a valid party name: 1 to 64
// characters from a-z, 0-9, '-' and '.', beginning and ending with a letter
// or digit, without "..", and not a reserved name ("ca"). It is
// internal/partyname's rule, which capefm and dppp apply too.
func ValidateName(name string) error {
	if err := partyname.Validate(name); err != nil {
		return fmt.Errorf("certs: %w", err)
	}
	return nil
}

// PartyDNSName is the DNS SAN that binds name to a certificate:
// name + ".dplearn.invalid".
func PartyDNSName(name string) string { return name + PartyDNSSuffix }

// NameOf returns the party name bound to cert by the rule of the package
// documentation: exactly one DNS SAN ending in ".dplearn.invalid", whose
// prefix is a valid name equal to the subject common name.
func NameOf(cert *x509.Certificate) (string, error) {
	if cert == nil {
		return "", errors.New("certs: no certificate")
	}
	var found []string
	for _, d := range cert.DNSNames {
		if strings.HasSuffix(d, PartyDNSSuffix) {
			found = append(found, strings.TrimSuffix(d, PartyDNSSuffix))
		}
	}
	switch len(found) {
	case 0:
		return "", fmt.Errorf("certs: certificate %q has no party name (no DNS SAN ending in %s)", cert.Subject.CommonName, PartyDNSSuffix)
	case 1:
	default:
		return "", fmt.Errorf("certs: certificate %q names %d parties %v; want exactly one", cert.Subject.CommonName, len(found), found)
	}
	name := found[0]
	if err := ValidateName(name); err != nil {
		return "", err
	}
	if cert.Subject.CommonName != name {
		return "", fmt.Errorf("certs: certificate's common name %q differs from its party name %q", cert.Subject.CommonName, name)
	}
	return name, nil
}

// Options configures certificate issuance.
type Options struct {
	// Validity is how long certificates are valid from now; zero means
	// DefaultValidity. A party certificate never outlives its CA: its
	// expiry is capped at the CA's.
	Validity time.Duration
	// Hosts are extra SANs for party certificates: IP addresses become IP
	// SANs, anything else a DNS SAN. dplearn does not need them (it checks
	// party names, not addresses); they help other TLS tools. A host may
	// not end in ".dplearn.invalid".
	Hosts []string
	// Now, if set, replaces time.Now (tests).
	Now func() time.Time
}

func (o Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func (o Options) validity() (time.Duration, error) {
	switch {
	case o.Validity == 0:
		return DefaultValidity, nil
	case o.Validity < time.Hour:
		return 0, fmt.Errorf("certs: validity %v is shorter than one hour", o.Validity)
	case o.Validity > 20*365*24*time.Hour:
		return 0, fmt.Errorf("certs: validity %v is longer than 20 years", o.Validity)
	}
	return o.Validity, nil
}

func (o Options) sans() ([]string, []net.IP, error) {
	var dns []string
	var ips []net.IP
	for _, h := range o.Hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		if ip := net.ParseIP(h); ip != nil {
			ips = append(ips, ip)
			continue
		}
		if strings.HasSuffix(strings.ToLower(h), PartyDNSSuffix) {
			return nil, nil, fmt.Errorf("certs: host %q: names ending in %s are reserved for party names", h, PartyDNSSuffix)
		}
		if strings.ContainsAny(h, " /:@*") {
			return nil, nil, fmt.Errorf("certs: host %q is not a DNS name or IP address", h)
		}
		dns = append(dns, h)
	}
	return dns, ips, nil
}

// CA is a certificate authority: its certificate and private key.
type CA struct {
	Cert *x509.Certificate
	Key  *ecdsa.PrivateKey
	pem  []byte
}

// CertPEM returns the CA certificate in PEM.
func (ca *CA) CertPEM() []byte { return append([]byte(nil), ca.pem...) }

// KeyPEM returns the CA private key in PEM (PKCS #8).
func (ca *CA) KeyPEM() ([]byte, error) { return keyPEM(ca.Key) }

// NewCA generates a CA: a fresh P-256 key and a self-signed certificate
// valid for opt.Validity, named "dplearn CA" plus a random identifier so
// that two deployments' CAs are told apart.
func NewCA(opt Options) (*CA, error) {
	validity, err := opt.validity()
	if err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: CA key: %w", err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	id := make([]byte, 6)
	if _, err := rand.Read(id); err != nil {
		return nil, fmt.Errorf("certs: CA identifier: %w", err)
	}
	now := opt.now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			CommonName:   "dplearn CA " + hex.EncodeToString(id),
			Organization: []string{"dplearn"},
		},
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLen:            0,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	return &CA{Cert: cert, Key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// ParseCA parses a CA from its certificate and key in PEM, checking that
// they belong together and that the certificate is a CA.
func ParseCA(certPEM, keyPEM []byte) (*CA, error) {
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	if !cert.IsCA {
		return nil, fmt.Errorf("certs: certificate %q is not a CA", cert.Subject.CommonName)
	}
	key, err := parseKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: CA key: %w", err)
	}
	if !key.PublicKey.Equal(cert.PublicKey) {
		return nil, errors.New("certs: the CA key does not match the CA certificate")
	}
	return &CA{Cert: cert, Key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})}, nil
}

// Issued is a party's freshly issued certificate and key, in PEM.
type Issued struct {
	Name    string
	Cert    *x509.Certificate
	CertPEM []byte
	KeyPEM  []byte
}

// Issue generates a key pair for the party name and a certificate for it
// signed by ca, following the binding rule of the package documentation.
// Its expiry is the earlier of now + opt.Validity and the CA's expiry.
func (ca *CA) Issue(name string, opt Options) (*Issued, error) {
	if err := ValidateName(name); err != nil {
		return nil, err
	}
	validity, err := opt.validity()
	if err != nil {
		return nil, err
	}
	dns, ips, err := opt.sans()
	if err != nil {
		return nil, err
	}
	now := opt.now()
	if !now.Before(ca.Cert.NotAfter) {
		return nil, fmt.Errorf("certs: the CA expired on %s; make a new one", ca.Cert.NotAfter.UTC().Format(time.DateOnly))
	}
	notAfter := now.Add(validity)
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("certs: key for %s: %w", name, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject: pkix.Name{
			CommonName:         name,
			Organization:       []string{"dplearn"},
			OrganizationalUnit: []string{"party"},
		},
		DNSNames:              append([]string{PartyDNSName(name)}, dns...),
		IPAddresses:           ips,
		NotBefore:             now.Add(-clockSkew),
		NotAfter:              notAfter,
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		BasicConstraintsValid: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, &key.PublicKey, ca.Key)
	if err != nil {
		return nil, fmt.Errorf("certs: certificate for %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("certs: certificate for %s: %w", name, err)
	}
	kp, err := keyPEM(key)
	if err != nil {
		return nil, err
	}
	return &Issued{
		Name:    name,
		Cert:    cert,
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  kp,
	}, nil
}

// IssueParty is Issue followed by NewParty: a ready-to-use identity (tests,
// simulations).
func (ca *CA) IssueParty(name string, opt Options) (*Party, error) {
	is, err := ca.Issue(name, opt)
	if err != nil {
		return nil, err
	}
	return NewParty(is.CertPEM, is.KeyPEM, ca.pem)
}

// Party is one party's identity: its name, certificate and key, and the CA
// that vouches for every party of the deployment.
type Party struct {
	// Name is the party name bound to Certificate (NameOf).
	Name string
	// Certificate is the party's certificate chain and private key.
	Certificate tls.Certificate
	// Roots holds the CA certificate only.
	Roots *x509.CertPool
	// CA is the CA certificate.
	CA *x509.Certificate
}

// NewParty builds a Party from its certificate, its private key and the CA
// certificate, all in PEM. It checks that the key matches the certificate,
// that the certificate is signed by the CA, is currently valid and carries
// a party name.
func NewParty(certPEM, keyPEM, caPEM []byte) (*Party, error) {
	ca, err := parseCertPEM(caPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: CA certificate: %w", err)
	}
	if !ca.IsCA {
		return nil, fmt.Errorf("certs: %q is not a CA certificate", ca.Subject.CommonName)
	}
	tc, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("certs: party certificate and key: %w", err)
	}
	leaf := tc.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(tc.Certificate[0]); err != nil {
			return nil, fmt.Errorf("certs: party certificate: %w", err)
		}
		tc.Leaf = leaf
	}
	name, err := NameOf(leaf)
	if err != nil {
		return nil, err
	}
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	if _, err := leaf.Verify(x509.VerifyOptions{
		Roots:     roots,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		return nil, fmt.Errorf("certs: certificate of %s is not valid under CA %q: %w", name, ca.Subject.CommonName, err)
	}
	return &Party{Name: name, Certificate: tc, Roots: roots, CA: ca}, nil
}

// NotAfter is the expiry of the party's certificate.
func (p *Party) NotAfter() time.Time { return p.Certificate.Leaf.NotAfter }

// ServerTLS returns the TLS configuration of a party acting as a server:
// TLS 1.3 only, presenting p's certificate, requiring a client certificate
// signed by the CA that carries a party name. The caller decides which names
// are welcome (PeerName gives the name).
func (p *Party) ServerTLS() *tls.Config {
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{p.Certificate},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    p.Roots,
		VerifyConnection: func(cs tls.ConnectionState) error {
			_, err := PeerName(cs)
			return err
		},
	}
}

// ClientTLS returns the TLS configuration of a party connecting to the
// party named server: TLS 1.3 only, presenting p's certificate, and
// accepting only a server certificate signed by the CA whose party name is
// server (whatever address was dialled).
func (p *Party) ClientTLS(server string) (*tls.Config, error) {
	if err := ValidateName(server); err != nil {
		return nil, err
	}
	return &tls.Config{
		MinVersion:   tls.VersionTLS13,
		Certificates: []tls.Certificate{p.Certificate},
		RootCAs:      p.Roots,
		ServerName:   PartyDNSName(server),
		VerifyConnection: func(cs tls.ConnectionState) error {
			got, err := PeerName(cs)
			if err != nil {
				return err
			}
			if got != server {
				return fmt.Errorf("certs: server presented party %q, want %q", got, server)
			}
			return nil
		},
	}, nil
}

// PeerName returns the party name of the peer of a TLS connection whose
// certificate chain was verified. It fails if no chain was verified.
func PeerName(cs tls.ConnectionState) (string, error) {
	if len(cs.VerifiedChains) == 0 || len(cs.VerifiedChains[0]) == 0 {
		return "", errors.New("certs: peer certificate not verified")
	}
	return NameOf(cs.VerifiedChains[0][0])
}

func randomSerial() (*big.Int, error) {
	s, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, fmt.Errorf("certs: serial number: %w", err)
	}
	return s.Add(s, big.NewInt(1)), nil
}

func keyPEM(key *ecdsa.PrivateKey) ([]byte, error) {
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("certs: encode key: %w", err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
}

func parseCertPEM(b []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM CERTIFICATE block")
	}
	return x509.ParseCertificate(block.Bytes)
}

func parseKeyPEM(b []byte) (*ecdsa.PrivateKey, error) {
	block, _ := pem.Decode(b)
	if block == nil || block.Type != "PRIVATE KEY" {
		return nil, errors.New("no PEM PRIVATE KEY block")
	}
	k, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, err
	}
	ek, ok := k.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("key is %T, want ECDSA", k)
	}
	return ek, nil
}
