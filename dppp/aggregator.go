package dppp

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"sync"

	"github.com/dplearn/dplearn/paillier"
)

var bigOne = big.NewInt(1)

// Errors of the aggregator.
var (
	// ErrTooFewContributors: fewer votes than the calibration needs; nothing
	// is sent for decryption.
	ErrTooFewContributors = errors.New("dppp: too few contributors")
	// ErrTooFewDecryptors: fewer than t valid partial decryptions can be had.
	ErrTooFewDecryptors = errors.New("dppp: too few valid partial decryptions")
	// ErrDuplicate: a replayed message (ignored).
	ErrDuplicate = errors.New("dppp: duplicate message")
	// ErrStale: a message of another session or of a batch not open.
	ErrStale = errors.New("dppp: message of another session or batch")
	// ErrUnsigned: a contributor did not sign the batch's contributor set;
	// the batch is abandoned (nothing decrypted) and its rows are voted
	// again in a new batch.
	ErrUnsigned = errors.New("dppp: contributor set not signed by every contributor")
)

// Verification selects how the aggregator checks partial decryptions.
type Verification uint8

const (
	// VerifyEach verifies every partial decryption's proof as it arrives
	// (and Combine verifies the t it uses again): the naive path, which
	// names every forger.
	VerifyEach Verification = iota
	// VerifyInCombine leaves verification to Combine, which checks proofs
	// in ascending index order only until t are valid, all at once
	// (paillier's VerifyPartials: one random linear combination, the
	// forgers named by bisection) unless Combine says otherwise.
	VerifyInCombine
)

// AggregatorOptions tune the aggregator.
type AggregatorOptions struct {
	Verification Verification
	// Combine selects paillier's algorithms for combining partial
	// decryptions. The zero value is the fast path (batch verification,
	// interpolation by multi-exponentiation); the other settings are the
	// reference paths, for benchmarks and cross-checks.
	Combine paillier.CombineOptions
	// Ledger is the aggregator's budget ledger (nil: a Budget).
	Ledger Ledger
	// IgnoreBudget, a TEST HOOK (a malicious aggregator), sends decryption
	// requests past its own budget.
	IgnoreBudget bool
	// Verifier, if set, checks every contributor's set signature on
	// arrival (the aggregator's own identity from the deployment's CA): a
	// bad one is refused and named, the contributor counts as not having
	// signed, and the batch is abandoned and voted again without it,
	// instead of being refused by every decrypting teacher. The teachers
	// check the signatures whatever the aggregator does.
	Verifier Signer
}

type batchState struct {
	rows     int
	votes    map[uint32][]byte
	proofs   map[uint32][]byte
	set      []SetEntry
	setSigs  map[uint32]*SetSignature
	badVotes map[uint32]string
	cts      map[uint32]*paillier.Ciphertext
	closed   bool
	contrib  []uint32
	sum      *paillier.Ciphertext
	sumBytes []byte
	asked    map[uint32]bool
	partials map[uint32]*paillier.PartialDecryption
	rejected map[uint32]string
	result   *BatchResult
}

// BatchResult is the outcome of one batch.
type BatchResult struct {
	Batch        uint64
	Contributors []uint32
	Decryptors   []uint32          // the t partial decryptions combined
	Rejected     map[uint32]string // teachers whose partial decryption or answer failed, and why
	Raw          []int64           // decrypted per-slot sums (QPC·K)
	Hist         [][]float64       // centred noisy histograms of the batch's queries
	Labels       []int
}

// Aggregator is the aggregator's state machine: no network code. Methods
// are safe for concurrent use.
type Aggregator struct {
	p       *Params
	tpk     *paillier.ThresholdPublicKey
	pack    *paillier.Packing
	opt     AggregatorOptions
	ledger  Ledger
	budget  *Budget
	mu      sync.Mutex
	next    uint64
	batches map[uint64]*batchState
}

