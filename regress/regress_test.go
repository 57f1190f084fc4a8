package regress

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/suffstat"
)

// TestFMWorkedExample reproduces the FM seed's example: the database
// {(1, 0.4), (0.9, 0.3), (−0.5, −1)} (x, y) gives
// f(ω) = Σ(y − xω)² = 2.06ω² − 2.34ω + 1.25 with minimiser ω* = 117/206.
func TestFMWorkedExample(t *testing.T) {
	rows := []float64{1, 0.4, 0.9, 0.3, -0.5, -1}
	q, err := Objective(Linear, stats(t, rows, 2))
	if err != nil {
		t.Fatal(err)
	}
	n := 3.0 // Objective is the average; the paper's f is the sum
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"ω² coefficient", n * q.At(0, 0), 2.06}, {"ω coefficient", n * q.Lambda1[0], -2.34}, {"constant", n * q.Lambda0, 1.25}} {
		if math.Abs(c.got-c.want) > 1e-12 {
			t.Errorf("%s = %v, want %v", c.name, c.got, c.want)
		}
	}
	w, _, err := q.Minimize(PostProcess{})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(w[0]-117.0/206) > 1e-14 {
		t.Fatalf("ω* = %v, want 117/206 = %v", w[0], 117.0/206)
	}
	if got, want := n*q.Eval(w), 1.25-2.34*2.34/(4*2.06); math.Abs(got-want) > 1e-12 {
		t.Fatalf("f(ω*) = %v, want %v", got, want)
	}
}

func TestSensitivitiesTable(t *testing.T) {
	const n = 1000
	cases := []struct {
		kind Kind
		d    int
		want Sensitivities
	}{
		{Linear, 10, Sensitivities{FM: 2 * 121.0 / n, Relaxed: 2 * math.Sqrt(141) / n, Lambda1: 4.0 / n, Lambda2: math.Sqrt2 / n}},
		{Logistic, 20, Sensitivities{FM: (100 + 60.0) / n, Relaxed: math.Sqrt(25+20.0) / n, Lambda1: 1.0 / n, Lambda2: math.Sqrt2 / (8 * n)}},
	}
	for _, c := range cases {
		got, err := SensitivitiesFor(c.kind, c.d, n)
		if err != nil {
			t.Fatal(err)
		}
		// The published values, plus the floating-point term (rounding.go):
		// never below, and above by at most a relative 1e-8 here.
		for _, v := range [][2]float64{{got.FM, c.want.FM}, {got.Relaxed, c.want.Relaxed}, {got.Lambda1, c.want.Lambda1}, {got.Lambda2, c.want.Lambda2}} {
			if v[0] < v[1] || v[0] > v[1]*(1+1e-8) {
				t.Errorf("%s d=%d: got %+v want %+v (+ rounding)", c.kind, c.d, got, c.want)
			}
		}
	}
	if _, err := SensitivitiesFor(Linear, 0, 10); err == nil {
		t.Error("d = 0 accepted")
	}
}

// blockDiff returns the L2 norms of the differences of the released blocks
// (Λ1 and the upper triangle of Λ2) between two one-row datasets.
func blockDiff(t *testing.T, kind Kind, z1, z2 []float64) (d1, d2 float64) {
	k := len(z1)
	q1, _ := Objective(kind, stats(t, z1, k))
	q2, _ := Objective(kind, stats(t, z2, k))
	for i := range q1.Lambda1 {
		d1 += math.Pow(q1.Lambda1[i]-q2.Lambda1[i], 2)
	}
	for i := range q1.Upper {
		d2 += math.Pow(q1.Upper[i]-q2.Upper[i], 2)
	}
	return math.Sqrt(d1), math.Sqrt(d2)
}

