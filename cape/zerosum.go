package cape

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/secagg"
)

// ErrNoiseSpent is returned (wrapped) when a site's noise draw ê_s is offered
// to a second secure-aggregation session, or its share is asked for twice.
// A draw enters exactly one session: if that session aborts after the masked
// ê_s was sent, the aggregator may already hold Σ ê over one set of sites, and
// a rerun with the same ê_s over a different set would give it the
// difference, an individual site's ê_s. Every attempt draws afresh
// (NewZeroSumSite).
var ErrNoiseSpent = errors.New("cape: this zero-sum noise draw was already used in a secure-aggregation session; every session (every retry after an abort) must draw fresh noise with NewZeroSumSite")

// ErrNoiseDoesNotCancel is returned (wrapped) whenever the set of sites whose
// noise ê_s entered the secure sum differs from the set of sites expected to
// use, or actually using, their zero-sum share e_s. In that case Σ e_s over
// the contributing sites is not zero, the CAPE noise assumption is broken and
// no estimate may be published: redo the round with the remaining sites
// (recalibrating τ for the new S) or abort.
var ErrNoiseDoesNotCancel = errors.New("cape: zero-sum noise does not cancel: the set of contributing sites changed after the noise shares were fixed; redo the round or abort, never publish")

// ZeroSumParams are the public parameters of one zero-sum noise round.
type ZeroSumParams struct {
	// Sites are the IDs of all S sites (distinct, ≥ 1). The noise is
	// generated only if every one of them completes the secure aggregation.
	Sites []uint32
	// Tau is τ, the standard deviation of each site's ê_s (the seed's τ_s);
	// the resulting e_s has variance (1 − 1/S)τ².
	Tau float64
	// Len is the number of coordinates L of the noise vector.
	Len int
}

// tailBound is the number of standard deviations a draw may reach before it
// is refused: P(|N(0,1)| > 64) < 10^−890, so a refusal never happens in
// practice; it only makes the fixed-point overflow check a proof.
const tailBound = 64

// Validate checks the parameters.
func (p ZeroSumParams) Validate() error {
	if len(p.Sites) < 2 {
		return fmt.Errorf("cape: zero-sum noise needs at least 2 sites, got %d", len(p.Sites))
	}
	seen := map[uint32]bool{}
	for _, s := range p.Sites {
		if s == 0 || seen[s] {
			return fmt.Errorf("cape: site ID %d is zero or repeated", s)
		}
		seen[s] = true
	}
	if math.IsNaN(p.Tau) || math.IsInf(p.Tau, 0) || p.Tau <= 0 {
		return fmt.Errorf("cape: τ must be finite and > 0, got %v", p.Tau)
	}
	if p.Len < 1 {
		return fmt.Errorf("cape: noise length must be ≥ 1, got %d", p.Len)
	}
	_, err := p.Encoding()
	return err
}

// Encoding returns the fixed-point encoding of the noise: its resolution
// 2^−FracBits is the grid of noise.AddGaussian for (τ, Len), so encoding a
// draw is exact (FracBits = 0 if that grid is ≥ 1: draws are then integer
// multiples of the grid, still exact); the bound is 64τ per coordinate and
// the overflow check covers S sites.
func (p ZeroSumParams) Encoding() (secagg.Encoding, error) {
	g, err := noise.GaussianGrid(p.Tau, p.Len)
	if err != nil {
		return secagg.Encoding{}, fmt.Errorf("cape: %w", err)
	}
	_, e := math.Frexp(g) // g = 2^(e−1)
	frac := max(0, -(e - 1))
	if frac > 62 {
		return secagg.Encoding{}, fmt.Errorf("cape: τ = %g is too small for a 64-bit fixed-point encoding (grid %g)", p.Tau, g)
	}
	enc := secagg.Encoding{FracBits: uint(frac), Bound: tailBound * p.Tau, Parties: len(p.Sites)}
	if err := enc.Validate(); err != nil {
		return secagg.Encoding{}, fmt.Errorf("cape: %w", err)
	}
	return enc, nil
}

