package certs

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"
)

// TestStatementDigestKnownAnswer: the digest is SHA-256 of the
// length-framed domain and parts, computed here independently.
func TestStatementDigestKnownAnswer(t *testing.T) {
	want := sha256.Sum256([]byte("\x00\x00\x00\x03dom\x00\x00\x00\x02ab\x00\x00\x00\x00\x00\x00\x00\x01c"))
	if got := StatementDigest("dom", []byte("ab"), nil, []byte("c")); !bytes.Equal(got, want[:]) {
		t.Fatalf("digest %x, want %x", got, want)
	}
	// Framing: moving a byte between parts, or between the domain and the
	// first part, changes the statement.
	for _, c := range []struct {
		d1, d2 string
		p1, p2 [][]byte
	}{
		{"d", "d", [][]byte{[]byte("ab"), []byte("c")}, [][]byte{[]byte("a"), []byte("bc")}},
		{"dx", "d", [][]byte{[]byte("y")}, [][]byte{[]byte("xy")}},
		{"d", "d", [][]byte{[]byte("a")}, [][]byte{[]byte("a"), nil}},
	} {
		if bytes.Equal(StatementDigest(c.d1, c.p1...), StatementDigest(c.d2, c.p2...)) {
			t.Errorf("(%q, %q) and (%q, %q) share a digest", c.d1, c.p1, c.d2, c.p2)
		}
	}
	if hex.EncodeToString(StatementDigest("")) != "df3f619804a92fdb4057192dc43dd748ea778adc52bc498ce80524c014b81119" {
		t.Errorf("empty statement: %x (want SHA-256 of four zero bytes)", StatementDigest(""))
	}
}

// TestVerifyStatement: a valid signature verifies; every alteration
// (statement, domain, signature), a certificate naming another party, a
// certificate from another CA, a missing certificate or signature, and a
// non-certificate are refused with the reason.
func TestVerifyStatement(t *testing.T) {
	ca, err := NewCA(Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := NewCA(Options{})
	if err != nil {
		t.Fatal(err)
	}
	issue := func(ca *CA, name string) *Party {
		p, err := ca.IssueParty(name, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	alice, bob, mallory := issue(ca, "alice"), issue(ca, "bob"), issue(other, "alice")
	const dom = "dplearn-test-v1"
	parts := [][]byte{[]byte("session"), {0, 0, 0, 1}}
	sign := func(p *Party, domain string, parts ...[]byte) (cert, sig []byte) {
		c, s, err := SignStatement(p, domain, parts...)
		if err != nil {
			t.Fatal(err)
		}
		return c, s
	}
	cert, sig := sign(alice, dom, parts...)
	flipped := append([]byte(nil), sig...)
	flipped[len(flipped)-1] ^= 1
	bobCert, bobSig := sign(bob, dom, parts...)
	malCert, malSig := sign(mallory, dom, parts...)
	// A valid signature by a key outside any certificate, with alice's certificate.
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	strangerSig, _ := ecdsa.SignASN1(rand.Reader, k, StatementDigest(dom, parts...))
	for _, c := range []struct {
		name      string
		cert, sig []byte
		domain    string
		parts     [][]byte
		want      string // "" for valid
	}{
		{"valid", cert, sig, dom, parts, ""},
		{"another statement", cert, sig, dom, [][]byte{[]byte("session"), {0, 0, 0, 2}}, "does not match"},
		{"another domain", cert, sig, "dplearn-test-v2", parts, "does not match"},
		{"forged signature", cert, flipped, dom, parts, "does not match"},
		{"another key with alice's certificate", cert, strangerSig, dom, parts, "does not match"},
		{"bob's certificate and signature", bobCert, bobSig, dom, parts, `signed by "bob"'s certificate, not "alice"'s`},
		{"alice's name from another CA", malCert, malSig, dom, parts, "not from this deployment's CA"},
		{"no certificate", nil, sig, dom, parts, "no certificate"},
		{"no signature", cert, nil, dom, parts, "no signature"},
		{"not a certificate", []byte("certificate"), sig, dom, parts, "certificate:"},
		{"oversized signature", cert, make([]byte, MaxStatementSig+1), dom, parts, "at most"},
	} {
		t.Run(c.name, func(t *testing.T) {
			check := func(what string, err error) {
				if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
					t.Fatalf("%s: err = %v, want %q", what, err, c.want)
				}
			}
			check("VerifyStatement", VerifyStatement(bob.Roots, c.cert, "alice", c.sig, c.domain, c.parts...))
			// StatementSigner, fresh and after caching alice's certificate.
			v, err := NewStatementSigner(bob)
			if err != nil {
				t.Fatal(err)
			}
			check("StatementSigner", v.Verify("alice", c.cert, c.sig, c.domain, c.parts...))
			if err := v.Verify("alice", cert, sig, dom, parts...); err != nil {
				t.Fatal(err)
			}
			check("StatementSigner, cached", v.Verify("alice", c.cert, c.sig, c.domain, c.parts...))
		})
	}
	// The cache is per name: alice's verified certificate does not pass as bob's.
	v, _ := NewStatementSigner(bob)
	if err := v.Verify("alice", cert, sig, dom, parts...); err != nil {
		t.Fatal(err)
	}
	if err := v.Verify("bob", cert, sig, dom, parts...); err == nil || !strings.Contains(err.Error(), `signed by "alice"'s certificate`) {
		t.Fatalf("alice's cached certificate as bob's: %v", err)
	}
	if _, err := NewStatementSigner(nil); err == nil {
		t.Fatal("a signer without a party")
	}
}

// BenchmarkStatement: signing, verifying with the certificate chain, and
// verifying with the certificate cached, against the reference of one
// SHA-256 of a 1 kB message (the cost floor of any digest-based scheme).
func BenchmarkStatement(b *testing.B) {
	ca, _ := NewCA(Options{})
	alice, _ := ca.IssueParty("alice", Options{})
	bob, _ := ca.IssueParty("bob", Options{})
	parts := [][]byte{make([]byte, 32), make([]byte, 32), make([]byte, 64)}
	cert, sig, err := SignStatement(alice, "bench", parts...)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sign", func(b *testing.B) {
		for b.Loop() {
			if _, _, err := SignStatement(alice, "bench", parts...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify-chain", func(b *testing.B) {
		for b.Loop() {
			if err := VerifyStatement(bob.Roots, cert, "alice", sig, "bench", parts...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify-cached", func(b *testing.B) {
		v, _ := NewStatementSigner(bob)
		for b.Loop() {
			if err := v.Verify("alice", cert, sig, "bench", parts...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference-sha256-1kB", func(b *testing.B) {
		m := make([]byte, 1024)
		for b.Loop() {
			sha256.Sum256(m)
		}
	})
}
