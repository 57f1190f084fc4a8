package inference

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dplearn/dplearn/regress"
)

// TestTriSolveMatchesEigenSolve checks the bootstrap's fast path
// (locator.solveTri, issue 24) against the exact per-replicate solve
// (locator.solve, a full eigen-decomposition) on moderate designs whose
// noise puts several directions near, below and above their Fieller floor:
// the same dropped directions in every replicate, and minimisers equal to a
// relative 1e-8 (both are the same formula; the difference is roundoff,
// amplified by the smallest located eigenvalue).
func TestTriSolveMatchesEigenSolve(t *testing.T) {
	for _, tc := range []struct {
		name       string
		d          int
		restricted bool
		cluster    bool
		deflated   bool // in the basis by deflating its complement (solveDeflated)
	}{
		{"d=12", 12, false, false, false},
		{"d=40", 40, false, false, false},
		{"d=40 clustered weak eigenvalues", 40, false, true, false},
		{"d=40 in a located basis", 40, true, false, false},
		{"d=40 in a located basis, complement deflated", 40, true, false, true},
		{"d=40 mostly near the floors", 40, false, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(uint64(tc.d), 24))
			const sigma = 1e-3
			loc := &locator{z: 1.959963984540054, sd2: sigma * sigma, maxS: math.Sqrt2 * sigma}
			// Λ2 = V·diag(μ)·Vᵀ with eigenvalues from 2σ (below the largest
			// floor z·√2·σ ≈ 2.8σ) to 40σ.
			var g mat.Dense
			g.Apply(func(int, int, float64) float64 { return rng.NormFloat64() }, mat.NewDense(tc.d, tc.d, nil))
			var qr mat.QR
			qr.Factorize(&g)
			var v mat.Dense
			qr.QTo(&v)
			mu := make([]float64, tc.d)
			for k := range mu {
				mu[k] = sigma * (2 + 38*float64(k)/float64(tc.d-1))
				if strings.Contains(tc.name, "mostly") {
					mu[k] = sigma * (1 + 8*float64(k)/float64(tc.d-1))
				}
				if tc.cluster && k < 6 {
					mu[k] = sigma * (3 + 1e-9*float64(k))
				}
			}
			q := &regress.Quadratic{D: tc.d, Lambda1: make([]float64, tc.d), Upper: make([]float64, tc.d*(tc.d+1)/2)}
			p := 0
			for i := 0; i < tc.d; i++ {
				q.Lambda1[i] = 0.01 * rng.NormFloat64()
				for j := i; j < tc.d; j++ {
					for k := range mu {
						q.Upper[p] += v.At(i, k) * mu[k] * v.At(j, k)
					}
					p++
				}
			}
			var basis *mat.Dense
			if tc.restricted {
				sol, err := loc.solve(q, nil)
				if err != nil {
					t.Fatal(err)
				}
				sol.located[0], sol.located[1] = false, false // pretend the two weakest were not located
				basis = sol.keptBasis()
				if tc.deflated {
					loc.setBasis(basis, sol.droppedBasis())
				}
			}
			rel := &regress.Released{VarLambda1: sigma * sigma, VarLambda2: sigma * sigma, Noise1: "gaussian", Noise2: "gaussian"}
			star := &regress.Quadratic{D: tc.d, Lambda1: make([]float64, tc.d), Upper: make([]float64, len(q.Upper))}
			const reps = 300
			someDropped, failed := 0, 0
			worst := 0.0
			for b := 0; b < reps; b++ {
				perturb(rng, q, star, rel)
				exact, errE := loc.solve(star, basis)
				fast, errF := loc.solveTri(star, basis)
				if (errE == nil) != (errF == nil) {
					t.Fatalf("replicate %d: exact error %v, fast error %v", b, errE, errF)
				}
				if errE != nil {
					failed++
					continue
				}
				if exact.dropped != fast.dropped {
					t.Fatalf("replicate %d: exact drops %d directions, fast %d", b, exact.dropped, fast.dropped)
				}
				if exact.dropped > 0 {
					someDropped++
				}
				num, den := 0.0, 0.0
				for i := range exact.w {
					num += (exact.w[i] - fast.w[i]) * (exact.w[i] - fast.w[i])
					den += exact.w[i] * exact.w[i]
				}
				worst = math.Max(worst, math.Sqrt(num/den))
			}
			t.Logf("%d replicates: %d dropped a direction, %d failed (tridiagonal paths: weak vectors, strong vectors, fallback %v); worst relative difference %.2g", reps, someDropped, failed, loc.tri.paths, worst)
			// Every split of weak and strong directions takes the
			// vectors' path (before issue 24's second change, more than
			// n/3 weak ones took the eigen-decomposition's, paths[2]).
			if someDropped < reps/10 || loc.tri.paths[0] < reps/10 || loc.tri.paths[2] > 0 {
				t.Fatalf("design does not exercise the floors: %d of %d replicates dropped a direction", someDropped, reps)
			}
			if worst > 1e-8 {
				t.Fatalf("fast path differs from the exact solve by a relative %.3g > 1e-8", worst)
			}
		})
	}
}

