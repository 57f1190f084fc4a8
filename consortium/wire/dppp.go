package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/dpppnet"
)

// KindDPPP is TaskSpec.Kind of a DPPP query task: label the rows of a
// table by a deployment's teachers (the nodes holding its models). The
// empty kind is a capeFM fit.
const KindDPPP = "dppp"

// MechanismDPPP is the mechanism a site's policy must allow an analyst
// ("mechanisms": ["dppp"]) for DPPP query tasks.
const MechanismDPPP = "dppp"

// MaxQueryValues bounds a DPPP task's rows × features: the rows travel in
// the signed specification (JSON, up to 24 bytes a value, base64 inside
// the offer: about 3.2 MB at the bound), inside one envelope of at most
// MaxPayload.
const MaxQueryValues = 100_000

// CheckQueryRows checks a DPPP task's rows: at least one, all of the same
// width, all finite, at most MaxQueryValues values in all.
func CheckQueryRows(rows [][]float64) error {
	if len(rows) == 0 {
		return errors.New("a DPPP task needs query rows")
	}
	if n := len(rows) * len(rows[0]); n > MaxQueryValues {
		return fmt.Errorf("%d rows × %d features = %d values: a DPPP task carries at most %d (split the queries into several tasks)", len(rows), len(rows[0]), n, MaxQueryValues)
	}
	return dpppnet.CheckRows(rows, len(rows[0]))
}

// Deployment is a DPPP deployment's public settings, the same file at the
// coordinator and at every teacher node (what `dplearn dppp serve` and
// `dppp teach` take as flags): each teacher calibrates its own dppp.Params
// from it, its model and its key share, and refuses an offer that differs
// in any field (dppp.Teacher.Accept), so a coordinator with another file
// gets no vote.
type Deployment struct {
	// Teachers is the roster: node names in the order of their key shares
	// (teacher i holds share i).
	Teachers  []string `json:"teachers"`
	Threshold int      `json:"threshold,omitempty"`
	// Colluders and Absent are dppp.Config's (0: the default; -1: none
	// assumed, dppp.NoneAssumed).
	Colluders int    `json:"colluders,omitempty"`
	Absent    int    `json:"absent,omitempty"`
	Noise     string `json:"noise,omitempty"` // binomial (default) or dgauss
	// Epsilon and Delta are the per-query (ε, δ) the noise gives.
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// BudgetEpsilon and BudgetDelta bound one run (one task) composed by
	// the noise kind's accountant.
	BudgetEpsilon        float64 `json:"budget_epsilon"`
	BudgetDelta          float64 `json:"budget_delta"`
	QueriesPerCiphertext int     `json:"queries_per_ciphertext,omitempty"`
}

// LoadDeployment reads a deployment file (unknown fields refused).
func LoadDeployment(path string) (*Deployment, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("deployment: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var d Deployment
	if err := dec.Decode(&d); err != nil {
		return nil, fmt.Errorf("deployment %s: %w", path, err)
	}
	if len(d.Teachers) < 2 {
		return nil, fmt.Errorf("deployment %s: want at least 2 teachers, got %d", path, len(d.Teachers))
	}
	return &d, nil
}

// Config returns the dppp.Config of the deployment for a model of classes
// classes and features features whose input fingerprint is model.
func (d *Deployment) Config(classes, features int, model [32]byte) (dppp.Config, error) {
	kind := dppp.Binomial
	if d.Noise != "" {
		k, err := dppp.ParseNoiseKind(d.Noise)
		if err != nil {
			return dppp.Config{}, fmt.Errorf("deployment: noise: %w", err)
		}
		kind = k
	}
	trust := func(v int) int {
		if v < 0 {
			return dppp.NoneAssumed
		}
		return v
	}
	if !(d.Epsilon > 0) {
		return dppp.Config{}, errors.New("deployment: need a per-query epsilon > 0")
	}
	return dppp.Config{Teachers: append([]string(nil), d.Teachers...), Threshold: d.Threshold, Colluders: trust(d.Colluders), Absent: trust(d.Absent),
		Classes: classes, Features: features, Noise: kind, Epsilon: d.Epsilon, Delta: d.Delta,
		BudgetEpsilon: d.BudgetEpsilon, BudgetDelta: d.BudgetDelta, QueriesPerCiphertext: d.QueriesPerCiphertext, Model: model}, nil
}
