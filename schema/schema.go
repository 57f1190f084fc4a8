// Package schema holds the public facts about a table that a differentially
// private mechanism may use (feature ranges, category lists, the target's
// range or positive label) and encodes raw records into bounded vectors.
//
// Nothing here is derived from the private data. Every bound is declared by
// the user in a schema file, and every value is clipped to its declared
// bound, so the sensitivities the mechanisms compute hold for any dataset.
//
// # Schema file
//
// A schema is JSON:
//
//	{"target": {"name": "wage", "transform": "log", "range": [4, 9]},
//	 "features": [
//	   {"name": "education", "range": [0, 20]},
//	   {"name": "ethnicity", "categories": ["cauc", "afam"]}
//	 ]}
//
// Targets: a continuous target has a "range" (after its optional
// "transform"); a binary target has a "positive" label (and optionally a
// "negative" one), or a public threshold "above" on a numeric column (1 when
// the value exceeds it), or none of these, in which case the column must
// hold 0 or 1.
//
// Features: a numeric feature has a "range" [lo, hi] (after its optional
// "transform": "log", "log1p" or "sqrt"); a categorical feature has a
// "categories" list. "intercept" (default true) adds a constant feature.
// Unknown keys are rejected, so a typo cannot silently drop a bound.
//
// # Encoding (the public rule that puts rows in the unit ball)
//
// Let B = (number of numeric features) + (number of categorical features with
// at least two categories) + (1 if intercept). Each record becomes
//
//	x = u / √B,
//
// where u holds: 1 for the intercept; for each numeric feature its value
// clipped to [lo, hi] and mapped affinely onto [−1, 1]; for each categorical
// feature with c categories, c−1 indicator columns (the first listed category
// is the reference level and encodes as all zeros). Each group contributes at
// most 1 to ‖u‖², so ‖x‖₂ ≤ 1 for every possible record: this is the bound
// the sensitivities of the Functional Mechanism family assume. It holds
// exactly for the float64 values written, not only in real arithmetic: 1/√B
// is rounded down (the largest float64 s with B·s² ≤ 1), and x = s·u
// rounds to at most s in each group (see docs/numerics.md).
//
// A continuous target is clipped to its range and mapped affinely onto
// [−1, 1]; a binary target becomes 0 or 1. A value that is not a number, or
// is ±Inf, is an error. A category that is not in the declared list is an
// error by default; with "unknown": "reference" it is encoded as the
// reference level (all zeros), which keeps ‖x‖ ≤ 1.
//
// # Missing values
//
// A field is missing when it is one of MissingTokens ("", NA, na, N/A, n/a,
// NaN, nan, NULL, null) after trimming blanks, unless a categorical feature
// declares that text as a category. Each column's "missing" policy decides:
//
//   - "error" (default): the record is an error (a *FieldError wrapping
//     ErrMissingValue).
//   - "impute" (features only): the declared public "impute" value is
//     encoded in its place, clipped like any value. The value is public, so
//     every encoded row still lies in the unit ball and no sensitivity
//     changes.
//   - "drop": the record is dropped (a *FieldError wrapping ErrDropped).
//     Dropping makes the number of rows data-dependent, which bounded DP
//     (N public) does not cover; package dataset therefore keeps a dropped
//     record as an all-zero row when fitting (dataset.Options.KeepDropped).
//     A zero row (x = 0, y = 0) lies in the domain every sensitivity is
//     derived for (‖x‖ ≤ 1, y ∈ [−1, 1] or {0, 1}) and adds nothing to Σz,
//     Σzzᵀ or any sum of loss gradients. So N stays the number of records
//     read, replacing one record changes one encoded row as before, and
//     every guarantee holds unchanged; without noise, the FM-family and
//     non-private fits equal those of the kept records, while mechanisms
//     that average a loss over N and add a regulariser (objpert, noisygd)
//     weigh it as for N records. The number dropped is data-dependent and
//     never released.
//
// Counts (EncodeCounted) tally per column what was clipped, imputed,
// dropped or read as the reference level; they are for the data holder's
// console only (PRIVACY-NOTES item 23).
package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// The missing-value policies of a column ("missing" in the schema file).
const (
	MissingError  = "error"  // a missing value is an error (default)
	MissingDrop   = "drop"   // the record is dropped (see the package doc)
	MissingImpute = "impute" // the declared public value "impute" is used
)