// TestMinimizeFastMatchesMinimize checks the forecast's fast path
// (minimizeFast: Cholesky, else the tridiagonal path with the fit's
// trimming and clipping rule) against regress.Quadratic.Minimize on noisy
// objectives where some replicates trim or clip directions: the same
// trimmed count and minimisers equal to a relative 1e-8. The clipped case
// fails on the starting commit (its Cholesky test ignored the clip).
func TestMinimizeFastMatchesMinimize(t *testing.T) {
	const d, sigma = 30, 1e-3
	for _, tc := range []struct {
		name string
		pp   regress.PostProcess
	}{
		{"trimming floor", regress.NoisyPostProcess(2 * sigma)},
		{"eigenvalue clip", regress.PostProcess{Lambda: 2 * sigma, MinEigen: regress.TrimFraction * 2 * sigma, Floor: 1 * sigma}},
		// Most eigenvalues below the clip: the strong directions' vectors.
		{"clip above most eigenvalues", regress.PostProcess{Lambda: 2 * sigma, MinEigen: regress.TrimFraction * 2 * sigma, Floor: 34 * sigma}},
		{"floor above most eigenvalues", regress.PostProcess{Lambda: 2 * sigma, MinEigen: 34 * sigma}},
		// About half below the clip: the vectors' path since issue 24's
		// second change (the eigen-decomposition's before it).
		{"clip at half the eigenvalues", regress.PostProcess{Lambda: 2 * sigma, MinEigen: regress.TrimFraction * 2 * sigma, Floor: 24 * sigma}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(30, 25))
			q := &regress.Quadratic{D: d, Lambda1: make([]float64, d), Upper: make([]float64, d*(d+1)/2)}
			p := 0
			for i := 0; i < d; i++ {
				q.Lambda1[i] = 0.01 * rng.NormFloat64()
				for j := i; j < d; j++ {
					if i == j {
						q.Upper[p] = sigma * (2 + 40*float64(i)/d)
					}
					p++
				}
			}
			rel := &regress.Released{VarLambda1: sigma * sigma, VarLambda2: sigma * sigma, Noise1: "gaussian", Noise2: "gaussian"}
			star := &regress.Quadratic{D: d, Lambda1: make([]float64, d), Upper: make([]float64, len(q.Upper))}
			tri := newTriSolver(d)
			slow, worst := 0, 0.0
			for b := 0; b < 300; b++ {
				perturb(rng, q, star, rel)
				want, wantTr, errW := star.Minimize(tc.pp)
				got, gotTr, errG := minimizeFast(star, tc.pp, tri)
				if (errW == nil) != (errG == nil) || wantTr != gotTr {
					t.Fatalf("replicate %d: Minimize trims %d (err %v), minimizeFast %d (err %v)", b, wantTr, errW, gotTr, errG)
				}
				if errW != nil {
					continue
				}
				if _, ok := cholSolve(star, tc.pp.Lambda, math.Max(tc.pp.MinEigen, tc.pp.Floor)); !ok {
					slow++ // trimmed or clipped: the tridiagonal path
				}
				num, den := 0.0, 0.0
				for i := range want {
					num += (want[i] - got[i]) * (want[i] - got[i])
					den += want[i] * want[i]
				}
				worst = math.Max(worst, math.Sqrt(num/den))
			}
			t.Logf("300 replicates: %d trimmed or clipped a direction (tridiagonal paths: weak vectors, strong vectors, fallback %v); worst relative difference %.2g", slow, tri.paths, worst)
			if strings.Contains(tc.name, "half") {
				if tri.paths[0]+tri.paths[1] < 30 || tri.paths[2] > 0 {
					t.Fatalf("the vectors' paths ran %d times and the eigen-decomposition's %d, want ≥ 30 and 0", tri.paths[0]+tri.paths[1], tri.paths[2])
				}
			} else if strings.Contains(tc.name, "most") {
				if tri.paths[1] < 30 {
					t.Fatalf("the strong directions' path ran %d times, want ≥ 30", tri.paths[1])
				}
			} else if slow < 30 || slow > 270 || tri.paths[0] < 30 {
				t.Fatalf("design does not exercise both paths: %d of 300 replicates trimmed or clipped", slow)
			}
			if worst > 1e-8 {
				t.Fatalf("minimizeFast differs from Minimize by a relative %.3g > 1e-8", worst)
			}
		})
	}
}
