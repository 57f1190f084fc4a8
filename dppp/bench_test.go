package dppp

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"runtime"
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
	bigKeyErr  error
)

// benchMode is one configuration of BenchmarkProtocol: the same code with
// different options.
type benchMode struct {
	name string
	qpc  int // queries per ciphertext (0: as many as fit)
	agg  AggregatorOptions
}

var benchModes = []benchMode{
	// naive: one query per ciphertext, every proof verified alone, one
	// exponentiation per share in the interpolation.
	{"naive", 1, AggregatorOptions{Verification: VerifyInCombine, Combine: paillier.CombineOptions{ProofByProof: true, NaiveInterpolation: true}}},
	// packed-naive: packing alone (the status before batch verification).
	{"packed-naive", 0, AggregatorOptions{Verification: VerifyInCombine, Combine: paillier.CombineOptions{ProofByProof: true, NaiveInterpolation: true}}},
	// optimised: packing, batch verification, multi-exponentiation.
	{"optimised", 0, AggregatorOptions{Verification: VerifyInCombine}},
}

// BenchmarkProtocol: N = 250 teachers, t = 167, 2048-bit key (the published
// test primes, dealt once: the dealing time is logged), K = 10 classes,
// binomial (ε, δ) = (1, 1e-5). One op is one batch (QPC queries) through
// the state machines and the binary encodings, every party in this
// process: the teachers vote in parallel (GOMAXPROCS workers), the
// aggregator collects and closes, the t asked teachers partially decrypt in
// parallel, the aggregator verifies and combines. Teacher and aggregator
// phases never overlap, so the process CPU time (getrusage) of each phase
// is that party's CPU. Metrics, per answered query:
//
//   - teacher-ms/query: CPU of one teacher (its vote, and its partial
//     decryption in the t of N batches where it is asked), averaged;
//   - aggregator-ms/query: the aggregator's CPU;
//   - bytes/teacher/query: Query + Vote for every teacher, Decrypt + Partial
//     for the t decryptors, averaged over teachers, beside the seed's
//     estimate seed-bytes/teacher/query = 768·K;
//   - wall-s/1000queries: the wall time of one batch times ceil(1000/QPC)
//     (batches run one after the other; measured per batch, extrapolated);
//   - ref-verify-ms: CPU of one VerifyPartial on this key, the reference for
//     ratios measured in the same run (the machine is shared and noisy).
//
// Sub-benchmarks (benchModes) are the naive path (one query per
// ciphertext, proof-by-proof verification, naive interpolation), packing
// alone, and the optimised path. The teachers share one fast Encryptor (its
// table costs about 60 encryptions; a real teacher builds it once). Run
// with -benchtime=1x: one naive op is minutes of CPU.
func BenchmarkProtocol(b *testing.B) {
	const n, thr = 250, 167
	bigKeyOnce.Do(func() {
		start := time.Now()
		p, q, err := pailliertest.Primes(2048)
		if err != nil {
			bigKeyErr = err
			return
		}
		bigTPK, bigShares, bigKeyErr = paillier.DealThreshold(rand.Reader, p, q, n, thr)
		bigKeyTime = time.Since(start)
	})
	if bigKeyErr != nil {
		b.Fatal(bigKeyErr)
	}
	b.Logf("dealt the (%d, %d) key in %v", n, thr, bigKeyTime)
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("t%03d", i+1)
	}
	enc, err := paillier.NewEncryptor(bigTPK.Public(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range benchModes {
		b.Run(mode.name, func(b *testing.B) {
			cfg := Config{Teachers: names, Threshold: thr, Classes: 10, Features: 1, Noise: Binomial, Epsilon: 1, Delta: 1e-5,
				BudgetEpsilon: 1e4, BudgetDelta: 1e-3, QueriesPerCiphertext: mode.qpc}
			p0, err := Calibrate(cfg, bigTPK)
			if err != nil {
				b.Fatal(err)
			}
			p, err := p0.NewSession()
			if err != nil {
				b.Fatal(err)
			}
			signers, err := EphemeralSigners(names)
			if err != nil {
				b.Fatal(err)
			}
			ts := make([]*Teacher, n)
			for i := range ts {
				ts[i], err = NewTeacher(TeacherConfig{Name: names[i], Config: cfg, Key: bigShares[i], Encryptor: enc, Signer: signers[names[i]],
					Noise: noise.NewInsecureSeeded(uint64(i)), Ledger: nopLedger{},
					Predict: func(_ context.Context, rows [][]float64) ([]int, error) { return make([]int, len(rows)), nil }})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := ts[i].Accept(&Offer{Params: *p}); err != nil {
					b.Fatal(err)
				}
			}
			aggOpt := mode.agg
			aggOpt.Ledger = nopLedger{}
			agg, err := NewAggregator(p, bigTPK, aggOpt)
			if err != nil {
				b.Fatal(err)
			}
			rows := make([][]float64, p.QPC)
			for i := range rows {
				rows[i] = []float64{float64(i)}
			}
			ref := referenceVerify(b, p)
			var teacherCPU, aggCPU, wall time.Duration
			var bytes int
			ctx := context.Background()
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				c0 := processCPU()
				q, err := agg.NewBatch(rows)
				if err != nil {
					b.Fatal(err)
				}
				qb, err := q.MarshalBinary()
				if err != nil {
					b.Fatal(err)
				}
				c1 := processCPU()
				aggCPU += c1 - c0
				votes := make([][]byte, n)
				parallel(b, n, func(i int) error {
					m, err := Unmarshal(qb)
					if err != nil {
						return err
					}
					v, err := ts[i].HandleQuery(ctx, m.(*Query))
					if err != nil {
						return err
					}
					votes[i], err = v.MarshalBinary()
					return err
				})
				c2 := processCPU()
				teacherCPU += c2 - c1
				for i, vb := range votes {
					bytes += len(qb) + len(vb)
					m, err := Unmarshal(vb)
					if err != nil {
						b.Fatal(err)
					}
					if err := agg.AddVote(uint32(i+1), m.(*Vote)); err != nil {
						b.Fatal(err)
					}
				}
				set, err := agg.Close(q.Batch)
				if err != nil {
					b.Fatal(err)
				}
				sb, err := set.MarshalBinary()
				if err != nil {
					b.Fatal(err)
				}
				c25 := processCPU()
				aggCPU += c25 - c2
				// The consistency round: every contributor signs the set.
				sigs := make([][]byte, n)
				parallel(b, n, func(i int) error {
					m, err := Unmarshal(sb)
					if err != nil {
						return err
					}
					sm, err := ts[i].HandleSignSet(m.(*SignSet))
					if err != nil {
						return err
					}
					sigs[i], err = sm.MarshalBinary()
					return err
				})
				c26 := processCPU()
				teacherCPU += c26 - c25
				for i, sg := range sigs {
					bytes += len(sb) + len(sg)
					m, err := Unmarshal(sg)
					if err != nil {
						b.Fatal(err)
					}
					if err := agg.AddSetSignature(uint32(i+1), m.(*SetSignature)); err != nil {
						b.Fatal(err)
					}
				}
				d, err := agg.DecryptRequest(q.Batch)
				if err != nil {
					b.Fatal(err)
				}
				ask := agg.Ask(q.Batch, thr, nil)
				db, err := d.MarshalBinary()
				if err != nil {
					b.Fatal(err)
				}
				c3 := processCPU()
				aggCPU += c3 - c26
				partials := make([][]byte, len(ask))
				parallel(b, len(ask), func(k int) error {
					m, err := Unmarshal(db)
					if err != nil {
						return err
					}
					pm, err := ts[ask[k]-1].HandleDecrypt(m.(*Decrypt))
					if err != nil {
						return err
					}
					partials[k], err = pm.MarshalBinary()
					return err
				})
				c4 := processCPU()
				teacherCPU += c4 - c3
				for k, id := range ask {
					bytes += len(db) + len(partials[k])
					m, err := Unmarshal(partials[k])
					if err != nil {
						b.Fatal(err)
					}
					if err := agg.AddPartial(id, m.(*Partial)); err != nil {
						b.Fatal(err)
					}
				}
				res, err := agg.Combine(q.Batch)
				if err != nil {
					b.Fatal(err)
				}
				aggCPU += processCPU() - c4
				wall += time.Since(start)
				if len(res.Labels) != p.QPC {
					b.Fatalf("%d labels for %d queries", len(res.Labels), p.QPC)
				}
			}
			queries := float64(b.N * p.QPC)
			ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
			batches1000 := float64((1000 + p.QPC - 1) / p.QPC)
			b.ReportMetric(ms(teacherCPU)/queries/n, "teacher-ms/query")
			b.ReportMetric(ms(aggCPU)/queries, "aggregator-ms/query")
			b.ReportMetric(float64(bytes)/queries/n, "bytes/teacher/query")
			b.ReportMetric(768*float64(p.Classes), "seed-bytes/teacher/query")
			b.ReportMetric(float64(p.QPC), "queries/ciphertext")
			b.ReportMetric(wall.Seconds()/float64(b.N)*batches1000, "wall-s/1000queries")
			b.ReportMetric(ms(ref), "ref-verify-ms")
		})
	}
}