// MissingTokens are the field texts that mean "missing value" (after
// trimming spaces and tabs), as R, pandas and spreadsheets write them; a
// Parquet null reaches the encoder as "". A categorical feature that
// declares one of them as a category reads it as that category.
var MissingTokens = []string{"", "NA", "na", "N/A", "n/a", "NaN", "nan", "NULL", "null"}

// Version is the schema format version written into models.
const Version = 1

// Transform is a public, monotone map applied to a numeric value before
// clipping.
type Transform string

// The supported transforms. The declared range is on the transformed scale.
const (
	TransformNone  Transform = ""
	TransformLog   Transform = "log"
	TransformLog1p Transform = "log1p"
	TransformSqrt  Transform = "sqrt"
)

// apply returns the transformed value or an error for a value outside the
// transform's domain.
func (t Transform) apply(v float64) (float64, error) {
	switch t {
	case TransformNone:
		return v, nil
	case TransformLog:
		if v <= 0 {
			return 0, fmt.Errorf("log of non-positive value %v", v)
		}
		return math.Log(v), nil
	case TransformLog1p:
		if v <= -1 {
			return 0, fmt.Errorf("log1p of value %v ≤ −1", v)
		}
		return math.Log1p(v), nil
	case TransformSqrt:
		if v < 0 {
			return 0, fmt.Errorf("sqrt of negative value %v", v)
		}
		return math.Sqrt(v), nil
	}
	return 0, fmt.Errorf("unknown transform %q", string(t))
}

// Invert maps a transformed value back to the original units.
func (t Transform) Invert(v float64) float64 {
	switch t {
	case TransformLog:
		return math.Exp(v)
	case TransformLog1p:
		return math.Expm1(v)
	case TransformSqrt:
		return v * v
	}
	return v
}

func (t Transform) valid() bool {
	switch t {
	case TransformNone, TransformLog, TransformLog1p, TransformSqrt:
		return true
	}
	return false
}

// Target declares the column to predict.
type Target struct {
	Name      string      `json:"name"`
	Transform Transform   `json:"transform,omitempty"`
	Range     *[2]float64 `json:"range,omitempty"`
	Positive  string      `json:"positive,omitempty"`
	Negative  string      `json:"negative,omitempty"`
	// Above makes a binary target from a numeric column: 1 when the value
	// is > Above (a public threshold), else 0.
	Above *float64 `json:"above,omitempty"`
	// Missing is the policy for a missing target: "error" (default) or
	// "drop". A target is never imputed.
	Missing string `json:"missing,omitempty"`
	// Todo is a placeholder written by 'dplearn schema init': a schema
	// that still holds one is refused until the user declares the bounds
	// and deletes it.
	Todo string `json:"todo,omitempty"`
	// Estimated notes that the bounds were estimated with differential
	// privacy by 'dplearn schema suggest' (and at what cost); informative.
	Estimated string `json:"estimated,omitempty"`
}

// Binary reports whether the target is a 0/1 label (logistic regression).
func (t Target) Binary() bool { return t.Range == nil }

// Feature declares one input column: numeric (Range) or categorical
// (Categories).
type Feature struct {
	Name       string      `json:"name"`
	Transform  Transform   `json:"transform,omitempty"`
	Range      *[2]float64 `json:"range,omitempty"`
	Categories []string    `json:"categories,omitempty"`
	// Unknown says what an undeclared category becomes: "error" (default) or
	// "reference" (the first category, all zeros).
	Unknown string `json:"unknown,omitempty"`
	// Missing is the policy for a missing value (see MissingTokens):
	// "error" (default), "drop" (the whole record), or "impute" (the
	// public value Impute).
	Missing string `json:"missing,omitempty"`
	// Impute is the declared public value that replaces a missing one when
	// Missing is "impute": a JSON number for a numeric feature (in the
	// column's own units, before its transform; it is clipped like any
	// value), a string naming a declared category for a categorical one.
	Impute json.RawMessage `json:"impute,omitempty"`
	// Todo is a placeholder written by 'dplearn schema init' (see Target).
	Todo string `json:"todo,omitempty"`
	// Estimated: see Target.Estimated.
	Estimated string `json:"estimated,omitempty"`
}

