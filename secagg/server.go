package secagg

import (
	"bytes"
	"context"
	"crypto/ecdh"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
)

// Server is the aggregator's state machine. Feed it the parties' messages
// with Receive and close each round with the matching Close method once
// every expected party has answered or the round's deadline has passed;
// Finish computes the sum. The server never sees an unmasked individual
// input: it learns the masked vectors, the survivor sets and the sum over U3.
// A Server is not safe for concurrent use.
type Server struct {
	cfg   Config
	state Round

	// Workers is the number of goroutines Finish uses to remove the masks
	// (default GOMAXPROCS). Set it before Finish.
	Workers int

	keys   map[uint32]*AdvertiseKeys
	u1     []uint32
	shares map[uint32]*ShareKeys
	u2     []uint32
	masked map[uint32]bool // parties whose masked input is in sum
	sum    []uint64        // Σ of the accepted masked inputs, mod 2^64
	u3     []uint32
	drop3  []uint32 // U2 \ U3
	unmask map[uint32]*UnmaskResponse
}

// Result is the output of a successful session.
type Result struct {
	// Sum is Σ_{u∈Included} x_u mod 2^64 (decode with Encoding.Decode).
	Sum []uint64
	// Included is U3, the parties whose inputs are in Sum, sorted.
	Included []uint32
	// Answered lists, per round, the parties whose message the server
	// accepted (U1, U2, U3 and the unmasking responders), sorted.
	Answered [4][]uint32
}

// NewServer starts a session.
func NewServer(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.Parties = cfg.roster()
	cfg.Session = bytes.Clone(cfg.Session)
	return &Server{cfg: cfg, state: RoundAdvertiseKeys,
		keys: make(map[uint32]*AdvertiseKeys), shares: make(map[uint32]*ShareKeys),
		masked: make(map[uint32]bool), unmask: make(map[uint32]*UnmaskResponse)}, nil
}

// Round returns the round the server is collecting messages for.
func (s *Server) Round() Round { return s.state }

// Expected returns the parties that may send a message in the current
// round: the roster, then U1, U2, U3.
func (s *Server) Expected() []uint32 {
	switch s.state {
	case RoundAdvertiseKeys:
		return slices.Clone(s.cfg.Parties)
	case RoundShareKeys:
		return slices.Clone(s.u1)
	case RoundMaskedInput:
		return slices.Clone(s.u2)
	case RoundUnmasking:
		return slices.Clone(s.u3)
	}
	return nil
}

// Pending returns the expected parties that have not yet answered in the
// current round.
func (s *Server) Pending() []uint32 {
	var got func(uint32) bool
	switch s.state {
	case RoundAdvertiseKeys:
		got = func(id uint32) bool { return s.keys[id] != nil }
	case RoundShareKeys:
		got = func(id uint32) bool { return s.shares[id] != nil }
	case RoundMaskedInput:
		got = func(id uint32) bool { return s.masked[id] }
	case RoundUnmasking:
		got = func(id uint32) bool { return s.unmask[id] != nil }
	default:
		return nil
	}
	var out []uint32
	for _, id := range s.Expected() {
		if !got(id) {
			out = append(out, id)
		}
	}
	return out
}

// Receive validates and records a party's message for the current round. It
// rejects, with an error naming the round and the party, a message of
// another round or session, from a party outside the round's set, a
// duplicate, and any field of the wrong length or content.
func (s *Server) Receive(m Message) error {
	if isNil(m) {
		return fmt.Errorf("secagg: server: round %s: nil message %T", s.state, m)
	}
	r, from := m.MessageRound(), m.Party()
	switch m.(type) {
	case *KeyRoster, *ShareRelay, *UnmaskRequest:
		return msgError(r, from, "server received a server-to-party message %T", m)
	}
	if r != s.state {
		return msgError(r, from, "message for round %s while the server is in round %s", r, s.state)
	}
	if !slices.Contains(s.Expected(), from) {
		return msgError(r, from, "party is not among the parties of round %s", r)
	}
	switch m := m.(type) {
	case *AdvertiseKeys:
		return s.receiveKeys(m)
	case *ShareKeys:
		return s.receiveShares(m)
	case *MaskedInput:
		return s.receiveMasked(m)
	case *UnmaskResponse:
		return s.receiveUnmask(m)
	}
	return msgError(r, from, "unknown message type %T", m)
}

