package inference_test

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/dplearn/dplearn/inference"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// encodedRows returns n encoded rows (intercept, one feature, target) of
// y = 0.1 + 0.5·x + noise on the encoded scale.
func encodedRows(n int) []float64 {
	rng := rand.New(rand.NewPCG(1, 2))
	const s = 0.7 // ‖x‖² = 2·0.49 ≤ 1, the bound the sensitivities assume
	rows := make([]float64, 0, 3*n)
	for i := 0; i < n; i++ {
		x := (2*rng.Float64() - 1) * s
		y := 0.1*s + 0.5*x + 0.1*rng.NormFloat64()
		rows = append(rows, s, x, max(-1, min(1, y)))
	}
	return rows
}

// ExampleFM fits gaussian-fm on 50,000 rows and computes 95% confidence
// intervals from the released objective and a released target moment (5% of
// the budget).
func ExampleFM() {
	rows := encodedRows(50000)
	m := suffstat.New(3)
	if err := m.AddRows(rows); err != nil {
		panic(err)
	}
	m.Flush()
	src := noise.NewInsecureSeeded(1) // reproducible example only: use noise.NewSecure()
	const eps, share = 1.0, 0.05
	est, _ := regress.New("gaussian-fm")
	fit, err := est.Fit(context.Background(), regress.Data{Stats: m},
		regress.Config{Kind: regress.Linear, Epsilon: eps * (1 - share), Delta: 1e-6, Lambda: -1, Source: src})
	if err != nil {
		panic(err)
	}
	y2, _, err := regress.ReleaseTargetMoment(m, eps*share, src)
	if err != nil {
		panic(err)
	}
	iv, err := inference.FM(fit.Released, &inference.TargetMoment{Value: y2}, inference.Options{})
	if err != nil {
		panic(err)
	}
	c := iv.Coefficients[1]
	fmt.Printf("slope: 95%% interval contains 0.5: %v; SE within [0.001, 0.01]: %v\n",
		c.Lower < 0.5 && 0.5 < c.Upper, c.SE > 0.001 && c.SE < 0.01)
	// Output:
	// slope: 95% interval contains 0.5: true; SE within [0.001, 0.01]: true
}

// ExampleIRLS fits DP-IRLS (robust regression) with its defaults (the
// preconditioned form after a Gaussian FM warm start) on
// 50,000 rows and computes 95% confidence intervals from the released
// objectives (the warm start's and the last iteration's) and a released
// residual summary (5% of the budget, at the floor η the fit used).
func ExampleIRLS() {
	rows := encodedRows(50000)
	m := suffstat.New(3)
	if err := m.AddRows(rows); err != nil {
		panic(err)
	}
	m.Flush()
	src := noise.NewInsecureSeeded(1) // reproducible example only: use noise.NewSecure()
	const eps, share = 1.0, 0.05
	est, _ := regress.New("irls")
	fit, err := est.Fit(context.Background(), regress.Data{Stats: m, Rows: rows},
		regress.Config{Kind: regress.Robust, Epsilon: eps * (1 - share), Delta: 1e-6, Lambda: -1, Source: src})
	if err != nil {
		panic(err)
	}
	rs, _, err := regress.ReleaseRobustScale(rows, 3, fit.Coef, fit.Released.ResidualFloor, eps*share, src)
	if err != nil {
		panic(err)
	}
	iv, err := inference.IRLS(fit.Released, rs, inference.Options{})
	if err != nil {
		panic(err)
	}
	c := iv.Coefficients[1]
	fmt.Printf("%s form, warm start: %v, J = %d; slope: 95%% interval contains 0.5: %v; SE within [0.001, 0.01]: %v\n",
		fit.Released.Form, fit.Released.Warm != nil, fit.Released.Iterations, c.Lower < 0.5 && 0.5 < c.Upper, c.SE > 0.001 && c.SE < 0.01)
	// Output:
	// preconditioned form, warm start: true, J = 12; slope: 95% interval contains 0.5: true; SE within [0.001, 0.01]: true
}

// ExampleNoiseForecast forecasts the noise of a fit before it runs, from
// public quantities only: the issue's PSID case (3,332 rows, 18
// coefficients, ε = 1) is warned about.
func ExampleNoiseForecast() {
	js := `{"target": {"name": "lwage", "range": [0, 5]}, "features": [`
	for i := 0; i < 17; i++ {
		if i > 0 {
			js += ","
		}
		js += fmt.Sprintf(`{"name": "x%d", "range": [0, 1]}`, i)
	}
	s, err := schema.Parse([]byte(js + "]}"))
	if err != nil {
		panic(err)
	}
	f, err := inference.NoiseForecast("gaussian-fm",
		regress.Config{Kind: regress.Linear, Epsilon: 1, Delta: 1e-5, Lambda: -1}, s, 3332, inference.Options{})
	if err != nil {
		panic(err)
	}
	fmt.Println(len(f.CoefSD), "coefficients; swamped:", f.Swamped)
	// Output:
	// 18 coefficients; swamped: true
}
