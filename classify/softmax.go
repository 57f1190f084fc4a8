package classify

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"sync"
)

// Softmax is multinomial logistic regression: P(y = k | x) ∝ exp(b_k +
// Σ_j x_j W[j·K + k]). W is stored feature-major (row j holds feature j's K
// weights), so a sparse row costs one K-vector update per non-zero feature.
type Softmax struct {
	K int       `json:"classes"`
	D int       `json:"features"`
	W []float64 `json:"weights"` // D×K, feature-major
	B []float64 `json:"bias"`    // K
}

// Classes returns K.
func (m *Softmax) Classes() int { return m.K }

// Features returns D.
func (m *Softmax) Features() int { return m.D }

// logits writes b + xᵀW into z.
func (m *Softmax) logits(x, z []float64) {
	copy(z, m.B)
	softmaxAddXW(m.W, x, z)
}

// softmaxAddXW adds xᵀW to z (W is len(x)×len(z), feature-major),
// skipping zero features.
func softmaxAddXW(W, x, z []float64) {
	k := len(z)
	for j, xj := range x {
		if xj == 0 {
			continue
		}
		w := W[j*k : j*k+k]
		for c := range z {
			z[c] += xj * w[c]
		}
	}
}

// Predict returns the most probable class.
func (m *Softmax) Predict(x []float64) int {
	checkPredictArgs(x, m.D, nil, m.K)
	var buf [16]float64
	z := buf[:0]
	if m.K <= len(buf) {
		z = buf[:m.K]
	} else {
		z = make([]float64, m.K)
	}
	m.logits(x, z)
	return argmax(z)
}

// PredictProba writes the class probabilities into out.
func (m *Softmax) PredictProba(x, out []float64) {
	checkPredictArgs(x, m.D, out, m.K)
	m.logits(x, out)
	softmaxInPlace(out)
}

// validate checks the parameter shapes and values.
func (m *Softmax) validate() error {
	if m.K < 2 || m.K > MaxClasses || m.D < 1 || m.D > MaxFeatures {
		return fmt.Errorf("softmax: %d classes, %d features", m.K, m.D)
	}
	if len(m.W) != m.D*m.K || len(m.B) != m.K {
		return fmt.Errorf("softmax: %d weights and %d biases for %d features × %d classes", len(m.W), len(m.B), m.D, m.K)
	}
	return allFinite("softmax", m.W, m.B)
}

func allFinite(what string, vs ...[]float64) error {
	for _, v := range vs {
		for _, x := range v {
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("%s: parameter %v is not finite", what, x)
			}
		}
	}
	return nil
}

// Solvers of TrainSoftmax.
const (
	SolverAuto  = "auto"
	SolverLBFGS = "lbfgs"
	SolverSGD   = "sgd"
)

// SoftmaxOptions tunes TrainSoftmax. The zero value gives the defaults.
type SoftmaxOptions struct {
	// L2 is λ in the objective mean cross-entropy + (λ/2)‖W‖² (the biases
	// are not penalised). 0 means DefaultSoftmaxL2; a negative value means
	// no penalty.
	L2 float64
	// Solver is "lbfgs" (full batch, to convergence), "sgd" (mini-batch
	// Adam for Epochs passes) or "auto"/"" (L-BFGS when N·D ≤ 10^7, else
	// SGD).
	Solver string
	// MaxIterations bounds L-BFGS iterations (0: 100; test accuracy
	// settles well before).
	MaxIterations int
	// Epochs, BatchSize and LearningRate drive SGD (0: 5, 64, 0.01; the
	// step decays linearly to 1/100 of LearningRate over the run).
	Epochs       int
	BatchSize    int
	LearningRate float64
	// Seed fixes the shuffling of SGD. Training is deterministic for a
	// given seed whatever Workers is.
	Seed uint64
	// Workers is the number of goroutines computing the full-batch
	// gradient (≤ 0: GOMAXPROCS).
	Workers int
}

// DefaultSoftmaxL2 is the default L2 penalty of TrainSoftmax.
const DefaultSoftmaxL2 = 1e-3

// autoLBFGSWork is the N·D up to which SolverAuto uses L-BFGS.
const autoLBFGSWork = 1e7

