package regress

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
)

// TestIRLSSensitivities checks the derived sensitivities of A and B
// numerically (random rows, iterates and residual floors never exceed them)
// and that explicit pairs attain the bound of B and √2/2 of the L2 bound of A.
func TestIRLSSensitivities(t *testing.T) {
	const d = 3
	rng := rand.New(rand.NewPCG(1, 2))
	unit := func() []float64 { return ballPoint(rng, d) }
	diffs := func(r1, r2, w []float64, eta float64) (a2, a1, b2 float64) {
		a, ua := irlsMoments(r1, d+1, w, eta)
		c, uc := irlsMoments(r2, d+1, w, eta)
		for j := range a {
			a2 += (a[j] - c[j]) * (a[j] - c[j])
			a1 += math.Abs(a[j] - c[j])
		}
		for j := range ua {
			b2 += (ua[j] - uc[j]) * (ua[j] - uc[j])
		}
		return math.Sqrt(a2), a1, math.Sqrt(b2)
	}
	for _, eta := range []float64{0.05, 0.5} {
		p, err := PlanIRLS(1, 1e-5, 1, d, IRLSOptions{ResidualFloor: eta, Form: IRLSFormMoments})
		if err != nil {
			t.Fatal(err)
		}
		pl, err := PlanIRLS(1, 1e-5, 1, d, IRLSOptions{ResidualFloor: eta, FirstMoment: "laplace", Form: IRLSFormMoments})
		if err != nil {
			t.Fatal(err)
		}
		var m2, m1, mb float64
		for i := 0; i < 20000; i++ {
			w := unit()
			for j := range w {
				w[j] *= 3
			}
			r1 := append(unit(), 2*rng.Float64()-1)
			r2 := append(unit(), 2*rng.Float64()-1)
			if rng.IntN(3) == 0 { // put the residual under the floor
				r1[d] = math.Max(-1, math.Min(1, dot(r1[:d], w)))
			}
			a2, a1, b2 := diffs(r1, r2, w, eta)
			m2, m1, mb = math.Max(m2, a2), math.Max(m1, a1), math.Max(mb, b2)
		}
		if m2 > p.SensA || m1 > pl.SensA || mb > p.SensB {
			t.Errorf("η=%v: observed (A L2 %v, A L1 %v, B %v) exceed (%v, %v, %v)", eta, m2, m1, mb, p.SensA, pl.SensA, p.SensB)
		}
		// Extremal pair: ω = e1 − e2, (e1, 1) vs (e2, −1): both residuals 0.
		w := []float64{1, -1, 0}
		a2, _, b2 := diffs([]float64{1, 0, 0, 1}, []float64{0, 1, 0, -1}, w, eta)
		if math.Abs(b2-p.SensB) > 1e-12*p.SensB || math.Abs(a2-p.SensA/math.Sqrt2) > 1e-12*p.SensA {
			t.Errorf("η=%v: extremal pair gives A %v (bound %v), B %v (bound %v)", eta, a2, p.SensA, b2, p.SensB)
		}
	}
}

// TestRhoForEpsilon: ρ + 2√(ρ ln(1/δ)) meets ε, and the next float up does
// not.
func TestRhoForEpsilon(t *testing.T) {
	for _, c := range []struct{ eps, delta float64 }{{0.9, 1e-5}, {0.1, 1e-6}, {5, 1e-3}} {
		rho, err := RhoForEpsilon(c.eps, c.delta)
		if err != nil {
			t.Fatal(err)
		}
		e, _ := accounting.ZCDP{Rho: rho}.Epsilon(c.delta)
		up, _ := accounting.ZCDP{Rho: rho * (1 + 1e-12)}.Epsilon(c.delta)
		if e > c.eps || up <= c.eps*(1-1e-12) {
			t.Errorf("ε=%v δ=%v: ρ=%v gives %v, ρ(1+1e-12) gives %v", c.eps, c.delta, rho, e, up)
		}
	}
	if _, err := RhoForEpsilon(1, 0); err == nil {
		t.Error("δ = 0 accepted")
	}
}