// NewAggregator returns an aggregator for agreed parameters p.
func NewAggregator(p *Params, tpk *paillier.ThresholdPublicKey, opt AggregatorOptions) (*Aggregator, error) {
	if tpk.ID() != p.Key {
		return nil, fmt.Errorf("dppp: the key is not the one of the parameters")
	}
	pack, err := p.packing(tpk.Public())
	if err != nil {
		return nil, err
	}
	a := &Aggregator{p: p, tpk: tpk, pack: pack, opt: opt, ledger: opt.Ledger, batches: map[uint64]*batchState{}, next: 1}
	if a.ledger == nil {
		a.budget = NewBudget(p)
		a.ledger = a.budget
	}
	return a, nil
}

// Params returns the agreed parameters.
func (a *Aggregator) Params() *Params { return a.p }

// Offer returns the message proposing the parameters.
func (a *Aggregator) Offer() *Offer { return &Offer{Params: *a.p.Clone()} }

// CheckAccept checks a teacher's acceptance.
func (a *Aggregator) CheckAccept(m *Accept) error {
	if m.Session != a.p.Session || m.Hash != a.p.Hash() {
		return fmt.Errorf("dppp: teacher %d accepted other parameters", m.From)
	}
	return nil
}

// Budget returns the aggregator's Budget (nil if a caller Ledger is used).
func (a *Aggregator) Budget() *Budget { return a.budget }

// NewBatch opens a batch of at most QPC rows and returns the query for every
// teacher.
func (a *Aggregator) NewBatch(rows [][]float64) (*Query, error) {
	if len(rows) == 0 || len(rows) > a.p.QPC {
		return nil, fmt.Errorf("dppp: a batch holds 1..%d rows, got %d", a.p.QPC, len(rows))
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	id := a.next
	a.next++
	a.batches[id] = &batchState{rows: len(rows), votes: map[uint32][]byte{}, proofs: map[uint32][]byte{}, setSigs: map[uint32]*SetSignature{}, badVotes: map[uint32]string{}, cts: map[uint32]*paillier.Ciphertext{}, asked: map[uint32]bool{}, partials: map[uint32]*paillier.PartialDecryption{}, rejected: map[uint32]string{}}
	return &Query{Session: a.p.Session, Batch: id, Rows: rows}, nil
}

func (a *Aggregator) batch(session [32]byte, id uint64) (*batchState, error) {
	if session != a.p.Session {
		return nil, fmt.Errorf("%w: session %x", ErrStale, session[:6])
	}
	b, ok := a.batches[id]
	if !ok {
		return nil, fmt.Errorf("%w: batch %d", ErrStale, id)
	}
	return b, nil
}

// AddVote records a teacher's vote (from is the authenticated sender, which
// must match v.From). Votes after the batch closed are stale; a replay of
// the same vote is ErrDuplicate; a different second vote is refused.
func (a *Aggregator) AddVote(from uint32, v *Vote) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, err := a.batch(v.Session, v.Batch)
	if err != nil {
		return err
	}
	if from != v.From || a.p.TeacherName(from) == "" {
		return fmt.Errorf("dppp: vote claims teacher %d from teacher %d", v.From, from)
	}
	if prev, ok := b.votes[from]; ok {
		if string(prev) == string(v.Ciphertext) {
			return ErrDuplicate
		}
		return fmt.Errorf("dppp: teacher %s sent two different votes for batch %d", a.p.TeacherName(from), v.Batch)
	}
	if b.closed {
		return fmt.Errorf("%w: batch %d closed", ErrStale, v.Batch)
	}
	ct, err := a.tpk.Public().ParseCiphertext(v.Ciphertext)
	if err != nil {
		return fmt.Errorf("dppp: teacher %s: %w", a.p.TeacherName(from), err)
	}
	for id, c := range b.votes {
		if string(c) == string(v.Ciphertext) {
			return fmt.Errorf("dppp: teacher %s sent teacher %s's vote", a.p.TeacherName(from), a.p.TeacherName(id))
		}
	}
	if len(v.Proof) == 0 {
		return fmt.Errorf("dppp: teacher %s's vote has no proof of plaintext knowledge", a.p.TeacherName(from))
	}
	b.votes[from] = v.Ciphertext
	b.proofs[from] = v.Proof
	b.cts[from] = ct
	return nil
}

