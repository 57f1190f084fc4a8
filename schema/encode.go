package schema

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"github.com/dplearn/dplearn/internal/decimal"
)

// EncoderOptions adjusts how records are matched to the schema.
type EncoderOptions struct {
	// TargetOptional allows the target column to be absent (prediction).
	// The target slot of each encoded row is then 0.
	TargetOptional bool
	// IgnoreTarget never reads the target column, present or not (its slot
	// is 0): prediction scores rows whatever their label holds.
	IgnoreTarget bool
}

// FieldError reports a value that cannot be encoded. Readers wrap it with the
// file and line.
type FieldError struct {
	Column string // column name
	Index  int    // 0-based field index in the record
	Value  string // the offending value (truncated)
	Err    error
	slot   int // the column's position in Counts
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("column %q: value %q: %v", e.Column, e.Value, e.Err)
}

func (e *FieldError) Unwrap() error { return e.Err }

// Errors that FieldError wraps; test with errors.Is.
var (
	ErrMissingValue = errors.New("missing value")
	// ErrDropped marks a record dropped for a missing value in a column
	// whose policy is "drop"; it is not a fault of the input.
	ErrDropped         = errors.New(`missing value: record dropped ("missing": "drop")`)
	ErrNotNumber       = errors.New("not a number")
	ErrNotFinite       = errors.New("not finite (NaN or Inf)")
	ErrUnknownCategory = errors.New("category not in the schema's declared list")
	ErrBadLabel        = errors.New("label is neither the declared positive nor negative label")
)

// MissingColumnsError lists every schema column that the header lacks.
type MissingColumnsError struct{ Columns []string }

