package dppp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/paillier"
)

func TestDigitsFiftyQueries(t *testing.T) {
	f := getFixture(t)
	cfg := f.config(Binomial)
	d := f.deploy(t, cfg, nil)
	res, err := Run(context.Background(), d.p, f.TPK, d.teachers, f.Rows, RunOptions{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Labels) != 50 {
		t.Fatalf("%d labels", len(res.Labels))
	}
	d.checkReference(t, res)
	correct := 0
	for i, l := range res.Labels {
		if l == f.Truth[i] {
			correct++
		}
	}
	t.Logf("%d batches of ≤ %d queries; accuracy %d/50; %s", len(res.Batches), d.p.QPC, correct, res.Status)
	for _, line := range d.p.Report() {
		t.Log(line)
	}
	// ε = 1 per query with 10 teachers is heavy noise (sd ≈ 9 votes per
	// class against 10 votes): accuracy is not asserted, equality with the
	// plaintext path is.
	for _, tt := range d.teachers {
		if tt.Answered() > 50 {
			t.Errorf("teacher %s charged %d queries", tt.Name(), tt.Answered())
		}
	}
	per := float64(res.BytesFromTeacher["teacher01"]+res.BytesToTeacher["teacher01"]) / 50
	t.Logf("teacher01: %.0f bytes per query (seed's estimate 768·c = %d)", per, 768*10)
}

func TestDigitsDGauss(t *testing.T) {
	if testing.Short() {
		t.Skip("short")
	}
	f := getFixture(t)
	d := f.deploy(t, f.config(DGauss), nil)
	res, err := Run(context.Background(), d.p, f.TPK, d.teachers, f.Rows[:20], RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.checkReference(t, res)
}

func TestDeadAfterVote(t *testing.T) {
	f := getFixture(t)
	cfg := f.config(Binomial)
	rows := f.Rows[:5]
	// A = N − t = 4 teachers vanish after voting: they cannot sign the
	// contributor set, the batch is abandoned and voted again by the 6
	// others (N − A = 6): answered.
	d := f.deploy(t, cfg, nil)
	kill := map[string]bool{"teacher01": true, "teacher02": true, "teacher03": true, "teacher04": true}
	res, err := Run(context.Background(), d.p, f.TPK, d.teachers, rows, RunOptions{Faults: Faults{KillAfterVote: kill}})
	if err != nil {
		t.Fatal(err)
	}
	d.checkReference(t, res)
	if n := len(res.Batches[0].Contributors); n != 6 || res.Batches[0].Batch != 2 {
		t.Errorf("batch %d with %d contributors, want batch 2 (1 abandoned) with the 6 live votes", res.Batches[0].Batch, n)
	}
	// Every teacher that voted twice was charged twice (the abandoned
	// batch too: its vote was sent).
	for _, tt := range d.teachers[4:] {
		if tt.Answered() != 2*len(rows) {
			t.Errorf("%s charged %d, want %d", tt.Name(), tt.Answered(), 2*len(rows))
		}
	}
	// A + 1 = 5: a clear refusal.
	d = f.deploy(t, cfg, nil)
	kill["teacher05"] = true
	_, err = Run(context.Background(), d.p, f.TPK, d.teachers, rows, RunOptions{Faults: Faults{KillAfterVote: kill}})
	if !errors.Is(err, ErrTooFewContributors) {
		t.Fatalf("err = %v, want ErrTooFewContributors", err)
	}
	t.Log(err)
}

func TestForgedPartial(t *testing.T) {
	skipCryptoUnderRace(t)
	f := getFixture(t)
	// The default (batch verification in Combine) first: the only mode in
	// -short runs.
	modes := []AggregatorOptions{
		{Verification: VerifyInCombine},
		{Verification: VerifyEach},
		{Verification: VerifyInCombine, Combine: paillier.CombineOptions{ProofByProof: true, NaiveInterpolation: true}},
	}
	if testing.Short() {
		modes = modes[:1]
	}
	for v, opt := range modes {
		d := f.deploy(t, f.config(Binomial), func(i int, tc *TeacherConfig) { tc.ForgePartial = i == 1 })
		res, err := Run(context.Background(), d.p, f.TPK, d.teachers, f.Rows[:5], RunOptions{Aggregator: opt})
		if err != nil {
			t.Fatal(err)
		}
		d.checkReference(t, res)
		br := res.Batches[0]
		if _, ok := br.Rejected[2]; !ok {
			t.Errorf("mode %d: forger teacher02 not rejected: %v", v, br.Rejected)
		}
		for _, id := range br.Decryptors {
			if id == 2 {
				t.Errorf("forged share used")
			}
		}
	}
}

func TestTooFewContributors(t *testing.T) {
	skipCryptoUnderRace(t)
	f := getFixture(t)
	d := f.deploy(t, f.config(Binomial), nil)
	dead := map[string]bool{"teacher06": true, "teacher07": true, "teacher08": true, "teacher09": true, "teacher10": true}
	_, err := Run(context.Background(), d.p, f.TPK, d.teachers, f.Rows[:3], RunOptions{Faults: Faults{DeadBeforeVote: dead}})
	if !errors.Is(err, ErrTooFewContributors) {
		t.Fatalf("err = %v", err)
	}
	for _, tt := range d.teachers {
		if tt.Decrypted() != 0 {
			t.Errorf("teacher %s decrypted", tt.Name())
		}
		// Charged at vote time (the vote was sent), nothing else.
		if want := map[bool]int{true: 0, false: 3}[dead[tt.Name()]]; tt.Answered() != want {
			t.Errorf("teacher %s charged %d queries, want %d", tt.Name(), tt.Answered(), want)
		}
	}
}

// TestSingleVoteRefused: a malicious aggregator asks every other
// contributor to decrypt one teacher's vote alone (the single-vote
// request): each refuses (fewer than N − A contributors), and nothing is
// decrypted.
func TestSingleVoteRefused(t *testing.T) {
	skipCryptoUnderRace(t)
	f := getFixture(t)
	c := newCoalition(t, f, f.config(Binomial))
	q, _ := c.vote(f.Rows[:3], ids(1, 10))
	d := c.request(q.Batch, map[uint32]*Vote{3: c.votes[q.Batch][3]})
	_, refused := c.decrypt(d, []uint32{1, 2, 4, 5, 6, 7, 8, 9, 10}, nil)
	allRefused(t, refused, []uint32{1, 2, 4, 5, 6, 7, 8, 9, 10}, "")
	if len(refused) != 9 {
		t.Errorf("%d teachers refused, want 9", len(refused))
	}
}

func TestPastBudgetRefusedByTeachers(t *testing.T) {
	f := getFixture(t)
	cfg := f.config(Binomial)
	cfg.QueriesPerCiphertext = 2
	cfg.BudgetDelta = 2e-5
	budgetFor(t, f, &cfg, 2) // two queries
	for _, opt := range []AggregatorOptions{{IgnoreBudget: true}} {
		// An aggregator that ignores its own ledger (an honest one labels
		// the rows that remain: TestRunLabelsWhatRemains): the teachers
		// refuse to vote past their budget (charged at vote time).
		d := f.deploy(t, cfg, nil)
		if d.p.MaxQueries != 2 {
			t.Fatalf("MaxQueries = %d", d.p.MaxQueries)
		}
		res, err := Run(context.Background(), d.p, f.TPK, d.teachers, f.Rows[:4], RunOptions{Aggregator: opt})
		if !errors.Is(err, ErrTooFewContributors) || len(res.Batches) != 1 {
			t.Fatalf("err = %v, batches %d", err, len(res.Batches))
		}
		n := 0
		for _, rs := range res.Refusals {
			for _, r := range rs {
				if strings.Contains(r, "budget") {
					n++
				}
			}
		}
		if n != 10 {
			t.Errorf("%d budget refusals: %v", n, res.Refusals)
		}
		for _, tt := range d.teachers {
			if tt.Answered() != 2 {
				t.Errorf("teacher %s answered %d", tt.Name(), tt.Answered())
			}
		}
		t.Log(res.Status)
	}
}

func TestReplays(t *testing.T) {
	skipCryptoUnderRace(t)
	f := getFixture(t)
	d := f.deploy(t, f.config(Binomial), nil)
	res, err := Run(context.Background(), d.p, f.TPK, d.teachers, f.Rows[:5], RunOptions{Faults: Faults{Replay: true}})
	if err != nil {
		t.Fatal(err)
	}
	d.checkReference(t, res)
	for _, tt := range d.teachers {
		if tt.Answered() > 5 {
			t.Errorf("teacher %s charged %d for 5 queries", tt.Name(), tt.Answered())
		}
	}
}

// Teacher-level refusals without a run: another sum for the same batch, a
// vote reused in another batch's sum, a wrong product, a wrong session,
// other parameters.
func TestTeacherChecks(t *testing.T) {
	skipCryptoUnderRace(t)
	f := getFixture(t)
	cfg := f.config(Binomial)
	c := newCoalition(t, f, cfg)
	q1, _ := c.vote(f.Rows[:1], ids(1, 10))
	q2, _ := c.vote(f.Rows[1:2], ids(1, 10))
	d1 := c.request(q1.Batch, c.votes[q1.Batch])
	if r := c.sign(d1, nil); len(r) != 0 {
		t.Fatal(r)
	}
	t1 := c.teacher(1)
	charged := t1.Answered()
	if _, err := t1.HandleDecrypt(d1); err != nil {
		t.Fatal(err)
	}
	// Same sum again: same answer, nothing charged at decryption.
	if _, err := t1.HandleDecrypt(d1); err != nil || t1.Answered() != charged || charged != 2 {
		t.Fatalf("replay: %v, answered %d (charged %d at vote time)", err, t1.Answered(), charged)
	}
	// Another sum for batch 1 (drop the last contributor).
	sub := map[uint32]*Vote{}
	for id, v := range c.votes[q1.Batch] {
		if id != 10 {
			sub[id] = v
		}
	}
	d1b := c.request(q1.Batch, sub)
	if _, err := t1.HandleDecrypt(d1b); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "another sum") {
		t.Fatalf("second sum: %v", err)
	}
	// Batch 2's request padded with a vote of batch 1: the set is refused.
	pad := map[uint32]*Vote{}
	for id, v := range c.votes[q2.Batch] {
		pad[id] = v
	}
	pad[10] = c.votes[q1.Batch][10]
	bad := c.request(q2.Batch, pad)
	if _, err := c.teacher(10).HandleSignSet(&SignSet{Session: bad.Session, Batch: bad.Batch, Set: bad.Set()}); err == nil || !strings.Contains(err.Error(), "not the one it sent") {
		t.Fatalf("padded set: %v", err)
	}
	d2 := c.request(q2.Batch, c.votes[q2.Batch])
	if r := c.sign(d2, nil); len(r) != 0 {
		t.Fatal(r)
	}
	// Product mismatch.
	wrong := *d2
	wrong.Sum = d2.Ciphertexts[0]
	if _, err := c.teacher(2).HandleDecrypt(&wrong); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "not the product") {
		t.Fatalf("product: %v", err)
	}
	// Stale session.
	stale := *d2
	stale.Session[0] ^= 1
	if _, err := c.teacher(2).HandleDecrypt(&stale); !errors.Is(err, ErrRefused) {
		t.Fatalf("stale: %v", err)
	}
	// Parameters the teacher did not agree to: the field is named.
	for _, tc := range []struct {
		field string
		tweak func(*Config)
	}{
		{"epsilon", func(c *Config) { c.Epsilon = 2 }},
		{"colluders", func(c *Config) { c.Colluders = 1 }},
		{"absent", func(c *Config) { c.Absent = 2 }},
	} {
		other := cfg
		tc.tweak(&other)
		tt, _ := NewTeacher(TeacherConfig{Name: "teacher01", Config: other, Key: f.Shares[0], Predict: c.teacher(1).cfg.Predict, Unsigned: true})
		_, err := tt.Accept(c.agg.Offer())
		var mm *MismatchError
		if !errors.As(err, &mm) || mm.Field != tc.field {
			t.Fatalf("mismatch: %v, want field %s", err, tc.field)
		}
		t.Log(err)
	}
}

