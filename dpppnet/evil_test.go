package dpppnet

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/paillier"
	"github.com/dplearn/dplearn/transport"
)

// evilAggregator is a malicious aggregator built from the transport and
// the dppp message types: it speaks the protocol to honest teachers
// (Teach over gRPC with mutual TLS on 127.0.0.1, each signing contributor
// sets with its TLS certificate's key) but sends whatever it likes. With
// colluders it also holds those teachers' key shares and certificates.
type evilAggregator struct {
	t     *testing.T
	n     *testNet
	f     *fixture
	agg   *dppp.Aggregator
	p     *dppp.Params
	round uint64
	// votes[id] of the current batch.
	votes map[uint32]*dppp.Vote
	// signers are the colluders' (their certificates).
	signers map[uint32]dppp.Signer
}

// newEvil deploys cfg's teachers over gRPC with mutual TLS, every teacher
// but the colluders running Teach with its certificate as its Signer, and
// agrees on the parameters with them. The colluders are not started: the
// evil aggregator acts for them.
func newEvil(t *testing.T, ctx context.Context, f *fixture, cfg dppp.Config, opt dppp.AggregatorOptions, colluders ...uint32) (*evilAggregator, *deployment, *sync.WaitGroup) {
	t.Helper()
	p0, err := dppp.Calibrate(cfg, f.TPK)
	if err != nil {
		t.Fatal(err)
	}
	n := newNet(t, ctx, grpcNet, HubConfig(p0))
	signer := func(name string) dppp.Signer {
		s, err := certs.NewStatementSigner(n.parties[name])
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	d := f.deployConfig(t, cfg, func(i int, tc *dppp.TeacherConfig) { tc.Signer = signer(tc.Name) })
	agg, err := dppp.NewAggregator(d.p, f.TPK, opt)
	if err != nil {
		t.Fatal(err)
	}
	e := &evilAggregator{t: t, n: n, f: f, agg: agg, p: d.p, signers: map[uint32]dppp.Signer{}}
	var skip []string
	for _, c := range colluders {
		skip = append(skip, d.p.TeacherName(c))
		e.signers[c] = signer(d.p.TeacherName(c))
	}
	wg := startTeachers(t, ctx, n, d.teachers, nil, nil, skip...)
	n.hub.SetRound(0)
	for _, id := range e.honest() {
		e.send(ctx, id, agg.Offer())
	}
	for range e.honest() {
		from, m := e.recv(ctx)
		if a, ok := m.(*dppp.Accept); !ok || agg.CheckAccept(a) != nil {
			t.Fatalf("teacher %d answered the offer with %T", from, m)
		}
	}
	return e, d, wg
}

func (e *evilAggregator) honest() []uint32 {
	var out []uint32
	for id := uint32(1); id <= uint32(e.p.N()); id++ {
		if e.signers[id] == nil {
			out = append(out, id)
		}
	}
	return out
}

func (e *evilAggregator) send(ctx context.Context, id uint32, m dppp.Message) {
	e.t.Helper()
	b, err := m.MarshalBinary()
	if err != nil {
		e.t.Fatal(err)
	}
	if err := e.n.hub.SendTo(ctx, e.p.TeacherName(id), transport.Envelope{Round: e.round, Type: m.Type(), Payload: b}); err != nil {
		e.t.Fatal(err)
	}
}

// recv returns the next teacher message (within 30 s).
func (e *evilAggregator) recv(ctx context.Context) (uint32, dppp.Message) {
	e.t.Helper()
	select {
	case env := <-e.n.hub.Inbox():
		m, err := dppp.Unmarshal(env.Payload)
		if err != nil {
			e.t.Fatalf("from %s: %v", env.Sender, err)
		}
		return e.p.TeacherID(env.Sender), m
	case <-time.After(30 * time.Second):
		e.t.Fatal("no message from the teachers within 30 s")
	case <-ctx.Done():
		e.t.Fatal(ctx.Err())
	}
	return 0, nil
}

// vote sends a batch to every honest teacher and collects the votes; the
// colluders vote honestly too (their own encryptions, with proofs). It
// returns the batch and the honest refusals.
func (e *evilAggregator) vote(ctx context.Context, rows [][]float64) (uint64, map[uint32]string) {
	e.t.Helper()
	q, err := e.agg.NewBatch(rows)
	if err != nil {
		e.t.Fatal(err)
	}
	e.round = q.Batch
	e.n.hub.SetRound(q.Batch)
	e.votes = map[uint32]*dppp.Vote{}
	refused := map[uint32]string{}
	for _, id := range e.honest() {
		e.send(ctx, id, q)
	}
	for range e.honest() {
		from, m := e.recv(ctx)
		switch m := m.(type) {
		case *dppp.Vote:
			e.votes[from] = m
		case *dppp.Refuse:
			refused[from] = m.Reason
		default:
			e.t.Fatalf("teacher %d answered the query with %T", from, m)
		}
	}
	return q.Batch, refused
}

// request lists votes (ascending IDs) with their product as the sum.
func (e *evilAggregator) request(batch uint64, votes map[uint32]*dppp.Vote) *dppp.Decrypt {
	e.t.Helper()
	pk := e.f.TPK.Public()
	d := &dppp.Decrypt{Session: e.p.Session, Batch: batch}
	var ids []uint32
	for id := range votes {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	var cts []*paillier.Ciphertext
	for _, id := range ids {
		d.Contributors = append(d.Contributors, id)
		d.Ciphertexts = append(d.Ciphertexts, votes[id].Ciphertext)
		d.Proofs = append(d.Proofs, votes[id].Proof)
		d.Certs, d.Sigs = append(d.Certs, nil), append(d.Sigs, nil)
		cts = append(cts, mustCT(e.t, pk, votes[id].Ciphertext))
	}
	sum, err := pk.Sum(cts...)
	if err != nil {
		e.t.Fatal(err)
	}
	d.Sum, _ = sum.MarshalBinary()
	return d
}

// sign asks the listed honest teachers in who to sign d's set over the
// network (the colluders sign with their certificates); the signatures go
// into d, the refusals are returned.
func (e *evilAggregator) sign(ctx context.Context, d *dppp.Decrypt, who []uint32) map[uint32]string {
	e.t.Helper()
	set := d.Set()
	refused := map[uint32]string{}
	for i, id := range d.Contributors {
		if s := e.signers[id]; s != nil {
			var err error
			d.Certs[i], d.Sigs[i], err = s.Sign(dppp.SetDomain, dppp.SetStatement(e.p.Session, e.p.Hash(), d.Batch, set)...)
			if err != nil {
				e.t.Fatal(err)
			}
			continue
		}
		if !slices.Contains(who, id) {
			continue
		}
		e.send(ctx, id, &dppp.SignSet{Session: d.Session, Batch: d.Batch, Set: set})
		from, m := e.recv(ctx)
		switch m := m.(type) {
		case *dppp.SetSignature:
			if from != id {
				e.t.Fatalf("answer from %d, asked %d", from, id)
			}
			d.Certs[i], d.Sigs[i] = m.Cert, m.Sig
		case *dppp.Refuse:
			refused[from] = m.Reason
		default:
			e.t.Fatalf("teacher %d answered with %T", from, m)
		}
	}
	return refused
}

// ask sends d to teacher id and returns the teacher's answer.
func (e *evilAggregator) ask(ctx context.Context, id uint32, d *dppp.Decrypt) dppp.Message {
	e.t.Helper()
	e.send(ctx, id, d)
	from, m := e.recv(ctx)
	if from != id {
		e.t.Fatalf("answer from %d, asked %d", from, id)
	}
	return m
}

// done tells every teacher the run is over.
func (e *evilAggregator) done(ctx context.Context, wg *sync.WaitGroup) {
	for _, id := range e.honest() {
		_ = e.n.hub.SendTo(ctx, e.p.TeacherName(id), transport.Envelope{Round: e.round, Type: TypeDone, Payload: []byte("done")})
	}
	wg.Wait()
}

// TestNetMaliciousAggregatorSingleVote: an aggregator that asks teacher01
// to sign or decrypt its own vote alone, below N − A, or a set without its
// vote, is refused each time with the reason; nothing is decrypted.
func TestNetMaliciousAggregatorSingleVote(t *testing.T) {
	f := getFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	e, d, wg := newEvil(t, ctx, f, f.config(), dppp.AggregatorOptions{})
	defer e.done(ctx, wg)
	batch, _ := e.vote(ctx, f.Rows[:3])
	pick := func(ids ...uint32) map[uint32]*dppp.Vote {
		out := map[uint32]*dppp.Vote{}
		for _, id := range ids {
			out[id] = e.votes[id]
		}
		return out
	}
	for _, c := range []struct {
		name string
		d    *dppp.Decrypt
		want string
	}{
		{"its vote alone", e.request(batch, pick(1)), "needs at least N − A = 6"},
		{"five votes", e.request(batch, pick(1, 2, 3, 4, 5)), "needs at least N − A = 6"},
		{"a set without its vote", e.request(batch, pick(2, 3, 4, 5, 6, 7, 8)), "its own vote is not in the set"},
	} {
		e.send(ctx, 1, &dppp.SignSet{Session: c.d.Session, Batch: c.d.Batch, Set: c.d.Set()})
		var r [2]string
		if _, m := e.recv(ctx); true {
			if rf, ok := m.(*dppp.Refuse); ok {
				r[1] = rf.Reason
			}
		}
		if !strings.Contains(r[1], c.want) {
			t.Errorf("%s: signing refused with %q, want %q", c.name, r[1], c.want)
		}
		m := e.ask(ctx, 1, c.d)
		if rf, ok := m.(*dppp.Refuse); !ok {
			t.Fatalf("%s: teacher01 answered with a %T", c.name, m)
		} else {
			t.Logf("%s: refused: %s", c.name, rf.Reason)
		}
	}
	if got := d.teachers[0].Decrypted(); got != 0 {
		t.Fatalf("teacher01 decrypted %d sums", got)
	}
	// The honest request is still answered.
	honest := e.request(batch, e.votes)
	if r := e.sign(ctx, honest, e.honest()); len(r) != 0 {
		t.Fatal(r)
	}
	if _, ok := e.ask(ctx, 1, honest).(*dppp.Partial); !ok {
		t.Fatal("teacher01 refused the honest sum after the attacks")
	}
}

// TestNetMaliciousAggregatorPastBudget: an aggregator ignoring its own
// budget (the deployment allows 3 queries; batches of 2) gets the first
// batch voted; every teacher refuses to vote in the second (it would pay
// for it before voting), so there is nothing to decrypt.
func TestNetMaliciousAggregatorPastBudget(t *testing.T) {
	f := getFixture(t)
	cfg := f.config()
	cfg.QueriesPerCiphertext = 2
	budgetFor(t, f, &cfg, 3) // 3 queries by the PLD accountant
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	e, d, wg := newEvil(t, ctx, f, cfg, dppp.AggregatorOptions{IgnoreBudget: true})
	defer e.done(ctx, wg)
	if d.p.MaxQueries != 3 {
		t.Fatalf("the budget allows %d queries, want 3", d.p.MaxQueries)
	}
	for b, rows := range [][][]float64{f.Rows[:2], f.Rows[2:4]} {
		_, refused := e.vote(ctx, rows)
		if b == 0 && len(refused) != 0 {
			t.Fatalf("batch 1 refused: %v", refused)
		}
		if b == 1 {
			if len(refused) != d.p.N() {
				t.Errorf("%d teachers refused to vote past their budget, want %d", len(refused), d.p.N())
			}
			for id, r := range refused {
				if !strings.Contains(r, dppp.ErrBudget.Error()) {
					t.Errorf("teacher %d refused: %s", id, r)
				}
			}
		}
	}
	for _, tt := range d.teachers {
		if tt.Answered() != 2 {
			t.Errorf("%s charged %d queries, want 2", tt.Name(), tt.Answered())
		}
	}
}

// TestNetAttackRogueVote: TestAttackRogueVote (package dppp) through the
// transport. Teacher10 colludes: the evil aggregator sends as its vote
// E(0)·Π_{h≠victim} v_h⁻¹ with the colluder's own proof of another
// ciphertext and signs the set with teacher10's certificate; the honest
// teachers sign the set (their votes are in it) and every one of them
// refuses to decrypt, naming teacher10's proof.
func TestNetAttackRogueVote(t *testing.T) {
	f := getFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	const victim, colluder = 2, 10
	e, d, wg := newEvil(t, ctx, f, f.config(), dppp.AggregatorOptions{}, colluder)
	defer e.done(ctx, wg)
	batch, _ := e.vote(ctx, f.Rows[:3])
	pk := f.TPK.Public()
	var others []*paillier.Ciphertext
	for id, v := range e.votes {
		if id != victim {
			others = append(others, mustCT(t, pk, v.Ciphertext))
		}
	}
	prod, _ := pk.Sum(others...)
	zero, _ := pk.Encrypt(rand.Reader, big.NewInt(0))
	forged, _ := pk.NewCiphertext(new(big.Int).Mod(new(big.Int).Mul(new(big.Int).ModInverse(prod.Value(), pk.NSquared()), zero.Value()), pk.NSquared()))
	fb, _ := forged.MarshalBinary()
	_, proof, err := pk.EncryptWithProof(rand.Reader, big.NewInt(3), dppp.VoteContext(d.p.Session, d.p.Hash(), batch, colluder))
	if err != nil {
		t.Fatal(err)
	}
	pb, _ := proof.MarshalBinary()
	votes := map[uint32]*dppp.Vote{colluder: {Session: d.p.Session, Batch: batch, From: colluder, Ciphertext: fb, Proof: pb}}
	for id, v := range e.votes {
		votes[id] = v
	}
	req := e.request(batch, votes)
	if r := e.sign(ctx, req, e.honest()); len(r) != 0 {
		t.Fatalf("the honest teachers refused to sign: %v", r)
	}
	for _, id := range e.honest() {
		switch m := e.ask(ctx, id, req).(type) {
		case *dppp.Refuse:
			if !strings.Contains(m.Reason, "teacher10") || !strings.Contains(m.Reason, "proof of plaintext knowledge") {
				t.Errorf("teacher %d refused for another reason: %s", id, m.Reason)
			}
		default:
			t.Errorf("teacher %d answered the cancelling sum with a %T", id, m)
		}
	}
}

// TestNetAttackDifferencing: TestAttackDifferencing (package dppp) through
// the transport, with teachers 8, 9, 10 colluding (their certificates in
// the aggregator's hands). The honest teachers sign sum A (all votes);
// asked to sign B (all but teacher07's) they refuse, and asked to decrypt B
// with the colluders' signatures and their own signatures of A they
// refuse: only A can be decrypted.
func TestNetAttackDifferencing(t *testing.T) {
	f := getFixture(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	colluders := []uint32{8, 9, 10}
	e, _, wg := newEvil(t, ctx, f, f.config(), dppp.AggregatorOptions{}, colluders...)
	defer e.done(ctx, wg)
	batch, _ := e.vote(ctx, f.Rows[:3])
	// The colluders' votes, made by the aggregator for them with proofs.
	pk := f.TPK.Public()
	for _, c := range colluders {
		ct, proof, err := pk.EncryptWithProof(rand.Reader, big.NewInt(int64(c)), dppp.VoteContext(e.p.Session, e.p.Hash(), batch, c))
		if err != nil {
			t.Fatal(err)
		}
		cb, _ := ct.MarshalBinary()
		pb, _ := proof.MarshalBinary()
		e.votes[c] = &dppp.Vote{Session: e.p.Session, Batch: batch, From: c, Ciphertext: cb, Proof: pb}
	}
	a := e.request(batch, e.votes)
	bv := map[uint32]*dppp.Vote{}
	for id, v := range e.votes {
		if id != 7 {
			bv[id] = v
		}
	}
	b := e.request(batch, bv)
	if r := e.sign(ctx, a, e.honest()); len(r) != 0 {
		t.Fatal(r)
	}
	rb := e.sign(ctx, b, []uint32{1, 2, 3, 4, 5, 6})
	for _, id := range []uint32{1, 2, 3, 4, 5, 6} {
		if !strings.Contains(rb[id], "another contributor set") {
			t.Errorf("teacher %d asked to sign B: %q", id, rb[id])
		}
	}
	for i := range b.Contributors {
		for j := range a.Contributors {
			if a.Contributors[j] == b.Contributors[i] && len(b.Sigs[i]) == 0 {
				b.Certs[i], b.Sigs[i] = a.Certs[j], a.Sigs[j]
			}
		}
	}
	okA, okB := 0, 0
	for _, id := range []uint32{1, 2, 3} {
		if _, ok := e.ask(ctx, id, a).(*dppp.Partial); ok {
			okA++
		}
	}
	for _, id := range []uint32{4, 5, 6} {
		m := e.ask(ctx, id, b)
		if _, ok := m.(*dppp.Partial); ok {
			okB++
		} else {
			t.Logf("teacher %d on B: %s", id, m.(*dppp.Refuse).Reason)
		}
	}
	if okA != 3 || okB != 0 {
		t.Errorf("honest partial decryptions: %d of A (want 3), %d of B (want 0)", okA, okB)
	}
	t.Log(fmt.Sprintf("with the 3 colluders' shares: A has %d ≥ t = %d, B %d < t", okA+3, e.p.Threshold, okB+3))
}

func mustCT(t *testing.T, pk *paillier.PublicKey, b []byte) *paillier.Ciphertext {
	t.Helper()
	c, err := pk.ParseCiphertext(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestNetAttackLedgerRotation: TestAttackLedgerRotation (package dppp)
// through the transport. The deployment allows M = 2 queries; the
// aggregator answers one-query batches holding teacher10's vote while
// rotating the decryptors among the nine others so that teacher10 never
// decrypts. Teacher10 is charged when it votes, so its ledger reads every
// answered batch holding its vote, and it refuses to vote past M.
func TestNetAttackLedgerRotation(t *testing.T) {
	f := getFixture(t)
	cfg := f.config()
	cfg.QueriesPerCiphertext = 1
	cfg.BudgetDelta = 2e-5
	budgetFor(t, f, &cfg, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	e, d, wg := newEvil(t, ctx, f, cfg, dppp.AggregatorOptions{IgnoreBudget: true})
	defer e.done(ctx, wg)
	if d.p.MaxQueries != 2 {
		t.Fatalf("MaxQueries = %d", d.p.MaxQueries)
	}
	const victim = 10
	answered, next := 0, 0
	for k := 0; k < 4; k++ {
		batch, refused := e.vote(ctx, f.Rows[k:k+1])
		if _, ok := e.votes[victim]; !ok {
			if !strings.Contains(refused[victim], dppp.ErrBudget.Error()) {
				t.Errorf("batch %d: teacher10 did not vote: %q", batch, refused[victim])
			}
			continue
		}
		req := e.request(batch, e.votes)
		if r := e.sign(ctx, req, e.honest()); len(r) != 0 {
			t.Fatal(r)
		}
		got := 0
		for j := 0; j < 9 && got < d.p.Threshold; j++ {
			id := uint32(next%9 + 1)
			next++
			if _, ok := e.ask(ctx, id, req).(*dppp.Partial); ok {
				got++
			}
		}
		if got >= d.p.Threshold {
			answered++
		}
	}
	charged := d.teachers[victim-1].Answered()
	t.Logf("%d answered batches hold teacher10's vote; its ledger: %d of %d queries", answered, charged, d.p.MaxQueries)
	if answered > charged || charged > d.p.MaxQueries || answered == 0 {
		t.Errorf("%d answered batches hold teacher10's vote, its ledger reads %d of %d", answered, charged, d.p.MaxQueries)
	}
}

// budgetFor sets cfg's budget ε to the PLD composition of k queries at its
// budget δ, so that the deployment allows exactly k queries.
func budgetFor(t *testing.T, f *fixture, cfg *dppp.Config, k int) {
	t.Helper()
	p, err := dppp.Calibrate(*cfg, f.TPK)
	if err != nil {
		t.Fatal(err)
	}
	g, err := p.Composed(k)
	if err != nil {
		t.Fatal(err)
	}
	cfg.BudgetEpsilon = g.Epsilon
}
