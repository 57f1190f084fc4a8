package noise_test

import (
	"fmt"
	"math"
	"math/big"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
)

// Release a 3-vector with L2 sensitivity 1 under (1, 1e-5)-DP.
func ExampleAddGaussian() {
	sigma, err := accounting.GaussianSigma(1, 1e-5, 1) // includes the grid slack
	if err != nil {
		panic(err)
	}
	x := []float64{10, 20, 30}
	if err := noise.AddGaussian(noise.NewSecure(), x, sigma); err != nil {
		panic(err)
	}
	g, _ := noise.GaussianGrid(sigma, len(x))
	onGrid := true
	for _, v := range x {
		onGrid = onGrid && v/g == math.Trunc(v/g)
	}
	fmt.Printf("σ = %.4f, outputs on the grid 2^%d: %v\n", sigma, int(math.Log2(g)), onGrid)
	// Output: σ = 3.7306, outputs on the grid 2^-20: true
}

// The slack that AddGaussian's rounding adds to the L2 sensitivity.
func ExampleGaussianGridSlack() {
	for _, n := range []int{1, 100, 10000} {
		fmt.Printf("n=%d: slack/σ = %.3g\n", n, noise.GaussianGridSlack(1, n))
	}
	// Output:
	// n=1: slack/σ = 2.38e-07
	// n=100: slack/σ = 2.98e-07
	// n=10000: slack/σ = 3.73e-07
}

// Binomial noise for the binomial mechanism: Binomial(n, ½) − n/2.
func ExampleBinomial() {
	src := noise.NewInsecureSeeded(1) // reproducible, NOT private
	h, err := noise.Binomial(src, 1000)
	if err != nil {
		panic(err)
	}
	fmt.Println(h >= 0 && h <= 1000, src.Secure())
	// Output: true false
}

func ExampleDiscreteGaussian() {
	src := noise.NewSecure()
	v, err := noise.DiscreteGaussian(src, big.NewRat(9, 4)) // σ = 1.5
	if err != nil {
		panic(err)
	}
	fmt.Println(v == math.MaxInt64) // an integer, almost surely small
	// Output: false
}

func ExampleNewInsecureSeeded() {
	src := noise.NewInsecureSeeded(42)
	fmt.Println(src.Secure())
	fmt.Println(src)
	// Output:
	// false
	// INSECURE seeded (ChaCha8, seed 42): NOT differentially private, tests/experiments only
}