// Categorical reports whether the feature is one-hot encoded.
func (f Feature) Categorical() bool { return f.Categories != nil }

// Schema is the parsed, validated declaration of a table's public bounds.
type Schema struct {
	Target   Target    `json:"target"`
	Features []Feature `json:"features"`
	// Intercept adds a constant feature; nil means true.
	Intercept *bool `json:"intercept,omitempty"`
}

// HasIntercept reports whether a constant feature is added.
func (s *Schema) HasIntercept() bool { return s.Intercept == nil || *s.Intercept }

// Load reads and validates a schema file.
func Load(path string) (*Schema, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	s, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}

// Parse decodes and validates a JSON schema. Syntax errors name the line and
// column; unknown keys are rejected.
func Parse(data []byte) (*Schema, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var s Schema
	if err := dec.Decode(&s); err != nil {
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line, col := position(data, se.Offset)
			return nil, fmt.Errorf("schema: line %d, column %d: %w", line, col, err)
		case errors.As(err, &te):
			line, col := position(data, te.Offset)
			return nil, fmt.Errorf("schema: line %d, column %d: key %q: %s", line, col, te.Field, typeErrorWords(te))
		case errors.Is(err, io.EOF):
			return nil, errors.New("schema: empty document")
		}
		if key, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
			if key == `"format"` || key == `"coefficients"` {
				return nil, errors.New(`schema: this is a model file written by 'dplearn fit', not a schema (the model's schema is under its "schema" key)`)
			}
			return nil, fmt.Errorf("schema: unknown key %s (target keys: name, range, transform, positive, negative, above, missing, estimated; feature keys: name, range, transform, categories, unknown, missing, impute, estimated; top level: target, features, intercept)", key)
		}
		return nil, fmt.Errorf("schema: %w", err)
	}
	if dec.More() {
		return nil, errors.New("schema: trailing data after the JSON object")
	}
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// quoteList quotes names, at most 8 of them.
func quoteList(names []string) string {
	var q []string
	for i, n := range names {
		if i == 8 {
			q = append(q, fmt.Sprintf("and %d more", len(names)-8))
			break
		}
		q = append(q, fmt.Sprintf("%q", n))
	}
	return strings.Join(q, ", ")
}

// typeErrorWords says what a JSON type mismatch means for a schema key.
func typeErrorWords(te *json.UnmarshalTypeError) string {
	want := te.Type.String()
	switch want {
	case "string", "schema.Transform":
		want = "a string in quotes"
	case "float64":
		want = "a number"
	case "*[2]float64", "[2]float64":
		want = "a list of two numbers [lo, hi]"
	case "[]string":
		want = "a list of strings"
	case "bool", "*bool":
		want = "true or false"
	case "[]schema.Feature":
		want = "a list of feature objects"
	}
	msg := fmt.Sprintf("got a JSON %s, want %s", te.Value, want)
	if strings.HasSuffix(te.Field, "categories") {
		msg += ` (category levels are text, matched against the column's text: write ["1", "2"], not [1, 2])`
	}
	return msg
}

// position converts a byte offset into a 1-based line and column.
func position(data []byte, off int64) (line, col int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	line, col = 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line++
			col = 1
		} else {
			col++
		}
	}
	return line, col
}

func checkRange(what string, r *[2]float64) error {
	lo, hi := r[0], r[1]
	if math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) {
		return fmt.Errorf("%s: range [%v, %v] must be finite", what, lo, hi)
	}
	if !(lo < hi) {
		return fmt.Errorf("%s: range [%v, %v] must have lo < hi", what, lo, hi)
	}
	return nil
}

// ErrPlaceholder is wrapped by Validate's error for a schema that still
// holds a "todo" placeholder of 'dplearn schema init'.
var ErrPlaceholder = errors.New(`placeholder from 'dplearn schema init' not filled in`)

