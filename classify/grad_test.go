package classify

import (
	"math"
	"math/rand/v2"
	"testing"
)

// randomData draws n rows of d features (some exactly zero, as pixels are)
// with labels in [0, k).
func randomData(n, d, k int, seed uint64) *Data {
	rng := rand.New(rand.NewPCG(seed, 1))
	x := &Data{D: d, Classes: k, X: make([]float64, n*d), Y: make([]int, n)}
	for i := range x.X {
		if rng.IntN(4) > 0 {
			x.X[i] = rng.NormFloat64()
		}
	}
	for i := range x.Y {
		x.Y[i] = rng.IntN(k)
	}
	return x
}

// checkGradient compares grad with central finite differences of f at
// theta, coordinate by coordinate.
func checkGradient(t *testing.T, name string, theta []float64, f func([]float64) float64, grad []float64) {
	t.Helper()
	const h = 1e-6
	worst := 0.0
	for i := range theta {
		old := theta[i]
		theta[i] = old + h
		fp := f(theta)
		theta[i] = old - h
		fm := f(theta)
		theta[i] = old
		num := (fp - fm) / (2 * h)
		err := math.Abs(num-grad[i]) / math.Max(1, math.Abs(num))
		worst = math.Max(worst, err)
		if err > 1e-6 {
			t.Fatalf("%s: coordinate %d: analytic %.10g, numeric %.10g", name, i, grad[i], num)
		}
	}
	t.Logf("%s: %d coordinates, worst relative error %.2g", name, len(theta), worst)
}

func TestSoftmaxGradient(t *testing.T) {
	d := randomData(1100, 5, 4, 1) // three chunks of the full-batch sum
	rng := rand.New(rand.NewPCG(2, 2))
	theta := make([]float64, d.D*d.Classes+d.Classes)
	for i := range theta {
		theta[i] = rng.NormFloat64()
	}
	const l2 = 0.3
	grad := make([]float64, len(theta))
	// Two workers and a chunk boundary inside the data must not matter.
	f0 := softmaxObjective(theta, d, l2, 2, grad)
	f := func(th []float64) float64 { return softmaxObjective(th, d, l2, 1, nil) }
	if f(theta) != f0 {
		t.Fatalf("objective depends on workers: %v vs %v", f(theta), f0)
	}
	checkGradient(t, "softmax", theta, f, grad)
}

func TestMLPGradient(t *testing.T) {
	for _, act := range []string{ActivationReLU, ActivationTanh} {
		d := randomData(23, 6, 3, 3)
		const h = 5
		rng := rand.New(rand.NewPCG(4, 4))
		theta := make([]float64, mlpSize(d.D, h, d.Classes))
		for i := range theta {
			theta[i] = rng.NormFloat64()
		}
		idx := make([]int, d.N())
		for i := range idx {
			idx[i] = d.N() - 1 - i // any order of rows
		}
		const l2 = 0.2
		w := newMLPWork(d.N(), d.D, h, d.Classes)
		grad := make([]float64, len(theta))
		mlpObjective(theta, d, idx, h, act, l2, w, grad)
		f := func(th []float64) float64 { return mlpObjective(th, d, idx, h, act, l2, w, nil) }
		checkGradient(t, "mlp/"+act, theta, f, grad)
	}
}

// TestMLPForwardMatchesBatch checks that the one-row prediction path and
// the batched training path compute the same logits.
func TestMLPForwardMatchesBatch(t *testing.T) {
	for _, act := range []string{ActivationReLU, ActivationTanh} {
		d := randomData(9, 7, 4, 5)
		const h = 6
		rng := rand.New(rand.NewPCG(6, 6))
		theta := make([]float64, mlpSize(d.D, h, d.Classes))
		for i := range theta {
			theta[i] = rng.NormFloat64()
		}
		p := mlpView(theta, d.D, h, d.Classes)
		m := &MLP{D: d.D, H: h, K: d.Classes, Activation: act, W1: p.W1, B1: p.B1, W2: p.W2, B2: p.B2}
		prob := make([]float64, d.Classes)
		total := 0.0
		for i := range d.N() {
			m.PredictProba(d.Row(i), prob)
			total -= math.Log(prob[d.Y[i]])
		}
		w := newMLPWork(d.N(), d.D, h, d.Classes)
		idx := []int{0, 1, 2, 3, 4, 5, 6, 7, 8}
		got := mlpBatch(theta, d, idx, h, act, w, nil)
		if math.Abs(got-total) > 1e-9*math.Abs(total) {
			t.Fatalf("%s: batch loss %v, row-by-row %v", act, got, total)
		}
	}
}

// TestLBFGSQuadratic minimises ½xᵀAx − bᵀx for a random positive definite A
// and compares with the solution of Ax = b.
func TestLBFGSQuadratic(t *testing.T) {
	const n = 12
	rng := rand.New(rand.NewPCG(7, 7))
	M := make([]float64, n*n)
	for i := range M {
		M[i] = rng.NormFloat64()
	}
	A := make([]float64, n*n) // MᵀM + I
	for i := range n {
		for j := range n {
			for k := range n {
				A[i*n+j] += M[k*n+i] * M[k*n+j]
			}
		}
		A[i*n+i]++
	}
	b := make([]float64, n)
	for i := range b {
		b[i] = rng.NormFloat64()
	}
	f := func(x, g []float64) float64 {
		v := 0.0
		for i := range n {
			ax := 0.0
			for j := range n {
				ax += A[i*n+j] * x[j]
			}
			g[i] = ax - b[i]
			v += 0.5*x[i]*ax - b[i]*x[i]
		}
		return v
	}
	x := make([]float64, n)
	if _, err := lbfgs(ctx, x, f, lbfgsSettings{maxIter: 500, memory: 10, gradTol: 1e-12}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		r := -b[i]
		for j := range n {
			r += A[i*n+j] * x[j]
		}
		if math.Abs(r) > 1e-6 { // f changes by ~1e-16 there: the float64 limit
			t.Fatalf("residual %d = %g", i, r)
		}
	}
}
