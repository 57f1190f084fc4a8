package regress

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/report"
)

// withUnit returns the rows of the first unit (given) followed by base.
func withUnit(first [][]float64, base []float64) []float64 {
	return append(concatRows(first), base...)
}

// TestIRLSUnitSensitivityExtremalPairs checks PlanIRLSUnits on neighbouring
// datasets that differ in all K rows of one unit, with every release
// computed by the code's own loops divided by the public N = units·K: the
// K-fold extremal pairs attain the printed sensitivity of g, B, A's
// attainable √2/2 of it and approach m's (whose supremum is a limit), they
// exceed K·(the row-level sensitivity at N = units·K)·0.99 (so the factor K
// cannot be dropped), and pairs of unequal row counts (K rows against one:
// "a row against no row") and random pairs at random iterates stay within
// the printed sensitivities. The printed values equal the formulas at
// N = units up to the rounding margin.
func TestIRLSUnitSensitivityExtremalPairs(t *testing.T) {
	const units, d, eta = 25, 3, 0.25
	for _, k := range []int{1, 3, 7} {
		rng := rand.New(rand.NewPCG(uint64(k), 11))
		base := unitDataset(rng, Linear, units, k, d, nil) // units 1..units−1
		N := int64(units * k)
		plan := func(form, first string) (unit, row IRLSPlan) {
			opt := IRLSOptions{ResidualFloor: eta, Form: form, FirstMoment: first, WarmStart: 0.3}
			var err error
			if unit, err = PlanIRLSUnits(1, 1e-5, units, k, d, opt); err != nil {
				t.Fatal(err)
			}
			if row, err = PlanIRLS(1, 1e-5, N, d, opt); err != nil {
				t.Fatal(err)
			}
			if unit.N != N || unit.RowsPerUnit != k {
				t.Fatalf("plan divides by %d with K = %d, want %d and %d", unit.N, unit.RowsPerUnit, N, k)
			}
			return unit, row
		}
		mom, momRow := plan(IRLSFormMoments, "gaussian")
		grad, gradRow := plan(IRLSFormGradient, "gaussian")
		pre, preRow := plan(IRLSFormPreconditioned, "gaussian")
		lap, _ := plan(IRLSFormMoments, "laplace")
		U := float64(units)
		zero := make([]float64, d)
		cases := []struct {
			name             string
			printed, rowSens float64
			formula          float64
			change           func(a, b [][]float64) float64
			a, b             [][]float64
			attain           float64 // fraction of the formula the pair attains (0: approaches)
		}{
			{"g: K×(e1, 1) vs K×(e1, −1) at ω = 0", pre.SensA, preRow.SensA, 2 / U, func(a, b [][]float64) float64 {
				ga, _ := irlsGradientN(withUnit(a, base), d+1, zero, eta, N)
				gb, _ := irlsGradientN(withUnit(b, base), d+1, zero, eta, N)
				return diffNorm(ga, gb)
			}, repeatRow(basisRow(d, 0, 1), k), repeatRow(basisRow(d, 0, -1), k), 1},
			{"g (gradient form): same pair", grad.SensA, gradRow.SensA, 2 / U, func(a, b [][]float64) float64 {
				ga, _ := irlsGradientMomentsN(withUnit(a, base), d+1, zero, eta, N)
				gb, _ := irlsGradientMomentsN(withUnit(b, base), d+1, zero, eta, N)
				return diffNorm(ga, gb)
			}, repeatRow(basisRow(d, 0, 1), k), repeatRow(basisRow(d, 0, -1), k), 1},
			{"B: K×e1 vs K×e2, residuals under η", mom.SensB, momRow.SensB, math.Sqrt2 / (eta * U), func(a, b [][]float64) float64 {
				_, ua := irlsMomentsN(withUnit(a, base), d+1, zero, eta, N)
				_, ub := irlsMomentsN(withUnit(b, base), d+1, zero, eta, N)
				return diffNorm(ua, ub)
			}, repeatRow(basisRow(d, 0, 0), k), repeatRow(basisRow(d, 1, 0), k), 1},
			{"A: K×(e1, 1) vs K×(e2, −1) at ω = e1 − e2 (√2/2 of the bound, as at row level)", mom.SensA, momRow.SensA, 2 / (eta * U), func(a, b [][]float64) float64 {
				w := []float64{1, -1, 0}
				aa, _ := irlsMomentsN(withUnit(a, base), d+1, w, eta, N)
				ab, _ := irlsMomentsN(withUnit(b, base), d+1, w, eta, N)
				return diffNorm(aa, ab)
			}, repeatRow(basisRow(d, 0, 1), k), repeatRow(basisRow(d, 1, -1), k), 1 / math.Sqrt2},
			{"m: K×residual 0 vs K×residual 41 (ω = 40·e1)", pre.SensB, preRow.SensB, 1 / U, func(a, b [][]float64) float64 {
				w := []float64{40, 0, 0}
				_, ma := irlsGradientN(withUnit(a, base), d+1, w, eta, N)
				_, mb := irlsGradientN(withUnit(b, base), d+1, w, eta, N)
				return math.Abs(ma - mb)
			}, repeatRow(basisRow(d, 1, 0), k), repeatRow(append([]float64{-1, 0, 0}, 1), k), 0},
			{"A, L1 (Laplace): K×(e1, 1) vs K×(e2, −1) at ω = e1 − e2", lap.SensA, 0, 2 * math.Sqrt(d) / (eta * U), func(a, b [][]float64) float64 {
				w := []float64{1, -1, 0}
				aa, _ := irlsMomentsN(withUnit(a, base), d+1, w, eta, N)
				ab, _ := irlsMomentsN(withUnit(b, base), d+1, w, eta, N)
				s := 0.0
				for i := range aa {
					s += math.Abs(aa[i] - ab[i])
				}
				return s
			}, repeatRow(basisRow(d, 0, 1), k), repeatRow(basisRow(d, 1, -1), k), -1},
		}
		for _, c := range cases {
			if !(c.printed >= c.formula && c.printed <= c.formula*(1+1e-6)) {
				t.Errorf("K=%d %s: printed sensitivity %v, formula at N = units %v", k, c.name, c.printed, c.formula)
			}
			got := c.change(c.a, c.b)
			if got > c.printed {
				t.Errorf("K=%d %s: the release moves by %v, more than the printed %v", k, c.name, got, c.printed)
			}
			switch {
			case c.attain > 0 && math.Abs(got-c.attain*c.formula) > 1e-9*c.formula:
				t.Errorf("K=%d %s: the pair moves the release by %v, want %v", k, c.name, got, c.attain*c.formula)
			case c.attain == 0 && got < 0.95*c.formula:
				t.Errorf("K=%d %s: the pair moves the release by %v, want ≥ 0.95·%v", k, c.name, got, c.formula)
			}
			if k > 1 && c.rowSens > 0 && c.attain > 0 && !(got > 0.99*c.attain*float64(k)*c.rowSens) {
				t.Errorf("K=%d %s: moved %v, not K times the row-level sensitivity %v", k, c.name, got, c.rowSens)
			}
			// Unequal row counts and random pairs at random iterates.
			for r := 0; r < 200; r++ {
				na, nb := 1+rng.IntN(k), 1+rng.IntN(k)
				if r == 0 {
					na, nb = k, 1 // K rows against one
				}
				var a, b [][]float64
				for i := 0; i < na; i++ {
					a = append(a, randomRow(rng, Linear, d))
				}
				for i := 0; i < nb; i++ {
					b = append(b, randomRow(rng, Linear, d))
				}
				if got := c.change(a, b); got > c.printed {
					t.Errorf("K=%d %s: random pair (%d vs %d rows) moves the release by %v > %v", k, c.name, na, nb, got, c.printed)
				}
			}
		}
		// The warm start's FM releases are calibrated at N = units.
		fm, err := SensitivitiesFor(Linear, d, units)
		if err != nil {
			t.Fatal(err)
		}
		if mom.FMSens1 != fm.Lambda1 || mom.FMSens2 != fm.Lambda2 {
			t.Errorf("K=%d: warm start sensitivities %v, %v; want the unit-level %v, %v", k, mom.FMSens1, mom.FMSens2, fm.Lambda1, fm.Lambda2)
		}
	}
}

