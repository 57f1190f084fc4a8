package regress

import (
	"context"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
)

// unitDataset returns the encoded rows of `units` units with 1..K rows each
// (the first unit's rows given), width d+1 (features then target).
func unitDataset(rng *rand.Rand, kind Kind, units, k, d int, first [][]float64) []float64 {
	var rows []float64
	for _, r := range first {
		rows = append(rows, r...)
	}
	for u := 1; u < units; u++ {
		n := 1 + rng.IntN(k)
		for i := 0; i < n; i++ {
			rows = append(rows, randomRow(rng, kind, d)...)
		}
	}
	return rows
}

func randomRow(rng *rand.Rand, kind Kind, d int) []float64 {
	x := inUnitBall(rng, d)
	y := 2*rng.Float64() - 1
	if kind == Logistic {
		y = float64(rng.IntN(2))
	}
	return append(x, y)
}

// basisRow is (e_i, y).
func basisRow(d, i int, y float64) []float64 {
	r := make([]float64, d+1)
	r[i], r[d] = 1, y
	return r
}

func repeatRow(r []float64, n int) [][]float64 {
	out := make([][]float64, n)
	for i := range out {
		out[i] = r
	}
	return out
}

// unitObjective is the FM objective of rows under the unit-level wrapper.
func unitObjective(t *testing.T, kind Kind, rows []float64, d, units, k int) (*Quadratic, Stats) {
	t.Helper()
	st, err := UnitStats(stats(t, rows, d+1), PrivacyUnit{Column: "person", MaxRows: k, Units: int64(units)})
	if err != nil {
		t.Fatal(err)
	}
	q, err := ObjectiveApprox(kind, st, TaylorQuadratic)
	if err != nil {
		t.Fatal(err)
	}
	return q, st
}

func diffNorm(a, b []float64) float64 {
	s := 0.0
	for i := range a {
		s += (a[i] - b[i]) * (a[i] - b[i])
	}
	return math.Sqrt(s)
}