// BadVotes returns the teachers whose votes of a closed batch were dropped
// because their proofs of plaintext knowledge failed, and why.
func (a *Aggregator) BadVotes(batch uint64) map[uint32]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := map[uint32]string{}
	if b, ok := a.batches[batch]; ok {
		for id, r := range b.badVotes {
			out[id] = r
		}
	}
	return out
}

// Votes returns the number of votes received for a batch.
func (a *Aggregator) Votes(batch uint64) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if b, ok := a.batches[batch]; ok {
		return len(b.votes)
	}
	return 0
}

// Close ends vote collection for a batch and returns the consistency
// round's request (SignSet) for its contributors. It first verifies every
// vote's proof of plaintext knowledge in one batch and drops (and names,
// BadVotes) the votes whose proofs fail; it refuses
// (ErrTooFewContributors, nothing to decrypt) below MinContributors, and
// refuses past the aggregator's budget (its ledger is charged here, before
// anything is decrypted).
func (a *Aggregator) Close(batch uint64) (*SignSet, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, err := a.batch(a.p.Session, batch)
	if err != nil {
		return nil, err
	}
	if !b.closed {
		var ids []uint32
		for id := range b.votes {
			ids = append(ids, id)
		}
		slices.Sort(ids)
		hash := a.p.Hash()
		claims := make([]voteClaim, len(ids))
		for i, id := range ids {
			claims[i] = voteClaim{ct: b.cts[id], proof: b.proofs[id], context: VoteContext(a.p.Session, hash, batch, id)}
		}
		for i, err := range verifyVotes(a.tpk.Public(), claims) {
			if err != nil {
				id := ids[i]
				b.badVotes[id] = err.Error()
				delete(b.votes, id)
				delete(b.cts, id)
				delete(b.proofs, id)
			}
		}
		if len(b.votes) < a.p.MinContributors {
			return nil, fmt.Errorf("%w: batch %d has %d valid votes, the noise calibration needs N − A = %d (PRIVACY-NOTES item 24); nothing decrypted", ErrTooFewContributors, batch, len(b.votes), a.p.MinContributors)
		}
		if !a.opt.IgnoreBudget {
			labels := make([]string, b.rows)
			for q := range labels {
				labels[q] = fmt.Sprintf("dppp %x batch %d query %d", a.p.Session[:6], batch, q)
			}
			if err := chargeQueries(a.ledger, labels, a.p.Epsilon, a.p.Delta); err != nil {
				return nil, fmt.Errorf("dppp: aggregator ledger: %w", err)
			}
		}
		for id := range b.votes {
			b.contrib = append(b.contrib, id)
		}
		slices.Sort(b.contrib)
		cts := make([]*paillier.Ciphertext, len(b.contrib))
		for i, id := range b.contrib {
			cts[i] = b.cts[id]
			b.set = append(b.set, SetEntry{From: id, Ciphertext: sha256.Sum256(b.votes[id]), Proof: sha256.Sum256(b.proofs[id])})
		}
		sum, err := a.tpk.Public().Sum(cts...)
		if err != nil {
			return nil, err
		}
		b.sum = sum
		if b.sumBytes, err = sum.MarshalBinary(); err != nil {
			return nil, err
		}
		b.closed = true
	}
	return &SignSet{Session: a.p.Session, Batch: batch, Set: append([]SetEntry(nil), b.set...)}, nil
}

