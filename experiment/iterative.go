package experiment

import "github.com/dplearn/dplearn/fit"

// configureIterative sets noisy gradient descent to the Gaussian FM seed's
// setting: T = f.steps iterations with noise multiplier f.tau per step (the
// overall ε is then an output, reported by the accountant), or with
// f.tau = 0 the multiplier that makes all T steps together (ε, δ)-DP.
func configureIterative(req *fit.Request, f fitSpec) {
	if f.mech == "noisygd" {
		// Sigma = 0 makes regress solve for the multiplier meeting (ε, δ).
		req.Options["iterations"], req.Options["sigma"] = f.steps, f.tau
		if f.tau > 0 {
			req.Epsilon = 0 // ε is an output when σ is given
		}
	}
}