// TestUnitSensitivityExtremalPairs checks the unit-level sensitivities
// (UnitStats: the row-level formulas at N = units) on neighbouring datasets
// that differ in all K rows of one unit: the extremal pairs attain Δ1 and Δ2
// exactly (so the K factor cannot be smaller: the row-level formula at
// N() = units·K is exceeded K-fold), pairs with unequal row counts and
// random pairs stay within them, and the whitened pair stays within the
// joint sensitivity J of gaussian-fm.
func TestUnitSensitivityExtremalPairs(t *testing.T) {
	const units, d = 25, 3
	for _, kind := range []Kind{Linear, Logistic} {
		yHi, yLo := 1.0, -1.0
		if kind == Logistic {
			yHi, yLo = 0, 1 // s = ½ − y = ±½
		}
		for _, k := range []int{1, 3, 7} {
			rng := rand.New(rand.NewPCG(uint64(k), 5))
			base := unitDataset(rng, kind, units, k, d, nil)[0:]
			// Drop the (random) first unit: base rows are units 1.. only.
			mk := func(first [][]float64) []float64 {
				var rows []float64
				for _, r := range first {
					rows = append(rows, r...)
				}
				return append(rows, base...)
			}
			sn := int64(units)
			sens, err := SensitivitiesFor(kind, d, sn)
			if err != nil {
				t.Fatal(err)
			}
			rowLevel, _ := SensitivitiesFor(kind, d, int64(units*k))
			a2 := 1.0
			if kind == Logistic {
				a2 = 0.125
			}
			exact1, exact2 := 4/float64(units), math.Sqrt2/float64(units)
			if kind == Logistic {
				exact1, exact2 = 1/float64(units), math.Sqrt2*a2/float64(units)
			}
			pairs := []struct {
				name      string
				a, b      [][]float64
				attain1   float64
				attain2   float64
				checkOnly bool
			}{
				{"labels flipped, K rows each", repeatRow(basisRow(d, 0, yHi), k), repeatRow(basisRow(d, 0, yLo), k), exact1, 0, false},
				{"orthogonal features, K rows each", repeatRow(basisRow(d, 0, yHi), k), repeatRow(basisRow(d, 1, yHi), k), 0, exact2, false},
				{"K rows against one", repeatRow(basisRow(d, 0, yHi), k), repeatRow(basisRow(d, 0, yLo), 1), 0, 0, true},
				{"one row against K", repeatRow(basisRow(d, 0, yHi), 1), repeatRow(basisRow(d, 1, yLo), k), 0, 0, true},
			}
			for r := 0; r < 100; r++ {
				na, nb := 1+rng.IntN(k), 1+rng.IntN(k)
				var a, b [][]float64
				for i := 0; i < na; i++ {
					a = append(a, randomRow(rng, kind, d))
				}
				for i := 0; i < nb; i++ {
					b = append(b, randomRow(rng, kind, d))
				}
				pairs = append(pairs, struct {
					name      string
					a, b      [][]float64
					attain1   float64
					attain2   float64
					checkOnly bool
				}{"random", a, b, 0, 0, true})
			}
			tau1, tau2 := 0.7, 1.3
			js, err := JointSensitivity(kind, d, sn, TaylorQuadratic, tau1, tau2)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range pairs {
				qa, sa := unitObjective(t, kind, mk(p.a), d, units, k)
				qb, _ := unitObjective(t, kind, mk(p.b), d, units, k)
				if got := sensitivityN(sa); got != sn {
					t.Fatalf("sensitivityN = %d, want the %d units", got, sn)
				}
				d1 := diffNorm(qa.Lambda1, qb.Lambda1)
				d2 := diffNorm(qa.Upper, qb.Upper)
				if d1 > sens.Lambda1 || d2 > sens.Lambda2 {
					t.Errorf("%s K=%d %s: ‖ΔΛ1‖ = %v (sensitivity %v), ‖ΔΛ2‖ = %v (sensitivity %v)", kind, k, p.name, d1, sens.Lambda1, d2, sens.Lambda2)
				}
				if w := math.Hypot(d1/tau1, d2/tau2); w > js {
					t.Errorf("%s K=%d %s: whitened difference %v above the joint sensitivity %v", kind, k, p.name, w, js)
				}
				if p.attain1 > 0 && math.Abs(d1-p.attain1) > 1e-9*p.attain1 {
					t.Errorf("%s K=%d %s: ‖ΔΛ1‖ = %v, the extremal pair should attain %v", kind, k, p.name, d1, p.attain1)
				}
				if p.attain2 > 0 && math.Abs(d2-p.attain2) > 1e-9*p.attain2 {
					t.Errorf("%s K=%d %s: ‖ΔΛ2‖ = %v, the extremal pair should attain %v", kind, k, p.name, d2, p.attain2)
				}
				if k > 1 && p.attain1 > 0 && !(d1 > rowLevel.Lambda1*float64(k)*0.99) {
					t.Errorf("%s K=%d: the pair moves Λ1 by %v, not K times the row-level sensitivity %v", kind, k, d1, rowLevel.Lambda1)
				}
			}
		}
	}
}

// TestUnitTargetMomentSensitivity: Λ0 = Σy²/(units·K) moves by at most
// 1/units when one unit's K rows go from y = 0 to y = ±1, and its release
// is calibrated to that.
func TestUnitTargetMomentSensitivity(t *testing.T) {
	const units, d, k = 10, 2, 4
	rng := rand.New(rand.NewPCG(1, 2))
	base := unitDataset(rng, Linear, units, k, d, nil)
	a := append(concatRows(repeatRow(basisRow(d, 0, 0), k)), base...)
	b := append(concatRows(repeatRow(basisRow(d, 0, 1), k)), base...)
	_, sa := unitObjective(t, Linear, a, d, units, k)
	_, sb := unitObjective(t, Linear, b, d, units, k)
	diff := math.Abs(sa.At(d, d)/float64(sa.N()) - sb.At(d, d)/float64(sb.N()))
	want, _ := TargetMomentSensitivity(units)
	if math.Abs(diff-1.0/units) > 1e-12 || diff > want {
		t.Fatalf("Λ0 moves by %v, sensitivity %v (want 1/units = %v attained)", diff, want, 1.0/units)
	}
	_, rel, err := ReleaseTargetMoment(sa, 1, noise.NewInsecureSeeded(1))
	if err != nil {
		t.Fatal(err)
	}
	if rel.Sensitivity != want || rel.Scale < want {
		t.Fatalf("released with sensitivity %v scale %v, want sensitivity %v", rel.Sensitivity, rel.Scale, want)
	}
}

