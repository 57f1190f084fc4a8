package cape

import (
	"context"
	"fmt"
	"testing"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/secagg"
)

// BenchmarkZeroSumSite times one site's local work (drawing ê_s with the
// exact secure sampler and encoding it); BenchmarkSimulateZeroSum the whole
// Algorithm 2 in process (all sites and the aggregator share the cores).
// L = 5,151 is capeFM's D = 100 (upper triangle of Λ2 plus Λ1).
func BenchmarkZeroSumSite(b *testing.B) {
	for _, L := range []int{101, 5151} {
		b.Run(fmt.Sprintf("L=%d", L), func(b *testing.B) {
			p := ZeroSumParams{Sites: []uint32{1, 2, 3, 4, 5}, Tau: 0.1, Len: L}
			src := noise.NewSecure()
			for b.Loop() {
				if _, err := NewZeroSumSite(p, 1, src); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkSimulateZeroSum(b *testing.B) {
	for _, S := range []int{5, 20} {
		b.Run(fmt.Sprintf("S=%d/L=5151", S), func(b *testing.B) {
			sites := make([]uint32, S)
			srcs := map[uint32]noise.Source{}
			for i := range sites {
				sites[i] = uint32(i + 1)
				srcs[sites[i]] = noise.NewSecure()
			}
			p := ZeroSumParams{Sites: sites, Tau: 0.1, Len: 5151}
			sess := make([]byte, 32)
			for b.Loop() {
				if _, err := SimulateZeroSum(context.Background(), p, sess, srcs, secagg.RunOptions{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
