package secagg

import (
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

// Masks cancel: before any unmasking, Σ y_u − Σ PRG(b_u) = Σ x_u exactly,
// because every pairwise mask enters once with + and once with −.
func TestPairwiseMasksCancel(t *testing.T) {
	cfg := testConfig(t, 6, 4, 1000, true)
	ms := newManual(t, cfg, 1)
	ms.advertise(t)
	ms.share(t, nil)
	ms.mask(t, nil)
	sum := make([]uint64, cfg.VectorLen)
	for id, m := range ms.masked {
		if err := equalWords(m.Masked, ms.inputs[id]); err == nil {
			t.Fatalf("party %d's masked input equals its input", id)
		}
		for i, y := range m.Masked {
			sum[i] += y
		}
		key, err := deriveKey(ms.parties[id].selfSeed, cfg.Session, infoSelfMask, id)
		if err != nil {
			t.Fatal(err)
		}
		st, _ := newMaskStream(key, -1, 0)
		applyMasks(sum, []maskStream{st})
	}
	if err := equalWords(sum, plainSum(ms.inputs, cfg.Parties, cfg.VectorLen)); err != nil {
		t.Fatal(err)
	}
}

// The sum is exact for every survivor set of size ≥ t. Exhaustive over the
// dropout sets of n = 6, t = 4 (each dropped party leaving at a random
// round), then randomised over larger rosters.
func TestExactSumEverySurvivorSet(t *testing.T) {
	type trial struct {
		n, thr, L int
		drop      map[uint32]Round
	}
	rng := mrand.New(mrand.NewPCG(2017, 3))
	var trials []trial
	const n6 = 6
	for mask := 0; mask < 1<<n6; mask++ {
		drop := map[uint32]Round{}
		for i := 0; i < n6; i++ {
			if mask>>i&1 == 1 {
				drop[uint32(7*i+3)] = Round(rng.IntN(4))
			}
		}
		if len(drop) <= 2 {
			trials = append(trials, trial{n6, 4, 33, drop})
		}
	}
	extra := 40
	if testing.Short() {
		extra = 10
	}
	if os.Getenv("DPLEARN_LONG_TESTS") == "1" {
		extra = 400
	}
	for range extra {
		n := 5 + rng.IntN(12)
		thr := n/2 + 1 + rng.IntN(n-n/2)
		drop := map[uint32]Round{}
		for _, i := range rng.Perm(n)[:rng.IntN(n-thr+1)] {
			drop[uint32(7*i+3)] = Round(rng.IntN(4))
		}
		trials = append(trials, trial{n, thr, 1 + rng.IntN(3*maskChunk), drop})
	}
	for k, tr := range trials {
		cfg := testConfig(t, tr.n, tr.thr, tr.L, true)
		inputs := randomInputs(cfg, rng)
		res, err := Run(context.Background(), cfg, single(inputs), RunOptions{Drop: tr.drop, Workers: 1 + k%3})
		if err != nil {
			t.Fatalf("trial %d (n=%d t=%d drop=%v): %v", k, tr.n, tr.thr, tr.drop, err)
		}
		var want []uint32 // parties that sent a masked input
		for _, id := range cfg.Parties {
			if r, ok := tr.drop[id]; !ok || r > RoundMaskedInput {
				want = append(want, id)
			}
		}
		if !slices.Equal(res.Included, want) {
			t.Fatalf("trial %d: included %v, want %v", k, res.Included, want)
		}
		for r := RoundAdvertiseKeys; r <= RoundUnmasking; r++ {
			var ans []uint32 // parties still present when round r's message was due
			for _, id := range cfg.Parties {
				if d, ok := tr.drop[id]; !ok || d > r {
					ans = append(ans, id)
				}
			}
			if !slices.Equal(res.Answered[r], ans) {
				t.Fatalf("trial %d: round %s answered by %v, want %v", k, r, res.Answered[r], ans)
			}
		}
		if err := equalWords(res.Sum, plainSum(inputs, want, cfg.VectorLen)); err != nil {
			t.Fatalf("trial %d (n=%d t=%d drop=%v): sum: %v", k, tr.n, tr.thr, tr.drop, err)
		}
	}
}

func TestAbortWhenFewerThanThreshold(t *testing.T) {
	for _, r := range []Round{RoundAdvertiseKeys, RoundShareKeys, RoundMaskedInput, RoundUnmasking} {
		t.Run(r.String(), func(t *testing.T) {
			cfg := testConfig(t, 7, 5, 8, false)
			inputs := randomInputs(cfg, mrand.New(mrand.NewPCG(1, 2)))
			drop := map[uint32]Round{2: r, 5: r, 6: r}
			_, err := Run(context.Background(), cfg, single(inputs), RunOptions{Drop: drop})
			var ab *AbortError
			if !errors.As(err, &ab) {
				t.Fatalf("got %v, want *AbortError", err)
			}
			if ab.Round != r || ab.Have != 4 || ab.Need != 5 || !slices.Equal(ab.Missing, []uint32{2, 5, 6}) {
				t.Fatalf("abort %+v, want round %s, 4 of 5, missing [2 5 6]", ab, r)
			}
			for _, s := range []string{r.String(), "[2 5 6]", "need at least 5"} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not mention %q", err, s)
				}
			}
		})
	}
}

