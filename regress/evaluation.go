package regress

import (
	"fmt"
	"math"
	"sort"

	"github.com/dplearn/dplearn/schema"
)

// Evaluation extends Evaluator (one pass over encoded rows) with the
// metrics a statistician reads next to the papers' encoded-scale MSE:
//
// Linear models with a transformed target (log, log1p, sqrt): RMSE and MAE
// in the target's original units, after undoing the transform. The
// prediction is retransformed naively, v̂ = T⁻¹(t̂) (exp of the log-scale
// prediction for a log target). That is the conditional median of v when
// the errors on the transformed scale are symmetric, not its conditional
// mean: for a log target the mean is exp(t̂)·E[e^r], which Duan's smearing
// estimate would take from the training residuals, and a private fit does
// not release them. The observed target is the encoded one mapped back,
// i.e. clipped to its declared range, as the fit saw it.
//
// Logistic models: the area under the ROC curve (the Mann–Whitney
// probability that a positive row scores above a negative one, ties
// counting ½), the Brier score (1/n)Σ(p − y)², and a calibration table:
// the rows sorted by predicted probability and split into (up to) ten
// groups of equal size (deciles), each with its mean prediction and
// observed share of positives. These keep every score (8 bytes and a label
// per row).
type Evaluation struct {
	base    *Evaluator
	kind    Kind
	coef    []float64
	target  schema.Target
	my, hy  float64
	n       int64
	se, ae  float64
	scores  []float64
	labels  []bool
	brierSS float64
}

// NewEvaluation returns an evaluation of model m.
func NewEvaluation(m *Model) *Evaluation {
	e := &Evaluation{base: NewEvaluator(m), kind: m.Kind, coef: m.Coefficients, target: m.Schema.Target, hy: 1}
	if !m.Schema.Target.Binary() {
		r := m.Schema.Target.Range
		e.my, e.hy = (r[0]+r[1])/2, (r[1]-r[0])/2
	}
	return e
}

// Add scores a block of encoded rows (row-major, len(coef)+1 per row).
func (e *Evaluation) Add(rows []float64) {
	e.base.Add(rows)
	k := len(e.coef) + 1
	for i := 0; i+k <= len(rows); i += k {
		r := rows[i : i+k]
		y := r[k-1]
		p := Score(e.kind, e.coef, r)
		e.n++
		if e.kind == Logistic {
			e.scores = append(e.scores, p)
			e.labels = append(e.labels, y == 1)
			e.brierSS += (p - y) * (p - y)
			continue
		}
		inv := e.target.Transform.Invert
		d := inv(e.my+e.hy*p) - inv(e.my+e.hy*y)
		e.se += d * d
		e.ae += math.Abs(d)
	}
}

// OriginalUnits are a linear model's errors after undoing the target's
// transform. In JSON they are flat numbers (rmse_original, mae_original)
// beside the other metrics, so the metrics stay a map of numbers;
// Retransformation is for the text output.
type OriginalUnits struct {
	RMSEOriginal float64 `json:"rmse_original"`
	MAEOriginal  float64 `json:"mae_original"`
	// Retransformation says how predictions were mapped back (always the
	// naive back-transform; see Evaluation).
	Retransformation string `json:"-"`
}

// CalibrationBin is one group of the calibration table.
type CalibrationBin struct {
	N             int     `json:"n"`
	MinPredicted  float64 `json:"min_predicted"`
	MaxPredicted  float64 `json:"max_predicted"`
	MeanPredicted float64 `json:"mean_predicted"`
	Observed      float64 `json:"observed"` // share of positives
}

// EvalMetrics are Metrics plus the metrics of Evaluation.
type EvalMetrics struct {
	Metrics
	*OriginalUnits
	// AUC, Brier and Calibration are for logistic models.
	AUC         *float64         `json:"auc,omitempty"`
	Brier       *float64         `json:"brier,omitempty"`
	Calibration []CalibrationBin `json:"calibration,omitempty"`
}

// Metrics returns the accumulated metrics.
func (e *Evaluation) Metrics() EvalMetrics {
	m := EvalMetrics{Metrics: e.base.Metrics()}
	if e.n == 0 {
		return m
	}
	n := float64(e.n)
	if e.kind == Logistic {
		b := e.brierSS / n
		m.Brier = &b
		if a, ok := AUC(e.scores, e.labels); ok {
			m.AUC = &a
		}
		m.Calibration = Calibration(e.scores, e.labels, 10)
		return m
	}
	if t := e.target.Transform; t != schema.TransformNone {
		m.OriginalUnits = &OriginalUnits{RMSEOriginal: math.Sqrt(e.se / n), MAEOriginal: e.ae / n, Retransformation: Retransformation(t, e.target.Name)}
	}
	return m
}

// Retransformation describes the naive back-transform of predictions.
func Retransformation(t schema.Transform, name string) string {
	switch t {
	case schema.TransformLog:
		return fmt.Sprintf("naive back-transform %s = exp(prediction of log %s), no smearing: the conditional median under symmetric log-scale errors, below the conditional mean by the factor E[exp(residual)]", name, name)
	case schema.TransformLog1p:
		return fmt.Sprintf("naive back-transform %s = exp(prediction of log(1+%s)) − 1, no smearing: the conditional median under symmetric errors on the log(1+%s) scale", name, name, name)
	case schema.TransformSqrt:
		return fmt.Sprintf("naive back-transform %s = (prediction of √%s)², no smearing: the conditional median under symmetric errors on the √%s scale, below the mean by the residual variance", name, name, name)
	}
	return "none (the target has no transform)"
}

// AUC is the area under the ROC curve of scores for labels: the share of
// (positive, negative) pairs in which the positive scores higher, ties
// counting ½ (Mann–Whitney U / (n₊n₋)), computed from midranks in
// O(n log n). ok is false without both classes.
func AUC(scores []float64, labels []bool) (float64, bool) {
	n := len(scores)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return scores[idx[a]] < scores[idx[b]] })
	var pos, neg, rankSum float64
	for i := 0; i < n; {
		j := i
		for j < n && scores[idx[j]] == scores[idx[i]] {
			j++
		}
		mid := float64(i+j+1) / 2 // midrank of ranks i+1..j
		for _, t := range idx[i:j] {
			if labels[t] {
				rankSum += mid
				pos++
			}
		}
		i = j
	}
	neg = float64(n) - pos
	if pos == 0 || neg == 0 {
		return math.NaN(), false
	}
	return (rankSum - pos*(pos+1)/2) / (pos * neg), true
}

// Calibration sorts the rows by score and splits them into bins groups of
// sizes differing by at most one (⌊i·n/bins⌋ boundaries); fewer groups
// when there are fewer rows.
func Calibration(scores []float64, labels []bool, bins int) []CalibrationBin {
	n := len(scores)
	if n == 0 || bins <= 0 {
		return nil
	}
	bins = min(bins, n)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return scores[idx[a]] < scores[idx[b]] })
	out := make([]CalibrationBin, 0, bins)
	for g := 0; g < bins; g++ {
		lo, hi := g*n/bins, (g+1)*n/bins
		b := CalibrationBin{N: hi - lo, MinPredicted: scores[idx[lo]], MaxPredicted: scores[idx[hi-1]]}
		for _, t := range idx[lo:hi] {
			b.MeanPredicted += scores[t]
			if labels[t] {
				b.Observed++
			}
		}
		b.MeanPredicted /= float64(b.N)
		b.Observed /= float64(b.N)
		out = append(out, b)
	}
	return out
}
