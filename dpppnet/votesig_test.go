package dpppnet

import (
	"crypto/rand"
	"math/big"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/internal/pailliertest"
)

// TestVoteSignatures: a vote signature verifies only for the ciphertext,
// batch, session and teacher it was made for, under a certificate of the
// deployment's CA naming that teacher; the encodings round-trip and
// malformed ones are refused.
func TestVoteSignatures(t *testing.T) {
	ca, err := certs.NewCA(certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	other, err := certs.NewCA(certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	issue := func(ca *certs.CA, name string) *certs.Party {
		p, err := ca.IssueParty(name, certs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	t1, t2, stranger := issue(ca, "teacher01"), issue(ca, "teacher02"), issue(other, "teacher01")
	session := [32]byte{7}
	ct := []byte("the ciphertext of teacher01's vote")
	sign := func(id *certs.Party, batch uint64, from uint32, ct []byte) *voteSig {
		s, err := signVote(id, session, batch, from, ct)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	good := sign(t1, 3, 1, ct)
	for _, c := range []struct {
		name    string
		sig     *voteSig
		session [32]byte
		batch   uint64
		ct      []byte
		want    string // "" for valid
	}{
		{"valid", good, session, 3, ct, ""},
		{"another ciphertext", good, session, 3, []byte("a substituted ciphertext"), "does not match"},
		{"another batch", good, session, 4, ct, "does not match"},
		{"another session", good, [32]byte{8}, 3, ct, "does not match"},
		{"another teacher's certificate", sign(t2, 3, 1, ct), session, 3, ct, `signed by "teacher02"'s certificate`},
		{"another CA", sign(stranger, 3, 1, ct), session, 3, ct, "not from this deployment's CA"},
		{"claims another ID", sign(t1, 3, 2, ct), session, 3, ct, "teacher 2's"},
		{"missing", nil, session, 3, ct, "no signature"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := newSigVerifier(t2) // a decrypting teacher of the same CA
			err := v.verify(c.sig, "teacher01", c.session, c.batch, 1, c.ct)
			if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
	// Encodings.
	p := marshalVoteSig(session, 3, good)
	s, b, list, err := parseSigs(p, sigHeader)
	if err != nil || s != session || b != 3 || len(list) != 1 || string(list[0].Sig) != string(good.Sig) || list[0].From != 1 {
		t.Fatalf("round trip: %v %v %v %+v", err, s, b, list)
	}
	if string(p[2:34]) != string(session[:]) {
		t.Fatal("the session is not at [2:34], where the hub's gate reads it")
	}
	bundle := marshalVoteSigs(session, 3, []*voteSig{good, sign(t2, 3, 2, ct)})
	if _, _, list, err := parseSigs(bundle, bundleHeader); err != nil || len(list) != 2 || list[1].From != 2 {
		t.Fatalf("bundle: %v %+v", err, list)
	}
	for _, bad := range []struct {
		name string
		p    []byte
		h    [2]byte
	}{
		{"empty", nil, sigHeader},
		{"a bundle read as one", bundle, sigHeader},
		{"truncated", p[:len(p)-1], sigHeader},
		{"trailing byte", append(append([]byte{}, p...), 0), sigHeader},
		{"huge count", append(append([]byte{}, bundle[:42]...), 0xff, 0xff, 0xff, 0xff), bundleHeader},
	} {
		if _, _, _, err := parseSigs(bad.p, bad.h); err == nil {
			t.Errorf("%s: accepted", bad.name)
		}
	}
}

func FuzzParseSigs(f *testing.F) {
	f.Add(marshalVoteSigs([32]byte{1}, 2, []*voteSig{{From: 1, Cert: []byte{1, 2}, Sig: []byte{3}}}))
	f.Fuzz(func(t *testing.T, p []byte) {
		for _, h := range [][2]byte{sigHeader, bundleHeader} {
			s, b, list, err := parseSigs(p, h)
			if err != nil {
				continue
			}
			var q []byte
			if h == sigHeader {
				q = marshalVoteSig(s, b, list[0])
			} else {
				q = marshalVoteSigs(s, b, list)
			}
			if string(q) != string(p) {
				t.Fatalf("re-encoding differs")
			}
		}
	})
}

// BenchmarkVoteSignatures measures the cost the vote signatures add: a
// teacher signs its vote once per batch and checks every other listed
// vote before it decrypts (the certificate chain once per teacher, then
// the signature). The reference, measured in the same run, is one
// encryption of a vote under a 2048-bit threshold key (the teacher's own
// per-batch cost).
func BenchmarkVoteSignatures(b *testing.B) {
	ca, err := certs.NewCA(certs.Options{})
	if err != nil {
		b.Fatal(err)
	}
	id, err := ca.IssueParty("teacher01", certs.Options{})
	if err != nil {
		b.Fatal(err)
	}
	checker, err := ca.IssueParty("teacher02", certs.Options{})
	if err != nil {
		b.Fatal(err)
	}
	tpk, _, err := pailliertest.ThresholdKey(2048, 3, 2)
	if err != nil {
		b.Fatal(err)
	}
	ct, err := tpk.Public().Encrypt(rand.Reader, big.NewInt(12345))
	if err != nil {
		b.Fatal(err)
	}
	vote, _ := ct.MarshalBinary()
	session := [32]byte{1}
	sig, err := signVote(id, session, 1, 1, vote)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("sign", func(b *testing.B) {
		for b.Loop() {
			if _, err := signVote(id, session, 1, 1, vote); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify-first", func(b *testing.B) { // certificate chain and signature
		for b.Loop() {
			if err := newSigVerifier(checker).verify(sig, "teacher01", session, 1, 1, vote); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("verify-cached", func(b *testing.B) { // the signature only
		v := newSigVerifier(checker)
		for b.Loop() {
			if err := v.verify(sig, "teacher01", session, 1, 1, vote); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("reference-encrypt-vote", func(b *testing.B) {
		for b.Loop() {
			if _, err := tpk.Public().Encrypt(rand.Reader, big.NewInt(12345)); err != nil {
				b.Fatal(err)
			}
		}
	})
}