// TestPlanIRLS checks the calibration by the tightest accountant. Gaussian
// A: the 2J releases' μ_i = (Δ_i + slack)/σ_i (recomputed here from the
// plan's scales) compose to μ = √(Σμ_i²), whose analytic-Gaussian δ at the
// target ε is ≤ δ and within 1e-6 of it (no budget wasted), with the split as
// asked. Laplace A: ρ follows from the scales and its improved conversion
// meets the target tightly. In both cases the looser figures are larger.
func TestPlanIRLS(t *testing.T) {
	for _, c := range []struct {
		fm   string
		warm float64
	}{{"gaussian", -1}, {"laplace", -1}, {"gaussian", 0.3}, {"laplace", 0.3}} {
		fm := c.fm
		p, err := PlanIRLS(0.9, 1e-5, 1000, 10, IRLSOptions{FirstMoment: fm, Iterations: 5, ResidualFloor: 0.2, Split: 0.3, WarmStart: c.warm, Form: IRLSFormMoments})
		if err != nil {
			t.Fatal(err)
		}
		// The warm start's two Gaussian releases (once), as squared μ.
		warm2 := 0.0
		if c.warm > 0 {
			s1 := noise.GaussianCalibrationSensitivity(p.FMSens1, p.FMTau1, 10) / p.FMTau1
			s2 := noise.GaussianCalibrationSensitivity(p.FMSens2, p.FMTau2, 55) / p.FMTau2
			sep := s1*s1 + s2*s2
			if p.WarmStart != c.warm || math.Abs(s1*s1-s2*s2) > 1e-5*sep { // σ is rounded up by up to 1e-9 per grid step
				t.Errorf("warm start: share %v, μ² of Λ1 %v and Λ2 %v not equal halves", p.WarmStart, s1*s1, s2*s2)
			}
			// The two blocks are one mechanism calibrated by the joint
			// supremum (joint.go): recomputed from the scales, and at the
			// equal split J² = 1.5625/2 of the separate bound's μ².
			j, err := JointCalibrationSensitivity(Linear, 10, 1000, TaylorQuadratic, p.FMTau1, p.FMTau2)
			if err != nil || j != p.FMWhitened {
				t.Fatalf("warm start: whitened μ %v, recomputed %v (%v)", p.FMWhitened, j, err)
			}
			warm2 = j * j
			if r := warm2 / sep; math.Abs(r-1.5625/2) > 1e-3 {
				t.Errorf("warm start: joint μ² is %v of the separate bound's, want 0.78125", r)
			}
		} else if p.WarmStart != 0 || p.FMTau1 != 0 {
			t.Errorf("cold start asked, plan has warm share %v", p.WarmStart)
		}
		sb := noise.GaussianCalibrationSensitivity(p.SensB, p.SigmaB, 55)
		muB2 := sb * sb / (p.SigmaB * p.SigmaB)
		if math.Abs(p.RhoB-muB2/2) > 1e-15 {
			t.Errorf("%s: ρ_B = %v, scales give %v", fm, p.RhoB, muB2/2)
		}
		if math.Abs(p.Rho-5*(p.RhoA+p.RhoB)-warm2/2) > 1e-15 || p.Epsilon > 0.9 || p.EpsilonZCDP <= p.Epsilon {
			t.Errorf("%s: ρ = %v, ε = %v, zCDP %v", fm, p.Rho, p.Epsilon, p.EpsilonZCDP)
		}
		if got := p.RhoA / (p.RhoA + p.RhoB); math.Abs(got-0.3) > 1e-5 {
			t.Errorf("%s: A's share of the budget %v, want 0.3", fm, got)
		}
		if fm == "gaussian" {
			sa := noise.GaussianCalibrationSensitivity(p.SensA, p.ScaleA, 10)
			mu := math.Sqrt(5*(sa*sa/(p.ScaleA*p.ScaleA)+muB2) + warm2)
			d, err := accounting.AnalyticGaussianDelta(0.9, 1, mu)
			if err != nil || d > 1e-5 || d < 1e-5*(1-1e-4) { // the grid slack costs ~3e-5
				t.Errorf("μ = %v gives δ(0.9) = %v, want ≤ 1e-5 and tight", mu, d)
			}
			if p.Accountant != "gaussian-dp" || p.EpsilonImproved <= p.Epsilon || math.Abs(p.Mu-mu) > 1e-12*mu {
				t.Errorf("gaussian: accountant %q, exact %v, improved %v, μ %v vs %v", p.Accountant, p.Epsilon, p.EpsilonImproved, p.Mu, mu)
			}
			t.Logf("ε = 0.9 target: exact %.6f, CKS %.4f, zCDP %.4f", p.Epsilon, p.EpsilonImproved, p.EpsilonZCDP)
		} else {
			e, _ := accounting.ZCDP{Rho: p.Rho}.EpsilonImproved(1e-5)
			if p.Accountant != "zcdp-improved" || e > 0.9 || e < 0.9*(1-1e-5) || p.EpsilonExact != 0 {
				t.Errorf("laplace: accountant %q, improved ε %v, exact %v", p.Accountant, e, p.EpsilonExact)
			}
		}
		wantA := 2 / (0.2 * 1000)
		if fm == "laplace" {
			wantA *= math.Sqrt(10)
		}
		// The derived values plus the floating-point term (rounding.go).
		wantB := math.Sqrt2 / (0.2 * 1000)
		if p.SensA < wantA || p.SensA > wantA*(1+1e-8) || p.SensB < wantB || p.SensB > wantB*(1+1e-8) {
			t.Errorf("%s: sensitivities %v, %v", fm, p.SensA, p.SensB)
		}
	}
	for _, bad := range []IRLSOptions{{FirstMoment: "cauchy"}, {Iterations: -1}, {ResidualFloor: -1}, {Split: 1}} {
		if _, err := PlanIRLS(1, 1e-5, 100, 3, bad); err == nil {
			t.Errorf("PlanIRLS accepted %+v", bad)
		}
	}
}

