package dppp

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/paillier"
)

func TestDigitsFiftyQueries(t *testing.T) {
	f := getFixture(t)
	cfg := f.config(Binomial)
	d := f.deploy(t, cfg, nil)
	res, err := Run(context.Background(), d.p, f.TPK, d.teachers, f.Rows, RunOptions{Logf: t.Logf})
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
	// f = N − t = 4 teachers vanish after voting: still answered.
	d := f.deploy(t, cfg, nil)
	kill := map[string]bool{"teacher01": true, "teacher02": true, "teacher03": true, "teacher04": true}
	res, err := Run(context.Background(), d.p, f.TPK, d.teachers, rows, RunOptions{Faults: Faults{KillAfterVote: kill}})
	if err != nil {
		t.Fatal(err)
	}
	d.checkReference(t, res)
	if n := len(res.Batches[0].Contributors); n != 10 {
		t.Errorf("%d contributors, want all 10 votes", n)
	}
	// f = N − t + 1 = 5: a clear refusal.
	d = f.deploy(t, cfg, nil)
	kill["teacher05"] = true
	_, err = Run(context.Background(), d.p, f.TPK, d.teachers, rows, RunOptions{Faults: Faults{KillAfterVote: kill}})
	if !errors.Is(err, ErrTooFewDecryptors) {
		t.Fatalf("err = %v, want ErrTooFewDecryptors", err)
	}
	t.Log(err)
}

func TestForgedPartial(t *testing.T) {
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
	f := getFixture(t)
	d := f.deploy(t, f.config(Binomial), nil)
	dead := map[string]bool{"teacher07": true, "teacher08": true, "teacher09": true, "teacher10": true}
	_, err := Run(context.Background(), d.p, f.TPK, d.teachers, f.Rows[:3], RunOptions{Faults: Faults{DeadBeforeVote: dead}})
	if !errors.Is(err, ErrTooFewContributors) {
		t.Fatalf("err = %v", err)
	}
	for _, tt := range d.teachers {
		if tt.Answered() != 0 {
			t.Errorf("teacher %s decrypted", tt.Name())
		}
	}
}

func TestSingleVoteRefused(t *testing.T) {
	f := getFixture(t)
	d := f.deploy(t, f.config(Binomial), nil)
	res, err := Run(context.Background(), d.p, f.TPK, d.teachers, f.Rows[:3], RunOptions{Faults: Faults{SingleVote: "teacher03"}})
	if err == nil || !strings.Contains(err.Error(), "0 teachers decrypted") {
		t.Fatalf("err = %v", err)
	}
	if len(res.Refusals) != 9 {
		t.Errorf("%d teachers refused, want 9: %v", len(res.Refusals), res.Refusals)
	}
	for _, tt := range d.teachers {
		if tt.Answered() != 0 {
			t.Errorf("teacher %s spent budget", tt.Name())
		}
	}
}

func TestPastBudgetRefusedByTeachers(t *testing.T) {
	f := getFixture(t)
	cfg := f.config(Binomial)
	cfg.QueriesPerCiphertext = 2
	cfg.BudgetEpsilon, cfg.BudgetDelta = 2, 2e-5 // two queries
	d := f.deploy(t, cfg, nil)
	if d.p.MaxQueries != 2 {
		t.Fatalf("MaxQueries = %d", d.p.MaxQueries)
	}
	// The aggregator's own ledger refuses the second batch.
	res, err := Run(context.Background(), d.p, f.TPK, d.teachers, f.Rows[:4], RunOptions{})
	if err == nil || !errors.Is(err, ErrBudget) || len(res.Batches) != 1 {
		t.Fatalf("err = %v, batches %d", err, len(res.Batches))
	}
	t.Log(res.Status)
	// A malicious aggregator that ignores its ledger: the teachers refuse.
	d = f.deploy(t, cfg, nil)
	res, err = Run(context.Background(), d.p, f.TPK, d.teachers, f.Rows[:4], RunOptions{Aggregator: AggregatorOptions{IgnoreBudget: true}})
	if !errors.Is(err, ErrTooFewDecryptors) || len(res.Batches) != 1 {
		t.Fatalf("err = %v", err)
	}
	n := 0
	for _, rs := range res.Refusals {
		for _, r := range rs {
			if strings.Contains(r, "budget") {
				n++
			}
		}
	}
	if n < 5 {
		t.Errorf("%d budget refusals: %v", n, res.Refusals)
	}
	for _, tt := range d.teachers {
		if tt.Answered() > 2 {
			t.Errorf("teacher %s answered %d", tt.Name(), tt.Answered())
		}
	}
}

