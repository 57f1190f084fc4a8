package secagg

import (
	"crypto/ecdh"
	"crypto/rand"
	"encoding/binary"
	"testing"
)

// A documented limitation of this package on its own, demonstrated (see
// "Threat model" in the package documentation): without signatures on the
// advertised keys, a malicious server that sends one party a roster with its
// own keys in place of every peer's reads that party's input, even with
// t = n. Package capefm signs and verifies the advertised keys around this
// package; its TestKeySubstitutionRefused shows the same substitution (and
// forged, re-signed and replayed advertisements) refused there.
func TestKeySubstitutionReadsAnInput(t *testing.T) {
	cfg := testConfig(t, 4, 4, 16, false) // t = n: the hardest case for the attack
	ms := newManual(t, cfg, 99)
	const u = 1
	adv := map[uint32]*AdvertiseKeys{}
	for _, id := range cfg.Parties {
		m, err := ms.parties[id].AdvertiseKeys()
		if err != nil {
			t.Fatal(err)
		}
		adv[id] = m
	}
	// u's roster: its own keys, and the server's keys for every peer.
	fakeEnc, fakeMask := map[uint32]*ecdh.PrivateKey{}, map[uint32]*ecdh.PrivateKey{}
	roster := &KeyRoster{Session: cfg.Session}
	for _, v := range cfg.Parties {
		k := *adv[v]
		if v != u {
			fakeEnc[v], _ = ecdh.X25519().GenerateKey(rand.Reader)
			fakeMask[v], _ = ecdh.X25519().GenerateKey(rand.Reader)
			k.EncKey, k.MaskKey = fakeEnc[v].PublicKey().Bytes(), fakeMask[v].PublicKey().Bytes()
		}
		roster.Keys = append(roster.Keys, k)
	}
	sk, err := ms.parties[u].ShareKeys(roster)
	if err != nil {
		t.Fatal(err)
	}
	uEnc, _ := ecdh.X25519().NewPublicKey(adv[u].EncKey)
	uMask, _ := ecdh.X25519().NewPublicKey(adv[u].MaskKey)
	var xs []uint32
	var bShares [][]byte
	relay := &ShareRelay{Session: cfg.Session, To: u}
	for _, e := range sk.Shares {
		v := e.To
		secret, _ := fakeEnc[v].ECDH(uEnc)
		in, _ := deriveKey(secret, cfg.Session, infoShareEnc, u, v)
		aead, _ := newAEAD(in)
		plain, err := aead.Open(nil, make([]byte, aead.NonceSize()), e.Ciphertext, shareAD(cfg.Session, u, v))
		if err != nil {
			t.Fatalf("server cannot open u's share for %d: %v", v, err)
		}
		xs = append(xs, v)
		bShares = append(bShares, plain[8+ShareLen:])
		// A share "from v" of the server's choosing, under the key u derives.
		out, _ := deriveKey(secret, cfg.Session, infoShareEnc, v, u)
		aead, _ = newAEAD(out)
		fake := binary.BigEndian.AppendUint32(nil, v)
		fake = binary.BigEndian.AppendUint32(fake, u)
		fake = append(fake, make([]byte, 2*ShareLen)...)
		relay.Shares = append(relay.Shares, EncryptedShare{From: v, To: u,
			Ciphertext: aead.Seal(nil, make([]byte, aead.NonceSize()), fake, shareAD(cfg.Session, v, u))})
	}
	y, err := ms.parties[u].MaskInput(relay)
	if err != nil {
		t.Fatalf("u refused the forged relay: %v", err)
	}
	// With t = n the server also needs u's own share of b_u, which u returns
	// to an ordinary unmasking request.
	resp, err := ms.parties[u].Unmask(&UnmaskRequest{Session: cfg.Session, To: u, Survivors: cfg.Parties})
	if err != nil {
		t.Fatal(err)
	}
	xs = append(xs, u)
	bShares = append(bShares, resp.SelfMaskShares[0].Y)
	interp, _ := newInterpolator(xs)
	bu, err := interp.reconstruct(bShares)
	if err != nil {
		t.Fatal(err)
	}
	selfKey, _ := deriveKey(bu, cfg.Session, infoSelfMask, u)
	st, _ := newMaskStream(selfKey, -1, 0)
	streams := []maskStream{st}
	for _, v := range cfg.Parties[1:] {
		secret, _ := fakeMask[v].ECDH(uMask)
		key, _ := deriveKey(secret, cfg.Session, infoPairMask, min(u, v), max(u, v))
		st, _ := newMaskStream(key, -1, 0) // u < v: y_u holds +PRG(s_uv)
		streams = append(streams, st)
	}
	x := append([]uint64(nil), y.Masked...)
	applyMasks(x, streams)
	if err := equalWords(x, ms.inputs[u]); err != nil {
		t.Fatalf("key substitution did not recover x_u: %v", err)
	}
}
