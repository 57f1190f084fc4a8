package classify

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

// Activations of the MLP's hidden layer.
const (
	ActivationReLU = "relu"
	ActivationTanh = "tanh"
)

// MLP is a one-hidden-layer perceptron: h = act(xᵀW1 + b1), P(y = k | x) ∝
// exp(hᵀW2 + b2)_k. W1 is D×H and W2 is H×K, both row-major.
type MLP struct {
	D          int       `json:"features"`
	H          int       `json:"hidden"`
	K          int       `json:"classes"`
	Activation string    `json:"activation"`
	W1         []float64 `json:"w1"` // D×H
	B1         []float64 `json:"b1"` // H
	W2         []float64 `json:"w2"` // H×K
	B2         []float64 `json:"b2"` // K
}

// Classes returns K.
func (m *MLP) Classes() int { return m.K }

// Features returns D.
func (m *MLP) Features() int { return m.D }

// forward writes the logits of x into z (length K), using h (length H).
func (m *MLP) forward(x, h, z []float64) {
	copy(h, m.B1)
	for j, xj := range x {
		if xj == 0 {
			continue
		}
		w := m.W1[j*m.H : (j+1)*m.H]
		for u := range h {
			h[u] += xj * w[u]
		}
	}
	tanh := m.Activation == ActivationTanh
	copy(z, m.B2)
	for u, v := range h {
		if tanh {
			v = math.Tanh(v)
		} else if v < 0 {
			continue
		}
		if v == 0 {
			continue
		}
		w := m.W2[u*m.K : (u+1)*m.K]
		for c := range z {
			z[c] += v * w[c]
		}
	}
}

// Predict returns the most probable class.
func (m *MLP) Predict(x []float64) int {
	checkPredictArgs(x, m.D, nil, m.K)
	h, z := make([]float64, m.H), make([]float64, m.K)
	m.forward(x, h, z)
	return argmax(z)
}

// PredictProba writes the class probabilities into out.
func (m *MLP) PredictProba(x, out []float64) {
	checkPredictArgs(x, m.D, out, m.K)
	m.forward(x, make([]float64, m.H), out)
	softmaxInPlace(out)
}

func (m *MLP) validate() error {
	if m.K < 2 || m.K > MaxClasses || m.D < 1 || m.D > MaxFeatures || m.H < 1 || m.H > MaxHidden {
		return fmt.Errorf("mlp: %d features, %d hidden units, %d classes", m.D, m.H, m.K)
	}
	if m.Activation != ActivationReLU && m.Activation != ActivationTanh {
		return fmt.Errorf("mlp: activation %q (want relu or tanh)", m.Activation)
	}
	if len(m.W1) != m.D*m.H || len(m.B1) != m.H || len(m.W2) != m.H*m.K || len(m.B2) != m.K {
		return fmt.Errorf("mlp: parameter lengths %d, %d, %d, %d do not match %d×%d×%d", len(m.W1), len(m.B1), len(m.W2), len(m.B2), m.D, m.H, m.K)
	}
	return allFinite("mlp", m.W1, m.B1, m.W2, m.B2)
}

// MaxHidden is the largest hidden layer accepted.
const MaxHidden = 100000

// Optimisers of TrainMLP.
const (
	OptimizerAdam     = "adam"
	OptimizerMomentum = "momentum"
)

// MLPOptions tunes TrainMLP. The zero value gives the defaults.
type MLPOptions struct {
	Hidden     int    // hidden units (0: 100)
	Activation string // "relu" (default) or "tanh"
	// L2 is λ in mean cross-entropy + (λ/2)(‖W1‖² + ‖W2‖²); 0 means
	// DefaultMLPL2, negative means none.
	L2 float64
	// Optimizer is "adam" (default; step LearningRate, default 0.001) or
	// "momentum" (SGD with Nesterov-free momentum Momentum, default 0.9;
	// step default 0.01).
	Optimizer    string
	LearningRate float64
	Momentum     float64
	BatchSize    int // rows per step (0: 64)
	// Epochs is the number of passes over the data; 0 chooses enough
	// passes for about 2,000 steps, at least 10 and at most 100.
	Epochs int
	// Seed fixes the initial weights and the shuffling: training is
	// deterministic for a given seed.
	Seed uint64
}

// DefaultMLPL2 is the default L2 penalty of TrainMLP.
const DefaultMLPL2 = 1e-4

