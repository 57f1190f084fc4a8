package secagg

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	mrand "math/rand/v2"
	"strings"
	"testing"
)

// What the server learns is what the protocol says: after a session with a
// dropout it holds the survivors' self-mask seeds and the dropped party's
// mask key, and yet (a) a survivor's masked input minus its self mask is
// still hidden by pairwise masks, and (b) a dropped party's late masked
// input is refused, so the server never holds both masks of one party.
func TestServerCannotUnmaskAnIndividual(t *testing.T) {
	cfg := testConfig(t, 5, 3, 64, false)
	ms := newManual(t, cfg, 21)
	ms.advertise(t)
	ms.share(t, nil)
	ms.mask(t, map[uint32]bool{5: true})
	late, err := ms.parties[5].MaskInput(ms.relays[5])
	if err != nil {
		t.Fatal(err)
	}
	if err := ms.srv.Receive(late); err == nil || !strings.Contains(err.Error(), "party 5") {
		t.Fatalf("late masked input of dropped party 5: %v", err)
	}
	for _, id := range []uint32{1, 2, 3, 4} {
		resp, err := ms.parties[id].Unmask(ms.reqs[id])
		if err != nil {
			t.Fatal(err)
		}
		if err := ms.srv.Receive(resp); err != nil {
			t.Fatal(err)
		}
	}
	// Reconstruct what the server can: b_1 from the revealed shares.
	holders := []uint32{1, 2, 3}
	in, _ := newInterpolator(holders)
	var ys [][]byte
	for _, h := range holders {
		ys = append(ys, ms.srv.unmask[h].SelfMaskShares[0].Y) // owner 1
	}
	b1, err := in.reconstruct(ys)
	if err != nil {
		t.Fatal(err)
	}
	key, _ := deriveKey(b1, cfg.Session, infoSelfMask, 1)
	st, _ := newMaskStream(key, -1, 0)
	y1 := append([]uint64(nil), ms.masked[1].Masked...)
	applyMasks(y1, []maskStream{st})
	same := 0
	for i := range y1 {
		if y1[i] == ms.inputs[1][i] {
			same++
		}
	}
	if same > 0 {
		t.Fatalf("y_1 − PRG(b_1) equals x_1 in %d of %d words: pairwise masks missing", same, len(y1))
	}
	res, err := ms.srv.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := equalWords(res.Sum, plainSum(ms.inputs, []uint32{1, 2, 3, 4}, cfg.VectorLen)); err != nil {
		t.Fatal(err)
	}
}

func TestRunLogsRounds(t *testing.T) {
	cfg := testConfig(t, 4, 3, 2, false)
	var buf bytes.Buffer
	_, err := Run(context.Background(), cfg, single(randomInputs(cfg, mrand.New(mrand.NewPCG(1, 1)))), RunOptions{
		Drop:   map[uint32]Round{4: RoundShareKeys},
		Logger: slog.New(slog.NewJSONHandler(&buf, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	type record struct {
		Level, Msg, Round  string
		Expected, Received int
		Missing            []uint32
	}
	var got []record
	for line := range strings.Lines(buf.String()) {
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		got = append(got, r)
	}
	want := []record{
		{"INFO", "secagg: round closed", "AdvertiseKeys", 4, 4, []uint32{}},
		{"INFO", "secagg: round closed", "ShareKeys", 4, 3, []uint32{4}},
		{"INFO", "secagg: round closed", "MaskedInputCollection", 3, 3, []uint32{}},
		{"INFO", "secagg: round closed", "Unmasking", 3, 3, []uint32{}},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("log:\n%s\nparsed %v\nwant   %v", buf.String(), got, want)
	}
}

// ExampleServer drives the state machines by hand, as a network transport
// does: each party message goes to Server.Receive, each Close returns the
// messages to deliver to the parties.
func ExampleServer() {
	cfg := Config{Session: []byte("fresh random session id!"), Parties: []uint32{1, 2, 3}, Threshold: 2, VectorLen: 2}
	srv, _ := NewServer(cfg)
	parties := map[uint32]*Party{}
	for _, id := range cfg.Parties {
		parties[id], _ = NewParty(cfg, id, NewInput([]uint64{uint64(id), 10}))
		m, _ := parties[id].AdvertiseKeys()
		srv.Receive(m)
	}
	roster, _ := srv.CloseAdvertiseKeys()
	for _, id := range cfg.Parties {
		m, _ := parties[id].ShareKeys(roster)
		srv.Receive(m)
	}
	relays, _ := srv.CloseShareKeys()
	for _, rel := range relays {
		if rel.To == 2 {
			continue // party 2 drops before sending its masked input
		}
		m, _ := parties[rel.To].MaskInput(rel)
		srv.Receive(m)
	}
	fmt.Println("pending before close:", srv.Pending())
	reqs, _ := srv.CloseMaskedInput()
	for _, req := range reqs {
		m, err := parties[req.To].Unmask(req)
		if err != nil {
			panic(err)
		}
		srv.Receive(m)
	}
	res, err := srv.Finish(context.Background())
	if err != nil {
		panic(err)
	}
	fmt.Println("included:", res.Included, "sum:", res.Sum)
	// Output:
	// pending before close: [2]
	// included: [1 3] sum: [4 20]
}
