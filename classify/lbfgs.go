package classify

import (
	"context"
	"errors"
	"math"
)

// lbfgsSettings are the stopping rules of lbfgs.
type lbfgsSettings struct {
	maxIter int     // iterations (each one line search)
	memory  int     // correction pairs kept
	gradTol float64 // stop when the gradient's largest entry is below this
	// Stop when the objective decreased by at most relTol·|f| over the
	// last relWindow iterations.
	relTol    float64
	relWindow int
}

// lbfgs minimises f from x (overwritten with the best point found) by
// limited-memory BFGS (Nocedal & Wright, Algorithm 7.4) with a backtracking
// Armijo line search, and returns the objective there. f returns the value
// at x and writes the gradient into g. The iteration is a fixed sequence of
// float64 operations: the same inputs give the same result.
//
// It stops at maxIter, at a small gradient or a stalled objective, or when
// no step decreases f any more (the float64 limit); only a non-finite
// objective at the start and a cancelled context are errors.
func lbfgs(ctx context.Context, x []float64, f func(x, g []float64) float64, s lbfgsSettings) (float64, error) {
	n := len(x)
	g := make([]float64, n)
	fx := f(x, g)
	if math.IsNaN(fx) || math.IsInf(fx, 0) {
		return fx, errors.New("L-BFGS: the objective is not finite at the start")
	}
	S, Y := make([][]float64, 0, s.memory), make([][]float64, 0, s.memory)
	rho := make([]float64, 0, s.memory)
	alpha := make([]float64, s.memory)
	d := make([]float64, n)
	xn, gn := make([]float64, n), make([]float64, n)
	hist := []float64{fx}
	for range s.maxIter {
		if err := ctx.Err(); err != nil {
			return fx, err
		}
		if normInf(g) < s.gradTol {
			break
		}
		// Two-loop recursion: d = −H·g.
		for i := range d {
			d[i] = -g[i]
		}
		for k := len(S) - 1; k >= 0; k-- {
			alpha[k] = rho[k] * dot(S[k], d)
			axpy(-alpha[k], Y[k], d)
		}
		if k := len(S) - 1; k >= 0 {
			gamma := dot(S[k], Y[k]) / dot(Y[k], Y[k])
			for i := range d {
				d[i] *= gamma
			}
		} else {
			// No curvature yet: a first step of unit length.
			scale := 1 / math.Sqrt(dot(g, g))
			for i := range d {
				d[i] *= scale
			}
		}
		for k := range S {
			beta := rho[k] * dot(Y[k], d)
			axpy(alpha[k]-beta, S[k], d)
		}
		slope := dot(g, d)
		if !(slope < 0) {
			// Not a descent direction (rounding): restart from −g.
			S, Y, rho = S[:0], Y[:0], rho[:0]
			for i := range d {
				d[i] = -g[i]
			}
			slope = -dot(g, g)
		}
		// Backtracking line search for the Armijo condition.
		step, fn := 1.0, math.Inf(1)
		accepted := false
		for range 50 {
			for i := range xn {
				xn[i] = x[i] + step*d[i]
			}
			fn = f(xn, gn)
			if fn <= fx+1e-4*step*slope {
				accepted = true
				break
			}
			step /= 2
		}
		if !accepted {
			break // no decrease representable in float64: x is the answer
		}
		// Keep the correction pair when it carries positive curvature.
		sk, yk := make([]float64, n), make([]float64, n)
		for i := range sk {
			sk[i] = xn[i] - x[i]
			yk[i] = gn[i] - g[i]
		}
		if sy := dot(sk, yk); sy > 1e-12*dot(yk, yk) && sy > 0 {
			if len(S) == s.memory {
				S, Y, rho = S[1:], Y[1:], rho[1:]
			}
			S, Y, rho = append(S, sk), append(Y, yk), append(rho, 1/sy)
		}
		copy(x, xn)
		copy(g, gn)
		fx = fn
		hist = append(hist, fx)
		if w := s.relWindow; w > 0 && len(hist) > w {
			if hist[len(hist)-1-w]-fx <= s.relTol*math.Abs(fx) {
				break
			}
		}
	}
	return fx, nil
}

func dot(a, b []float64) float64 {
	s := 0.0
	for i, v := range a {
		s += v * b[i]
	}
	return s
}

func axpy(a float64, x, y []float64) {
	for i, v := range x {
		y[i] += a * v
	}
}

func normInf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = math.Max(m, math.Abs(x))
	}
	return m
}
