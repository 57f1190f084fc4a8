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
	// whose curvature is not significantly positive (at or below their
	// identification floor z·s, see locator: the released objective cannot
	// locate the coefficients along them; only coefficients loading on them
	// by UnlocatedLoading or more are unidentified), or
	// "failed-replicates" when more than α/2 of the bootstrap replicates
	// located no direction at all (the interval's end is at infinity).
	Cause string `json:"cause"`
	// Floor is the identification floor of the weakest direction and
	// NoiseSD the standard deviation of the noise on one entry of Λ2; the
	// noise's spectral size is about 2√d·NoiseSD.
	Floor   float64 `json:"floor"`
	NoiseSD float64 `json:"noise_sd"`
	// Directions are the weak eigen-directions of the released Λ2 (at or
	// below the floor for "trimmed"; the weakest one otherwise), each with
	// its eigenvalue and the encoded coefficients that load on it most.
	Directions []Direction `json:"directions"`
}

// Direction is one eigen-direction of the released Λ2.
type Direction struct {
	Eigenvalue float64 `json:"eigenvalue"`
	// Floor is the direction's identification floor z·s (locator).
	Floor    float64   `json:"floor"`
	Loadings []Loading `json:"loadings"`
}

// Loading is the weight of encoded coefficient Index in a direction (the
// eigenvector's entry; the squares of a direction's entries sum to 1).
type Loading struct {
	Index  int     `json:"index"`
	Weight float64 `json:"weight"`
}

// maxLoadings is how many coefficients a direction names.
const maxLoadings = 4

// diagnose describes the weak directions of the released objective's
// solution sol: every direction not located, or the weakest one when all
// are.
func diagnose(sol *solution, loc *locator, rel *regress.Released, cause string) *Diagnosis {
	dg := &Diagnosis{Cause: cause, NoiseSD: math.Sqrt(rel.VarLambda2)}
	if sol == nil || len(sol.vals) == 0 {
		return dg
	}
	vals, vecs := sol.vals, sol.vecs
	d, _ := vecs.Dims()
	order := make([]int, len(vals))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return vals[order[a]] < vals[order[b]] })
	v := make([]float64, d)
	for n, k := range order {
		if n > 0 && sol.located[k] {
			break
		}
		for i := range v {
			v[i] = vecs.At(i, k)
		}
		floor := loc.floor(v)
		if n == 0 {
			dg.Floor = floor
		}
		dir := Direction{Eigenvalue: vals[k], Floor: floor}
		for i := 0; i < d; i++ {
			dir.Loadings = append(dir.Loadings, Loading{Index: i, Weight: v[i]})
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
		dirs += fmt.Sprintf("eigenvalue %.3g (floor %.3g) along", d.Eigenvalue, d.Floor)
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
		return fmt.Sprintf("the released Λ2 has %d direction(s) whose curvature is not significantly positive (at or below its floor: the interval's normal quantile times the noise SD along the direction after the schema's Gram structure; noise SD per entry %.3g), so the released objective cannot locate the coefficients along them (%s): coefficients loading %.2g or more on them are unidentified, the others' intervals describe the fit within the located directions; %s",
			len(dg.Directions), dg.NoiseSD, dirs, UnlocatedLoading, fix)
	default:
		return fmt.Sprintf("more than 1 − level of the bootstrap replicates located no direction, so an interval end is at infinity: the noise (SD per entry %.3g, about %.3g across the spectrum) brings the released Λ2 near singular along its weakest direction (%s); %s",
			dg.NoiseSD, 2*math.Sqrt(float64(len(names)))*dg.NoiseSD, dirs, fix)
	}
}