// AutoSolver returns the solver SolverAuto picks for n rows of d features:
// L-BFGS when n·d ≤ 10^7, else SGD.
func AutoSolver(n, d int) string {
	if float64(n)*float64(d) <= autoLBFGSWork {
		return SolverLBFGS
	}
	return SolverSGD
}

func (o SoftmaxOptions) withDefaults(d *Data) (SoftmaxOptions, error) {
	switch {
	case o.L2 == 0:
		o.L2 = DefaultSoftmaxL2
	case o.L2 < 0:
		o.L2 = 0
	case math.IsNaN(o.L2) || math.IsInf(o.L2, 0):
		return o, fmt.Errorf("softmax: L2 %v", o.L2)
	}
	switch o.Solver {
	case "", SolverAuto:
		o.Solver = AutoSolver(d.N(), d.D)
	case SolverLBFGS, SolverSGD:
	default:
		return o, fmt.Errorf("softmax: solver %q (want auto, lbfgs or sgd)", o.Solver)
	}
	if o.MaxIterations <= 0 {
		o.MaxIterations = 100
	}
	if o.Epochs <= 0 {
		o.Epochs = 5
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 64
	}
	if o.LearningRate == 0 {
		o.LearningRate = 0.01
	}
	if !(o.LearningRate > 0) || math.IsInf(o.LearningRate, 0) {
		return o, fmt.Errorf("softmax: learning rate %v", o.LearningRate)
	}
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	return o, nil
}

// TrainSoftmax fits multinomial logistic regression to d.
func TrainSoftmax(ctx context.Context, d *Data, opt SoftmaxOptions) (*Softmax, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	o, err := opt.withDefaults(d)
	if err != nil {
		return nil, err
	}
	m := &Softmax{K: d.Classes, D: d.D, W: make([]float64, d.D*d.Classes), B: make([]float64, d.Classes)}
	switch o.Solver {
	case SolverLBFGS:
		err = trainSoftmaxLBFGS(ctx, m, d, o)
	default:
		err = trainSoftmaxSGD(ctx, m, d, o)
	}
	if err != nil {
		return nil, err
	}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("classify: training diverged: %w", err)
	}
	return m, nil
}

// softmaxRows accumulates, over rows idx of d (all rows when idx is nil),
// the summed cross-entropy, and adds the summed gradient into gW (D×K) and
// gB (K) when they are non-nil. It does not divide by N nor add the
// penalty.
func softmaxRows(W, B []float64, d *Data, lo, hi int, idx []int, gW, gB []float64) float64 {
	k := len(B)
	z := make([]float64, k)
	loss := 0.0
	for r := lo; r < hi; r++ {
		i := r
		if idx != nil {
			i = idx[r]
		}
		x, y := d.Row(i), d.Y[i]
		copy(z, B)
		softmaxAddXW(W, x, z)
		zy := z[y]
		loss += softmaxInPlace(z) - zy
		if gW == nil {
			continue
		}
		z[y]-- // p − e_y
		for c := range z {
			gB[c] += z[c]
		}
		for j, xj := range x {
			if xj == 0 {
				continue
			}
			g := gW[j*k : j*k+k]
			for c := range z {
				g[c] += xj * z[c]
			}
		}
	}
	return loss
}

// lossChunk is the number of rows per deterministic partial sum of the
// full-batch objective.
const lossChunk = 512

// softmaxObjective evaluates the full-batch objective at θ = (W, B) and
// writes its gradient into grad (when non-nil). The rows are summed in
// fixed chunks, combined in chunk order: the result does not depend on the
// number of workers.
func softmaxObjective(theta []float64, d *Data, l2 float64, workers int, grad []float64) float64 {
	k, dd := d.Classes, d.D
	W, B := theta[:dd*k], theta[dd*k:]
	n := d.N()
	chunks := (n + lossChunk - 1) / lossChunk
	losses := make([]float64, chunks)
	var grads [][]float64
	if grad != nil {
		grads = make([][]float64, chunks)
	}
	var wg sync.WaitGroup
	next := make(chan int, chunks)
	for c := range chunks {
		next <- c
	}
	close(next)
	for range min(workers, chunks) {
		wg.Go(func() {
			for c := range next {
				lo, hi := c*lossChunk, min(n, (c+1)*lossChunk)
				var gW, gB []float64
				if grad != nil {
					g := make([]float64, len(theta))
					grads[c] = g
					gW, gB = g[:dd*k], g[dd*k:]
				}
				losses[c] = softmaxRows(W, B, d, lo, hi, nil, gW, gB)
			}
		})
	}
	wg.Wait()
	inv := 1 / float64(n)
	loss := 0.0
	for _, l := range losses {
		loss += l
	}
	pen := 0.0
	for _, w := range W {
		pen += w * w
	}
	loss = loss*inv + l2/2*pen
	if grad != nil {
		clear(grad)
		for _, g := range grads {
			for i, v := range g {
				grad[i] += v
			}
		}
		for i := range grad {
			grad[i] *= inv
		}
		for i, w := range W {
			grad[i] += l2 * w
		}
	}
	return loss
}

