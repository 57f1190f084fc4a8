package dpbeam

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/suffstat"
)

// BenchmarkPrismVsSingle reads the same CSV files (D = 50: 49 features and
// the target, six decimals, 32 files, a quarter gzip-compressed) with the
// Prism pipeline and with the single-machine engine (dataset.Moments per
// file, all cores, merged), and reports rows/s of each: divide them for the
// ratio measured in the same run. Sizes 1M and 4M rows; 16M with
// DPLEARN_BEAM_BENCH_16M=1 (about 6 GB of CSV). Run with -benchtime=1x.
func BenchmarkPrismVsSingle(b *testing.B) {
	sizes := []int{1 << 20, 4 << 20}
	if os.Getenv("DPLEARN_BEAM_BENCH_16M") == "1" {
		sizes = append(sizes, 16<<20)
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("N=%dM", n>>20), func(b *testing.B) {
			dir := b.TempDir()
			s, paths := synthetic(b, dir, n, 50, 32, 3)
			var want []byte
			// Two alternating rounds on the same files: the machine is
			// shared, so compare the pairs.
			for round := 0; round < 2; round++ {
				b.Run("single", func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						var total *suffstat.Moments
						for _, p := range paths {
							m, _, err := dataset.Moments(context.Background(), p, s, dataset.Options{})
							if err != nil {
								b.Fatal(err)
							}
							if total == nil {
								total = m
							} else if err := total.Merge(m); err != nil {
								b.Fatal(err)
							}
						}
						want, _ = total.MarshalBinary()
					}
					b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				})
				b.Run("prism", func(b *testing.B) {
					for i := 0; i < b.N; i++ {
						out := filepath.Join(b.TempDir(), "stats.json")
						o := Options{Inputs: []string{filepath.Join(dir, "syn-*")}, Schema: s}
						p, sc := beam.NewPipelineWithRoot()
						st, err := Statistics(sc, o)
						if err != nil {
							b.Fatal(err)
						}
						if err := WriteStats(sc, st, o, out); err != nil {
							b.Fatal(err)
						}
						if _, err := prism.Execute(context.Background(), p); err != nil {
							b.Fatal(err)
						}
						b.StopTimer()
						got, _, err := runStatsRead(out, o)
						if err != nil {
							b.Fatal(err)
						}
						if want != nil && string(got) != string(want) {
							b.Fatal("the pipeline's statistics differ from the single pass")
						}
						b.StartTimer()
					}
					b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "rows/s")
				})
			}
		})
	}
}