// ZeroSumSite is one site's side of Algorithm 2 for one attempt: one draw of
// ê_s, used in exactly one secure-aggregation session. Its life is
// NewZeroSumSite (draw) → NewParty (bind to a session; once) → the secagg
// rounds → Finish (once). ê_s never leaves the object except masked by the
// secagg Party, and the draw cannot be given to a second session: NewParty
// called again, or a secagg.Party built from the draw's single-use input in
// another session, is refused with an error wrapping ErrNoiseSpent (or
// secagg.ErrInputSpent). After an abort, draw again with NewZeroSumSite (with
// τ recalibrated if the set of sites changed) for the new session.
// A ZeroSumSite is safe for concurrent use.
type ZeroSumSite struct {
	params ZeroSumParams
	sites  []uint32 // sorted
	id     uint32
	enc    secagg.Encoding
	secure bool
	src    string

	mu       sync.Mutex
	ehat     []int64       // ê_s in fixed point; erased by Finish
	input    *secagg.Input // ê_s as the single-use secagg input
	session  []byte        // the session NewParty bound the draw to, or nil
	finished bool
}

// NewZeroSumSite draws ê_s ~ N(0, τ²)^L with noise.AddGaussian from src
// (use noise.NewSecure(); a seeded source is for tests only and is
// remembered, see Secure) and encodes it in fixed point.
func NewZeroSumSite(params ZeroSumParams, id uint32, src noise.Source) (*ZeroSumSite, error) {
	if err := params.Validate(); err != nil {
		return nil, err
	}
	if !slices.Contains(params.Sites, id) {
		return nil, fmt.Errorf("cape: site %d is not among the sites %v", id, params.Sites)
	}
	if src == nil {
		return nil, fmt.Errorf("cape: site %d: nil noise source", id)
	}
	enc, _ := params.Encoding()
	x := make([]float64, params.Len)
	if err := noise.AddGaussian(src, x, params.Tau); err != nil {
		return nil, fmt.Errorf("cape: site %d: draw noise: %w", id, err)
	}
	q := make([]int64, len(x))
	scale := enc.Scale()
	for i, v := range x {
		if math.Abs(v) > enc.Bound {
			return nil, fmt.Errorf("cape: site %d: noise coordinate %d beyond %d·τ (probability < 1e-890): refusing", id, i, tailBound)
		}
		f := v * scale // exact: power-of-two scaling of a grid point
		if f != math.Trunc(f) {
			return nil, fmt.Errorf("cape: site %d: noise coordinate %d = %v is not on the 2^-%d grid", id, i, v, enc.FracBits)
		}
		q[i] = int64(f)
	}
	sites := slices.Clone(params.Sites)
	slices.Sort(sites)
	words := make([]uint64, len(q))
	for i, v := range q {
		words[i] = uint64(v)
	}
	return &ZeroSumSite{params: params, sites: sites, id: id, enc: enc, ehat: q,
		input: secagg.NewInput(words), secure: src.Secure(), src: src.String()}, nil
}

// Secure reports whether ê_s came from a secure source; String names it.
func (z *ZeroSumSite) Secure() bool { return z.secure }

// SourceName names the noise source for the privacy report.
func (z *ZeroSumSite) SourceName() string { return z.src }

// NewParty binds this draw to the secure-aggregation session cfg and returns
// the site's secagg party, whose input is ê_s in fixed point. cfg must be
// the zero-sum configuration of the site's parameters (SecAggConfig: all
// sites, MinSurvivors = S, length L). It can succeed once per draw: a second
// call, for any session, returns an error wrapping ErrNoiseSpent, so a rerun
// after an abort cannot reuse ê_s over a different set of sites.
func (z *ZeroSumSite) NewParty(cfg secagg.Config) (*secagg.Party, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.session != nil || z.finished {
		return nil, fmt.Errorf("cape: site %d: refusing session %x: %w (this draw is bound to session %x)", z.id, cfg.Session, ErrNoiseSpent, z.session)
	}
	if spent := z.input.SpentIn(); spent != nil {
		return nil, fmt.Errorf("cape: site %d: refusing session %x: %w (this draw was sent masked in session %x)", z.id, cfg.Session, ErrNoiseSpent, spent)
	}
	want, err := SecAggConfig(z.params, cfg.Session)
	if err != nil {
		return nil, fmt.Errorf("cape: site %d: %w", z.id, err)
	}
	got := slices.Clone(cfg.Parties)
	slices.Sort(got)
	if !slices.Equal(got, z.sites) || cfg.Threshold != want.Threshold || cfg.MinSurvivors != want.MinSurvivors || cfg.VectorLen != want.VectorLen {
		return nil, fmt.Errorf("cape: site %d: secure-aggregation configuration (parties %v, threshold %d, min survivors %d, length %d) is not the zero-sum configuration of these parameters (parties %v, threshold %d, min survivors %d, length %d)",
			z.id, got, cfg.Threshold, cfg.MinSurvivors, cfg.VectorLen, z.sites, want.Threshold, want.MinSurvivors, want.VectorLen)
	}
	p, err := secagg.NewParty(cfg, z.id, z.input)
	if err != nil {
		return nil, fmt.Errorf("cape: site %d: %w", z.id, err)
	}
	z.session = slices.Clone(cfg.Session)
	return p, nil
}

