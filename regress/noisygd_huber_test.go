package regress

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/noise"
)

// TestNoisyGDHuberSensitivity checks the Huber bounds of
// NoisyGDHuberSensitivity against the gradient the descent computes
// (NoisyGDPlan.addGradients): over random ω of any size (there is no ball),
// rows with ‖x‖ ≤ 1 and |y| ≤ 1, no per-example gradient exceeds G = 2η and
// no difference of two exceeds D = 4η, and for η ≤ ½ the extremal pair
// x' = −x (unit norm), y = y' = 1, ω = 0 (both residuals 1 ≥ η) reaches D
// exactly.
func TestNoisyGDHuberSensitivity(t *testing.T) {
	const d = 3
	rng := rand.New(rand.NewPCG(5, 6))
	for _, eta := range []float64{0.05, 0.3, 2} {
		G, D, err := NoisyGDHuberSensitivity(eta)
		if err != nil {
			t.Fatal(err)
		}
		plan := NoisyGDPlan{Kind: Linear, Huber: eta}
		grad := planGradient(plan, d)
		maxG, maxD := searchGradientBounds(rng, grad, d, func() float64 { return 2*rng.Float64() - 1 })
		if maxG > G*(1+1e-12) || maxD > D*(1+1e-12) {
			t.Errorf("η=%v: observed G %.4f > %.4f or D %.4f > %.4f", eta, maxG, G, maxD, D)
		}
		// x' = −x, ω = 0, y = y' = 1: both residuals are 1 ≥ η and the two
		// gradients −2ηx and +2ηx differ by 4η. (For η > ½ no pair reaches
		// 4η: r + r' = y + y' ≤ 2 when x' = −x; the bound is then loose.)
		if eta <= 0.5 {
			x, neg, w := []float64{1, 0, 0}, []float64{-1, 0, 0}, []float64{0, 0, 0}
			if ext := dist(grad(x, 1, w), grad(neg, 1, w)); math.Abs(ext-D) > 1e-12*D {
				t.Errorf("η=%v: extremal pair gives %v, want D = 4η = %v", eta, ext, D)
			}
		}
	}
	for _, bad := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if _, _, err := NoisyGDHuberSensitivity(bad); err == nil {
			t.Errorf("η = %v accepted", bad)
		}
	}
}

// planGradient returns the per-row gradient plan computes
// (NoisyGDPlan.addGradients) at ω = w for the row (x, y).
func planGradient(plan NoisyGDPlan, d int) func(x []float64, y float64, w []float64) []float64 {
	return func(x []float64, y float64, w []float64) []float64 {
		g := make([]float64, d)
		plan.addGradients(g, append(append([]float64(nil), x...), y), d+1, w, nil)
		return g
	}
}

// searchGradientBounds returns the largest per-row gradient norm and the
// largest difference of two rows' gradients found over 20,000 random
// pairs of rows (‖x‖ ≤ 1, y drawn by y) at random ω with ‖ω‖ from 0.1 to
// 100 (no ball).
func searchGradientBounds(rng *rand.Rand, grad func(x []float64, y float64, w []float64) []float64, d int, y func() float64) (maxG, maxD float64) {
	for i := 0; i < 20000; i++ {
		w := ballOrSphere(rng, d, math.Pow(10, 3*rng.Float64()-1))
		g1 := grad(ballOrSphere(rng, d, 1), y(), w)
		g2 := grad(ballOrSphere(rng, d, 1), y(), w)
		maxG = math.Max(maxG, math.Sqrt(dot(g1, g1)))
		maxD = math.Max(maxD, dist(g1, g2))
	}
	return maxG, maxD
}

