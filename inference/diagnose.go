package inference

import (
	"fmt"
	"math"
	"sort"

	"github.com/dplearn/dplearn/regress"
)

// Diagnosis says why coefficients are unidentified and what would
// identify them. It is computed from the released objective and public
// parameters only (post-processing).
type Diagnosis struct {
	// Cause is "trimmed" when the released Λ2 itself has eigen-directions
	// at or below the fit's trimming floor (the released objective cannot
	// locate the coefficients along them), or "failed-replicates" when Λ2
	// is positive definite but more than α/2 of the bootstrap replicates
	// lost a direction (the noise brings Λ2 near singular: the interval's
	// end is at infinity).
	Cause string `json:"cause"`
	// Floor is the trimming floor (regress.Released.MinEigen) and NoiseSD
	// the standard deviation of the noise on one entry of Λ2; the noise's
	// spectral size is about 2√d·NoiseSD.
	Floor   float64 `json:"floor"`
	NoiseSD float64 `json:"noise_sd"`
	// Directions are the weak eigen-directions of the released Λ2 (at or
	// below the floor for "trimmed"; the weakest one otherwise), each with
	// its eigenvalue and the encoded coefficients that load on it most.
	Directions []Direction `json:"directions"`
}

// Direction is one eigen-direction of the released Λ2.
type Direction struct {
	Eigenvalue float64   `json:"eigenvalue"`
	Loadings   []Loading `json:"loadings"`
}

// Loading is the weight of encoded coefficient Index in a direction (the
// eigenvector's entry; the squares of a direction's entries sum to 1).
type Loading struct {
	Index  int     `json:"index"`
	Weight float64 `json:"weight"`
}

// maxLoadings is how many coefficients a direction names.
const maxLoadings = 4

// diagnose describes the weak directions of the (projected) released
// objective q: every eigenvalue ≤ floor, or the smallest when none is.
func diagnose(q *regress.Quadratic, rel *regress.Released, cause string) *Diagnosis {
	dg := &Diagnosis{Cause: cause, Floor: rel.MinEigen, NoiseSD: math.Sqrt(rel.VarLambda2)}
	vals, vecs, err := q.Eigen(0, true)
	if err != nil || len(vals) == 0 {
		return dg
	}
	order := make([]int, len(vals))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return vals[order[a]] < vals[order[b]] })
	for n, k := range order {
		if n > 0 && vals[k] > rel.MinEigen {
			break
		}
		dir := Direction{Eigenvalue: vals[k]}
		for i := 0; i < q.D; i++ {
			dir.Loadings = append(dir.Loadings, Loading{Index: i, Weight: vecs.At(i, k)})
		}
		sort.Slice(dir.Loadings, func(a, b int) bool { return math.Abs(dir.Loadings[a].Weight) > math.Abs(dir.Loadings[b].Weight) })
		// Keep the loadings that carry 90% of the direction (at most
		// maxLoadings).
		cum := 0.0
		for j, l := range dir.Loadings {
			cum += l.Weight * l.Weight
			if cum >= 0.9 || j+1 == maxLoadings {
				dir.Loadings = dir.Loadings[:j+1]
				break
			}
		}
		dg.Directions = append(dg.Directions, dir)
	}
	return dg
}

// Explain writes the diagnosis in words, naming coefficients by names (the
// encoded columns, FeatureNames order).
func (dg *Diagnosis) Explain(names []string) string {
	name := func(i int) string {
		if i < len(names) {
			return names[i]
		}
		return fmt.Sprintf("#%d", i)
	}
	var dirs string
	for n, d := range dg.Directions {
		if n > 0 {
			dirs += "; "
		}
		dirs += fmt.Sprintf("eigenvalue %.3g along", d.Eigenvalue)
		for j, l := range d.Loadings {
			sep := " "
			if j > 0 {
				sep = " + "
			}
			dirs += fmt.Sprintf("%s%.2f·%s", sep, l.Weight, name(l.Index))
		}
	}
	const fix = "what would identify them: more ε (the noise on Λ2 scales as 1/ε), fewer category levels (merge rare levels: a level's indicator has curvature about its share of the rows), or a coarser schema (drop or combine nearly collinear columns, tighter public ranges)"
	switch dg.Cause {
	case "trimmed":
		return fmt.Sprintf("the released Λ2 has %d direction(s) at or below the trimming floor %.3g (noise SD per entry %.3g, about %.3g across the spectrum), so the released objective cannot locate the coefficients along them (%s); %s",
			len(dg.Directions), dg.Floor, dg.NoiseSD, 2*math.Sqrt(float64(len(names)))*dg.NoiseSD, dirs, fix)
	default:
		return fmt.Sprintf("more than 1 − level of the bootstrap replicates lost a direction, so an interval end is at infinity: the noise (SD per entry %.3g, about %.3g across the spectrum) brings the released Λ2 near singular along its weakest direction (%s); %s",
			dg.NoiseSD, 2*math.Sqrt(float64(len(names)))*dg.NoiseSD, dirs, fix)
	}
}
