package regress

import (
	"context"
	"errors"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dplearn/dplearn/report"
)

// nonPrivate is the exact, non-private fit: least squares or logistic
// maximum likelihood. It is a reference, never a release.
type nonPrivate struct{}

func (nonPrivate) Name() string          { return "nonprivate" }
func (nonPrivate) NeedsRows(k Kind) bool { return k == Logistic }
func (nonPrivate) Private() bool         { return false }

func nonPrivateReport(what string) report.Privacy {
	return report.Privacy{
		Mechanism:  what,
		Private:    false,
		Accountant: "none",
		Randomness: "none",
		Notes:      []string{"non-private reference: the coefficients reveal the data; do not publish them"},
	}
}

// exactRelTol trims only numerically null directions (exact collinearity).
const exactRelTol = 1e-12

func (nonPrivate) Fit(ctx context.Context, data Data, cfg Config) (*Result, error) {
	if err := cfg.validate(data, false); err != nil {
		return nil, err
	}
	if cfg.Kind == Linear {
		q, err := Objective(Linear, data.Stats)
		if err != nil {
			return nil, err
		}
		w, trimmed, err := q.Minimize(PostProcess{RelTol: exactRelTol})
		if err != nil {
			return nil, err
		}
		res := &Result{Coef: w, Trimmed: trimmed, Privacy: nonPrivateReport("nonprivate (exact least squares)")}
		if trimmed > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("%d collinear direction(s): the minimum-norm least-squares solution is returned", trimmed))
		}
		return res, nil
	}
	k := data.Stats.K()
	if len(data.Rows) == 0 || len(data.Rows)%k != 0 {
		return nil, errors.New("nonprivate logistic regression needs the rows, not only statistics")
	}
	w, warn, err := LogisticMLE(ctx, data.Rows, k)
	if err != nil {
		return nil, err
	}
	res := &Result{Coef: w, Privacy: nonPrivateReport("nonprivate (exact logistic maximum likelihood, Newton's method)")}
	if warn != "" {
		res.Warnings = append(res.Warnings, warn)
	}
	return res, nil
}

// truncated minimises the Taylor-truncated logistic objective (or the exact
// linear one) without noise: what the FM family approximates.
type truncated struct{}

func (truncated) Name() string        { return "truncated" }
func (truncated) NeedsRows(Kind) bool { return false }
func (truncated) Private() bool       { return false }
func (truncated) Fit(ctx context.Context, data Data, cfg Config) (*Result, error) {
	if err := cfg.validate(data, false); err != nil {
		return nil, err
	}
	q, err := Objective(cfg.Kind, data.Stats)
	if err != nil {
		return nil, err
	}
	w, trimmed, err := q.Minimize(PostProcess{RelTol: exactRelTol})
	if err != nil {
		return nil, err
	}
	return &Result{Coef: w, Trimmed: trimmed, Privacy: nonPrivateReport("truncated (2nd-order Taylor objective, no noise)")}, nil
}

// LogisticMLE maximises the logistic likelihood of the encoded rows
// (row-major, k per row, target last) by Newton's method with backtracking.
// It returns a warning when the data look separable (the MLE then does not
// exist and the iterate after the iteration limit is returned).
func LogisticMLE(ctx context.Context, rows []float64, k int) ([]float64, string, error) {
	d := k - 1
	n := len(rows) / k
	w := make([]float64, d)
	loss := func(w []float64) float64 {
		s := 0.0
		for i := 0; i < n; i++ {
			r := rows[i*k : (i+1)*k]
			z := dot(r[:d], w)
			// log(1+e^z) − y z, computed stably.
			s += softplus(z) - r[d]*z
		}
		return s / float64(n)
	}
	cur := loss(w)
	grad := make([]float64, d)
	hess := mat.NewSymDense(d, nil)
	const maxIter = 100
	for it := 0; it < maxIter; it++ {
		if err := ctx.Err(); err != nil {
			return nil, "", err
		}
		for j := range grad {
			grad[j] = 0
		}
		hess.Zero()
		h := make([]float64, d*d)
		for i := 0; i < n; i++ {
			r := rows[i*k : (i+1)*k]
			x := r[:d]
			p := sigmoid(dot(x, w))
			g := p - r[d]
			c := p * (1 - p)
			for a := 0; a < d; a++ {
				grad[a] += g * x[a]
				ca := c * x[a]
				for b := a; b < d; b++ {
					h[a*d+b] += ca * x[b]
				}
			}
		}
		for a := 0; a < d; a++ {
			grad[a] /= float64(n)
			for b := a; b < d; b++ {
				hess.SetSym(a, b, h[a*d+b]/float64(n))
			}
		}
		if maxAbs(grad) < 1e-12 {
			return w, "", nil
		}
		var chol mat.Cholesky
		step := make([]float64, d)
		if chol.Factorize(hess) {
			var s mat.VecDense
			if err := chol.SolveVecTo(&s, mat.NewVecDense(d, grad)); err == nil {
				for j := range step {
					step[j] = s.AtVec(j)
				}
			}
		} else {
			copy(step, grad) // gradient step when the Hessian is singular
		}
		t := 1.0
		next := make([]float64, d)
		for ; t > 1e-10; t /= 2 {
			for j := range w {
				next[j] = w[j] - t*step[j]
			}
			if l := loss(next); l <= cur {
				cur = l
				break
			}
		}
		if t <= 1e-10 {
			return w, "", nil // no further decrease: converged to rounding
		}
		copy(w, next)
		if maxAbs(step)*t < 1e-12*(1+maxAbs(w)) {
			return w, "", nil
		}
	}
	if cur < 1e-6 || maxAbs(w) > 1e3 {
		return w, "the classes look linearly separable: the maximum-likelihood estimate does not exist; the iterate after 100 Newton steps is returned", nil
	}
	return w, "Newton's method did not converge in 100 steps", nil
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func maxAbs(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}

func sigmoid(z float64) float64 {
	if z >= 0 {
		return 1 / (1 + math.Exp(-z))
	}
	e := math.Exp(z)
	return e / (1 + e)
}

func softplus(z float64) float64 {
	if z > 0 {
		return z + math.Log1p(math.Exp(-z))
	}
	return math.Log1p(math.Exp(z))
}
