package accounting_test

import (
	"fmt"

	"github.com/dplearn/dplearn/accounting"
)

func ExampleAnalyticGaussianDelta() {
	d, _ := accounting.AnalyticGaussianDelta(0.1, 10, 1)
	fmt.Printf("%.12f\n", d)
	// Output: 0.008751768146
}

func ExampleGaussianSigma() {
	sigma, _ := accounting.GaussianSigma(1, 1e-5, 1)
	fmt.Printf("σ = %.4f\n", sigma)
	// Output: σ = 3.7306
}

func ExampleSubsampledGaussianEpsilon() {
	eps, order, _ := accounting.SubsampledGaussianEpsilon(0.04, 1.5, 2250, 1e-5, nil)
	fmt.Printf("ε = %.3f at α = %.1f\n", eps, order)
	// Output: ε = 7.329 at α = 3.9
}

func ExampleZCDP_Epsilon() {
	rho, _ := accounting.GaussianZCDP(10, 1) // ρ = 1/200 per step
	total, _ := accounting.ComposeZCDP(accounting.ZCDP{Rho: rho}, accounting.ZCDP{Rho: rho})
	eps, _ := total.Epsilon(1e-6)
	fmt.Printf("ρ = %.3f, ε = %.3f\n", total.Rho, eps)
	// Output: ρ = 0.010, ε = 0.753
}

func ExampleBinomialDPPP() {
	n, _ := accounting.BinomialDPPP(1, 1e-5, 2) // vote histogram: L1 sensitivity 2
	fmt.Println(n)
	// Output: 645
}
