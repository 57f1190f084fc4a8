package regress

import (
	"context"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/dplearn/dplearn/noise"
)

// TestMinimizeFloor is a known answer: on a diagonal Λ2 the clipped
// minimiser is ω_k = −g_k/(2·max(λ_k, Floor)); eigenvalues above the floor
// are untouched (a ridge would shrink them), negative ones are raised
// rather than trimmed.
func TestMinimizeFloor(t *testing.T) {
	q := &Quadratic{D: 3, Lambda1: []float64{-2, -2, -2}, Upper: make([]float64, 6)}
	diag := []float64{4, 0.01, -3}
	for i, v := range diag {
		q.Upper[packedIndex(3, i, i)] = v
	}
	for _, tc := range []struct {
		floor   float64
		want    []float64
		trimmed int
	}{
		{0.5, []float64{0.25, 2, 2}, 0},
		{2, []float64{0.25, 0.5, 0.5}, 0},
		{8, []float64{0.125, 0.125, 0.125}, 0},
	} {
		w, tr, err := q.Minimize(PostProcess{Floor: tc.floor})
		if err != nil || tr != tc.trimmed {
			t.Fatalf("floor %v: trimmed %d, err %v", tc.floor, tr, err)
		}
		for i := range w {
			if math.Abs(w[i]-tc.want[i]) > 1e-12 {
				t.Errorf("floor %v: ω = %v, want %v", tc.floor, w, tc.want)
				break
			}
		}
	}
	// Without a floor the same objective loses its negative direction.
	if _, tr, _ := q.Minimize(PostProcess{}); tr != 1 {
		t.Errorf("no floor: %d trimmed, want 1", tr)
	}
}

// TestEigenFloorNoiseNorm checks the derivation of EigenFloor: the
// spectral norm of the released Λ2's noise (symmetric, upper triangle
// i.i.d. N(0, τ2²)) averages close to 2τ2√d, so the default floor is the
// noise level. 200 draws per d; the mean must lie in [0.75, 1.02]·2τ2√d
// (finite-d norms sit a little below the 2√d edge, none above it).
func TestEigenFloorNoiseNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 1))
	const tau2 = 0.3
	for _, d := range []int{6, 18, 40} {
		q := &Quadratic{D: d, Lambda1: make([]float64, d), Upper: make([]float64, d*(d+1)/2)}
		sum := 0.0
		const draws = 200
		for range draws {
			for i := range q.Upper {
				q.Upper[i] = tau2 * rng.NormFloat64()
			}
			vals, _, err := q.Eigen(0, false)
			if err != nil {
				t.Fatal(err)
			}
			sum += math.Max(-vals[0], vals[d-1])
		}
		ratio := sum / draws / EigenFloor(d, tau2, 0)
		if ratio < 0.75 || ratio > 1.02 {
			t.Errorf("d = %d: mean noise norm / floor = %.3f, want in [0.75, 1.02]", d, ratio)
		}
		t.Logf("d = %d: mean ‖E‖ / (2τ2√d) = %.3f", d, ratio)
	}
}

// TestClipIsPostProcessing: gaussian-fm linear's clipping is a pure
// function of the released objective and public values, and the guarantee
// is unchanged by it: the same seeded release with clipping (the default)
// and with the ridge (EigenFloor < 0) has the same privacy report but for
// the post-processing lines, the same released objective, and the fit's
// coefficients are recomputed exactly from Released alone.
func TestClipIsPostProcessing(t *testing.T) {
	rows, _ := xpRows(Linear, 3000, 8, 5)
	data := xpData(t, rows, 9)
	fit := func(floor float64) *Result {
		res, err := gaussianFM{}.Fit(context.Background(), data, Config{Kind: Linear, Epsilon: 0.5, Delta: 1e-6, Lambda: -1,
			EigenFloor: floor, Source: noise.NewInsecureSeeded(11)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	clip, ridge := fit(0), fit(-1)
	if clip.Released.Floor == 0 || ridge.Released.Floor != 0 || clip.Released.Ridge != 0 {
		t.Fatalf("clip floor %v ridge %v; ridge fit floor %v", clip.Released.Floor, clip.Released.Ridge, ridge.Released.Floor)
	}
	if want := EigenFloor(8, math.Sqrt(clip.Released.VarLambda2), 0); clip.Released.Floor != want {
		t.Errorf("floor %v, want 2τ2√d = %v", clip.Released.Floor, want)
	}
	pc, pr := clip.Privacy, ridge.Privacy
	pc.PostProcessing, pr.PostProcessing = nil, nil
	if !reflect.DeepEqual(pc, pr) {
		t.Errorf("the guarantee changed with the post-processing:\n%+v\n%+v", pc, pr)
	}
	if !reflect.DeepEqual(clip.Released.Objective, ridge.Released.Objective) {
		t.Errorf("the released objective differs")
	}
	w, _, err := clip.Released.Objective.Minimize(clip.Released.PostProcess())
	if err != nil || !reflect.DeepEqual(w, clip.Coef) {
		t.Errorf("coefficients not recomputed from the release: %v vs %v (%v)", w, clip.Coef, err)
	}
	if reflect.DeepEqual(clip.Coef, ridge.Coef) {
		t.Errorf("clipping changed nothing")
	}
	// Inference's estimand drops the shrinkage but keeps the trimming
	// floor, which is below the clip floor.
	if u := clip.Released.Unshrunk(); u.Floor != 0 || u.Lambda != 0 || !(u.MinEigen > 0 && u.MinEigen < clip.Released.Floor) {
		t.Errorf("Unshrunk = %+v", u)
	}
}

// TestShrinkage: known answers of PostProcess.Shrinkage, which the
// forecast's shrinkage warning uses: a ridge shrinks every direction by
// λ/(μ + λ), a floor only those below it by 1 − μ/F.
func TestShrinkage(t *testing.T) {
	for _, tc := range []struct {
		pp       PostProcess
		mu, want float64
	}{
		{PostProcess{Lambda: 1}, 3, 0.25},
		{PostProcess{Lambda: 1}, 0, 1},
		{PostProcess{Floor: 4}, 1, 0.75},
		{PostProcess{Floor: 4}, 8, 0},
		{PostProcess{}, 2, 0},
	} {
		if got := tc.pp.Shrinkage(tc.mu); math.Abs(got-tc.want) > 1e-15 {
			t.Errorf("%+v at μ = %v: %v, want %v", tc.pp, tc.mu, got, tc.want)
		}
	}
}
