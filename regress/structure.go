package regress

import (
	"fmt"
	"math"

	"github.com/dplearn/dplearn/schema"
)

// GramEntry names the entry (I, J), I ≤ J, of the mean Gram matrix
// G = (1/N)Σ x xᵀ of the encoded features.
type GramEntry struct{ I, J int }

// GramValue is an entry of G whose value is the same on every dataset.
type GramValue struct {
	GramEntry
	Value float64
}

// GramStructure is public knowledge about G implied by the schema's
// encoding (package schema): identities that hold for every dataset the
// schema admits, so they carry no information about the data. With the
// intercept x_0 = c and an indicator x_d ∈ {0, c} of a categorical feature,
//
//   - x_0² = c², so G[0,0] = c² (Known) — when every row has the intercept,
//     i.e. no column's missing policy drops records (a dropped record is
//     kept as an all-zero row, see package schema);
//   - x_d² = c·x_d = x_d·x_0, so G[d,d] = G[0,d] (Equal);
//   - two indicators d1 ≠ d2 of one categorical feature are never both
//     non-zero, so G[d1,d2] = 0 (Known).
//
// The FM family releases Λ2 = a·G (a = 1 linear, a2 logistic) with noise
// on every entry of its upper triangle; a released Λ2 does not satisfy the
// identities, and Project puts it back on the set of matrices that do. For
// CPS1988 (d = 9, one two-level ethnicity, smsa and parttime indicator and
// three region indicators) 4 of the 45 released entries are known and 12
// are equal in pairs.
type GramStructure struct {
	D     int
	Known []GramValue
	Equal [][2]GramEntry
}

// GramStructureFor returns the Gram structure of a schema's encoded
// features (Schema.FeatureNames order), or nil when the schema implies none
// (no intercept and no categorical feature with three or more categories).
// It reads only the schema, which is public.
func GramStructureFor(s *schema.Schema) (*GramStructure, error) {
	if s == nil {
		return nil, fmt.Errorf("regress: Gram structure: no schema")
	}
	st := &GramStructure{D: s.Dim()}
	c := schema.UnitScale(s.Bound()) // the encoder's value of the intercept and of every indicator
	k := 0
	if s.HasIntercept() {
		if !s.DropsRecords() {
			st.Known = append(st.Known, GramValue{GramEntry{0, 0}, c * c})
		}
		k = 1
	}
	for _, f := range s.Features {
		if !f.Categorical() {
			k++
			continue
		}
		w := len(f.Categories) - 1
		for a := k; a < k+w; a++ {
			if s.HasIntercept() {
				st.Equal = append(st.Equal, [2]GramEntry{{a, a}, {0, a}})
			}
			for b := a + 1; b < k+w; b++ {
				st.Known = append(st.Known, GramValue{GramEntry{a, b}, 0})
			}
		}
		k += w
	}
	if k != st.D {
		return nil, fmt.Errorf("regress: Gram structure: the schema's features encode to %d columns, not %d", k, st.D)
	}
	if len(st.Known) == 0 && len(st.Equal) == 0 {
		return nil, nil
	}
	return st, st.validate()
}

// validate checks the entries against D and for contradictions (two
// different known values in one class of equal entries).
func (st *GramStructure) validate() error {
	if st == nil {
		return nil
	}
	if st.D < 1 {
		return fmt.Errorf("regress: Gram structure with d = %d", st.D)
	}
	ok := func(e GramEntry) bool { return 0 <= e.I && e.I <= e.J && e.J < st.D }
	for _, v := range st.Known {
		if !ok(v.GramEntry) {
			return fmt.Errorf("regress: Gram structure: entry (%d, %d) is outside the upper triangle of a %d×%d matrix", v.I, v.J, st.D, st.D)
		}
		if math.IsNaN(v.Value) || math.IsInf(v.Value, 0) {
			return fmt.Errorf("regress: Gram structure: entry (%d, %d) has the non-finite value %v", v.I, v.J, v.Value)
		}
	}
	for _, p := range st.Equal {
		for _, e := range p {
			if !ok(e) {
				return fmt.Errorf("regress: Gram structure: entry (%d, %d) is outside the upper triangle of a %d×%d matrix", e.I, e.J, st.D, st.D)
			}
		}
	}
	_, _, err := st.classes()
	return err
}

