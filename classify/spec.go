package classify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/schema"
)

// Spec is the public declaration of a classification table: a schema file
// (see package schema) whose target lists its classes. It says how a CSV or
// Parquet row becomes a feature vector and a class index.
//
// Multiclass targets declare their classes, in order (class k is the k-th
// label; a label not in the list is an error):
//
//	{"target": {"name": "digit", "classes": ["0","1","2","3","4","5","6","7","8","9"]},
//	 "features": [{"name": "p0", "range": [0, 16]}, ...]}
//
// A binary target of package schema is accepted as is: classes "0" and "1"
// (a 0/1 column), [negative, positive] ("positive"/"negative" labels; "not
// POSITIVE" when no negative label is declared), or ["≤ a", "> a"] (a
// threshold "above").
//
// Features are encoded as package schema encodes them, without its 1/√B
// scaling: a numeric value clipped to its declared range and mapped onto
// [−1, 1], a categorical value as indicator columns (the first category is
// the reference). The models have their own intercepts, so the schema's
// "intercept" is ignored.
type Spec struct {
	target     string
	classes    []string
	multiclass bool
	features   []schema.Feature
	train      *schema.Schema // encodes features and the label
	query      *schema.Schema // encodes features only (target optional)
	names      []string       // feature names, as package schema names them
}

// noTarget is the target name of the internal schemas that carry the label
// as a categorical feature: no header can match it by accident.
const noTarget = "\x00dplearn classify: no target\x00"

// specJSON is the on-disk form of a multiclass Spec.
type specJSON struct {
	Target struct {
		Name    string   `json:"name"`
		Classes []string `json:"classes"`
	} `json:"target"`
	Features  []schema.Feature `json:"features"`
	Intercept *bool            `json:"intercept,omitempty"`
}

