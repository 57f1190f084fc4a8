package regress

import (
	"context"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/report"
)

// TestReportedGuaranteeHolds recomputes each FM-family guarantee from the
// noise its report prints (scale, entries) and the sensitivities recomputed
// from the published formulas (fmSensitivityFormula; the printed ones must
// agree with them up to the floating-point allowance), with the grid slack
// of the noise package, and checks that the printed (ε, δ) is met: a report
// can never claim more than its noise delivers, and a sensitivity halved in
// the code fails here.
func TestReportedGuaranteeHolds(t *testing.T) {
	rows, _ := xpRows(Linear, 3000, 6, 9)
	data := Data{Stats: stats(t, rows, 7)}
	logRows, _ := xpRows(Logistic, 3000, 6, 9)
	logData := Data{Stats: stats(t, logRows, 7)}
	for _, c := range []struct {
		mech       string
		eps, delta float64
		approx     string // logistic approximation; "" means linear data
	}{{"fm", 0.3, 0, ""}, {"fm", 2, 0, ""}, {"relaxed-fm", 0.5, 1e-6, ""}, {"relaxed-fm", 3, 1e-5, ""}, {"gaussian-fm", 0.1, 1e-5, ""}, {"gaussian-fm", 4, 1e-7, ""},
		{"fm", 1, 0, ApproxChebyshev}, {"relaxed-fm", 0.5, 1e-6, ApproxLeastSquares}, {"gaussian-fm", 0.1, 1e-5, ApproxChebyshev}, {"gaussian-fm", 1, 1e-6, ApproxTaylor}} {
		est, _ := New(c.mech)
		cfg := Config{Kind: Linear, Epsilon: c.eps, Delta: c.delta, Lambda: -1, Source: noise.NewInsecureSeeded(1)}
		d := data
		if c.approx != "" {
			cfg.Kind, cfg.LogisticApprox, d = Logistic, c.approx, logData
		}
		res, err := est.Fit(context.Background(), d, cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := res.Privacy
		// The formula of each release, never the printed figure.
		a2 := 0.125
		if c.approx != "" {
			lq, err := NewLogisticQuadratic(c.approx, 0)
			if err != nil {
				t.Fatal(err)
			}
			a2 = lq.A2
		}
		p.Releases = append([]report.Release(nil), p.Releases...)
		for i := range p.Releases {
			f := fmSensitivityFormula(t, c.mech, cfg.Kind, i, 6, 3000, a2)
			if r := &p.Releases[i]; !(r.Sensitivity >= f && r.Sensitivity <= f*(1+1e-6)) {
				t.Errorf("%s %s: release %q prints sensitivity %v, its formula gives %v", c.mech, c.approx, r.Name, r.Sensitivity, f)
			} else {
				r.Sensitivity = f // the checks below use the formula
			}
		}
		if c.approx != "" {
			// The printed sensitivities are the approximation's.
			lq, _ := NewLogisticQuadratic(c.approx, 0)
			want, _ := SensitivitiesForApprox(Logistic, 6, 3000, lq)
			got := map[string]float64{"fm": want.FM, "relaxed-fm": want.Relaxed, "gaussian-fm": want.Lambda2}[c.mech]
			if r := res.Privacy.Releases[len(p.Releases)-1]; r.Sensitivity != got {
				t.Errorf("%s %s: printed sensitivity %v, the approximation's is %v", c.mech, c.approx, r.Sensitivity, got)
			}
		}
		if p.Epsilon != c.eps || p.Delta != c.delta {
			t.Fatalf("%s: report says (%v, %v), asked (%v, %v)", c.mech, p.Epsilon, p.Delta, c.eps, c.delta)
		}
		switch c.mech {
		case "fm":
			if p.Rho != 0 {
				t.Errorf("fm: ρ = %v stated; pure ε-DP states none (a ρ ledger converts ε)", p.Rho)
			}
			r := p.Releases[0]
			eff := r.Sensitivity + noise.LaplaceGridSlack(r.Scale, r.Entries)
			if eff/r.Scale > c.eps {
				t.Errorf("fm: Δ/b = %v > ε = %v", eff/r.Scale, c.eps)
			}
		default:
			// One Gaussian mechanism: whitened sensitivity over the blocks.
			s2 := 0.0
			for _, r := range p.Releases {
				e := noise.GaussianCalibrationSensitivity(r.Sensitivity, r.Scale, r.Entries) / r.Scale
				s2 += e * e
			}
			mu := math.Sqrt(s2)
			floor := mu // the μ recomputed from the formulas
			if c.mech == "gaussian-fm" {
				// Calibrated by the joint supremum (joint.go): the printed
				// whitened sensitivity must be at least the joint figure
				// (exactJoint, the supremum over t = |xᵀx'|) of the
				// blocks, plus the whitened grid slack and the discrete
				// margin, below the separate sum, and meet δ. The blocks
				// are taken both from the formulas and as printed (which
				// include the floating-point allowance, so the margin
				// cannot hide behind it).
				r1, r2 := p.Releases[0], p.Releases[1]
				q1, q2 := res.Privacy.Releases[0], res.Privacy.Releases[1]
				sl := math.Hypot(noise.GaussianGridSlack(r1.Scale, r1.Entries)/r1.Scale, noise.GaussianGridSlack(r2.Scale, r2.Entries)/r2.Scale)
				joint := (math.Max(exactJoint(t, r1.Sensitivity/r1.Scale, r2.Sensitivity/r2.Scale), exactJoint(t, q1.Sensitivity/q1.Scale, q2.Sensitivity/q2.Scale)) + sl) * (1 + noise.DiscreteGaussianMargin)
				if p.WhitenedReleases != 2 || p.WhitenedSensitivity < joint || p.WhitenedSensitivity >= mu {
					t.Errorf("gaussian-fm: printed whitened sensitivity %v, recomputed joint %v, separate %v", p.WhitenedSensitivity, joint, mu)
				}
				var b strings.Builder
				if err := p.WriteText(&b); err != nil || !strings.Contains(b.String(), "L2 sensitivity "+report.Up(p.WhitenedSensitivity)) {
					t.Errorf("gaussian-fm: the report text does not print the whitened sensitivity:\n%s", b.String())
				}
				mu, floor = p.WhitenedSensitivity, joint
			}
			// The ρ a zCDP ledger is charged (accounting.GDPToZCDP): at
			// least μ²/2 for the μ recomputed from the formulas, and no
			// more than the printed noise's μ²/2 with the sensitivities'
			// floating-point allowance (1e-6 relative, above).
			if p.Rho < floor*floor/2 || p.Rho > mu*mu/2*(1+3e-6) {
				t.Errorf("%s: ρ = %v, want in [%v, %v] (μ²/2 recomputed, printed)", c.mech, p.Rho, floor*floor/2, mu*mu/2)
			}
			d, err := accounting.AnalyticGaussianDelta(c.eps, 1, mu)
			if err != nil {
				t.Fatal(err)
			}
			if d > c.delta {
				t.Errorf("%s: printed (%v, %v) but the noise gives δ = %v", c.mech, c.eps, c.delta, d)
			}
			if d < 0.5*c.delta {
				t.Errorf("%s: δ achieved %v is far below %v: budget wasted", c.mech, d, c.delta)
			}
		}
	}
}

// TestPrintedGuaranteeIsExactProfile backs the claim of every Gaussian
// mechanism outside the FM family by the exact privacy profile of the noise
// its report prints (PRIVACY-NOTES items 21-22): each release is a Gaussian
// with μ_i = (Δ_i + grid slack)/σ_i, repeated `reps` times; the composition
// is √(Σ reps·μ_i²)-Gaussian-DP, whose analytic-Gaussian δ at the printed ε
// must not exceed the printed δ. The profile is computed here from the
// printed noise scales and the sensitivities recomputed from their formulas
// (sensitivityFormula: never the printed ones, which must agree with them up
// to the floating-point allowance), independently of the calibration code,
// so a sensitivity halved in the code (its noise halved with it) fails here.
// The same computation with every printed scale halved must fail: the test
// can fail.
func TestPrintedGuaranteeIsExactProfile(t *testing.T) {
	linRows, _ := xpRows(Linear, 3000, 6, 9)
	logRows, _ := xpRows(Logistic, 3000, 6, 9)
	lin := Data{Stats: stats(t, linRows, 7), Rows: linRows}
	logi := Data{Stats: stats(t, logRows, 7), Rows: logRows}
	for _, c := range []struct {
		mech       string
		kind       Kind
		data       Data
		eps, delta float64
		reps       int
		opt        func(*Config)
	}{
		{"irls", Robust, lin, 1, 1e-5, 0, nil},                                               // the default preconditioned form, J from the release names
		{"irls", Robust, lin, 1, 1e-5, 1, func(c *Config) { c.IRLS.Form = IRLSFormMoments }}, // warm start, J = 1
		{"irls", Robust, lin, 0.5, 1e-6, 3, func(c *Config) { c.IRLS.Form = IRLSFormGradient; c.IRLS.Iterations = 3 }},
		{"irls", Robust, lin, 0.5, 1e-6, 4, func(c *Config) { c.IRLS.Iterations = 4; c.IRLS.Split = 0.6; c.IRLS.WarmStart = 0.5 }},
		{"irls", Robust, lin, 1, 1e-5, 2, func(c *Config) { c.IRLS.WarmStart = -1 }},
		{"irls", Robust, lin, 0.3, 1e-6, 5, func(c *Config) { c.IRLS.Iterations = 5; c.IRLS.Split = 0.2; c.IRLS.WarmStart = -1 }},
		{"noisygd", Linear, lin, 1, 1e-5, 1000, nil},                             // Huber's loss: T = min(1000, max(100, ⌊2Nε/d⌋)) = min(1000, 6000/6) (issue 26)
		{"noisygd", Linear, lin, 0.2, 1e-5, 200, nil},                            // Huber's loss: T = ⌊2·3000·0.2/6⌋
		{"noisygd", Linear, lin, 1, 1e-5, 250, func(c *Config) { c.Huber = -1 }}, // the squared loss on the ball: T = min(1000, max(100, ⌊Nε/(2d)⌋)) = ⌊3000/12⌋
		{"noisygd", Linear, lin, 0.5, 1e-6, 100, func(c *Config) { c.Huber = 0.3; c.NoisyGD.Iterations = 100 }},
		{"noisygd", Linear, lin, 2, 1e-6, 50, func(c *Config) { c.NoisyGD.Iterations = 50 }},                    // the data-scaled step: the trace released once (TestNoisyGDDataStep)
		{"noisygd", Logistic, logi, 0.5, 1e-6, 40, func(c *Config) { c.NoisyGD.Iterations = 40 }},               // the gradient clipped to norm c = 0.5 (issue 26), and its data-scaled step's trace
		{"noisygd", Logistic, logi, 0.5, 1e-6, 40, func(c *Config) { c.NoisyGD.Iterations = 40; c.Huber = -1 }}, // unclipped, on the ball 2√d
		{"noisygd", Logistic, logi, 0.5, 1e-6, 40, func(c *Config) { c.NoisyGD.Iterations = 40; c.Huber = 0.2 }},
		// The warm start's two Gaussian FM releases happen once ("(once)"
		// in their names), the J iterations' releases reps times.
		{"irls", Robust, lin, 1, 1e-5, 2, func(c *Config) { c.IRLS.WarmStart = 0.3; c.IRLS.Iterations = 2 }},
		{"irls", Robust, lin, 0.5, 1e-6, 3, func(c *Config) { c.IRLS.WarmStart = 0.5; c.IRLS.Iterations = 3; c.IRLS.Split = 0.7 }},
	} {
		cfg := Config{Kind: c.kind, Epsilon: c.eps, Delta: c.delta, Lambda: -1, Source: noise.NewInsecureSeeded(3)}
		if c.opt != nil {
			c.opt(&cfg)
		}
		est, _ := New(c.mech)
		res, err := est.Fit(context.Background(), c.data, cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := res.Privacy
		if p.Epsilon > c.eps || p.Delta != c.delta {
			t.Fatalf("%s: report says (%v, %v), asked (%v, %v)", c.mech, p.Epsilon, p.Delta, c.eps, c.delta)
		}
		// Every sensitivity is recomputed from its formula (never read
		// from the report) and must agree with the printed one up to the
		// floating-point allowance; the profile uses the recomputed one.
		n := int(c.data.Stats.N())
		d := c.data.Stats.K() - 1
		eta := 0.0
		if res.Released != nil {
			eta = res.Released.ResidualFloor
		}
		if c.mech == "noisygd" {
			eta = huberOf(cfg, n, d)
		}
		formula := make([]float64, len(p.Releases))
		for i, r := range p.Releases {
			formula[i] = sensitivityFormula(t, r, c.kind, n, d, eta)
			if !(r.Sensitivity >= formula[i] && r.Sensitivity <= formula[i]*(1+1e-6)) {
				t.Errorf("%s %s: release %q prints sensitivity %v, its formula gives %v", c.mech, c.kind, r.Name, r.Sensitivity, formula[i])
			}
		}
		profileMu := func(scaleFactor float64) float64 {
			s2 := 0.0
			releases, sens := p.Releases, formula
			if k := p.WhitenedReleases; k > 0 {
				// Jointly calibrated blocks (joint.go): one Gaussian
				// mechanism whose whitened sensitivity the report prints;
				// it must be at least the joint supremum (exactJoint) of
				// the blocks' sensitivities (from the formulas, and as
				// printed with the floating-point allowance) over their
				// printed scales, plus the grid slack and the discrete
				// margin; the profile uses the larger of the two.
				// Scaling every noise by f scales it by about 1/f.
				if c.mech != "irls" || k != 2 {
					t.Fatalf("%s: unexpected whitened releases", c.mech)
				}
				r1, r2 := releases[0], releases[1]
				sl := math.Hypot(noise.GaussianGridSlack(r1.Scale, r1.Entries)/r1.Scale, noise.GaussianGridSlack(r2.Scale, r2.Entries)/r2.Scale)
				jf := math.Max(exactJoint(t, sens[0]/r1.Scale, sens[1]/r2.Scale), exactJoint(t, r1.Sensitivity/r1.Scale, r2.Sensitivity/r2.Scale))
				joint := (jf + sl) * (1 + noise.DiscreteGaussianMargin)
				if p.WhitenedSensitivity < joint*(1-1e-12) {
					t.Errorf("%s: printed whitened sensitivity %v below the joint figure %v recomputed from the formulas", c.mech, p.WhitenedSensitivity, joint)
				}
				w := math.Max(p.WhitenedSensitivity, joint) / scaleFactor
				s2, releases, sens = w*w, releases[k:], sens[k:]
			}
			for i, r := range releases {
				if r.Noise != "gaussian" {
					t.Fatalf("%s: release %q has %s noise", c.mech, r.Name, r.Noise)
				}
				sc := r.Scale * scaleFactor
				e := noise.GaussianCalibrationSensitivity(sens[i], sc, r.Entries) / sc
				reps := c.reps
				if i := strings.Index(r.Name, "each of "); reps == 0 && i >= 0 { // "each of J iterations"
					if _, err := fmt.Sscanf(r.Name[i:], "each of %d iterations", &reps); err != nil {
						t.Fatalf("%s: release %q: %v", c.mech, r.Name, err)
					}
				}
				if strings.HasSuffix(r.Name, "(once)") {
					reps = 1
				}
				s2 += float64(reps) * e * e
			}
			return math.Sqrt(s2)
		}
		profile := func(scaleFactor float64) float64 {
			d, err := accounting.AnalyticGaussianDelta(p.Epsilon, 1, profileMu(scaleFactor))
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
		// The μ the accountant line prints must be at least the one
		// recomputed here (a composition term left out of it fails).
		if m := printedMu.FindStringSubmatch(p.Accountant); m != nil {
			got, err := strconv.ParseFloat(m[1], 64)
			if err != nil {
				t.Fatal(err)
			}
			if mu := profileMu(1); got < mu*(1-1e-9) {
				t.Errorf("%s %s: the accountant prints μ = %v, the releases compose to μ = %v", c.mech, c.kind, got, mu)
			}
		} else if c.mech == "irls" {
			t.Errorf("%s: no μ in the accountant line %q", c.mech, p.Accountant)
		}
		// The ρ a zCDP ledger is charged: at least μ²/2 for the μ of the
		// releases recomputed here (irls states its zCDP accountant's ρ,
		// noisygd μ²/2 of its composed steps), and not above it by more
		// than the discrete margin (irls's accountant needs none).
		if mu := profileMu(1); p.Rho < mu*mu/2*(1-1e-9) || p.Rho > mu*mu/2*(1+1e-6) {
			t.Errorf("%s %s: ρ = %v, the releases give μ²/2 = %v", c.mech, c.kind, p.Rho, mu*mu/2)
		}
		if d := profile(1); d > c.delta || d < 0.5*c.delta {
			t.Errorf("%s %s (ε=%v, δ=%v, %+v): the printed noise with the formula sensitivities gives δ = %v at the printed ε = %v", c.mech, c.kind, c.eps, c.delta, cfg.IRLS, d, p.Epsilon)
		}
		if d := profile(0.5); d <= c.delta {
			t.Errorf("%s: half the printed noise still meets δ (%v): the check has no power", c.mech, d)
		}
	}
}

// exactJoint is the supremum over one replaced record of the whitened
// change √(p²(1+t)/2 + q²(1−t²)), t = |xᵀx′| ∈ [0, 1], of Gaussian FM's two
// blocks with whitened sensitivities p and q (joint.go's model), derived
// here: with a = p², b = q², f(t) = a(1+t)/2 + b(1−t²) is concave with
// f′(t) = a/2 − 2bt, so its maximum on [0, 1] is at t* = a/(4b) when
// a < 4b, f(t*) = a/2 + b + a²/(16b), and at t = 1, f = a, otherwise. It is
// checked against maxF's grid search (which can only be below it).
func exactJoint(t *testing.T, p, q float64) float64 {
	t.Helper()
	a, b := p*p, q*q
	f := a
	if a < 4*b {
		ts := a / (4 * b)
		f = a*(1+ts)/2 + b*(1-ts*ts)
	}
	j := math.Sqrt(f)
	if g := maxF(p, q); g > j*(1+1e-12) || g < j*(1-1e-8) {
		t.Fatalf("joint supremum %v, grid search %v", j, g)
	}
	return j
}

// printedMu reads the composed Gaussian-DP μ of an accountant line
// ("μ = √(Σ μ_i²) = 0.53" for irls, "μ = √T/z = 0.53" for noisygd, "μ =
// √(T/z² + μ_t²) = 0.53" for noisygd with its data-scaled step).
var printedMu = regexp.MustCompile(`μ = (?:√\(Σ μ_i²\)|√T/z|√\(T/z² \+ μ_t²\)) = ([0-9.]+(?:e[-+]?[0-9]+)?)`)

// fmSensitivityFormula is the published sensitivity of release i of an
// FM-family report for d coefficients and N rows, with the logistic
// curvature a2 (⅛ for Taylor; logapprox.go): fm's L1 2(d+1)²/N (linear),
// (2·a2·d² + 3d)/N (logistic, (d²/4 + 3d)/N at ⅛); relaxed-fm's L2
// 2√(1+4d+d²)/N, √((2·a2·d)² + d)/N; gaussian-fm's Λ1 4/N, 1/N and Λ2
// √2/N, √2·a2/N (fm.go, the seeds' tables with the Frobenius correction).
func fmSensitivityFormula(t *testing.T, mech string, kind Kind, i, d, n int, a2 float64) float64 {
	t.Helper()
	D, N := float64(d), float64(n)
	lin := kind == Linear
	switch {
	case mech == "fm" && i == 0 && lin:
		return 2 * (D + 1) * (D + 1) / N
	case mech == "fm" && i == 0:
		return (2*a2*D*D + 3*D) / N
	case mech == "relaxed-fm" && i == 0 && lin:
		return 2 * math.Sqrt(1+4*D+D*D) / N
	case mech == "relaxed-fm" && i == 0:
		return math.Sqrt(4*a2*a2*D*D+D) / N
	case mech == "gaussian-fm" && i == 0 && lin:
		return 4 / N
	case mech == "gaussian-fm" && i == 0:
		return 1 / N
	case mech == "gaussian-fm" && i == 1 && lin:
		return math.Sqrt2 / N
	case mech == "gaussian-fm" && i == 1:
		return math.Sqrt2 * a2 / N
	}
	t.Fatalf("%s %s: no formula for release %d", mech, kind, i)
	return 0
}

// sensitivityFormula recomputes the sensitivity of a Gaussian-family
// release from its formula, identified by the release's name and norm, with
// the public N, d and residual floor η (irls): the derivations of irls.go,
// irls_forms.go, fm.go and noisygd.go, written out here independently of
// the code that calibrates the noise. TestSensitivityFormulasAttained
// checks that extremal neighbouring pairs reach (or approach) them.
func sensitivityFormula(t *testing.T, r report.Release, kind Kind, n, d int, eta float64) float64 {
	t.Helper()
	N, D := float64(n), float64(d)
	l1 := r.Norm == "L1"
	needEta := func() {
		if !(eta > 0) {
			t.Fatalf("release %q: no residual floor η", r.Name)
		}
	}
	switch {
	case strings.HasPrefix(r.Name, "warm start: Gaussian FM least-squares Λ1"):
		return 4 / N // ‖2yx − 2y′x′‖ ≤ 4
	case strings.HasPrefix(r.Name, "warm start: Gaussian FM Λ2"):
		return math.Sqrt2 / N // ‖xxᵀ − x′x′ᵀ‖_F ≤ √2
	case strings.HasPrefix(r.Name, "A = "):
		needEta()
		if l1 {
			return 2 * math.Sqrt(D) / (eta * N) // s‖x‖₁ ≤ √d/η, twice
		}
		return 2 / (eta * N) // ‖s y x‖ ≤ 1/η, twice
	case strings.HasPrefix(r.Name, "B = "):
		needEta()
		return math.Sqrt2 / (eta * N) // ‖a aᵀ − b bᵀ‖_F ≤ √2/η
	case strings.HasPrefix(r.Name, "g = "):
		if l1 {
			return 2 * math.Sqrt(D) / N // |ψ| ≤ 1, ‖x‖₁ ≤ √d, twice
		}
		return 2 / N // |ψ| ≤ 1, ‖x‖ ≤ 1, twice
	case strings.HasPrefix(r.Name, "m = "):
		return 1 / N // η·s ∈ (0, 1]
	case strings.HasPrefix(r.Name, "trace (1/N)Σ‖x_i‖²"):
		return 1 / N // ‖x‖² ∈ [0, 1]
	case strings.HasPrefix(r.Name, "noisy gradient"):
		// Full batch. Huber's loss with scale η > 0 (linear): D = 4η
		// (|2·clamp(r, ±η)| ≤ 2η, twice); the logistic gradient clipped
		// to norm c = η > 0: D = 2c. Otherwise the default radius:
		// R = √d/2 (linear), 2√d (logistic); D = 2(R + 2) and 2σ(R).
		if eta > 0 && kind == Logistic {
			return 2 * eta / N
		}
		if eta > 0 {
			return 4 * eta / N
		}
		if kind == Logistic {
			return 2 * sigmoid(2*math.Sqrt(D)) / N
		}
		return 2 * (math.Sqrt(D)/2 + 2) / N
	}
	t.Fatalf("release %q: no sensitivity formula", r.Name)
	return 0
}

// TestSensitivityFormulasAttained checks the formulas of
// sensitivityFormula against the code that computes the released
// statistics, on extremal neighbouring pairs (replace one row of N): the
// computed change must not exceed the printed sensitivity and must reach the
// formula (up to rounding) where the bound is tight, so a formula — or a
// printed figure — halved or with a term dropped is caught here or by
// TestPrintedGuaranteeIsExactProfile.
func TestSensitivityFormulasAttained(t *testing.T) {
	const d, n, eta = 3, 5, 0.25
	// Rows shared by both datasets (the other n−1 rows) and the pair.
	base := []float64{0.1, 0.2, 0.3, 0.5, -0.2, 0.1, 0, -0.3, 0.3, 0.3, 0.3, 0, 0, 0, 0.4, 0.2}
	rows := func(last []float64) []float64 { return append(append([]float64(nil), base...), last...) }
	l2 := func(a, b []float64) float64 {
		s := 0.0
		for i := range a {
			s += (a[i] - b[i]) * (a[i] - b[i])
		}
		return math.Sqrt(s)
	}
	plan := func(opt IRLSOptions) IRLSPlan {
		p, err := PlanIRLS(1, 1e-5, n, d, opt)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	mom := plan(IRLSOptions{ResidualFloor: eta, Form: IRLSFormMoments, WarmStart: 0.3})
	pre := plan(IRLSOptions{ResidualFloor: eta, Form: IRLSFormPreconditioned, WarmStart: 0.3})
	grad := plan(IRLSOptions{ResidualFloor: eta, Form: IRLSFormGradient, WarmStart: 0.3})
	release := func(name string) report.Release { return report.Release{Name: name, Norm: "L2"} }
	for _, c := range []struct {
		name    string
		printed float64
		formula float64
		change  float64
		tight   bool // the pair attains the formula (else: approaches it)
	}{
		{"warm Λ1: (e1, 1) vs (e1, −1)", mom.FMSens1, sensitivityFormula(t, release("warm start: Gaussian FM least-squares Λ1"), Robust, n, d, eta), func() float64 {
			a, _ := Objective(Linear, stats(t, rows([]float64{1, 0, 0, 1}), d+1))
			b, _ := Objective(Linear, stats(t, rows([]float64{1, 0, 0, -1}), d+1))
			return l2(a.Lambda1, b.Lambda1)
		}(), true},
		{"warm Λ2: e1 vs e2", mom.FMSens2, sensitivityFormula(t, release("warm start: Gaussian FM Λ2"), Robust, n, d, eta), func() float64 {
			a, _ := Objective(Linear, stats(t, rows([]float64{1, 0, 0, 0}), d+1))
			b, _ := Objective(Linear, stats(t, rows([]float64{0, 1, 0, 0}), d+1))
			return l2(a.Upper, b.Upper)
		}(), true},
		{"g: (e1, 1) vs (e1, −1) at ω = 0", pre.SensA, sensitivityFormula(t, release("g = "), Robust, n, d, eta), func() float64 {
			w := make([]float64, d)
			a, _ := irlsGradient(rows([]float64{1, 0, 0, 1}), d+1, w, eta)
			b, _ := irlsGradient(rows([]float64{1, 0, 0, -1}), d+1, w, eta)
			return l2(a, b)
		}(), true},
		{"g (gradient form): same pair", grad.SensA, sensitivityFormula(t, release("g = "), Robust, n, d, eta), func() float64 {
			w := make([]float64, d)
			a, _ := irlsGradientMoments(rows([]float64{1, 0, 0, 1}), d+1, w, eta)
			b, _ := irlsGradientMoments(rows([]float64{1, 0, 0, -1}), d+1, w, eta)
			return l2(a, b)
		}(), true},
		{"m: residual 0 vs 1 + ‖ω‖ (ω = 40·e1)", pre.SensB, sensitivityFormula(t, release("m = "), Robust, n, d, eta), func() float64 {
			w := []float64{40, 0, 0}
			_, a := irlsGradient(rows([]float64{0, 1, 0, 0}), d+1, w, eta)
			_, b := irlsGradient(rows([]float64{-1, 0, 0, 1}), d+1, w, eta)
			return math.Abs(a - b)
		}(), false},
		{"B: e1 vs e2, residuals under η", mom.SensB, sensitivityFormula(t, release("B = "), Robust, n, d, eta), func() float64 {
			w := make([]float64, d)
			_, a := irlsMoments(rows([]float64{1, 0, 0, 0}), d+1, w, eta)
			_, b := irlsMoments(rows([]float64{0, 1, 0, 0}), d+1, w, eta)
			return l2(a, b)
		}(), true},
		{"A: (e1, 1) vs (e2, −1) at ω = e1 − e2 (√2 of 2: the bound is not tight)", mom.SensA, sensitivityFormula(t, release("A = "), Robust, n, d, eta) / math.Sqrt2, func() float64 {
			w := []float64{1, -1, 0}
			a, _ := irlsMoments(rows([]float64{1, 0, 0, 1}), d+1, w, eta)
			b, _ := irlsMoments(rows([]float64{0, 1, 0, -1}), d+1, w, eta)
			return l2(a, b)
		}(), true},
	} {
		if c.change > c.printed {
			t.Errorf("%s: the computed statistic moves by %v, more than the printed sensitivity %v", c.name, c.change, c.printed)
		}
		if !(c.printed >= c.formula && c.printed <= c.formula*(1+1e-6)) && !strings.HasPrefix(c.name, "A:") {
			t.Errorf("%s: printed sensitivity %v, formula %v", c.name, c.printed, c.formula)
		}
		if c.tight && math.Abs(c.change-c.formula) > 1e-9*c.formula {
			t.Errorf("%s: the extremal pair moves the statistic by %v, the formula says %v", c.name, c.change, c.formula)
		}
		if !c.tight && c.change < 0.95*c.formula {
			t.Errorf("%s: the extremal pair moves the statistic by %v, far below the formula %v", c.name, c.change, c.formula)
		}
	}
}

// TestPrintedGuaranteeOtherAccountants is TestPrintedGuaranteeIsExactProfile
// for the Gaussian mechanisms whose composition is not one Gaussian: DP-IRLS
// with Laplace noise on its first release (accounted in zCDP: a Laplace
// release with ε_i = (Δ + grid slack)/b is ε_i²/2-zCDP, a Gaussian one
// μ_i²/2, ρ adds; converted by Canonne, Kamath & Steinke 2020) and noisygd
// with Poisson batches (replace-one subsampled Gaussian RDP over T steps,
// improved conversion, with the per-example bound G = 2(1 + R) linear or
// σ(R) logistic). Every sensitivity is recomputed from its formula, and
// the printed ε must be met; with every printed scale halved it must not.
func TestPrintedGuaranteeOtherAccountants(t *testing.T) {
	const n, d = 3000, 6
	linRows, _ := xpRows(Linear, n, d, 9)
	logRows, _ := xpRows(Logistic, n, d, 9)
	lin := Data{Stats: stats(t, linRows, d+1), Rows: linRows}
	logi := Data{Stats: stats(t, logRows, d+1), Rows: logRows}
	for _, c := range []struct {
		mech  string
		kind  Kind
		data  Data
		eps   float64
		delta float64
		opt   func(*Config)
	}{
		{"irls", Robust, lin, 1, 1e-5, func(c *Config) { c.IRLS.FirstMoment = "laplace" }},
		{"irls", Robust, lin, 0.5, 1e-6, func(c *Config) { c.IRLS.FirstMoment = "laplace"; c.IRLS.Form = IRLSFormGradient }},
		{"irls", Robust, lin, 1, 1e-5, func(c *Config) { c.IRLS.FirstMoment = "laplace"; c.IRLS.WarmStart = -1 }},
		{"noisygd", Linear, lin, 1, 1e-5, func(c *Config) { c.NoisyGD.BatchRate = 0.1; c.NoisyGD.Iterations = 50 }},
		{"noisygd", Linear, lin, 1, 1e-5, func(c *Config) { c.NoisyGD.BatchRate = 0.1; c.NoisyGD.Iterations = 50; c.Huber = -1 }},
		{"noisygd", Logistic, logi, 0.5, 1e-6, func(c *Config) { c.NoisyGD.BatchRate = 0.2; c.NoisyGD.Iterations = 30 }},
		{"noisygd", Logistic, logi, 0.5, 1e-6, func(c *Config) { c.NoisyGD.BatchRate = 0.2; c.NoisyGD.Iterations = 30; c.Huber = -1 }},
	} {
		cfg := Config{Kind: c.kind, Epsilon: c.eps, Delta: c.delta, Lambda: -1, Source: noise.NewInsecureSeeded(3)}
		c.opt(&cfg)
		est, _ := New(c.mech)
		res, err := est.Fit(context.Background(), c.data, cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := res.Privacy
		if p.Epsilon > c.eps || p.Delta != c.delta {
			t.Fatalf("%s: report says (%v, %v), asked (%v, %v)", c.mech, p.Epsilon, p.Delta, c.eps, c.delta)
		}
		var epsAt func(scaleFactor float64) float64
		switch c.mech {
		case "irls":
			eta := res.Released.ResidualFloor
			sens := make([]float64, len(p.Releases))
			for i, r := range p.Releases {
				sens[i] = sensitivityFormula(t, r, c.kind, n, d, eta)
				if !(r.Sensitivity >= sens[i] && r.Sensitivity <= sens[i]*(1+1e-6)) {
					t.Errorf("%s: release %q prints sensitivity %v, its formula gives %v", c.mech, r.Name, r.Sensitivity, sens[i])
				}
			}
			epsAt = func(f float64) float64 {
				rho := 0.0
				rs, ss := p.Releases, sens
				if k := p.WhitenedReleases; k > 0 {
					r1, r2 := rs[0], rs[1]
					sl := math.Hypot(noise.GaussianGridSlack(r1.Scale, r1.Entries)/r1.Scale, noise.GaussianGridSlack(r2.Scale, r2.Entries)/r2.Scale)
					j := math.Max(exactJoint(t, ss[0]/r1.Scale, ss[1]/r2.Scale), exactJoint(t, r1.Sensitivity/r1.Scale, r2.Sensitivity/r2.Scale))
					w := math.Max(p.WhitenedSensitivity, (j+sl)*(1+noise.DiscreteGaussianMargin)) / f
					rho, rs, ss = w*w/2, rs[k:], ss[k:]
				}
				for i, r := range rs {
					reps := 1
					if k := strings.Index(r.Name, "each of "); k >= 0 {
						if _, err := fmt.Sscanf(r.Name[k:], "each of %d iterations", &reps); err != nil {
							t.Fatalf("%s: release %q: %v", c.mech, r.Name, err)
						}
					}
					sc := r.Scale * f
					var e float64
					switch r.Noise {
					case "laplace":
						e = (ss[i] + noise.LaplaceGridSlack(sc, r.Entries)) / sc
					case "gaussian":
						e = noise.GaussianCalibrationSensitivity(ss[i], sc, r.Entries) / sc
					default:
						t.Fatalf("%s: release %q has %s noise", c.mech, r.Name, r.Noise)
					}
					rho += float64(reps) * e * e / 2
				}
				eps, err := accounting.ZCDP{Rho: rho}.EpsilonImproved(c.delta)
				if err != nil {
					t.Fatal(err)
				}
				return eps
			}
		case "noisygd":
			r := p.Releases[0]
			R := math.Sqrt(float64(d)) / 2
			g := 2 * (1 + R)
			eta := huberOf(cfg, n, d)
			switch {
			case c.kind == Logistic && eta > 0:
				g = eta // the gradient clipped to norm c
			case c.kind == Logistic:
				R = 2 * math.Sqrt(float64(d))
				g = sigmoid(R)
			case eta > 0:
				g = 2 * eta // |2·clamp(r, ±η)|·‖x‖
			}
			if !(r.Sensitivity >= g && r.Sensitivity <= g*(1+1e-6)) {
				t.Errorf("%s %s: printed per-example bound %v, formula %v", c.mech, c.kind, r.Sensitivity, g)
			}
			var steps int
			if _, err := fmt.Sscanf(r.Name, "noisy gradient, each of %d steps", &steps); err != nil {
				t.Fatalf("%s: release %q: %v", c.mech, r.Name, err)
			}
			q := math.Nextafter(cfg.NoisyGD.BatchRate, 2)
			epsAt = func(f float64) float64 {
				sc := r.Scale * f
				z := sc / noise.GaussianCalibrationSensitivity(g, sc, r.Entries)
				eps, _, err := accounting.SubsampledGaussianEpsilon(accounting.ReplaceOne, q, z, steps, c.delta, accounting.DefaultOrders())
				if err != nil {
					t.Fatal(err)
				}
				return eps
			}
		}
		if e := epsAt(1); e > p.Epsilon*(1+1e-9) || e < 0.5*p.Epsilon {
			t.Errorf("%s %s (%+v): the printed noise with the formula sensitivities gives ε = %v, printed %v", c.mech, c.kind, cfg.IRLS, e, p.Epsilon)
		}
		if e := epsAt(0.5); e <= p.Epsilon {
			t.Errorf("%s %s: half the printed noise still meets ε (%v): the check has no power", c.mech, c.kind, e)
		}
	}
}

// huberOf is η of noisygd's Huber loss (linear) or c of its clipped
// logistic gradient for cfg on n rows and d coefficients, 0 for the
// squared or unclipped logistic loss: cfg.Huber if > 0, else (cfg.Huber =
// 0) the default 0.5 of either, written out here.
func huberOf(cfg Config, n, d int) float64 {
	switch {
	case (cfg.Kind != Linear && cfg.Kind != Logistic) || cfg.Huber < 0:
		return 0
	case cfg.Huber > 0:
		return cfg.Huber
	}
	return 0.5
}
