package classify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"time"

	"github.com/dplearn/dplearn/internal/atomicfile"
)

// Model file format identifiers.
const (
	FileFormat  = "dplearn-classifier"
	FileVersion = 1
)

// Model kinds in a ModelFile.
const (
	KindSoftmax  = "softmax"
	KindMLP      = "mlp"
	KindExternal = "external"
)

// MaxModelFileBytes bounds the size of a model file Load reads (a 784-100-10
// MLP takes about 2 MB).
const MaxModelFileBytes = 1 << 30

// ModelFile is a teacher's saved model: the JSON file `dplearn dppp train`
// writes and a teacher loads. It never leaves the teacher's machine.
type ModelFile struct {
	Format  string `json:"format"`  // FileFormat
	Version int    `json:"version"` // FileVersion
	Kind    string `json:"model"`   // softmax, mlp or external
	// ClassNames names the classes: label k is ClassNames[k].
	ClassNames []string `json:"classes"`
	// Features is the length of an input row.
	Features int `json:"features"`
	// Input says how raw data become input rows: a Spec for tables, or
	// nil when rows are given as numbers (IDX images: pixels/255).
	Input *Spec `json:"spec,omitempty"`
	// InputNote describes the input in words when Input is nil.
	InputNote string `json:"input,omitempty"`

	Softmax  *Softmax        `json:"softmax,omitempty"`
	MLP      *MLP            `json:"mlp,omitempty"`
	External *ExternalConfig `json:"external,omitempty"`

	// Training records how the model was trained (hyperparameters and
	// the number of rows), for the teacher's own records.
	Training *TrainingInfo `json:"training,omitempty"`

	// Privacy is the guarantee of a model trained on privately released
	// labels (a DPPP student); nil for a teacher's model, which is not
	// private and never leaves its machine.
	Privacy *PrivacyReport `json:"privacy,omitempty"`
}

// PrivacyReport is the differential privacy guarantee of a model trained
// on labels released by a differentially private mechanism (a DPPP
// student, the PATE use of the labels). By post-processing, the model is
// as private as the labels it used, with respect to the data of those who
// released them (the teachers); the rows the model was trained on (the
// queries) are not protected.
type PrivacyReport struct {
	// Epsilon and Delta are the composed guarantee of the labels used,
	// rounded up, as printed.
	Epsilon string `json:"epsilon"`
	Delta   string `json:"delta"`
	// Labels is the number of labels (answered queries) used.
	Labels int `json:"labels"`
	// Accountant names the composition that proved the guarantee.
	Accountant string `json:"accountant"`
	// Source identifies the release, e.g. the DPPP deployment's
	// parameters hash.
	Source string `json:"source"`
	// Protects says whose data the guarantee protects, in words.
	Protects string `json:"protects"`
}

func (r *PrivacyReport) validate() error {
	for _, v := range []struct{ name, s string }{{"epsilon", r.Epsilon}, {"delta", r.Delta}} {
		x, err := strconv.ParseFloat(v.s, 64)
		if err != nil || math.IsNaN(x) || x < 0 || math.IsInf(x, 0) {
			return fmt.Errorf("privacy report: %s %q: want a finite non-negative number", v.name, v.s)
		}
	}
	if r.Labels < 1 {
		return fmt.Errorf("privacy report: %d labels", r.Labels)
	}
	return nil
}

// TrainingInfo records the training run of a model.
type TrainingInfo struct {
	Rows    int            `json:"rows"`
	Options map[string]any `json:"options,omitempty"`
	// Partition is "i/N" when the model was trained on part i of N.
	Partition string `json:"partition,omitempty"`
}

// ExternalConfig is how a ModelFile names an external predictor: the
// command (argv, no shell) and its timeouts.
type ExternalConfig struct {
	Command []string `json:"command"`
	Dir     string   `json:"dir,omitempty"`
	// StartTimeout and RequestTimeout are Go durations ("30s"); empty
	// means the defaults of ExternalOptions.
	StartTimeout   string `json:"start_timeout,omitempty"`
	RequestTimeout string `json:"request_timeout,omitempty"`
}

// Options converts the config to ExternalOptions.
func (c *ExternalConfig) Options() (ExternalOptions, error) {
	var o ExternalOptions
	o.Dir = c.Dir
	for _, t := range []struct {
		s   string
		dst *time.Duration
	}{{c.StartTimeout, &o.StartTimeout}, {c.RequestTimeout, &o.RequestTimeout}} {
		if t.s == "" {
			continue
		}
		d, err := time.ParseDuration(t.s)
		if err != nil || d <= 0 {
			return o, fmt.Errorf("external: timeout %q: want a positive Go duration such as 30s", t.s)
		}
		*t.dst = d
	}
	return o, nil
}

