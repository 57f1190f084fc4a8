package accounting

import (
	"fmt"
	"math"

	"github.com/dplearn/dplearn/noise"
)

// This file holds the conversions that `dplearn privacy` prints beside the
// library's accountants, so that the calculator only maps flags to calls.

// BinomialDPPPGroup returns the number of fair coin flips that Theorem 1 of
// the DPPP seed, n ≥ 2((2+ε₁)/ε₁)² ln(2/δ₁) (BinomialDPPP with sensitivity
// 1), needs for one count of integer sensitivity S ≥ 1 to be (ε, δ)-DP.
//
// The theorem is stated for S = 1. The mechanism's output distribution
// depends on the data only through the count c, and counts c and c + S are
// joined by the chain c, c+1, …, c+S of S unit steps, each (ε₁, δ₁)-DP. Group
// privacy (Dwork & Roth, Theorem 2.2, with δ) then gives for the S-step
// pair
//
//	P[M(c) ∈ A] ≤ e^(Sε₁) P[M(c+S) ∈ A] + δ₁ Σ_{i=0}^{S−1} e^(iε₁)
//	            ≤ e^(Sε₁) P[M(c+S) ∈ A] + S e^((S−1)ε₁) δ₁.
//
// Choosing ε₁ = ε/S and δ₁ = δ/(S e^((S−1)ε/S)) makes the pair (ε, δ)-DP, so
// the result is BinomialDPPP(ε₁, δ₁, 1). For S = 1 it is BinomialDPPP(ε, δ, 1).
// It is a published bound, printed beside the exact BinomialExactN, which
// is never larger.
func BinomialDPPPGroup(epsilon, delta float64, sens int64) (int64, error) {
	if sens < 1 {
		return 0, fmt.Errorf("accounting: binomial sensitivity must be an integer ≥ 1, got %d", sens)
	}
	s := float64(sens)
	return BinomialDPPP(epsilon/s, delta/(s*math.Exp(epsilon*(s-1)/s)), 1)
}

// GaussianStepsOnGrid is GaussianSteps for T steps drawn with
// noise.AddGaussian: the sensitivity is raised by the sampler's grid slack
// bound, Δ′ = Δ + GridSlackRatio·σ (noise.GridSlackRatio = 2⁻²⁰).
//
// Each step is then a Gaussian mechanism of sensitivity Δ′ by the argument
// of GaussianSigma: AddGaussian is exactly the discrete Gaussian mechanism in
// grid units, whose δ exceeds the continuous curve's by at most what a
// sensitivity inflated by noise.DiscreteGaussianMargin covers, and the slack
// GridSlackRatio·σ charged here is twice the largest rounding, the spare
// covering that margin whenever Δ/σ < 2047. T such steps are what
// GaussianSteps accounts (exactly, by Gaussian DP, and by the RDP and zCDP
// bounds). A σ of 0 or ±∞ is passed on unchanged for GaussianSteps to refuse
// or account.
func GaussianStepsOnGrid(sigma, sens float64, steps int, delta float64) (GaussianStepsResult, error) {
	if sigma > 0 && !math.IsInf(sigma, 0) {
		sens += noise.GridSlackRatio * sigma
	}
	return GaussianSteps(sigma, sens, steps, delta)
}