// readDiabetes parses /work/shared/data/diabetes.csv (numeric, header row)
// and encodes it for a non-private test: intercept, each feature mapped by
// its column range onto [−1, 1], all divided by √(d), target by its range
// onto [−1, 1].
func readDiabetes(t *testing.T) ([]float64, int) {
	f, err := os.Open("/work/shared/data/diabetes.csv")
	if err != nil {
		t.Skipf("diabetes data not available: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var recs [][]float64
	for line := 0; sc.Scan(); line++ {
		if line == 0 {
			continue
		}
		var r []float64
		for _, s := range strings.Split(sc.Text(), ",") {
			v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
			if err != nil {
				t.Fatalf("diabetes.csv line %d: %v", line+1, err)
			}
			r = append(r, v)
		}
		recs = append(recs, r)
	}
	p := len(recs[0]) // 10 features + target
	lo, hi := make([]float64, p), make([]float64, p)
	for j := range lo {
		lo[j], hi[j] = math.Inf(1), math.Inf(-1)
		for _, r := range recs {
			lo[j], hi[j] = math.Min(lo[j], r[j]), math.Max(hi[j], r[j])
		}
	}
	d := p // intercept + 10 features
	k := d + 1
	s := 1 / math.Sqrt(float64(d))
	rows := make([]float64, 0, len(recs)*k)
	for _, r := range recs {
		rows = append(rows, s)
		for j := 0; j < p-1; j++ {
			rows = append(rows, s*(2*(r[j]-lo[j])/(hi[j]-lo[j])-1))
		}
		rows = append(rows, 2*(r[p-1]-lo[p-1])/(hi[p-1]-lo[p-1])-1)
	}
	return rows, k
}

// ladObjective returns (1/N)Σ|y − xᵀω|.
func ladObjective(rows []float64, k int, w []float64) float64 {
	s := 0.0
	for i := 0; i+k <= len(rows); i += k {
		s += math.Abs(rows[i+k-1] - dot(rows[i:i+k-1], w))
	}
	return s / float64(len(rows)/k)
}

// TestLADOptimality checks the non-private robust fit on real data
// (diabetes) against the LAD subgradient optimality condition, computed
// independently: with Z the rows of zero residual, there must be u ∈
// [−1, 1]^Z with Σ_{i∉Z} sign(r_i)x_i + Σ_{i∈Z} u_i x_i = 0. It also checks
// that random small moves never lower the objective.
func TestLADOptimality(t *testing.T) {
	rows, k := readDiabetes(t)
	d := k - 1
	n := len(rows) / k
	est, err := New("nonprivate")
	if err != nil {
		t.Fatal(err)
	}
	if !est.NeedsRows(Robust) {
		t.Fatal("nonprivate robust fit must ask for the rows")
	}
	res, err := est.Fit(context.Background(), xpData(t, rows, k), Config{Kind: Robust})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Warnings) > 0 || res.Privacy.Private {
		t.Fatalf("warnings %v, report %+v", res.Warnings, res.Privacy)
	}
	w := res.Coef
	s := make([]float64, d)
	var zero []int
	for i := 0; i < n; i++ {
		x := rows[i*k : i*k+d]
		r := rows[i*k+d] - dot(x, w)
		if math.Abs(r) < 1e-10 {
			zero = append(zero, i)
			continue
		}
		for j := range s {
			s[j] += math.Copysign(1, r) * x[j]
		}
	}
	if len(zero) < d {
		t.Fatalf("only %d rows with zero residual; an LAD vertex has ≥ d = %d", len(zero), d)
	}
	// Least-squares u for X_Zᵀ u = −s (Z×d system, QR).
	xz := mat.NewDense(d, len(zero), nil)
	for c, i := range zero {
		for j := 0; j < d; j++ {
			xz.Set(j, c, rows[i*k+j])
		}
	}
	neg := make([]float64, d)
	for j := range s {
		neg[j] = -s[j]
	}
	var u mat.VecDense
	if err := u.SolveVec(xz, mat.NewVecDense(d, neg)); err != nil {
		t.Fatal(err)
	}
	var chk mat.VecDense
	chk.MulVec(xz, &u)
	for j := 0; j < d; j++ {
		if math.Abs(chk.AtVec(j)-neg[j]) > 1e-9 {
			t.Fatalf("subgradient equation not solvable: residual %v at %d", chk.AtVec(j)-neg[j], j)
		}
	}
	for c := 0; c < u.Len(); c++ {
		if math.Abs(u.AtVec(c)) > 1+1e-9 {
			t.Fatalf("dual u[%d] = %v outside [−1, 1]: not the LAD optimum", c, u.AtVec(c))
		}
	}
	f0 := ladObjective(rows, k, w)
	rng := rand.New(rand.NewPCG(4, 4))
	for trial := 0; trial < 200; trial++ {
		v := make([]float64, d)
		for j := range v {
			v[j] = w[j] + 1e-4*rng.NormFloat64()
		}
		if f := ladObjective(rows, k, v); f < f0-1e-15 {
			t.Fatalf("a random move lowers the LAD objective: %v < %v", f, f0)
		}
	}
}

// outlierRows makes n rows with d features and y = xᵀβ + 0.05·noise, of
// which a share frac has y replaced by a gross outlier ±1 (sign opposite to
// the fit); the test rows are clean.
func outlierRows(n, d int, frac float64, seed uint64) (train, test []float64) {
	rows, beta := xpRows(Linear, 2*n, d, seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	k := d + 1
	for i := 0; i < 2*n; i++ {
		r := rows[i*k : (i+1)*k]
		r[d] = math.Max(-1, math.Min(1, dot(r[:d], beta)*0.5+0.05*rng.NormFloat64()))
		if i < n && rng.Float64() < frac {
			r[d] = -math.Copysign(1, r[d])
		}
	}
	return rows[:n*k], rows[n*k:]
}

func medianAbsError(coef, test []float64) float64 {
	k := len(coef) + 1
	var e []float64
	for i := 0; i+k <= len(test); i += k {
		e = append(e, math.Abs(test[i+k-1]-dot(test[i:i+k-1], coef)))
	}
	sort.Float64s(e)
	return e[len(e)/2]
}

// TestRobustBeatsLeastSquares: with 20% gross outliers in y, the LAD fit has
// a smaller median absolute error on clean test data than least squares
// (and DP-IRLS at ε = 1 on 20 000 rows beats non-private least squares).
func TestRobustBeatsLeastSquares(t *testing.T) {
	ctx := context.Background()
	n := 20000
	if testing.Short() {
		n = 5000
	}
	train, test := outlierRows(n, 4, 0.2, 12)
	data := xpData(t, train, 5)
	np, _ := New("nonprivate")
	ls, err := np.Fit(ctx, data, Config{Kind: Linear})
	if err != nil {
		t.Fatal(err)
	}
	lad, err := np.Fit(ctx, data, Config{Kind: Robust})
	if err != nil {
		t.Fatal(err)
	}
	dp, err := irlsEstimator{}.Fit(ctx, data, Config{Kind: Robust, Epsilon: 1, Delta: 1e-5, Lambda: -1, Source: noise.NewInsecureSeeded(3)})
	if err != nil {
		t.Fatal(err)
	}
	mLS, mLAD, mDP := medianAbsError(ls.Coef, test), medianAbsError(lad.Coef, test), medianAbsError(dp.Coef, test)
	t.Logf("median |error| on clean test rows: least squares %.4f, LAD %.4f, DP-IRLS (ε=1) %.4f", mLS, mLAD, mDP)
	if !(mLAD < 0.5*mLS) || (!testing.Short() && !(mDP < mLS)) {
		t.Errorf("median |error|: LS %.4f, LAD %.4f, DP-IRLS %.4f", mLS, mLAD, mDP)
	}
}

// TestIRLSConverges: with a huge ε, DP-IRLS equals noiseless IRLS with the
// same floor and iterations.
func TestIRLSConverges(t *testing.T) {
	rows, _ := xpRows(Linear, 3000, 4, 5)
	data := xpData(t, rows, 5)
	const J, eta = 4, 0.1
	w := make([]float64, 4)
	for j := 0; j < J; j++ {
		a, up := irlsMoments(rows, 5, w, eta)
		var err error
		if w, _, err = irlsStep(a, up, 0); err != nil {
			t.Fatal(err)
		}
	}
	res, err := irlsEstimator{}.Fit(context.Background(), data, Config{Kind: Robust, Epsilon: 1e5, Delta: 1e-5, Lambda: -1,
		Source: noise.NewInsecureSeeded(2), IRLS: IRLSOptions{Iterations: J, ResidualFloor: eta, WarmStart: -1}})
	if err != nil {
		t.Fatal(err)
	}
	if e := dist(res.Coef, w); e > 1e-3*math.Sqrt(dot(w, w)) {
		t.Errorf("‖ω_DP − ω_IRLS‖ = %v", e)
	}
	// Warm start: noiseless IRLS from the exact least-squares fit.
	q, err := Objective(Linear, data.Stats)
	if err != nil {
		t.Fatal(err)
	}
	ws, _, err := q.Minimize(PostProcess{RelTol: exactRelTol})
	if err != nil {
		t.Fatal(err)
	}
	for j := 0; j < 2; j++ {
		a, up := irlsMoments(rows, 5, ws, eta)
		if ws, _, err = irlsStep(a, up, 0); err != nil {
			t.Fatal(err)
		}
	}
	warm, err := irlsEstimator{}.Fit(context.Background(), data, Config{Kind: Robust, Epsilon: 1e5, Delta: 1e-5, Lambda: -1,
		Source: noise.NewInsecureSeeded(2), IRLS: IRLSOptions{Iterations: 2, ResidualFloor: eta, WarmStart: 0.3, Form: IRLSFormMoments}})
	if err != nil {
		t.Fatal(err)
	}
	if e := dist(warm.Coef, ws); e > 1e-3*math.Sqrt(dot(ws, ws)) {
		t.Errorf("warm start: ‖ω_DP − ω_IRLS‖ = %v", e)
	}
	if e := dist(warm.Coef, w); e < 1e-2*math.Sqrt(dot(w, w)) {
		t.Errorf("warm and cold starts agree after 2 and 4 iterations (%v): the test cannot tell them apart", e)
	}
	if res.Privacy.Rho <= 0 || res.Privacy.Epsilon > 1e5 || !strings.Contains(res.Privacy.Accountant, "Gaussian DP") {
		t.Errorf("report %+v", res.Privacy)
	}
}

// TestIRLSAudit runs the empirical privacy audit of DP-IRLS (both
// first-moment noises) on neighbouring datasets.
func TestIRLSAudit(t *testing.T) {
	// A smoke test (PRIVACY-NOTES item 22): TestPrintedGuaranteeIsExactProfile
	// is the exact check. Each trial is a whole fit, calibration included.
	trials := 1500
	if testing.Short() {
		trials = 1000
	}
	for _, fm := range []string{"gaussian", "laplace"} {
		cfg := Config{Kind: Robust, Epsilon: 1, Delta: 1e-5, Lambda: -1, Source: noise.NewInsecureSeeded(6),
			IRLS: IRLSOptions{Iterations: 2, FirstMoment: fm, ResidualFloor: 0.5}}
		r := auditEstimator(t, irlsEstimator{}, Linear, cfg, 1, 1e-5, 6, trials)
		if err := r.Check(1); err != nil {
			t.Errorf("%s: %v", fm, err)
		}
		t.Logf("%s: empirical ε lower bound %.3f (claimed 1)", fm, r.EpsilonLower)
		// Power check: 50 times less noise on A and B is caught. The run
		// below starts cold (no warm-start release), so its plan must be
		// the cold start's, whose whole budget goes to A and B.
		cold := cfg.IRLS
		cold.WarmStart = -1
		plan, err := PlanIRLS(1, 1e-5, 6, 2, cold)
		if err != nil {
			t.Fatal(err)
		}
		plan.ScaleA /= 50
		plan.SigmaB /= 50
		rb := auditMech(t, Linear, 1e-5, 6, trials, func(d Data) ([]float64, error) {
			w, _, err := plan.run(context.Background(), d.Rows, 3, nil, cfg.Source, cfg.lambda(plan.SigmaB))
			return w, err
		})
		if rb.Check(1) == nil {
			t.Errorf("%s: audit did not catch DP-IRLS with 50× too little noise (lower bound %.3f)", fm, rb.EpsilonLower)
		}
	}
}

// TestIRLSVariantsAndErrors: irls-wishart is labelled not DP; bad input gets
// clear errors.
func TestIRLSVariantsAndErrors(t *testing.T) {
	ctx := context.Background()
	rows, _ := xpRows(Linear, 500, 3, 9)
	data := xpData(t, rows, 4)
	src := noise.NewInsecureSeeded(1)
	est, err := New("irls-wishart")
	if err != nil {
		t.Fatal(err)
	}
	res, err := est.Fit(ctx, data, Config{Kind: Robust, Epsilon: 1, Delta: 1e-5, Source: src})
	if err != nil {
		t.Fatal(err)
	}
	if est.Private() || res.Privacy.Private || !strings.Contains(res.Privacy.Mechanism, "NOT DIFFERENTIALLY PRIVATE") ||
		!strings.Contains(res.Privacy.Guarantee(), "none") {
		t.Errorf("irls-wishart report: %+v", res.Privacy)
	}
	if k, err := ParseKind("robust"); err != nil || k != Robust {
		t.Errorf("ParseKind(robust) = %v, %v", k, err)
	}
	cases := []struct {
		name string
		est  Estimator
		data Data
		cfg  Config
		want string
	}{
		{"linear kind", irlsEstimator{}, data, Config{Kind: Linear, Epsilon: 1, Delta: 1e-5, Source: src}, "--model robust"},
		{"no δ", irlsEstimator{}, data, Config{Kind: Robust, Epsilon: 1, Source: src}, "δ > 0"},
		{"no rows", irlsEstimator{}, Data{Stats: data.Stats}, Config{Kind: Robust, Epsilon: 1, Delta: 1e-5, Source: src}, "needs the rows"},
		{"bad noise", irlsEstimator{}, data, Config{Kind: Robust, Epsilon: 1, Delta: 1e-5, Source: src, IRLS: IRLSOptions{FirstMoment: "cauchy"}}, "first-moment"},
		{"fm robust", gaussianFM{}, data, Config{Kind: Robust, Epsilon: 1, Delta: 1e-5, Source: src}, "robust"},
	}
	for _, c := range cases {
		_, err := c.est.Fit(ctx, c.data, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one mentioning %q", c.name, err, c.want)
		}
	}
}

// ExamplePlanIRLS shows DP-IRLS's calibration at ε = 0.9, δ = 1e-5 on
// 10 000 rows with 10 features and the defaults.
func ExamplePlanIRLS() {
	// The seed's cold start from ω = 0 with J = 2 and η = 0.2.
	p, err := PlanIRLS(0.9, 1e-5, 10000, 10, IRLSOptions{WarmStart: -1})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("J = %d, ε = %.3f by %s (zCDP conversion of the same noise: %.3f), σ_A = %.3g, σ_B = %.3g\n",
		p.Iterations, p.Epsilon, p.Accountant, p.EpsilonZCDP, p.ScaleA, p.SigmaB)
	// The moments form after a Gaussian FM warm start with a fifth of the
	// budget: one iteration with the floor of WarmIRLSResidualFloor.
	p, err = PlanIRLS(0.9, 1e-5, 10000, 10, IRLSOptions{Form: IRLSFormMoments})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: warm share %.1f, J = %d, η = %.2f, ε = %.3f, σ_A = %.3g, σ_B = %.3g\n",
		p.Form, p.WarmStart, p.Iterations, p.ResidualFloor, p.Epsilon, p.ScaleA, p.SigmaB)
	// The defaults: the preconditioned form, releasing g and m at each of
	// J iterations after a warm start with 0.3 of the budget.
	p, err = PlanIRLS(0.9, 1e-5, 10000, 10, IRLSOptions{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s: warm share %.1f, J = %d, η = %.2f, ε = %.3f, σ_g = %.3g, σ_m = %.3g\n",
		p.Form, p.WarmStart, p.Iterations, p.ResidualFloor, p.Epsilon, p.ScaleA, p.SigmaB)
	// Output:
	// J = 2, ε = 0.900 by gaussian-dp (zCDP conversion of the same noise: 1.198), σ_A = 0.00821, σ_B = 0.00581
	// moments: warm share 0.2, J = 1, η = 0.30, ε = 0.900, σ_A = 0.00433, σ_B = 0.00306
	// preconditioned: warm share 0.3, J = 12, η = 0.10, ε = 0.900, σ_g = 0.0038, σ_m = 0.0038
}

// --- DP-IRLS error vs N (DPLEARN_LONG_TESTS=1) ---

// seedIRLSData follows the seed's Section 4: x ~ N(0, I_d), θ ~ N(0, I_d),
// y ~ N(xᵀθ, 0.01), but with a public scaling instead of the data's own
// maximum: x/(2√d) clipped to the unit ball and y/(2√d) clipped to
// [−1, 1] (so xᵀθ has variance ≈ 1/4 and the noise std is 0.1/(2√d)).
func seedIRLSData(n, d int, seed uint64) (train, test []float64) {
	rng := rand.New(rand.NewPCG(seed, 17))
	theta := make([]float64, d)
	for j := range theta {
		theta[j] = rng.NormFloat64()
	}
	k := d + 1
	nt := n / 10
	rows := make([]float64, (n+nt)*k)
	for i := 0; i < n+nt; i++ {
		r := rows[i*k : (i+1)*k]
		for j := 0; j < d; j++ {
			r[j] = rng.NormFloat64() / (2 * math.Sqrt(float64(d)))
		}
		if nx := math.Sqrt(dot(r[:d], r[:d])); nx > 1 {
			for j := 0; j < d; j++ {
				r[j] /= nx
			}
		}
		y := dot(r[:d], theta) + 0.1*rng.NormFloat64()/(2*math.Sqrt(float64(d)))
		r[d] = math.Max(-1, math.Min(1, y))
	}
	return rows[:n*k], rows[n*k:]
}

// TestIRLSErrorVsN prints the test mean absolute error of DP-IRLS against N
// on the seed's synthetic design (d = 10, ε = 0.9, δ = 1e-5), 10 datasets
// per N, next to the non-private LAD fit and the Wishart reproduction.
func TestIRLSErrorVsN(t *testing.T) {
	if !longTests() {
		t.Skip("set DPLEARN_LONG_TESTS=1")
	}
	ctx := context.Background()
	const d, eps, delta = 10, 0.9, 1e-5
	src := noise.NewInsecureSeeded(31)
	variants := []struct {
		name string
		mech string
		opt  IRLSOptions
	}{
		{"irls gaussian", "irls", IRLSOptions{}},
		{"irls laplace", "irls", IRLSOptions{FirstMoment: "laplace"}},
		{"irls-wishart (not DP)", "irls-wishart", IRLSOptions{FirstMoment: "laplace"}},
	}
	if f := os.Getenv("IRLS_TUNE"); f != "" {
		variants = nil
		for _, eta := range []float64{0.05, 0.1, 0.2, 0.5} {
			for _, J := range []int{2, 4, 8} {
				variants = append(variants, struct {
					name string
					mech string
					opt  IRLSOptions
				}{fmt.Sprintf("irls η=%v J=%d", eta, J), "irls", IRLSOptions{ResidualFloor: eta, Iterations: J}})
			}
		}
	}
	for _, n := range []int{1000, 3000, 10000, 30000, 100000} {
		res := map[string][]float64{}
		for rep := 0; rep < 10; rep++ {
			train, test := seedIRLSData(n, d, uint64(rep))
			data := xpData(t, train, d+1)
			mae := func(coef []float64) float64 {
				s := 0.0
				for i := 0; i < len(test); i += d + 1 {
					s += math.Abs(test[i+d] - Score(Robust, coef, test[i:i+d+1]))
				}
				return s / float64(len(test)/(d+1))
			}
			np, _ := New("nonprivate")
			r, err := np.Fit(ctx, data, Config{Kind: Robust})
			if err != nil {
				t.Fatal(err)
			}
			res["nonprivate LAD"] = append(res["nonprivate LAD"], mae(r.Coef))
			for _, v := range variants {
				est, _ := New(v.mech)
				r, err := est.Fit(ctx, data, Config{Kind: Robust, Epsilon: eps, Delta: delta, Lambda: -1, Source: src, IRLS: v.opt})
				if err != nil {
					t.Fatalf("%s N=%d: %v", v.name, n, err)
				}
				res[v.name] = append(res[v.name], mae(r.Coef))
			}
		}
		keys := make([]string, 0, len(res))
		for k := range res {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			m, s := meanSD(res[k])
			t.Logf("N=%-7d %-24s test MAE %.4f ± %.4f", n, k, m, s)
		}
	}
}

// ExampleLAD fits y = 0.5x through five points, one of them a gross outlier:
// the least-absolute-deviations slope ignores it (least squares would give
// −0.18).
func ExampleLAD() {
	rows := []float64{0.2, 0.1, 0.4, 0.2, 0.6, 0.3, 0.8, 0.4, 1.0, -1}
	fit, err := LAD(context.Background(), rows, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("slope %.3f, certified optimal: %v\n", fit.Coef[0], fit.Certified)
	// Output: slope 0.500, certified optimal: true
}

// ExampleNew_irls fits a DP robust regression on synthetic rows and prints
// its guarantee (seeded randomness: an experiment, not a release).
func ExampleNew_irls() {
	rows, _ := xpRows(Linear, 2000, 3, 1)
	m := suffstatFor(rows, 4)
	est, err := New("irls")
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := est.Fit(context.Background(), Data{Stats: m, Rows: rows},
		Config{Kind: Robust, Epsilon: 0.9, Delta: 1e-5, Lambda: -1, Source: noise.NewInsecureSeeded(1)})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Privacy.Guarantee(), len(res.Coef), "coefficients")
	// Output: (0.9, 1e-05)-DP 3 coefficients
}

// TestLADDegenerate: on discrete data (many tied rows, a degenerate LP
// vertex) the fit is certified optimal and no random move, small or large,
// lowers the objective.
func TestLADDegenerate(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	const k = 4
	rows := make([]float64, 0, 3000*k)
	for i := 0; i < 3000; i++ {
		a, b := float64(rng.IntN(3)), float64(rng.IntN(2))
		rows = append(rows, 0.5, 0.3*a/2, 0.4*b, float64(rng.IntN(5))/4-0.5)
	}
	fit, err := LAD(context.Background(), rows, k)
	if err != nil {
		t.Fatal(err)
	}
	if !fit.Certified {
		t.Fatalf("not certified: %+v", fit)
	}
	f0 := ladObjective(rows, k, fit.Coef)
	if math.Abs(f0-fit.Objective) > 1e-12 {
		t.Errorf("reported objective %v, recomputed %v", fit.Objective, f0)
	}
	for trial := 0; trial < 300; trial++ {
		scale := []float64{1e-6, 1e-3, 0.1}[trial%3]
		v := make([]float64, k-1)
		for j := range v {
			v[j] = fit.Coef[j] + scale*rng.NormFloat64()
		}
		if f := ladObjective(rows, k, v); f < f0-1e-13 {
			t.Fatalf("move of scale %v lowers the objective: %v < %v", scale, f, f0)
		}
	}
}

// TestWarmIRLSResidualFloor checks the public rule's known answers: the
// floor 0.3 for large N·ε/d, 3√(d/(Nε)) in between, 1 at most; it reads
// N, d and ε only (its signature), so it is public.
func TestWarmIRLSResidualFloor(t *testing.T) {
	for _, c := range []struct {
		n    int64
		d    int
		eps  float64
		want float64
	}{
		{22524, 9, 1, 0.3}, {22524, 9, 0.1, 0.3}, {353, 11, 1, 3 * math.Sqrt(11.0/353)}, {353, 11, 0.5, 3 * math.Sqrt(22.0/353)},
		{353, 11, 0.1, 1}, {100, 1, 1, 0.3}, {1, 10, 1, 1},
	} {
		if got := WarmIRLSResidualFloor(c.n, c.d, c.eps); math.Abs(got-c.want) > 1e-15 {
			t.Errorf("N=%d d=%d ε=%v: η = %v, want %v", c.n, c.d, c.eps, got, c.want)
		}
	}
}
