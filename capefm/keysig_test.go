package capefm

import (
	"context"
	"crypto/ecdh"
	"crypto/rand"
	"errors"
	"log/slog"
	mrand "math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/secagg"
)

// keyRound drives an attempt of f through Hello and AdvertiseKeys and
// returns the manual driver and the (signed) key roster the aggregator
// would broadcast.
func keyRound(t *testing.T, f *fixture, attempt uint32, session byte) (*manual, *SecAgg) {
	t.Helper()
	m := newManual(t, f, attempt, session)
	m.step() // Hello → Agreed
	m.step() // AdvertiseKeys → KeyRoster
	kr, ok := m.down[0].(*SecAgg)
	if !ok || kr.Type() != "key-roster" {
		t.Fatalf("after AdvertiseKeys the aggregator sent %T", m.down[0])
	}
	return m, kr
}

// cloneRoster deep-copies a KeyRoster message (through its encoding).
func cloneRoster(t *testing.T, m *SecAgg) *SecAgg {
	t.Helper()
	return recode(t, m).(*SecAgg)
}

// entry returns the index of site id's entry in the roster.
func entry(t *testing.T, m *SecAgg, id uint32) int {
	t.Helper()
	for i, k := range m.Msg.(*secagg.KeyRoster).Keys {
		if k.From == id {
			return i
		}
	}
	t.Fatalf("no roster entry for site %d", id)
	return -1
}

func freshKeys(t *testing.T) (enc, mask []byte) {
	t.Helper()
	a, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	b, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return a.PublicKey().Bytes(), b.PublicKey().Bytes()
}