// TestNoisyGDUnitSensitivityExtremalPairs checks PlanNoisyGDUnits: its
// printed sensitivity is D/units (D = 2(R + 2) linear, 2σ(R) logistic, up
// to the rounding margin); the average gradient computed by the code over
// N = units·K rows moves, for K copies of the largest row pair a grid
// search finds, by exactly K times that pair's row change, within the
// printed sensitivity and above K·(the row-level sensitivity at
// N = units·K)·(the row pair's share of D), so the factor K is needed; K
// rows against one row and random pairs stay within it. Poisson batches
// are refused under a unit.
func TestNoisyGDUnitSensitivityExtremalPairs(t *testing.T) {
	const units, d, R = 20, 2, 1.5
	for _, kind := range []Kind{Linear, Logistic} {
		gBound, D, err := NoisyGDSensitivity(kind, R)
		if err != nil {
			t.Fatal(err)
		}
		if gBound > D {
			t.Fatalf("%s: G = %v > D = %v: the row-against-no-row term is not covered", kind, gBound, D)
		}
		w := []float64{R, 0}
		// The largest row pair on a grid of the unit circle.
		const steps = 180
		var best float64
		var bestA, bestB []float64
		ys := []float64{-1, 1}
		if kind == Logistic {
			ys = []float64{0, 1}
		}
		for _, y1 := range ys {
			for _, y2 := range ys {
				for i := 0; i < steps; i++ {
					a := 2 * math.Pi * float64(i) / steps
					ra := []float64{math.Cos(a), math.Sin(a), y1}
					ga := gradOf(kind, ra[:d], y1, w)
					for j := 0; j < steps; j++ {
						b := 2 * math.Pi * float64(j) / steps
						rb := []float64{math.Cos(b), math.Sin(b), y2}
						if v := dist(ga, gradOf(kind, rb[:d], y2, w)); v > best {
							best, bestA, bestB = v, ra, rb
						}
					}
				}
			}
		}
		for _, k := range []int{1, 3, 7} {
			rng := rand.New(rand.NewPCG(uint64(k), 12))
			base := unitDataset(rng, kind, units, k, d, nil)
			opt := NoisyGDOptions{Radius: R, Iterations: 10}
			p, err := PlanNoisyGDUnits(kind, 1, 1e-5, units, k, d, opt)
			if err != nil {
				t.Fatal(err)
			}
			row, err := PlanNoisyGD(kind, 1, 1e-5, int64(units*k), d, opt)
			if err != nil {
				t.Fatal(err)
			}
			formula := D / units
			if !(p.Sensitivity >= formula && p.Sensitivity <= formula*(1+1e-6)) {
				t.Errorf("%s K=%d: printed sensitivity %v, formula D/units = %v", kind, k, p.Sensitivity, formula)
			}
			avg := func(first [][]float64) []float64 {
				g := make([]float64, d)
				p.averageGradient(g, withUnit(first, base), d+1, w)
				return g
			}
			got := diffNorm(avg(repeatRow(bestA, k)), avg(repeatRow(bestB, k)))
			want := float64(k) * best / float64(units*k)
			if math.Abs(got-want) > 1e-9*want || got > p.Sensitivity {
				t.Errorf("%s K=%d: K copies of the best row pair move the gradient by %v, want %v ≤ printed %v", kind, k, got, want, p.Sensitivity)
			}
			if k > 1 && !(got > 0.99*float64(k)*row.Sensitivity*best/D) {
				t.Errorf("%s K=%d: moved %v, not K times the row-level %v", kind, k, got, row.Sensitivity*best/D)
			}
			if k > 1 && !(got > row.Sensitivity) {
				t.Errorf("%s K=%d: the unit pair (%v) stays within the row-level sensitivity %v: the test cannot tell K from 1", kind, k, got, row.Sensitivity)
			}
			for r := 0; r < 300; r++ {
				na, nb := 1+rng.IntN(k), 1+rng.IntN(k)
				if r == 0 {
					na, nb = k, 1
				}
				var a, b [][]float64
				for i := 0; i < na; i++ {
					a = append(a, randomRow(rng, kind, d))
				}
				for i := 0; i < nb; i++ {
					b = append(b, randomRow(rng, kind, d))
				}
				if got := diffNorm(avg(a), avg(b)); got > p.Sensitivity {
					t.Errorf("%s K=%d: random pair (%d vs %d rows) moves the gradient by %v > %v", kind, k, na, nb, got, p.Sensitivity)
				}
			}
			if _, err := PlanNoisyGDUnits(kind, 1, 1e-5, units, k, d, NoisyGDOptions{Radius: R, BatchRate: 0.1}); err == nil || !strings.Contains(err.Error(), "privacy unit") {
				t.Errorf("%s K=%d: Poisson batches under a unit: err %v", kind, k, err)
			}
		}
	}
}