func TestAbortNamesEarlierDropouts(t *testing.T) {
	cfg := testConfig(t, 7, 5, 8, false)
	inputs := randomInputs(cfg, mrand.New(mrand.NewPCG(1, 5)))
	drop := map[uint32]Round{1: RoundShareKeys, 2: RoundShareKeys, 7: RoundUnmasking}
	_, err := Run(context.Background(), cfg, single(inputs), RunOptions{Drop: drop})
	var ab *AbortError
	if !errors.As(err, &ab) || ab.Round != RoundUnmasking || !slices.Equal(ab.Missing, []uint32{7}) || !slices.Equal(ab.Earlier, []uint32{1, 2}) {
		t.Fatalf("got %v", err)
	}
	if !strings.Contains(err.Error(), "lost in earlier rounds: [1 2]") {
		t.Fatalf("error %q does not name the earlier dropouts", err)
	}
}

func TestMinSurvivorsAndTimeout(t *testing.T) {
	cfg := testConfig(t, 5, 3, 4, false)
	cfg.MinSurvivors = 5
	inputs := randomInputs(cfg, mrand.New(mrand.NewPCG(1, 3)))
	// Honest parties answer within milliseconds; the timeout only has to be
	// long enough for them on a loaded machine, and it is waited out once,
	// in the round where party 4 stalls.
	start := time.Now()
	_, err := Run(context.Background(), cfg, single(inputs), RunOptions{Stall: map[uint32]Round{4: RoundMaskedInput}, RoundTimeout: time.Second})
	var ab *AbortError
	if !errors.As(err, &ab) || ab.Round != RoundMaskedInput || !slices.Equal(ab.Missing, []uint32{4}) || ab.Need != 5 {
		t.Fatalf("got %v, want abort in MaskedInputCollection missing [4] need 5", err)
	}
	if time.Since(start) > 10*time.Second {
		t.Fatalf("timeout not honoured")
	}
	// Cancelling the context stops the run.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, cfg, single(inputs), RunOptions{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: %v", err)
	}
}