// huberMEstimate is the Huber M-estimator minimising Σℓ(y − xᵀω) with
// ℓ(r) = r² (|r| ≤ η), 2η|r| − η² beyond, plus (λ/2)N‖ω‖², computed by
// iteratively reweighted least squares (weights min(1, η/|r|)), written
// out here independently of noisygd.
func huberMEstimate(rows []float64, k int, eta, lambda float64) []float64 {
	d := k - 1
	n := len(rows) / k
	w := make([]float64, d)
	for it := 0; it < 500; it++ {
		a := make([]float64, d*d)
		b := make([]float64, d)
		for i := 0; i < n; i++ {
			r := rows[i*k : (i+1)*k]
			res := r[d] - dot(r[:d], w)
			wt := 1.0
			if math.Abs(res) > eta {
				wt = eta / math.Abs(res)
			}
			for p := 0; p < d; p++ {
				b[p] += 2 * wt * r[d] * r[p]
				for q := 0; q < d; q++ {
					a[p*d+q] += 2 * wt * r[p] * r[q]
				}
			}
		}
		for p := 0; p < d; p++ {
			a[p*d+p] += lambda * float64(n)
		}
		next := solveDense(a, b, d)
		if dist(next, w) < 1e-13 {
			return next
		}
		w = next
	}
	return w
}

// solveDense solves a·x = b (d×d, row-major) by Gaussian elimination with
// partial pivoting.
func solveDense(a, b []float64, d int) []float64 {
	a, b = append([]float64(nil), a...), append([]float64(nil), b...)
	for c := 0; c < d; c++ {
		p := c
		for r := c + 1; r < d; r++ {
			if math.Abs(a[r*d+c]) > math.Abs(a[p*d+c]) {
				p = r
			}
		}
		for j := 0; j < d; j++ {
			a[c*d+j], a[p*d+j] = a[p*d+j], a[c*d+j]
		}
		b[c], b[p] = b[p], b[c]
		for r := c + 1; r < d; r++ {
			f := a[r*d+c] / a[c*d+c]
			for j := c; j < d; j++ {
				a[r*d+j] -= f * a[c*d+j]
			}
			b[r] -= f * b[c]
		}
	}
	x := make([]float64, d)
	for c := d - 1; c >= 0; c-- {
		s := b[c]
		for j := c + 1; j < d; j++ {
			s -= a[c*d+j] * x[j]
		}
		x[c] = s / a[c*d+c]
	}
	return x
}

// TestNoisyGDHuberConverges: with negligible noise (ε = 10⁵) noisygd on
// Huber's loss reaches the Huber M-estimator computed by IRLS in the test,
// for a scale inside the residuals' range (η = 0.05: a third of the rows
// are beyond it, with outliers planted) and one beyond all of them (η = 5:
// least squares); and it differs from least squares where outliers move
// the least-squares fit.
func TestNoisyGDHuberConverges(t *testing.T) {
	ctx := context.Background()
	rows, _ := xpRows(Linear, 1000, 3, 41)
	k := 4
	for i := 0; i < 50; i++ { // 5% gross outliers
		rows[i*k+3] = 1
	}
	data := xpData(t, rows, k)
	ls, err := nonPrivate{}.Fit(ctx, data, Config{Kind: Linear})
	if err != nil {
		t.Fatal(err)
	}
	steps := 20000
	if testing.Short() {
		steps = 8000
	}
	// The learning rate is post-processing: 4 speeds up η = 0.05, whose
	// curvature 2P(|r| < η)·XᵀX/N is small; η = 5 keeps the default 1/2.
	for _, c := range []struct{ eta, lr float64 }{{0.05, 4}, {5, 0}} {
		eta := c.eta
		want := huberMEstimate(rows, k, eta, 0)
		res, err := noisyGD{}.Fit(ctx, data, Config{Kind: Linear, Epsilon: 1e5, Delta: 1e-5, Huber: eta, Source: noise.NewInsecureSeeded(3),
			NoisyGD: NoisyGDOptions{Iterations: steps, LearningRate: c.lr}})
		if err != nil {
			t.Fatal(err)
		}
		if e := dist(res.Coef, want); e > 0.02*math.Sqrt(dot(want, want)) {
			t.Errorf("η=%v: ‖ω − ω_Huber‖ = %.4g, ‖ω_Huber‖ = %.4g", eta, e, math.Sqrt(dot(want, want)))
		}
		if eta == 0.05 && dist(want, ls.Coef) < 0.05*math.Sqrt(dot(want, want)) {
			t.Errorf("η=%v: the Huber estimate %v is within 5%% of least squares %v: the outliers do not test the loss", eta, want, ls.Coef)
		}
		if eta == 5 && dist(want, ls.Coef) > 1e-9 {
			t.Errorf("η=5: IRLS %v differs from least squares %v", want, ls.Coef)
		}
		if !strings.Contains(res.Privacy.Mechanism, "Huber's loss with scale η = ") || !strings.Contains(res.Privacy.Mechanism, "is post-processing") {
			t.Errorf("η=%v: report does not name the Huber loss and its ball as post-processing: %s", eta, res.Privacy.Mechanism)
		}
	}
}

