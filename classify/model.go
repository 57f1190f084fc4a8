// Package classify holds the teachers of distributed private prediction
// (DPPP): multiclass classifiers that each party trains on its own table
// and that answer a query row with one class.
//
// Built in: multinomial logistic (softmax) regression with an L2 penalty,
// trained by full-batch L-BFGS or mini-batch Adam (TrainSoftmax), and a
// one-hidden-layer perceptron with ReLU or tanh units (TrainMLP). Both are
// plain Go on gonum, deterministic for a given seed whatever the number of
// cores. An external predictor (StartExternal) runs any program that speaks
// the JSON-lines protocol of docs/teachers.md, so a scikit-learn or PyTorch
// model can be a teacher.
//
// A model is saved as JSON (ModelFile: format, version, classes, the
// feature preparation and the parameters), strictly decoded and atomically
// written. A teacher's model file stays on the teacher's machine: only its
// noisy votes leave it. Training is not differentially private and need not
// be: privacy comes from the noise DPPP adds to the vote histogram.
//
// Feature preparation: a Spec (a schema file whose target declares its
// public list of classes) turns CSV or Parquet rows into feature vectors
// through the schema and dataset packages; IDX images (package idx) are used
// as pixels in [0, 1].
package classify

import (
	"context"
	"fmt"
	"math"
)

// Model is a trained in-process classifier.
//
// Predict and PredictProba panic when len(x) != Features() or len(out) !=
// Classes(): that is a programming error. Rows from outside the process
// should go through a Predictor (InProcess), which checks them and returns
// errors instead.
type Model interface {
	// Classes returns the number of classes K; labels are 0..K-1.
	Classes() int
	// Features returns the length of an input row.
	Features() int
	// Predict returns the most probable class of x (the lowest index on
	// ties).
	Predict(x []float64) int
	// PredictProba writes the K class probabilities of x into out.
	PredictProba(x []float64, out []float64)
}

// Predictor labels batches of rows and can fail: the form in which a DPPP
// teacher uses any model, in-process or external.
type Predictor interface {
	Classes() int
	Features() int
	// PredictBatch returns one label in [0, Classes()) per row of X.
	PredictBatch(ctx context.Context, X [][]float64) ([]int, error)
	// Close releases the model (it stops an external process).
	Close() error
}

// CheckRow returns an error unless x has d finite values.
func CheckRow(x []float64, d int) error {
	if len(x) != d {
		return fmt.Errorf("classify: row has %d features, the model takes %d: %w", len(x), d, ErrWidth)
	}
	for j, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("classify: feature %d is %v: %w", j, v, ErrNotFinite)
		}
	}
	return nil
}

// InProcess wraps a Model as a Predictor that checks each row's width and
// values before predicting.
func InProcess(m Model) Predictor { return inProcess{m} }

type inProcess struct{ m Model }

func (p inProcess) Classes() int  { return p.m.Classes() }
func (p inProcess) Features() int { return p.m.Features() }
func (p inProcess) Close() error  { return nil }

func (p inProcess) PredictBatch(ctx context.Context, X [][]float64) ([]int, error) {
	out := make([]int, len(X))
	for i, x := range X {
		if i%1024 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
		}
		if err := CheckRow(x, p.m.Features()); err != nil {
			return nil, fmt.Errorf("row %d: %w", i, err)
		}
		out[i] = p.m.Predict(x)
	}
	return out, nil
}

// Evaluate returns the accuracy of p on d.
func Evaluate(ctx context.Context, p Predictor, d *Data) (float64, error) {
	if d.N() == 0 {
		return 0, fmt.Errorf("classify: evaluate: %w", ErrEmpty)
	}
	const batch = 4096
	ok := 0
	rows := make([][]float64, 0, batch)
	for lo := 0; lo < d.N(); lo += batch {
		hi := min(d.N(), lo+batch)
		rows = rows[:0]
		for i := lo; i < hi; i++ {
			rows = append(rows, d.Row(i))
		}
		got, err := p.PredictBatch(ctx, rows)
		if err != nil {
			return 0, err
		}
		for i, g := range got {
			if g == d.Y[lo+i] {
				ok++
			}
		}
	}
	return float64(ok) / float64(d.N()), nil
}

// softmaxInPlace turns logits z into probabilities (max-shifted, so no
// overflow) and returns log Σ exp(z − max) + max, the log-partition.
func softmaxInPlace(z []float64) float64 {
	m := z[0]
	for _, v := range z[1:] {
		if v > m {
			m = v
		}
	}
	s := 0.0
	for k, v := range z {
		e := math.Exp(v - m)
		z[k] = e
		s += e
	}
	inv := 1 / s
	for k := range z {
		z[k] *= inv
	}
	return m + math.Log(s)
}

// argmax returns the index of the largest value (the first on ties).
func argmax(v []float64) int {
	best := 0
	for k := 1; k < len(v); k++ {
		if v[k] > v[best] {
			best = k
		}
	}
	return best
}

func checkPredictArgs(x []float64, d int, out []float64, k int) {
	if len(x) != d {
		panic(fmt.Sprintf("classify: row has %d features, the model takes %d", len(x), d))
	}
	if out != nil && len(out) != k {
		panic(fmt.Sprintf("classify: output has length %d, the model has %d classes", len(out), k))
	}
}