func (e *MissingColumnsError) Error() string {
	return fmt.Sprintf("missing column(s) %s declared in the schema", strings.Join(quoteAll(e.Columns), ", "))
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

type column struct {
	name      string
	index     int // field index in the record
	transform Transform
	lo, hi    float64
	cats      map[string]int // category -> indicator offset+1 (0: reference)
	width     int            // encoded columns
	unknownOK bool
	missing   string // MissingError, MissingDrop or MissingImpute
	impute    []byte // the imputed field text (MissingImpute)
	slot      int    // position in Counts: schema feature index, or len(features) for the target
}

// Encoder turns records into bounded rows (see the package doc for the rule).
// It is safe for concurrent use: it holds no mutable state.
type Encoder struct {
	schema    *Schema
	features  []column
	target    column
	hasTarget bool
	intercept bool
	scale     float64 // 1/√B rounded down: unitScale(B)
	width     int     // encoded features + 1 (target)
}

// NewEncoder matches the schema to a header row. It returns a
// *MissingColumnsError naming every declared column the header lacks.
func (s *Schema) NewEncoder(header []string, opt EncoderOptions) (*Encoder, error) {
	idx := make(map[string]int, len(header))
	for i, h := range header {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if _, dup := idx[h]; dup {
			return nil, fmt.Errorf("header: column %q appears twice", h)
		}
		idx[h] = i
	}
	e := &Encoder{schema: s, intercept: s.HasIntercept(), scale: unitScale(s.Bound())}
	var missing []string
	for _, f := range s.Features {
		i, ok := idx[f.Name]
		if !ok {
			missing = append(missing, f.Name)
			continue
		}
		c := column{name: f.Name, index: i, transform: f.Transform, missing: f.missingPolicy(), slot: len(e.features) + len(missing)}
		if c.missing == MissingImpute {
			text, err := f.ImputeText()
			if err != nil {
				return nil, fmt.Errorf("schema: feature %q: %w", f.Name, err)
			}
			c.impute = []byte(text)
		}
		if f.Categorical() {
			c.cats = make(map[string]int, len(f.Categories))
			for k, cat := range f.Categories {
				c.cats[cat] = k
			}
			c.width = len(f.Categories) - 1
			c.unknownOK = f.Unknown == "reference"
		} else {
			c.lo, c.hi = f.Range[0], f.Range[1]
			c.width = 1
		}
		e.features = append(e.features, c)
	}
	t := s.Target
	if opt.IgnoreTarget {
		// The target slot stays 0.
	} else if i, ok := idx[t.Name]; ok {
		e.hasTarget = true
		e.target = column{name: t.Name, index: i, transform: t.Transform, missing: t.Missing, slot: len(s.Features)}
		if e.target.missing == "" {
			e.target.missing = MissingError
		}
		if t.Range != nil {
			e.target.lo, e.target.hi = t.Range[0], t.Range[1]
		}
	} else if !opt.TargetOptional {
		missing = append(missing, t.Name)
	}
	if len(missing) > 0 {
		return nil, &MissingColumnsError{Columns: missing}
	}
	e.width = s.Dim() + 1
	return e, nil
}

// Schema returns the schema the encoder was built from.
func (e *Encoder) Schema() *Schema { return e.schema }

// Width is the length of an encoded row: the features, then the target.
func (e *Encoder) Width() int { return e.width }

// HasTarget reports whether the header holds the target column.
func (e *Encoder) HasTarget() bool { return e.hasTarget }

// Counts tallies, per schema column, what the encoder did to the values of
// the records it encoded: slot i is schema feature i, the last slot the
// target. These counts depend on the private data: show them to the data
// holder only, never put them in a release (PRIVACY-NOTES item 23).
type Counts struct {
	Columns []string
	Clipped []int64 // numeric values outside the declared range, clipped to it
	Imputed []int64 // missing values replaced by the declared "impute" value
	Dropped []int64 // records dropped for a missing value in this column ("drop")
	Unknown []int64 // undeclared categories read as the reference level
	flags   []uint8 // events of the record being encoded
}

const (
	evClipped uint8 = 1 << iota
	evImputed
	evUnknown
)

// NewCounts returns zero counts for this encoder's schema.
func (e *Encoder) NewCounts() *Counts {
	var names []string
	for _, f := range e.schema.Features {
		names = append(names, f.Name)
	}
	names = append(names, e.schema.Target.Name)
	n := len(names)
	return &Counts{Columns: names, Clipped: make([]int64, n), Imputed: make([]int64, n),
		Dropped: make([]int64, n), Unknown: make([]int64, n), flags: make([]uint8, n)}
}

// Add adds o's counts (of the same schema) to c.
func (c *Counts) Add(o *Counts) {
	for i := range c.Clipped {
		c.Clipped[i] += o.Clipped[i]
		c.Imputed[i] += o.Imputed[i]
		c.Dropped[i] += o.Dropped[i]
		c.Unknown[i] += o.Unknown[i]
	}
}

// Reset zeroes the counts.
func (c *Counts) Reset() {
	for i := range c.Clipped {
		c.Clipped[i], c.Imputed[i], c.Dropped[i], c.Unknown[i] = 0, 0, 0, 0
	}
}

// Encode clips and encodes one record into dst (length Width()). fields holds
// every field of the record in header order. On bad input it returns a
// *FieldError and leaves dst in an unspecified state; a record dropped by a
// "missing": "drop" policy returns a *FieldError wrapping ErrDropped.
func (e *Encoder) Encode(fields [][]byte, dst []float64) error {
	return e.EncodeCounted(fields, dst, nil)
}

// EncodeCounted is Encode that also tallies, into counts (from NewCounts;
// nil for none), the values clipped, imputed or read as the reference level
// in a record that encodes, and the column that dropped a dropped record.
func (e *Encoder) EncodeCounted(fields [][]byte, dst []float64, counts *Counts) error {
	return e.encodeCounted(&record{fields: fields}, dst, counts)
}

// EncodeNumbers is Encode for a record from a columnar file: where isNum[i]
// is true, field i is the number nums[i] (fields[i] is ignored); elsewhere
// it is the text fields[i]. A number takes the same path as its exact text
// would (Encode parses text to the float64 this receives): the finiteness
// check, the transform, the clipping and the mapping, so the encoded row is
// bit-identical, with no text formatted or parsed. A NaN is a missing value
// (as the text "NaN" is) and goes through the column's "missing" policy. A
// categorical column or a labelled binary target given a number matches the
// number's shortest decimal text.
func (e *Encoder) EncodeNumbers(fields [][]byte, nums []float64, isNum []bool, dst []float64) error {
	return e.EncodeNumbersCounted(fields, nums, isNum, dst, nil)
}

// EncodeNumbersCounted is EncodeNumbers with the tallies of EncodeCounted.
func (e *Encoder) EncodeNumbersCounted(fields [][]byte, nums []float64, isNum []bool, dst []float64, counts *Counts) error {
	if len(nums) != len(fields) || len(isNum) != len(fields) {
		return fmt.Errorf("schema: encode: %d fields, %d numbers, %d flags", len(fields), len(nums), len(isNum))
	}
	return e.encodeCounted(&record{fields: fields, nums: nums, isNum: isNum}, dst, counts)
}

// record is one input record: text fields, some of which may be given as
// numbers instead (columnar files).
type record struct {
	fields [][]byte
	nums   []float64
	isNum  []bool
	text   [][]byte // numbers formatted on demand (categorical columns)
}

// num returns field i as a number when it was given as one and is not NaN
// (a NaN takes the text path, where it is a missing value).
func (r *record) num(i int) (float64, bool) {
	if r.isNum == nil || !r.isNum[i] || math.IsNaN(r.nums[i]) {
		return 0, false
	}
	return r.nums[i], true
}

// textOf returns field i as trimmed text, formatting a number as its
// shortest decimal text (as a CSV holds it).
func (r *record) textOf(i int) []byte {
	if r.isNum == nil || !r.isNum[i] {
		return trimSpace(r.fields[i])
	}
	if r.text == nil {
		r.text = make([][]byte, len(r.fields))
	}
	if r.text[i] == nil {
		r.text[i] = strconv.AppendFloat(nil, r.nums[i], 'g', -1, 64)
	}
	return r.text[i]
}

func (e *Encoder) encodeCounted(rec *record, dst []float64, counts *Counts) error {
	var flags []uint8
	if counts != nil {
		flags = counts.flags
		clear(flags)
	}
	err := e.encode(rec, dst, flags)
	if counts == nil {
		return err
	}
	if err != nil {
		var fe *FieldError
		if errors.Is(err, ErrDropped) && errors.As(err, &fe) {
			counts.Dropped[fe.slot]++
		}
		return err
	}
	for i, f := range flags {
		if f&evClipped != 0 {
			counts.Clipped[i]++
		}
		if f&evImputed != 0 {
			counts.Imputed[i]++
		}
		if f&evUnknown != 0 {
			counts.Unknown[i]++
		}
	}
	return nil
}

// mark records an event of the current record for column c.
func mark(flags []uint8, c *column, ev uint8) {
	if flags != nil {
		flags[c.slot] |= ev
	}
}

// missingValue applies the column's policy to a missing field: it returns
// the text to encode instead (imputation) or the error to return.
func (c *column) missingValue(raw []byte, flags []uint8) ([]byte, error) {
	switch c.missing {
	case MissingDrop:
		return nil, c.fieldErr(raw, ErrDropped)
	case MissingImpute:
		mark(flags, c, evImputed)
		return c.impute, nil
	}
	return nil, c.fieldErr(raw, fmt.Errorf(`%w (the column's "missing" policy is "error"; the schema may declare "missing": "drop" or "impute")`, ErrMissingValue))
}

func (e *Encoder) encode(rec *record, dst []float64, flags []uint8) error {
	fields := rec.fields
	if len(dst) != e.width {
		return fmt.Errorf("schema: encode: dst has length %d, want %d", len(dst), e.width)
	}
	k := 0
	if e.intercept {
		dst[0] = e.scale
		k = 1
	}
	for i := range e.features {
		c := &e.features[i]
		if c.index >= len(fields) {
			return fmt.Errorf("record has %d fields, column %q is field %d", len(fields), c.name, c.index+1)
		}
		if c.cats == nil {
			if v, ok := rec.num(c.index); ok {
				tv, err := c.fromNumber(v)
				if err != nil {
					return err
				}
				if tv < c.lo || tv > c.hi {
					mark(flags, c, evClipped)
				}
				dst[k] = e.scale * affine(tv, c.lo, c.hi)
				k++
				continue
			}
		}
		raw := rec.textOf(c.index)
		if c.cats != nil {
			lvl, ok := c.cats[string(raw)]
			if !ok && isMissing(raw) {
				text, err := c.missingValue(raw, flags)
				if err != nil {
					return err
				}
				lvl, ok = c.cats[string(text)]
			}
			if !ok {
				if !c.unknownOK {
					return c.fieldErr(raw, ErrUnknownCategory)
				}
				mark(flags, c, evUnknown)
				lvl = 0
			}
			for j := 0; j < c.width; j++ {
				dst[k+j] = 0
			}
			if lvl > 0 {
				dst[k+lvl-1] = e.scale
			}
			k += c.width
			continue
		}
		if isMissing(raw) {
			text, err := c.missingValue(raw, flags)
			if err != nil {
				return err
			}
			raw = text
		}
		v, err := c.number(raw)
		if err != nil {
			return err
		}
		if v < c.lo || v > c.hi {
			mark(flags, c, evClipped)
		}
		dst[k] = e.scale * affine(v, c.lo, c.hi)
		k++
	}
	y := 0.0
	if e.hasTarget {
		c := &e.target
		if c.index >= len(fields) {
			return fmt.Errorf("record has %d fields, target %q is field %d", len(fields), c.name, c.index+1)
		}
		if v, ok := rec.num(c.index); ok && !e.schema.Target.Binary() {
			tv, err := c.fromNumber(v)
			if err != nil {
				return err
			}
			if tv < c.lo || tv > c.hi {
				mark(flags, c, evClipped)
			}
			dst[k] = affine(tv, c.lo, c.hi)
			return nil
		}
		raw := rec.textOf(c.index)
		if isMissing(raw) && (e.schema.Target.Positive == "" || string(raw) != e.schema.Target.Positive) {
			_, err := c.missingValue(raw, flags)
			return err
		}
		var err error
		if y, err = e.encodeTarget(raw, flags); err != nil {
			return err
		}
	}
	dst[k] = y
	return nil
}

func (e *Encoder) encodeTarget(raw []byte, flags []uint8) (float64, error) {
	c := &e.target
	t := e.schema.Target
	if !t.Binary() {
		v, err := c.number(raw)
		if err != nil {
			return 0, err
		}
		if v < c.lo || v > c.hi {
			mark(flags, c, evClipped)
		}
		return affine(v, c.lo, c.hi), nil
	}
	if t.Positive != "" {
		switch {
		case string(raw) == t.Positive:
			return 1, nil
		case t.Negative == "" || string(raw) == t.Negative:
			return 0, nil
		}
		return 0, c.fieldErr(raw, ErrBadLabel)
	}
	v, err := c.parse(raw)
	if err != nil {
		return 0, err
	}
	if t.Above != nil {
		if v > *t.Above {
			return 1, nil
		}
		return 0, nil
	}
	if v != 0 && v != 1 {
		return 0, c.fieldErr(raw, fmt.Errorf("binary target must be 0 or 1 (or declare \"positive\")"))
	}
	return v, nil
}

// UnitScale is the scale the encoder divides every feature vector by for a
// schema with bound B (Schema.Bound): 1/√B rounded down (see unitScale).
// Code that must reproduce encoded values exactly (the histogram baselines'
// public grid) uses it.
func UnitScale(b int) float64 { return unitScale(b) }

// unitScale returns the largest float64 s with B·s² ≤ 1, compared exactly:
// 1/√B rounded down. The float64 nearest to 1/√B is above it for about half
// of all B (B = 3, 6, 10, 25, …), and then a record with every group at its
// extreme would encode with ‖x‖² = B·s² > 1 by an ulp or two.
//
// With s = unitScale(B) the bound ‖x‖₂ ≤ 1 holds exactly for the float64
// values Encode writes (their exact squares summed in real arithmetic): each
// group has at most one non-zero coordinate; the intercept and an indicator
// are s itself, and a numeric value is fl(s·u) with |u| ≤ 1, so |fl(s·u)| ≤ s
// because rounding is monotone and s is a float64. Hence ‖x‖² ≤ B·s² ≤ 1.
// The target is in [−1, 1] exactly (affine clips after rounding).
func unitScale(b int) float64 {
	if b < 1 {
		return 1
	}
	fits := func(s float64) bool {
		r := new(big.Rat).SetFloat64(s)
		r.Mul(r, r).Mul(r, new(big.Rat).SetInt64(int64(b)))
		return r.Cmp(big.NewRat(1, 1)) <= 0
	}
	s := 1 / math.Sqrt(float64(b))
	for !fits(s) {
		s = math.Nextafter(s, 0)
	}
	for fits(math.Nextafter(s, math.Inf(1))) {
		s = math.Nextafter(s, math.Inf(1))
	}
	return s
}

// affine clips v to [lo, hi] and maps it onto [−1, 1].
func affine(v, lo, hi float64) float64 {
	if v < lo {
		v = lo
	} else if v > hi {
		v = hi
	}
	u := 2*(v-lo)/(hi-lo) - 1
	// Guard the rounding of the affine map: |u| ≤ 1 exactly.
	if u > 1 {
		u = 1
	} else if u < -1 {
		u = -1
	}
	return u
}

func (c *column) fieldErr(raw []byte, err error) *FieldError {
	v := string(raw)
	if len(v) > 40 {
		v = v[:40] + "…"
	}
	return &FieldError{Column: c.name, Index: c.index, Value: v, Err: err, slot: c.slot}
}

// parse reads a finite number.
func (c *column) parse(raw []byte) (float64, error) {
	if isMissing(raw) {
		return 0, c.fieldErr(raw, ErrMissingValue)
	}
	// decimal.Parse returns exactly strconv.ParseFloat's result, faster.
	v, err := decimal.Parse(raw)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && ne.Err == strconv.ErrRange {
			return 0, c.fieldErr(raw, ErrNotFinite)
		}
		return 0, c.fieldErr(raw, ErrNotNumber)
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, c.fieldErr(raw, ErrNotFinite)
	}
	return v, nil
}

// number reads a finite number and applies the column's transform.
func (c *column) number(raw []byte) (float64, error) {
	v, err := c.parse(raw)
	if err != nil {
		return 0, err
	}
	tv, err := c.transform.apply(v)
	if err != nil {
		return 0, c.fieldErr(raw, err)
	}
	return tv, nil
}

// isMissing reports whether a trimmed field is one of MissingTokens.
func isMissing(b []byte) bool {
	if len(b) > 4 {
		return false
	}
	for _, t := range MissingTokens {
		if string(b) == t {
			return true
		}
	}
	return false
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
