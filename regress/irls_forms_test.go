package regress

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/noise"
)

// TestIRLSFormSensitivities checks the derived sensitivities of the
// gradient forms' releases (irls_forms.go) numerically: 20,000 random
// neighbouring rows, iterates and floors never exceed the planned bounds
// of g (L2 and L1), m and the gradient form's B, and extremal pairs attain
// the bounds of g (x = x' = e1 with ψ = ±1 for L2; x = −x' = 1/√d for L1)
// and approach m's (a row inside the floor against one with residual
// 1 + ‖ω‖ for a large ω).
func TestIRLSFormSensitivities(t *testing.T) {
	const d = 3
	rng := rand.New(rand.NewPCG(3, 4))
	unit := func() []float64 { return ballPoint(rng, d) }
	diffs := func(r1, r2, w []float64, eta float64) (g2, g1, m, b2 float64) {
		g, mv := irlsGradient(r1, d+1, w, eta)
		h, mw := irlsGradient(r2, d+1, w, eta)
		for j := range g {
			g2 += (g[j] - h[j]) * (g[j] - h[j])
			g1 += math.Abs(g[j] - h[j])
		}
		g3, ub := irlsGradientMoments(r1, d+1, w, eta)
		h3, uc := irlsGradientMoments(r2, d+1, w, eta)
		for j := range g3 {
			if g3[j] != g[j] || h3[j] != h[j] {
				t.Fatalf("irlsGradientMoments's g differs from irlsGradient's: %v %v", g3, g)
			}
		}
		for j := range ub {
			b2 += (ub[j] - uc[j]) * (ub[j] - uc[j])
		}
		return math.Sqrt(g2), g1, math.Abs(mv - mw), math.Sqrt(b2)
	}
	for _, eta := range []float64{0.05, 0.5} {
		plan := func(form, first string) IRLSPlan {
			p, err := PlanIRLS(1, 1e-5, 1, d, IRLSOptions{ResidualFloor: eta, Form: form, FirstMoment: first})
			if err != nil {
				t.Fatal(err)
			}
			return p
		}
		grad, gradL := plan(IRLSFormGradient, ""), plan(IRLSFormGradient, "laplace")
		pre, preL := plan(IRLSFormPreconditioned, ""), plan(IRLSFormPreconditioned, "laplace")
		mom := plan(IRLSFormMoments, "")
		// The rounding terms differ (the gradient form sums B's terms, up to
		// 1/η, in the same loop), the derived bounds do not.
		if math.Abs(grad.SensA-pre.SensA) > 1e-8*pre.SensA || math.Abs(gradL.SensA-preL.SensA) > 1e-8*preL.SensA || grad.SensB != mom.SensB {
			t.Fatalf("η=%v: g's sensitivity differs between the forms (%v, %v; %v, %v) or B's from the moments form's (%v, %v)",
				eta, grad.SensA, pre.SensA, gradL.SensA, preL.SensA, grad.SensB, mom.SensB)
		}
		if want := 2.0; grad.SensA < want || grad.SensA > want*(1+1e-8) || pre.SensB < 1 || pre.SensB > 1+1e-8 ||
			gradL.SensA < 2*math.Sqrt(d) || gradL.SensA > 2*math.Sqrt(d)*(1+1e-8) {
			t.Errorf("η=%v: sensitivities g %v (L1 %v), m %v; want 2, 2√d, 1 plus rounding", eta, grad.SensA, gradL.SensA, pre.SensB)
		}
		var mg2, mg1, mm, mb float64
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
			g2, g1, m, b2 := diffs(r1, r2, w, eta)
			mg2, mg1, mm, mb = math.Max(mg2, g2), math.Max(mg1, g1), math.Max(mm, m), math.Max(mb, b2)
		}
		if mg2 > grad.SensA || mg1 > gradL.SensA || mm > pre.SensB || mb > grad.SensB {
			t.Errorf("η=%v: observed (g L2 %v, g L1 %v, m %v, B %v) exceed (%v, %v, %v, %v)", eta, mg2, mg1, mm, mb, grad.SensA, gradL.SensA, pre.SensB, grad.SensB)
		}
		if mg2 < 0.5*grad.SensA || mm < 0.5*pre.SensB {
			t.Errorf("η=%v: random pairs reach only g %v of %v and m %v of %v: the check has no power", eta, mg2, grad.SensA, mm, pre.SensB)
		}
		// Extremal pairs.
		g2, _, _, _ := diffs([]float64{1, 0, 0, 1}, []float64{1, 0, 0, -1}, make([]float64, d), eta)
		c := 1 / math.Sqrt(d)
		_, g1, _, _ := diffs([]float64{c, c, c, 1}, []float64{-c, -c, -c, 1}, make([]float64, d), eta)
		if math.Abs(g2-grad.SensA) > 1e-12*grad.SensA || math.Abs(g1-gradL.SensA) > 1e-12*gradL.SensA {
			t.Errorf("η=%v: extremal pairs give g %v (bound %v), L1 %v (bound %v)", eta, g2, grad.SensA, g1, gradL.SensA)
		}
		// m: against ω = 10⁴·e1, the row (10⁻⁴·e1, 1) has residual 0 (η·s =
		// 1) and the row (e1, −1) residual −(1 + 10⁴) (η·s = η/10001).
		_, _, m, _ := diffs([]float64{1e-4, 0, 0, 1}, []float64{1, 0, 0, -1}, []float64{1e4, 0, 0}, eta)
		if m > pre.SensB || m < (1-1e-4)*pre.SensB {
			t.Errorf("η=%v: m's extremal pair gives %v, bound %v", eta, m, pre.SensB)
		}
	}
}

