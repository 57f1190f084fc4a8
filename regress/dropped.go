package regress

import (
	"fmt"
	"math"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/report"
)

// ReleaseDroppedShare releases the share f = m/N of the N encoded rows that
// are the all-zero rows of records dropped for a missing value (schema
// "missing": "drop"), for the confidence intervals of a linear fit.
//
// Why the intervals need f: a zero row adds nothing to Σxxᵀ, Σxy or Σy², so
// the minimiser is that of the N − m records, but the normalised moments
// are Λ2 = (1 − f)·S and Λ0 = (1 − f)·E[y²] (S and E over the records).
// The residual variance Λ0 − βᵀΛ2β is then (1 − f)·σ², and the sampling
// part σ̂²Λ2⁻¹/N of the intervals is (1 − f) times the right one,
// σ²S⁻¹/(N − m): its standard error is short by √(1 − f). The fix divides
// the residual variance by 1 − f̂.
//
// Privacy: m depends on the data. Under replace-one neighbours (N public)
// replacing one record changes whether it is dropped, so m by at most 1:
// the L1 sensitivity of the count is 1, exactly (an integer count below
// 2⁵³ is exact in float64). The Laplace mechanism with scale 1/ε releases
// m̃ with ε-DP; f̂ = clamp(m̃/N, 0, 1 − 1/N) is post-processing. The caller
// composes ε with the fit's.
func ReleaseDroppedShare(dropped, n int64, epsilon float64, src noise.Source) (float64, report.Release, error) {
	if n < 1 || dropped < 0 || dropped > n {
		return 0, report.Release{}, fmt.Errorf("regress: dropped share: %d dropped of N = %d", dropped, n)
	}
	if src == nil {
		return 0, report.Release{}, fmt.Errorf("regress: dropped share: no randomness source")
	}
	const sens = 1.0
	b, err := accounting.LaplaceScale(epsilon, sens)
	if err != nil {
		return 0, report.Release{}, fmt.Errorf("regress: dropped share: calibrate Laplace noise: %w", err)
	}
	v := []float64{float64(dropped)}
	if err := noise.AddLaplace(src, v, b); err != nil {
		return 0, report.Release{}, fmt.Errorf("regress: dropped share: add noise: %w", err)
	}
	nf := float64(n)
	f := math.Max(0, math.Min(v[0]/nf, 1-1/nf))
	return f, report.Release{Name: "m = number of records dropped for a missing value (for the sampling part of the confidence intervals)",
		Entries: 1, Norm: "L1", Sensitivity: sens, Noise: "laplace", Scale: b}, nil
}