// badSigner signs with a corrupted signature.
type badSigner struct{ Signer }

func (b badSigner) Sign(domain string, parts ...[]byte) ([]byte, []byte, error) {
	cert, sig, err := b.Signer.Sign(domain, parts...)
	if len(sig) > 0 {
		sig = append([]byte(nil), sig...)
		sig[0] ^= 1
	}
	return cert, sig, err
}

// TestAggregatorVerifiesSetSignatures: teacher02 signs contributor sets
// with a corrupted signature. An aggregator with a Verifier refuses it on
// arrival, naming teacher02; the batch is abandoned and voted again
// without it. Without a Verifier every decrypting teacher refuses the sum
// instead (the teachers' own check).
func TestAggregatorVerifiesSetSignatures(t *testing.T) {
	skipCryptoUnderRace(t)
	f := getFixture(t)
	cfg := f.config(Binomial)
	bad := func(i int, tc *TeacherConfig) {
		if i == 1 {
			tc.Signer = badSigner{tc.Signer}
		}
	}
	d := f.deploy(t, cfg, bad)
	res, err := Run(context.Background(), d.p, f.TPK, d.teachers, f.Rows[:3], RunOptions{Aggregator: AggregatorOptions{Verifier: d.signers["teacher01"]}})
	if err != nil {
		t.Fatal(err)
	}
	d.checkReference(t, res)
	if br := res.Batches[0]; br.Batch != 2 || len(br.Contributors) != 9 || slices.Contains(br.Contributors, 2) {
		t.Errorf("batch %d with contributors %v, want batch 2 without teacher02", br.Batch, br.Contributors)
	}
	if r := fmt.Sprint(res.Refusals["teacher02"]); !strings.Contains(r, "does not verify") {
		t.Errorf("teacher02's refusals: %s", r)
	}
	d = f.deploy(t, cfg, bad)
	res, err = Run(context.Background(), d.p, f.TPK, d.teachers, f.Rows[:3], RunOptions{})
	if !errors.Is(err, ErrTooFewDecryptors) {
		t.Fatalf("err = %v, want ErrTooFewDecryptors (every decryptor refuses)", err)
	}
	n := 0
	for _, rs := range res.Refusals {
		for _, r := range rs {
			if strings.Contains(r, "contributor 2 (teacher02) did not sign this contributor set") {
				n++
			}
		}
	}
	if n < 9 {
		t.Errorf("%d decryptors refused naming teacher02: %v", n, res.Refusals)
	}
}