// TestGaussianFMSensitivityIsTight checks the corrected sensitivities
// numerically: no pair of rows in the unit ball exceeds them, and the
// extremal pairs of the derivation attain them (N = 1).
func TestGaussianFMSensitivityIsTight(t *testing.T) {
	const d = 4
	rng := rand.New(rand.NewPCG(7, 8))
	unit := func() []float64 { return inUnitBall(rng, d) }
	for _, kind := range []Kind{Linear, Logistic} {
		sens, _ := SensitivitiesFor(kind, d, 1)
		label := func() float64 {
			if kind == Logistic {
				return float64(rng.IntN(2))
			}
			return 2*rng.Float64() - 1
		}
		for i := 0; i < 5000; i++ {
			a, b := append(unit(), label()), append(unit(), label())
			d1, d2 := blockDiff(t, kind, a, b)
			if d1 > sens.Lambda1*(1+1e-12) || d2 > sens.Lambda2*(1+1e-12) {
				t.Fatalf("%s: rows %v %v exceed the sensitivity: %v > %v or %v > %v", kind, a, b, d1, sens.Lambda1, d2, sens.Lambda2)
			}
		}
		// Extremal pairs.
		e1 := []float64{1, 0, 0, 0}
		e2 := []float64{0, 1, 0, 0}
		ya, yb := 1.0, -1.0
		if kind == Logistic {
			ya, yb = 0, 1
		}
		d1, _ := blockDiff(t, kind, append(append([]float64{}, e1...), ya), append(append([]float64{}, e1...), yb))
		_, d2 := blockDiff(t, kind, append(append([]float64{}, e1...), 0), append(append([]float64{}, e2...), 0))
		if math.Abs(d1-sens.Lambda1) > 1e-12 || math.Abs(d2-sens.Lambda2) > 1e-12 {
			t.Fatalf("%s: extremal pairs give %v, %v; sensitivities %v, %v are not tight", kind, d1, d2, sens.Lambda1, sens.Lambda2)
		}
	}
}

// TestNonPrivateMatchesQR compares the normal-equations path against an
// independent least-squares solve (Householder QR of the design matrix).
func TestNonPrivateMatchesQR(t *testing.T) {
	const n, d = 2000, 6
	rows, _ := xpRows(Linear, n, d, 3)
	res, err := nonPrivate{}.Fit(context.Background(), Data{Stats: stats(t, rows, d+1)}, Config{Kind: Linear})
	if err != nil {
		t.Fatal(err)
	}
	X := mat.NewDense(n, d, nil)
	y := mat.NewVecDense(n, nil)
	for i := 0; i < n; i++ {
		for j := 0; j < d; j++ {
			X.Set(i, j, rows[i*(d+1)+j])
		}
		y.SetVec(i, rows[i*(d+1)+d])
	}
	var qr mat.QR
	qr.Factorize(X)
	var w mat.VecDense
	if err := qr.SolveVecTo(&w, false, y); err != nil {
		t.Fatal(err)
	}
	for j := 0; j < d; j++ {
		if diff := math.Abs(res.Coef[j] - w.AtVec(j)); diff > 1e-9*(1+math.Abs(w.AtVec(j))) {
			t.Fatalf("coef %d: %v vs QR %v", j, res.Coef[j], w.AtVec(j))
		}
	}
	if res.Privacy.Private {
		t.Fatal("non-private fit reported as private")
	}
}

// TestLogisticMLEStationary checks the first-order optimality condition of
// the exact logistic fit: the average gradient vanishes.
func TestLogisticMLEStationary(t *testing.T) {
	const n, d = 3000, 5
	rows, _ := xpRows(Logistic, n, d, 4)
	res, err := nonPrivate{}.Fit(context.Background(), Data{Stats: stats(t, rows, d+1), Rows: rows}, Config{Kind: Logistic})
	if err != nil {
		t.Fatal(err)
	}
	g := make([]float64, d)
	for i := 0; i < n; i++ {
		r := rows[i*(d+1) : (i+1)*(d+1)]
		p := sigmoid(dot(r[:d], res.Coef))
		for j := 0; j < d; j++ {
			g[j] += (p - r[d]) * r[j] / n
		}
	}
	if maxAbs(g) > 1e-10 {
		t.Fatalf("gradient at the MLE = %v", g)
	}
	if _, err := (nonPrivate{}).Fit(context.Background(), Data{Stats: stats(t, rows, d+1)}, Config{Kind: Logistic}); err == nil {
		t.Fatal("logistic MLE without rows accepted")
	}
}