func concatRows(rs [][]float64) []float64 {
	var out []float64
	for _, r := range rs {
		out = append(out, r...)
	}
	return out
}

// TestUnitPrintedGuaranteeIsExactProfile fits the FM family on unit
// statistics and recomputes each printed guarantee from the printed noise
// scales and the unit-level sensitivities from their formulas at N = units
// (never from the code's calibration): the analytic Gaussian (gaussian-fm,
// relaxed-fm) or Laplace (fm) profile at the printed ε must give at most
// the printed δ, and the same profile with the noise of a row-level
// calibration (scales divided by K) must not. The report names the unit and
// K and says that neighbouring datasets differ in all rows of one person.
func TestUnitPrintedGuaranteeIsExactProfile(t *testing.T) {
	const units, d, k = 400, 4, 3
	for _, kind := range []Kind{Linear, Logistic} {
		rng := rand.New(rand.NewPCG(9, 9))
		rows := unitDataset(rng, kind, units, k, d, nil)
		st, err := UnitStats(stats(t, rows, d+1), PrivacyUnit{Column: "person", MaxRows: k, Units: units})
		if err != nil {
			t.Fatal(err)
		}
		for _, mech := range []string{"gaussian-fm", "relaxed-fm", "fm"} {
			const eps, delta = 1, 1e-5
			est, _ := New(mech)
			res, err := est.Fit(context.Background(), Data{Stats: st}, Config{Kind: kind, Epsilon: eps, Delta: delta, Lambda: -1, Source: noise.NewInsecureSeeded(4)})
			if err != nil {
				t.Fatalf("%s %s: %v", mech, kind, err)
			}
			p := res.Privacy
			for _, s := range []string{"differ in all rows of one person", `"person"`, "K = 3", "N = 400"} {
				if !strings.Contains(p.Neighbouring, s) {
					t.Errorf("%s: neighbouring %q lacks %q", mech, p.Neighbouring, s)
				}
			}
			exact, _ := exactSensitivities(kind, d, units, 0.125)
			profile := func(f float64) float64 { // δ at ε with every scale times f
				switch mech {
				case "fm":
					if p.Releases[0].Scale*f >= exact.FM/eps {
						return 0
					}
					return 1
				case "relaxed-fm":
					r := p.Releases[0]
					dl, _ := accounting.AnalyticGaussianDelta(eps, r.Scale*f, exact.Relaxed)
					return dl
				}
				r1, r2 := p.Releases[0], p.Releases[1]
				mu := exactJoint(t, exact.Lambda1/(r1.Scale*f), exact.Lambda2/(r2.Scale*f))
				dl, _ := accounting.AnalyticGaussianDelta(eps, 1, mu)
				return dl
			}
			if dl := profile(1); dl > delta {
				t.Errorf("%s %s: printed %s, the noise gives δ = %v per unit", mech, kind, p.Guarantee(), dl)
			}
			if dl := profile(1.0 / k); dl <= delta {
				t.Errorf("%s %s: row-level noise (scales / K) still meets δ = %v: the test cannot fail", mech, kind, dl)
			}
		}
	}
}

// TestUnitStatsRefusals: mechanisms without a unit-level derivation refuse
// unit statistics, and UnitStats refuses statistics of unbounded rows.
func TestUnitStatsRefusals(t *testing.T) {
	rows, _ := xpRows(Linear, 200, 3, 1)
	m := stats(t, rows, 4)
	if _, err := UnitStats(m, PrivacyUnit{Column: "p", MaxRows: 2, Units: 50}); err == nil {
		t.Error("200 rows accepted as at most 2 rows of 50 units")
	}
	st, err := UnitStats(m, PrivacyUnit{Column: "p", MaxRows: 2, Units: 100})
	if err != nil {
		t.Fatal(err)
	}
	// irls, noisygd and linear objpert (its Huber loss reads the kept
	// rows; TestObjPertHuberUnits) have unit-level derivations
	// (units_rows_test.go).
	for _, mech := range []string{"dpme", "filter-priority"} {
		est, err := New(mech)
		if err != nil {
			t.Fatal(err)
		}
		kind := Linear
		_, err = est.Fit(context.Background(), Data{Stats: st, Rows: rows}, Config{Kind: kind, Epsilon: 1, Delta: 1e-5, Lambda: -1, Source: noise.NewInsecureSeeded(1)})
		if err == nil || !strings.Contains(err.Error(), "privacy unit") {
			t.Errorf("%s: unit statistics accepted (err %v)", mech, err)
		}
	}
}

