package capefm

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/dplearn/dplearn/secagg"
)

// goldenWireMore is the SHA-256 of the encodings of the capeFM messages
// that TestGoldenWire leaves out, built from fixed inputs: Hello, Agreed,
// and a SecAgg carrier of every secure-aggregation message (the keys,
// shares and ciphertexts are fixed bytes standing for a run's fresh ones;
// the encoding does not look inside them), signed and unsigned. With
// TestGoldenWire it covers every capeFM message type. A changed digest
// means the wire format changed: explain it in the commit that updates the
// constant (and bump the version if old peers would misread it).
// Regenerate with `go test ./capefm -run TestGoldenWireMore -v`.
const goldenWireMore = "88843ce93e6c12ea4d9ad1757fd523387e7aeb4a31c3b8ed86bf239f5391bf90"

// TestGoldenWireMore checks the encodings of Hello, Agreed and SecAgg (one
// digest, as TestGoldenWire), and that each decodes back to the same bytes.
func TestGoldenWireMore(t *testing.T) {
	sess := [32]byte{7, 7, 7}
	key := func(b byte) []byte { return bytes.Repeat([]byte{b}, secagg.X25519KeyLen) }
	share := func(b byte) []byte { return bytes.Repeat([]byte{b}, secagg.ShareLen) }
	adv := secagg.AdvertiseKeys{Session: sess[:], From: 2, EncKey: key(0x11), MaskKey: key(0x22)}
	adv3 := secagg.AdvertiseKeys{Session: sess[:], From: 3, EncKey: key(0x33), MaskKey: key(0x44)}
	ct := bytes.Repeat([]byte{0x5a}, secagg.ShareCiphertextLen)
	auth := []KeyAuth{{Cert: []byte{0x30, 0x82, 1}, Sig: []byte{0x30, 0x44, 2}}}
	msgs := []Message{
		&Hello{Session: sess, From: 2, Name: "site-2", Schema: testSchema, N: 250, ParamsHash: [32]byte{9}, Secure: true},
		&Hello{Session: sess, From: 3, Name: "site-3", Schema: testSchema, N: 0, ParamsHash: [32]byte{9}},
		&Agreed{Session: sess, ParamsHash: [32]byte{9}, Sites: []uint32{1, 2, 3}},
		&SecAgg{Msg: &adv},
		&SecAgg{Msg: &adv, Auth: auth},
		&SecAgg{Msg: &secagg.KeyRoster{Session: sess[:], Keys: []secagg.AdvertiseKeys{adv, adv3}}, Auth: append(auth, KeyAuth{})},
		&SecAgg{Msg: &secagg.ShareKeys{Session: sess[:], From: 2, Shares: []secagg.EncryptedShare{{From: 2, To: 3, Ciphertext: ct}}}},
		&SecAgg{Msg: &secagg.ShareRelay{Session: sess[:], To: 3, Shares: []secagg.EncryptedShare{{From: 2, To: 3, Ciphertext: ct}}}},
		&SecAgg{Msg: &secagg.MaskedInput{Session: sess[:], From: 2, Masked: []uint64{1, 1 << 63, 42}}},
		&SecAgg{Msg: &secagg.UnmaskRequest{Session: sess[:], To: 2, Survivors: []uint32{2, 3}, Dropped: []uint32{1}}},
		&SecAgg{Msg: &secagg.UnmaskResponse{Session: sess[:], From: 2, SelfMaskShares: []secagg.RevealedShare{{Owner: 3, Y: share(0x66)}},
			MaskKeyShares: []secagg.RevealedShare{{Owner: 1, Y: share(0x77)}}}},
	}
	h := sha256.New()
	for _, m := range msgs {
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("%s: %v", m.Type(), err)
		}
		h.Write(b)
		back, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("%s: decode: %v", m.Type(), err)
		}
		b2, err := back.MarshalBinary()
		if err != nil || !bytes.Equal(b, b2) {
			t.Errorf("%s: re-encoded differently (%v)", m.Type(), err)
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != goldenWireMore {
		t.Errorf("capeFM encodings changed: digest %s, want %s (see goldenWireMore: explain the change in the commit)", got, goldenWireMore)
	}
}
