package dppp

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
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
	// agreed Params). It is charged once per query, before the teacher
	// partially decrypts.
	Ledger Ledger
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
}

type voteRecord struct {
	rows  [32]byte
	count int
	vote  *Vote
	ct    []byte
}

// Teacher is one teacher's state machine: no network code. Methods are
// safe for concurrent use.
type Teacher struct {
	cfg    TeacherConfig
	id     uint32
	mu     sync.Mutex
	p      *Params
	pack   *paillier.Packing
	ledger Ledger
	votes  map[uint64]*voteRecord
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
	if cfg.Noise == nil {
		cfg.Noise = noise.NewSecure()
	}
	if cfg.Random == nil {
		cfg.Random = rand.Reader
	}
	return &Teacher{cfg: cfg, votes: map[uint64]*voteRecord{}, decrypted: map[uint64][32]byte{}, partials: map[uint64]*Partial{}, used: map[[32]byte]uint64{}}, nil
}

// Name returns the teacher's name.
func (t *Teacher) Name() string { return t.cfg.Name }

func (t *Teacher) refuse(format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrRefused, t.cfg.Name, fmt.Sprintf(format, args...))
}

// Accept checks offered parameters against the teacher's own calibration
// and, if they agree, adopts them. The answer is an Accept carrying the
// parameters' hash; a mismatch is a *MismatchError naming the field.
func (t *Teacher) Accept(o *Offer) (*Accept, error) {
	want, err := Calibrate(t.cfg.Config, t.cfg.Key.PublicKey())
	if err != nil {
		return nil, fmt.Errorf("dppp: teacher %s cannot calibrate its own configuration: %w", t.cfg.Name, err)
	}
	p := o.Params.Clone()
	if err := p.Check(t.cfg.Name, want); err != nil {
		return nil, err
	}
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
	t.p, t.pack, t.id = p, pack, id
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

// HandleQuery labels a batch and returns the encrypted packed noisy vote.
// A replayed query (same batch, same rows) gets the same vote; the same
// batch with other rows is refused (one vote per batch).
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
	var ct *paillier.Ciphertext
	if t.cfg.Encryptor != nil {
		ct, err = t.cfg.Encryptor.Encrypt(m)
	} else {
		ct, err = t.cfg.Key.PublicKey().Public().Encrypt(t.cfg.Random, m)
	}
	if err != nil {
		return nil, err
	}
	b, err := ct.MarshalBinary()
	if err != nil {
		return nil, err
	}
	v := &Vote{Session: p.Session, Batch: q.Batch, From: t.id, Ciphertext: b}
	t.mu.Lock()
	defer t.mu.Unlock()
	if rec, ok := t.votes[q.Batch]; ok { // a concurrent replay won
		return rec.vote, nil
	}
	t.votes[q.Batch] = &voteRecord{rows: h, count: len(q.Rows), vote: v, ct: b}
	if t.cfg.RevealShares != nil {
		t.cfg.RevealShares(q.Batch, values)
	}
	return v, nil
}

// HandleDecrypt partially decrypts a batch's sum after checking, in order:
// the session; that the teacher voted in the batch and its own vote is
// among the contributors byte for byte; at least MinContributors distinct
// roster teachers; that it has not decrypted another sum for this batch
// (the same sum again gets the same answer, charged once) nor another sum
// sharing a contributor ciphertext; that the sum is the product of the
// listed ciphertexts; its own record of answered queries and its ledger
// (charged here, before decrypting); then paillier's DecryptSum, which
// re-checks product and minimum.
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
	if len(d.Contributors) != len(d.Ciphertexts) {
		return nil, t.refuse("batch %d: %d contributors, %d ciphertexts", d.Batch, len(d.Contributors), len(d.Ciphertexts))
	}
	if len(d.Contributors) < p.MinContributors {
		return nil, t.refuse("batch %d: %d contributors, the noise calibration needs at least %d (PRIVACY-NOTES item 24)", d.Batch, len(d.Contributors), p.MinContributors)
	}
	seen := map[uint32]bool{}
	own := false
	pk := t.cfg.Key.PublicKey().Public()
	cts := make([]*paillier.Ciphertext, len(d.Ciphertexts))
	hashes := make([][32]byte, len(d.Ciphertexts))
	for i, id := range d.Contributors {
		if p.TeacherName(id) == "" || seen[id] {
			return nil, t.refuse("batch %d: contributor %d unknown or repeated", d.Batch, id)
		}
		seen[id] = true
		if id == t.id {
			if string(d.Ciphertexts[i]) != string(rec.ct) {
				return nil, t.refuse("batch %d: the ciphertext listed as its own vote is not the one it sent", d.Batch)
			}
			own = true
		}
		ct, err := pk.ParseCiphertext(d.Ciphertexts[i])
		if err != nil {
			return nil, t.refuse("batch %d: contributor %d: %v", d.Batch, id, err)
		}
		cts[i] = ct
		hashes[i] = sha256.Sum256(d.Ciphertexts[i])
		if b, ok := t.used[hashes[i]]; ok && b != d.Batch {
			return nil, t.refuse("batch %d: contributor %d's ciphertext was already in the sum of batch %d (each vote in at most one sum)", d.Batch, id, b)
		}
	}
	if !own {
		return nil, t.refuse("batch %d: its own vote is not in the sum", d.Batch)
	}
	sum, err := pk.ParseCiphertext(d.Sum)
	if err != nil {
		return nil, t.refuse("batch %d: sum: %v", d.Batch, err)
	}
	prod, err := pk.Sum(cts...)
	if err != nil || prod.Value().Cmp(sum.Value()) != 0 {
		return nil, t.refuse("batch %d: the ciphertext is not the product of the listed votes", d.Batch)
	}
	if t.answered+rec.count > p.MaxQueries {
		return nil, fmt.Errorf("%w: %w: teacher %s answered %d of %d queries", ErrRefused, ErrBudget, t.cfg.Name, t.answered, p.MaxQueries)
	}
	for q := 0; q < rec.count; q++ {
		if err := t.ledger.Charge(fmt.Sprintf("dppp %x batch %d query %d", p.Session[:6], d.Batch, q), p.Epsilon, p.Delta); err != nil {
			return nil, fmt.Errorf("%w: %s: ledger: %w", ErrRefused, t.cfg.Name, err)
		}
	}
	t.answered += rec.count
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
	for _, h := range hashes {
		t.used[h] = d.Batch
	}
	return out, nil
}

// Answered returns the number of queries this teacher has partially
// decrypted (its own record).
func (t *Teacher) Answered() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.answered
}