// NewModelFile wraps a trained in-process model.
func NewModelFile(m Model, classNames []string, input *Spec) (*ModelFile, error) {
	f := &ModelFile{Format: FileFormat, Version: FileVersion, ClassNames: classNames, Features: m.Features(), Input: input}
	switch m := m.(type) {
	case *Softmax:
		f.Kind, f.Softmax = KindSoftmax, m
	case *MLP:
		f.Kind, f.MLP = KindMLP, m
	default:
		return nil, fmt.Errorf("classify: cannot save a %T", m)
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return f, nil
}

// Validate checks that the file is complete and consistent.
func (f *ModelFile) Validate() error {
	if f.Format != FileFormat {
		return fmt.Errorf("format %q: not a dplearn classifier (want %q)", f.Format, FileFormat)
	}
	if f.Version != FileVersion {
		return fmt.Errorf("version %d: this dplearn reads version %d", f.Version, FileVersion)
	}
	k := len(f.ClassNames)
	if k < 2 || k > MaxClasses {
		return fmt.Errorf("%d classes (want 2 to %d)", k, MaxClasses)
	}
	seen := map[string]bool{}
	for _, c := range f.ClassNames {
		if c == "" {
			return errors.New("an empty class name")
		}
		if seen[c] {
			return fmt.Errorf("class %q listed twice", c)
		}
		seen[c] = true
	}
	if f.Features < 1 || f.Features > MaxFeatures {
		return fmt.Errorf("%d features", f.Features)
	}
	if f.Privacy != nil {
		if err := f.Privacy.validate(); err != nil {
			return err
		}
	}
	if f.Input != nil {
		if f.Input.Features() != f.Features || f.Input.Classes() != k {
			return fmt.Errorf("the spec has %d features and %d classes, the model %d and %d", f.Input.Features(), f.Input.Classes(), f.Features, k)
		}
	}
	n := 0
	for _, p := range []bool{f.Softmax != nil, f.MLP != nil, f.External != nil} {
		if p {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("want exactly one of softmax, mlp, external parameters, have %d", n)
	}
	var m Model
	switch f.Kind {
	case KindSoftmax:
		if f.Softmax == nil {
			return errors.New("model softmax without softmax parameters")
		}
		if err := f.Softmax.validate(); err != nil {
			return err
		}
		m = f.Softmax
	case KindMLP:
		if f.MLP == nil {
			return errors.New("model mlp without mlp parameters")
		}
		if err := f.MLP.validate(); err != nil {
			return err
		}
		m = f.MLP
	case KindExternal:
		if f.External == nil || len(f.External.Command) == 0 || f.External.Command[0] == "" {
			return errors.New("model external without a command")
		}
		if _, err := f.External.Options(); err != nil {
			return err
		}
		return nil
	default:
		return fmt.Errorf("model %q (want softmax, mlp or external)", f.Kind)
	}
	if m.Classes() != k || m.Features() != f.Features {
		return fmt.Errorf("parameters for %d features and %d classes, the file declares %d and %d", m.Features(), m.Classes(), f.Features, k)
	}
	return nil
}

// Model returns the in-process model (an error for an external one: use
// Open).
func (f *ModelFile) Model() (Model, error) {
	switch f.Kind {
	case KindSoftmax:
		return f.Softmax, nil
	case KindMLP:
		return f.MLP, nil
	}
	return nil, fmt.Errorf("classify: a %s model runs as a process: use Open", f.Kind)
}

// Open returns the model as a Predictor: in-process models directly, an
// external one by starting its command (checking that its handshake
// declares the file's classes and features). Close the Predictor when
// done.
func (f *ModelFile) Open(ctx context.Context) (Predictor, error) {
	if f.Kind != KindExternal {
		m, err := f.Model()
		if err != nil {
			return nil, err
		}
		return InProcess(m), nil
	}
	o, err := f.External.Options()
	if err != nil {
		return nil, err
	}
	o.Classes, o.Features = len(f.ClassNames), f.Features
	return StartExternal(ctx, f.External.Command, o)
}

// Save writes the file as JSON, atomically: a temporary file beside path,
// synced, then renamed, so an interrupted run leaves no partial model. The
// mode is 0600: the model is derived from private data.
func (f *ModelFile) Save(path string) error {
	if err := f.Validate(); err != nil {
		return fmt.Errorf("classify: save %s: %w", path, err)
	}
	data, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o600)
}

// Load reads and validates a model file. Decoding is strict: unknown keys,
// trailing data and inconsistent shapes are errors.
func Load(path string) (*ModelFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	st, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, fmt.Errorf("model %s: not a regular file", path)
	}
	if st.Size() > MaxModelFileBytes {
		return nil, fmt.Errorf("model %s: %d bytes, more than the %d a model file may have", path, st.Size(), MaxModelFileBytes)
	}
	data, err := io.ReadAll(io.LimitReader(fh, MaxModelFileBytes+1))
	if err != nil {
		return nil, err
	}
	f, err := Decode(data)
	if err != nil {
		return nil, fmt.Errorf("model %s: %w", path, err)
	}
	return f, nil
}

// Decode parses and validates the bytes of a model file.
func Decode(data []byte) (*ModelFile, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f ModelFile
	if err := dec.Decode(&f); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("empty file")
		}
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON object")
	}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return &f, nil
}
