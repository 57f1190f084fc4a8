package regress

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/dplearn/dplearn/internal/atomicfile"
	"github.com/dplearn/dplearn/report"
	"github.com/dplearn/dplearn/schema"
)

// ModelFormat and ModelVersion identify a MODEL.json file.
const (
	ModelFormat  = "dplearn-model"
	ModelVersion = 1
)

// Model is what `dplearn fit` writes: the schema (public bounds), the
// coefficients in the encoded feature space, and the privacy report.
type Model struct {
	Format       string         `json:"format"`
	Version      int            `json:"version"`
	Kind         Kind           `json:"model"`
	Schema       *schema.Schema `json:"schema"`
	Features     []string       `json:"features"`
	Coefficients []float64      `json:"coefficients"`
	Privacy      report.Privacy `json:"privacy"`
	Training     Training       `json:"training"`
	// Inference holds the coefficient table written by package fit
	// (original units, standard errors, confidence intervals): functions
	// of released values and public parameters only. Absent in older files.
	Inference *CoefTable `json:"inference,omitempty"`
}

// Training records public facts about the fit. Nothing data-dependent
// belongs here (PRIVACY-NOTES item 23): Rows is N, public by the
// neighbouring relation; Trimmed is a function of the released noisy values.
type Training struct {
	Rows     int64    `json:"rows"`
	Trimmed  int      `json:"trimmed_directions"`
	Warnings []string `json:"warnings,omitempty"`
}

// NewModel assembles a model from a fit.
func NewModel(kind Kind, s *schema.Schema, res *Result, tr Training) (*Model, error) {
	names := s.FeatureNames()
	if len(names) != len(res.Coef) {
		return nil, fmt.Errorf("regress: %d coefficients for %d features", len(res.Coef), len(names))
	}
	tr.Trimmed = res.Trimmed
	tr.Warnings = append(tr.Warnings, res.Warnings...)
	return &Model{Format: ModelFormat, Version: ModelVersion, Kind: kind, Schema: s,
		Features: names, Coefficients: res.Coef, Privacy: res.Privacy, Training: tr}, nil
}

// Validate checks a decoded model for consistency.
func (m *Model) Validate() error {
	if m.Format != ModelFormat {
		return fmt.Errorf("not a dplearn model (format %q)", m.Format)
	}
	if m.Version != ModelVersion {
		return fmt.Errorf("model version %d is not supported (want %d)", m.Version, ModelVersion)
	}
	if _, err := ParseKind(string(m.Kind)); err != nil {
		return err
	}
	if m.Schema == nil {
		return errors.New("model has no schema")
	}
	if err := m.Schema.Validate(); err != nil {
		return err
	}
	if m.Kind == Logistic && !m.Schema.Target.Binary() {
		return errors.New("logistic model with a continuous target")
	}
	if m.Kind != Logistic && m.Schema.Target.Binary() {
		return fmt.Errorf("%s model with a binary target", m.Kind)
	}
	if d := m.Schema.Dim(); len(m.Coefficients) != d {
		return fmt.Errorf("model has %d coefficients, its schema encodes %d features", len(m.Coefficients), d)
	}
	for i, c := range m.Coefficients {
		if math.IsNaN(c) || math.IsInf(c, 0) {
			return fmt.Errorf("coefficient %d is %v", i, c)
		}
	}
	return nil
}

// LoadModel reads and validates a MODEL.json file.
func LoadModel(path string) (*Model, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	var m Model
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	return &m, nil
}

// Save writes the model as indented JSON, atomically (temporary file and
// rename), so an interrupted run leaves no partial file.
func (m *Model) Save(path string) error {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o644)
}

// Score returns the model's prediction for one encoded row on the encoded
// scale: xᵀω clipped to [−1, 1] for linear models (the declared target
// range; clipping is post-processing), P(y = 1) for logistic ones.
func Score(kind Kind, coef, x []float64) float64 {
	z := dot(x[:len(coef)], coef)
	if kind == Logistic {
		return sigmoid(z)
	}
	return math.Max(-1, math.Min(1, z))
}

// Metrics are test-set errors.
type Metrics struct {
	N int64 `json:"n"`
	// Linear: mse on the encoded [−1, 1] target scale (as the papers report),
	// rmse and mae on the target's declared scale (after its transform), r2.
	MSE  *float64 `json:"mse,omitempty"`
	RMSE *float64 `json:"rmse,omitempty"`
	MAE  *float64 `json:"mae,omitempty"`
	R2   *float64 `json:"r2,omitempty"`
	// Logistic.
	Accuracy *float64 `json:"accuracy,omitempty"`
	LogLoss  *float64 `json:"log_loss,omitempty"`
}

// Evaluator accumulates metrics over encoded rows in one pass.
type Evaluator struct {
	kind             Kind
	coef             []float64
	scale            float64 // target units per encoded unit
	n                int64
	se, ae, sy, syy  float64
	correct, logLoss float64
}

// NewEvaluator returns an evaluator for a model.
func NewEvaluator(m *Model) *Evaluator {
	return &Evaluator{kind: m.Kind, coef: m.Coefficients, scale: m.Schema.TargetScale()}
}

// Add scores a block of encoded rows (row-major, len(coef)+1 per row).
func (e *Evaluator) Add(rows []float64) {
	k := len(e.coef) + 1
	for i := 0; i+k <= len(rows); i += k {
		r := rows[i : i+k]
		y := r[k-1]
		p := Score(e.kind, e.coef, r)
		e.n++
		if e.kind == Logistic {
			if (p >= 0.5) == (y == 1) {
				e.correct++
			}
			pc := math.Min(math.Max(p, 1e-15), 1-1e-15)
			e.logLoss -= y*math.Log(pc) + (1-y)*math.Log(1-pc)
			continue
		}
		d := p - y
		e.se += d * d
		e.ae += math.Abs(d)
		e.sy += y
		e.syy += y * y
	}
}

// Metrics returns the accumulated metrics.
func (e *Evaluator) Metrics() Metrics {
	m := Metrics{N: e.n}
	if e.n == 0 {
		return m
	}
	n := float64(e.n)
	if e.kind == Logistic {
		acc, ll := e.correct/n, e.logLoss/n
		m.Accuracy, m.LogLoss = &acc, &ll
		return m
	}
	mse := e.se / n
	rmse := math.Sqrt(mse) * e.scale
	mae := e.ae / n * e.scale
	m.MSE, m.RMSE, m.MAE = &mse, &rmse, &mae
	if sst := e.syy - e.sy*e.sy/n; sst > 0 {
		r2 := 1 - e.se/sst
		m.R2 = &r2
	}
	return m
}