// Placeholders lists the columns whose "todo" placeholder remains.
func (s *Schema) Placeholders() []string {
	var p []string
	if s.Target.Todo != "" {
		p = append(p, s.Target.Name)
	}
	for _, f := range s.Features {
		if f.Todo != "" {
			p = append(p, f.Name)
		}
	}
	return p
}

// Validate checks that every declaration is complete and consistent.
func (s *Schema) Validate() error {
	if p := s.Placeholders(); len(p) > 0 {
		return fmt.Errorf("schema: %w for %s: declare each column's public bounds (\"range\" or \"categories\"), from public knowledge and never from the data, or delete the column, then delete its \"todo\" key", ErrPlaceholder, quoteList(p))
	}
	t := &s.Target
	if strings.TrimSpace(t.Name) == "" {
		return errors.New("schema: target: name is missing")
	}
	what := fmt.Sprintf("schema: target %q", t.Name)
	if !t.Transform.valid() {
		return fmt.Errorf("%s: unknown transform %q (want log, log1p or sqrt)", what, t.Transform)
	}
	if t.Range != nil {
		if t.Positive != "" || t.Negative != "" || t.Above != nil {
			return fmt.Errorf("%s: declare either a range (continuous) or positive/negative labels or a threshold \"above\" (binary), not both", what)
		}
		if err := checkRange(what, t.Range); err != nil {
			return err
		}
	} else {
		if t.Transform != TransformNone {
			return fmt.Errorf("%s: a binary target takes no transform", what)
		}
		if t.Above != nil {
			if t.Positive != "" || t.Negative != "" {
				return fmt.Errorf("%s: declare either labels or a threshold \"above\", not both", what)
			}
			if math.IsNaN(*t.Above) || math.IsInf(*t.Above, 0) {
				return fmt.Errorf("%s: threshold \"above\" must be finite, got %v", what, *t.Above)
			}
		}
		if t.Negative != "" && t.Positive == "" {
			return fmt.Errorf("%s: negative label %q given without a positive label", what, t.Negative)
		}
		if t.Positive != "" && t.Positive == t.Negative {
			return fmt.Errorf("%s: positive and negative labels are both %q", what, t.Positive)
		}
	}
	switch t.Missing {
	case "", MissingError, MissingDrop:
	case MissingImpute:
		return fmt.Errorf("%s: \"missing\": \"impute\" is for features; a missing target can only be \"error\" or \"drop\"", what)
	default:
		return fmt.Errorf("%s: \"missing\": %q (want \"error\" or \"drop\")", what, t.Missing)
	}
	if len(s.Features) == 0 {
		return errors.New("schema: no features declared")
	}
	seen := map[string]bool{t.Name: true}
	for i := range s.Features {
		f := &s.Features[i]
		if strings.TrimSpace(f.Name) == "" {
			return fmt.Errorf("schema: features[%d]: name is missing", i)
		}
		what := fmt.Sprintf("schema: feature %q", f.Name)
		if seen[f.Name] {
			if f.Name == t.Name {
				return fmt.Errorf("%s: the target cannot also be a feature", what)
			}
			return fmt.Errorf("%s: declared twice", what)
		}
		seen[f.Name] = true
		switch {
		case f.Range != nil && f.Categories != nil:
			return fmt.Errorf("%s: declare either a range (numeric) or categories, not both", what)
		case f.Range != nil:
			if !f.Transform.valid() {
				return fmt.Errorf("%s: unknown transform %q (want log, log1p or sqrt)", what, f.Transform)
			}
			if err := checkRange(what, f.Range); err != nil {
				return err
			}
			if f.Unknown != "" {
				return fmt.Errorf("%s: \"unknown\" applies to categorical features only", what)
			}
		case f.Categories != nil:
			if f.Transform != TransformNone {
				return fmt.Errorf("%s: a categorical feature takes no transform", what)
			}
			if len(f.Categories) == 0 {
				return fmt.Errorf("%s: categories must not be empty", what)
			}
			cs := map[string]bool{}
			for _, c := range f.Categories {
				if cs[c] {
					return fmt.Errorf("%s: category %q listed twice", what, c)
				}
				cs[c] = true
			}
			switch f.Unknown {
			case "", "error", "reference":
			default:
				return fmt.Errorf("%s: unknown = %q (want \"error\" or \"reference\")", what, f.Unknown)
			}
		default:
			return fmt.Errorf("%s: declare a public range [lo, hi] (numeric) or a categories list (categorical); bounds are never read off the data", what)
		}
		if err := f.validateMissing(what); err != nil {
			return err
		}
	}
	return nil
}

