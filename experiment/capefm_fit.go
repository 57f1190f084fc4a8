package experiment

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"time"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/suffstat"
)

// capeSite is one site's share of a training table: its rows and their
// sufficient statistics.
type capeSite struct {
	rows  *table
	stats *suffstat.Moments
}

// partition splits a (shuffled) training table into S sites of equal size
// (the seed's symmetric setting N_s = N/S; the first N mod S sites get one
// row more).
func partition(train *table, S int) ([]capeSite, error) {
	n := train.N()
	if S < 2 || n < S {
		return nil, fmt.Errorf("experiment: cannot split %d rows into %d sites", n, S)
	}
	out := make([]capeSite, S)
	start := 0
	for s := 0; s < S; s++ {
		size := n / S
		if s < n%S {
			size++
		}
		t := &table{Name: train.Name, Kind: train.Kind, K: train.K, Rows: train.Rows[start*train.K : (start+size)*train.K]}
		st, err := moments(t)
		if err != nil {
			return nil, err
		}
		out[s] = capeSite{rows: t, stats: st}
		start += size
	}
	return out, nil
}

// noLedger accepts every charge: the experiment's sites spend a fresh
// budget in every run.
type noLedger struct{}

func (noLedger) Charge(string, float64, float64) error { return nil }

// siteSources returns one noise source per site. A secure parent gives
// every site its own crypto/rand source; a seeded (insecure) parent seeds
// each site's source from 8 bytes read from it, so the sites' draws do not
// depend on the order in which their goroutines run.
func siteSources(src noise.Source, S int) ([]noise.Source, error) {
	out := make([]noise.Source, S)
	for i := range out {
		if src.Secure() {
			out[i] = noise.NewSecure()
			continue
		}
		var b [8]byte
		if _, err := src.Read(b[:]); err != nil {
			return nil, fmt.Errorf("experiment: site noise seed: %w", err)
		}
		out[i] = noise.NewInsecureSeeded(binary.LittleEndian.Uint64(b[:]))
	}
	return out, nil
}

// capeFit runs one fit of a capefm mechanism (capeFM or a conventional
// decentralised baseline) over the sites with the real protocol: one
// capefm.Site state machine per site and the aggregator, in process
// (capefm.Run: every message marshalled and unmarshalled, secure
// aggregation and the zero-sum noise included). It returns the model, the
// calibration of the attempt that produced it, and the wall time of the
// protocol run (site setup included).
func capeFit(ctx context.Context, mech capefm.Mechanism, kind regress.Kind, sites []capeSite, eps, delta float64, src noise.Source) ([]float64, *capefm.Calibration, time.Duration, error) {
	S := len(sites)
	if S < 2 {
		return nil, nil, 0, fmt.Errorf("experiment: capeFM needs ≥ 2 sites, got %d", S)
	}
	if mech == capefm.FMLocal {
		delta = 0 // pure ε-DP
	}
	srcs, err := siteSources(src, S)
	if err != nil {
		return nil, nil, 0, err
	}
	start := time.Now()
	if mech == capefm.ObjPertLocal {
		// objpert's calibration (about 0.6 s, a function of public
		// parameters only) is cached by regress per (model, ε, δ, N, D);
		// the S sites would otherwise all miss the cache at once and
		// compute the same plan concurrently. Computing it once per
		// distinct site size first changes no result.
		done := map[int64]bool{}
		for _, s := range sites {
			if n := s.stats.N(); !done[n] {
				done[n] = true
				if _, err := regress.PlanObjPert(kind, eps, delta, n, s.rows.K-1, regress.ObjPertOptions{}); err != nil {
					return nil, nil, 0, fmt.Errorf("objpert-local plan (N_s=%d): %w", n, err)
				}
			}
		}
	}
	// The sites must agree on a schema fingerprint; every site here encodes
	// with the same embedded schema, so any fixed value serves.
	fp := sha256.Sum256([]byte("dplearn/experiment/" + sites[0].rows.Name))
	names := make([]string, S)
	sizes := make([]int64, S)
	ss := make([]*capefm.Site, S)
	for i, s := range sites {
		names[i] = fmt.Sprintf("site-%d", i+1)
		sizes[i] = s.stats.N()
		site, err := capefm.NewSite(capefm.SiteConfig{
			Name: names[i], Mechanism: mech, Kind: kind, Schema: fp,
			Epsilon: eps, Delta: delta, Source: srcs[i], Ledger: noLedger{},
			UnsignedKeys: true, // in process: the aggregator is this program, key signatures would protect nothing
			// The seed's δ panels sweep δ up to 0.05, beyond 1/N on purpose.
			AllowDeltaAboveOneOverN: true,
		}, regress.Data{Stats: s.stats, Rows: s.rows.Rows})
		if err != nil {
			return nil, nil, 0, err
		}
		ss[i] = site
	}
	roster, err := capefm.Roster(names, sizes)
	if err != nil {
		return nil, nil, 0, err
	}
	p := capefm.Params{Mechanism: mech, Kind: kind, Schema: fp, D: sites[0].rows.K - 1,
		Epsilon: eps, Delta: delta, Split: 0.5, Sites: roster, Colluders: -1, MinSites: S}
	res, err := capefm.Run(ctx, p, ss, capefm.RunOptions{MaxAttempts: 1, RoundTimeout: capeRoundTimeout})
	if err != nil {
		return nil, nil, 0, fmt.Errorf("%s (S=%d, ε=%g, δ=%g, N=%d): %w", mech, S, eps, delta, sumN(sizes), err)
	}
	return res.Coef, res.Calibration, time.Since(start), nil
}

func sumN(n []int64) int64 {
	var s int64
	for _, x := range n {
		s += x
	}
	return s
}
