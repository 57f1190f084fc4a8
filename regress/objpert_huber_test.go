package regress

import (
	"context"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
)

// Tests of objpert's linear fit with the pseudo-Huber loss (issue 26).

// testPsi is the test's own ψ(r) = 2r/√(1 + (r/η)²).
func testPsi(r, eta float64) float64 { return 2 * r / math.Sqrt(1+(r/eta)*(r/eta)) }

// TestObjPertHuberSquaredLossBits: Config.Huber < 0 reproduces the squared
// loss on the ball bit for bit: the coefficients of two seeded fits are
// the ones d480ef9 (before the Huber loss) printed for the same seed.
func TestObjPertHuberSquaredLossBits(t *testing.T) {
	rows, _ := xpRows(Linear, 600, 4, 17)
	want := map[float64][]uint64{
		0.5: {0xbfd4df8df3700000, 0xbfacc3362ae00000, 0xbfee18e18b940000, 0x3fb3cc43f4800000},
		2:   {0xbfd0832d97c80000, 0x3facc573c6200000, 0xbfeebee27cae0000, 0xbfb58cb589500000},
	}
	for _, eps := range []float64{0.5, 2} {
		res, err := objPert{}.Fit(context.Background(), xpData(t, rows, 5), Config{Kind: Linear, Epsilon: eps, Delta: 1e-6, Huber: -1, Source: noise.NewInsecureSeeded(41)})
		if err != nil {
			t.Fatal(err)
		}
		for j, v := range res.Coef {
			if math.Float64bits(v) != want[eps][j] {
				t.Errorf("ε = %v: coefficient %d is %v, d480ef9 gave %v", eps, j, v, math.Float64frombits(want[eps][j]))
			}
		}
		if !strings.Contains(res.Privacy.Mechanism, "on the ball") {
			t.Errorf("ε = %v: squared-loss mechanism line %q", eps, res.Privacy.Mechanism)
		}
	}
}

