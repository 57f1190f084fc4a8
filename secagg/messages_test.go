package secagg

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// Every malformed or misplaced message is rejected by the server with an
// error naming the round and the party, and rejecting it changes nothing.
func TestServerRejectsMalformedMessages(t *testing.T) {
	cfg := testConfig(t, 4, 3, 5, false)
	ms := newManual(t, cfg, 9)
	adv := map[uint32]*AdvertiseKeys{}
	for _, id := range cfg.Parties {
		m, err := ms.parties[id].AdvertiseKeys()
		if err != nil {
			t.Fatal(err)
		}
		adv[id] = m
	}
	type tc struct {
		name string
		msg  Message
		want []string
	}
	reject := func(t *testing.T, cases []tc) {
		t.Helper()
		for _, c := range cases {
			err := ms.srv.Receive(c.msg)
			if err == nil {
				t.Errorf("%s: accepted", c.name)
				continue
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%s: error %q does not mention %q", c.name, err, w)
				}
			}
		}
	}
	clone := func(m *AdvertiseKeys) *AdvertiseKeys { c := *m; return &c }
	wrongSession := clone(adv[1])
	wrongSession.Session = bytes.Repeat([]byte{1}, 32)
	shortKey := clone(adv[1])
	shortKey.EncKey = shortKey.EncKey[:31]
	sameKeys := clone(adv[1])
	sameKeys.MaskKey = sameKeys.EncKey
	unknown := clone(adv[1])
	unknown.From = 99
	lowOrder := clone(adv[1])
	lowOrder.MaskKey = make([]byte, 32) // the all-zero point
	reject(t, []tc{
		{"wrong session", wrongSession, []string{"AdvertiseKeys", "party 1", "session"}},
		{"short key", shortKey, []string{"AdvertiseKeys", "party 1", "31"}},
		{"equal keys", sameKeys, []string{"party 1", "equal"}},
		{"unknown party", unknown, []string{"AdvertiseKeys", "party 99"}},
		{"nil", nil, []string{"AdvertiseKeys"}},
		{"typed nil", (*AdvertiseKeys)(nil), []string{"nil message"}},
		{"typed nil of another round", (*UnmaskResponse)(nil), []string{"nil message"}},
		{"server message", &KeyRoster{Session: cfg.Session}, []string{"server-to-party"}},
		{"wrong round", &MaskedInput{Session: cfg.Session, From: 1, Masked: make([]uint64, 5)}, []string{"MaskedInputCollection", "party 1", "while the server is in round AdvertiseKeys"}},
	})
	_ = lowOrder // the all-zero key is rejected by the party's ECDH; see TestPartyRejectsMalformedMessages
	for _, id := range cfg.Parties {
		if err := ms.srv.Receive(adv[id]); err != nil {
			t.Fatal(err)
		}
	}
	reusedKey := clone(adv[2])
	reject(t, []tc{{"duplicate", reusedKey, []string{"AdvertiseKeys", "party 2", "duplicate"}}})
	var err error
	if ms.roster, err = ms.srv.CloseAdvertiseKeys(); err != nil {
		t.Fatal(err)
	}
	if _, err := ms.srv.CloseAdvertiseKeys(); err == nil {
		t.Error("round closed twice")
	}

	// Round ShareKeys.
	sk := map[uint32]*ShareKeys{}
	for _, id := range cfg.Parties {
		if sk[id], err = ms.parties[id].ShareKeys(ms.roster); err != nil {
			t.Fatal(err)
		}
	}
	cloneSK := func(m *ShareKeys) *ShareKeys {
		c := *m
		c.Shares = slices.Clone(m.Shares)
		return &c
	}
	fewer := cloneSK(sk[1])
	fewer.Shares = fewer.Shares[1:]
	misaddressed := cloneSK(sk[1])
	misaddressed.Shares[0].To = 3
	shortCT := cloneSK(sk[1])
	shortCT.Shares[1].Ciphertext = shortCT.Shares[1].Ciphertext[:10]
	forged := cloneSK(sk[1])
	forged.From = 2
	reject(t, []tc{
		{"missing share", fewer, []string{"ShareKeys", "party 1", "2 encrypted shares, want 3"}},
		{"misaddressed share", misaddressed, []string{"ShareKeys", "party 1", "from 1 to 3"}},
		{"short ciphertext", shortCT, []string{"ShareKeys", "party 1", "10 bytes"}},
		{"sender mismatch", forged, []string{"ShareKeys", "party 2"}},
		{"old round", adv[1], []string{"AdvertiseKeys", "party 1", "while the server is in round ShareKeys"}},
	})
	for _, id := range cfg.Parties {
		if err := ms.srv.Receive(sk[id]); err != nil {
			t.Fatal(err)
		}
	}
	reject(t, []tc{{"duplicate", sk[3], []string{"ShareKeys", "party 3", "duplicate"}}})
	rels, err := ms.srv.CloseShareKeys()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rels {
		ms.relays[r.To] = r
	}

	// Round MaskedInputCollection: party 4 drops.
	mi := map[uint32]*MaskedInput{}
	for _, id := range []uint32{1, 2, 3} {
		if mi[id], err = ms.parties[id].MaskInput(ms.relays[id]); err != nil {
			t.Fatal(err)
		}
	}
	short := &MaskedInput{Session: cfg.Session, From: 1, Masked: mi[1].Masked[:4]}
	reject(t, []tc{{"short vector", short, []string{"MaskedInputCollection", "party 1", "4 words, want 5"}}})
	for _, id := range []uint32{1, 2, 3} {
		if err := ms.srv.Receive(mi[id]); err != nil {
			t.Fatal(err)
		}
	}
	reject(t, []tc{{"duplicate", mi[2], []string{"MaskedInputCollection", "party 2", "duplicate"}}})
	reqs, err := ms.srv.CloseMaskedInput()
	if err != nil {
		t.Fatal(err)
	}

	// Round Unmasking: party 4 is not in U3.
	ur := map[uint32]*UnmaskResponse{}
	for _, r := range reqs {
		if ur[r.To], err = ms.parties[r.To].Unmask(r); err != nil {
			t.Fatal(err)
		}
	}
	cloneUR := func(m *UnmaskResponse) *UnmaskResponse {
		c := *m
		c.SelfMaskShares = slices.Clone(m.SelfMaskShares)
		c.MaskKeyShares = slices.Clone(m.MaskKeyShares)
		return &c
	}
	noKeys := cloneUR(ur[1])
	noKeys.MaskKeyShares = nil
	wrongOwner := cloneUR(ur[1])
	wrongOwner.SelfMaskShares[0].Owner = 4
	shortShare := cloneUR(ur[1])
	shortShare.MaskKeyShares[0].Y = shortShare.MaskKeyShares[0].Y[:32]
	fromDropped := cloneUR(ur[1])
	fromDropped.From = 4
	reject(t, []tc{
		{"missing key shares", noKeys, []string{"Unmasking", "party 1", "0 mask-key shares, want 1"}},
		{"wrong owner", wrongOwner, []string{"Unmasking", "party 1", "party 4, want party 1"}},
		{"short share", shortShare, []string{"Unmasking", "party 1", "32 bytes"}},
		{"dropped party", fromDropped, []string{"Unmasking", "party 4", "not among"}},
	})
	for _, id := range []uint32{1, 2, 3} {
		if err := ms.srv.Receive(ur[id]); err != nil {
			t.Fatal(err)
		}
	}
	reject(t, []tc{{"duplicate", ur[1], []string{"Unmasking", "party 1", "duplicate"}}})
	res, err := ms.srv.Finish(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if err := equalWords(res.Sum, plainSum(ms.inputs, []uint32{1, 2, 3}, 5)); err != nil {
		t.Fatalf("sum after rejected messages: %v", err)
	}
}

