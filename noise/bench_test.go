package noise

import (
	"math/big"
	mrand "math/rand/v2"
	"testing"
)

// Reference: math/rand/v2's NormFloat64 (NOT usable for privacy; benchmark only).
func BenchmarkReferenceNormFloat64(b *testing.B) {
	r := mrand.New(mrand.NewChaCha8([32]byte{1}))
	var s float64
	for i := 0; i < b.N; i++ {
		s += r.NormFloat64()
	}
	_ = s
}

func benchSources() map[string]Source {
	return map[string]Source{"secure": NewSecure(), "seeded": NewInsecureSeeded(1)}
}

func BenchmarkGaussian(b *testing.B) {
	for name, src := range benchSources() {
		b.Run(name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, err := Gaussian(src, 1.5); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkAddGaussianVector1000(b *testing.B) {
	x := make([]float64, 1000)
	src := NewSecure()
	for i := 0; i < b.N; i++ {
		if err := AddGaussian(src, x, 1.5); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(x))/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkAddLaplaceVector1000(b *testing.B) {
	x := make([]float64, 1000)
	src := NewSecure()
	for i := 0; i < b.N; i++ {
		if err := AddLaplace(src, x, 1.5); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(x))/b.Elapsed().Seconds(), "samples/s")
}

func BenchmarkLaplace(b *testing.B) {
	src := NewSecure()
	for i := 0; i < b.N; i++ {
		if _, err := Laplace(src, 1.5); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDiscreteGaussian(b *testing.B) {
	src := NewSecure()
	s2 := big.NewRat(9, 4)
	for i := 0; i < b.N; i++ {
		if _, err := DiscreteGaussian(src, s2); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDiscreteLaplace(b *testing.B) {
	src := NewSecure()
	s := big.NewRat(3, 2)
	for i := 0; i < b.N; i++ {
		if _, err := DiscreteLaplace(src, s); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBinomial300 is a DPPP teacher's share size (a few hundred coins
// per class), seeded as in the experiments and tests.
func BenchmarkBinomial300(b *testing.B) {
	src := NewInsecureSeeded(1)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if _, err := Binomial(src, 300); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBinomial1e6(b *testing.B) {
	src := NewSecure()
	for i := 0; i < b.N; i++ {
		if _, err := Binomial(src, 1_000_000); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBinomial1e9(b *testing.B) {
	src := NewSecure()
	for i := 0; i < b.N; i++ {
		if _, err := Binomial(src, 1_000_000_000); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBernoulliExpNeg(b *testing.B) {
	src := NewSecure()
	g := big.NewRat(3, 7)
	for i := 0; i < b.N; i++ {
		if _, err := BernoulliExpNeg(src, g); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkObjPert10(b *testing.B) {
	src := NewSecure()
	for i := 0; i < b.N; i++ {
		if _, err := ObjPert(src, 10, 2); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAddGaussianSymmetric50(b *testing.B) {
	src := NewSecure()
	m := make([]float64, 50*50)
	for i := 0; i < b.N; i++ {
		if err := AddGaussianSymmetric(src, m, 50, 1); err != nil {
			b.Fatal(err)
		}
	}
}
