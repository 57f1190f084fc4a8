package inference

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/suffstat"
)

// objPertTheta is the true logistic parameter of the coverage design, in
// encoded units: x = (½, u1/2, u2/2, u3/2), u uniform on [−1, 1]³, so
// ‖x‖ ≤ 1 and xᵀθ ∈ [−4, 2].
var objPertTheta = []float64{-1, 3, -2, 1}

// objPertDesign draws n rows (x, y) of the logistic model with θ.
func objPertDesign(rng *rand.Rand, n int) []float64 {
	d := len(objPertTheta)
	rows := make([]float64, 0, n*(d+1))
	for i := 0; i < n; i++ {
		x := []float64{0.5, (2*rng.Float64() - 1) / 2, (2*rng.Float64() - 1) / 2, (2*rng.Float64() - 1) / 2}
		z := 0.0
		for j := range x {
			z += x[j] * objPertTheta[j]
		}
		y := 0.0
		if rng.Float64() < 1/(1+math.Exp(-z)) {
			y = 1
		}
		rows = append(append(rows, x...), y)
	}
	return rows
}

func objPertFit(t *testing.T, rows []float64, eps, share float64, seed uint64) *regress.Result {
	t.Helper()
	k := len(objPertTheta) + 1
	m := suffstat.New(k)
	if err := m.AddRows(rows); err != nil {
		t.Fatal(err)
	}
	est, err := regress.New("objpert")
	if err != nil {
		t.Fatal(err)
	}
	res, err := est.Fit(context.Background(), regress.Data{Stats: m, Rows: rows}, regress.Config{
		Kind: regress.Logistic, Epsilon: eps, Delta: 1e-6,
		ObjPert: regress.ObjPertOptions{HessianShare: share}, Source: noise.NewInsecureSeeded(seed)})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// binomTail returns the smallest k with P(Bin(n, p) > k) ≤ a and the
// largest k with P(Bin(n, p) < k) ≤ a: the acceptance region of a
// two-sided count test at level 2a.
func binomRegion(n int, p, a float64) (lo, hi int) {
	b := distuv.Binomial{N: float64(n), P: p}
	for hi = 0; 1-b.CDF(float64(hi)) > a; hi++ {
	}
	for lo = n; lo > 0 && b.CDF(float64(lo-1)) > a; lo-- {
	}
	return lo, hi
}

// TestObjPertCoverage measures the coverage of ObjPert's 95% intervals for
// the true logistic parameter θ (the estimand: the model holds) over
// independent datasets of the design above, N = 4,000, ε = 1, δ = 1e-6,
// Hessian share 0.1, each with its own noise. With M datasets, each
// coefficient's number of misses is Binomial(M, 0.05) when the coverage is
// exact; the test fails if any of the 4 counts leaves the two-sided
// acceptance region at total false-alarm rate 10⁻³ (Bonferroni: 1.25e-4
// per tail and coefficient). It also checks that the printed estimate lies
// inside its interval and that the noise and sampling parts are both
// present (the design makes them comparable). -short runs 300 datasets,
// the full test 1,000.
func TestObjPertCoverage(t *testing.T) {
	M := 1000
	if testing.Short() {
		M = 300
	}
	const n = 4000
	d := len(objPertTheta)
	miss := make([]int, d)
	rng := rand.New(rand.NewPCG(25, 26))
	var seSum, nseSum, sseSum float64
	for m := 0; m < M; m++ {
		rows := objPertDesign(rng, n)
		res := objPertFit(t, rows, 1, 0.1, uint64(1000+m))
		iv, err := ObjPert(res.ObjPert, Options{Replicates: 400, Seed: uint64(m + 1)})
		if err != nil {
			t.Fatal(err)
		}
		for j, c := range iv.Coefficients {
			if !(c.Lower <= c.Estimate && c.Estimate <= c.Upper) {
				t.Fatalf("dataset %d coefficient %d: estimate %v outside [%v, %v]", m, j, c.Estimate, c.Lower, c.Upper)
			}
			if objPertTheta[j] < c.Lower || objPertTheta[j] > c.Upper {
				miss[j]++
			}
			seSum += c.SE
			nseSum += c.NoiseSE
			sseSum += c.SamplingSE
		}
	}
	lo, hi := binomRegion(M, 0.05, 1e-3/(2*float64(d)))
	t.Logf("%d datasets: misses per coefficient %v (acceptance region [%d, %d], expected %.1f); mean SE %.3g = noise %.3g ⊕ sampling %.3g",
		M, miss, lo, hi, 0.05*float64(M), seSum/float64(M*d), nseSum/float64(M*d), sseSum/float64(M*d))
	for j, k := range miss {
		if k < lo || k > hi {
			t.Errorf("coefficient %d: %d misses of %d, outside [%d, %d] (coverage %.3f)", j, k, M, lo, hi, 1-float64(k)/float64(M))
		}
	}
	if !(nseSum > 0.2*seSum && sseSum > 0.2*seSum) {
		t.Errorf("the design should make noise and sampling both matter: noise %.3g, sampling %.3g of SE %.3g", nseSum, sseSum, seSum)
	}
}

// TestObjPertIntervalsNeedRelease: without a Hessian release there are no
// intervals, and the error says what to do.
func TestObjPertIntervalsNeedRelease(t *testing.T) {
	rows := objPertDesign(rand.New(rand.NewPCG(1, 2)), 500)
	res := objPertFit(t, rows, 1, 0, 1)
	if res.ObjPert != nil {
		t.Fatal("a fit without a Hessian share released a Hessian")
	}
	if _, err := ObjPert(res.ObjPert, Options{}); err == nil {
		t.Fatal("intervals without the Hessian release")
	}
}