// TestNoisyGDHuberBall: with the Huber loss the ball is post-processing:
// the default is NoisyGDHuberBallFactor = 2 times the squared loss's rule,
// a given --radius projects (the fit stays inside it) without changing the
// noise, and the Huber loss on a logistic model is refused by name instead
// of being ignored.
func TestNoisyGDHuberBall(t *testing.T) {
	ctx := context.Background()
	rows, _ := xpRows(Linear, 2000, 3, 1)
	data := xpData(t, rows, 4)
	fit := func(cfg Config) *Result {
		t.Helper()
		cfg.Kind, cfg.Epsilon, cfg.Delta, cfg.Source = Linear, 1, 1e-5, noise.NewInsecureSeeded(1)
		res, err := noisyGD{}.Fit(ctx, data, cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	def := fit(Config{})
	want := 2 * math.Sqrt(3) / 2 // N·ε/d = 667 < 1000: the rule's base √d/2, twice
	if !strings.Contains(def.Privacy.Mechanism, fmt.Sprintf("ball ‖ω‖ ≤ %s is post-processing", fmtG(want))) {
		t.Errorf("default ball: want R = 2·√3/2 = %v in %q", want, def.Privacy.Mechanism)
	}
	small := fit(Config{NoisyGD: NoisyGDOptions{Radius: 0.3}})
	if n := math.Sqrt(dot(small.Coef, small.Coef)); n > 0.3*(1+1e-12) {
		t.Errorf("--radius 0.3: ‖ω‖ = %v", n)
	}
	if a, b := def.Privacy.Releases[0], small.Privacy.Releases[0]; a.Sensitivity != b.Sensitivity || a.Scale != b.Scale {
		t.Errorf("the ball changed the noise: %+v against %+v", a, b)
	}
	lrows, _ := xpRows(Logistic, 200, 3, 1)
	for _, c := range []struct {
		c    float64
		want string
	}{{1.5, "logistic gradient clip c must be in (0, 1]"}, {math.Inf(1), "--huber must be finite"}, {math.NaN(), "--huber must be finite"}} {
		_, err := noisyGD{}.Fit(ctx, xpData(t, lrows, 4), Config{Kind: Logistic, Epsilon: 1, Delta: 1e-5, Huber: c.c, Source: noise.NewInsecureSeeded(1)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("noisygd --huber %v on a logistic model: error %v, want %q", c.c, err, c.want)
		}
	}
	_, err := objPert{}.Fit(ctx, xpData(t, lrows, 4), Config{Kind: Logistic, Epsilon: 1, Delta: 1e-5, Huber: 0.2, Source: noise.NewInsecureSeeded(1)})
	if err == nil || !strings.Contains(err.Error(), "linear models only") {
		t.Errorf("objpert --huber on a logistic model: error %v, want one naming linear models", err)
	}
}

// TestNoisyGDLogisticClipSensitivity checks the bounds of
// NoisyGDLogisticClipSensitivity against the gradient the descent computes
// (NoisyGDPlan.addGradients): over random ω of any size (there is no
// ball), rows with ‖x‖ ≤ 1 and y ∈ {0, 1}, no per-example gradient exceeds
// G = c and no difference of two exceeds D = 2c; for c ≤ ½ the extremal
// pair x' = −x (unit norm), y = y' = 0, ω = 0 (both gradients ½x and
// −½x, clipped to ±c·x) reaches D exactly. c outside (0, 1] is refused.
func TestNoisyGDLogisticClipSensitivity(t *testing.T) {
	const d = 3
	rng := rand.New(rand.NewPCG(7, 8))
	for _, c := range []float64{0.05, 0.5, 1} {
		G, D, err := NoisyGDLogisticClipSensitivity(c)
		if err != nil {
			t.Fatal(err)
		}
		if G != c || D != 2*c {
			t.Fatalf("c=%v: G, D = %v, %v, want c, 2c", c, G, D)
		}
		plan := NoisyGDPlan{Kind: Logistic, Huber: c}
		grad := planGradient(plan, d)
		maxG, maxD := searchGradientBounds(rng, grad, d, func() float64 { return float64(rng.IntN(2)) })
		if maxG > G*(1+1e-12) || maxD > D*(1+1e-12) {
			t.Errorf("c=%v: observed G %.4f > %.4f or D %.4f > %.4f", c, maxG, G, maxD, D)
		}
		if c <= 0.5 {
			x, neg, w := []float64{1, 0, 0}, []float64{-1, 0, 0}, []float64{0, 0, 0}
			if ext := dist(grad(x, 0, w), grad(neg, 0, w)); math.Abs(ext-D) > 1e-12*D {
				t.Errorf("c=%v: extremal pair gives %v, want D = 2c = %v", c, ext, D)
			}
		}
	}
	for _, bad := range []float64{0, -1, 1.01, math.Inf(1), math.NaN()} {
		if _, _, err := NoisyGDLogisticClipSensitivity(bad); err == nil {
			t.Errorf("c = %v accepted", bad)
		}
	}
}

// TestNoisyGDLogisticClipPlan: the logistic default is the clipped
// gradient with c = DefaultLogisticClip, no ball, the step rule
// NoisyGDLogisticClipIterationsFor and the sensitivity 2c/N up to the
// rounding allowance; --huber -1 restores the unclipped loss on the ball
// 2√d with T = 100 and sensitivity 2σ(2√d)/N; the report names the clip
// and the estimand.
func TestNoisyGDLogisticClipPlan(t *testing.T) {
	ctx := context.Background()
	const n, d = 2000, 3
	lrows, _ := xpRows(Logistic, n, d, 3)
	data := xpData(t, lrows, d+1)
	fit := func(huber float64) (*Result, NoisyGDPlan) {
		t.Helper()
		cfg := Config{Kind: Logistic, Epsilon: 1, Delta: 1e-5, Huber: huber, Source: noise.NewInsecureSeeded(2)}
		res, err := noisyGD{}.Fit(ctx, data, cfg)
		if err != nil {
			t.Fatal(err)
		}
		p, err := planNoisyGD(Logistic, 1, 1e-5, n, 1, d, NoisyGDOptions{}, NoisyGDHuberScale(cfg, n, d))
		if err != nil {
			t.Fatal(err)
		}
		return res, p
	}
	res, p := fit(0)
	if p.Huber != DefaultLogisticClip || p.Radius != 0 || p.Steps != NoisyGDLogisticClipIterationsFor(d, n, 1) {
		t.Errorf("default plan: c = %v, R = %v, T = %d; want c = %v, no ball, T = %d", p.Huber, p.Radius, p.Steps, DefaultLogisticClip, NoisyGDLogisticClipIterationsFor(d, n, 1))
	}
	if want := 2 * DefaultLogisticClip / n; p.Sensitivity < want || p.Sensitivity > want*(1+1e-6) {
		t.Errorf("default sensitivity %v, want 2c/N = %v up to rounding", p.Sensitivity, want)
	}
	if got := res.Privacy.Releases[0].Sensitivity; got != p.Sensitivity {
		t.Errorf("report's sensitivity %v, plan's %v", got, p.Sensitivity)
	}
	for _, s := range []string{"clipped to norm c = 0.5", "no parameter ball", "not the maximum-likelihood one"} {
		if !strings.Contains(res.Privacy.Mechanism, s) {
			t.Errorf("report %q does not say %q", res.Privacy.Mechanism, s)
		}
	}
	_, old := fit(-1)
	r := 2 * math.Sqrt(d)
	if old.Huber != 0 || old.Radius != r || old.Steps != DefaultNoisyGDIterations {
		t.Errorf("--huber -1: c = %v, R = %v, T = %d; want the unclipped loss, R = 2√d = %v, T = 100", old.Huber, old.Radius, old.Steps, r)
	}
	if want := 2 * sigmoid(r) / n; old.Sensitivity < want || old.Sensitivity > want*(1+1e-5) {
		t.Errorf("--huber -1 sensitivity %v, want 2σ(R)/N = %v up to the encoding and rounding allowances", old.Sensitivity, want)
	}
}

// TestNoisyGDLogisticClipIterations pins the clipped logistic gradient's
// step rule with answers computed by hand: T = min(C, max(25, ⌊Nε/4⌋)),
// C = min(4000, max(1000, ⌊Nε/20⌋)).
func TestNoisyGDLogisticClipIterations(t *testing.T) {
	for _, tc := range []struct {
		d    int
		n    int64
		eps  float64
		want int
	}{
		{31, 455, 0.1, 25},     // breast_cancer: ⌊11.375⌋ → the floor
		{31, 455, 2, 227},      // ⌊227.5⌋
		{7, 966, 0.5, 120},     // SmokeBan-sized: ⌊120.75⌋
		{18, 3300, 0.1, 82},    // collinear: ⌊82.5⌋
		{9, 22522, 0.5, 1000},  // capped: ⌊2815.25⌋ > 1000 = C (⌊563.05⌋ < 1000)
		{9, 22522, 1, 1126},    // C = ⌊1126.1⌋
		{7, 183200, 0.1, 1000}, // ⌊4580⌋ > C = 1000 (⌊916⌋ < 1000)
		{7, 183200, 0.5, 4000}, // C = min(4000, ⌊4580⌋)
		{24, 183200, 2, 4000},
		{7, 100000, 0.3, 1500}, // ⌊7500⌋ > C = ⌊1500⌋
		{4, 100, 0, 100},       // no ε: the plain default
		{4, 100, math.Inf(1), 100},
	} {
		if got := NoisyGDLogisticClipIterationsFor(tc.d, tc.n, tc.eps); got != tc.want {
			t.Errorf("d=%d N=%d ε=%v: T = %d, want %d", tc.d, tc.n, tc.eps, got, tc.want)
		}
	}
}

// TestNoisyGDEncodingSlack: checkRows accepts ‖x‖² up to 1 + encTol, and
// the Huber pair x' = −x at that norm, y = y' = 1, ω = 0 moves the average
// gradient by 4η·√(1 + encTol)/N, above 4η/N by far more than the rounding
// allowance: the printed sensitivity must cover it.
func TestNoisyGDEncodingSlack(t *testing.T) {
	const n, d, eta = 1000, 2, 0.25
	c := math.Sqrt((1 + encTol) / 2) // ‖(c, c)‖² = 1 + encTol
	rows := []float64{c, c, 1}
	if _, err := checkRows(xpData(t, append(append([]float64(nil), rows...), make([]float64, 3*(n-1))...), 3), Linear); err != nil {
		t.Fatalf("the row at the tolerance is refused: %v", err)
	}
	plan, err := PlanNoisyGDHuber(1, 1e-5, n, d, eta, NoisyGDOptions{})
	if err != nil {
		t.Fatal(err)
	}
	g1 := make([]float64, d)
	g2 := make([]float64, d)
	plan.addGradients(g1, []float64{c, c, 1}, d+1, []float64{0, 0}, nil)
	plan.addGradients(g2, []float64{-c, -c, 1}, d+1, []float64{0, 0}, nil)
	if got := dist(g1, g2) / n; got > plan.Sensitivity {
		t.Errorf("the pair at ‖x‖² = 1 + encTol moves the average gradient by %.17g > the printed sensitivity %.17g", got, plan.Sensitivity)
	}
}

// TestNoisyGDHuberIterations pins the Huber loss's step rule with answers
// computed by hand: T = min(C, max(100, ⌊2Nε/d⌋)) with the cap
// C = min(4000, max(1000, ⌊Nε/d⌋)), and the squared and logistic losses
// keep NoisyGDIterationsFor.
func TestNoisyGDHuberIterations(t *testing.T) {
	for _, tc := range []struct {
		d    int
		n    int64
		eps  float64
		want int
	}{
		{9, 22522, 0.1, 500},   // CPS1988 ε = 0.1: ⌊500.49⌋
		{9, 22522, 0.5, 1251},  // CPS1988 ε = 0.5: the cap ⌊1251.2⌋ (2r = 2502)
		{9, 4500, 1, 1000},     // r = 500: 2r = 1000 meets the cap 1000
		{9, 8100, 1, 1000},     // r = 900: 2r = 1800, the cap still 1000
		{9, 30000, 1, 3333},    // r = 3333.3: the cap ⌊3333.3⌋
		{9, 36000, 1, 4000},    // r = 4000: the cap reaches 4000
		{7, 183200, 0.5, 4000}, // the 229,000-row shape's training rows at r = 13,086: 4000
		{18, 3300, 8, 1466},    // collinear at ε = 8: ⌊1466.7⌋
		{11, 353, 0.5, 100},    // diabetes: ⌊32.09⌋ → the floor
		{18, 3300, 1, 366},     // collinear: ⌊366.67⌋
		{4, 100, 0, 100},       // no ε
		{4, 100, math.Inf(1), 100},
	} {
		if got := NoisyGDHuberIterationsFor(tc.d, tc.n, tc.eps); got != tc.want {
			t.Errorf("d=%d N=%d ε=%v: T = %d, want %d", tc.d, tc.n, tc.eps, got, tc.want)
		}
		if !(tc.eps > 0) || math.IsInf(tc.eps, 0) {
			continue
		}
		if p, err := PlanNoisyGDHuber(tc.eps, 1e-6, tc.n, tc.d, 0.5, NoisyGDOptions{}); err != nil || p.Steps != tc.want {
			t.Errorf("d=%d N=%d ε=%v: the plan takes T = %d (%v), want %d", tc.d, tc.n, tc.eps, p.Steps, err, tc.want)
		}
	}
}

// TestNoisyGDLogisticClipConverges: with negligible noise (ε = 10⁵)
// noisygd's clipped logistic gradient reaches a root of its estimating
// equation Σ clamp(σ(x_iᵀω) − y_i, ±c/‖x_i‖)·x_i = 0, evaluated here
// independently of addGradients, and for a clip most rows reach (c = 0.1)
// that root is not the maximum-likelihood estimate.
func TestNoisyGDLogisticClipConverges(t *testing.T) {
	ctx := context.Background()
	const n, d, c = 1000, 3, 0.1
	rows, _ := xpRows(Logistic, n, d, 31)
	data := xpData(t, rows, d+1)
	mle, err := nonPrivate{}.Fit(ctx, data, Config{Kind: Logistic})
	if err != nil {
		t.Fatal(err)
	}
	score := func(w []float64) float64 {
		g := make([]float64, d)
		for i := 0; i < n; i++ {
			r := rows[i*(d+1) : (i+1)*(d+1)]
			var z, nx float64
			for j := 0; j < d; j++ {
				z += r[j] * w[j]
				nx += r[j] * r[j]
			}
			lim := c / math.Sqrt(nx)
			res := math.Max(-lim, math.Min(lim, 1/(1+math.Exp(-z))-r[d]))
			for j := 0; j < d; j++ {
				g[j] += res * r[j] / n
			}
		}
		return math.Sqrt(dot(g, g))
	}
	steps := 20000
	if testing.Short() {
		steps = 6000
	}
	res, err := noisyGD{}.Fit(ctx, data, Config{Kind: Logistic, Epsilon: 1e5, Delta: 1e-5, Huber: c, Source: noise.NewInsecureSeeded(3),
		NoisyGD: NoisyGDOptions{Iterations: steps}})
	if err != nil {
		t.Fatal(err)
	}
	if s0, s := score(make([]float64, d)), score(res.Coef); s > 1e-3*s0 {
		t.Errorf("‖score(ω)‖ = %.3g, not below 1e-3 × ‖score(0)‖ = %.3g", s, s0)
	}
	if dist(res.Coef, mle.Coef) < 0.05*math.Sqrt(dot(mle.Coef, mle.Coef)) {
		t.Errorf("the clipped fit %v is within 5%% of the MLE %v: the clip does not test the estimand", res.Coef, mle.Coef)
	}
}