// TestIRLSNoisyGDUnitPrintedGuaranteeIsExactProfile fits irls (robust) and
// noisygd (linear, logistic) on unit statistics with the kept rows and
// recomputes each printed (ε, δ) from the printed noise scales and
// sensitivities, the latter checked against their formulas at N = units
// (within the rounding margin 10⁻⁶; never the code's calibration): the
// Gaussian-DP μ = √(Σ μ_i²) of the releases, the noise grid's slack
// included (noise.GaussianCalibrationSensitivity), gives at most the
// printed δ at the printed ε (and within 10⁻³ of it: no budget wasted); the same noise with the row-level calibration (scales ÷ K)
// does not. The report names the unit, K and N.
func TestIRLSNoisyGDUnitPrintedGuaranteeIsExactProfile(t *testing.T) {
	const units, d, k = 400, 4, 3
	const eps, delta = 1, 1e-5
	U := float64(units)
	checkReport := func(name, neighbouring string) {
		for _, s := range []string{"differ in all rows of one person", `"person"`, "K = 3", "N = 400"} {
			if !strings.Contains(neighbouring, s) {
				t.Errorf("%s: neighbouring %q lacks %q", name, neighbouring, s)
			}
		}
	}
	// μ of one Gaussian release of sensitivity sens (the printed value,
	// checked above to lie in [formula, formula·(1 + 10⁻⁶)]) with noise σ,
	// the noise grid's slack included.
	muOf := func(sens, sigma float64, entries int) float64 {
		return noise.GaussianCalibrationSensitivity(sens, sigma, entries) / sigma
	}
	profile := func(name string, mu func(f float64) float64, printedEps, printedDelta float64) {
		dl, err := accounting.GDPDelta(mu(1), printedEps)
		if err != nil {
			t.Fatal(err)
		}
		if dl > printedDelta {
			t.Errorf("%s: printed (%v, %v)-DP, the noise gives δ = %v per unit", name, printedEps, printedDelta, dl)
		}
		if dl < printedDelta*(1-1e-3) {
			t.Errorf("%s: δ = %v below the printed %v: the calibration wastes budget (or the test recomputes another profile)", name, dl, printedDelta)
		}
		if dr, _ := accounting.GDPDelta(mu(1.0/k), printedEps); dr <= printedDelta {
			t.Errorf("%s: row-level noise (scales / K) still meets δ = %v: the test cannot fail", name, dr)
		}
	}
	rng := rand.New(rand.NewPCG(9, 10))
	for _, kind := range []Kind{Robust, Linear, Logistic} {
		dataKind := kind
		if kind == Robust {
			dataKind = Linear
		}
		rows := unitDataset(rng, dataKind, units, k, d, nil)
		rows = append(rows, concatRows(repeatRow(randomRow(rng, dataKind, d), k))...) // the first unit
		st, err := UnitStats(stats(t, rows, d+1), PrivacyUnit{Column: "person", MaxRows: k, Units: units})
		if err != nil {
			t.Fatal(err)
		}
		data := Data{Stats: st, Rows: rows}
		if kind == Robust {
			const J = 2
			cfg := Config{Kind: Robust, Epsilon: eps, Delta: delta, Lambda: -1, Source: noise.NewInsecureSeeded(3), IRLS: IRLSOptions{Iterations: J}}
			res, err := irlsEstimator{}.Fit(context.Background(), data, cfg)
			if err != nil {
				t.Fatal(err)
			}
			p := res.Privacy
			checkReport("irls", p.Neighbouring)
			if len(p.Releases) != 4 {
				t.Fatalf("irls: %d releases, want warm Λ1, Λ2, g, m", len(p.Releases))
			}
			// Formulas at N = units: warm Λ1 4/U, Λ2 √2/U; g 2/U, m 1/U.
			formulas := []float64{4 / U, math.Sqrt2 / U, 2 / U, 1 / U}
			for i, r := range p.Releases {
				if !(r.Sensitivity >= formulas[i] && r.Sensitivity <= formulas[i]*(1+1e-6)) {
					t.Errorf("irls %s: printed sensitivity %v, formula %v", r.Name, r.Sensitivity, formulas[i])
				}
			}
			joint, err := JointSensitivity(Linear, d, units, TaylorQuadratic, p.Releases[0].Scale, p.Releases[1].Scale)
			if err != nil {
				t.Fatal(err)
			}
			if !(p.WhitenedSensitivity >= joint) {
				t.Errorf("irls: printed whitened warm start %v below the unit-level joint sensitivity %v", p.WhitenedSensitivity, joint)
			}
			profile("irls", func(f float64) float64 {
				w := p.WhitenedSensitivity / f
				mg := muOf(p.Releases[2].Sensitivity, p.Releases[2].Scale*f, d)
				mm := muOf(p.Releases[3].Sensitivity, p.Releases[3].Scale*f, 1)
				return math.Sqrt(w*w + J*(mg*mg+mm*mm))
			}, p.Epsilon, p.Delta)
			continue
		}
		const T = 30
		// Linear: the default Huber loss (D = 4η, η by the rule at N =
		// units) and the squared loss on the ball (--huber -1); logistic:
		// the default clipped gradient (D = 2c) and the unclipped loss.
		// At ε = 4 the linear Huber fit and the clipped logistic fit also
		// release the trace for their data-scaled step (the ceiling
		// exceeds 1/L there): a second release, sensitivity
		// (1 + encTol)/units, composed with the T steps.
		type fitCase struct{ huber, eps float64 }
		cases := map[Kind][]fitCase{Linear: {{0, eps}, {-1, eps}, {0, 4}}, Logistic: {{0, eps}, {-1, eps}, {0, 4}}}[kind]
		for _, fc := range cases {
			huber, eps := fc.huber, fc.eps
			cfg := Config{Kind: kind, Epsilon: eps, Delta: delta, Lambda: -1, Huber: huber, Source: noise.NewInsecureSeeded(4), NoisyGD: NoisyGDOptions{Iterations: T}}
			res, err := noisyGD{}.Fit(context.Background(), data, cfg)
			if err != nil {
				t.Fatal(err)
			}
			p := res.Privacy
			name := fmt.Sprintf("noisygd %s huber=%v ε=%v", kind, huber, eps)
			checkReport(name, p.Neighbouring)
			R := DefaultNoisyGDRadius(kind, d, int64(units), eps)
			D := 2 * (R + 2)
			switch {
			case kind == Logistic && huber == 0:
				D = 2 * 0.5 // the gradient clipped to norm c = 0.5, no ball
			case kind == Logistic:
				D = 2 / (1 + math.Exp(-R))
			case huber == 0:
				D = 4 * DefaultHuberScale(int64(units), d, eps)
			}
			r := p.Releases[0]
			if !(r.Sensitivity >= D/U && r.Sensitivity <= D/U*(1+1e-6)) {
				t.Errorf("%s: printed sensitivity %v, formula D/units %v", name, r.Sensitivity, D/U)
			}
			// The trace is released only by the default (clipped) losses,
			// and at ε = 4 it must be (the ceiling exceeds 1/L there).
			clipped := huber == 0
			if n := len(p.Releases); n > 2 || (n == 2 && !clipped) || (eps == 4 && n != 2) {
				t.Fatalf("%s: %d releases", name, n)
			}
			var tr *report.Release
			if len(p.Releases) == 2 {
				tr = &p.Releases[1]
				if !(tr.Sensitivity >= 1/U && tr.Sensitivity <= (1+1e-6)/U) {
					t.Errorf("%s: printed trace sensitivity %v, formula (1 + encTol)/units %v", name, tr.Sensitivity, 1/U)
				}
			}
			profile(name, func(f float64) float64 {
				mu := math.Sqrt(T) * muOf(r.Sensitivity, r.Scale*f, d)
				if tr != nil {
					mu = math.Hypot(mu, muOf(tr.Sensitivity, tr.Scale*f, 1))
				}
				return mu
			}, p.Epsilon, p.Delta)
		}
	}
}

