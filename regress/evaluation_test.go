package regress_test

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
)

// bruteAUC counts (positive, negative) pairs directly.
func bruteAUC(s []float64, l []bool) float64 {
	var wins, pairs float64
	for i := range s {
		for j := range s {
			if !l[i] || l[j] {
				continue
			}
			pairs++
			switch {
			case s[i] > s[j]:
				wins++
			case s[i] == s[j]:
				wins += 0.5
			}
		}
	}
	return wins / pairs
}

// TestAUCBruteForce compares the midrank AUC with a count over every
// (positive, negative) pair, on random scores with many ties, and checks
// the degenerate answers (perfect, reversed, one class).
func TestAUCBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		n := 2 + rng.IntN(300)
		s, l := make([]float64, n), make([]bool, n)
		levels := 1 + rng.IntN(20) // few distinct scores: ties
		for i := range s {
			s[i] = float64(rng.IntN(levels)) / float64(levels)
			l[i] = rng.Float64() < s[i]*0.8+0.1
		}
		l[0], l[1] = true, false
		got, ok := regress.AUC(s, l)
		want := bruteAUC(s, l)
		if !ok || math.Abs(got-want) > 1e-12 {
			t.Fatalf("trial %d: AUC %v, brute force %v", trial, got, want)
		}
	}
	for _, c := range []struct {
		s    []float64
		l    []bool
		want float64
	}{
		{[]float64{0.1, 0.2, 0.8, 0.9}, []bool{false, false, true, true}, 1},
		{[]float64{0.1, 0.2, 0.8, 0.9}, []bool{true, true, false, false}, 0},
		{[]float64{0.5, 0.5, 0.5}, []bool{true, false, false}, 0.5},
		// 1 positive at 0.7 beats negatives 0.2, 0.6, ties 0.7, loses to 0.9: (2 + ½)/4.
		{[]float64{0.7, 0.2, 0.6, 0.7, 0.9}, []bool{true, false, false, false, false}, 2.5 / 4},
	} {
		if got, _ := regress.AUC(c.s, c.l); got != c.want {
			t.Errorf("AUC(%v, %v) = %v, want %v", c.s, c.l, got, c.want)
		}
	}
	if _, ok := regress.AUC([]float64{0.1, 0.2}, []bool{true, true}); ok {
		t.Error("AUC with one class reported ok")
	}
}

// logisticModel is a model p = σ(ω₀·x₀ + ω₁·x₁) on a one-feature schema.
func logisticModel(t *testing.T, coef []float64) *regress.Model {
	t.Helper()
	s, err := schema.Parse([]byte(`{"target": {"name": "y", "positive": "1"}, "features": [{"name": "x", "range": [-1, 1]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	m, err := regress.NewModel(regress.Logistic, s, &regress.Result{Coef: coef}, regress.Training{Rows: 1})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestBrierAndCalibrationByHand: with ω = (0, ln 3) and rows x₁ ∈ {−1, 0,
// 1} the predictions are ¼, ½, ¾; the Brier score and the calibration
// groups are worked out by hand.
func TestBrierAndCalibrationByHand(t *testing.T) {
	m := logisticModel(t, []float64{0, math.Log(3)})
	// rows: (x0, x1, y); x0 is the intercept column, its value irrelevant (ω₀ = 0).
	rows := []float64{
		1, -1, 0, // p = ¼, (¼)² = 1/16
		1, -1, 1, // (¾)² = 9/16
		1, 0, 1, // (½)² = 4/16
		1, 1, 1, // (¼)² = 1/16
		1, 1, 0, // (¾)² = 9/16
		1, 0, 0, // 4/16
	}
	e := regress.NewEvaluation(m)
	e.Add(rows)
	got := e.Metrics()
	want := (1.0 + 9 + 4 + 1 + 9 + 4) / 16 / 6
	if got.Brier == nil || math.Abs(*got.Brier-want) > 1e-15 {
		t.Fatalf("Brier %v, want %v", got.Brier, want)
	}
	// three groups of two: p = ¼ (observed ½), ½ (½), ¾ (½).
	cal := regress.Calibration([]float64{0.25, 0.25, 0.5, 0.75, 0.75, 0.5}, []bool{false, true, true, true, false, false}, 3)
	for g, wantP := range []float64{0.25, 0.5, 0.75} {
		if cal[g].N != 2 || math.Abs(cal[g].MeanPredicted-wantP) > 1e-15 || cal[g].Observed != 0.5 {
			t.Errorf("group %d: %+v, want n 2, mean %v, observed ½", g, cal[g], wantP)
		}
	}
	if len(got.Calibration) != 6 || got.AUC == nil || *got.AUC != 0.5 {
		// 6 rows in 10 deciles: 6 groups of one; AUC: positives at ¼, ½, ¾,
		// negatives at ¼, ½, ¾: 3 wins + 3 ties of 9 pairs = ½.
		t.Errorf("calibration groups %d (want 6), AUC %v (want ½)", len(got.Calibration), got.AUC)
	}
	// deciles of 1000 rows: groups of 100, sorted.
	s, l := make([]float64, 1000), make([]bool, 1000)
	for i := range s {
		s[i] = float64((i*37)%1000) / 1000
		l[i] = i%3 == 0
	}
	cal = regress.Calibration(s, l, 10)
	for g, b := range cal {
		if b.N != 100 || b.MinPredicted != float64(g)/10 || math.Abs(b.MaxPredicted-(float64(g)/10+0.099)) > 1e-12 {
			t.Errorf("decile %d: %+v", g, b)
		}
	}
}

// TestEvaluationOriginalUnits: a log-wage model whose predictions are
// known; RMSE and MAE in wage units after exp, worked out by hand.
func TestEvaluationOriginalUnits(t *testing.T) {
	s, err := schema.Parse([]byte(`{"target": {"name": "wage", "transform": "log", "range": [4, 8]}, "features": [{"name": "x", "range": [-1, 1]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// encoded y = (log wage − 6)/2; with ω = (0, c), prediction c·x1.
	sc := 0.5 // any slope; predictions 0 and sc·x
	m, err := regress.NewModel(regress.Linear, s, &regress.Result{Coef: []float64{0, sc}}, regress.Training{Rows: 1})
	if err != nil {
		t.Fatal(err)
	}
	rows := []float64{
		1, 0, 0, // predicted log wage 6, observed 6: error 0
		1, 0.2, 0.3, // predicted 6 + 2·0.1 = 6.2, observed 6.6
		1, -0.4, -0.5, // predicted 5.6, observed 5
	}
	e := regress.NewEvaluation(m)
	e.Add(rows)
	got := e.Metrics()
	d1, d2 := math.Exp(6.2)-math.Exp(6.6), math.Exp(5.6)-math.Exp(5)
	rmse := math.Sqrt((d1*d1 + d2*d2) / 3)
	mae := (math.Abs(d1) + math.Abs(d2)) / 3
	if got.OriginalUnits == nil || math.Abs(got.OriginalUnits.RMSEOriginal-rmse) > 1e-9*rmse || math.Abs(got.OriginalUnits.MAEOriginal-mae) > 1e-9*mae {
		t.Fatalf("original units %+v, want rmse %v mae %v", got.OriginalUnits, rmse, mae)
	}
	if *got.Metrics.RMSE == got.OriginalUnits.RMSEOriginal {
		t.Error("log-scale RMSE equals the wage-scale one")
	}
}
