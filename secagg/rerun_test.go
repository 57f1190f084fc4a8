package secagg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The rerun attack and its refusal. A session with MinSurvivors = n (as CAPE
// uses) aborts in Unmasking because party 5 does not answer; the server's
// view nevertheless holds t unmasking responses, enough to compute Σ over all
// five inputs. Had the parties rerun the same inputs over {1,2,3,4}, the
// difference of the two sums would be x_5 (shown with fresh copies of the
// words, i.e. what an implementation without the rule would send). With the
// rule, every party's Input is spent: a party for the new session refuses it
// at NewParty, and a party created for the new session before the old one
// masked refuses at MaskInput.
func TestRerunAfterAbortedUnmaskingIsRefused(t *testing.T) {
	cfg := testConfig(t, 5, 3, 32, false)
	cfg.MinSurvivors = 5
	ms := newManual(t, cfg, 77)

	// A party for a second session, created before the first session masks:
	// the Input is not spent yet, so NewParty accepts it...
	early := testConfig(t, 5, 3, 32, false)
	early.Parties = []uint32{1, 2, 3, 4, 6}
	earlyMS := &manualSession{cfg: early, parties: map[uint32]*Party{}, relays: map[uint32]*ShareRelay{},
		reqs: map[uint32]*UnmaskRequest{}, masked: map[uint32]*MaskedInput{}}
	var err error
	if earlyMS.srv, err = NewServer(early); err != nil {
		t.Fatal(err)
	}
	for _, id := range early.Parties {
		in := NewInput(make([]uint64, 32))
		if id == 1 {
			in = ms.ins[1] // the same Input as party 1 of the first session
		}
		if earlyMS.parties[id], err = NewParty(early, id, in); err != nil {
			t.Fatal(err)
		}
	}
	earlyMS.advertise(t)
	earlyMS.share(t, nil)

	var view []Message // what the server received in the first session
	recv := func(m Message) {
		t.Helper()
		view = append(view, m)
		if err := ms.srv.Receive(m); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range cfg.Parties {
		m, err := ms.parties[id].AdvertiseKeys()
		if err != nil {
			t.Fatal(err)
		}
		recv(m)
	}
	if ms.roster, err = ms.srv.CloseAdvertiseKeys(); err != nil {
		t.Fatal(err)
	}
	for _, id := range cfg.Parties {
		m, err := ms.parties[id].ShareKeys(ms.roster)
		if err != nil {
			t.Fatal(err)
		}
		recv(m)
	}
	rels, err := ms.srv.CloseShareKeys()
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range rels {
		m, err := ms.parties[rel.To].MaskInput(rel)
		if err != nil {
			t.Fatal(err)
		}
		recv(m)
	}
	reqs, err := ms.srv.CloseMaskedInput()
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range reqs {
		if req.To == 5 {
			continue // party 5 never answers the unmasking request
		}
		m, err := ms.parties[req.To].Unmask(req)
		if err != nil {
			t.Fatal(err)
		}
		recv(m)
	}
	var ab *AbortError
	if _, err := ms.srv.Finish(context.Background()); !errors.As(err, &ab) || ab.Round != RoundUnmasking {
		t.Fatalf("first session: got %v, want an abort in Unmasking", err)
	}

	// The aborted session's view already determines Σ_{1..5} x.
	curious := cfg
	curious.MinSurvivors = 0
	shadow, err := NewServer(curious)
	if err != nil {
		t.Fatal(err)
	}
	closeRound := map[Round]func() error{
		RoundAdvertiseKeys: func() error { _, err := shadow.CloseAdvertiseKeys(); return err },
		RoundShareKeys:     func() error { _, err := shadow.CloseShareKeys(); return err },
		RoundMaskedInput:   func() error { _, err := shadow.CloseMaskedInput(); return err },
	}
	for _, m := range view {
		if m.MessageRound() != shadow.Round() {
			if err := closeRound[shadow.Round()](); err != nil {
				t.Fatal(err)
			}
		}
		if err := shadow.Receive(m); err != nil {
			t.Fatal(err)
		}
	}
	res1, err := shadow.Finish(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := equalWords(res1.Sum, plainSum(ms.inputs, cfg.Parties, 32)); err != nil {
		t.Fatalf("the aborted session's view does not give the full sum: %v", err)
	}

	// What a rerun with the same words over {1,2,3,4} would give away.
	cfg2 := testConfig(t, 4, 3, 32, false)
	res2, err := Run(context.Background(), cfg2, single(ms.inputs), RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	diff := slices.Clone(res1.Sum)
	for i := range diff {
		diff[i] -= res2.Sum[i]
	}
	if err := equalWords(diff, ms.inputs[5]); err != nil {
		t.Fatalf("difference of the two sums is not x_5: %v", err)
	}

	// The rule: the spent Inputs are refused for the new session...
	for _, id := range cfg2.Parties {
		_, err := NewParty(cfg2, id, ms.ins[id])
		if !errors.Is(err, ErrInputSpent) || !strings.Contains(err.Error(), fmt.Sprintf("%x", cfg.Session)) {
			t.Fatalf("party %d reusing its input: got %v, want ErrInputSpent naming the first session", id, err)
		}
		if !bytes.Equal(ms.ins[id].SpentIn(), cfg.Session) {
			t.Fatalf("party %d: input spent in %x, want %x", id, ms.ins[id].SpentIn(), cfg.Session)
		}
	}
	// ...by the party created before it was spent, which sends nothing...
	if m, err := earlyMS.parties[1].MaskInput(earlyMS.relays[1]); !errors.Is(err, ErrInputSpent) || m != nil {
		t.Fatalf("early party of the second session: got %v, %v, want ErrInputSpent", m, err)
	}
	// ...and by the first session's parties themselves (bound to their session).
	req2 := &UnmaskRequest{Session: early.Session, To: 5, Survivors: []uint32{1, 2, 3, 4, 5}}
	if _, err := ms.parties[5].Unmask(req2); err == nil || !strings.Contains(err.Error(), "another session") {
		t.Fatalf("party 5 of the aborted session answered a request of another session: %v", err)
	}
}

// An Input whose session aborted before the masked input was sent has not
// left the party and may be used in a new session.
func TestInputUnspentBeforeMaskedInput(t *testing.T) {
	cfg := testConfig(t, 4, 3, 8, false)
	ms := newManual(t, cfg, 5)
	ms.advertise(t)
	ms.share(t, nil) // the session then aborts: nobody masks
	if ms.ins[1].SpentIn() != nil {
		t.Fatal("input spent before MaskInput")
	}
	cfg2 := testConfig(t, 4, 3, 8, false)
	ins := single(ms.inputs)
	ins[1] = ms.ins[1]
	res, err := Run(context.Background(), cfg2, ins, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := equalWords(res.Sum, plainSum(ms.inputs, cfg.Parties, 8)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ms.ins[1].SpentIn(), cfg2.Session) {
		t.Fatal("input not marked as spent in the second session")
	}
	if _, err := Run(context.Background(), cfg2, ins, RunOptions{}); !errors.Is(err, ErrInputSpent) {
		t.Fatalf("Run again with the same inputs: got %v, want ErrInputSpent", err)
	}
}

// A server that lies about the dropout set, telling some parties that party
// v survived (to collect shares of b_v) and the others that v dropped (to
// collect shares of s_v^SK), cannot reach t shares of both: each honest party
// answers one request and reveals one kind of share of v, v itself refuses to
// be listed as dropped, and t > n/2. Exhaustive over every split of the
// other parties, n = 5, t = 3, no colluders.
func TestInconsistentDropoutSetsCannotUnmask(t *testing.T) {
	const v = 5
	others := []uint32{1, 2, 3, 4}
	for mask := 0; mask < 1<<len(others); mask++ {
		cfg := testConfig(t, 5, 3, 2, false)
		ms := newManual(t, cfg, uint64(mask))
		ms.advertise(t)
		ms.share(t, nil)
		ms.mask(t, nil)
		selfShares, keyShares := 0, 0
		for i, id := range others {
			req := &UnmaskRequest{Session: cfg.Session, To: id, Survivors: []uint32{1, 2, 3, 4, 5}}
			if mask>>i&1 == 1 { // tell id that v dropped
				req.Survivors, req.Dropped = []uint32{1, 2, 3, 4}, []uint32{v}
			}
			resp, err := ms.parties[id].Unmask(req)
			if err != nil {
				t.Fatalf("split %04b: party %d: %v", mask, id, err)
			}
			for _, sh := range resp.SelfMaskShares {
				selfShares += b2i(sh.Owner == v)
			}
			for _, sh := range resp.MaskKeyShares {
				keyShares += b2i(sh.Owner == v)
			}
		}
		lie := &UnmaskRequest{Session: cfg.Session, To: v, Survivors: []uint32{1, 2, 3, 4}, Dropped: []uint32{v}}
		if _, err := ms.parties[v].Unmask(lie); err == nil {
			t.Fatalf("split %04b: party %d revealed its own mask-key share", mask, v)
		}
		if resp, err := ms.parties[v].Unmask(ms.reqs[v]); err == nil {
			selfShares += b2i(len(resp.SelfMaskShares) == 5)
		}
		if selfShares >= cfg.Threshold && keyShares >= cfg.Threshold {
			t.Fatalf("split %04b: server holds %d shares of b_%d and %d of s_%d^SK (t = %d)", mask, selfShares, v, keyShares, v, cfg.Threshold)
		}
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// The documented bound: the split-view attack above needs, with c colluding
// parties (which reveal both kinds), 2(t − c) ≤ n − c honest parties; it
// fails iff c < 2t − n. DefaultThreshold covers CAPE's S_C = ⌈n/3⌉ − 1.
func TestDefaultThresholdCoversSplitViewWithColluders(t *testing.T) {
	for n := 2; n <= 1000; n++ {
		tt := DefaultThreshold(n)
		maxC := 2*tt - n - 1 // largest c with c < 2t − n
		sc := (n+2)/3 - 1    // ⌈n/3⌉ − 1
		if maxC < sc {
			t.Fatalf("n = %d, t = %d: split view tolerates %d colluders, CAPE needs %d", n, tt, maxC, sc)
		}
		// The counting argument: for c ≤ maxC no two disjoint sets of
		// honest parties A, B have |A| + c ≥ t and |B| + c ≥ t, and at
		// c = maxC + 1 (if below t) they exist.
		for c := 0; c <= maxC; c++ {
			if 2*(tt-c) <= n-c {
				t.Fatalf("n = %d, t = %d, c = %d: split view succeeds", n, tt, c)
			}
		}
		if c := maxC + 1; c < tt && 2*(tt-c) > n-c {
			t.Fatalf("n = %d, t = %d: bound not tight at c = %d", n, tt, c)
		}
	}
}
