package cape

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/secagg"
)

// runRounds drives one secure-aggregation session by hand, as a transport
// does: every party answers every round, except that only the sites in
// unmaskers answer the Unmasking request.
func runRounds(t *testing.T, cfg secagg.Config, parties map[uint32]*secagg.Party, unmaskers []uint32) (*secagg.Result, error) {
	t.Helper()
	srv, err := secagg.NewServer(cfg)
	if err != nil {
		t.Fatal(err)
	}
	must := func(m secagg.Message, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		if err := srv.Receive(m); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range cfg.Parties {
		must(parties[id].AdvertiseKeys())
	}
	roster, err := srv.CloseAdvertiseKeys()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range cfg.Parties {
		must(parties[id].ShareKeys(roster))
	}
	rels, err := srv.CloseShareKeys()
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range rels {
		must(parties[rel.To].MaskInput(rel))
	}
	reqs, err := srv.CloseMaskedInput()
	if err != nil {
		t.Fatal(err)
	}
	for _, req := range reqs {
		if slices.Contains(unmaskers, req.To) {
			must(parties[req.To].Unmask(req))
		}
	}
	return srv.Finish(context.Background())
}

// An aborted Unmasking cannot be followed by a rerun of the same noise over a
// different set of sites: the draw ê_s is bound to the first session, and
// every way of feeding it to another session is refused with an error saying
// to draw fresh noise. A proper retry draws fresh noise (different in every
// coordinate) and completes with exactly cancelling shares.
func TestRerunWithSameNoiseIsRefused(t *testing.T) {
	sites := []uint32{1, 2, 3, 4, 5}
	p := ZeroSumParams{Sites: sites, Tau: 1, Len: 16}
	srcs := seededSources(sites, 11)
	cfg1, err := SecAggConfig(p, session(t))
	if err != nil {
		t.Fatal(err)
	}
	zs := map[uint32]*ZeroSumSite{}
	old := map[uint32][]int64{}
	parties := map[uint32]*secagg.Party{}
	for _, s := range sites {
		if zs[s], err = NewZeroSumSite(p, s, srcs[s]); err != nil {
			t.Fatal(err)
		}
		old[s] = slices.Clone(zs[s].ehat)
		if parties[s], err = zs[s].NewParty(cfg1); err != nil {
			t.Fatal(err)
		}
	}
	// Every site sends its masked ê_s; site 5 then never answers Unmasking
	// and the aggregator aborts (MinSurvivors = S), although it holds 4 ≥ t
	// unmasking responses.
	_, err = runRounds(t, cfg1, parties, []uint32{1, 2, 3, 4})
	var ab *secagg.AbortError
	if !errors.As(err, &ab) || ab.Round != secagg.RoundUnmasking {
		t.Fatalf("first session: got %v, want an abort in Unmasking", err)
	}

	// The rerun over sites 1-4 with the same draws.
	p4 := ZeroSumParams{Sites: []uint32{1, 2, 3, 4}, Tau: p.Tau, Len: p.Len}
	cfg2, err := SecAggConfig(p4, session(t))
	if err != nil {
		t.Fatal(err)
	}
	cfgSame, err := SecAggConfig(p, session(t)) // even over the same sites
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range p4.Sites {
		for _, cfg := range []secagg.Config{cfg2, cfgSame} {
			_, err := zs[s].NewParty(cfg)
			if !errors.Is(err, ErrNoiseSpent) || !strings.Contains(err.Error(), "must draw fresh noise") {
				t.Fatalf("site %d: rerun with the same noise: got %v, want ErrNoiseSpent", s, err)
			}
		}
		// Bypassing the site object with its single-use secagg input fails too.
		if _, err := secagg.NewParty(cfg2, s, zs[s].input); !errors.Is(err, secagg.ErrInputSpent) {
			t.Fatalf("site %d: secagg party with the spent input: got %v, want secagg.ErrInputSpent", s, err)
		}
	}

	// The proper retry: a fresh draw per site for the new session.
	retry := map[uint32]*ZeroSumSite{}
	parties2 := map[uint32]*secagg.Party{}
	for _, s := range p4.Sites {
		if retry[s], err = NewZeroSumSite(p4, s, srcs[s]); err != nil {
			t.Fatal(err)
		}
		for j, e := range retry[s].ehat {
			if e == old[s][j] {
				t.Fatalf("site %d: retry's noise coordinate %d equals the first draw's (%d)", s, j, e)
			}
		}
		if parties2[s], err = retry[s].NewParty(cfg2); err != nil {
			t.Fatal(err)
		}
	}
	res, err := runRounds(t, cfg2, parties2, p4.Sites)
	if err != nil {
		t.Fatal(err)
	}
	total := make([]int64, p.Len)
	for _, s := range p4.Sites {
		sh, err := retry[s].Finish(res.Sum, res.Included)
		if err != nil {
			t.Fatal(err)
		}
		for j, e := range sh.Fixed {
			total[j] += e
		}
	}
	if slices.ContainsFunc(total, func(x int64) bool { return x != 0 }) {
		t.Fatalf("retry: Σ e_s = %v, want 0", total)
	}
}

// The secure noise source also gives a different draw on every attempt; and
// a site refuses a configuration that is not the zero-sum one of its
// parameters, and Finish before its noise entered a session.
func TestZeroSumSiteBindsOneSession(t *testing.T) {
	sites := []uint32{1, 2, 3}
	p := ZeroSumParams{Sites: sites, Tau: 0.5, Len: 8}
	a, err := NewZeroSumSite(p, 2, noise.NewSecure())
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewZeroSumSite(p, 2, noise.NewSecure())
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(a.ehat, b.ehat) {
		t.Fatal("two secure draws are equal")
	}
	if _, err := a.Finish(make([]uint64, p.Len), sites); err == nil || !strings.Contains(err.Error(), "before") {
		t.Fatalf("Finish before the session: %v", err)
	}
	cfg, _ := SecAggConfig(p, session(t))
	bad := cfg
	bad.MinSurvivors = 0 // would let the sum cover a subset of the sites
	if _, err := a.NewParty(bad); err == nil || !strings.Contains(err.Error(), "zero-sum configuration") {
		t.Fatalf("non-zero-sum configuration: %v", err)
	}
	other := cfg
	other.Parties = []uint32{1, 2, 4}
	if _, err := a.NewParty(other); err == nil {
		t.Fatal("configuration with other sites accepted")
	}
	if _, err := a.NewParty(cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := a.NewParty(cfg); !errors.Is(err, ErrNoiseSpent) {
		t.Fatalf("second NewParty in the same session: got %v, want ErrNoiseSpent", err)
	}
}