// AddSetSignature records a contributor's signature of a closed batch's
// set (from is the authenticated sender). The aggregator does not verify
// it: the decrypting teachers do.
func (a *Aggregator) AddSetSignature(from uint32, m *SetSignature) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, err := a.batch(m.Session, m.Batch)
	if err != nil {
		return err
	}
	if from != m.From || !b.closed || b.votes[from] == nil {
		return fmt.Errorf("%w: set signature of batch %d from teacher %d, not a contributor", ErrStale, m.Batch, from)
	}
	if _, ok := b.setSigs[from]; ok {
		return ErrDuplicate
	}
	if a.opt.Verifier != nil {
		name := a.p.TeacherName(from)
		if err := a.opt.Verifier.Verify(name, m.Cert, m.Sig, SetDomain, SetStatement(a.p.Session, a.p.Hash(), m.Batch, b.set)...); err != nil {
			return fmt.Errorf("dppp: teacher %s's signature of the contributor set of batch %d does not verify: %w", name, m.Batch, err)
		}
	}
	b.setSigs[from] = m
	return nil
}

// Unsigned returns the contributors of a closed batch whose set signature
// is missing.
func (a *Aggregator) Unsigned(batch uint64) []uint32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, ok := a.batches[batch]
	if !ok {
		return nil
	}
	var out []uint32
	for _, id := range b.contrib {
		if b.setSigs[id] == nil {
			out = append(out, id)
		}
	}
	return out
}

// DecryptRequest returns the decryption request of a closed batch once
// every contributor signed its set (else ErrUnsigned, naming the
// missing ones: the batch must be abandoned). It carries the sum, every
// listed vote with its proof, and every contributor's set signature.
func (a *Aggregator) DecryptRequest(batch uint64) (*Decrypt, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, err := a.batch(a.p.Session, batch)
	if err != nil {
		return nil, err
	}
	if !b.closed {
		return nil, fmt.Errorf("dppp: batch %d is not closed", batch)
	}
	d := &Decrypt{Session: a.p.Session, Batch: batch, Sum: b.sumBytes, Contributors: append([]uint32(nil), b.contrib...)}
	var missing []string
	for _, id := range b.contrib {
		s := b.setSigs[id]
		if s == nil {
			missing = append(missing, a.p.TeacherName(id))
			continue
		}
		d.Ciphertexts = append(d.Ciphertexts, b.votes[id])
		d.Proofs = append(d.Proofs, b.proofs[id])
		d.Certs = append(d.Certs, s.Cert)
		d.Sigs = append(d.Sigs, s.Sig)
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: batch %d: no signature from %v; the batch is abandoned, nothing decrypted", ErrUnsigned, batch, missing)
	}
	return d, nil
}

// SingleVoteRequest, a TEST HOOK for a malicious aggregator, builds a
// decryption request for one teacher's vote alone.
func (a *Aggregator) SingleVoteRequest(batch uint64, victim uint32) (*Decrypt, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, err := a.batch(a.p.Session, batch)
	if err != nil {
		return nil, err
	}
	v, ok := b.votes[victim]
	if !ok {
		return nil, fmt.Errorf("dppp: no vote of %d", victim)
	}
	return &Decrypt{Session: a.p.Session, Batch: batch, Sum: v, Contributors: []uint32{victim}, Ciphertexts: [][]byte{v}, Proofs: [][]byte{b.proofs[victim]}, Certs: [][]byte{nil}, Sigs: [][]byte{nil}}, nil
}

// Ask returns up to k contributors not yet asked to decrypt (lowest IDs
// first, skipping those in exclude) and marks them asked.
func (a *Aggregator) Ask(batch uint64, k int, exclude map[uint32]bool) []uint32 {
	a.mu.Lock()
	defer a.mu.Unlock()
	b, ok := a.batches[batch]
	if !ok || !b.closed {
		return nil
	}
	var out []uint32
	for _, id := range b.contrib {
		if len(out) == k {
			break
		}
		if !b.asked[id] && !exclude[id] {
			b.asked[id] = true
			out = append(out, id)
		}
	}
	return out
}

