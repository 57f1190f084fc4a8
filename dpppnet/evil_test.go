package dpppnet

import (
	"context"
	"crypto/rand"
	"math/big"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/paillier"
	"github.com/dplearn/dplearn/transport"
)

// evilAggregator is a malicious aggregator built from the transport and
// the dppp message types: it speaks the protocol to honest teachers
// (Teach over gRPC with mutual TLS) but sends whatever decryption requests
// it likes.
type evilAggregator struct {
	t     *testing.T
	n     *testNet
	agg   *dppp.Aggregator
	p     *dppp.Params
	round uint64
	// sigs holds the teachers' vote signatures (relayed by ask).
	sigs map[uint32]*voteSig
}

// newEvil starts the teachers of d (signing their votes if signed) and
// agrees on the parameters with them.
func newEvil(t *testing.T, ctx context.Context, d *deployment, f *fixture, opt dppp.AggregatorOptions, signed bool) (*evilAggregator, *sync.WaitGroup) {
	t.Helper()
	n := newNet(t, ctx, grpcNet, HubConfig(d.p))
	agg, err := dppp.NewAggregator(d.p, f.TPK, opt)
	if err != nil {
		t.Fatal(err)
	}
	e := &evilAggregator{t: t, n: n, agg: agg, p: d.p, sigs: map[uint32]*voteSig{}}
	wg := startTeachers(t, ctx, n, d.teachers, func(_ string, o TeachOptions) TeachOptions {
		if !signed {
			o.Identity = nil
		}
		return o
	}, nil)
	// Offer, and collect every acceptance.
	n.hub.SetRound(0)
	for id := uint32(1); id <= uint32(d.p.N()); id++ {
		e.send(ctx, id, agg.Offer())
	}
	for range d.p.N() {
		from, m := e.recv(ctx)
		if a, ok := m.(*dppp.Accept); !ok || agg.CheckAccept(a) != nil {
			t.Fatalf("teacher %d answered the offer with %T", from, m)
		}
	}
	return e, wg
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

// recv returns the next teacher message (within 20 s).
func (e *evilAggregator) recv(ctx context.Context) (uint32, dppp.Message) {
	e.t.Helper()
	select {
	case env := <-e.n.hub.Inbox():
		if env.Type == TypeVoteSignature {
			_, _, list, err := parseSigs(env.Payload, sigHeader)
			if err != nil {
				e.t.Fatal(err)
			}
			e.sigs[list[0].From] = list[0]
			return e.recv(ctx)
		}
		m, err := dppp.Unmarshal(env.Payload)
		if err != nil {
			e.t.Fatalf("from %s: %v", env.Sender, err)
		}
		return e.p.TeacherID(env.Sender), m
	case <-time.After(20 * time.Second):
		e.t.Fatal("no message from the teachers within 20 s")
	case <-ctx.Done():
		e.t.Fatal(ctx.Err())
	}
	return 0, nil
}

// vote sends a batch to every teacher and collects every vote.
func (e *evilAggregator) vote(ctx context.Context, rows [][]float64) uint64 {
	e.t.Helper()
	q, err := e.agg.NewBatch(rows)
	if err != nil {
		e.t.Fatal(err)
	}
	e.round = q.Batch
	e.n.hub.SetRound(q.Batch)
	for id := uint32(1); id <= uint32(e.p.N()); id++ {
		e.send(ctx, id, q)
	}
	for range e.p.N() {
		from, m := e.recv(ctx)
		v, ok := m.(*dppp.Vote)
		if !ok {
			e.t.Fatalf("teacher %d answered the query with %T", from, m)
		}
		if err := e.agg.AddVote(from, v); err != nil {
			e.t.Fatal(err)
		}
	}
	return q.Batch
}

// ask sends d to teacher id, after the signatures of the listed
// contributors' votes that it holds, and returns the teacher's answer.
func (e *evilAggregator) ask(ctx context.Context, id uint32, d *dppp.Decrypt) dppp.Message {
	e.t.Helper()
	var list []*voteSig
	for _, c := range d.Contributors {
		if v := e.sigs[c]; v != nil {
			list = append(list, v)
		}
	}
	if err := e.n.hub.SendTo(ctx, e.p.TeacherName(id), transport.Envelope{Round: e.round, Type: TypeVoteSignatures, Payload: marshalVoteSigs(d.Session, d.Batch, list)}); err != nil {
		e.t.Fatal(err)
	}
	e.send(ctx, id, d)
	from, m := e.recv(ctx)
	if from != id {
		e.t.Fatalf("answer from %d, asked %d", from, id)
	}
	return m
}

// done tells every teacher the run is over.
func (e *evilAggregator) done(ctx context.Context, wg *sync.WaitGroup) {
	for id := uint32(1); id <= uint32(e.p.N()); id++ {
		_ = e.n.hub.SendTo(ctx, e.p.TeacherName(id), transport.Envelope{Round: e.round, Type: TypeDone, Payload: []byte("done")})
	}
	wg.Wait()
}

// TestNetMaliciousAggregatorSingleVote: an aggregator that asks teacher01
// to decrypt its own vote alone, or dressed up as a sum, is refused by the
// teacher each time with the reason, and nothing is decrypted or charged.
func TestNetMaliciousAggregatorSingleVote(t *testing.T) {
	f := getFixture(t)
	d := f.deploy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, wg := newEvil(t, ctx, d, f, dppp.AggregatorOptions{}, true)
	defer e.done(ctx, wg)
	batch := e.vote(ctx, f.Rows[:3])
	honest, err := e.agg.Close(batch)
	if err != nil {
		t.Fatal(err)
	}
	single, err := e.agg.SingleVoteRequest(batch, 1)
	if err != nil {
		t.Fatal(err)
	}
	pk := f.TPK.Public()
	ct := func(b []byte) *paillier.Ciphertext {
		c, err := pk.ParseCiphertext(b)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	bytesOf := func(c *paillier.Ciphertext) []byte {
		b, err := c.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// The victim's vote with six other listed votes whose product is not
	// the sum sent: the sum is the victim's vote alone.
	padded := *honest
	padded.Contributors = honest.Contributors[:7]
	padded.Ciphertexts = honest.Ciphertexts[:7]
	padded.Sum = single.Sum
	// The honest sum of seven votes of which one is missing from the list
	// (the sum of six, listed as six): below the minimum.
	six := *honest
	six.Contributors = honest.Contributors[:6]
	six.Ciphertexts = honest.Ciphertexts[:6]
	s6, err := pk.Sum(ct(six.Ciphertexts[0]), ct(six.Ciphertexts[1]), ct(six.Ciphertexts[2]), ct(six.Ciphertexts[3]), ct(six.Ciphertexts[4]), ct(six.Ciphertexts[5]))
	if err != nil {
		t.Fatal(err)
	}
	six.Sum = bytesOf(s6)
	// Teacher02's vote, sent to teacher01 as a sum of seven that does not
	// list teacher01.
	others := *honest
	others.Contributors = honest.Contributors[1:8]
	others.Ciphertexts = honest.Ciphertexts[1:8]
	var cs []*paillier.Ciphertext
	for _, b := range others.Ciphertexts {
		cs = append(cs, ct(b))
	}
	so, err := pk.Sum(cs...)
	if err != nil {
		t.Fatal(err)
	}
	others.Sum = bytesOf(so)
	for _, c := range []struct {
		name string
		d    *dppp.Decrypt
		want string
	}{
		{"its vote alone", single, "the noise calibration needs at least 7"},
		{"its vote as the sum of seven", &padded, "not the product of the listed votes"},
		{"a sum of six", &six, "the noise calibration needs at least 7"},
		{"a sum without its vote", &others, "its own vote is not in the sum"},
	} {
		m := e.ask(ctx, 1, c.d)
		r, ok := m.(*dppp.Refuse)
		if !ok {
			t.Fatalf("%s: teacher01 answered with a %T", c.name, m)
		}
		if !strings.Contains(r.Reason, c.want) {
			t.Errorf("%s: refused with %q, want %q", c.name, r.Reason, c.want)
		}
		t.Logf("%s: refused: %s", c.name, r.Reason)
	}
	if got := d.teachers[0].Answered(); got != 0 {
		t.Fatalf("teacher01 charged %d queries", got)
	}
	// The honest request is still answered (the refusals cost nothing).
	if _, ok := e.ask(ctx, 1, honest).(*dppp.Partial); !ok {
		t.Fatal("teacher01 refused the honest sum after the attacks")
	}
}

// TestNetMaliciousAggregatorPastBudget: an aggregator ignoring its own
// budget (the deployment allows 3 queries; batches of 2) gets the first
// batch decrypted, and every teacher refuses the second at its own ledger,
// even though the aggregator asks all of them.
func TestNetMaliciousAggregatorPastBudget(t *testing.T) {
	f := getFixture(t)
	cfg := f.config()
	cfg.QueriesPerCiphertext = 2
	cfg.BudgetEpsilon = 3 // binomial, ε = 1 per query: 3 queries
	d := f.deployConfig(t, cfg)
	if d.p.MaxQueries != 3 {
		t.Fatalf("the budget allows %d queries, want 3", d.p.MaxQueries)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, wg := newEvil(t, ctx, d, f, dppp.AggregatorOptions{IgnoreBudget: true}, true)
	defer e.done(ctx, wg)
	for b, rows := range [][][]float64{f.Rows[:2], f.Rows[2:4]} {
		batch := e.vote(ctx, rows)
		req, err := e.agg.Close(batch)
		if err != nil {
			t.Fatal(err)
		}
		for id := uint32(1); id <= uint32(d.p.N()); id++ {
			m := e.ask(ctx, id, req)
			switch m := m.(type) {
			case *dppp.Partial:
				if b == 1 {
					t.Errorf("teacher %d decrypted past its budget", id)
				}
			case *dppp.Refuse:
				if b == 0 || !strings.Contains(m.Reason, dppp.ErrBudget.Error()) {
					t.Errorf("batch %d: teacher %d refused: %s", batch, id, m.Reason)
				}
			default:
				t.Fatalf("teacher %d answered with a %T", id, m)
			}
		}
	}
	for _, tt := range d.teachers {
		if tt.Answered() != 2 {
			t.Errorf("%s charged %d queries, want 2", tt.Name(), tt.Answered())
		}
	}
}

// TestNetMaliciousAggregatorForgedContributors: a malicious aggregator
// wants teacher02's vote alone. It asks each of t teachers j to decrypt
// S = teacher02's vote, listing seven contributors: j's own vote (byte for
// byte), the ciphertext S·v_j⁻¹ under another teacher's ID, and five fresh
// encryptions of 0 under the others'. Every check a teacher can make on
// its own passes (its vote is in, ⌈γN⌉ distinct contributors, the product
// is S), so the teachers must refuse on something they cannot check today:
// that the other listed ciphertexts are the votes those teachers sent.
//
// Without vote signatures every teacher decrypts (dppp alone cannot tell;
// the subtest "unsigned" shows it): the aggregator would learn one
// teacher's vote with 1/7 of the calibrated noise. With them (TeachOptions.
// Identity) every teacher refuses, naming the contributor whose vote is
// not signed by its teacher.
func TestNetMaliciousAggregatorForgedContributors(t *testing.T) {
	for _, signed := range []bool{true, false} {
		t.Run(map[bool]string{true: "signed", false: "unsigned"}[signed], func(t *testing.T) {
			forgedContributors(t, signed)
		})
	}
}

func forgedContributors(t *testing.T, signed bool) {
	f := getFixture(t)
	d := f.deploy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	e, wg := newEvil(t, ctx, d, f, dppp.AggregatorOptions{}, signed)
	defer e.done(ctx, wg)
	batch := e.vote(ctx, f.Rows[:3])
	honest, err := e.agg.Close(batch)
	if err != nil {
		t.Fatal(err)
	}
	pk := f.TPK.Public()
	n2 := pk.NSquared()
	victim := honest.Ciphertexts[1] // teacher02's vote
	sv := new(big.Int).SetBytes(mustCT(t, pk, victim).Value().Bytes())
	partials := 0
	for j := uint32(3); j < 3+uint32(d.p.Threshold); j++ {
		own := honest.Ciphertexts[j-1]
		// Five fresh encryptions of 0, and x = S · own⁻¹ · (their product)⁻¹,
		// so that the listed product is exactly S.
		var zeros []*paillier.Ciphertext
		x := new(big.Int).Mul(sv, new(big.Int).ModInverse(mustCT(t, pk, own).Value(), n2))
		for range d.p.MinContributors - 2 {
			z, err := pk.Encrypt(rand.Reader, big.NewInt(0))
			if err != nil {
				t.Fatal(err)
			}
			zeros = append(zeros, z)
			x.Mul(x, new(big.Int).ModInverse(z.Value(), n2))
		}
		xc, err := pk.NewCiphertext(x.Mod(x, n2))
		if err != nil {
			t.Fatal(err)
		}
		req := &dppp.Decrypt{Session: honest.Session, Batch: batch, Sum: victim}
		ids := []uint32{j}
		cts := [][]byte{own}
		for k, c := uint32(1), append([]*paillier.Ciphertext{xc}, zeros...); len(c) > 0; k++ {
			if k == j {
				continue
			}
			b, err := c[0].MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			ids, cts, c = append(ids, k), append(cts, b), c[1:]
		}
		req.Contributors, req.Ciphertexts = ids, cts
		switch m := e.ask(ctx, j, req).(type) {
		case *dppp.Partial:
			partials++
		case *dppp.Refuse:
			if !strings.Contains(m.Reason, "is not signed by that teacher") {
				t.Errorf("teacher %d refused for another reason: %s", j, m.Reason)
			}
			t.Logf("teacher %d refused: %s", j, m.Reason)
		}
	}
	if signed && partials > 0 {
		t.Errorf("%d teachers partially decrypted teacher02's vote alone", partials)
	}
	if !signed && partials != d.p.Threshold {
		t.Errorf("without signatures %d of t = %d teachers decrypted: the attack (and so this test) no longer works as documented", partials, d.p.Threshold)
	}
}

func mustCT(t *testing.T, pk *paillier.PublicKey, b []byte) *paillier.Ciphertext {
	t.Helper()
	c, err := pk.ParseCiphertext(b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