func (s *Server) receiveKeys(m *AdvertiseKeys) error {
	if s.keys[m.From] != nil {
		return msgError(RoundAdvertiseKeys, m.From, "duplicate message")
	}
	if err := m.validate(s.cfg.Session); err != nil {
		return err
	}
	for id, k := range s.keys {
		for _, a := range [][]byte{k.EncKey, k.MaskKey} {
			if bytes.Equal(a, m.EncKey) || bytes.Equal(a, m.MaskKey) {
				return msgError(RoundAdvertiseKeys, m.From, "public key already advertised by party %d", id)
			}
		}
	}
	c := *m
	c.Session, c.EncKey, c.MaskKey = bytes.Clone(m.Session), bytes.Clone(m.EncKey), bytes.Clone(m.MaskKey)
	s.keys[m.From] = &c
	return nil
}

func (s *Server) receiveShares(m *ShareKeys) error {
	const r = RoundShareKeys
	if s.shares[m.From] != nil {
		return msgError(r, m.From, "duplicate message")
	}
	if err := checkSession(r, m.From, m.Session, s.cfg.Session); err != nil {
		return err
	}
	if len(m.Shares) != len(s.u1)-1 {
		return msgError(r, m.From, "%d encrypted shares, want %d (one per other party of U1)", len(m.Shares), len(s.u1)-1)
	}
	i := 0
	for _, v := range s.u1 {
		if v == m.From {
			continue
		}
		e := m.Shares[i]
		if e.From != m.From || e.To != v {
			return msgError(r, m.From, "encrypted share %d is from %d to %d, want from %d to %d", i, e.From, e.To, m.From, v)
		}
		if len(e.Ciphertext) != ShareCiphertextLen {
			return msgError(r, m.From, "encrypted share for party %d has %d bytes, want %d", v, len(e.Ciphertext), ShareCiphertextLen)
		}
		i++
	}
	c := &ShareKeys{Session: bytes.Clone(m.Session), From: m.From, Shares: make([]EncryptedShare, len(m.Shares))}
	for i, e := range m.Shares {
		c.Shares[i] = EncryptedShare{From: e.From, To: e.To, Ciphertext: bytes.Clone(e.Ciphertext)}
	}
	s.shares[m.From] = c
	return nil
}

func (s *Server) receiveMasked(m *MaskedInput) error {
	const r = RoundMaskedInput
	if s.masked[m.From] {
		return msgError(r, m.From, "duplicate message")
	}
	if err := checkSession(r, m.From, m.Session, s.cfg.Session); err != nil {
		return err
	}
	if len(m.Masked) != s.cfg.VectorLen {
		return msgError(r, m.From, "masked input has %d words, want %d", len(m.Masked), s.cfg.VectorLen)
	}
	// Accumulate at once: the server never stores individual masked inputs.
	if s.sum == nil {
		s.sum = make([]uint64, s.cfg.VectorLen)
	}
	addVec(s.sum, m.Masked)
	s.masked[m.From] = true
	return nil
}

func (s *Server) receiveUnmask(m *UnmaskResponse) error {
	const r = RoundUnmasking
	if s.unmask[m.From] != nil {
		return msgError(r, m.From, "duplicate message")
	}
	if err := checkSession(r, m.From, m.Session, s.cfg.Session); err != nil {
		return err
	}
	check := func(kind string, got []RevealedShare, want []uint32) error {
		if len(got) != len(want) {
			return msgError(r, m.From, "%d %s shares, want %d", len(got), kind, len(want))
		}
		for i, sh := range got {
			if sh.Owner != want[i] {
				return msgError(r, m.From, "%s share %d is of party %d, want party %d", kind, i, sh.Owner, want[i])
			}
			if len(sh.Y) != ShareLen {
				return msgError(r, m.From, "%s share of party %d has %d bytes, want %d", kind, sh.Owner, len(sh.Y), ShareLen)
			}
		}
		return nil
	}
	if err := check("self-mask", m.SelfMaskShares, s.u3); err != nil {
		return err
	}
	if err := check("mask-key", m.MaskKeyShares, s.drop3); err != nil {
		return err
	}
	c := &UnmaskResponse{Session: bytes.Clone(m.Session), From: m.From}
	for _, sh := range m.SelfMaskShares {
		c.SelfMaskShares = append(c.SelfMaskShares, RevealedShare{Owner: sh.Owner, Y: bytes.Clone(sh.Y)})
	}
	for _, sh := range m.MaskKeyShares {
		c.MaskKeyShares = append(c.MaskKeyShares, RevealedShare{Owner: sh.Owner, Y: bytes.Clone(sh.Y)})
	}
	s.unmask[m.From] = c
	return nil
}

