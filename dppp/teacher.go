package dppp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"reflect"
	"sync"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/paillier"
)

// ErrRefused is wrapped by every refusal of a teacher.
var ErrRefused = errors.New("dppp: teacher refused")

// PredictFunc labels rows (a classify.Predictor's PredictBatch fits).
type PredictFunc func(ctx context.Context, rows [][]float64) ([]int, error)

// TeacherConfig configures one teacher.
type TeacherConfig struct {
	// Name is the teacher's roster name.
	Name string
	// Config is the deployment as this teacher configured it; offered
	// Params are checked against Calibrate(Config, key).
	Config Config
	// Key is the teacher's threshold Paillier share.
	Key *paillier.KeyShare
	// Predict labels query rows.
	Predict PredictFunc
	// Ledger is the teacher's own budget ledger (nil: a Budget of the
	// agreed Params). It is charged once per query of a batch before the
	// teacher sends its vote on the batch (a vote enters at most one
	// decrypted sum, so this covers every answer the vote is in, whoever
	// decrypts it); the teacher never votes in a batch it cannot pay for.
	Ledger Ledger
	// Signer signs the contributor sets this teacher agrees to and
	// verifies the other contributors' signatures before it decrypts
	// (required unless Unsigned).
	Signer Signer
	// Unsigned runs the teacher WITHOUT set signatures: it signs nothing
	// and checks no other contributor's signature, so it relies on its own
	// memory (one sum per batch) only, and a malicious aggregator can have
	// two different sums holding its vote decrypted by two quorums
	// (differencing). For tests and --insecure runs only; NewTeacher
	// refuses Signer and Unsigned together, and neither.
	Unsigned bool
	// Noise is the noise source (nil: noise.NewSecure()).
	Noise noise.Source
	// Random feeds encryption and proof nonces (nil: crypto/rand).
	Random io.Reader
	// Encryptor, if set, is the fast encryptor for the key (else the
	// reference PublicKey.Encrypt).
	Encryptor *paillier.Encryptor
	// RevealShares, a TEST HOOK that breaks privacy, receives the teacher's
	// plaintext packed values of every batch (for the plaintext reference).
	RevealShares func(batch uint64, values []int64)
	// ForgePartial, a TEST HOOK, makes the teacher answer decryption
	// requests with a partial decryption of another ciphertext (a lying
	// teacher).
	ForgePartial bool
	// Calibrated, if set, is Calibrate(Config, Key.PublicKey()) already
	// computed by this teacher's operator, so that teachers run in one
	// process (simulations, tests) share one PLD calibration (about a
	// second each) instead of repeating it. NewTeacher refuses it unless
	// its configuration and key are this teacher's; it is cloned, and must
	// not have been modified after Calibrate. nil: the teacher calibrates.
	Calibrated *Params
}

type voteRecord struct {
	rows  [32]byte
	count int
	vote  *Vote
	ct    []byte
	entry SetEntry
	// set is the contributor set this teacher signed for the batch (nil:
	// none yet) and sig its answer.
	set []SetEntry
	sig *SetSignature
}

// Teacher is one teacher's state machine: no network code. Methods are
// safe for concurrent use.
type Teacher struct {
	cfg TeacherConfig
	// calOnce guards cal and calErr, the teacher's own calibration.
	calOnce sync.Once
	cal     *Params
	calErr  error
	id      uint32
	mu      sync.Mutex
	p       *Params
	hash    [32]byte
	pack    *paillier.Packing
	ledger  Ledger
	votes   map[uint64]*voteRecord
	// decrypted: batch → hash of the sum and the partial sent; used:
	// contributor ciphertext hash → batch of the sum it was decrypted in.
	decrypted map[uint64][32]byte
	partials  map[uint64]*Partial
	used      map[[32]byte]uint64
	answered  int
}

