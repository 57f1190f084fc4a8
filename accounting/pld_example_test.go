package accounting_test

import (
	"fmt"

	"github.com/dplearn/dplearn/accounting"
)

// The DPPP binomial histogram with 224 coins in the honest shares: the
// exact ε of one query at δ = 1e-5 (both moved counts together), the PLD
// composition of 20 queries at δ = 1e-3, and the coins one query needs for
// (1, 1e-5).
func ExampleBinomialHistogramPLD() {
	one, _ := accounting.BinomialHistogramPLD(224, accounting.PLDOptions{})
	e1, _ := one.Epsilon(1e-5)
	twenty, _ := one.SelfCompose(20)
	e20, _ := twenty.Epsilon(1e-3)
	b := twenty.ErrorBound()
	n, _ := accounting.BinomialHistogramCoins(1, 1e-5, 1, accounting.PLDOptions{})
	fmt.Printf("one query: ε = %.4f at δ = 1e-5\n", e1)
	fmt.Printf("20 queries: ε = %.4f at δ = 1e-3 (over-charged by at most %.4f)\n", e20, b.EpsilonSlack)
	fmt.Printf("coins for (1, 1e-5): %d\n", n)
	// Output:
	// one query: ε = 0.6871 at δ = 1e-5
	// 20 queries: ε = 2.5535 at δ = 1e-3 (over-charged by at most 0.0020)
	// coins for (1, 1e-5): 115
}

// Three Gaussian mechanisms of σ = √3 compose to one of σ = 1: δ(ε = 1) =
// 0.126936 (Google dp_accounting); the pessimistic PLD is slightly above.
func ExampleGaussianPLD() {
	g, _ := accounting.GaussianPLD(1.7320508075688772, 1, accounting.PLDOptions{})
	three, _ := g.SelfCompose(3)
	d, _ := three.Delta(1)
	exact, _ := accounting.AnalyticGaussianDelta(1, 1, 1)
	fmt.Printf("PLD δ(1) = %.6f, exact %.6f\n", d, exact)
	// Output: PLD δ(1) = 0.126964, exact 0.126937
}