// referenceVerify returns the CPU time of one VerifyPartial on the big key
// (the median of three), the reference unit of the benchmark's ratios.
func referenceVerify(b *testing.B, p *Params) time.Duration {
	b.Helper()
	ct, err := bigTPK.Public().Encrypt(rand.Reader, big.NewInt(7))
	if err != nil {
		b.Fatal(err)
	}
	pd, err := bigShares[0].Decrypt(rand.Reader, ct)
	if err != nil {
		b.Fatal(err)
	}
	var ds []time.Duration
	for range 3 {
		c := processCPU()
		if err := bigTPK.VerifyPartial(ct, pd); err != nil {
			b.Fatal(err)
		}
		ds = append(ds, processCPU()-c)
	}
	if ds[0] > ds[1] {
		ds[0], ds[1] = ds[1], ds[0]
	}
	if ds[1] > ds[2] {
		ds[1], ds[2] = ds[2], ds[1]
	}
	if ds[0] > ds[1] {
		ds[0], ds[1] = ds[1], ds[0]
	}
	return ds[1]
}

// parallel runs f(0..n-1) on GOMAXPROCS goroutines and fails b on the first
// error.
func parallel(b *testing.B, n int, f func(int) error) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make([]error, n)
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = f(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			b.Fatalf("party %d: %v", i, err)
		}
	}
}

type nopLedger struct{}

func (nopLedger) Charge(string, float64, float64) error { return nil }