// TestUnitPanelRowVersusPerson is the panel experiment of issue 30: 3000
// persons with 7 rows each (a person effect shared by their rows), linear
// gaussian-fm at (ε, δ) = (1, 1e-6). The row-level fit prints (1, 1e-6)-DP
// per row; for a person (7 rows) its whitened shift is 7 times larger, and
// the analytic Gaussian δ at ε = 1 for that μ is logged and must exceed
// 1e-6 by orders of magnitude (a person is not protected at the printed
// level). The unit-level fits at K = 1, 3, 7 print (1, 1e-6)-DP per person;
// their coefficient RMSE against the non-private fit over 10 noise draws is
// logged (docs/privacy-units.md), and K = 7's noise scale must be 7 times
// that of the row-level fit (the same N() = 21000).
func TestUnitPanelRowVersusPerson(t *testing.T) {
	const persons, per, d = 3000, 7, 4
	rng := rand.New(rand.NewPCG(30, 7))
	beta := []float64{0.3, -0.4, 0.2, 0.1}
	rows := unitPanel(rng, persons, per, beta)
	ref, err := (nonPrivate{}).Fit(context.Background(), Data{Stats: stats(t, rows, d+1), Rows: rows}, Config{Kind: Linear})
	if err != nil {
		t.Fatal(err)
	}
	const eps, delta = 1, 1e-6
	fit := func(st Stats, seed uint64) *Result {
		est, _ := New("gaussian-fm")
		res, err := est.Fit(context.Background(), Data{Stats: st}, Config{Kind: Linear, Epsilon: eps, Delta: delta, Lambda: -1, Source: noise.NewInsecureSeeded(seed)})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	row := fit(stats(t, rows, d+1), 1)
	personDelta, err := accounting.AnalyticGaussianDelta(eps, 1, per*row.Privacy.WhitenedSensitivity)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("row-level fit prints %s per row; a person's 7 rows: μ = %.3g, δ(ε=1) = %.3g", row.Privacy.Guarantee(), per*row.Privacy.WhitenedSensitivity, personDelta)
	if personDelta < 1000*delta {
		t.Errorf("a person with 7 rows under the row-level fit: δ = %v, expected far above %v", personDelta, delta)
	}
	rmse := func(res *Result) float64 { return diffNorm(res.Coef, ref.Coef) / math.Sqrt(float64(d)) }
	for _, k := range []int{1, 3, 7} {
		// Keep the first k rows of each person (the rows are exchangeable,
		// so this is a uniformly random subset in distribution).
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
		for seed := uint64(0); seed < 10; seed++ {
			res = fit(st, 100+seed)
			e := rmse(res)
			s2 += e * e
		}
		t.Logf("unit-level K = %d: prints %s per person, τ1 = %.3g, coefficient RMSE vs non-private %.4f", k, res.Privacy.Guarantee(), res.Privacy.Releases[0].Scale, math.Sqrt(s2/10))
		if k == per {
			if r := res.Privacy.Releases[0].Scale / row.Privacy.Releases[0].Scale; math.Abs(r-per) > 1e-6*per {
				t.Errorf("K = 7: noise %v× the row-level fit's, want 7×", r)
			}
		}
	}
	t.Logf("row-level fit: coefficient RMSE vs non-private %.4f (one draw)", rmse(row))
}

// unitPanel draws the panel of issue 30: persons × per rows in the unit
// ball, y = xᵀβ + a person effect shared by the person's rows + a
// symmetric error, clipped to [−1, 1]; rows are the flat (x, y) records.
func unitPanel(rng *rand.Rand, persons, per int, beta []float64) []float64 {
	var rows []float64
	for p := 0; p < persons; p++ {
		eff := 0.15 * (2*rng.Float64() - 1)
		for r := 0; r < per; r++ {
			x := inUnitBall(rng, len(beta))
			y := eff + 0.1*(2*rng.Float64()-1)
			for j := range x {
				y += beta[j] * x[j]
			}
			rows = append(rows, append(x, math.Max(-1, math.Min(1, y)))...)
		}
	}
	return rows
}
