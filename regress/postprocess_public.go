package regress

import (
	"fmt"
	"math"
)

// gaussianFMClips reports whether gaussian-fm's default post-processing of
// a model kind is eigenvalue clipping (linear regression, issue 26) rather
// than the ridge and trimming (logistic): fitPostProcess's clip argument
// for gaussian-fm, and for GaussianFMPostProcess.
func gaussianFMClips(kind Kind) bool { return kind == Linear }

// GaussianFMPostProcess returns the post-processing a default gaussian-fm
// fit (Config.Lambda < 0, Config.EigenFloor 0, no structure, no solving
// ball) applies to a released objective of d features whose Λ2 entries
// (upper triangle, diagonal included) carry independent Gaussian noise of
// per-entry standard deviation tau2: fitPostProcess with gaussian-fm's
// choice of rule, i.e.
//
//   - linear: eigenvalue clipping at F = EigenFloor(d, tau2,
//     DefaultEigenFloorFactor) = 2·tau2·√d, no ridge, and the
//     identification floor MinEigen = min(TrimFraction·DefaultLambdaFactor·
//     tau2, F/2) below F, so nothing is trimmed (docs/mechanisms.md,
//     "Eigenvalue clipping": F is the expected spectral norm of the noise
//     matrix, EigenFloor);
//   - logistic: the ridge DefaultLambdaFactor·tau2 with trimming at
//     TrimFraction of it (NoisyPostProcess).
//
// It reads public values only (kind, d and tau2, itself a function of the
// public ε, δ, N and d), so solving any released objective with it is
// post-processing: no privacy cost. Protocols that combine several
// releases into one objective (capefm: a sum of site releases, or an
// average of site objectives) pass the per-entry noise standard deviation
// of the combined Λ2, so the combined objective is post-processed as a
// central gaussian-fm release with that noise would be.
func GaussianFMPostProcess(kind Kind, d int, tau2 float64) (PostProcess, error) {
	if kind != Linear && kind != Logistic {
		return PostProcess{}, fmt.Errorf("regress: gaussian-fm post-processing of unknown model kind %q", kind)
	}
	if d < 1 || !(tau2 > 0) || math.IsInf(tau2, 0) {
		return PostProcess{}, fmt.Errorf("regress: gaussian-fm post-processing needs d ≥ 1 and a positive finite noise τ2 on Λ2, got d = %d, τ2 = %v", d, tau2)
	}
	return fitPostProcess(Config{Kind: kind, Lambda: -1}, gaussianFMClips(kind), d, tau2, nil), nil
}

// ClipLine is the privacy report's line for eigenvalue clipping at
// pp.Floor, worded as gaussian-fm's own report words it (it quotes the
// public floor only).
func ClipLine(pp PostProcess) string { return clipLine(pp) }