// ZeroSumShare is a site's zero-sum noise e_s.
type ZeroSumShare struct {
	Site uint32
	// Fixed holds e_s in fixed point (scale 2^FracBits): Σ_s Fixed_s = 0
	// exactly, coordinate by coordinate. Add it to a release encoded in the
	// same fixed point for exact cancellation at the aggregator.
	Fixed    []int64
	FracBits uint
	// Values is Fixed·2^−FracBits as float64 (exact unless |e| > 2^53 grid
	// units, which the overflow bound excludes).
	Values []float64
	// Secure reports whether ê_s came from a secure noise source, and
	// Source names it, for the privacy report: a share drawn from a seeded
	// source gives no privacy.
	Secure bool
	Source string
}

// Finish computes e_s = ê_s − (1/S)Σ ê from the secure-aggregation result
// broadcast by the aggregator (sum and the sites it includes). It returns an
// error wrapping ErrNoiseDoesNotCancel unless included is exactly the set of
// all sites. It requires that ê_s was sent (masked) in a session, and it
// succeeds once: ê_s is then erased and a second call returns an error
// wrapping ErrNoiseSpent.
//
// Exactness: with Q = Σ_s ê_s in fixed point (an integer), write
// Q = kS + r with 0 ≤ r < S (floor division). The site with index i (in
// increasing ID order) subtracts m_i = k + 1 if (i + j) mod S < r and k
// otherwise at coordinate j (the remainder rotates over the sites along the
// coordinates, deterministically), so Σ_i m_i = Q and Σ_s e_s = 0 exactly.
// Each m_i differs from Q/S by less than one grid unit.
func (z *ZeroSumSite) Finish(sum []uint64, included []uint32) (*ZeroSumShare, error) {
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.finished {
		return nil, fmt.Errorf("cape: site %d: Finish: %w (its share was already computed)", z.id, ErrNoiseSpent)
	}
	if z.input.SpentIn() == nil {
		return nil, fmt.Errorf("cape: site %d: Finish before ê_s was sent to a secure-aggregation session", z.id)
	}
	if err := checkComplete(z.sites, included); err != nil {
		return nil, fmt.Errorf("cape: site %d: %w", z.id, err)
	}
	if len(sum) != len(z.ehat) {
		return nil, fmt.Errorf("cape: site %d: aggregated sum has %d coordinates, want %d", z.id, len(sum), len(z.ehat))
	}
	S := int64(len(z.sites))
	idx := int64(slices.Index(z.sites, z.id))
	out := &ZeroSumShare{Site: z.id, Fixed: make([]int64, len(sum)), FracBits: z.enc.FracBits,
		Values: make([]float64, len(sum)), Secure: z.secure, Source: z.src}
	limit := z.enc.SumBound() * z.enc.Scale()
	for j, w := range sum {
		Q := int64(w)
		if math.Abs(float64(Q)) > limit {
			return nil, fmt.Errorf("cape: site %d: aggregated noise coordinate %d is outside the admissible range: corrupted sum", z.id, j)
		}
		k, r := floorDiv(Q, S)
		m := k
		if (idx+int64(j))%S < r {
			m++
		}
		e := z.ehat[j] - m
		out.Fixed[j] = e
		out.Values[j] = math.Ldexp(float64(e), -int(z.enc.FracBits))
	}
	clear(z.ehat)
	z.ehat, z.finished = nil, true
	return out, nil
}

