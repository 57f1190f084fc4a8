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
	eps, order, _ := accounting.SubsampledGaussianEpsilon(accounting.AddRemove, 0.04, 1.5, 2250, 1e-5, nil)
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

func ExampleOptimalComposition() {
	adv, _ := accounting.AdvancedComposition(0.1, 0, 100, 1e-5)
	opt, _ := accounting.OptimalComposition(0.1, 0, 100, 1e-5)
	fmt.Printf("basic ε = 10, advanced ε = %.3f, optimal ε = %.3f\n", adv.Epsilon, opt)
	// Output: basic ε = 10, advanced ε = 5.850, optimal ε = 4.307
}

func ExampleCAPEDeltaExact() {
	// 10 sites, ⌈10/3⌉ − 1 = 3 colluders, per-site means of scalars in [0, 1]
	// over N_s = 200 records (Δ = 1/200), τ = 0.02.
	p := accounting.CAPEParams{Sites: 10, Colluders: accounting.CAPEColluders(10), Tau: 0.02, Sensitivity: 1.0 / 200}
	d, err := accounting.CAPEDeltaExact(p, 0.5)
	tau, _ := accounting.CAPETau(0.5, 1e-5, 10, 3, 1.0/200)
	fmt.Printf("S_C = %d, δ(0.5) = %.3g, %v; τ for (0.5, 1e-5): %.4g\n", p.Colluders, d, err, tau)
	// Output: S_C = 3, δ(0.5) = 0.0194, <nil>; τ for (0.5, 1e-5): 0.05224
}

func ExampleRDP_Epsilon() {
	// 1000 steps of full-batch Gaussian noise with multiplier 20.
	r, _ := accounting.GaussianRDP(20, 1, 1000, accounting.DefaultOrders())
	eps, order, _ := r.Epsilon(1e-5)
	classic, _, _ := r.EpsilonClassic(1e-5)
	fmt.Printf("ε = %.3f at α = %g (classic %.3f)\n", eps, order, classic)
	// Output: ε = 8.079 at α = 3.9 (classic 8.838)
}