// TestUnitSupported: exactly the FM family, irls, noisygd and (linear)
// objpert accept a privacy unit; dpme, filter-priority, auto and the
// non-private mechanisms are refused with a reason, logistic objpert too
// (its reason names the zonotope's 2^(2K) vertices), in UnitSupported and
// in objpert's Fit.
func TestUnitSupported(t *testing.T) {
	allowed := map[string]bool{"fm": true, "relaxed-fm": true, "gaussian-fm": true, "irls": true, "noisygd": true, "objpert": true}
	for _, name := range Mechanisms() {
		est, _ := New(name)
		err := UnitSupported(est, Linear)
		if allowed[name] != (err == nil) {
			t.Errorf("%s: UnitSupported = %v, want allowed %v", name, err, allowed[name])
		}
		if err != nil && !strings.Contains(err.Error(), name) {
			t.Errorf("%s: refusal %q does not name the mechanism", name, err)
		}
	}
	est, _ := New("objpert")
	if err := UnitSupported(est, Logistic); err == nil || !strings.Contains(err.Error(), "2^(2K) vertices") {
		t.Errorf("logistic objpert: %v", err)
	}
	rows, _ := xpRows(Linear, 200, 3, 1)
	st, err := UnitStats(stats(t, rows, 4), PrivacyUnit{Column: "p", MaxRows: 2, Units: 100})
	if err != nil {
		t.Fatal(err)
	}
	_, err = est.Fit(context.Background(), Data{Stats: st, Rows: rows}, Config{Kind: Logistic, Epsilon: 1, Delta: 1e-5, Lambda: -1, Source: noise.NewInsecureSeeded(1)})
	if err == nil || !strings.Contains(err.Error(), "privacy unit") || !strings.Contains(err.Error(), "zonotope") {
		t.Errorf("logistic objpert on unit statistics: %v", err)
	}
	// More rows than the public Units·K: the rows were not bounded per unit.
	small, err := UnitStats(stats(t, rows[:4*150], 4), PrivacyUnit{Column: "p", MaxRows: 1, Units: 150})
	if err != nil {
		t.Fatal(err)
	}
	for _, mech := range []string{"irls", "noisygd"} {
		e, _ := New(mech)
		kind := Linear
		if mech == "irls" {
			kind = Robust
		}
		_, err := e.Fit(context.Background(), Data{Stats: small, Rows: rows}, Config{Kind: kind, Epsilon: 1, Delta: 1e-5, Lambda: -1, Source: noise.NewInsecureSeeded(1)})
		if err == nil || !strings.Contains(err.Error(), "Units·K") {
			t.Errorf("%s: 200 rows under 150 units × 1 row accepted: %v", mech, err)
		}
	}
}

