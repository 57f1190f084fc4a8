package accounting_test

import (
	"fmt"

	"github.com/dplearn/dplearn/accounting"
)

// A count with sensitivity 3 released with binomial noise at (ε = 0.5,
// δ = 1e-6): the DPPP theorem applied by group privacy, beside the exact
// profile's answer.
func ExampleBinomialDPPPGroup() {
	published, _ := accounting.BinomialDPPPGroup(0.5, 1e-6, 3)
	exact, _ := accounting.BinomialExactN(0.5, 1e-6, 3)
	fmt.Println(published, exact)
	// Output: 5388 2346
}

// 100 steps of noisy gradient descent with σ = 10 and sensitivity 1, drawn
// by noise.AddGaussian.
func ExampleGaussianStepsOnGrid() {
	r, _ := accounting.GaussianStepsOnGrid(10, 1, 100, 1e-5)
	fmt.Printf("ε = %.4f (exact), %.4f (RDP)\n", r.EpsilonExact, r.EpsilonRDP)
	// Output: ε = 4.3772 (exact), 4.7284 (RDP)
}
