package experiment

import "github.com/dplearn/dplearn/regress"

// configureIterative sets noisy gradient descent to the Gaussian FM seed's
// setting: T = f.steps iterations with noise multiplier f.tau per step (the
// overall ε is then an output, reported by the accountant), or with
// f.tau = 0 the multiplier that makes all T steps together (ε, δ)-DP.
func configureIterative(cfg *regress.Config, f fitSpec) {
	if f.mech == "noisygd" {
		// Sigma = 0 makes regress solve for the multiplier meeting (ε, δ).
		cfg.NoisyGD = regress.NoisyGDOptions{Iterations: f.steps, Sigma: f.tau}
		if f.tau > 0 {
			cfg.Epsilon = 0 // ε is an output when σ is given
		}
	}
}