// AddPartial records a partial decryption from teacher from. With
// VerifyEach its proof is checked now and a forgery is rejected (error
// naming the teacher); the teacher is then excluded from the combination.
func (a *Aggregator) AddPartial(from uint32, m *Partial) error {
	a.mu.Lock()
	b, err := a.batch(m.Session, m.Batch)
	if err != nil {
		a.mu.Unlock()
		return err
	}
	if from != m.From || !b.closed || !b.asked[from] {
		a.mu.Unlock()
		return fmt.Errorf("%w: partial decryption of batch %d from teacher %d, not asked", ErrStale, m.Batch, from)
	}
	if _, ok := b.partials[from]; ok {
		a.mu.Unlock()
		return ErrDuplicate
	}
	if _, ok := b.rejected[from]; ok {
		a.mu.Unlock()
		return ErrDuplicate
	}
	sum := b.sum
	a.mu.Unlock()
	name := a.p.TeacherName(from)
	pd, err := a.tpk.ParsePartialDecryption(m.Share)
	if err == nil && pd.Index() != int(from) {
		err = fmt.Errorf("index %d", pd.Index())
	}
	if err == nil && a.opt.Verification == VerifyEach {
		err = a.tpk.VerifyPartial(sum, pd)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err != nil {
		b.rejected[from] = err.Error()
		return fmt.Errorf("dppp: teacher %s: invalid partial decryption: %w", name, err)
	}
	b.partials[from] = pd
	return nil
}

// Reject records that a teacher refused or failed to decrypt.
func (a *Aggregator) Reject(batch uint64, from uint32, reason string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if b, ok := a.batches[batch]; ok {
		b.rejected[from] = reason
	}
}

// Ready reports how many partial decryptions are held for a batch.
func (a *Aggregator) Ready(batch uint64) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	if b, ok := a.batches[batch]; ok {
		return len(b.partials)
	}
	return 0
}

// Combine combines t valid partial decryptions and tallies the batch.
// Partial decryptions whose proofs fail in Combine are moved to Rejected;
// ErrTooFewDecryptors if fewer than t valid ones remain.
func (a *Aggregator) Combine(batch uint64) (*BatchResult, error) {
	a.mu.Lock()
	b, err := a.batch(a.p.Session, batch)
	if err != nil {
		a.mu.Unlock()
		return nil, err
	}
	if b.result != nil {
		a.mu.Unlock()
		return b.result, nil
	}
	parts := make([]*paillier.PartialDecryption, 0, len(b.partials))
	for _, pd := range b.partials {
		parts = append(parts, pd)
	}
	sum := b.sum
	a.mu.Unlock()
	if len(parts) < a.p.Threshold {
		return nil, fmt.Errorf("%w: batch %d: %d of t = %d", ErrTooFewDecryptors, batch, len(parts), a.p.Threshold)
	}
	comb, err := a.tpk.CombineWith(sum, parts, a.opt.Combine)
	a.mu.Lock()
	defer a.mu.Unlock()
	if comb != nil {
		for _, r := range comb.Rejected {
			delete(b.partials, uint32(r.Index))
			b.rejected[uint32(r.Index)] = fmt.Sprint(r.Err)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("%w: batch %d: %w", ErrTooFewDecryptors, batch, err)
	}
	raw, err := a.pack.Decode(comb.Plaintext, len(b.contrib))
	if err != nil {
		return nil, fmt.Errorf("dppp: batch %d: %w", batch, err)
	}
	hist, labels, err := a.p.Tally(raw, len(b.contrib), b.rows)
	if err != nil {
		return nil, err
	}
	res := &BatchResult{Batch: batch, Contributors: append([]uint32(nil), b.contrib...), Rejected: map[uint32]string{}, Raw: raw, Hist: hist, Labels: labels}
	for _, i := range comb.Used {
		res.Decryptors = append(res.Decryptors, uint32(i))
	}
	for id, r := range b.rejected {
		res.Rejected[id] = r
	}
	b.result = res
	return res, nil
}
