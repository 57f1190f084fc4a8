package suffstat

import "math"

// MaxBoundRows is the largest row count ErrorBound covers.
const MaxBoundRows = 1 << 40

// MaxMergeDepth is the deepest tree of Merge calls ErrorBound covers: a
// partial result merged into one that is merged into another, and so on
// (parallel AddRows adds one level, a shipped partial result one more).
const MaxMergeDepth = 64

// ErrorBound returns a bound on the absolute rounding error of every value
// an accumulator returns (Sum, At, Sums, Gram, and the values MarshalBinary
// writes) once it holds n rows (N() == n) whose entries all lie in [−1, 1]:
//
//	|Sum(i) − Σ_r z_ri| ≤ ErrorBound(n),  |At(i, j) − Σ_r z_ri z_rj| ≤ ErrorBound(n),
//
// where the sums on the right are exact (real arithmetic on the float64
// values given to AddRows). For rows bounded by R multiply by max(R, R²).
// The bound holds whatever the order and size of the AddRows, Flush, read
// and Merge calls, with parallel AddRows, with any kernel, and for partial
// results merged after one MarshalBinary/UnmarshalBinary round trip, as long
// as the merge tree is at most MaxMergeDepth deep. It is +Inf for n < 0 or
// n > MaxBoundRows. For n ≤ 2^30 it is below 2.88e-14·n: (257 + 2)·u·n,
// u = 2⁻⁵³, plus less than 0.01%.
//
// Proof. Fix an entry and let T = Σ_r |t_r| ≤ n be the sum of the absolute
// values of its terms (t_r = z_ri z_rj, or z_ri for Sum). Write γ_h =
// hu/(1 − hu).
//
// Blocks. Every row is summed into exactly one block accumulator: a kernel
// call sums the products of at most 128 rows in a register (one rounding per
// row: an FMA, or a product and an addition, which is one rounding more),
// then adds the register into the block (one rounding), and a block takes at
// most 128 kernel calls before it is folded. So each term passes through at
// most h = 1 + 128 + 128 = 257 roundings, and the block's value x_b differs
// from its exact sum by at most γ_257 T_b (Higham, Accuracy and Stability of
// Numerical Algorithms, 2nd ed., §4.2), with T = Σ_b T_b.
//
// Totals. Blocks, and the three components of merged partial results, are
// added into (tot, comp, comp2) by addComp: the errors e of tot and f of comp
// are computed exactly (Fast2Sum), so tot + comp + Σf equals the exact sum of
// the m terms X = Σ|x| received, and only comp2 = fl(Σf) rounds. With
// m ≤ 3·n (a block holds ≥ 1 row, a non-empty merge adds ≥ 1 row and 3
// terms; zero terms change nothing) and mu ≤ 4·10⁻⁴: Σ|e| ≤ 1.0004·mu·X,
// Σ|f| ≤ 1.0009·m²u²·X, |comp2 − Σf| ≤ 1.0013·m³u³·X. Through a merge tree
// of depth ≤ 64 each accumulator's X is at most 1.05·T_a, and Σ_a T_a ≤ 64·T,
// so these third-order errors total at most 28.4·64·n³u³·T ≤ 1820·n³u³·T.
//
// Reading. A value is fl(tot + fl(comp + comp2)), off by at most
// u·|S′| + 1.002·mu²·X ≤ 1.0001·u·T + 3.16·n·u²·T from S′ = tot + comp +
// comp2. A partial result that was marshalled was read the same way once
// more: at most another 1.0001·u·T + 3.16·n·u²·T over all shipped partials.
//
// Hence |value − exact| ≤ T·(γ_257 + 2.0002·u + 6.32·n·u² + 1820·n³u³),
// and T ≤ n. ErrorBound evaluates this with n for T, rounded up.
func ErrorBound(n int64) float64 {
	if n < 0 || n > MaxBoundRows {
		return math.Inf(1)
	}
	return boundFor(n, float64(n))
}

// boundFor is the bound for n rows whose terms have absolute sum at most t.
func boundFor(n int64, t float64) float64 {
	const u = 0x1p-53
	const h = 1 + panelRows + blockPanels // roundings a term passes through in its block
	nf := float64(n)
	gamma := h * u / (1 - h*u)
	rel := gamma + 2.0002*u + 6.32*nf*u*u + 1820*nf*nf*nf*u*u*u
	// Every operation above is within a relative 2^-52 of exact; the factor
	// covers their accumulation.
	return t * rel * (1 + 0x1p-40)
}