// TestKeySubstitutionRefused turns secagg's TestKeySubstitutionReadsAnInput
// around: with signed keys, a malicious aggregator that substitutes, forges,
// re-signs or replays a key advertisement in the roster it sends a victim
// site gets no ShareKeys from it (nothing encrypted under a key the
// aggregator knows), and the victim's error names the site whose
// advertisement failed. The untampered roster is accepted (the control).
func TestKeySubstitutionRefused(t *testing.T) {
	const victim, peer = uint32(1), uint32(2)
	rogueCA := testCA(t)
	rogue := testSigner(t, rogueCA, "site-2") // site-2's name, another CA
	for _, c := range []struct {
		name   string
		tamper func(t *testing.T, f *fixture, m *SecAgg)
		want   string // "" for the control
	}{
		{"control: the roster as the sites sent it", func(*testing.T, *fixture, *SecAgg) {}, ""},
		{"substituted keys, the peer's signature kept", func(t *testing.T, _ *fixture, m *SecAgg) {
			k := &m.Msg.(*secagg.KeyRoster).Keys[entry(t, m, peer)]
			k.EncKey, k.MaskKey = freshKeys(t)
		}, "site site-2's key advertisement fails its signature check"},
		{"every peer's keys substituted (secagg's attack)", func(t *testing.T, _ *fixture, m *SecAgg) {
			for i := range m.Msg.(*secagg.KeyRoster).Keys {
				if k := &m.Msg.(*secagg.KeyRoster).Keys[i]; k.From != victim {
					k.EncKey, k.MaskKey = freshKeys(t)
				}
			}
		}, "key advertisement fails its signature check"},
		{"forged signature", func(t *testing.T, _ *fixture, m *SecAgg) {
			i := entry(t, m, peer)
			k := &m.Msg.(*secagg.KeyRoster).Keys[i]
			k.EncKey, k.MaskKey = freshKeys(t)
			sig := append([]byte(nil), m.Auth[i].Sig...)
			sig[len(sig)-1] ^= 1
			m.Auth[i].Sig = sig
		}, "site site-2's key advertisement fails its signature check"},
		{"substituted keys signed with another site's certificate", func(t *testing.T, f *fixture, m *SecAgg) {
			i := entry(t, m, peer)
			k := &m.Msg.(*secagg.KeyRoster).Keys[i]
			k.EncKey, k.MaskKey = freshKeys(t)
			// Site 3 (or the aggregator holding its key) signs site-2's statement.
			s3 := f.sites[2]
			a := f.sites[0].att
			cert, sig, err := s3.cfg.Signer.Sign(KeyDomain, KeyStatement(&a.p, a.hash, "site-2", k)...)
			if err != nil {
				t.Fatal(err)
			}
			m.Auth[i] = KeyAuth{Cert: cert, Sig: sig}
		}, `signed by "site-3"'s certificate`},
		{"substituted keys signed with a certificate from another CA", func(t *testing.T, f *fixture, m *SecAgg) {
			i := entry(t, m, peer)
			k := &m.Msg.(*secagg.KeyRoster).Keys[i]
			k.EncKey, k.MaskKey = freshKeys(t)
			a := f.sites[0].att
			cert, sig, err := rogue.Sign(KeyDomain, KeyStatement(&a.p, a.hash, "site-2", k)...)
			if err != nil {
				t.Fatal(err)
			}
			m.Auth[i] = KeyAuth{Cert: cert, Sig: sig}
		}, "not from this deployment's CA"},
		{"the peer's signature removed", func(t *testing.T, _ *fixture, m *SecAgg) {
			m.Auth[entry(t, m, peer)] = KeyAuth{}
		}, "site site-2's key advertisement is unsigned"},
		{"every signature removed", func(t *testing.T, _ *fixture, m *SecAgg) {
			m.Auth = nil
		}, "key advertisement is unsigned"},
		{"the victim's own keys replaced", func(t *testing.T, _ *fixture, m *SecAgg) {
			k := &m.Msg.(*secagg.KeyRoster).Keys[entry(t, m, victim)]
			k.EncKey, k.MaskKey = freshKeys(t)
		}, "site site-1's key advertisement (this site's own) was replaced in the key roster"},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := smallFixture(t, fixtureOptions{})
			_, kr := keyRound(t, f, 1, 1)
			bad := cloneRoster(t, kr)
			c.tamper(t, f, bad)
			s := f.sites[victim-1]
			ans, err := s.Handle(context.Background(), recode(t, bad))
			if c.want == "" {
				if err != nil || ans == nil || ans.Type() != "share-keys" {
					t.Fatalf("untampered roster: %T, %v", ans, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if kae := (*KeyAuthError)(nil); strings.Contains(c.want, "key advertisement") && (!errors.As(err, &kae) || !strings.HasPrefix(kae.Site, "site-")) {
				t.Fatalf("err = %v: no *KeyAuthError naming the site", err)
			}
			if ans != nil {
				t.Fatalf("the victim answered %s", ans.Type())
			}
			// The attempt is abandoned: not even the genuine roster is
			// used now.
			if ans, err := s.Handle(context.Background(), recode(t, kr)); err == nil {
				t.Fatalf("after a bad roster the victim answered the genuine one with %s", ans.Type())
			}
		})
	}
}

// TestReplayedAdvertisementRefused: a peer's genuine, correctly signed
// advertisement from an earlier session (attempt 1), replayed by the
// aggregator into attempt 2's roster, is refused: the signature binds the
// session, the parameter hash and the attempt.
func TestReplayedAdvertisementRefused(t *testing.T) {
	f := smallFixture(t, fixtureOptions{})
	_, old := keyRound(t, f, 1, 1)
	_, kr := keyRound(t, f, 2, 2)
	if old.SessionID() == kr.SessionID() {
		t.Fatal("the attempts share a session")
	}
	bad := cloneRoster(t, kr)
	i, j := entry(t, bad, 2), entry(t, old, 2)
	k := &bad.Msg.(*secagg.KeyRoster).Keys[i]
	ok := old.Msg.(*secagg.KeyRoster).Keys[j]
	k.EncKey, k.MaskKey = ok.EncKey, ok.MaskKey // the old keys, under the new session
	bad.Auth[i] = old.Auth[j]
	_, err := f.sites[0].Handle(context.Background(), recode(t, bad))
	if err == nil || !strings.Contains(err.Error(), "site site-2's key advertisement fails its signature check") {
		t.Fatalf("replayed advertisement: %v", err)
	}
}

// TestKeySignerConfig: capeFM needs a key signer or an explicit opt-out,
// not both; a signed site refuses a roster holding an unsigned site's keys
// (naming it), and sites that all opted out run unsigned (in process).
func TestKeySignerConfig(t *testing.T) {
	d := 3
	ca := testCA(t)
	for _, c := range []struct {
		name string
		cfg  func(*SiteConfig)
		want string
	}{
		{"neither", func(c *SiteConfig) { c.Signer = nil }, "no key signer"},
		{"both", func(c *SiteConfig) { c.UnsignedKeys = true }, "choose one"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := SiteConfig{Name: "site-1", Mechanism: CapeFM, Kind: regress.Linear, Epsilon: 1, Delta: 1e-5,
				Source: f64src(), Ledger: &memLedger{}, Signer: testSigner(t, ca, "site-1")}
			c.cfg(&cfg)
			rows := syntheticRows(regress.Linear, 10, d, mrand.New(mrand.NewPCG(1, 2)))
			_, err := NewSite(cfg, regress.Data{Stats: statsOf(t, rows, d+1)})
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
	t.Run("one unsigned site among signed ones", func(t *testing.T) {
		f := smallFixture(t, fixtureOptions{configs: func(i int, c *SiteConfig) {
			if i == 2 {
				c.Signer, c.UnsignedKeys = nil, true
			}
		}})
		_, kr := keyRound(t, f, 1, 1)
		_, err := f.sites[0].Handle(context.Background(), recode(t, kr))
		if err == nil || !strings.Contains(err.Error(), "site site-3's key advertisement is unsigned") {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("all unsigned, in process", func(t *testing.T) {
		f := smallFixture(t, fixtureOptions{configs: func(i int, c *SiteConfig) {
			c.Signer, c.UnsignedKeys = nil, true
		}})
		if _, err := f.run(t, RunOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

var _ KeySigner = (*certs.StatementSigner)(nil)

// TestAggregatorVerifiesKeys: with a key verifier the aggregator refuses a
// site whose advertisement is signed with a certificate from another CA;
// that site counts as missing, the attempt is redone without it and the fit
// completes. No honest site ever sees the bad advertisement.
func TestAggregatorVerifiesKeys(t *testing.T) {
	rogue := testCA(t)
	ca := testCA(t)
	f := smallFixture(t, fixtureOptions{configs: func(i int, c *SiteConfig) {
		if i == 2 {
			c.Signer = testSigner(t, rogue, c.Name)
		}
	}})
	f.template.MinSites = 2
	var logs strings.Builder
	res, err := f.run(t, RunOptions{KeyVerifier: testSigner(t, ca, "aggregator"),
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err == nil {
		t.Fatalf("a verifier from another CA than every site's accepted the fit")
	}
	// The verifier is the aggregator's certificate from the sites' CA.
	f = smallFixture(t, fixtureOptions{configs: func(i int, c *SiteConfig) {
		if i == 2 {
			c.Signer = testSigner(t, rogue, c.Name)
		}
	}})
	f.template.MinSites = 2
	logs.Reset()
	agg := testSigner(t, f.ca, "aggregator")
	res, err = f.run(t, RunOptions{KeyVerifier: agg,
		Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatalf("%v\n%s", err, logs.String())
	}
	if len(res.Attempts) != 2 || len(res.Params.Sites) != 2 || slices.ContainsFunc(res.Params.Sites, func(s SiteInfo) bool { return s.Name == "site-3" }) {
		t.Fatalf("attempts %d, final sites %v", len(res.Attempts), res.Params.Sites)
	}
	if !slices.ContainsFunc(strings.Split(logs.String(), "\n"), func(l string) bool {
		return strings.Contains(l, "level=WARN") && strings.Contains(l, "site=site-3") &&
			strings.Contains(l, "site site-3's key advertisement fails its signature check") && strings.Contains(l, "not from this deployment's CA")
	}) {
		t.Errorf("no refusal naming site-3 in the log:\n%s", logs.String())
	}
}

// BenchmarkKeySignatures: one in-process capeFM fit (S = 5, D = 20, 200
// rows per site) with signed keys (every site signs once and verifies four
// certificates and signatures; the aggregator verifies five), against the
// reference of the same fit with UnsignedKeys, measured in the same run.
func BenchmarkKeySignatures(b *testing.B) {
	d := 20
	rows := syntheticRows(regress.Linear, 1000, d, mrand.New(mrand.NewPCG(5, 6)))
	parts := split(rows, d+1, []int{200, 200, 200, 200, 200})
	for _, signed := range []bool{true, false} {
		name := "unsigned-reference"
		if signed {
			name = "signed"
		}
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				f := newFixture(b, parts, d, fixtureOptions{configs: func(i int, c *SiteConfig) {
					if !signed {
						c.Signer, c.UnsignedKeys = nil, true
					}
				}})
				opt := RunOptions{}
				if signed {
					opt.KeyVerifier = testSigner(b, f.ca, "aggregator")
				}
				b.StartTimer()
				if _, err := Run(context.Background(), f.template, f.sites, opt); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
