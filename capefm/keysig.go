package capefm

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/dplearn/dplearn/secagg"
)

// KeySigner authenticates secure-aggregation keys end to end.
//
// Without it the aggregator relays the sites' advertised public keys
// unauthenticated, and a malicious aggregator can send a site a roster with
// its own keys in place of the others': it then decrypts that site's
// Shamir shares, learns its self-mask seed and its pairwise masks, and
// reads its masked ê_s (secagg's TestKeySubstitutionReadsAnInput). That
// breaks the trust model: the aggregator learns ê_s and the zero-sum noise
// no longer protects the site.
//
// So, as in the malicious-server variant of Bonawitz et al. (2017), each
// site signs its advertisement with its certificate key: the statement
// (KeyStatement) binds the two X25519 keys to the attempt's session,
// parameter hash and attempt number, the round, the site's roster ID and
// name. The aggregator relays the signatures with the roster (SecAgg.Auth),
// and before deriving any shared key a site verifies every other site's
// signature against a certificate from its own CA whose party name is that
// site's roster name; an unsigned advertisement, a signature that does not
// match, a certificate naming another site or from another CA, and a
// signature from another session or attempt (a replay) all make the site
// abandon the attempt with an error naming the site.
//
// *certs.StatementSigner implements KeySigner (the party's certificate from
// the deployment's CA, as used for mutual TLS). The protection is only as
// good as the CA: an aggregator holding the CA key could issue itself a
// certificate in any site's name.
type KeySigner interface {
	// Sign signs the statement (domain, parts) as this site and returns
	// its certificate (DER) and the signature.
	Sign(domain string, parts ...[]byte) (cert, sig []byte, err error)
	// Verify checks that sig signs the statement (domain, parts) with
	// cert's key, that cert is from this site's CA and that it names the
	// party name.
	Verify(name string, cert, sig []byte, domain string, parts ...[]byte) error
}

// KeyDomain separates capeFM's key statements from every other signed
// statement of the deployment (certs.StatementDigest).
const KeyDomain = "dplearn-capefm-keys-v1"

// KeyStatement returns the parts of the statement a site signs for its key
// advertisement k in the attempt with Params p (hash: p.Hash()): the
// session, the parameter hash, the attempt number (4 bytes), the round
// (1 byte), the site's ID (4 bytes) and name, and the encryption and mask
// keys.
func KeyStatement(p *Params, hash [32]byte, name string, k *secagg.AdvertiseKeys) [][]byte {
	var b [9]byte
	binary.BigEndian.PutUint32(b[0:4], p.Attempt)
	b[4] = byte(RoundAdvertiseKeys)
	binary.BigEndian.PutUint32(b[5:9], k.From)
	return [][]byte{p.Session[:], hash[:], b[0:4], b[4:5], b[5:9], []byte(name), k.EncKey, k.MaskKey}
}

// KeyAuthError is a key advertisement that failed its signature check:
// Site is the roster name of the site whose advertisement it was. A site
// that gets one abandons the attempt (a malicious aggregator, or a site
// the aggregator failed to exclude); the aggregator refuses the
// advertisement and the site counts as missing from the attempt.
type KeyAuthError struct {
	Site   string
	Reason string
}

func (e *KeyAuthError) Error() string {
	return fmt.Sprintf("site %s's key advertisement %s", e.Site, e.Reason)
}

// signKeys signs the site's advertisement.
func (s *Site) signKeys(a *siteAttempt, k *secagg.AdvertiseKeys) ([]KeyAuth, error) {
	if s.cfg.Signer == nil {
		return nil, nil
	}
	cert, sig, err := s.cfg.Signer.Sign(KeyDomain, KeyStatement(&a.p, a.hash, s.cfg.Name, k)...)
	if err != nil {
		return nil, fmt.Errorf("capefm: site %s: signing its keys: %w", s.cfg.Name, err)
	}
	return []KeyAuth{{Cert: cert, Sig: sig}}, nil
}

// checkRoster verifies every other site's signed advertisement in the
// roster, and that the roster carries this site's own keys unchanged,
// before any shared key is derived. The error names the offending site.
func (s *Site) checkRoster(a *siteAttempt, kr *secagg.KeyRoster, as []KeyAuth) error {
	if s.cfg.Signer == nil {
		return nil
	}
	for i := range kr.Keys {
		k := &kr.Keys[i]
		if k.From == a.id {
			if a.keys == nil || !bytes.Equal(k.EncKey, a.keys.EncKey) || !bytes.Equal(k.MaskKey, a.keys.MaskKey) {
				return &KeyAuthError{Site: s.cfg.Name, Reason: "(this site's own) was replaced in the key roster"}
			}
			continue
		}
		info, ok := a.p.Site(k.From)
		name := info.Name
		if !ok {
			return fmt.Errorf("the key roster lists site %d, which is not in the roster", k.From)
		}
		var auth KeyAuth
		if i < len(as) {
			auth = as[i]
		}
		if err := verifyKeys(s.cfg.Signer, &a.p, a.hash, name, k, auth); err != nil {
			return fmt.Errorf("%w: refusing to derive keys with it", err)
		}
	}
	return nil
}

// verifyKeys checks one site's signed advertisement (*KeyAuthError).
func verifyKeys(v KeySigner, p *Params, hash [32]byte, name string, k *secagg.AdvertiseKeys, auth KeyAuth) error {
	if auth.empty() {
		return &KeyAuthError{Site: name, Reason: "is unsigned"}
	}
	if err := v.Verify(name, auth.Cert, auth.Sig, KeyDomain, KeyStatement(p, hash, name, k)...); err != nil {
		return &KeyAuthError{Site: name, Reason: fmt.Sprintf("fails its signature check (%v; a substituted, forged or replayed key?)", err)}
	}
	return nil
}