func TestReplays(t *testing.T) {
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
// vote reused in another batch's sum, a wrong session, other parameters.
func TestTeacherChecks(t *testing.T) {
	f := getFixture(t)
	cfg := f.config(Binomial)
	d := f.deploy(t, cfg, nil)
	agg, err := NewAggregator(d.p, f.TPK, AggregatorOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, tt := range d.teachers {
		if _, err := tt.Accept(agg.Offer()); err != nil {
			t.Fatal(err)
		}
	}
	q1, _ := agg.NewBatch(f.Rows[:1])
	q2, _ := agg.NewBatch(f.Rows[1:2])
	for _, q := range []*Query{q1, q2} {
		for i, tt := range d.teachers {
			v, err := tt.HandleQuery(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			if err := agg.AddVote(uint32(i+1), v); err != nil {
				t.Fatal(err)
			}
			if err := agg.AddVote(uint32(i+1), v); !errors.Is(err, ErrDuplicate) {
				t.Fatalf("replayed vote: %v", err)
			}
		}
	}
	d1, err := agg.Close(q1.Batch)
	if err != nil {
		t.Fatal(err)
	}
	t1 := d.teachers[0]
	if _, err := t1.HandleDecrypt(d1); err != nil {
		t.Fatal(err)
	}
	// Same sum again: same answer, not charged twice.
	if _, err := t1.HandleDecrypt(d1); err != nil || t1.Answered() != 1 {
		t.Fatalf("replay: %v, answered %d", err, t1.Answered())
	}
	// Another sum for batch 1 (drop the last contributor).
	pk := f.TPK.Public()
	sub := &Decrypt{Session: d1.Session, Batch: d1.Batch, Contributors: d1.Contributors[:9], Ciphertexts: d1.Ciphertexts[:9]}
	var cts = make([]*paillierCT, 9)
	for i := range cts {
		cts[i], _ = pk.ParseCiphertext(sub.Ciphertexts[i])
	}
	s, _ := pk.Sum(cts...)
	sub.Sum, _ = s.MarshalBinary()
	if _, err := t1.HandleDecrypt(sub); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "another sum") {
		t.Fatalf("second sum: %v", err)
	}
	// Batch 2's request padded with a ciphertext of batch 1 → refused.
	d2, _ := agg.Close(q2.Batch)
	bad := &Decrypt{Session: d2.Session, Batch: d2.Batch, Contributors: append([]uint32(nil), d2.Contributors...), Ciphertexts: append([][]byte(nil), d2.Ciphertexts...)}
	bad.Ciphertexts[9] = d1.Ciphertexts[9]
	for i := range cts {
		cts[i], _ = pk.ParseCiphertext(bad.Ciphertexts[i])
	}
	all := append([]*paillierCT(nil), cts...)
	last, _ := pk.ParseCiphertext(bad.Ciphertexts[9])
	all = append(all, last)
	s, _ = pk.Sum(all...)
	bad.Sum, _ = s.MarshalBinary()
	if _, err := t1.HandleDecrypt(bad); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "at most one sum") {
		t.Fatalf("reused vote: %v", err)
	}
	// Product mismatch.
	wrong := *d2
	wrong.Sum = d2.Ciphertexts[0]
	if _, err := d.teachers[1].HandleDecrypt(&wrong); !errors.Is(err, ErrRefused) || !strings.Contains(err.Error(), "not the product") {
		t.Fatalf("product: %v", err)
	}
	// Stale session.
	stale := *d2
	stale.Session[0] ^= 1
	if _, err := d.teachers[1].HandleDecrypt(&stale); !errors.Is(err, ErrRefused) {
		t.Fatalf("stale: %v", err)
	}
	// Parameters the teacher did not agree to: the field is named.
	other := cfg
	other.Epsilon = 2
	tt, _ := NewTeacher(TeacherConfig{Name: "teacher01", Config: other, Key: f.Shares[0], Predict: d.teachers[0].cfg.Predict})
	_, err = tt.Accept(agg.Offer())
	var mm *MismatchError
	if !errors.As(err, &mm) || mm.Field != "epsilon" {
		t.Fatalf("mismatch: %v", err)
	}
	t.Log(err)
}