// indepHuberDelta is δ(ε) of the Huber plan from the printed scales, by the
// formula of the doc comment, written out here:
// 2δ_G(ε'; √(4xb²(2η)²/σ1² + μ2²)) + 2δ_G(ε'; √(2xb²(2η)²/σ1² + μ2²)),
// ε' = ε − ln(1 + 2xb²/(NΛ)), xb² = 1 + 1e-9.
func indepHuberDelta(t *testing.T, eps, eta, lambda float64, n int64, d int, sigma1, sigma2, sens2 float64) float64 {
	t.Helper()
	xb2 := 1 + 1e-9
	e := eps - math.Log1p(2*xb2/(float64(n)*lambda))
	mu2 := noise.GaussianCalibrationSensitivity(sens2, sigma2, d) / sigma2
	dg := func(mu float64) float64 {
		v, err := accounting.AnalyticGaussianDelta(e, 1, mu)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	a := 4 * xb2 * (2 * eta) * (2 * eta) / (sigma1 * sigma1)
	b := 2 * xb2 * (2 * eta) * (2 * eta) / (sigma1 * sigma1)
	return 2*dg(math.Sqrt(a+mu2*mu2)) + 2*dg(math.Sqrt(b+mu2*mu2))
}

// TestObjPertHuberPrintedProfile fits the default linear objpert (the
// pseudo-Huber loss with η = DefaultHuberScale(N, d, ε)) and checks the
// report against an independent recomputation: the mechanism line names
// the loss, η and the estimand and no ball; the objective noise's printed
// sensitivity is 4η (up to the encoding tolerance); δ recomputed from the
// printed scales by the formula (indepHuberDelta) is ≤ the printed δ and
// exceeds it with half the objective noise; the report is the same for
// another dataset of the same size.
func TestObjPertHuberPrintedProfile(t *testing.T) {
	const n, d, eps, delta = 3000, 5, 0.7, 1e-6
	eta := DefaultHuberScale(n, d, eps)
	var texts [2]string
	for i, seed := range []uint64{3, 4} {
		rows, _ := xpRows(Linear, n, d, seed)
		res, err := objPert{}.Fit(context.Background(), xpData(t, rows, d+1), Config{Kind: Linear, Epsilon: eps, Delta: delta, Source: noise.NewInsecureSeeded(3)})
		if err != nil {
			t.Fatal(err)
		}
		p := res.Privacy
		for _, s := range []string{"pseudo-Huber", "η = " + fmtG(eta), "no parameter ball", "Huber M-estimator", "least squares"} {
			if !strings.Contains(p.Mechanism, s) {
				t.Errorf("mechanism line lacks %q: %s", s, p.Mechanism)
			}
		}
		for _, note := range p.Notes {
			if strings.Contains(note, "radius") {
				t.Errorf("Huber report mentions a radius: %s", note)
			}
		}
		r0, r1 := p.Releases[0], p.Releases[1]
		if want := 4 * eta; !(r0.Sensitivity >= want && r0.Sensitivity <= want*(1+1e-8)) {
			t.Errorf("printed gradient sensitivity %v, want 4η = %v", r0.Sensitivity, want)
		}
		lambda := DefaultObjPertLambda(Linear, eps, n)
		if got := indepHuberDelta(t, eps, eta, lambda, n, d, r0.Scale, r1.Scale, r1.Sensitivity); got > delta {
			t.Errorf("the printed noise gives δ = %v > printed δ = %v", got, delta)
		} else if got < 0.9*delta {
			t.Errorf("the printed noise gives δ = %v, far below the target %v (budget wasted)", got, delta)
		}
		if got := indepHuberDelta(t, eps, eta, lambda, n, d, r0.Scale/2, r1.Scale, r1.Sensitivity); got <= delta {
			t.Errorf("half the objective noise gives δ = %v ≤ %v: no power", got, delta)
		}
		var b strings.Builder
		if err := p.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		texts[i] = b.String()
	}
	if texts[0] != texts[1] {
		t.Errorf("the report depends on the data:\n%s\n---\n%s", texts[0], texts[1])
	}
	t.Logf("Huber report:\n%s", texts[0])
	// A radius given with the Huber loss is refused, naming the squared
	// loss that has a ball, and so is a plan-level η set on the options.
	rows, _ := xpRows(Linear, n, d, 3)
	for _, c := range []struct {
		cfg  Config
		want string
	}{
		{Config{ObjPert: ObjPertOptions{Radius: 2}}, "give --huber -1 to fit the squared loss on that ball"},
		{Config{ObjPert: ObjPertOptions{Huber: 0.3}}, "Fit reads Config.Huber"},
	} {
		c.cfg.Kind, c.cfg.Epsilon, c.cfg.Delta, c.cfg.Source = Linear, eps, delta, noise.NewInsecureSeeded(3)
		_, err := objPert{}.Fit(context.Background(), xpData(t, rows, d+1), c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one naming %q", c.cfg.ObjPert, err, c.want)
		}
	}
}

// TestObjPertHuberGradDiffExtremal searches rows z = (x, y), z' = (x', y')
// with ‖x‖ ≤ 1, |y| ≤ 1 and parameters ω ∈ ℝ³ (‖ω‖ up to 100) for the
// largest ‖∇ℓ(ω; z) − ∇ℓ(ω; z')‖ of the pseudo-Huber loss (the test's own
// ψ): it must be ≤ 4η, and for η ≤ 0.1 come within 1% of it (the bound is
// tight when η is small against the target's range: x' = −x, y = y' = 1,
// ω = 0 gives 4/√(1 + 1/η²); for larger η the sum of the two residuals,
// y + y' ≤ 2, keeps both from saturating ψ); the plan's GradSensitivity
// must be in [max found, 4η(1 + 1e-8)].
func TestObjPertHuberGradDiffExtremal(t *testing.T) {
	rng := rand.New(rand.NewPCG(26, 1))
	const d = 3
	for _, eta := range []float64{0.05, 0.1, 0.35, 2} {
		// The extremal pair x = e1, x' = −e1, y = y' = 1 at ω = 0.
		worst := 2 * testPsi(1, eta)
		unit := func() []float64 {
			v := make([]float64, d)
			for j := range v {
				v[j] = rng.NormFloat64()
			}
			s := math.Sqrt(dot(v, v))
			r := math.Pow(rng.Float64(), 0.2) // mostly near the sphere
			for j := range v {
				v[j] *= r / s
			}
			return v
		}
		for trial := 0; trial < 200000; trial++ {
			x, xp := unit(), unit()
			w := unit()
			scale := math.Pow(10, 4*rng.Float64()-2) // ‖ω‖ from 0.01 to 100
			for j := range w {
				w[j] *= scale
			}
			y, yp := 2*rng.Float64()-1, 2*rng.Float64()-1
			a, ap := testPsi(y-dot(x, w), eta), testPsi(yp-dot(xp, w), eta)
			diff := 0.0
			for j := 0; j < d; j++ {
				v := -a*x[j] + ap*xp[j]
				diff += v * v
			}
			worst = math.Max(worst, math.Sqrt(diff))
		}
		if worst > 4*eta*(1+1e-12) {
			t.Errorf("η = %v: gradient difference %v > 4η", eta, worst)
		}
		if eta <= 0.1 && worst < 0.99*4*eta {
			t.Errorf("η = %v: largest gradient difference found %v, not near 4η = %v", eta, worst, 4*eta)
		}
		p, err := PlanObjPert(Linear, 1, 1e-6, 1000, d, ObjPertOptions{Huber: eta})
		if err != nil {
			t.Fatal(err)
		}
		if !(p.GradSensitivity >= worst && p.GradSensitivity <= 4*eta*(1+1e-8)) {
			t.Errorf("η = %v: plan's gradient sensitivity %v, want in [%v, 4η = %v]", eta, p.GradSensitivity, worst, 4*eta)
		}
		if p.Radius != 0 {
			t.Errorf("η = %v: the Huber plan has a radius %v", eta, p.Radius)
		}
		t.Logf("η = %v: largest ‖Δ‖ found %.6g = %.4f·4η; plan %.6g", eta, worst, worst/(4*eta), p.GradSensitivity)
	}
}

// TestObjPertHuberExact1D is TestObjPertExact1D for the pseudo-Huber loss:
// the exact δ(ε) of step 2 in one dimension (exact minimiser, continuous
// noise, no output noise) at extremal neighbouring pairs (x ∈ {−1, 0, 1},
// y ∈ {−1, 0, 1}) on two bases (the second without curvature, where the
// Jacobian term is largest) is below the plan's bound. Power (as in
// TestObjPertExact1D): with 10σ1 the Gaussian terms vanish, and at ε = J/2
// the curvature-free base's exact δ exceeds the bound without the
// Jacobian term.
func TestObjPertHuberExact1D(t *testing.T) {
	xsCand := []float64{-1, 0, 1}
	ysCand := []float64{-1, 0, 1}
	bases := [][2][]float64{{{0.3, -0.7, 0.9}, {0.5, -0.2, 1}}, {{0, 0, 0}, {0, 1, 0}}}
	for _, st := range []struct{ lambda, eta, eps, delta float64 }{{0.5, 0.1, 1, 1e-3}, {2, 0.35, 1, 1e-3}, {0.3, 1, 2, 1e-2}} {
		p, err := PlanObjPert(Linear, st.eps, st.delta, 4, 1, ObjPertOptions{Lambda: st.lambda, Huber: st.eta})
		if err != nil {
			t.Fatal(err)
		}
		stage1 := p
		stage1.Mu2 = 0
		eps := []float64{p.Jacobian / 2, p.Jacobian + 0.02, p.Jacobian + 0.3, st.eps}
		worst := make([]float64, len(eps))
		for _, b := range bases {
			for _, x1 := range xsCand {
				for _, y1 := range ysCand {
					for _, x2 := range xsCand {
						for _, y2 := range ysCand {
							if x1 == x2 && y1 == y2 {
								continue
							}
							xs, ys := append(b[0][:3:3], x1), append(b[1][:3:3], y1)
							xs2, ys2 := append(b[0][:3:3], x2), append(b[1][:3:3], y2)
							for j, v := range exact1DObjPertEta(Linear, st.eta, xs, ys, xs2, ys2, p.Lambda, 0, p.Sigma1, eps) {
								worst[j] = math.Max(worst[j], v)
							}
						}
					}
				}
			}
		}
		for j, e := range eps {
			bound := stage1.DeltaAt(e)
			t.Logf("Λ=%v η=%v ε=%.3f: exact worst δ %.4g, bound %.4g (J = %.3g, σ1 = %.3g)", st.lambda, st.eta, e, worst[j], bound, p.Jacobian, p.Sigma1)
			if worst[j] > bound {
				t.Errorf("Λ=%v η=%v ε=%v: exact δ %v exceeds the bound %v", st.lambda, st.eta, e, worst[j], bound)
			}
		}
		big := stage1
		big.Jacobian = 0
		big.Sigma1 *= 10
		b := bases[1]
		xs, ys := append(b[0][:3:3], 1), append(b[1][:3:3], 1)
		xs2, ys2 := append(b[0][:3:3], 0), append(b[1][:3:3], 1)
		ex := exact1DObjPertEta(Linear, st.eta, xs, ys, xs2, ys2, p.Lambda, 0, big.Sigma1, eps[:1])[0]
		if nj := big.DeltaAt(eps[0]); ex <= nj {
			t.Errorf("Λ=%v η=%v: at ε = J/2 the exact δ %v is within the bound without the Jacobian term %v: no power", st.lambda, st.eta, ex, nj)
		}
	}
}

// huberObjective is the average objective (1/N)[Σℓ + bᵀω] + (Λ/2)‖ω‖² of
// the pseudo-Huber loss and its gradient, written out for the tests.
func huberObjGrad(rows []float64, k int, eta, lambda float64, b, w []float64) []float64 {
	d := k - 1
	n := len(rows) / k
	g := make([]float64, d)
	for i := 0; i < n; i++ {
		r := rows[i*k : (i+1)*k]
		res := r[d] - dot(r[:d], w)
		ps := testPsi(res, eta)
		for j := 0; j < d; j++ {
			g[j] -= ps * r[j]
		}
	}
	for j := range g {
		g[j] = (g[j]+b[j])/float64(n) + lambda*w[j]
	}
	return g
}

// TestObjPertHuberSolver: the solver's minimiser of the perturbed
// pseudo-Huber objective (objPertSolve, which also runs the gradient
// check) equals plain gradient descent on the objective written out here
// (step 1/L, L = 2 + Λ, run until the gradient is below 1e-12) to 1e-9 on
// a small table with outlying targets, for several η and noise vectors;
// with η = 100 and no noise the minimiser is within 1e-4 of the ridge
// least-squares solution (XᵀX/N + (Λ/2)I)⁻¹Xᵀy/N, and 50 times closer at
// η = 1000.
func TestObjPertHuberSolver(t *testing.T) {
	const n, d = 60, 3
	k := d + 1
	rows, _ := xpRows(Linear, n, d, 5)
	// Some outlying targets, where the Huber loss differs from squares.
	for i := 0; i < n; i += 7 {
		rows[i*k+d] = -rows[i*k+d]
	}
	data := xpData(t, rows, k)
	const lambda = 0.05
	for _, c := range []struct {
		eta float64
		b   []float64
	}{{0.1, []float64{0, 0, 0}}, {0.1, []float64{3, -2, 1}}, {0.35, []float64{-20, 5, 11}}, {2, []float64{1, 1, -1}}} {
		plan := ObjPertPlan{Kind: Linear, D: d, N: n, Lambda: lambda, Tolerance: 1e-9, Huber: c.eta}
		w, err := objPertSolve(context.Background(), data, rows, plan, c.b)
		if err != nil {
			t.Fatalf("η = %v: %v", c.eta, err)
		}
		gd := make([]float64, d)
		L := 2 + lambda
		for it := 0; it < 200000; it++ {
			g := huberObjGrad(rows, k, c.eta, lambda, c.b, gd)
			if math.Sqrt(dot(g, g)) < 1e-12 {
				break
			}
			for j := range gd {
				gd[j] -= g[j] / L
			}
		}
		if dist := diffNorm(w, gd); dist > 1e-9 {
			t.Errorf("η = %v b = %v: solver %v, gradient descent %v (distance %v)", c.eta, c.b, w, gd, dist)
		}
	}
	// η large: least squares with the ridge.
	a := mat.NewDense(d, d, nil)
	rhs := mat.NewVecDense(d, nil)
	for i := 0; i < n; i++ {
		r := rows[i*k : (i+1)*k]
		for p := 0; p < d; p++ {
			rhs.SetVec(p, rhs.AtVec(p)+r[p]*r[d]/n)
			for q := 0; q < d; q++ {
				a.Set(p, q, a.At(p, q)+r[p]*r[q]/n)
			}
		}
	}
	for p := 0; p < d; p++ {
		a.Set(p, p, a.At(p, p)+lambda/2)
	}
	var ls mat.VecDense
	if err := ls.SolveVec(a, rhs); err != nil {
		t.Fatal(err)
	}
	var dists []float64
	for _, eta := range []float64{100, 1000} {
		w, _, err := minimiseLoss(context.Background(), pseudoHuberLoss{eta: eta}, rows, k, lambda, make([]float64, d))
		if err != nil {
			t.Fatal(err)
		}
		dists = append(dists, diffNorm(w, ls.RawVector().Data))
	}
	// The loss is r² − r⁴/(4η²) + …: the distance falls like 1/η².
	if dists[0] > 1e-4 || dists[1] > dists[0]/50 {
		t.Errorf("distance to ridge least squares %v at η = 100 and %v at η = 1000: not converging like 1/η²", dists[0], dists[1])
	}
}

// TestObjPertHuberGradCheckBound: lossGradCheck's rounding bound for the
// pseudo-Huber loss covers the error of the computed gradient against the
// exact one (big.Float, 200 bits, at the same float64 ω), coordinate-wise
// in L2, including at ω = (c, c, −c) with c = 10⁷ on rows with x₃ =
// fl(x₁ + x₂) (small residuals, where the predictor's rounding, times
// ψ' ≈ 2, dominates) and at a large b cancelled by a large ridge term
// (where the compensated sum's rounding dominates), and rejects a point
// off by 1e-6.
func TestObjPertHuberGradCheckBound(t *testing.T) {
	const n, d = 300, 4
	k := d + 1
	rows, _ := xpRows(Linear, n, d, 9)
	const lambda, eta = 0.01, 0.2
	b := []float64{2.5, -1, 0.3, 7}
	loss := pseudoHuberLoss{eta: eta}
	exact := func(rows []float64, k int, lambda float64, b, w []float64) []float64 {
		d := k - 1
		n := len(rows) / k
		const prec = 200
		nf := new(big.Float).SetPrec(prec).SetInt64(int64(n))
		g := make([]float64, d)
		for j := 0; j < d; j++ {
			acc := new(big.Float).SetPrec(prec)
			for i := 0; i < n; i++ {
				r := rows[i*k : (i+1)*k]
				a := new(big.Float).SetPrec(prec)
				for q := 0; q < d; q++ {
					a.Add(a, new(big.Float).SetPrec(prec).Mul(big.NewFloat(r[q]), big.NewFloat(w[q])))
				}
				res := new(big.Float).SetPrec(prec).Sub(big.NewFloat(r[d]), a)
				// ψ(res) = 2res/√(1 + (res/η)²)
				q := new(big.Float).SetPrec(prec).Quo(res, big.NewFloat(eta))
				q.Mul(q, q)
				q.Add(q, big.NewFloat(1))
				q.Sqrt(q)
				ps := new(big.Float).SetPrec(prec).Quo(new(big.Float).SetPrec(prec).Mul(big.NewFloat(2), res), q)
				acc.Sub(acc, ps.Mul(ps, big.NewFloat(r[j])))
			}
			acc.Add(acc, big.NewFloat(b[j]))
			acc.Quo(acc, nf)
			acc.Add(acc, new(big.Float).SetPrec(prec).Mul(big.NewFloat(lambda), big.NewFloat(w[j])))
			g[j], _ = acc.Float64()
		}
		return g
	}
	w0, _, err := minimiseLoss(context.Background(), loss, rows, k, lambda, b)
	if err != nil {
		t.Fatal(err)
	}
	// Cancelling rows: x = (x₁, x₂, fl(x₁ + x₂))/2 from a 2-feature table.
	r2, _ := xpRows(Linear, n, 2, 10)
	var rows3 []float64
	for i := 0; i < n; i++ {
		x1, x2 := r2[i*3]/2, r2[i*3+1]/2
		rows3 = append(rows3, x1, x2, x1+x2, r2[i*3+2])
	}
	const c = 1e7
	// A large b cancelled by a large ridge term N·Λ·ω: the sum's and the
	// product's rounding dominate.
	const bigMu = 12345.6789
	bigB := []float64{1.2345678e8, -9.87654321e7, 3.3333e7, 5.55555e7}
	wBig := make([]float64, d)
	for j := range wBig {
		wBig[j] = -bigB[j] / (n * bigMu) * (1 + 1e-9*float64(j+1))
	}
	cases := []struct {
		rows   []float64
		k      int
		lambda float64
		b, w   []float64
	}{
		{rows, k, lambda, b, w0},
		{rows, k, lambda, b, []float64{0.3, -0.2, 0.1, 0.05}},
		{rows, k, lambda, b, []float64{1.2345678e7, -1.2345677e7, 3.3e6, -2.1e6}},
		{rows3, 4, 1e-9, []float64{0, 0, 0}, []float64{c + 0.1, c - 0.2, -c}},
		{rows, k, bigMu, bigB, wBig},
	}
	for _, cs := range cases {
		got, bound := lossGradCheck(loss, cs.rows, cs.k, cs.lambda, cs.b, cs.w)
		ex := exact(cs.rows, cs.k, cs.lambda, cs.b, cs.w)
		comp := lossGrad(loss, cs.rows, cs.k, cs.lambda, cs.b, cs.w)
		errNorm := diffNorm(comp, ex)
		t.Logf("‖ω‖ = %.3g: computed gradient norm %.3g, error %.3g, bound %.3g", math.Sqrt(dot(cs.w, cs.w)), got, errNorm, bound)
		if errNorm > bound {
			t.Errorf("‖ω‖ = %.3g: gradient error %v exceeds the bound %v", math.Sqrt(dot(cs.w, cs.w)), errNorm, bound)
		}
	}
	if g, bound := lossGradCheck(loss, rows, k, lambda, b, w0); !(g+bound <= 1e-9) {
		t.Errorf("the solver's minimiser fails the check: %v + %v", g, bound)
	}
	moved := append([]float64(nil), w0...)
	moved[0] += 1e-6
	if g, bound := lossGradCheck(loss, rows, k, lambda, b, moved); g+bound <= 1e-9 {
		t.Errorf("a point moved by 1e-6 passes the check: %v + %v", g, bound)
	}
}

// TestObjPertHuberUnits: under a privacy unit of K rows the Huber plan's
// gradient sensitivity is K·4η, its Jacobian K·ln(1 + β/(NΛ)), and δ of
// its noise recomputed by a midpoint rule over ρ ~ χ with 2·min(K, ⌈d/2⌉)
// degrees of freedom is ≤ the target; K = 1 gives the row-level plan.
func TestObjPertHuberUnits(t *testing.T) {
	const units, d, eps, delta, eta = 500, 4, 1.0, 1e-6, 0.2
	row, err := PlanObjPert(Linear, eps, delta, units, d, ObjPertOptions{Huber: eta})
	if err != nil {
		t.Fatal(err)
	}
	u1, err := PlanObjPertUnits(Linear, eps, delta, units, 1, d, ObjPertOptions{Huber: eta})
	if err != nil {
		t.Fatal(err)
	}
	if u1 != row {
		t.Errorf("K = 1 unit plan %+v differs from the row-level plan %+v", u1, row)
	}
	const K = 3
	p, err := PlanObjPertUnits(Linear, eps, delta, units, K, d, ObjPertOptions{Huber: eta})
	if err != nil {
		t.Fatal(err)
	}
	if want := K * 4 * eta; !(p.GradSensitivity >= want && p.GradSensitivity <= want*(1+1e-8)) {
		t.Errorf("K = %d: gradient sensitivity %v, want K·4η = %v", K, p.GradSensitivity, want)
	}
	N := float64(units * K)
	j := K * math.Log1p(2*(1+1e-9)/(N*p.Lambda))
	if math.Abs(p.Jacobian-j) > 1e-12*j {
		t.Errorf("Jacobian %v, want %v", p.Jacobian, j)
	}
	m := 2 * min(K, (d+1)/2)
	mu1 := K * 4 * eta / p.Sigma1
	mu2 := p.Mu2
	e := eps - j
	h := func(c float64) float64 { return gaussHockeyIndep(t, c, mu2) }
	// χ_m density for even m: a^{m−1}e^{−a²/2}/(2^{m/2−1}(m/2−1)!).
	norm := math.Pow(2, float64(m/2-1)) * math.Gamma(float64(m/2))
	const step = 2e-4
	s := 0.0
	for a := step / 2; a < 30; a += step {
		s += h(e-mu1*a-mu1*mu1/2) * math.Pow(a, float64(m-1)) * math.Exp(-a*a/2) / norm * step
	}
	if s > delta {
		t.Errorf("K = %d: δ of the printed noise %v > target %v", K, s, delta)
	}
	t.Logf("K = %d: σ1 = %.4g (row level %.4g), recomputed δ %.4g", K, p.Sigma1, row.Sigma1, s)
}

// gaussHockeyIndep is the hockey-stick E[(1 − e^{c−L})₊] of the Gaussian
// loss L ~ N(μ²/2, μ²) for every real c, from accounting's analytic δ.
func gaussHockeyIndep(t *testing.T, c, mu float64) float64 {
	t.Helper()
	if !(mu > 0) {
		return math.Max(0, -math.Expm1(c))
	}
	v, err := accounting.AnalyticGaussianDelta(math.Abs(c), 1, mu)
	if err != nil {
		t.Fatal(err)
	}
	if c >= 0 {
		return v
	}
	return 1 - math.Exp(c) + math.Exp(c)*v
}