// NewTeacher returns a teacher that has not agreed to parameters yet.
func NewTeacher(cfg TeacherConfig) (*Teacher, error) {
	if cfg.Key == nil || cfg.Predict == nil {
		return nil, fmt.Errorf("dppp: teacher %s needs a key share and a predictor", cfg.Name)
	}
	if (cfg.Signer == nil) == !cfg.Unsigned {
		return nil, fmt.Errorf("dppp: teacher %s needs a Signer (set signatures), or Unsigned explicitly: choose one", cfg.Name)
	}
	if cfg.Noise == nil {
		cfg.Noise = noise.NewSecure()
	}
	if cfg.Random == nil {
		cfg.Random = rand.Reader
	}
	t := &Teacher{cfg: cfg, votes: map[uint64]*voteRecord{}, decrypted: map[uint64][32]byte{}, partials: map[uint64]*Partial{}, used: map[[32]byte]uint64{}}
	if cal := cfg.Calibrated; cal != nil {
		own := cfg.Config.withDefaults()
		if own.Queries > 0 {
			// Calibrated to a total budget: the per-query (ε, δ) are
			// derived by Calibrate from the fields compared here.
			own.Epsilon, own.Delta = cal.Epsilon, cal.Delta
		}
		if !reflect.DeepEqual(cal.Config, own) || cal.Key != cfg.Key.PublicKey().ID() {
			return nil, fmt.Errorf("dppp: teacher %s: the shared calibration is of another configuration or key", cfg.Name)
		}
		cal = cal.Clone()
		t.calOnce.Do(func() { t.cal = cal })
	}
	// Calibrate now (about half a second with the PLD accountant), not
	// while an aggregator waits for the acceptance; an error is returned
	// by Accept.
	_, _ = t.calibration()
	return t, nil
}

// Unsigned reports whether the teacher runs without set signatures
// (TeacherConfig.Unsigned).
func (t *Teacher) Unsigned() bool { return t.cfg.Unsigned }

// Name returns the teacher's name.
func (t *Teacher) Name() string { return t.cfg.Name }

func (t *Teacher) refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrRefused, t.cfg.Name, fmt.Sprintf(format, args...))
}

// calibration is Calibrate of the teacher's own configuration, computed
// once (the PLD calibration can take a second; the configuration never
// changes).
func (t *Teacher) calibration() (*Params, error) {
	t.calOnce.Do(func() { t.cal, t.calErr = Calibrate(t.cfg.Config, t.cfg.Key.PublicKey()) })
	return t.cal, t.calErr
}

// Accept checks offered parameters against the teacher's own calibration
// and, if they agree, adopts them. The answer is an Accept carrying the
// parameters' hash; a mismatch is a *MismatchError naming the field.
func (t *Teacher) Accept(o *Offer) (*Accept, error) {
	want, err := t.calibration()
	if err != nil {
		return nil, fmt.Errorf("dppp: teacher %s cannot calibrate its own configuration: %w", t.cfg.Name, err)
	}
	p := o.Params.Clone()
	if err := p.Check(t.cfg.Name, want); err != nil {
		return nil, err
	}
	// Equal in every field: use the teacher's own cached PLD accountant.
	p.acct = want.acct
	id := p.TeacherID(t.cfg.Name)
	if id == 0 || int(id) != t.cfg.Key.Index() {
		return nil, &MismatchError{Teacher: t.cfg.Name, Field: "teachers", Got: fmt.Sprint(p.Teachers), Want: fmt.Sprintf("%s at position %d (its key share index)", t.cfg.Name, t.cfg.Key.Index())}
	}
	pack, err := p.packing(t.cfg.Key.PublicKey().Public())
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.p != nil && t.p.Session != p.Session {
		return nil, t.refuse("already serving session %x", t.p.Session[:6])
	}
	t.p, t.pack, t.id, t.hash = p, pack, id, p.Hash()
	t.ledger = t.cfg.Ledger
	if t.ledger == nil {
		t.ledger = NewBudget(p)
	}
	return &Accept{Session: p.Session, From: id, Hash: p.Hash()}, nil
}

func hashRows(rows [][]float64) [32]byte {
	w := &writer{}
	_ = writeRows(w, rows)
	return sha256.Sum256(w.Bytes())
}