// A party rejects malformed server messages naming itself and the round, and
// stays in its round (it can still answer the genuine message).
func TestPartyRejectsMalformedMessages(t *testing.T) {
	cfg := testConfig(t, 4, 3, 5, false)
	ms := newManual(t, cfg, 11)
	p := ms.parties[1]
	if _, err := p.ShareKeys(&KeyRoster{Session: cfg.Session}); err == nil || !strings.Contains(err.Error(), "round ShareKeys") {
		t.Fatalf("roster before keys: %v", err)
	}
	ms.advertise(t)
	r := ms.roster
	mod := func(f func(*KeyRoster)) *KeyRoster {
		c := *r
		c.Keys = slices.Clone(r.Keys)
		f(&c)
		return &c
	}
	for _, c := range []struct {
		name string
		msg  *KeyRoster
		want string
	}{
		{"nil", nil, "nil"},
		{"other session", mod(func(k *KeyRoster) { k.Session = bytes.Repeat([]byte{2}, 32) }), "another session"},
		{"unsorted", mod(func(k *KeyRoster) { k.Keys[0], k.Keys[1] = k.Keys[1], k.Keys[0] }), "sorted"},
		{"duplicate party", mod(func(k *KeyRoster) { k.Keys[1] = k.Keys[0] }), "twice"},
		{"unknown party", mod(func(k *KeyRoster) { k.Keys[3].From = 77 }), "party 77"},
		{"without self", mod(func(k *KeyRoster) { k.Keys = k.Keys[1:] }), "does not list this party"},
		{"substituted own key", mod(func(k *KeyRoster) { k.Keys[0].EncKey = k.Keys[1].EncKey }), "share a public key"},
		{"too few", mod(func(k *KeyRoster) { k.Keys = k.Keys[:2] }), "need at least 3"},
		{"low-order key", mod(func(k *KeyRoster) { k.Keys[2].MaskKey = make([]byte, 32) }), "party 1: round ShareKeys"},
	} {
		_, err := p.ShareKeys(c.msg)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "party 1") {
			t.Errorf("%s: got %v, want error with %q", c.name, err, c.want)
		}
	}
	ms.share(t, nil)
	rel := ms.relays[1]
	modRel := func(f func(*ShareRelay)) *ShareRelay {
		c := *rel
		c.Shares = slices.Clone(rel.Shares)
		for i := range c.Shares {
			c.Shares[i].Ciphertext = bytes.Clone(c.Shares[i].Ciphertext)
		}
		f(&c)
		return &c
	}
	for _, c := range []struct {
		name string
		msg  *ShareRelay
		want string
	}{
		{"other recipient", modRel(func(s *ShareRelay) { s.To = 2 }), "addressed to party 2"},
		{"tampered ciphertext", modRel(func(s *ShareRelay) { s.Shares[0].Ciphertext[5] ^= 1 }), "authentication"},
		{"swapped sender", modRel(func(s *ShareRelay) { s.Shares[0].From, s.Shares[1].From = s.Shares[1].From, s.Shares[0].From }), "party"},
		{"replayed share", modRel(func(s *ShareRelay) { s.Shares[1] = s.Shares[0] }), "repeat"},
		{"short", modRel(func(s *ShareRelay) { s.Shares[2].Ciphertext = s.Shares[2].Ciphertext[:5] }), "5 bytes"},
		{"too few", modRel(func(s *ShareRelay) { s.Shares = s.Shares[:1] }), "need at least 3"},
		{"from self", modRel(func(s *ShareRelay) { s.Shares[0].From = 1 }), "not a peer"},
	} {
		if _, err := p.MaskInput(c.msg); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "round MaskedInputCollection") {
			t.Errorf("%s: got %v, want error with %q", c.name, err, c.want)
		}
	}
	ms.mask(t, nil)
	req := ms.reqs[1]
	for _, c := range []struct {
		name string
		msg  *UnmaskRequest
		want string
	}{
		{"missing party", &UnmaskRequest{Session: cfg.Session, To: 1, Survivors: []uint32{1, 2, 3}}, "exactly U2"},
		{"unknown party", &UnmaskRequest{Session: cfg.Session, To: 1, Survivors: []uint32{1, 2, 3, 4}, Dropped: []uint32{9}}, "exactly U2"},
		{"self dropped", &UnmaskRequest{Session: cfg.Session, To: 1, Survivors: []uint32{2, 3, 4}, Dropped: []uint32{1}}, "survivor"},
		{"too few survivors", &UnmaskRequest{Session: cfg.Session, To: 1, Survivors: []uint32{1, 2}, Dropped: []uint32{3, 4}}, "need at least 3"},
		{"unsorted", &UnmaskRequest{Session: cfg.Session, To: 1, Survivors: []uint32{2, 1, 3, 4}}, "sorted"},
		{"other session", &UnmaskRequest{Session: make([]byte, 32), To: 1, Survivors: []uint32{1, 2, 3, 4}}, "another session"},
		{"other recipient", &UnmaskRequest{Session: cfg.Session, To: 3, Survivors: []uint32{1, 2, 3, 4}}, "addressed to party 3"},
	} {
		if _, err := p.Unmask(c.msg); err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "party 1") {
			t.Errorf("%s: got %v, want error with %q", c.name, err, c.want)
		}
	}
	if _, err := p.Unmask(req); err != nil {
		t.Fatalf("genuine request after rejections: %v", err)
	}
	if _, err := p.Unmask(req); err == nil {
		t.Fatal("second unmask request answered")
	}
}