func TestPartyRefusesBothShares(t *testing.T) {
	cfg := testConfig(t, 5, 3, 4, false)
	ms := newManual(t, cfg, 3)
	ms.advertise(t)
	ms.share(t, nil)
	ms.mask(t, map[uint32]bool{5: true}) // party 5 drops before its masked input
	p := ms.parties[1]
	req := ms.reqs[1]
	if !slices.Equal(req.Dropped, []uint32{5}) {
		t.Fatalf("dropped %v", req.Dropped)
	}
	bad := *req
	bad.Dropped = []uint32{3, 5} // 3 is also a survivor
	if _, err := p.Unmask(&bad); !errors.Is(err, ErrBothShares) || !strings.Contains(err.Error(), "party 3") {
		t.Fatalf("both shares of party 3: got %v", err)
	}
	if _, err := p.Unmask(req); err != nil {
		t.Fatalf("honest request refused: %v", err)
	}
	// A second request flipping party 5 to a survivor asks for b_5 after
	// s_5's share was revealed.
	second := &UnmaskRequest{Session: cfg.Session, To: 1, Survivors: []uint32{1, 2, 3, 4, 5}}
	if _, err := p.Unmask(second); !errors.Is(err, ErrBothShares) || !strings.Contains(err.Error(), "party 5") {
		t.Fatalf("second request: got %v", err)
	}
	// And the reverse: asking for the key share of a survivor.
	third := &UnmaskRequest{Session: cfg.Session, To: 1, Survivors: []uint32{1, 2, 4}, Dropped: []uint32{3, 5}}
	if _, err := p.Unmask(third); !errors.Is(err, ErrBothShares) {
		t.Fatalf("third request: got %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	good := Config{Session: make([]byte, 32), Parties: []uint32{1, 2, 3}, Threshold: 2, VectorLen: 4}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"short session", func(c *Config) { c.Session = c.Session[:8] }, "session"},
		{"one party", func(c *Config) { c.Parties = []uint32{1} }, "parties"},
		{"id 0", func(c *Config) { c.Parties = []uint32{0, 1, 2} }, "ID 0"},
		{"dup id", func(c *Config) { c.Parties = []uint32{1, 2, 2} }, "duplicate"},
		{"t ≤ n/2", func(c *Config) { c.Threshold = 1 }, "threshold"},
		{"t > n", func(c *Config) { c.Threshold = 4 }, "threshold"},
		{"min < t", func(c *Config) { c.MinSurvivors = 1 }, "minimum"},
		{"L = 0", func(c *Config) { c.VectorLen = 0 }, "vector length"},
	} {
		c := good
		c.Parties = slices.Clone(good.Parties)
		tc.mod(&c)
		if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want error mentioning %q", tc.name, err, tc.want)
		}
	}
	for n := 2; n < 200; n++ {
		tt := DefaultThreshold(n)
		if tt <= n/2 || tt > n {
			t.Fatalf("DefaultThreshold(%d) = %d", n, tt)
		}
	}
}

func ExampleRun() {
	ids := []uint32{1, 2, 3, 4, 5}
	cfg := Config{
		Session:   []byte("example session id, use crypto/rand"),
		Parties:   ids,
		Threshold: DefaultThreshold(len(ids)), // 4
		VectorLen: 3,
	}
	enc := Encoding{FracBits: 20, Bound: 100, Parties: len(ids)}
	inputs := map[uint32]*Input{}
	for _, id := range ids {
		x, err := enc.Encode([]float64{float64(id), -0.5, 1e-3})
		if err != nil {
			panic(err)
		}
		inputs[id] = NewInput(x) // single use: a rerun needs fresh inputs
	}
	// Party 3 disconnects before sending its masked input.
	res, err := Run(context.Background(), cfg, inputs, RunOptions{Drop: map[uint32]Round{3: RoundMaskedInput}})
	if err != nil {
		panic(err)
	}
	fmt.Println("included:", res.Included)
	fmt.Printf("sum: %.4f\n", enc.Decode(res.Sum))
	// Output:
	// included: [1 2 4 5]
	// sum: [12.0000 -2.0000 0.0040]
}