// closeCheck aborts the session if fewer than the needed parties answered.
func (s *Server) closeCheck(answered []uint32) error {
	if len(answered) < s.cfg.needed() {
		missing := s.Pending()
		var earlier []uint32
		exp := s.Expected()
		for _, id := range s.cfg.Parties {
			if !slices.Contains(exp, id) {
				earlier = append(earlier, id)
			}
		}
		err := &AbortError{Round: s.state, Have: len(answered), Need: s.cfg.needed(), Missing: missing, Earlier: earlier}
		s.state = roundDone
		return err
	}
	return nil
}

func (s *Server) expectState(r Round) error {
	if s.state != r {
		return fmt.Errorf("secagg: server: cannot close round %s while in round %s", r, s.state)
	}
	return nil
}

func sortedKeys[V any](m map[uint32]V) []uint32 {
	ks := make([]uint32, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// CloseAdvertiseKeys ends round AdvertiseKeys: U1 is the set of parties whose
// keys arrived. It returns the roster to broadcast to every member of U1, or
// an *AbortError if U1 is too small.
func (s *Server) CloseAdvertiseKeys() (*KeyRoster, error) {
	if err := s.expectState(RoundAdvertiseKeys); err != nil {
		return nil, err
	}
	u1 := sortedKeys(s.keys)
	if err := s.closeCheck(u1); err != nil {
		return nil, err
	}
	out := &KeyRoster{Session: bytes.Clone(s.cfg.Session), Keys: make([]AdvertiseKeys, len(u1))}
	for i, id := range u1 {
		k := s.keys[id]
		out.Keys[i] = AdvertiseKeys{Session: bytes.Clone(k.Session), From: id, EncKey: bytes.Clone(k.EncKey), MaskKey: bytes.Clone(k.MaskKey)}
	}
	s.u1 = u1
	s.state = RoundShareKeys
	return out, nil
}

// CloseShareKeys ends round ShareKeys: U2 is the set of parties whose shares
// arrived. It returns, for every member of U2, the relay of the shares
// addressed to it by the other members of U2.
func (s *Server) CloseShareKeys() ([]*ShareRelay, error) {
	if err := s.expectState(RoundShareKeys); err != nil {
		return nil, err
	}
	u2 := sortedKeys(s.shares)
	if err := s.closeCheck(u2); err != nil {
		return nil, err
	}
	pos := make(map[uint32]int, len(s.u1))
	for i, id := range s.u1 {
		pos[id] = i
	}
	out := make([]*ShareRelay, len(u2))
	for i, v := range u2 {
		rel := &ShareRelay{Session: bytes.Clone(s.cfg.Session), To: v, Shares: make([]EncryptedShare, 0, len(u2)-1)}
		for _, u := range u2 {
			if u == v {
				continue
			}
			// u's shares are sorted by recipient over U1 \ {u}.
			j := pos[v]
			if pos[u] < j {
				j--
			}
			e := s.shares[u].Shares[j]
			rel.Shares = append(rel.Shares, EncryptedShare{From: e.From, To: e.To, Ciphertext: e.Ciphertext})
		}
		out[i] = rel
	}
	s.u2 = u2
	s.shares = nil // relayed; the server keeps nothing it does not need
	s.state = RoundMaskedInput
	return out, nil
}

// CloseMaskedInput ends round MaskedInputCollection: U3 is the set of
// parties whose masked input arrived. It returns the unmasking request for
// every member of U3.
func (s *Server) CloseMaskedInput() ([]*UnmaskRequest, error) {
	if err := s.expectState(RoundMaskedInput); err != nil {
		return nil, err
	}
	u3 := sortedKeys(s.masked)
	if err := s.closeCheck(u3); err != nil {
		return nil, err
	}
	var drop []uint32
	for _, id := range s.u2 {
		if !s.masked[id] {
			drop = append(drop, id)
		}
	}
	out := make([]*UnmaskRequest, len(u3))
	for i, id := range u3 {
		out[i] = &UnmaskRequest{Session: bytes.Clone(s.cfg.Session), To: id, Survivors: slices.Clone(u3), Dropped: slices.Clone(drop)}
	}
	s.u3, s.drop3 = u3, drop
	s.state = RoundUnmasking
	return out, nil
}

// Finish ends round Unmasking: it reconstructs, from the shares of at least
// t responders, the self-mask seeds of U3 and the mask keys of U2 \ U3
// (checking each key against its advertised public key), removes the masks
// and returns the sum over U3. It aborts with an *AbortError if fewer than
// t parties (or MinSurvivors) answered. The work is spread over Workers
// goroutines and stops early if ctx is cancelled.
func (s *Server) Finish(ctx context.Context) (*Result, error) {
	const r = RoundUnmasking
	if err := s.expectState(r); err != nil {
		return nil, err
	}
	u5 := sortedKeys(s.unmask)
	if err := s.closeCheck(u5); err != nil {
		return nil, err
	}
	holders := u5[:s.cfg.Threshold]
	interp, err := newInterpolator(holders)
	if err != nil {
		return nil, fmt.Errorf("secagg: server: round %s: %w", r, err)
	}
	ys := make([][]byte, len(holders))
	selfKeys := make([][]byte, len(s.u3))
	for i, u := range s.u3 {
		for j, h := range holders {
			ys[j] = s.unmask[h].SelfMaskShares[i].Y
		}
		seed, err := interp.reconstruct(ys)
		if err != nil {
			return nil, fmt.Errorf("secagg: server: round %s: reconstruct self-mask seed of party %d: %w", r, u, err)
		}
		if selfKeys[i], err = deriveKey(seed, s.cfg.Session, infoSelfMask, u); err != nil {
			return nil, err
		}
	}
	dropSK := make([]*ecdh.PrivateKey, len(s.drop3))
	for i, v := range s.drop3 {
		for j, h := range holders {
			ys[j] = s.unmask[h].MaskKeyShares[i].Y
		}
		raw, err := interp.reconstruct(ys)
		if err != nil {
			return nil, fmt.Errorf("secagg: server: round %s: reconstruct mask key of dropped party %d: %w", r, v, err)
		}
		sk, err := ecdh.X25519().NewPrivateKey(raw)
		if err != nil {
			return nil, fmt.Errorf("secagg: server: round %s: mask key of dropped party %d: %w", r, v, err)
		}
		if !bytes.Equal(sk.PublicKey().Bytes(), s.keys[v].MaskKey) {
			return nil, fmt.Errorf("secagg: server: round %s: reconstructed mask key of dropped party %d does not match its advertised public key: inconsistent shares", r, v)
		}
		dropSK[i] = sk
	}

	workers := s.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Pairwise keys of (dropped v, survivor u): derived in parallel.
	type pairMask struct {
		key  []byte
		sign int
	}
	pairs := make([]pairMask, len(s.drop3)*len(s.u3))
	if err := parallel(ctx, workers, len(pairs), func(lo, hi int) error {
		for k := lo; k < hi; k++ {
			i, j := k/len(s.u3), k%len(s.u3)
			v, u := s.drop3[i], s.u3[j]
			key, err := pairMaskKey(dropSK[i], s.keys[u].MaskKey, s.cfg.Session, v, u)
			if err != nil {
				return fmt.Errorf("secagg: server: round %s: pairwise key of parties %d and %d: %w", r, u, v, err)
			}
			// y_u contains +PRG(s_uv) if u < v and −PRG(s_uv) if u > v: undo it.
			sign := -1
			if u > v {
				sign = +1
			}
			pairs[k] = pairMask{key: key, sign: sign}
		}
		return nil
	}); err != nil {
		return nil, err
	}

	sum := s.sum
	// Remove the masks, splitting the vector among the workers.
	chunks := (s.cfg.VectorLen + maskChunk - 1) / maskChunk
	if err := parallel(ctx, workers, chunks, func(lo, hi int) error {
		from, to := lo*maskChunk, min(hi*maskChunk, s.cfg.VectorLen)
		streams := make([]maskStream, 0, len(selfKeys)+len(pairs))
		for _, k := range selfKeys {
			st, err := newMaskStream(k, -1, from)
			if err != nil {
				return err
			}
			streams = append(streams, st)
		}
		for _, p := range pairs {
			st, err := newMaskStream(p.key, p.sign, from)
			if err != nil {
				return err
			}
			streams = append(streams, st)
		}
		for off := from; off < to; off += maskChunk {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("secagg: server: round %s: %w", r, err)
			}
			applyMasks(sum[off:min(off+maskChunk, to)], streams)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	res := &Result{Sum: sum, Included: slices.Clone(s.u3),
		Answered: [4][]uint32{slices.Clone(s.u1), slices.Clone(s.u2), slices.Clone(s.u3), u5}}
	s.sum = nil
	s.state = roundDone
	return res, nil
}

// parallel runs f over [0, n) split into contiguous ranges on up to workers
// goroutines and returns the first error.
func parallel(ctx context.Context, workers, n int, f func(lo, hi int) error) error {
	if n == 0 {
		return nil
	}
	workers = max(1, min(workers, n))
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		lo, hi := w*n/workers, (w+1)*n/workers
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := ctx.Err(); err != nil {
				errs[w] = err
				return
			}
			errs[w] = f(lo, hi)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// addVec sets d[i] += y[i] (mod 2^64).
func addVec(d, y []uint64) {
	y = y[:len(d)]
	for i := range d {
		d[i] += y[i]
	}
}
