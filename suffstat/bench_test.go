package suffstat

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
)

func benchGram(b *testing.B, kn kernel, n, k, workers int) {
	rng := rand.New(rand.NewPCG(1, 1))
	rows := randRows(rng, n, k)
	b.SetBytes(int64(8 * len(rows)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := newWithKernel(k, kn)
		m.SetWorkers(workers)
		if err := m.AddRows(rows); err != nil {
			b.Fatal(err)
		}
		m.flush()
	}
	// N·K(K+1)/2 multiply-adds per pass.
	b.ReportMetric(float64(n)*float64(k*(k+1)/2)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFMA/s")
}

func BenchmarkGram(b *testing.B) {
	for _, kn := range kernels() {
		b.Run(kn.name+"/N=200000,K=100,serial", func(b *testing.B) { benchGram(b, kn, 200000, 100, 1) })
		b.Run(kn.name+"/N=200000,K=100,parallel", func(b *testing.B) { benchGram(b, kn, 200000, 100, runtime.GOMAXPROCS(0)) })
		b.Run(kn.name+"/N=1000000,K=10,serial", func(b *testing.B) { benchGram(b, kn, 1000000, 10, 1) })
	}
}

// BenchmarkFold measures the compensated fold of one block (16,384 rows)
// into the totals, next to the kernel work for the same block, so that the
// fold's share of the running time can be read off in one run.
func BenchmarkFold(b *testing.B) {
	for _, k := range []int{10, 100} {
		rng := rand.New(rand.NewPCG(2, 2))
		rows := randRows(rng, panelRows*blockPanels, k)
		b.Run(fmt.Sprintf("K=%d/fold", k), func(b *testing.B) {
			m := New(k)
			for i := 0; i < b.N; i++ {
				m.blkPanels = 1
				m.fold()
			}
		})
		b.Run(fmt.Sprintf("K=%d/block", k), func(b *testing.B) {
			m := New(k)
			m.SetWorkers(1)
			for i := 0; i < b.N; i++ {
				_ = m.AddRows(rows)
			}
		})
	}
}