// LoadSpec reads and validates a spec file.
func LoadSpec(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	s, err := ParseSpec(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// ParseSpec decodes and validates a spec (strictly: unknown keys are
// errors).
func ParseSpec(data []byte) (*Spec, error) {
	var probe struct {
		Target map[string]json.RawMessage `json:"target"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		// Let package schema report the syntax error with its position.
		_, perr := schema.Parse(data)
		if perr == nil {
			perr = err
		}
		return nil, perr
	}
	if _, ok := probe.Target["classes"]; !ok {
		sc, err := schema.Parse(data)
		if err != nil {
			return nil, err
		}
		return specFromBinary(sc)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var sj specJSON
	if err := dec.Decode(&sj); err != nil {
		return nil, fmt.Errorf("spec: %w", err)
	}
	if dec.More() {
		return nil, errors.New("spec: trailing data after the JSON object")
	}
	return newMulticlass(sj.Target.Name, sj.Target.Classes, sj.Features)
}

// NewSpec builds a multiclass spec from its parts.
func NewSpec(target string, classes []string, features []schema.Feature) (*Spec, error) {
	return newMulticlass(target, classes, features)
}

func newMulticlass(target string, classes []string, features []schema.Feature) (*Spec, error) {
	if strings.TrimSpace(target) == "" {
		return nil, errors.New("spec: target: name is missing")
	}
	if len(classes) < 2 || len(classes) > MaxClasses {
		return nil, fmt.Errorf("spec: target %q: %d classes declared (want 2 to %d)", target, len(classes), MaxClasses)
	}
	seen := map[string]bool{}
	for _, c := range classes {
		if c == "" {
			return nil, fmt.Errorf("spec: target %q: an empty class name", target)
		}
		if seen[c] {
			return nil, fmt.Errorf("spec: target %q: class %q listed twice", target, c)
		}
		seen[c] = true
	}
	for _, f := range features {
		if f.Name == target {
			return nil, fmt.Errorf("spec: feature %q: the target cannot also be a feature", f.Name)
		}
	}
	yes := true
	feats := append([]schema.Feature(nil), features...)
	train := &schema.Schema{Target: schema.Target{Name: noTarget}, Intercept: &yes,
		Features: append(append([]schema.Feature(nil), feats...), schema.Feature{Name: target, Categories: append([]string(nil), classes...)})}
	if err := train.Validate(); err != nil {
		return nil, err
	}
	query := &schema.Schema{Target: schema.Target{Name: noTarget}, Intercept: &yes, Features: feats}
	if err := query.Validate(); err != nil {
		return nil, err
	}
	s := &Spec{target: target, classes: append([]string(nil), classes...), multiclass: true, features: feats, train: train, query: query}
	s.names = query.FeatureNames()[1:]
	return s, s.checkWidth()
}

func specFromBinary(sc *schema.Schema) (*Spec, error) {
	t := sc.Target
	if !t.Binary() {
		return nil, fmt.Errorf("spec: target %q has a range (a continuous target); for classification declare its classes: \"classes\": [\"a\", \"b\", ...]", t.Name)
	}
	var classes []string
	switch {
	case t.Positive != "":
		neg := t.Negative
		if neg == "" {
			neg = "not " + t.Positive
		}
		classes = []string{neg, t.Positive}
	case t.Above != nil:
		a := strconv.FormatFloat(*t.Above, 'g', -1, 64)
		classes = []string{"≤ " + a, "> " + a}
	default:
		classes = []string{"0", "1"}
	}
	yes := true
	train := *sc
	train.Intercept = &yes
	query := train
	query.Target = schema.Target{Name: noTarget}
	s := &Spec{target: t.Name, classes: classes, features: sc.Features, train: &train, query: &query}
	s.names = query.FeatureNames()[1:]
	return s, s.checkWidth()
}

func (s *Spec) checkWidth() error {
	if len(s.names) == 0 {
		return errors.New("spec: the features encode to no columns (a categorical feature with one category carries no information)")
	}
	if len(s.names) > MaxFeatures {
		return fmt.Errorf("spec: %d encoded features, more than %d", len(s.names), MaxFeatures)
	}
	return nil
}

// MarshalJSON writes the spec in the form ParseSpec reads: the schema file
// for a binary target, {"target": {"name", "classes"}, "features"} for a
// multiclass one.
func (s *Spec) MarshalJSON() ([]byte, error) {
	if !s.multiclass {
		sc := *s.train
		sc.Intercept = nil
		return json.Marshal(&sc)
	}
	var sj specJSON
	sj.Target.Name, sj.Target.Classes, sj.Features = s.target, s.classes, s.features
	return json.Marshal(&sj)
}

// UnmarshalJSON is ParseSpec.
func (s *Spec) UnmarshalJSON(data []byte) error {
	p, err := ParseSpec(data)
	if err != nil {
		return err
	}
	*s = *p
	return nil
}

// Fingerprint returns a hex SHA-256 of the spec's JSON form: parties that
// must encode rows alike (a DPPP client and its teachers) can compare it.
func (s *Spec) Fingerprint() string {
	b, err := s.MarshalJSON()
	if err != nil {
		return ""
	}
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// Target returns the name of the label column.
func (s *Spec) Target() string { return s.target }

// ClassNames returns the declared classes; class k is ClassNames()[k].
func (s *Spec) ClassNames() []string { return append([]string(nil), s.classes...) }

// Classes returns the number of classes.
func (s *Spec) Classes() int { return len(s.classes) }

// Features returns the length of an encoded feature vector.
func (s *Spec) Features() int { return len(s.names) }

// FeatureNames names the encoded feature columns ("name" for a numeric
// feature, "name=category" for an indicator).
func (s *Spec) FeatureNames() []string { return append([]string(nil), s.names...) }

// decode turns one row encoded by the internal schema (intercept first,
// everything scaled by the intercept's value) into features in dst and,
// for training rows, the class index.
func (s *Spec) decode(row []float64, dst []float64, training bool) (int, error) {
	scale := row[0]
	d := len(s.names)
	for j := range d {
		v := row[1+j] / scale
		// Undo the scaling's rounding: |u| ≤ 1 and indicators are 0 or 1.
		dst[j] = math.Max(-1, math.Min(1, v))
	}
	if !training {
		return 0, nil
	}
	if !s.multiclass {
		return int(row[len(row)-1]), nil
	}
	// The label's indicators follow the features; all zero is class 0.
	y := 0
	for c := 1; c < len(s.classes); c++ {
		if row[1+d+c-1] != 0 {
			y = c
		}
	}
	return y, nil
}

// Load reads a labelled table (CSV, CSV.gz or Parquet; see package
// dataset) into Data. A label that is not a declared class stops the read
// with the file, line and column.
func (s *Spec) Load(ctx context.Context, path string, opt dataset.Options) (*Data, dataset.Summary, error) {
	opt.TargetOptional = s.multiclass // the internal target is never present
	t, sum, err := dataset.Load(ctx, path, s.train, opt)
	if err != nil {
		return nil, sum, err
	}
	d, err := s.fromTable(t, true)
	return d, sum, err
}

// LoadReader is Load for a stream of CSV bytes; name labels errors.
func (s *Spec) LoadReader(ctx context.Context, r io.Reader, name string, opt dataset.Options) (*Data, dataset.Summary, error) {
	opt.TargetOptional = s.multiclass
	t, sum, err := dataset.LoadReader(ctx, r, name, s.train, opt)
	if err != nil {
		return nil, sum, err
	}
	d, err := s.fromTable(t, true)
	return d, sum, err
}

// LoadFeatures reads the feature columns of a table (the label column may
// be absent): the query rows a DPPP client sends. The returned Data has
// every label 0.
func (s *Spec) LoadFeatures(ctx context.Context, path string, opt dataset.Options) (*Data, dataset.Summary, error) {
	opt.TargetOptional = true
	t, sum, err := dataset.Load(ctx, path, s.query, opt)
	if err != nil {
		return nil, sum, err
	}
	d, err := s.fromTable(t, false)
	return d, sum, err
}

func (s *Spec) fromTable(t *dataset.Table, training bool) (*Data, error) {
	n := t.N()
	d := &Data{D: s.Features(), Classes: s.Classes(), X: make([]float64, n*s.Features()), Y: make([]int, n)}
	for i := range n {
		y, err := s.decode(t.Row(i), d.Row(i), training)
		if err != nil {
			return nil, err
		}
		d.Y[i] = y
	}
	return d, d.Validate()
}

// EncodeRecord encodes one raw record (fields in header order) into
// features, for a caller that parses rows itself. It builds a schema
// encoder per call: use Load or LoadFeatures for tables.
func (s *Spec) EncodeRecord(header []string, fields []string) ([]float64, error) {
	enc, err := s.query.NewEncoder(header, schema.EncoderOptions{TargetOptional: true})
	if err != nil {
		return nil, err
	}
	bs := make([][]byte, len(fields))
	for i, f := range fields {
		bs[i] = []byte(f)
	}
	row := make([]float64, enc.Width())
	if err := enc.Encode(bs, row); err != nil {
		return nil, err
	}
	x := make([]float64, s.Features())
	_, err = s.decode(row, x, false)
	return x, err
}
