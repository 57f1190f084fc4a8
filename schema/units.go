package schema

import (
	"fmt"
	"math"
)

// Coefficients in original units.
//
// The encoding is affine in the (transformed) feature values, so a model
// that is linear in the encoded features is linear in the original ones too,
// inside the declared ranges (outside them the encoder clips). With s = 1/√B
// (unitScale), a numeric feature v with range [lo, hi], midpoint m = (lo+hi)/2
// and half-width h = (hi−lo)/2 encodes as x = s(v − m)/h, an indicator as
// x = s·1{category}, the intercept as x = s; a continuous target t with
// midpoint m_y and half-width h_y encodes as y = (t − m_y)/h_y. Substituting
// in y = Σ ω_j x_j:
//
//	t = m_y + h_y·s·ω_0 + Σ_numeric (h_y·s·ω_j/h_j)(v_j − m_j) + Σ_indicator h_y·s·ω_c·1{c}
//
// so the slope of a numeric feature is b_j = h_y·s·ω_j/h_j per unit of v_j,
// an indicator's effect is b_c = h_y·s·ω_c against the reference category,
// and the intercept (t at every v_j = 0 and every reference category) is
// b_0 = m_y + h_y·s·(ω_0 − Σ_numeric ω_j m_j/h_j). For a binary target
// (logistic) the encoded score is already the log-odds: take m_y = 0 and
// h_y = 1. Each b is an affine function Offset + Σ_j Weights_j·ω_j of the
// encoded coefficients, so standard errors and intervals carry over exactly
// (a scale for slopes, a linear combination for the intercept).

// Unit maps the encoded coefficients to one coefficient in original units.
type Unit struct {
	// Name is the encoded column's name (FeatureNames order).
	Name string
	// Offset and Weights define b = Offset + Σ_j Weights[j]·ω_j.
	Offset  float64
	Weights []float64
	// Feature is the schema feature behind the column ("" for the
	// intercept); Category the indicator's level and Reference the
	// reference level, for categorical features.
	Feature, Category, Reference string
	// Transform is the feature's transform (a slope is per unit of the
	// transformed value).
	Transform Transform
	intercept bool
	target    Target
}

// OriginalUnits returns, for each encoded column in FeatureNames order, the
// map to its coefficient in original units (see above).
func (s *Schema) OriginalUnits() []Unit {
	d := s.Dim()
	sc := unitScale(s.Bound())
	my, hy := 0.0, 1.0
	if !s.Target.Binary() {
		lo, hi := s.Target.Range[0], s.Target.Range[1]
		my, hy = (lo+hi)/2, (hi-lo)/2
	}
	units := make([]Unit, 0, d)
	col := 0
	var icpt *Unit
	if s.HasIntercept() {
		u := Unit{Name: "(intercept)", Offset: my, Weights: make([]float64, d), intercept: true, target: s.Target}
		u.Weights[0] = hy * sc
		units = append(units, u)
		icpt = &units[0]
		col = 1
	}
	for _, f := range s.Features {
		if f.Categorical() {
			for _, c := range f.Categories[1:] {
				u := Unit{Name: f.Name + "=" + c, Weights: make([]float64, d), Feature: f.Name, Category: c, Reference: f.Categories[0], target: s.Target}
				u.Weights[col] = hy * sc
				units = append(units, u)
				col++
			}
			continue
		}
		m, h := (f.Range[0]+f.Range[1])/2, (f.Range[1]-f.Range[0])/2
		u := Unit{Name: f.Name, Weights: make([]float64, d), Feature: f.Name, Transform: f.Transform, target: s.Target}
		u.Weights[col] = hy * sc / h
		units = append(units, u)
		if icpt != nil {
			icpt.Weights[col] = -hy * sc * m / h
		}
		col++
	}
	return units
}

// Apply returns the coefficient in original units for encoded coefficients w.
func (u Unit) Apply(w []float64) float64 {
	b := u.Offset
	for j, c := range u.Weights {
		b += c * w[j]
	}
	return b
}

// Slope returns the derivative of the original-units coefficient with
// respect to the encoded one when it is a pure scale (every column but the
// intercept), and false for the intercept (a linear combination).
func (u Unit) Slope() (float64, bool) {
	if u.intercept {
		return 0, false
	}
	for _, c := range u.Weights {
		if c != 0 {
			return c, true
		}
	}
	return 0, true
}

// Meaning says in words what a coefficient b in original units means, e.g.
// "+1 education ≈ ×1.094 wage" for a log target.
func (u Unit) Meaning(b float64) string {
	t := u.target
	if u.intercept {
		switch {
		case t.Binary():
			return fmt.Sprintf("log-odds of %s at zero numeric features and reference categories (odds %.4g)", t.Name, math.Exp(b))
		case t.Transform != TransformNone:
			return fmt.Sprintf("%s(%s) at zero numeric features and reference categories (%s ≈ %.4g)", t.Transform, t.Name, t.Name, t.Transform.Invert(b))
		}
		return fmt.Sprintf("%s at zero numeric features and reference categories", t.Name)
	}
	what := "+1 " + u.Feature
	perPct := false
	switch {
	case u.Category != "":
		what = fmt.Sprintf("%s=%s instead of %s", u.Feature, u.Category, u.Reference)
	case u.Transform == TransformLog:
		// A slope per unit of log(v): +1% in v adds b·log(1.01) ≈ b/100.
		what, perPct = "+1% "+u.Feature, true
	case u.Transform == TransformLog1p:
		what = fmt.Sprintf("+1 in log(1+%s)", u.Feature)
	case u.Transform == TransformSqrt:
		what = fmt.Sprintf("+1 in √%s", u.Feature)
	}
	step := b
	if perPct {
		step = b * math.Log(1.01)
	}
	switch {
	case t.Binary():
		return fmt.Sprintf("%s ≈ ×%.4g odds of %s", what, math.Exp(step), t.Name)
	case t.Transform == TransformLog:
		return fmt.Sprintf("%s ≈ ×%.4g %s", what, math.Exp(step), t.Name)
	case t.Transform == TransformLog1p:
		return fmt.Sprintf("%s ≈ %+.4g in log(1+%s)", what, step, t.Name)
	case t.Transform == TransformSqrt:
		return fmt.Sprintf("%s ≈ %+.4g in √%s", what, step, t.Name)
	}
	return fmt.Sprintf("%s ≈ %+.4g %s", what, step, t.Name)
}
