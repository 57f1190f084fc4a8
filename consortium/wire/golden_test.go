package wire

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// goldenWire is the SHA-256 of the envelopes (type, a NUL, the JSON
// payload) of every consortium message type, built from fixed inputs: a
// fit and a DPPP task specification (the bytes an analyst signs), an
// offer, both answers, a capeFM carrier, a cancel, a budget report, an
// analyst's request and a reply. A changed digest means what the parties
// send each other changed (a field renamed, a tag dropped, an encoding of
// a number or a time): explain it in the commit that updates the constant;
// old nodes and analysts would misread it. Regenerate with
// `go test ./consortium/wire -run TestGoldenWire -v`, which prints the new
// digest.
const goldenWire = "a20220113dcba02912e1d0179d51eeeab1fca459483effc2acda710bb1ddae54"

// goldenMessages are the fixed messages of TestGoldenWire, by envelope type.
func goldenMessages(t *testing.T) []struct {
	typ string
	v   any
} {
	at := time.Date(2026, 11, 27, 9, 30, 0, 123456789, time.UTC)
	fitSpec := TaskSpec{Sites: map[string]string{"site-a": "cohort", "site-b": "cohort", "site-c": "registry"},
		Model: "linear", Mechanism: "capefm", Epsilon: 0.8, Delta: 1e-6, Split: 0.5, NoiseRatio: 1, Colluders: 1, MinSites: 2,
		Schema:   json.RawMessage(`{"target":{"name":"wage","range":[4,9]},"features":[{"name":"education","range":[0,20]}]}`),
		Deadline: at, RedoAfterRelease: true, Nonce: "n-0001"}
	dpppSpec := TaskSpec{Kind: KindDPPP, Deployment: "triage", Rows: [][]float64{{0.25, -1, 3e-9}, {1, 2, 0}},
		Sites: map[string]string{"teacher1": "triage", "teacher2": "triage"}, Epsilon: 0.1, Delta: 1e-7, MinSites: 2, Schema: json.RawMessage("null"), Deadline: at, Nonce: "n-0002"}
	var specs [2][]byte
	for i, s := range []TaskSpec{fitSpec, dpppSpec} {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		specs[i] = b
	}
	signed := Signed{Spec: specs[0], Cert: []byte{0x30, 0x82, 1, 2}, Sig: []byte{0x30, 0x45, 9}}
	body, _ := json.Marshal(map[string]any{"id": "t-7", "state": "done"})
	return []struct {
		typ string
		v   any
	}{
		{"spec", fitSpec},
		{"spec", dpppSpec},
		{TypeRegister, Register{Datasets: []Dataset{{Name: "cohort", Fingerprint: "sha256:ab12", N: 6000},
			{Name: "triage", Fingerprint: "cd34", Kind: "model", Classes: 3, Features: 5, ClassNames: []string{"low", "mid", "high"}}}}},
		{TypeOffer, Offer{Task: "t-7", Analyst: "alice", Dataset: "cohort", Signed: signed}},
		{TypeAnswer, Answer{Task: "t-7", Accept: true}},
		{TypeAnswer, Answer{Task: "t-8", Rule: "max-epsilon", Reason: "ε = 0.8 per task exceeds analyst \"bob\"'s maximum 0.5"}},
		{TypeCape, Cape{Task: "t-7", Round: 3, Type: "release", Payload: []byte{0, 1, 2, 0xff}}},
		{TypeCancel, Cancel{Task: "t-7", Reason: "analyst cancelled"}},
		{TypeBudget, BudgetReport{Ledgers: []LedgerState{{Kind: "analyst", Name: "alice", BudgetEpsilon: 5, BudgetDelta: 1e-5,
			SpentEpsilon: 0.8, SpentDelta: 1e-6, Charges: 1}, {Kind: "dataset", Name: "cohort", BudgetEpsilon: 10, BudgetDelta: 1e-4}}, Time: at}},
		{TypeRequest, Request{ID: 42, Op: "submit", Signed: &signed}},
		{TypeRequest, Request{ID: 43, Op: "status", Task: "t-7"}},
		{TypeReply, Reply{ID: 43, Body: body}},
		{TypeReply, Reply{ID: 44, Error: "no such task"}},
	}
}

// TestGoldenWire checks that the consortium's encodings are unchanged (one
// digest over many outputs, as crypto/mlkem's TestAccumulated), and that
// each message decodes back to itself.
func TestGoldenWire(t *testing.T) {
	h := sha256.New()
	for _, m := range goldenMessages(t) {
		env, err := Encode(m.typ, m.v)
		if err != nil {
			t.Fatalf("%s: %v", m.typ, err)
		}
		h.Write([]byte(env.Type + "\x00"))
		h.Write(env.Payload)
		back := reflect.New(reflect.TypeOf(m.v))
		if err := Decode(env, back.Interface()); err != nil {
			t.Fatalf("%s: %v", m.typ, err)
		}
		if !reflect.DeepEqual(back.Elem().Interface(), m.v) {
			t.Errorf("%s: decoded %+v, sent %+v", m.typ, back.Elem().Interface(), m.v)
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != goldenWire {
		t.Errorf("consortium encodings changed: digest %s, want %s (see goldenWire: explain the change in the commit)", got, goldenWire)
	}
}
