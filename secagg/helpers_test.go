package secagg

import (
	"crypto/rand"
	"fmt"
	mrand "math/rand/v2"
	"testing"
)

// testConfig returns a config with parties 1..n (IDs spaced to exercise
// non-contiguous IDs when spaced is true).
func testConfig(t testing.TB, n, thr, L int, spaced bool) Config {
	t.Helper()
	ids := make([]uint32, n)
	for i := range ids {
		ids[i] = uint32(i + 1)
		if spaced {
			ids[i] = uint32(7*i + 3)
		}
	}
	sess := make([]byte, 32)
	if _, err := rand.Read(sess); err != nil {
		t.Fatal(err)
	}
	return Config{Session: sess, Parties: ids, Threshold: thr, VectorLen: L}
}

// randomInputs draws test inputs (not privacy noise: math/rand is fine here).
func randomInputs(cfg Config, rng *mrand.Rand) map[uint32][]uint64 {
	in := make(map[uint32][]uint64, len(cfg.Parties))
	for _, id := range cfg.Parties {
		v := make([]uint64, cfg.VectorLen)
		for i := range v {
			v[i] = rng.Uint64()
		}
		in[id] = v
	}
	return in
}

// single wraps test inputs as single-use Inputs (fresh for every call).
func single(in map[uint32][]uint64) map[uint32]*Input {
	out := make(map[uint32]*Input, len(in))
	for id, x := range in {
		out[id] = NewInput(x)
	}
	return out
}

func plainSum(inputs map[uint32][]uint64, ids []uint32, L int) []uint64 {
	s := make([]uint64, L)
	for _, id := range ids {
		for i, x := range inputs[id] {
			s[i] += x
		}
	}
	return s
}

func equalWords(a, b []uint64) error {
	if len(a) != len(b) {
		return fmt.Errorf("lengths %d and %d", len(a), len(b))
	}
	for i := range a {
		if a[i] != b[i] {
			return fmt.Errorf("word %d: %#x != %#x", i, a[i], b[i])
		}
	}
	return nil
}

// manualSession drives parties and server by hand up to (not including) the
// given round's party answers, returning them for tampering tests.
type manualSession struct {
	cfg     Config
	srv     *Server
	parties map[uint32]*Party
	inputs  map[uint32][]uint64
	ins     map[uint32]*Input // the single-use inputs the parties were built with
	roster  *KeyRoster
	relays  map[uint32]*ShareRelay
	reqs    map[uint32]*UnmaskRequest
	masked  map[uint32]*MaskedInput
}

func newManual(t testing.TB, cfg Config, seed uint64) *manualSession {
	t.Helper()
	ms := &manualSession{cfg: cfg, parties: map[uint32]*Party{}, relays: map[uint32]*ShareRelay{},
		reqs: map[uint32]*UnmaskRequest{}, masked: map[uint32]*MaskedInput{}}
	var err error
	if ms.srv, err = NewServer(cfg); err != nil {
		t.Fatal(err)
	}
	ms.inputs = randomInputs(cfg, mrand.New(mrand.NewPCG(seed, 1)))
	ms.ins = single(ms.inputs)
	for _, id := range cfg.Parties {
		if ms.parties[id], err = NewParty(cfg, id, ms.ins[id]); err != nil {
			t.Fatal(err)
		}
	}
	return ms
}

// advertise runs round AdvertiseKeys for all parties and closes it.
func (ms *manualSession) advertise(t testing.TB) {
	t.Helper()
	for _, id := range ms.cfg.Parties {
		m, err := ms.parties[id].AdvertiseKeys()
		if err != nil {
			t.Fatal(err)
		}
		if err := ms.srv.Receive(m); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	if ms.roster, err = ms.srv.CloseAdvertiseKeys(); err != nil {
		t.Fatal(err)
	}
}

// share runs round ShareKeys for all parties except skip, and closes it.
func (ms *manualSession) share(t testing.TB, skip map[uint32]bool) {
	t.Helper()
	for _, id := range ms.cfg.Parties {
		if skip[id] {
			continue
		}
		m, err := ms.parties[id].ShareKeys(ms.roster)
		if err != nil {
			t.Fatal(err)
		}
		if err := ms.srv.Receive(m); err != nil {
			t.Fatal(err)
		}
	}
	rels, err := ms.srv.CloseShareKeys()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rels {
		ms.relays[r.To] = r
	}
}

// mask runs round MaskedInput for the parties with relays except skip.
func (ms *manualSession) mask(t testing.TB, skip map[uint32]bool) {
	t.Helper()
	for id, rel := range ms.relays {
		if skip[id] {
			continue
		}
		m, err := ms.parties[id].MaskInput(rel)
		if err != nil {
			t.Fatal(err)
		}
		ms.masked[id] = m
		if err := ms.srv.Receive(m); err != nil {
			t.Fatal(err)
		}
	}
	reqs, err := ms.srv.CloseMaskedInput()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reqs {
		ms.reqs[r.To] = r
	}
}