// Property: whatever sequence of unmasking requests a server sends, a party
// answers at most one, and over all its answers never reveals both kinds of
// share for the same owner.
func TestSafetyRuleUnderRandomRequests(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(42, 42))
	trials := 60
	if testing.Short() {
		trials = 15
	}
	subset := func() []uint32 {
		var s []uint32
		for id := uint32(1); id <= 6; id++ {
			if rng.IntN(2) == 0 {
				s = append(s, id)
			}
		}
		return s
	}
	for trial := range trials {
		cfg := testConfig(t, 5, 3, 2, false)
		ms := newManual(t, cfg, uint64(trial))
		ms.advertise(t)
		ms.share(t, nil)
		ms.mask(t, map[uint32]bool{uint32(1 + rng.IntN(5)): true})
		for id := range ms.reqs {
			kinds := map[uint32]string{}
			answered := 0
			for k := range 6 {
				req := &UnmaskRequest{Session: cfg.Session, To: id, Survivors: subset(), Dropped: subset()}
				if k == 3 {
					req = ms.reqs[id] // the honest request, somewhere in the sequence
				}
				resp, err := ms.parties[id].Unmask(req)
				if err != nil {
					continue
				}
				answered++
				for _, sh := range resp.SelfMaskShares {
					if kinds[sh.Owner] == "key" {
						t.Fatalf("party %d revealed both shares of %d", id, sh.Owner)
					}
					kinds[sh.Owner] = "self"
				}
				for _, sh := range resp.MaskKeyShares {
					if kinds[sh.Owner] == "self" {
						t.Fatalf("party %d revealed both shares of %d", id, sh.Owner)
					}
					kinds[sh.Owner] = "key"
				}
			}
			if answered != 1 {
				t.Fatalf("party %d answered %d unmasking requests, want exactly 1", id, answered)
			}
		}
	}
}

// Party IDs are Shamir x coordinates: the extremes of uint32 work.
func TestExtremePartyIDs(t *testing.T) {
	cfg := testConfig(t, 3, 2, 5, false)
	cfg.Parties = []uint32{1, 1 << 31, 1<<32 - 1}
	inputs := randomInputs(cfg, mrand.New(mrand.NewPCG(9, 9)))
	res, err := Run(context.Background(), cfg, single(inputs), RunOptions{Drop: map[uint32]Round{1 << 31: RoundMaskedInput}})
	if err != nil {
		t.Fatal(err)
	}
	want := []uint32{1, 1<<32 - 1}
	if !slices.Equal(res.Included, want) {
		t.Fatalf("included %v", res.Included)
	}
	if err := equalWords(res.Sum, plainSum(inputs, want, 5)); err != nil {
		t.Fatal(err)
	}
}

// A party that goes silent during unmasking is waited for until the round
// timeout; its input stays in the sum, recovered from the others' shares.
func TestStallDuringUnmaskingStillSums(t *testing.T) {
	if testing.Short() {
		t.Skip("waits out a 1 s round timeout")
	}
	cfg := testConfig(t, 5, 3, 16, false)
	inputs := randomInputs(cfg, mrand.New(mrand.NewPCG(4, 4)))
	res, err := Run(context.Background(), cfg, single(inputs), RunOptions{Stall: map[uint32]Round{2: RoundUnmasking}, RoundTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Included, cfg.Parties) || slices.Contains(res.Answered[RoundUnmasking], 2) {
		t.Fatalf("included %v, unmasking answered by %v", res.Included, res.Answered[RoundUnmasking])
	}
	if err := equalWords(res.Sum, plainSum(inputs, cfg.Parties, 16)); err != nil {
		t.Fatal(err)
	}
}

func TestFinishHonoursCancellation(t *testing.T) {
	cfg := testConfig(t, 4, 3, 3*maskChunk, false)
	ms := newManual(t, cfg, 13)
	ms.advertise(t)
	ms.share(t, nil)
	ms.mask(t, map[uint32]bool{4: true})
	for id, req := range ms.reqs {
		resp, err := ms.parties[id].Unmask(req)
		if err != nil {
			t.Fatal(err)
		}
		if err := ms.srv.Receive(resp); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ms.srv.Finish(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Finish with a cancelled context: %v", err)
	}
}