// HandleQuery labels a batch and returns the encrypted packed noisy vote
// with its proof of plaintext knowledge. The teacher charges its budget
// (its count against MaxQueries and its Ledger) for the batch's queries
// before it returns the vote, and refuses a batch it cannot pay for. A
// replayed query (same batch, same rows) gets the same vote, charged once;
// the same batch with other rows is refused (one vote per batch).
func (t *Teacher) HandleQuery(ctx context.Context, q *Query) (*Vote, error) {
	t.mu.Lock()
	p := t.p
	if p == nil {
		t.mu.Unlock()
		return nil, t.refuse("no agreed parameters")
	}
	if q.Session != p.Session {
		t.mu.Unlock()
		return nil, t.refuse("query of session %x, serving %x", q.Session[:6], p.Session[:6])
	}
	h := hashRows(q.Rows)
	if rec, ok := t.votes[q.Batch]; ok {
		t.mu.Unlock()
		if rec.rows != h {
			return nil, t.refuse("batch %d asked again with other rows", q.Batch)
		}
		return rec.vote, nil
	}
	if t.answered+len(q.Rows) > p.MaxQueries {
		t.mu.Unlock()
		return nil, fmt.Errorf("%w: %w: teacher %s answered %d of %d queries", ErrRefused, ErrBudget, t.cfg.Name, t.answered, p.MaxQueries)
	}
	t.mu.Unlock()
	if len(q.Rows) == 0 || len(q.Rows) > p.QPC {
		return nil, t.refuse("batch %d has %d rows, want 1..%d", q.Batch, len(q.Rows), p.QPC)
	}
	for _, r := range q.Rows {
		if len(r) != p.Features {
			return nil, t.refuse("row of %d features, want %d", len(r), p.Features)
		}
	}
	labels, err := t.cfg.Predict(ctx, q.Rows)
	if err != nil {
		return nil, fmt.Errorf("dppp: teacher %s: predict: %w", t.cfg.Name, err)
	}
	if len(labels) != len(q.Rows) {
		return nil, fmt.Errorf("dppp: teacher %s: predictor returned %d labels for %d rows", t.cfg.Name, len(labels), len(q.Rows))
	}
	values, err := p.Share(t.cfg.Noise, labels)
	if err != nil {
		return nil, err
	}
	m, err := t.pack.Encode(values)
	if err != nil {
		return nil, err
	}
	ct, proof, err := encryptVote(t.cfg.Key.PublicKey().Public(), t.cfg.Encryptor, t.cfg.Random, m, VoteContext(p.Session, t.hash, q.Batch, t.id))
	if err != nil {
		return nil, err
	}
	b, err := ct.MarshalBinary()
	if err != nil {
		return nil, err
	}
	v := &Vote{Session: p.Session, Batch: q.Batch, From: t.id, Ciphertext: b, Proof: proof}
	t.mu.Lock()
	defer t.mu.Unlock()
	if rec, ok := t.votes[q.Batch]; ok { // a concurrent replay won
		return rec.vote, nil
	}
	// Charge before the vote leaves (issue 22, item 4).
	if t.answered+len(q.Rows) > p.MaxQueries {
		return nil, fmt.Errorf("%w: %w: teacher %s answered %d of %d queries", ErrRefused, ErrBudget, t.cfg.Name, t.answered, p.MaxQueries)
	}
	charges := make([]string, len(q.Rows))
	for i := range charges {
		charges[i] = fmt.Sprintf("dppp %x batch %d query %d", p.Session[:6], q.Batch, i)
	}
	if err := chargeQueries(t.ledger, charges, p.Epsilon, p.Delta); err != nil {
		return nil, fmt.Errorf("%w: %s: ledger: %w", ErrRefused, t.cfg.Name, err)
	}
	t.answered += len(q.Rows)
	t.votes[q.Batch] = &voteRecord{rows: h, count: len(q.Rows), vote: v, ct: b,
		entry: SetEntry{From: t.id, Ciphertext: sha256.Sum256(b), Proof: sha256.Sum256(proof)}}
	if t.cfg.RevealShares != nil {
		t.cfg.RevealShares(q.Batch, values)
	}
	return v, nil
}

