package audit

import "math"

// ClopperPearsonLower returns the one-sided lower confidence bound at level
// 1−alpha for a binomial proportion with k successes in n trials: the alpha
// quantile of Beta(k, n−k+1) (0 if k = 0).
func ClopperPearsonLower(k, n int, alpha float64) float64 {
	if k <= 0 {
		return 0
	}
	return betaQuantile(alpha, float64(k), float64(n-k+1))
}

// ClopperPearsonUpper returns the one-sided upper confidence bound at level
// 1−alpha: the 1−alpha quantile of Beta(k+1, n−k) (1 if k = n).
func ClopperPearsonUpper(k, n int, alpha float64) float64 {
	if k >= n {
		return 1
	}
	return betaQuantile(1-alpha, float64(k+1), float64(n-k))
}

// betaQuantile inverts the regularised incomplete beta function by bisection.
func betaQuantile(p, a, b float64) float64 {
	lo, hi := 0.0, 1.0
	for i := 0; i < 200 && hi-lo > 1e-15; i++ {
		mid := (lo + hi) / 2
		if RegIncBeta(mid, a, b) < p {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// RegIncBeta returns the regularised incomplete beta function I_x(a, b),
// by the continued fraction of DLMF 8.17.22 evaluated with the modified Lentz
// method (using the symmetry I_x(a,b) = 1 − I_{1−x}(b,a) for convergence).
func RegIncBeta(x, a, b float64) float64 {
	switch {
	case x <= 0:
		return 0
	case x >= 1:
		return 1
	}
	if x > (a+1)/(a+b+2) {
		return 1 - RegIncBeta(1-x, b, a)
	}
	la, _ := math.Lgamma(a)
	lb, _ := math.Lgamma(b)
	lab, _ := math.Lgamma(a + b)
	front := math.Exp(lab - la - lb + a*math.Log(x) + b*math.Log1p(-x))
	const tiny = 1e-300
	f, c, d := 1.0, 1.0, 0.0
	for m := 0; m < 10000; m++ {
		var num float64
		switch {
		case m == 0:
			num = 1
		case m%2 == 0:
			k := float64(m / 2)
			num = k * (b - k) * x / ((a + 2*k - 1) * (a + 2*k))
		default:
			k := float64((m - 1) / 2)
			num = -(a + k) * (a + b + k) * x / ((a + 2*k) * (a + 2*k + 1))
		}
		d = 1 + num*d
		if math.Abs(d) < tiny {
			d = tiny
		}
		d = 1 / d
		c = 1 + num/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		cd := c * d
		f *= cd
		if math.Abs(1-cd) < 1e-15 {
			break
		}
	}
	return front * (f - 1) / a
}
