package capefm

import (
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/dplearn/dplearn/regress"
)

// goldenWire is the SHA-256 of the encodings of capeFM messages built from
// fixed inputs (every type whose content a test can fix without a run's
// fresh keys) and of Params.MarshalBinary and Params.Hash of fixed
// parameters for each mechanism. A changed digest means the wire format or
// the parameters' hash changed: explain it in the commit that updates the
// constant (and bump the version if old peers would misread it).
// Regenerate with `go test ./capefm -run TestGoldenWire -v`, which prints
// the new digest.
const goldenWire = "14c089fbac89e64aedf946f0f4e382a79dd9d6abca18e3a8fe41d68cbb92f66a"

// TestGoldenWire checks that encodings and Params.Hash are unchanged (one
// digest over many outputs, as crypto/mlkem's TestAccumulated).
func TestGoldenWire(t *testing.T) {
	h := sha256.New()
	roster := []SiteInfo{{Name: "site-1", ID: 1, N: 300}, {Name: "site-2", ID: 2, N: 250}, {Name: "site-3", ID: 3, N: 410}}
	var msgs []Message
	for i, mech := range []Mechanism{CapeFM, GaussianFMLocal, FMLocal, ObjPertLocal, NoisyGDLocal} {
		kind := regress.Linear
		if i%2 == 1 {
			kind = regress.Logistic
		}
		p := Params{Session: [32]byte{byte(i + 1)}, Attempt: uint32(i + 1), Mechanism: mech, Kind: kind, Schema: testSchema, D: 4,
			Epsilon: 1, Delta: 1e-6, Split: 0.5, Sites: roster, Colluders: 1, MinSites: 2}
		if mech == CapeFM {
			p.Tau, p.NoiseRatio = 0.05, 1
		}
		b, err := p.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		h.Write(b)
		ph, err := p.Hash()
		if err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		h.Write(ph[:])
		msgs = append(msgs, &Offer{Params: p})
	}
	// A person-level capeFM offer (version 4: unit and K in Params).
	up := Params{Session: [32]byte{7}, Attempt: 1, Mechanism: CapeFM, Kind: regress.Linear, Schema: testSchema, D: 4,
		Epsilon: 1, Delta: 1e-6, Split: 0.5, Sites: roster, Colluders: 1, MinSites: 2, Tau: 0.05, NoiseRatio: 1, Unit: "pid", MaxRows: 3}
	uh, err := up.Hash()
	if err != nil {
		t.Fatal(err)
	}
	h.Write(uh[:])
	msgs = append(msgs, &Offer{Params: up, Declaration: []byte(`{"target":{"name":"y"}}`)},
		&Announce{Name: "site-3", N: 12, Schema: testSchema, Unit: "pid", MaxRows: 3, Declaration: []byte(`{"target":{"name":"y"}}`)})
	msgs = append(msgs,
		&Refuse{Session: [32]byte{1}, From: 2, Name: "site-2", Reason: "parameter epsilon"},
		&Release{Session: [32]byte{1}, From: 2, Values: []float64{0.5, -1}},
		&SumBroadcast{Session: [32]byte{1}, Included: []uint32{1, 2}},
		&Announce{Name: "site-2", N: 30, Schema: testSchema, Secure: true},
		&Outcome{Session: [32]byte{1}, OK: true, Text: "model published: (1, 1e-05)-DP per site"},
		&Outcome{Text: "refusé: schéma différent"},
	)
	for _, m := range msgs {
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: %v", m.Type(), err)
		}
		h.Write(b)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != goldenWire {
		t.Errorf("capeFM encodings changed: digest %s, want %s (see goldenWire: explain the change in the commit)", got, goldenWire)
	}
}