// The messages carry exactly the documented fields (the server's view is
// what the protocol says): a new field must be added here deliberately.
func TestMessageFieldsAreTheDocumentedOnes(t *testing.T) {
	want := map[reflect.Type]string{
		reflect.TypeFor[AdvertiseKeys]():  "Session From EncKey MaskKey",
		reflect.TypeFor[KeyRoster]():      "Session Keys",
		reflect.TypeFor[EncryptedShare](): "From To Ciphertext",
		reflect.TypeFor[ShareKeys]():      "Session From Shares",
		reflect.TypeFor[ShareRelay]():     "Session To Shares",
		reflect.TypeFor[MaskedInput]():    "Session From Masked",
		reflect.TypeFor[UnmaskRequest]():  "Session To Survivors Dropped",
		reflect.TypeFor[RevealedShare]():  "Owner Y",
		reflect.TypeFor[UnmaskResponse](): "Session From SelfMaskShares MaskKeyShares",
	}
	for typ, fields := range want {
		var got []string
		for i := range typ.NumField() {
			f := typ.Field(i)
			got = append(got, f.Name)
			switch f.Type.Kind() {
			case reflect.Uint32, reflect.Slice:
			default:
				t.Errorf("%s.%s has kind %s: not a plain serialisable field", typ.Name(), f.Name, f.Type.Kind())
			}
		}
		if strings.Join(got, " ") != fields {
			t.Errorf("%s fields %v, want %s", typ.Name(), got, fields)
		}
	}
}