func (o MLPOptions) withDefaults(n int) (MLPOptions, error) {
	if o.Hidden == 0 {
		o.Hidden = 100
	}
	if o.Hidden < 1 || o.Hidden > MaxHidden {
		return o, fmt.Errorf("mlp: %d hidden units (want 1 to %d)", o.Hidden, MaxHidden)
	}
	switch o.Activation {
	case "":
		o.Activation = ActivationReLU
	case ActivationReLU, ActivationTanh:
	default:
		return o, fmt.Errorf("mlp: activation %q (want relu or tanh)", o.Activation)
	}
	switch {
	case o.L2 == 0:
		o.L2 = DefaultMLPL2
	case o.L2 < 0:
		o.L2 = 0
	case math.IsNaN(o.L2) || math.IsInf(o.L2, 0):
		return o, fmt.Errorf("mlp: L2 %v", o.L2)
	}
	switch o.Optimizer {
	case "", OptimizerAdam:
		o.Optimizer = OptimizerAdam
		if o.LearningRate == 0 {
			o.LearningRate = 0.001
		}
	case OptimizerMomentum:
		if o.LearningRate == 0 {
			o.LearningRate = 0.01
		}
		if o.Momentum == 0 {
			o.Momentum = 0.9
		}
	default:
		return o, fmt.Errorf("mlp: optimizer %q (want adam or momentum)", o.Optimizer)
	}
	if !(o.LearningRate > 0) || math.IsInf(o.LearningRate, 0) {
		return o, fmt.Errorf("mlp: learning rate %v", o.LearningRate)
	}
	if !(o.Momentum >= 0 && o.Momentum < 1) {
		return o, fmt.Errorf("mlp: momentum %v (want 0 ≤ m < 1)", o.Momentum)
	}
	if o.BatchSize <= 0 {
		o.BatchSize = 64
	}
	if o.Epochs <= 0 {
		steps := (n + o.BatchSize - 1) / o.BatchSize
		o.Epochs = max(10, min(100, (2000+steps-1)/steps))
	}
	return o, nil
}

// mlpParams is a view of the flat parameter vector θ = (W1, b1, W2, b2).
type mlpParams struct {
	W1, B1, W2, B2 []float64
}

func mlpView(theta []float64, d, h, k int) mlpParams {
	var p mlpParams
	p.W1, theta = theta[:d*h], theta[d*h:]
	p.B1, theta = theta[:h], theta[h:]
	p.W2, theta = theta[:h*k], theta[h*k:]
	p.B2 = theta[:k]
	return p
}

func mlpSize(d, h, k int) int { return d*h + h + h*k + k }

// mlpWork holds the per-batch buffers.
type mlpWork struct {
	x, z1, a1, z2, da1 []float64
}

func newMLPWork(b, d, h, k int) *mlpWork {
	return &mlpWork{x: make([]float64, b*d), z1: make([]float64, b*h), a1: make([]float64, b*h),
		z2: make([]float64, b*k), da1: make([]float64, b*h)}
}

func general(rows, cols int, data []float64) blas64.General {
	return blas64.General{Rows: rows, Cols: cols, Stride: cols, Data: data[:rows*cols]}
}

// mlpBatch computes the summed cross-entropy of the rows idx of d and, when
// grad is non-nil, adds its summed gradient (without the penalty) into
// grad. Rows are copied into the work buffers, so idx may be any subset.
func mlpBatch(theta []float64, d *Data, idx []int, h int, act string, w *mlpWork, grad []float64) float64 {
	dd, k, b := d.D, d.Classes, len(idx)
	p := mlpView(theta, dd, h, k)
	X := w.x[:b*dd]
	for r, i := range idx {
		copy(X[r*dd:(r+1)*dd], d.Row(i))
	}
	Z1, A1, Z2 := w.z1[:b*h], w.a1[:b*h], w.z2[:b*k]
	for r := range b {
		copy(Z1[r*h:(r+1)*h], p.B1)
		copy(Z2[r*k:(r+1)*k], p.B2)
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, general(b, dd, X), general(dd, h, p.W1), 1, general(b, h, Z1))
	tanh := act == ActivationTanh
	for i, v := range Z1 {
		if tanh {
			A1[i] = math.Tanh(v)
		} else {
			A1[i] = max(v, 0)
		}
	}
	blas64.Gemm(blas.NoTrans, blas.NoTrans, 1, general(b, h, A1), general(h, k, p.W2), 1, general(b, k, Z2))
	loss := 0.0
	for r, i := range idx {
		z := Z2[r*k : (r+1)*k]
		y := d.Y[i]
		zy := z[y]
		loss += softmaxInPlace(z) - zy
		z[y]-- // dloss/dz = p − e_y
	}
	if grad == nil {
		return loss
	}
	g := mlpView(grad, dd, h, k)
	// W2, b2.
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, general(b, h, A1), general(b, k, Z2), 1, general(h, k, g.W2))
	for r := range b {
		for c, v := range Z2[r*k : (r+1)*k] {
			g.B2[c] += v
		}
	}
	// Back through the hidden layer.
	dA1 := w.da1[:b*h]
	blas64.Gemm(blas.NoTrans, blas.Trans, 1, general(b, k, Z2), general(h, k, p.W2), 0, general(b, h, dA1))
	for i := range dA1 {
		if tanh {
			dA1[i] *= 1 - A1[i]*A1[i]
		} else if Z1[i] <= 0 {
			dA1[i] = 0
		}
	}
	blas64.Gemm(blas.Trans, blas.NoTrans, 1, general(b, dd, X), general(b, h, dA1), 1, general(dd, h, g.W1))
	for r := range b {
		for u, v := range dA1[r*h : (r+1)*h] {
			g.B1[u] += v
		}
	}
	return loss
}

