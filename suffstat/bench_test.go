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
	reportRows(b, n, k)
}

func benchLegacy(b *testing.B, kn kernel, n, k int) {
	rng := rand.New(rand.NewPCG(1, 1))
	rows := randRows(rng, n, k)
	b.SetBytes(int64(8 * len(rows)))
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		m := newLegacy(k, kn)
		m.addRows(rows)
		m.flush()
	}
	reportRows(b, n, k)
}

// reportRows reports rows/s and the useful multiply-adds per second
// (N·K(K+1)/2 per pass, whatever the kernel does internally).
func reportRows(b *testing.B, n, k int) {
	s := b.Elapsed().Seconds()
	b.ReportMetric(float64(n)*float64(b.N)/s, "rows/s")
	b.ReportMetric(float64(n)*float64(k*(k+1)/2)*float64(b.N)/s/1e9, "GFMA/s")
}

// BenchmarkGram compares, in one run, the exact accumulator ("exact") with
// the compensated floating-point accumulator it replaced ("legacy",
// legacy_test.go) on the same rows with the same kernel, serially; divide
// the two rows/s for the cost of exactness. "parallel" is the exact one on
// GOMAXPROCS cores.
func BenchmarkGram(b *testing.B) {
	for _, kn := range kernels() {
		for _, sz := range []struct{ n, k int }{{200000, 50}, {200000, 100}, {1000000, 10}} {
			name := fmt.Sprintf("%s/N=%d,K=%d", kn.name, sz.n, sz.k)
			b.Run(name+"/legacy", func(b *testing.B) { benchLegacy(b, kn, sz.n, sz.k) })
			b.Run(name+"/exact", func(b *testing.B) { benchGram(b, kn, sz.n, sz.k, 1) })
			b.Run(name+"/exact-parallel", func(b *testing.B) { benchGram(b, kn, sz.n, sz.k, runtime.GOMAXPROCS(0)) })
		}
	}
}
