package classify

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dplearn/dplearn/idx"
)

// MaxClasses is the largest number of classes a model may have.
const MaxClasses = 1000

// MaxFeatures is the longest input row a model may take.
const MaxFeatures = 1 << 24

// Data is a labelled training or test set: N rows of D features, row-major
// in X, and a class index in [0, Classes) per row.
type Data struct {
	X       []float64 // N×D, row-major
	Y       []int     // N labels
	D       int       // features per row
	Classes int       // number of classes (public: declared, not counted)
}

// N returns the number of rows.
func (d *Data) N() int { return len(d.Y) }

// Row returns row i (a view, not a copy).
func (d *Data) Row(i int) []float64 { return d.X[i*d.D : (i+1)*d.D] }

// Subset returns a new Data holding copies of rows idx, in that order.
func (d *Data) Subset(idx []int) *Data {
	o := &Data{D: d.D, Classes: d.Classes, X: make([]float64, 0, len(idx)*d.D), Y: make([]int, 0, len(idx))}
	for _, i := range idx {
		o.X = append(o.X, d.Row(i)...)
		o.Y = append(o.Y, d.Y[i])
	}
	return o
}

// Errors returned (wrapped) by Validate and the training functions.
var (
	ErrNotFinite = errors.New("feature value is NaN or infinite")
	ErrLabel     = errors.New("label outside the declared classes")
	ErrWidth     = errors.New("wrong number of features")
	ErrEmpty     = errors.New("no rows")
)

// Validate checks shapes, that every value is finite and every label is a
// declared class.
func (d *Data) Validate() error {
	if d == nil {
		return fmt.Errorf("classify: nil data: %w", ErrEmpty)
	}
	if d.Classes < 2 || d.Classes > MaxClasses {
		return fmt.Errorf("classify: %d classes (want 2 to %d)", d.Classes, MaxClasses)
	}
	if d.D < 1 || d.D > MaxFeatures {
		return fmt.Errorf("classify: %d features: %w", d.D, ErrWidth)
	}
	if len(d.Y) == 0 {
		return fmt.Errorf("classify: %w", ErrEmpty)
	}
	if len(d.X) != len(d.Y)*d.D {
		return fmt.Errorf("classify: %d values for %d rows of %d features: %w", len(d.X), len(d.Y), d.D, ErrWidth)
	}
	for i, v := range d.X {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("classify: row %d, feature %d: %w", i/d.D, i%d.D, ErrNotFinite)
		}
	}
	for i, y := range d.Y {
		if y < 0 || y >= d.Classes {
			return fmt.Errorf("classify: row %d: label %d with %d classes: %w", i, y, d.Classes, ErrLabel)
		}
	}
	return nil
}

// FromRows builds Data from one slice per row; every row must have the
// same length.
func FromRows(rows [][]float64, labels []int, classes int) (*Data, error) {
	if len(rows) != len(labels) {
		return nil, fmt.Errorf("classify: %d rows but %d labels", len(rows), len(labels))
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("classify: %w", ErrEmpty)
	}
	d := &Data{D: len(rows[0]), Classes: classes, Y: slices.Clone(labels), X: make([]float64, 0, len(rows)*len(rows[0]))}
	for i, r := range rows {
		if len(r) != d.D {
			return nil, fmt.Errorf("classify: row %d has %d features, row 0 has %d: %w", i, len(r), d.D, ErrWidth)
		}
		d.X = append(d.X, r...)
	}
	return d, d.Validate()
}

// FromIDX builds Data from an IDX image set: one row of pixels in [0, 1]
// per image. classes is the public number of classes (10 for MNIST and
// Fashion-MNIST); a label ≥ classes is an error. The pixels are shared, not
// copied.
func FromIDX(s *idx.Set, classes int) (*Data, error) {
	if s == nil || s.Images == nil {
		return nil, fmt.Errorf("classify: nil image set: %w", ErrEmpty)
	}
	d := &Data{X: s.Images.Pixels, Y: s.Labels, D: s.Images.Features(), Classes: classes}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// Partition splits the row indices 0..n-1 into parts disjoint sets of
// nearly equal size (sizes differ by at most one), after a random
// permutation drawn from seed: the DPPP setting, where each of N teachers
// holds one part of the training table. The result depends only on (n,
// parts, seed); each part is sorted.
func Partition(n, parts int, seed uint64) ([][]int, error) {
	if parts < 1 {
		return nil, fmt.Errorf("classify: partition into %d parts", parts)
	}
	if n < parts {
		return nil, fmt.Errorf("classify: %d rows cannot fill %d non-empty parts", n, parts)
	}
	rng := rand.New(rand.NewPCG(seed, 0x70617274)) // "part"
	perm := rng.Perm(n)
	out := make([][]int, parts)
	start := 0
	for p := range out {
		size := n / parts
		if p < n%parts {
			size++
		}
		out[p] = slices.Clone(perm[start : start+size])
		slices.Sort(out[p])
		start += size
	}
	return out, nil
}

// Split returns a random split of 0..n-1 into a test part of round(n·frac)
// rows and the rest, both sorted, drawn from seed.
func Split(n int, frac float64, seed uint64) (train, test []int) {
	rng := rand.New(rand.NewPCG(seed, 0x73706c74)) // "splt"
	perm := rng.Perm(n)
	k := int(math.Round(float64(n) * frac))
	k = max(0, min(n, k))
	test, train = slices.Clone(perm[:k]), slices.Clone(perm[k:])
	slices.Sort(test)
	slices.Sort(train)
	return train, test
}

// Accuracy returns the share of rows of d that m labels correctly.
func Accuracy(m Model, d *Data) float64 {
	if d.N() == 0 {
		return math.NaN()
	}
	ok := 0
	for i := range d.N() {
		if m.Predict(d.Row(i)) == d.Y[i] {
			ok++
		}
	}
	return float64(ok) / float64(d.N())
}
