package paillier

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"testing"
	"time"
)

// Benchmarks at the production sizes, 2048 and 3072 bits, on fixture safe
// primes. The reference for encryption is "naive": r^n mod n^2 with
// big.Int.Exp for r uniform in Z*_n, measured in the same run; compare the
// other Encrypt variants with it as a ratio.

var benchSizes = []int{2048, 3072}

func BenchmarkKeygenFromPrimes(b *testing.B) {
	for _, bits := range benchSizes {
		p, q := testPrimePair(bits)
		b.Run(fmt.Sprint(bits), func(b *testing.B) {
			for b.Loop() {
				if _, err := NewPrivateKey(p, q); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%d/threshold-N5-t3", bits), func(b *testing.B) {
			for b.Loop() {
				if _, _, err := DealThreshold(rand.Reader, p, q, 5, 3); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkEncrypt(b *testing.B) {
	for _, bits := range benchSizes {
		sk := mustTestKey(b, bits)
		pk := sk.Public()
		m := big.NewInt(123456)
		b.Run(fmt.Sprintf("%d/naive-rn-reference", bits), func(b *testing.B) {
			for b.Loop() {
				r, _ := rand.Int(rand.Reader, pk.n)
				_ = new(big.Int).Exp(r, pk.n, pk.nSquared)
			}
		})
		b.Run(fmt.Sprintf("%d/PublicKey.Encrypt", bits), func(b *testing.B) {
			for b.Loop() {
				if _, err := pk.Encrypt(rand.Reader, m); err != nil {
					b.Fatal(err)
				}
			}
		})
		enc, err := NewEncryptor(pk, rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("%d/Encryptor-DJN-fixed-base", bits), func(b *testing.B) {
			for b.Loop() {
				if _, err := enc.Encrypt(m); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%d/Pool-foreground", bits), func(b *testing.B) {
			// Foreground latency only: the pool is refilled outside the
			// timer, so this measures one multiplication modulo n^2.
			ctx, cancel := context.WithCancel(context.Background())
			pool, _ := enc.StartPool(ctx, 64, 1)
			for b.Loop() {
				b.StopTimer()
				for pool.Ready() == 0 {
					r, _ := enc.randomizer()
					pool.ch <- r
				}
				b.StartTimer()
				if _, err := pool.Encrypt(m); err != nil {
					b.Fatal(err)
				}
			}
			cancel()
			pool.Wait()
		})
		b.Run(fmt.Sprintf("%d/NewEncryptor-table", bits), func(b *testing.B) {
			for b.Loop() {
				if _, err := NewEncryptor(pk, rand.Reader); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAddDecrypt(b *testing.B) {
	for _, bits := range benchSizes {
		sk := mustTestKey(b, bits)
		pk := sk.Public()
		x, _ := pk.Encrypt(rand.Reader, big.NewInt(1))
		y, _ := pk.Encrypt(rand.Reader, big.NewInt(2))
		b.Run(fmt.Sprintf("%d/Add", bits), func(b *testing.B) {
			for b.Loop() {
				_, _ = pk.Add(x, y)
			}
		})
		b.Run(fmt.Sprintf("%d/Decrypt-CRT", bits), func(b *testing.B) {
			for b.Loop() {
				if _, err := sk.Decrypt(x); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%d/Decrypt-textbook-reference", bits), func(b *testing.B) {
			for b.Loop() {
				_ = sk.decryptReference(x)
			}
		})
	}
}

func BenchmarkThreshold(b *testing.B) {
	const N, T = 5, 3
	for _, bits := range benchSizes {
		p, q := testPrimePair(bits)
		tpk, shares, err := DealThreshold(rand.Reader, p, q, N, T)
		if err != nil {
			b.Fatal(err)
		}
		ct, _ := tpk.Encrypt(rand.Reader, big.NewInt(77))
		parts := make([]*PartialDecryption, N)
		for i, s := range shares {
			parts[i], _ = s.Decrypt(rand.Reader, ct)
		}
		s := shares[0]
		x := new(big.Int).Mul(tpk.delta, s.s)
		e := new(big.Int).Lsh(x, 1)
		b.Run(fmt.Sprintf("%d/PartialDecrypt-without-proof", bits), func(b *testing.B) {
			for b.Loop() {
				_ = new(big.Int).Exp(ct.c, e, tpk.nSquared)
			}
		})
		b.Run(fmt.Sprintf("%d/Prove", bits), func(b *testing.B) {
			for b.Loop() {
				if _, err := tpk.prove(rand.Reader, 1, ct.c, parts[0].ci, x); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%d/PartialDecrypt-with-proof", bits), func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Decrypt(rand.Reader, ct); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%d/Verify", bits), func(b *testing.B) {
			for b.Loop() {
				if err := tpk.VerifyPartial(ct, parts[0]); err != nil {
					b.Fatal(err)
				}
			}
		})
		set := []int{1, 2, 3}
		cs := []*big.Int{parts[0].ci, parts[1].ci, parts[2].ci}
		b.Run(fmt.Sprintf("%d/Combine-t3-interpolation-only", bits), func(b *testing.B) {
			for b.Loop() {
				if _, err := tpk.interpolate(set, cs); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("%d/Combine-t3-with-verification", bits), func(b *testing.B) {
			for b.Loop() {
				if _, err := tpk.Combine(ct, parts); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEncryptRatio interleaves the naive reference (r^n mod n^2 with
// big.Int.Exp) and Encryptor.Encrypt in the same loop, so that both see the
// same machine load, and reports the ratio of their total times as the
// metric "fast/naive" (the target is <= 0.3 at 2048 bits).
func BenchmarkEncryptRatio(b *testing.B) {
	for _, bits := range benchSizes {
		sk := mustTestKey(b, bits)
		pk := sk.Public()
		enc, err := NewEncryptor(pk, rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		m := big.NewInt(123456)
		b.Run(fmt.Sprint(bits), func(b *testing.B) {
			var naive, fast time.Duration
			for b.Loop() {
				t0 := time.Now()
				r, _ := rand.Int(rand.Reader, pk.n)
				_ = new(big.Int).Exp(r, pk.n, pk.nSquared)
				t1 := time.Now()
				if _, err := enc.Encrypt(m); err != nil {
					b.Fatal(err)
				}
				t2 := time.Now()
				naive += t1.Sub(t0)
				fast += t2.Sub(t1)
			}
			b.ReportMetric(float64(fast)/float64(naive), "fast/naive")
			b.ReportMetric(float64(naive.Nanoseconds())/float64(b.N), "naive-ns/op")
			b.ReportMetric(float64(fast.Nanoseconds())/float64(b.N), "fast-ns/op")
		})
	}
}

// BenchmarkBatchRatio compares, in the same loop (same machine load),
// proof-by-proof verification (VerifyPartial on each of t proofs) with
// VerifyPartials on the same t proofs, and naive interpolation with the
// multi-exponentiation, at 2048 bits with (N, t) = (40, 27). Metrics:
// batch/each and multiexp/naive are time ratios; each-ms/proof and
// batch-ms/proof are per proof. Run with -cpu 1 so that wall time is CPU
// time (VerifyPartials and multiExp use GOMAXPROCS goroutines).
func BenchmarkBatchRatio(b *testing.B) {
	const N, t = 40, 27
	p, q := testPrimePair(2048)
	tpk, shares, err := DealThreshold(rand.Reader, p, q, N, t)
	if err != nil {
		b.Fatal(err)
	}
	ct, _ := tpk.Encrypt(rand.Reader, big.NewInt(77))
	claims := make([]Claim, t)
	set := make([]int, t)
	cs := make([]*big.Int, t)
	for k := range claims {
		pd, err := shares[k].Decrypt(rand.Reader, ct)
		if err != nil {
			b.Fatal(err)
		}
		claims[k] = Claim{ct, pd}
		set[k] = k + 1
		cs[k] = pd.ci
	}
	tpk.vPowers() // per-key precomputation, done once in a deployment
	var each, batch, naive, multi time.Duration
	for b.Loop() {
		t0 := time.Now()
		for _, cl := range claims {
			if err := tpk.VerifyPartial(cl.Ciphertext, cl.Partial); err != nil {
				b.Fatal(err)
			}
		}
		t1 := time.Now()
		for _, err := range tpk.VerifyPartials(claims) {
			if err != nil {
				b.Fatal(err)
			}
		}
		t2 := time.Now()
		if _, err := tpk.interpolateNaive(set, cs); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		if _, err := tpk.interpolate(set, cs); err != nil {
			b.Fatal(err)
		}
		t4 := time.Now()
		each += t1.Sub(t0)
		batch += t2.Sub(t1)
		naive += t3.Sub(t2)
		multi += t4.Sub(t3)
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
	b.ReportMetric(float64(batch)/float64(each), "batch/each")
	b.ReportMetric(ms(each)/t, "each-ms/proof")
	b.ReportMetric(ms(batch)/t, "batch-ms/proof")
	b.ReportMetric(float64(multi)/float64(naive), "multiexp/naive")
	b.ReportMetric(ms(naive), "naive-interp-ms")
	b.ReportMetric(ms(multi), "multiexp-interp-ms")
}

// BenchmarkPlaintextProof measures, in the same loop (same machine load),
// at 2048 bits on the fixture primes: the references PublicKey.Encrypt
// (one plain encryption) and VerifyPartial for a (5, 3) and for DPPP's
// (250, 167) threshold key (the proof of a partial decryption grows with
// |N!|), then Encryptor.EncryptWithProof (encryption and proof),
// VerifyPlaintextProof on one proof, and VerifyPlaintextProofs on 250
// proofs (one ciphertext's contributors at N = 250). Metrics are time
// ratios against the references; run with -cpu 1 so that wall time is CPU
// time (the batch verifier uses GOMAXPROCS goroutines).
func BenchmarkPlaintextProof(b *testing.B) {
	const N = 250
	p, q := testPrimePair(2048)
	small, smallShares, err := DealThreshold(rand.Reader, p, q, 5, 3)
	if err != nil {
		b.Fatal(err)
	}
	tpk, shares, err := DealThreshold(rand.Reader, p, q, N, 167)
	if err != nil {
		b.Fatal(err)
	}
	pk := tpk.Public()
	enc, err := NewEncryptor(pk, rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	ct, _ := tpk.Encrypt(rand.Reader, big.NewInt(77))
	pdSmall, _ := smallShares[0].Decrypt(rand.Reader, ct)
	pdBig, _ := shares[0].Decrypt(rand.Reader, ct)
	m := big.NewInt(123456)
	claims := make([]PlaintextClaim, N)
	for k := range claims {
		context := fmt.Appendf(nil, "session|batch 1|teacher %d|index 0", k)
		c, pr, err := enc.EncryptWithProof(m, context)
		if err != nil {
			b.Fatal(err)
		}
		claims[k] = PlaintextClaim{c, pr, context}
	}
	var encT, vpSmall, vpBig, prove, verify, batch time.Duration
	for b.Loop() {
		t0 := time.Now()
		if _, err := pk.Encrypt(rand.Reader, m); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := small.VerifyPartial(ct, pdSmall); err != nil {
			b.Fatal(err)
		}
		t2 := time.Now()
		if err := tpk.VerifyPartial(ct, pdBig); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		if _, _, err := enc.EncryptWithProof(m, claims[0].Context); err != nil {
			b.Fatal(err)
		}
		t4 := time.Now()
		if err := pk.VerifyPlaintextProof(claims[0].Ciphertext, claims[0].Proof, claims[0].Context); err != nil {
			b.Fatal(err)
		}
		t5 := time.Now()
		for _, err := range pk.VerifyPlaintextProofs(claims) {
			if err != nil {
				b.Fatal(err)
			}
		}
		t6 := time.Now()
		encT += t1.Sub(t0)
		vpSmall += t2.Sub(t1)
		vpBig += t3.Sub(t2)
		prove += t4.Sub(t3)
		verify += t5.Sub(t4)
		batch += t6.Sub(t5)
	}
	r := func(x, y time.Duration) float64 { return float64(x) / float64(y) }
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) / float64(b.N) }
	b.ReportMetric(ms(encT), "encrypt-ms")
	b.ReportMetric(ms(vpSmall), "verifypartial-N5-ms")
	b.ReportMetric(ms(vpBig), "verifypartial-N250-ms")
	b.ReportMetric(r(prove, encT), "prove/encrypt")
	b.ReportMetric(r(prove, vpSmall), "prove/verifypartialN5")
	b.ReportMetric(r(verify, encT), "verify/encrypt")
	b.ReportMetric(r(verify, vpSmall), "verify/verifypartialN5")
	b.ReportMetric(r(batch, encT), "batch250/encrypt")
	b.ReportMetric(r(batch, vpSmall), "batch250/verifypartialN5")
	b.ReportMetric(r(batch, vpBig), "batch250/verifypartialN250")
	b.ReportMetric(r(batch, verify)/N, "batch-per-proof/verify")
}
