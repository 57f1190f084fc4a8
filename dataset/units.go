package dataset

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// UnitOptions bounds each privacy unit's contribution (UnitMoments).
type UnitOptions struct {
	// Column names the privacy unit (a person ID); its raw text identifies
	// the unit. It need not be in the schema.
	Column string
	// MaxRows is K: at most K rows of each unit are kept.
	MaxRows int
	// Rand supplies the 32-byte secret key of the run (read once). It must
	// be a secure generator (noise.NewSecure) for the guarantee; a seeded
	// insecure one makes the selection reproducible for experiments only.
	Rand io.Reader
}

// UnitSummary describes a UnitMoments read. Units is public (the
// neighbouring relation keeps it fixed); Kept and the embedded Summary's
// row counts depend on how many rows each person has and are not.
type UnitSummary struct {
	Summary
	Units int64 // number of distinct units: public
	Kept  int64 // rows kept after bounding: NOT public, console only
}

// maxUnitRows caps K so that Units·K cannot overflow and stays a sane
// multiple of a person's rows.
const maxUnitRows = 1 << 20

// UnitMoments reads path twice and returns the sufficient statistics of the
// encoded rows with at most u.MaxRows = K rows kept per unit of u.Column:
// of a unit with n_u ≤ K rows all are kept; of one with n_u > K a uniformly
// random K-subset, chosen by a keyed pseudo-random function (HMAC-SHA256
// under a per-run secret key read from u.Rand).
//
// # Streaming
//
// The table is never held in memory. Pass 1 counts each unit's rows n_u
// (memory: one entry per unit, not per row). Between the passes, for each
// unit with n_u > K, the priorities p_u(j) = HMAC(key, u, j) of its
// occurrences j = 0..n_u−1 (file order within the unit) are computed and the
// K-th smallest (p, j) pair is kept as the unit's threshold. Pass 2 keeps
// occurrence j of unit u iff (p_u(j), j) ≤ that threshold: exactly the K
// smallest priorities, a uniformly random K-subset when the PRF is random.
// Path "-" (a stream) cannot be read twice and is refused.
//
// # Privacy argument
//
// Whether a row of unit u is kept is a function of (key, u, n_u, the row's
// rank j among u's rows) only: of the unit's own rows and of private
// randomness independent of the data. Two neighbouring datasets that differ
// in all rows of one unit u (replaced by the rows of a unit u', possibly
// with another ID and another number of rows) therefore give, under the
// same key, the same kept rows for every other unit, and kept sets differing
// only in u's (at most K) rows against those of u' (at most K). The number of units
// is the same in both (replace-one-unit), so it is public. Every sensitivity
// derived for "one row replaced" extends to "one unit replaced" by the
// factor the mechanisms apply (regress.UnitStats: K rows out, K rows in,
// the absent ones counting as zero rows). The kept row count is not public.
func UnitMoments(ctx context.Context, path string, s *schema.Schema, opt Options, u UnitOptions) (*suffstat.Moments, UnitSummary, error) {
	var m *suffstat.Moments
	us, err := UnitStreamBatches(ctx, path, s, opt, u, func(b Batch) error {
		if m == nil {
			m = suffstat.New(s.Dim() + 1)
			if opt.Workers > 0 {
				m.SetWorkers(opt.Workers)
			}
		}
		return m.AddRows(b.Rows)
	})
	if err != nil {
		return nil, us, err
	}
	if m == nil {
		m = suffstat.New(s.Dim() + 1)
	}
	m.Flush()
	return m, us, nil
}