// validateMissing checks the feature's missing-value policy and its
// imputed value.
func (f *Feature) validateMissing(what string) error {
	switch f.Missing {
	case "", MissingError, MissingDrop:
		if len(f.Impute) > 0 {
			return fmt.Errorf("%s: \"impute\" is given but \"missing\" is %q; set \"missing\": \"impute\" to use it", what, f.missingPolicy())
		}
		return nil
	case MissingImpute:
	default:
		return fmt.Errorf("%s: \"missing\": %q (want \"error\", \"drop\" or \"impute\")", what, f.Missing)
	}
	if len(f.Impute) == 0 {
		return fmt.Errorf("%s: \"missing\": \"impute\" needs a declared public \"impute\" value", what)
	}
	_, err := f.ImputeText()
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (f *Feature) missingPolicy() string {
	if f.Missing == "" {
		return MissingError
	}
	return f.Missing
}

// ImputeText returns the declared imputed value as the field text it
// stands for, after checking it: a finite number in the transform's domain
// for a numeric feature, a declared category for a categorical one. It is
// "" when no value is declared.
func (f *Feature) ImputeText() (string, error) {
	if len(f.Impute) == 0 {
		return "", nil
	}
	if f.Categorical() {
		var c string
		if err := json.Unmarshal(f.Impute, &c); err != nil {
			return "", fmt.Errorf("\"impute\": %s is not a string; a categorical feature imputes one of its declared categories, in quotes", f.Impute)
		}
		for _, k := range f.Categories {
			if k == c {
				return c, nil
			}
		}
		return "", fmt.Errorf("\"impute\": %q is not one of the declared categories", c)
	}
	var v float64
	if err := json.Unmarshal(f.Impute, &v); err != nil {
		return "", fmt.Errorf("\"impute\": %s is not a number; a numeric feature imputes a number in its own units", f.Impute)
	}
	if _, err := f.Transform.apply(v); err != nil {
		return "", fmt.Errorf("\"impute\": %v: %w", v, err)
	}
	return strings.TrimSpace(string(f.Impute)), nil
}

// Bound returns B, the squared-norm budget of the encoding: the number of
// groups that each contribute at most 1 to ‖u‖² (see the package doc).
func (s *Schema) Bound() int {
	b := 0
	if s.HasIntercept() {
		b++
	}
	for _, f := range s.Features {
		if !f.Categorical() || len(f.Categories) >= 2 {
			b++
		}
	}
	return b
}

// FeatureNames returns the names of the encoded feature columns, in order:
// "(intercept)", numeric names, and "name=category" for indicator columns.
func (s *Schema) FeatureNames() []string {
	var names []string
	if s.HasIntercept() {
		names = append(names, "(intercept)")
	}
	for _, f := range s.Features {
		if f.Categorical() {
			for _, c := range f.Categories[1:] {
				names = append(names, f.Name+"="+c)
			}
			continue
		}
		names = append(names, f.Name)
	}
	return names
}

// Dim returns the number of encoded feature columns (without the target).
func (s *Schema) Dim() int { return len(s.FeatureNames()) }

// DecodeTarget maps an encoded continuous target in [−1, 1] back to the
// original units (undoing the affine map and the transform). For a binary
// target it returns y unchanged.
func (s *Schema) DecodeTarget(y float64) float64 {
	t := s.Target
	if t.Binary() {
		return y
	}
	lo, hi := t.Range[0], t.Range[1]
	return t.Transform.Invert(lo + (y+1)/2*(hi-lo))
}

// TargetScale returns the transformed-scale width of one encoded target unit:
// an error of e on the [−1, 1] scale is an error of e·TargetScale() on the
// transformed scale.
func (s *Schema) TargetScale() float64 {
	if s.Target.Binary() {
		return 1
	}
	return (s.Target.Range[1] - s.Target.Range[0]) / 2
}
