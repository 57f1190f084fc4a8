package dppp

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/dplearn/dplearn/internal/pailliertest"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/paillier"
)

var (
	bigKeyOnce sync.Once
	bigTPK     *paillier.ThresholdPublicKey
	bigShares  []*paillier.KeyShare
	bigKeyTime time.Duration
)

// BenchmarkProtocol: N = 250 teachers, t = 167, 2048-bit key (the published
// test primes, dealt once: the dealing time is logged), K = 10, binomial
// (ε, δ) = (1, 1e-5). One op is one batch, run in process through the
// state machines (no channels), timing teacher and aggregator code
// separately: ms/query at one teacher (vote for every batch, partial
// decryption when asked: t of N batches), ms/query at the aggregator, bytes
// per teacher per query (vote + decryption request + partial, averaged).
// "naive": one query per ciphertext, every proof verified on arrival and
// again in Combine; "packed": as many queries per ciphertext as fit,
// proofs verified once, in Combine. The teachers share one fast Encryptor
// (its table costs about 60 encryptions to build; a real teacher builds it
// once at start).
func BenchmarkProtocol(b *testing.B) {
	const n, thr = 250, 167
	bigKeyOnce.Do(func() {
		start := time.Now()
		p, q, _ := pailliertest.Primes(2048)
		bigTPK, bigShares, _ = paillier.DealThreshold(rand.Reader, p, q, n, thr)
		bigKeyTime = time.Since(start)
	})
	b.Logf("dealt the (%d, %d) key in %v", n, thr, bigKeyTime)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("t%03d", i+1)
	}
	enc, err := paillier.NewEncryptor(bigTPK.Public(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []struct {
		name string
		qpc  int
		v    Verification
	}{{"naive", 1, VerifyEach}, {"packed", 0, VerifyInCombine}} {
		b.Run(mode.name, func(b *testing.B) {
			cfg := Config{Teachers: names, Threshold: thr, Classes: 10, Features: 1, Noise: Binomial, Epsilon: 1, Delta: 1e-5,
				BudgetEpsilon: 1e4, BudgetDelta: 1e-3, QueriesPerCiphertext: mode.qpc}
			p0, err := Calibrate(cfg, bigTPK)
			if err != nil {
				b.Fatal(err)
			}
			p, _ := p0.NewSession()
			ts := make([]*Teacher, n)
			for i := range ts {
				ts[i], _ = NewTeacher(TeacherConfig{Name: names[i], Config: cfg, Key: bigShares[i], Encryptor: enc,
					Noise: noise.NewInsecureSeeded(uint64(i)), Ledger: nopLedger{},
					Predict: func(_ context.Context, rows [][]float64) ([]int, error) { return make([]int, len(rows)), nil }})
				if _, err := ts[i].Accept(&Offer{Params: *p}); err != nil {
					b.Fatal(err)
				}
			}
			agg, _ := NewAggregator(p, bigTPK, AggregatorOptions{Verification: mode.v, Ledger: nopLedger{}})
			rows := make([][]float64, p.QPC)
			for i := range rows {
				rows[i] = []float64{float64(i)}
			}
			var teacherCPU, aggCPU time.Duration
			var bytes int
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				s := time.Now()
				q, _ := agg.NewBatch(rows)
				aggCPU += time.Since(s)
				for i, t := range ts {
					s := time.Now()
					v, err := t.HandleQuery(ctx, q)
					teacherCPU += time.Since(s)
					if err != nil {
						b.Fatal(err)
					}
					vb, _ := v.MarshalBinary()
					qb, _ := q.MarshalBinary()
					bytes += len(vb) + len(qb)
					s = time.Now()
					if err := agg.AddVote(uint32(i+1), v); err != nil {
						b.Fatal(err)
					}
					aggCPU += time.Since(s)
				}
				s = time.Now()
				d, err := agg.Close(q.Batch)
				ask := agg.Ask(q.Batch, thr, nil)
				aggCPU += time.Since(s)
				if err != nil {
					b.Fatal(err)
				}
				db, _ := d.MarshalBinary()
				for _, id := range ask {
					s := time.Now()
					pm, err := ts[id-1].HandleDecrypt(d)
					teacherCPU += time.Since(s)
					if err != nil {
						b.Fatal(err)
					}
					pb, _ := pm.MarshalBinary()
					bytes += len(db) + len(pb)
					s = time.Now()
					if err := agg.AddPartial(id, pm); err != nil {
						b.Fatal(err)
					}
					aggCPU += time.Since(s)
				}
				s = time.Now()
				if _, err := agg.Combine(q.Batch); err != nil {
					b.Fatal(err)
				}
				aggCPU += time.Since(s)
			}
			queries := float64(b.N * p.QPC)
			b.ReportMetric(float64(teacherCPU.Milliseconds())/queries/n, "teacher-ms/query")
			b.ReportMetric(float64(aggCPU.Milliseconds())/queries, "aggregator-ms/query")
			b.ReportMetric(float64(bytes)/queries/n, "bytes/teacher/query")
			b.ReportMetric(float64(p.QPC), "queries/ciphertext")
		})
	}
}

type nopLedger struct{}

func (nopLedger) Charge(string, float64, float64) error { return nil }