// UnitStreamBatches is StreamBatches of the rows UnitMoments keeps (at most
// u.MaxRows per unit, chosen as UnitMoments documents), in file order; the
// batches carry Dropped flags (with Options.KeepDropped) and the Keep
// columns the caller asked for (the unit column is not among them).
func UnitStreamBatches(ctx context.Context, path string, s *schema.Schema, opt Options, u UnitOptions, fn func(b Batch) error) (UnitSummary, error) {
	var us UnitSummary
	if u.Column == "" {
		return us, errors.New("dataset: privacy unit: no unit column")
	}
	if u.MaxRows < 1 || u.MaxRows > maxUnitRows {
		return us, fmt.Errorf("dataset: privacy unit: at most %d rows per unit must be in [1, %d]", u.MaxRows, maxUnitRows)
	}
	if path == "-" {
		return us, errors.New("dataset: privacy unit: bounding rows per unit reads the table twice; standard input cannot be read twice (write it to a file)")
	}
	if u.Rand == nil {
		return us, errors.New("dataset: privacy unit: no randomness source for the selection key")
	}
	var key [UnitKeySize]byte
	if _, err := io.ReadFull(u.Rand, key[:]); err != nil {
		return us, fmt.Errorf("dataset: privacy unit: draw the selection key: %w", err)
	}
	callerKeep := len(opt.Keep)
	opt.Keep = append(slices.Clip(opt.Keep), u.Column)
	ki := len(opt.Keep) - 1
	nk := len(opt.Keep)

	// Pass 1: rows per unit.
	counts := map[string]*unitState{}
	if _, err := StreamBatches(ctx, path, s, opt, func(b Batch) error {
		for i := 0; i < len(b.Keep)/nk; i++ {
			id := b.Keep[i*nk+ki]
			st := counts[id]
			if st == nil {
				st = &unitState{}
				counts[id] = st
			}
			st.n++
		}
		return nil
	}); err != nil {
		return us, err
	}
	prf := newUnitPRF(key[:])
	k := int64(u.MaxRows)
	var pri []rankedPriority
	for id, st := range counts {
		if st.n <= k {
			continue
		}
		pri = pri[:0]
		for j := int64(0); j < st.n; j++ {
			pri = append(pri, rankedPriority{prf.priority(id, j), j})
		}
		slices.SortFunc(pri, rankedPriority.cmp)
		st.thr = pri[k-1]
		if err := ctx.Err(); err != nil {
			return us, err
		}
	}

	// Pass 2: the kept rows.
	width := s.Dim() + 1
	var out Batch
	sum, err := StreamBatches(ctx, path, s, opt, func(b Batch) error {
		n := len(b.Keep) / nk
		out.Rows, out.Keep = out.Rows[:0], out.Keep[:0]
		out.Dropped = out.Dropped[:0]
		for i := 0; i < n; i++ {
			id := b.Keep[i*nk+ki]
			st := counts[id]
			if st == nil {
				return fmt.Errorf("dataset: privacy unit: %s changed between the two reads (unit seen only in the second)", path)
			}
			j := st.seen
			st.seen++
			if st.n > k {
				if rankedPriority.cmp(rankedPriority{prf.priority(id, j), j}, st.thr) > 0 {
					continue
				}
			}
			out.Rows = append(out.Rows, b.Rows[i*width:(i+1)*width]...)
			if b.Dropped != nil {
				out.Dropped = append(out.Dropped, b.Dropped[i])
			}
			out.Keep = append(out.Keep, b.Keep[i*nk:i*nk+callerKeep]...)
		}
		if len(out.Rows) == 0 {
			return nil
		}
		us.Kept += int64(len(out.Rows) / width)
		bb := out
		if b.Dropped == nil {
			bb.Dropped = nil
		}
		if callerKeep == 0 {
			bb.Keep = nil
		}
		return fn(bb)
	})
	us.Summary = sum
	if err != nil {
		return us, err
	}
	for _, st := range counts {
		if st.seen != st.n {
			return us, fmt.Errorf("dataset: privacy unit: %s changed between the two reads", path)
		}
	}
	us.Units = int64(len(counts))
	return us, nil
}

// UnitKeySize is the size in bytes of the secret selection key that
// UnitMoments reads from UnitOptions.Rand.
const UnitKeySize = 32

// UnitKeptRanks returns the ranks j (0-based, in the order of the unit's
// rows, ascending) of the rows of unit id, which has n rows, that
// UnitMoments keeps under key with at most k rows per unit: all of them
// when n ≤ k, otherwise the k occurrences with the smallest priorities
// HMAC(key, id, j) — the same rule, for engines that gather a unit's rows
// in one place (the Beam pipeline's GroupByKey) instead of reading twice.
// The privacy argument of UnitMoments applies unchanged: the choice
// depends only on key, id, n and the ranks.
func UnitKeptRanks(key []byte, id string, n int64, k int) []int64 {
	if n <= int64(k) {
		out := make([]int64, n)
		for j := range out {
			out[j] = int64(j)
		}
		return out
	}
	prf := newUnitPRF(key)
	pri := make([]rankedPriority, n)
	for j := int64(0); j < n; j++ {
		pri[j] = rankedPriority{prf.priority(id, j), j}
	}
	slices.SortFunc(pri, rankedPriority.cmp)
	out := make([]int64, k)
	for i := range out {
		out[i] = pri[i].j
	}
	slices.Sort(out)
	return out
}

type unitState struct {
	n, seen int64
	thr     rankedPriority // the K-th smallest priority, when n > K
}

type rankedPriority struct {
	p uint64
	j int64
}

func (a rankedPriority) cmp(b rankedPriority) int {
	switch {
	case a.p < b.p:
		return -1
	case a.p > b.p:
		return 1
	case a.j < b.j:
		return -1
	case a.j > b.j:
		return 1
	}
	return 0
}

// unitPRF is HMAC-SHA256 under the run's key, truncated to 64 bits:
// priority(u, j) = HMAC(key, len(u) ‖ u ‖ j).
type unitPRF struct {
	key []byte
}

func newUnitPRF(key []byte) *unitPRF { return &unitPRF{key: key} }

func (f *unitPRF) priority(id string, j int64) uint64 {
	h := hmac.New(sha256.New, f.key)
	var b [8]byte
	binary.BigEndian.PutUint64(b[:], uint64(len(id)))
	h.Write(b[:])
	h.Write([]byte(id))
	binary.BigEndian.PutUint64(b[:], uint64(j))
	h.Write(b[:])
	return binary.BigEndian.Uint64(h.Sum(nil))
}