// mlpObjective is the mean cross-entropy over rows idx plus the penalty,
// with its gradient in grad (when non-nil): the function TrainMLP
// minimises, one batch at a time.
func mlpObjective(theta []float64, d *Data, idx []int, h int, act string, l2 float64, w *mlpWork, grad []float64) float64 {
	if grad != nil {
		clear(grad)
	}
	loss := mlpBatch(theta, d, idx, h, act, w, grad)
	inv := 1 / float64(len(idx))
	p := mlpView(theta, d.D, h, d.Classes)
	pen := 0.0
	for _, ws := range [][]float64{p.W1, p.W2} {
		for _, v := range ws {
			pen += v * v
		}
	}
	if grad != nil {
		for i := range grad {
			grad[i] *= inv
		}
		g := mlpView(grad, d.D, h, d.Classes)
		for i, v := range p.W1 {
			g.W1[i] += l2 * v
		}
		for i, v := range p.W2 {
			g.W2[i] += l2 * v
		}
	}
	return loss*inv + l2/2*pen
}

// TrainMLP fits a one-hidden-layer perceptron to d by mini-batch Adam (or
// momentum SGD).
func TrainMLP(ctx context.Context, d *Data, opt MLPOptions) (*MLP, error) {
	if err := d.Validate(); err != nil {
		return nil, err
	}
	o, err := opt.withDefaults(d.N())
	if err != nil {
		return nil, err
	}
	dd, h, k := d.D, o.Hidden, d.Classes
	theta := make([]float64, mlpSize(dd, h, k))
	// Not privacy noise (PRIVACY-NOTES item 17 does not apply): the random
	// initial weights of a teacher's local, non-private model, seeded for
	// reproducibility. DPPP's privacy noise is drawn by package dppp with
	// the exact samplers of package noise.
	rng := rand.New(rand.NewPCG(o.Seed, 0x6d6c70)) // "mlp"
	p := mlpView(theta, dd, h, k)
	// He initialisation for ReLU, Glorot for tanh and the output layer.
	s1 := math.Sqrt(2 / float64(dd))
	if o.Activation == ActivationTanh {
		s1 = math.Sqrt(2 / float64(dd+h))
	}
	for i := range p.W1 {
		p.W1[i] = s1 * rng.NormFloat64() // seeded initial weights, not privacy noise
	}
	s2 := math.Sqrt(2 / float64(h+k))
	for i := range p.W2 {
		p.W2[i] = s2 * rng.NormFloat64() // seeded initial weights, not privacy noise
	}
	grad := make([]float64, len(theta))
	var step func()
	lr := o.LearningRate
	switch o.Optimizer {
	case OptimizerAdam:
		a := newAdam(len(theta))
		step = func() { a.step(theta, grad, lr) }
	default:
		vel := make([]float64, len(theta))
		step = func() {
			for i, g := range grad {
				vel[i] = o.Momentum*vel[i] - lr*g
				theta[i] += vel[i]
			}
		}
	}
	n := d.N()
	perm := make([]int, n)
	for i := range perm {
		perm[i] = i
	}
	w := newMLPWork(min(o.BatchSize, n), dd, h, k)
	for range o.Epochs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		rng.Shuffle(n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		for lo := 0; lo < n; lo += o.BatchSize {
			mlpObjective(theta, d, perm[lo:min(n, lo+o.BatchSize)], h, o.Activation, o.L2, w, grad)
			step()
		}
	}
	m := &MLP{D: dd, H: h, K: k, Activation: o.Activation,
		W1: p.W1, B1: p.B1, W2: p.W2, B2: p.B2}
	if err := m.validate(); err != nil {
		return nil, fmt.Errorf("classify: training diverged: %w", err)
	}
	return m, nil
}