// TestUnitRowMechanismsPanel: the panel of issue 30 (3,000 persons × 7
// rows, a person effect shared by a person's rows, symmetric errors, so
// the true β is the target of both least squares and the IRLS fixed
// point) fitted by noisygd, objpert (linear) and irls (robust) at
// (ε, δ) = (1, 1e-6)
// row-level and under a unit with K = 1, 3, 7 (the first K rows of each
// person, exchangeable). At K = 7 (the same N() = 21,000 as the row-level
// fit) every printed sensitivity is 7 times the row-level one; the
// coefficient RMSE against β over 5 noise draws is logged
// (docs/privacy-units.md).
func TestUnitRowMechanismsPanel(t *testing.T) {
	const persons, per, d = 3000, 7, 4
	rng := rand.New(rand.NewPCG(30, 8))
	beta := []float64{0.3, -0.4, 0.2, 0.1}
	rows := unitPanel(rng, persons, per, beta)
	const eps, delta = 1, 1e-6
	type mech struct {
		name string
		kind Kind
		est  Estimator
	}
	mechs := []mech{{"noisygd", Linear, noisyGD{}}, {"irls", Robust, irlsEstimator{}}, {"objpert", Linear, objPert{}}}
	fit := func(m mech, data Data, seed uint64) *Result {
		if !m.est.NeedsRows(m.kind) {
			data.Rows = nil // linear objpert fits from the statistics
		}
		// R = 1 and T = 100, the defaults before issue 26's rules for d = 4,
		// so that the row-level fit (N = 21,000 > 1000d: the rules would
		// grow R and T) and the unit fits share R and the ratio is K.
		res, err := m.est.Fit(context.Background(), data, Config{Kind: m.kind, Epsilon: eps, Delta: delta, Lambda: -1, Huber: -1, Source: noise.NewInsecureSeeded(seed),
			NoisyGD: NoisyGDOptions{Radius: 1, Iterations: 100}, ObjPert: ObjPertOptions{Radius: 1}})
		if err != nil {
			t.Fatalf("%s: %v", m.name, err)
		}
		return res
	}
	rmse := func(res *Result) float64 { return diffNorm(res.Coef, beta) / math.Sqrt(d) }
	for _, m := range mechs {
		row := fit(m, Data{Stats: stats(t, rows, d+1), Rows: rows}, 1)
		t.Logf("%s row-level (21,000 rows): prints %s per row, RMSE vs β %.4f (one draw)", m.name, row.Privacy.Guarantee(), rmse(row))
		for _, k := range []int{1, 3, 7} {
			var kept []float64
			for p := 0; p < persons; p++ {
				kept = append(kept, rows[p*per*(d+1):(p*per+k)*(d+1)]...)
			}
			st, err := UnitStats(stats(t, kept, d+1), PrivacyUnit{Column: "person", MaxRows: k, Units: persons})
			if err != nil {
				t.Fatal(err)
			}
			s2 := 0.0
			var res *Result
			for seed := uint64(0); seed < 5; seed++ {
				res = fit(m, Data{Stats: st, Rows: kept}, 100+seed)
				e := rmse(res)
				s2 += e * e
			}
			t.Logf("%s unit-level K = %d: prints %s per person, RMSE vs β %.4f (5 draws)", m.name, k, res.Privacy.Guarantee(), math.Sqrt(s2/5))
			if k == per && m.name != "objpert" { // objpert: K·J and a χ bound, not a plain ratio
				for i, r := range res.Privacy.Releases {
					if ratio := r.Sensitivity / row.Privacy.Releases[i].Sensitivity; math.Abs(ratio-per) > 1e-6*per {
						t.Errorf("%s K = 7 %s: sensitivity %v× the row-level fit's, want 7×", m.name, r.Name, ratio)
					}
				}
			}
		}
	}
}