// TestPrivateFitsConverge checks that every DP fit approaches the
// non-private minimiser of the same objective as ε grows.
func TestPrivateFitsConverge(t *testing.T) {
	const n, d = 5000, 5
	for _, kind := range []Kind{Linear, Logistic} {
		var rows []float64
		if kind == Linear {
			rows, _ = xpRows(Linear, n, d, 5)
		} else {
			rows, _ = xpRows(Logistic, n, d, 5)
		}
		st := stats(t, rows, d+1)
		ref, err := truncated{}.Fit(context.Background(), Data{Stats: st}, Config{Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		for _, mech := range []string{"fm", "gaussian-fm", "relaxed-fm"} {
			est, _ := New(mech)
			prev := math.Inf(1)
			for i, eps := range []float64{1e2, 1e4, 1e6} {
				cfg := Config{Kind: kind, Epsilon: eps, Delta: 1e-5, Lambda: -1, Source: noise.NewInsecureSeeded(uint64(10 + i))}
				res, err := est.Fit(context.Background(), Data{Stats: st}, cfg)
				if err != nil {
					t.Fatalf("%s %s ε=%g: %v", kind, mech, eps, err)
				}
				dist := 0.0
				for j := range res.Coef {
					dist = math.Max(dist, math.Abs(res.Coef[j]-ref.Coef[j]))
				}
				if dist > prev*1.5 {
					t.Errorf("%s %s: error grew from %g to %g at ε=%g", kind, mech, prev, dist, eps)
				}
				prev = dist
				if !res.Privacy.Private || !res.Privacy.Insecure {
					t.Errorf("%s: report %+v", mech, res.Privacy)
				}
			}
			if prev > 1e-3 {
				t.Errorf("%s %s: at ε = 1e6 the coefficients are %g away from the non-private ones", kind, mech, prev)
			}
		}
	}
}

// TestGaussianFMScales checks the joint calibration: the achieved δ never
// exceeds the target and wastes no budget (it is within 1% of it), and the
// per-block noise follows the split.
func TestGaussianFMScales(t *testing.T) {
	for _, c := range []struct{ eps, delta, split float64 }{{0.1, 1e-5, 0.5}, {1, 1e-5, 0.5}, {5, 1e-6, 0.3}, {0.5, 1e-3, 0.8}} {
		d1, d2 := 4e-4, math.Sqrt2*1e-4
		t1, t2, ach, err := GaussianFMScales(c.eps, c.delta, c.split, d1, d2, 10, 55)
		if err != nil {
			t.Fatal(err)
		}
		if ach > c.delta || ach < 0.99*c.delta {
			t.Errorf("%+v: achieved δ %g", c, ach)
		}
		// Ratio of whitened shares equals the split.
		r := math.Pow(d1/t1, 2) / (math.Pow(d1/t1, 2) + math.Pow(d2/t2, 2))
		if math.Abs(r-c.split) > 1e-5 {
			t.Errorf("%+v: share of Λ1 %v", c, r)
		}
	}
	if _, _, _, err := GaussianFMScales(1, 1e-5, 1, 1, 1, 1, 1); err == nil {
		t.Error("split 1 accepted")
	}
}

func TestConfigErrors(t *testing.T) {
	rows, _ := xpRows(Linear, 100, 3, 1)
	data := Data{Stats: stats(t, rows, 4)}
	src := noise.NewInsecureSeeded(1)
	cases := []struct {
		mech string
		cfg  Config
		want string
	}{
		{"gaussian-fm", Config{Kind: Linear, Epsilon: 0, Delta: 1e-5, Source: src}, "ε must be"},
		{"gaussian-fm", Config{Kind: Linear, Epsilon: math.NaN(), Delta: 1e-5, Source: src}, "ε must be"},
		{"gaussian-fm", Config{Kind: Linear, Epsilon: 1, Delta: 0, Source: src}, "needs δ > 0"},
		{"relaxed-fm", Config{Kind: Linear, Epsilon: 1, Delta: 1.5, Source: src}, "δ must be"},
		{"fm", Config{Kind: Linear, Epsilon: 1}, "no randomness"},
		{"fm", Config{Kind: "poisson", Epsilon: 1, Source: src}, "unknown model"},
	}
	for _, c := range cases {
		est, err := New(c.mech)
		if err != nil {
			t.Fatal(err)
		}
		_, err = est.Fit(context.Background(), data, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: error %v, want %q", c.mech, c.cfg, err, c.want)
		}
	}
	if _, err := New("magic"); err == nil {
		t.Error("unknown mechanism accepted")
	}
}

func ExampleNew() {
	// Three rows (x, y) of the Functional Mechanism paper's worked example.
	m := suffstat.New(2)
	_ = m.AddRows([]float64{1, 0.4, 0.9, 0.3, -0.5, -1})
	est, _ := New("nonprivate")
	res, _ := est.Fit(context.Background(), Data{Stats: m}, Config{Kind: Linear})
	fmt.Printf("ω* = %.6f (117/206 = %.6f)\n", res.Coef[0], 117.0/206)
	// Output: ω* = 0.567961 (117/206 = 0.567961)
}
