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

// truncated minimises the approximate logistic objective (Taylor unless
// Config.LogisticApprox says otherwise) or the exact linear one, without
// noise: what the FM family approximates.
type truncated struct{}

func (truncated) Name() string        { return "truncated" }
func (truncated) NeedsRows(Kind) bool { return false }
func (truncated) Private() bool       { return false }
func (truncated) Fit(ctx context.Context, data Data, cfg Config) (*Result, error) {
	if err := cfg.validate(data, false); err != nil {
		return nil, err
	}
	lq, err := cfg.logisticQuadratic()
	if err != nil {
		return nil, err
	}
	q, err := ObjectiveApprox(cfg.Kind, data.Stats, lq)
	if err != nil {
		return nil, err
	}
	w, trimmed, err := q.Minimize(PostProcess{RelTol: exactRelTol})
	if err != nil {
		return nil, err
	}
	what := "truncated (2nd-order Taylor objective, no noise)"
	if cfg.Kind == Logistic && lq.Name != ApproxTaylor {
		what = "truncated (" + lq.String() + ", no noise)"
	}
	return &Result{Coef: w, Trimmed: trimmed, Privacy: nonPrivateReport(what)}, nil
}

// LogisticMLE maximises the logistic likelihood of the encoded rows
// (row-major, k per row, target last) by Newton's method with backtracking.
// It returns a warning when the data look separable (the MLE then does not
// exist and the iterate after the iteration limit is returned).
func LogisticMLE(ctx context.Context, rows []float64, k int) ([]float64, string, error) {
	w, gnorm, err := logisticNewton(ctx, rows, k, 0, nil, 100, nil)
	if err != nil {
		return nil, "", err
	}
	switch {
	case maxAbs(w) > 1e3:
		return w, "the classes look linearly separable: the maximum-likelihood estimate does not exist; the iterate after 100 Newton steps is returned", nil
	case gnorm > 1e-8:
		return w, fmt.Sprintf("Newton's method did not converge in 100 steps (gradient norm %.3g)", gnorm), nil
	}
	return w, "", nil
}

// logisticNewton minimises
//
//	(1/W)Σ_r c_r[log(1 + e^{xᵀw}) − y xᵀw] + (mu/2)‖w‖² + linᵀw
//
// over the encoded rows (row-major, k per row, y ∈ {0, 1} last): lossNewton
// with the logistic row loss.
func logisticNewton(ctx context.Context, rows []float64, k int, mu float64, lin []float64, maxIter int, wts []float64) ([]float64, float64, error) {
	return lossNewton(ctx, logisticLoss{}, rows, k, mu, lin, maxIter, wts)
}

// lossNewton minimises
//
//	(1/W)Σ_r c_r·f(x_rᵀw; y_r) + (mu/2)‖w‖² + linᵀw
//
// for a convex row loss f (rowLoss; objpert.go) over the encoded rows
// (row-major, k per row, target last) by Newton's method with backtracking
// on the objective (a full step is taken only if it does not increase the
// objective, so a step that overshoots where the curvature is small, e.g.
// pseudo-Huber at large residuals, is halved until it decreases), falling
// back to a gradient step where the Hessian is singular (mu = 0 on
// separable data). lin may be nil. The row weights c_r are wts (W their
// total), or 1 for every row when wts is nil (W = N; the arithmetic is then
// exactly the unweighted one). It returns the iterate and the norm of the
// gradient there.
func lossNewton(ctx context.Context, loss rowLoss, rows []float64, k int, mu float64, lin []float64, maxIter int, wts []float64) ([]float64, float64, error) {
	d := k - 1
	n := len(rows) / k
	N := float64(n)
	weight := func(int) float64 { return 1 }
	if wts != nil {
		N = 0
		for _, c := range wts {
			N += c
		}
		weight = func(i int) float64 { return wts[i] }
	}
	obj := func(w []float64) float64 {
		s := 0.0
		for i := 0; i < n; i++ {
			r := rows[i*k : (i+1)*k]
			s += weight(i) * loss.value(dot(r[:d], w), r[d])
		}
		v := s/N + mu/2*dot(w, w)
		if lin != nil {
			v += dot(lin, w)
		}
		return v
	}
	w := make([]float64, d)
	next := make([]float64, d)
	step := make([]float64, d)
	grad := make([]float64, d)
	h := make([]float64, d*d)
	hs := mat.NewSymDense(d, nil)
	cur := obj(w)
	gnorm := math.Inf(1)
	for it := 0; it < maxIter; it++ {
		if err := ctx.Err(); err != nil {
			return nil, 0, err
		}
		for j := range grad {
			grad[j] = mu * w[j]
			if lin != nil {
				grad[j] += lin[j]
			}
		}
		clear(h)
		for i := 0; i < n; i++ {
			r := rows[i*k : (i+1)*k]
			x := r[:d]
			a := dot(x, w)
			g := loss.deriv(a, r[d]) * weight(i) / N
			c := loss.curv(a, r[d]) * weight(i) / N
			for a := 0; a < d; a++ {
				grad[a] += g * x[a]
				ca := c * x[a]
				for b := a; b < d; b++ {
					h[a*d+b] += ca * x[b]
				}
			}
		}
		gnorm = math.Sqrt(dot(grad, grad))
		if gnorm < 1e-13 {
			break
		}
		for a := 0; a < d; a++ {
			for b := a; b < d; b++ {
				v := h[a*d+b]
				if a == b {
					v += mu
				}
				hs.SetSym(a, b, v)
			}
		}
		copy(step, grad) // gradient step when the Hessian is singular
		var chol mat.Cholesky
		if chol.Factorize(hs) {
			var s mat.VecDense
			if err := chol.SolveVecTo(&s, mat.NewVecDense(d, grad)); err == nil {
				for j := range step {
					step[j] = s.AtVec(j)
				}
			}
		}
		improved := false
		for t := 1.0; t > 1e-12; t /= 2 {
			for j := range w {
				next[j] = w[j] - t*step[j]
			}
			if v := obj(next); v < cur || (t == 1 && v <= cur+1e-15*math.Abs(cur)) {
				cur, improved = math.Min(v, cur), true
				break
			}
		}
		if !improved {
			break // converged to rounding
		}
		copy(w, next)
		if it > 50 && gnorm < 1e-9 {
			break // rounding-level progress only
		}
	}
	return w, gnorm, nil
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