// irlsFixedPoint iterates the noise-free moments IRLS B⁻¹A to convergence.
func irlsFixedPoint(t *testing.T, rows []float64, k int, eta float64) []float64 {
	w := make([]float64, k-1)
	for it := 0; it < 2000; it++ {
		a, up := irlsMoments(rows, k, w, eta)
		next, _, err := irlsStep(a, up, 0)
		if err != nil {
			t.Fatal(err)
		}
		if dist(next, w) < 1e-14 {
			return next
		}
		w = next
	}
	t.Fatalf("noise-free IRLS did not converge")
	return nil
}

// TestIRLSFormsSameIteration checks the identity behind the gradient forms
// on noise-free moments: from the same iterate the moments step B⁻¹A and
// the gradient step ω + B⁻¹g agree to rounding, so the iterations and their
// fixed point are the same; the preconditioned step with the exact Gram
// matrix converges to that fixed point too, where Σψ_η(r_i)x_i = 0.
func TestIRLSFormsSameIteration(t *testing.T) {
	rows, _ := xpRows(Linear, 2000, 4, 11)
	const k, eta = 5, 0.05
	// Gross outliers so that the robust fixed point differs from least squares.
	for i := 0; i < 2000; i += 7 {
		rows[i*k+k-1] = 1
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for trial := 0; trial < 20; trial++ {
		w := []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		a, up := irlsMoments(rows, k, w, eta)
		seed, _, err := irlsStep(a, up, 0)
		if err != nil {
			t.Fatal(err)
		}
		g, up2 := irlsGradientMoments(rows, k, w, eta)
		step, _, err := irlsStep(g, up2, 0)
		if err != nil {
			t.Fatal(err)
		}
		for j := range step {
			step[j] += w[j]
		}
		if e := dist(seed, step); e > 1e-9*(1+math.Sqrt(dot(seed, seed))) {
			t.Errorf("ω = %v: B⁻¹A = %v, ω + B⁻¹g = %v", w, seed, step)
		}
	}
	fix := irlsFixedPoint(t, rows, k, eta)
	if g, _ := irlsGradient(rows, k, fix, eta); math.Sqrt(dot(g, g)) > 1e-10 {
		t.Errorf("Σψ(r)x/N = %v at the IRLS fixed point", g)
	}
	gram, err := Objective(Linear, xpData(t, rows, k).Stats)
	if err != nil {
		t.Fatal(err)
	}
	ls, _, err := gram.Minimize(PostProcess{RelTol: exactRelTol})
	if err != nil {
		t.Fatal(err)
	}
	if dist(ls, fix) < 0.05*math.Sqrt(dot(fix, fix)) {
		t.Fatalf("least squares %v is close to the robust fixed point %v: the test cannot tell them apart", ls, fix)
	}
	w := ls
	for it := 0; it < 400; it++ {
		g, m := irlsGradient(rows, k, w, eta)
		step, _, err := irlsStep(g, gram.Upper, 0)
		if err != nil {
			t.Fatal(err)
		}
		sc := preconditionedScale(m, eta, w)
		for j := range w {
			w[j] += sc * step[j]
		}
	}
	if e := dist(w, fix); e > 1e-8*math.Sqrt(dot(fix, fix)) {
		t.Errorf("preconditioned iteration ends at %v, the IRLS fixed point is %v (distance %v)", w, fix, e)
	}
}

// TestIRLSFormsConverge: with a huge ε, each form's fit equals the
// noise-free iteration of the same form from the exact least-squares warm
// start (ridge λ = 0 is not the default, so λ is given explicitly as 0).
func TestIRLSFormsConverge(t *testing.T) {
	rows, _ := xpRows(Linear, 3000, 4, 5)
	const k, eta, J = 5, 0.1, 3
	data := xpData(t, rows, k)
	gram, err := Objective(Linear, data.Stats)
	if err != nil {
		t.Fatal(err)
	}
	ls, _, err := gram.Minimize(PostProcess{RelTol: exactRelTol})
	if err != nil {
		t.Fatal(err)
	}
	for _, form := range []string{IRLSFormMoments, IRLSFormGradient, IRLSFormPreconditioned} {
		w := append([]float64(nil), ls...)
		for j := 0; j < J; j++ {
			switch form {
			case IRLSFormMoments:
				a, up := irlsMoments(rows, k, w, eta)
				w, _, err = irlsStep(a, up, 0)
			case IRLSFormGradient:
				g, up := irlsGradientMoments(rows, k, w, eta)
				var s []float64
				s, _, err = irlsStep(g, up, 0)
				for i := range w {
					w[i] += s[i]
				}
			default:
				g, m := irlsGradient(rows, k, w, eta)
				var s []float64
				s, _, err = irlsStep(g, gram.Upper, 0)
				sc := preconditionedScale(m, eta, w)
				for i := range w {
					w[i] += sc * s[i]
				}
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		res, err := irlsEstimator{}.Fit(context.Background(), data, Config{Kind: Robust, Epsilon: 1e6, Delta: 1e-5, Lambda: 0,
			Source: noise.NewInsecureSeeded(2), IRLS: IRLSOptions{Iterations: J, ResidualFloor: eta, WarmStart: 0.3, Form: form}})
		if err != nil {
			t.Fatal(err)
		}
		if e := dist(res.Coef, w); e > 1e-3*math.Sqrt(dot(w, w)) {
			t.Errorf("%s: ‖ω_DP − ω_noise-free‖ = %v (ω = %v)", form, e, w)
		}
		if !strings.Contains(res.Privacy.Mechanism, form+" form") {
			t.Errorf("%s: report names %q", form, res.Privacy.Mechanism)
		}
	}
}

// TestIRLSDefaultsArePublic checks that the defaults are functions of the
// public N, d and ε only: the rules' known answers on the example tables'
// sizes, identical plans and reports for two different datasets of equal
// N and d, and a different plan when only N changes.
func TestIRLSDefaultsArePublic(t *testing.T) {
	for _, c := range []struct {
		n     int64
		d     int
		eps   float64
		eta   float64
		iters int
	}{
		{22524, 9, 1, 0.1, 12}, {22524, 9, 0.1, 0.1, 11}, // CPS1988's training split
		{353, 11, 1, 1.5 * math.Sqrt(11.0/353), 6}, {353, 11, 0.5, 1.5 * math.Sqrt(22.0/353), 5}, {353, 11, 0.1, 1.5 * math.Sqrt(110.0/353), 2}, // diabetes
		{20, 10, 1, 1, 1}, {1, 10, 1, 1, 1},
	} {
		p, err := PlanIRLS(c.eps, 1e-5, c.n, c.d, IRLSOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if p.Form != IRLSFormPreconditioned || math.Abs(p.ResidualFloor-c.eta) > 1e-15 || p.Iterations != c.iters ||
			p.WarmStart != DefaultPreconditionedWarmStart || p.Split != DefaultPreconditionedSplit {
			t.Errorf("N=%d d=%d ε=%v: plan %s, η = %v, J = %d, warm %v, split %v; want η = %v, J = %d", c.n, c.d, c.eps,
				p.Form, p.ResidualFloor, p.Iterations, p.WarmStart, p.Split, c.eta, c.iters)
		}
	}
	// Two datasets with the same N and d: the same plan, so the same
	// report (up to the trimming count, a function of released values).
	r1, _ := xpRows(Linear, 2000, 5, 1)
	r2, _ := xpRows(Linear, 2000, 5, 2)
	for i := 0; i < 2000; i += 3 {
		r2[i*6+5] = -1 // a very different target
	}
	report := func(rows []float64) string {
		res, err := irlsEstimator{}.Fit(context.Background(), xpData(t, rows, 6), Config{Kind: Robust, Epsilon: 0.5, Delta: 1e-5, Lambda: -1, Source: noise.NewInsecureSeeded(9)})
		if err != nil {
			t.Fatal(err)
		}
		p := res.Privacy
		var b strings.Builder
		b.WriteString(p.Mechanism + p.Accountant)
		for _, r := range p.Releases {
			b.WriteString(r.Name + r.Norm + r.Noise + fmtG(r.Sensitivity) + fmtG(r.Scale))
		}
		return b.String()
	}
	if a, b := report(r1), report(r2); a != b {
		t.Errorf("equal N, d, ε give different reports:\n%s\n%s", a, b)
	}
	p1, _ := PlanIRLS(0.5, 1e-5, 2000, 5, IRLSOptions{})
	p2, _ := PlanIRLS(0.5, 1e-5, 200, 5, IRLSOptions{})
	if p1.ResidualFloor == p2.ResidualFloor && p1.Iterations == p2.Iterations {
		t.Errorf("N = 2000 and N = 200 give the same η and J: the rules ignore N")
	}
}

// TestIRLSFormErrors: a preconditioned fit needs the warm start, an unknown
// form is refused by name, and irls-wishart reproduces the moments form only.
func TestIRLSFormErrors(t *testing.T) {
	for _, c := range []struct {
		opt  IRLSOptions
		want string
	}{
		{IRLSOptions{Form: IRLSFormPreconditioned, WarmStart: -1}, "needs a warm start"},
		{IRLSOptions{Form: "newton"}, `unknown form "newton"`},
	} {
		if _, err := PlanIRLS(1, 1e-5, 100, 3, c.opt); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want %q", c.opt, err, c.want)
		}
	}
	rows, _ := xpRows(Linear, 200, 3, 1)
	_, err := irlsWishart{}.Fit(context.Background(), xpData(t, rows, 4), Config{Kind: Robust, Epsilon: 1, Delta: 1e-5, Lambda: -1,
		Source: noise.NewInsecureSeeded(1), IRLS: IRLSOptions{Form: IRLSFormGradient}})
	if err == nil || !strings.Contains(err.Error(), "moments form only") {
		t.Errorf("irls-wishart with the gradient form: %v", err)
	}
	// The cold start keeps the seed's form by default.
	if p, err := PlanIRLS(1, 1e-5, 100, 3, IRLSOptions{WarmStart: -1}); err != nil || p.Form != IRLSFormMoments {
		t.Errorf("cold start: form %q, %v", p.Form, err)
	}
}

// ballPoint returns a random point of the unit ball in d dimensions, its
// radius skewed toward 1 (the sensitivity bounds are reached on the sphere).
func ballPoint(rng *rand.Rand, d int) []float64 {
	v := make([]float64, d)
	for j := range v {
		v[j] = rng.NormFloat64()
	}
	s := math.Pow(rng.Float64(), 0.2) / math.Sqrt(dot(v, v))
	for j := range v {
		v[j] *= s
	}
	return v
}

// BenchmarkIRLSPass measures one data pass of an iteration of each form on
// a CPS1988-sized table (N = 22,500, d = 9): the moments and gradient forms
// accumulate the d×d matrix B, the preconditioned form only g and m. Compare
// the sub-benchmarks' ns/op (the moments pass is the reference).
func BenchmarkIRLSPass(b *testing.B) {
	const n, d = 22500, 9
	rows, _ := xpRows(Linear, n, d, 3)
	w := make([]float64, d)
	w[0] = 0.1
	for _, c := range []struct {
		name string
		pass func()
	}{
		{IRLSFormMoments, func() { irlsMoments(rows, d+1, w, 0.1) }},
		{IRLSFormGradient, func() { irlsGradientMoments(rows, d+1, w, 0.1) }},
		{IRLSFormPreconditioned, func() { irlsGradient(rows, d+1, w, 0.1) }},
	} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				c.pass()
			}
		})
	}
}