// checkSet checks a contributor set: ascending distinct roster IDs, at
// least MinContributors, this teacher's own vote in it byte for byte.
func (t *Teacher) checkSet(p *Params, batch uint64, rec *voteRecord, set []SetEntry) error {
	if len(set) < p.MinContributors {
		return t.refuse("batch %d: %d contributors, the noise calibration needs at least N − A = %d (PRIVACY-NOTES item 24)", batch, len(set), p.MinContributors)
	}
	own := false
	for i, e := range set {
		if p.TeacherName(e.From) == "" || (i > 0 && e.From <= set[i-1].From) {
			return t.refuse("batch %d: contributor %d unknown, repeated or out of order", batch, e.From)
		}
		if e.From == t.id {
			if e != rec.entry {
				return t.refuse("batch %d: the vote listed as its own is not the one it sent", batch)
			}
			own = true
		}
	}
	if !own {
		return t.refuse("batch %d: its own vote is not in the set", batch)
	}
	return nil
}

// HandleSignSet answers the consistency round of a batch: it signs the
// contributor set if the teacher voted in the batch, its own vote is in the
// set byte for byte, the set has at least MinContributors distinct roster
// teachers in ascending order, and it has signed no other set for this
// batch (the identical set again gets the same signature). An Unsigned
// teacher answers with an empty signature after the same checks.
func (t *Teacher) HandleSignSet(m *SignSet) (*SetSignature, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.p
	if p == nil {
		return nil, t.refuse("no agreed parameters")
	}
	if m.Session != p.Session {
		return nil, t.refuse("set of session %x, serving %x", m.Session[:6], p.Session[:6])
	}
	rec, ok := t.votes[m.Batch]
	if !ok {
		return nil, t.refuse("batch %d: asked to sign the set of a batch it did not vote in", m.Batch)
	}
	if rec.set != nil {
		if setEqual(rec.set, m.Set) {
			return rec.sig, nil
		}
		return nil, t.refuse("batch %d: already signed another contributor set for this batch (one set per batch: a second set would let two different sums holding its vote be decrypted)", m.Batch)
	}
	if err := t.checkSet(p, m.Batch, rec, m.Set); err != nil {
		return nil, err
	}
	out := &SetSignature{Session: p.Session, Batch: m.Batch, From: t.id}
	if t.cfg.Signer != nil {
		cert, sig, err := t.cfg.Signer.Sign(SetDomain, SetStatement(p.Session, t.hash, m.Batch, m.Set)...)
		if err != nil {
			return nil, fmt.Errorf("dppp: teacher %s: signing the set: %w", t.cfg.Name, err)
		}
		out.Cert, out.Sig = cert, sig
	}
	rec.set = append([]SetEntry(nil), m.Set...)
	rec.sig = out
	return out, nil
}