// TestObjPertUnitExactProfile checks PlanObjPertUnits (linear, K = 3,
// d = 4, 400 units) against an independent recomputation: the Jacobian
// term is K·ln(1 + β/(NΛ)) at N = units·K with the printed Λ, the gradient
// sensitivity K·2(R + 2) (up to the encoding tolerance), and δ(ε) of the
// printed noise, integrated here numerically over ρ ~ χ₄ (4 = 2·min(K,
// ⌈d/2⌉) degrees of freedom; midpoint rule, step 2·10⁻⁴ to 30) with the analytic
// Gaussian hockey-stick, is at most the printed δ and within a factor 2 of
// it. The row-level plan's noise (same Λ, N) has δ above the target under
// the unit-level bound, so the test can fail. At K = 1 the unit plan is the
// row-level plan. K rows of one unit against one row and random pairs move
// the sum-form gradient Σ∇ℓ(ω; z) at ‖ω‖ ≤ R by at most GradSensitivity.
func TestObjPertUnitExactProfile(t *testing.T) {
	const units, k, d = 400, 3, 4
	const eps, delta = 1.0, 1e-5
	N := int64(units * k)
	p, err := PlanObjPertUnits(Linear, eps, delta, units, k, d, ObjPertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	beta := 2 * (1 + 1e-9)
	wantJ := float64(k) * math.Log1p(beta/(float64(N)*p.Lambda))
	if !(p.Jacobian >= wantJ && p.Jacobian <= wantJ*(1+1e-12)) {
		t.Errorf("Jacobian %v, want K·ln(1 + β/(NΛ)) = %v", p.Jacobian, wantJ)
	}
	R := p.Radius
	D := 2 * (R + 2)
	if !(p.GradSensitivity >= float64(k)*D && p.GradSensitivity <= float64(k)*D*(1+1e-8)) {
		t.Errorf("gradient sensitivity %v, want K·2(R + 2) = %v", p.GradSensitivity, float64(k)*D)
	}
	if p.ChiDF != 4 {
		t.Errorf("χ degrees of freedom %d, want 4", p.ChiDF)
	}
	h := func(c, mu float64) float64 { // E[(1 − e^{c−L})₊], L ~ N(μ²/2, μ²)
		if c >= 0 {
			v, _ := accounting.AnalyticGaussianDelta(c, 1, mu)
			return v
		}
		v, _ := accounting.AnalyticGaussianDelta(-c, 1, mu)
		return 1 - math.Exp(c) + math.Exp(c)*v
	}
	profile := func(jac, mu1, mu2 float64) float64 {
		e := eps - jac
		const step = 2e-4
		sum := 0.0
		for r := step / 2; r < 30; r += step {
			dens := r * r * r * math.Exp(-r*r/2) / 2 // χ₄: ρ³e^{−ρ²/2}/(2·Γ(2))
			sum += h(e-mu1*r-mu1*mu1/2, mu2) * dens * step
		}
		return sum
	}
	mu1 := p.GradSensitivity / p.Sigma1
	got := profile(p.Jacobian, mu1, p.Mu2)
	t.Logf("K = %d: printed δ = %v (achieved bound %v), recomputed %v; μ1 = %v, μ2 = %v, J = %v", k, p.Delta, p.AchievedDelta, got, mu1, p.Mu2, p.Jacobian)
	if got > p.Delta || got < p.Delta/2 {
		t.Errorf("recomputed δ = %v, printed %v", got, p.Delta)
	}
	row, err := PlanObjPert(Linear, eps, delta, N, d, ObjPertOptions{Lambda: p.Lambda})
	if err != nil {
		t.Fatal(err)
	}
	if bad := profile(wantJ, float64(k)*D/row.Sigma1, row.Mu2); bad <= delta {
		t.Errorf("row-level noise meets δ under the unit bound (%v): the test cannot fail", bad)
	}
	one, err := PlanObjPertUnits(Linear, eps, delta, N, 1, d, ObjPertOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rowDefault, _ := PlanObjPert(Linear, eps, delta, N, d, ObjPertOptions{})
	one.RowsPerUnit = rowDefault.RowsPerUnit
	if one != rowDefault {
		t.Errorf("K = 1: unit plan %+v differs from the row-level plan %+v", one, rowDefault)
	}
	if _, err := PlanObjPertUnits(Logistic, eps, delta, units, k, d, ObjPertOptions{}); err == nil {
		t.Error("logistic objpert planned under a unit")
	}
	// Gradient differences of K rows (sum form) at iterates in the ball.
	rng := rand.New(rand.NewPCG(4, 4))
	grad := func(rs [][]float64, w []float64) []float64 {
		g := make([]float64, d)
		for _, r := range rs {
			c := -2 * (r[d] - dot(r[:d], w))
			for j := range g {
				g[j] += c * r[j]
			}
		}
		return g
	}
	worst := 0.0
	for i := 0; i < 3000; i++ {
		w := inUnitBall(rng, d)
		for j := range w {
			w[j] *= R
		}
		na, nb := 1+rng.IntN(k), 1+rng.IntN(k)
		if i%3 == 0 {
			na, nb = k, 1
		}
		var a, b [][]float64
		for j := 0; j < na; j++ {
			a = append(a, randomRow(rng, Linear, d))
		}
		for j := 0; j < nb; j++ {
			b = append(b, randomRow(rng, Linear, d))
		}
		worst = math.Max(worst, diffNorm(grad(a, w), grad(b, w)))
	}
	// K copies of (e1, 1) against (e1, −1) at ω = R·e1: 4 per row.
	w := []float64{R, 0, 0, 0}
	pair := diffNorm(grad(repeatRow(basisRow(d, 0, 1), k), w), grad(repeatRow(basisRow(d, 0, -1), k), w))
	t.Logf("largest random K-row gradient difference %.3f, extremal pair %.3f, bound K·D = %.3f", worst, pair, p.GradSensitivity)
	if worst > p.GradSensitivity || pair > p.GradSensitivity || math.Abs(pair-4*float64(k)) > 1e-9 {
		t.Errorf("gradient differences %v (random), %v (pair, want %v) against the bound %v", worst, pair, 4*float64(k), p.GradSensitivity)
	}
}
