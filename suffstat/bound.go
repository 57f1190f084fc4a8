package suffstat

import "math"

// MaxBoundRows is the largest row count ErrorBound covers.
const MaxBoundRows = 1 << 40

// ErrorBound returns a bound on the absolute error of every value an
// accumulator returns (Sum, At, Sums, Gram) once it holds n rows
// (N() == n), each entry in [−1, 1] (AddRows refuses anything else):
//
//	|Sum(i) − Σ_r z_ri| ≤ ErrorBound(n),  |At(i, j) − Σ_r z_ri z_rj| ≤ ErrorBound(n),
//
// where the sums on the right are exact (real arithmetic on the float64
// values given to AddRows). The bound holds whatever the order and size of
// the AddRows, Flush, read and Merge calls, with parallel AddRows, with any
// kernel, and for partial results shipped through MarshalBinary, because
// all of these give the same bits. It is +Inf for n < 0 or
// n > MaxBoundRows, and equals n·(2⁻⁴⁶ + 2⁻⁵³) ≈ 1.432e-14·n (exactly).
//
// Proof. Let q(z) be z rounded to the nearest multiple of 2⁻⁴⁶, so
// |q(z) − z| ≤ δ = 2⁻⁴⁷, and |q(z)| ≤ 1 (±1 are on the grid and rounding is
// monotone). The accumulator computes S_q = Σ_r q(z_ri) q(z_rj) exactly:
// each slice product is an integer of magnitude ≤ 2⁴⁶, a panel's sum of 128
// of them is an integer of magnitude ≤ 2⁵³, so every floating-point
// operation of the kernel has an exactly representable result; from there
// on all arithmetic is on integers that cannot overflow (64-bit pending sums
// take ≤ 1000 panels, ≤ 1000·2⁵³ < 2⁶³; the 192-bit totals hold
// |S_q|·2⁹² ≤ 2⁶³·2⁹² < 2¹⁹¹). Per row,
//
//	|q(a)q(b) − ab| ≤ |q(a)|·|q(b) − b| + |b|·|q(a) − a| ≤ 2δ = 2⁻⁴⁶,
//
// and |q(a) − a| ≤ δ for a sum, so |S_q − S| ≤ 2⁻⁴⁶·n. Reading rounds S_q
// once to the nearest float64: an error of at most u·|S_q| ≤ 2⁻⁵³·n, since
// |S_q| ≤ n. Hence |value − S| ≤ n·(2⁻⁴⁶ + 2⁻⁵³). ErrorBound multiplies
// n (exact for n ≤ 2⁵³) by the exactly representable constant and rounds
// the product up.
func ErrorBound(n int64) float64 {
	if n < 0 || n > MaxBoundRows {
		return math.Inf(1)
	}
	const c = 0x1p-46 + 0x1p-53
	return float64(n) * c
}