// classes partitions the packed upper triangle into classes of entries
// that the structure makes equal (union-find over Equal) and returns each
// entry's class root and each root's known value (NaN when unknown).
func (st *GramStructure) classes() ([]int, []float64, error) {
	m := st.D * (st.D + 1) / 2
	parent := make([]int, m)
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for _, p := range st.Equal {
		a, b := find(packedIndex(st.D, p[0].I, p[0].J)), find(packedIndex(st.D, p[1].I, p[1].J))
		if a != b {
			parent[b] = a
		}
	}
	known := make([]float64, m)
	for i := range known {
		known[i] = math.NaN()
	}
	for _, v := range st.Known {
		r := find(packedIndex(st.D, v.I, v.J))
		if !math.IsNaN(known[r]) && known[r] != v.Value {
			return nil, nil, fmt.Errorf("regress: Gram structure: entry (%d, %d) is known to be both %v and %v", v.I, v.J, known[r], v.Value)
		}
		known[r] = v.Value
	}
	root := make([]int, m)
	for i := range root {
		root[i] = find(i)
	}
	return root, known, nil
}

// Scaled returns the structure of a·G (Known values times a), the form
// in which the FM family's Λ2 holds the Gram matrix.
func (st *GramStructure) Scaled(a float64) *GramStructure {
	if st == nil {
		return nil
	}
	out := &GramStructure{D: st.D, Equal: append([][2]GramEntry(nil), st.Equal...), Known: make([]GramValue, len(st.Known))}
	for i, v := range st.Known {
		out.Known[i] = GramValue{v.GramEntry, a * v.Value}
	}
	return out
}

// Project returns a copy of q whose Λ2 satisfies the structure: every
// class of equal entries is replaced by its mean and a class with a known
// value by that value; Λ1 is copied unchanged. It is post-processing of the
// released values with public knowledge only.
//
// It is the least-squares projection onto the affine set of symmetric
// matrices with the structure: the FM family adds noise of one variance to
// every released entry of Λ2's upper triangle, independently of each other
// and of Λ1's noise, so this projection is the generalised least-squares
// (best linear unbiased) estimate of Λ2 given the identities (for Gaussian
// noise also the maximum-likelihood one). Its error is the projection of the
// noise: the mean of a class of k equal entries has 1/k of one entry's
// variance, a known entry none, and the other entries keep theirs. The
// projection is idempotent and commutes with fresh noise — Project(Project(q)
// + e) = Project(q + e) — so re-noising the projected objective, as the
// inference bootstrap does, draws from the same law.
func (st *GramStructure) Project(q *Quadratic) (*Quadratic, error) {
	out := &Quadratic{D: q.D, Lambda0: q.Lambda0, Lambda1: append([]float64(nil), q.Lambda1...), Upper: append([]float64(nil), q.Upper...)}
	if st == nil {
		return out, nil
	}
	if st.D != q.D {
		return nil, fmt.Errorf("regress: the Gram structure is for %d features, the objective has %d", st.D, q.D)
	}
	root, known, err := st.classes()
	if err != nil {
		return nil, err
	}
	sum := make([]float64, len(root))
	cnt := make([]int, len(root))
	for i, r := range root {
		sum[r] += q.Upper[i]
		cnt[r]++
	}
	for i, r := range root {
		if v := known[r]; !math.IsNaN(v) {
			out.Upper[i] = v
		} else if cnt[r] > 1 {
			out.Upper[i] = sum[r] / float64(cnt[r])
		}
	}
	return out, nil
}

// String describes the structure for the privacy report.
func (st *GramStructure) String() string {
	root, known, err := st.classes()
	if err != nil {
		return "invalid Gram structure: " + err.Error()
	}
	size := make([]int, len(root))
	for _, r := range root {
		size[r]++
	}
	nKnown, nAvg := 0, 0
	for _, r := range root {
		switch {
		case !math.IsNaN(known[r]):
			nKnown++
		case size[r] > 1:
			nAvg++
		}
	}
	return fmt.Sprintf("public structure of Λ2 from the schema's encoding: %d of the %d released entries known, %d averaged with the entries they equal (least-squares projection onto the identities)",
		nKnown, len(root), nAvg)
}