// Stopping rules of L-BFGS: the gradient's largest entry below
// lbfgsGradTol, or no relative decrease of the objective by more than
// lbfgsRelTol over 10 iterations. Predictions stop changing long before.
const (
	lbfgsGradTol = 1e-5
	lbfgsRelTol  = 1e-7
)

func trainSoftmaxLBFGS(ctx context.Context, m *Softmax, d *Data, o SoftmaxOptions) error {
	theta := make([]float64, len(m.W)+len(m.B))
	f := func(x, g []float64) float64 { return softmaxObjective(x, d, o.L2, o.Workers, g) }
	_, err := lbfgs(ctx, theta, f, lbfgsSettings{maxIter: o.MaxIterations, memory: 10,
		gradTol: lbfgsGradTol, relTol: lbfgsRelTol, relWindow: 10})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("softmax: %w", err)
	}
	copy(m.W, theta[:len(m.W)])
	copy(m.B, theta[len(m.W):])
	return nil
}

// adam is the Adam optimiser (Kingma & Ba 2015) over one flat parameter
// vector.
type adam struct {
	m, v         []float64
	b1, b2, eps  float64
	b1t, b2t, lr float64
}

func newAdam(n int) *adam {
	return &adam{m: make([]float64, n), v: make([]float64, n), b1: 0.9, b2: 0.999, eps: 1e-8, b1t: 1, b2t: 1}
}

// step moves theta against grad with step size lr.
func (a *adam) step(theta, grad []float64, lr float64) {
	a.b1t *= a.b1
	a.b2t *= a.b2
	c1, c2 := 1/(1-a.b1t), 1/(1-a.b2t)
	for i, g := range grad {
		a.m[i] = a.b1*a.m[i] + (1-a.b1)*g
		a.v[i] = a.b2*a.v[i] + (1-a.b2)*g*g
		theta[i] -= lr * (a.m[i] * c1) / (math.Sqrt(a.v[i]*c2) + a.eps)
	}
}

func trainSoftmaxSGD(ctx context.Context, m *Softmax, d *Data, o SoftmaxOptions) error {
	k, dd := m.K, m.D
	theta := make([]float64, dd*k+k)
	grad := make([]float64, len(theta))
	W, B := theta[:dd*k], theta[dd*k:]
	gW, gB := grad[:dd*k], grad[dd*k:]
	opt := newAdam(len(theta))
	rng := rand.New(rand.NewPCG(o.Seed, 0x736f66746d6178)) // "softmax"
	n := d.N()
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	// The step decays linearly from LearningRate to LearningRate/100 over
	// the run, so that the last epochs average out the mini-batch noise.
	steps := o.Epochs * ((n + o.BatchSize - 1) / o.BatchSize)
	t := 0
	for range o.Epochs {
		if err := ctx.Err(); err != nil {
			return err
		}
		rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		for lo := 0; lo < n; lo += o.BatchSize {
			lr := o.LearningRate * (1 - 0.99*float64(t)/float64(steps))
			t++
			hi := min(n, lo+o.BatchSize)
			clear(grad)
			softmaxRows(W, B, d, lo, hi, perm, gW, gB)
			inv := 1 / float64(hi-lo)
			for i := range grad {
				grad[i] *= inv
			}
			for i, w := range W {
				gW[i] += o.L2 * w
			}
			opt.step(theta, grad, lr)
		}
	}
	copy(m.W, W)
	copy(m.B, B)
	return nil
}