// HandleDecrypt partially decrypts a batch's sum after checking, in order:
// the session; that the teacher voted in the batch; that the request
// lists exactly the contributor set it signed for this batch (so its own
// vote byte for byte, at least MinContributors distinct roster teachers);
// that every other listed contributor signed that set (Signer); that every
// listed vote's proof of plaintext knowledge verifies in its own context
// (session, parameters, batch, contributor); that the sum is the product of
// the listed ciphertexts; then paillier's DecryptSum, which re-checks
// product and minimum. The budget was charged when the teacher voted;
// decrypting charges nothing more. The same request again gets the same
// answer.
func (t *Teacher) HandleDecrypt(d *Decrypt) (*Partial, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	p := t.p
	if p == nil {
		return nil, t.refuse("no agreed parameters")
	}
	if d.Session != p.Session {
		return nil, t.refuse("decrypt of session %x, serving %x", d.Session[:6], p.Session[:6])
	}
	rec, ok := t.votes[d.Batch]
	if !ok {
		return nil, t.refuse("batch %d: asked to decrypt a batch it did not vote in", d.Batch)
	}
	sumHash := sha256.Sum256(d.Sum)
	if prev, ok := t.decrypted[d.Batch]; ok {
		if prev == sumHash {
			return t.partials[d.Batch], nil
		}
		return nil, t.refuse("batch %d: already decrypted another sum for this batch (one sum per query)", d.Batch)
	}
	set := d.Set()
	if set == nil || len(d.Certs) != len(set) || len(d.Sigs) != len(set) {
		return nil, t.refuse("batch %d: %d contributors, %d ciphertexts, %d proofs, %d signatures", d.Batch, len(d.Contributors), len(d.Ciphertexts), len(d.Proofs), len(d.Sigs))
	}
	if err := t.checkSet(p, d.Batch, rec, set); err != nil {
		return nil, err
	}
	if rec.set == nil {
		return nil, t.refuse("batch %d: asked to decrypt before it signed the batch's contributor set", d.Batch)
	}
	if !setEqual(rec.set, set) {
		return nil, t.refuse("batch %d: the sum is not of the contributor set it signed (one set per batch)", d.Batch)
	}
	pk := t.cfg.Key.PublicKey().Public()
	cts := make([]*paillier.Ciphertext, len(d.Ciphertexts))
	claims := make([]voteClaim, len(d.Ciphertexts))
	for i, id := range d.Contributors {
		ct, err := pk.ParseCiphertext(d.Ciphertexts[i])
		if err != nil {
			return nil, t.refuse("batch %d: contributor %d: %v", d.Batch, id, err)
		}
		cts[i] = ct
		claims[i] = voteClaim{ct: ct, proof: d.Proofs[i], context: VoteContext(p.Session, t.hash, d.Batch, id)}
		if b, ok := t.used[set[i].Ciphertext]; ok && b != d.Batch {
			return nil, t.refuse("batch %d: contributor %d's ciphertext was already in the sum of batch %d (each vote in at most one sum)", d.Batch, id, b)
		}
	}
	if t.cfg.Signer != nil {
		st := SetStatement(p.Session, t.hash, d.Batch, set)
		for i, id := range d.Contributors {
			if id == t.id {
				continue
			}
			if err := t.cfg.Signer.Verify(p.TeacherName(id), d.Certs[i], d.Sigs[i], SetDomain, st...); err != nil {
				return nil, t.refuse("batch %d: contributor %d (%s) did not sign this contributor set (%v): refusing a sum that another quorum could be asked to decrypt with other contributors", d.Batch, id, p.TeacherName(id), err)
			}
		}
	}
	for i, err := range verifyVotes(pk, claims) {
		if err != nil {
			return nil, t.refuse("batch %d: the vote of contributor %d (%s) has no valid proof of plaintext knowledge: %v", d.Batch, d.Contributors[i], p.TeacherName(d.Contributors[i]), err)
		}
	}
	sum, err := pk.ParseCiphertext(d.Sum)
	if err != nil {
		return nil, t.refuse("batch %d: sum: %v", d.Batch, err)
	}
	prod, err := pk.Sum(cts...)
	if err != nil || prod.Value().Cmp(sum.Value()) != 0 {
		return nil, t.refuse("batch %d: the ciphertext is not the product of the listed votes", d.Batch)
	}
	target := sum
	if t.cfg.ForgePartial {
		one, _ := pk.Encrypt(t.cfg.Random, bigOne)
		target, _ = pk.Add(sum, one)
	}
	var pd *paillier.PartialDecryption
	if t.cfg.ForgePartial {
		pd, err = t.cfg.Key.Decrypt(t.cfg.Random, target)
	} else {
		pd, err = t.cfg.Key.DecryptSum(t.cfg.Random, sum, cts, p.MinContributors)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrRefused, t.cfg.Name, err)
	}
	b, err := pd.MarshalBinary()
	if err != nil {
		return nil, err
	}
	out := &Partial{Session: p.Session, Batch: d.Batch, From: t.id, Share: b}
	t.decrypted[d.Batch] = sumHash
	t.partials[d.Batch] = out
	for _, e := range set {
		t.used[e.Ciphertext] = d.Batch
	}
	return out, nil
}

// Answered returns the number of queries this teacher has charged to its
// budget: the queries of every batch it voted in.
func (t *Teacher) Answered() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.answered
}

// Decrypted returns the number of batches this teacher partially
// decrypted.
func (t *Teacher) Decrypted() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.decrypted)
}
