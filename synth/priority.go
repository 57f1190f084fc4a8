package synth

import (
	"encoding/binary"
	"fmt"
	"io"
	"sort"

	"github.com/dplearn/dplearn/noise"
)

// PrioritySample is priority sampling (Duffield, Lund & Thorup 2007), the
// second stage of Cormode et al.'s Filter-Priority summary: entry i with
// weight w_i > 0 gets priority q_i = w_i/u_i with u_i uniform on (0, 1]; the
// s entries of highest priority are kept and each gets the adjusted weight
// max(w_i, τ), where τ is the (s+1)-th highest priority (τ = 0 when there
// are at most s entries, which are all kept with their weights). The
// adjusted weights are unbiased for every subset sum of the input weights.
//
// It is post-processing of the filtered (released) values, so its
// randomness is not privacy noise; it is read from src (53 bits per u) so
// that a seeded experiment is reproducible. The kept entries are returned
// in cell order, with τ.
func PrioritySample(entries []Entry, s int, src noise.Source) ([]Entry, float64, error) {
	if s < 1 {
		return nil, 0, fmt.Errorf("synth: priority sample size must be ≥ 1, got %d", s)
	}
	for _, e := range entries {
		if !(e.Weight > 0) {
			return nil, 0, fmt.Errorf("synth: priority sampling needs positive weights, cell %d has %v", e.Cell, e.Weight)
		}
	}
	if len(entries) <= s {
		out := append([]Entry(nil), entries...)
		sort.Slice(out, func(a, b int) bool { return out[a].Cell < out[b].Cell })
		return out, 0, nil
	}
	buf := make([]byte, 8*len(entries))
	if _, err := io.ReadFull(src, buf); err != nil {
		return nil, 0, fmt.Errorf("synth: priority sampling randomness: %w", err)
	}
	type pr struct {
		i int
		q float64
	}
	ps := make([]pr, len(entries))
	for i, e := range entries {
		k := binary.LittleEndian.Uint64(buf[8*i:]) >> 11 // 53 bits
		u := (float64(k) + 1) / (1 << 53)                // (0, 1]
		ps[i] = pr{i, e.Weight / u}
	}
	sort.Slice(ps, func(a, b int) bool { return ps[a].q > ps[b].q })
	tau := ps[s].q
	out := make([]Entry, s)
	for j := 0; j < s; j++ {
		e := entries[ps[j].i]
		e.Weight = max(e.Weight, tau)
		out[j] = e
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Cell < out[b].Cell })
	return out, tau, nil
}