// floorDiv returns k, r with a = kb + r and 0 ≤ r < b, for b > 0.
func floorDiv(a, b int64) (int64, int64) {
	k, r := a/b, a%b
	if r < 0 {
		k--
		r += b
	}
	return k, r
}

// checkComplete returns an error wrapping ErrNoiseDoesNotCancel unless got
// is exactly the set want (both sorted on return of the comparison).
func checkComplete(want, got []uint32) error {
	g := slices.Clone(got)
	slices.Sort(g)
	if slices.Equal(g, want) {
		return nil
	}
	var missing, extra []uint32
	for _, s := range want {
		if _, ok := slices.BinarySearch(g, s); !ok {
			missing = append(missing, s)
		}
	}
	for _, s := range g {
		if _, ok := slices.BinarySearch(want, s); !ok {
			extra = append(extra, s)
		}
	}
	return fmt.Errorf("%w (missing sites %v, unexpected sites %v)", ErrNoiseDoesNotCancel, missing, extra)
}

// CheckContributors is the aggregator's check before it combines the sites'
// perturbed releases: contributed (the sites whose release arrived) must be
// exactly the sites whose ê_s entered the secure sum (included, i.e.
// secagg.Result.Included), which must be all the sites. Otherwise the
// zero-sum noise does not cancel and it returns an error wrapping
// ErrNoiseDoesNotCancel: redo the round or abort, never publish.
func CheckContributors(params ZeroSumParams, included, contributed []uint32) error {
	sites := slices.Clone(params.Sites)
	slices.Sort(sites)
	if err := checkComplete(sites, included); err != nil {
		return fmt.Errorf("cape: secure sum: %w", err)
	}
	if err := checkComplete(sites, contributed); err != nil {
		return fmt.Errorf("cape: releases: %w", err)
	}
	return nil
}

// SecAggConfig returns the secure-aggregation configuration for a zero-sum
// round: all sites, threshold secagg.DefaultThreshold(S), and MinSurvivors =
// S, because the noise is usable only if every site completes. session must
// be fresh (e.g. 32 bytes from crypto/rand).
func SecAggConfig(params ZeroSumParams, session []byte) (secagg.Config, error) {
	if err := params.Validate(); err != nil {
		return secagg.Config{}, err
	}
	S := len(params.Sites)
	cfg := secagg.Config{Session: slices.Clone(session), Parties: slices.Clone(params.Sites),
		Threshold: secagg.DefaultThreshold(S), MinSurvivors: S, VectorLen: params.Len}
	return cfg, cfg.Validate()
}

// SimulateZeroSum runs Algorithm 2 in process: every site draws fresh noise
// from srcs[site] (inside the call: a call never reuses a draw), the sites and the aggregator run secure aggregation with
// secagg.Run (opt may simulate dropouts and sets timeouts), and every site
// computes its share. Any dropout makes it fail with an error: an
// *secagg.AbortError if the secure aggregation could not complete (the
// zero-sum configuration requires all S sites), and never a partial result.
func SimulateZeroSum(ctx context.Context, params ZeroSumParams, session []byte, srcs map[uint32]noise.Source, opt secagg.RunOptions) (map[uint32]*ZeroSumShare, error) {
	cfg, err := SecAggConfig(params, session)
	if err != nil {
		return nil, err
	}
	sites := make(map[uint32]*ZeroSumSite, len(params.Sites))
	inputs := make(map[uint32]*secagg.Input, len(params.Sites))
	for _, id := range params.Sites {
		s, err := NewZeroSumSite(params, id, srcs[id])
		if err != nil {
			return nil, err
		}
		sites[id], inputs[id] = s, s.input
	}
	res, err := secagg.Run(ctx, cfg, inputs, opt)
	if err != nil {
		return nil, fmt.Errorf("cape: zero-sum noise: %w", err)
	}
	out := make(map[uint32]*ZeroSumShare, len(sites))
	for id, s := range sites {
		// In a deployment, the aggregator broadcasts (res.Sum, res.Included).
		sh, err := s.Finish(res.Sum, res.Included)
		if err != nil {
			return nil, err
		}
		out[id] = sh
	}
	return out, nil
}
