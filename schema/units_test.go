package schema_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// fitOriginal encodes records with the schema, fits the non-private model and
// returns the coefficients in original units with their units.
func fitOriginal(t *testing.T, s *schema.Schema, kind regress.Kind, header []string, records [][]string) ([]float64, []schema.Unit) {
	t.Helper()
	enc, err := s.NewEncoder(header, schema.EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	k := enc.Width()
	rows := make([]float64, 0, k*len(records))
	row := make([]float64, k)
	for _, rec := range records {
		fields := make([][]byte, len(rec))
		for i, f := range rec {
			fields[i] = []byte(f)
		}
		if err := enc.Encode(fields, row); err != nil {
			t.Fatal(err)
		}
		rows = append(rows, row...)
	}
	m := suffstat.New(k)
	if err := m.AddRows(rows); err != nil {
		t.Fatal(err)
	}
	m.Flush()
	est, _ := regress.New("nonprivate")
	res, err := est.Fit(context.Background(), regress.Data{Stats: m, Rows: rows}, regress.Config{Kind: kind})
	if err != nil {
		t.Fatal(err)
	}
	units := s.OriginalUnits()
	out := make([]float64, len(units))
	for i, u := range units {
		out[i] = u.Apply(res.Coef)
	}
	return out, units
}

func f(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// TestOriginalUnitsKnownAnswer generates records in original units from a
// known model, fits the non-private model on the encoded rows and checks that
// OriginalUnits recovers the known coefficients: exactly (to rounding) without
// noise, within a few standard errors with noise, and for logistic
// regression within a few standard errors of the logistic coefficients.
func TestOriginalUnitsKnownAnswer(t *testing.T) {
	s, err := schema.Parse([]byte(`{"target": {"name": "wage", "transform": "log", "range": [1, 8]},
	 "features": [
	   {"name": "educ", "range": [0, 20]},
	   {"name": "age", "range": [18, 70]},
	   {"name": "region", "categories": ["north", "south", "west"]},
	   {"name": "exper", "transform": "log", "range": [0, 4]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// log(wage) = 2.5 + 0.09 educ − 0.01 age + 0.2[south] − 0.1[west] + 0.3 log(exper) + e.
	truth := []float64{2.5, 0.09, -0.01, 0.2, -0.1, 0.3}
	header := []string{"wage", "educ", "age", "region", "exper"}
	for _, tc := range []struct {
		name  string
		sigma float64
		n     int
		tol   []float64
	}{
		{"noise-free", 0, 2000, []float64{1e-9, 1e-10, 1e-11, 1e-10, 1e-10, 1e-10}},
		// σ = 0.05, N = 20000: standard errors ≈ 0.0016 (intercept),
		// 6e-5 (educ), 2.3e-5 (age), 8.7e-4 (categories), 4e-4 (log exper);
		// tolerances are about 5 of them.
		{"noisy", 0.05, 20000, []float64{0.008, 3e-4, 1.2e-4, 0.0045, 0.0045, 0.002}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(1, 2))
			regions := []string{"north", "south", "west"}
			recs := make([][]string, tc.n)
			for i := range recs {
				educ := float64(rng.IntN(21))
				age := 18 + 52*rng.Float64()
				r := rng.IntN(3)
				exper := 1 + 49*rng.Float64()
				lw := truth[0] + truth[1]*educ + truth[2]*age + truth[5]*math.Log(exper) + tc.sigma*rng.NormFloat64()
				if r > 0 {
					lw += truth[2+r]
				}
				recs[i] = []string{f(math.Exp(lw)), f(educ), f(age), regions[r], f(exper)}
			}
			got, units := fitOriginal(t, s, regress.Linear, header, recs)
			for i := range truth {
				if math.Abs(got[i]-truth[i]) > tc.tol[i] {
					t.Errorf("%s: got %.10g, want %.10g ± %g", units[i].Name, got[i], truth[i], tc.tol[i])
				}
			}
			if tc.sigma == 0 {
				if m := units[1].Meaning(got[1]); m != "+1 educ ≈ ×1.094 wage" {
					t.Errorf("meaning of educ: %q", m)
				}
				if m := units[5].Meaning(got[5]); m != "+1% exper ≈ ×1.003 wage" {
					t.Errorf("meaning of exper: %q", m)
				}
				if m := units[3].Meaning(got[3]); m != "region=south instead of north ≈ ×1.221 wage" {
					t.Errorf("meaning of region=south: %q", m)
				}
				if m := units[0].Meaning(got[0]); !strings.Contains(m, "wage ≈ 12.18") {
					t.Errorf("meaning of the intercept: %q", m)
				}
			}
		})
	}
}

func TestOriginalUnitsLogistic(t *testing.T) {
	s, err := schema.Parse([]byte(`{"target": {"name": "smoker", "positive": "yes"},
	 "features": [{"name": "age", "range": [20, 80]}, {"name": "sex", "categories": ["f", "m"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	// logit P(yes) = −2 + 0.03 age + 0.5[m]; N = 100000: standard errors
	// ≈ 0.03 (intercept), 6e-4 (age), 0.014 (sex); tolerances about 5 of them.
	truth, tol := []float64{-2, 0.03, 0.5}, []float64{0.15, 0.003, 0.07}
	rng := rand.New(rand.NewPCG(3, 4))
	recs := make([][]string, 100000)
	for i := range recs {
		age := 20 + 60*rng.Float64()
		m := rng.IntN(2)
		z := truth[0] + truth[1]*age + truth[2]*float64(m)
		y := "no"
		if rng.Float64() < 1/(1+math.Exp(-z)) {
			y = "yes"
		}
		recs[i] = []string{y, f(age), []string{"f", "m"}[m]}
	}
	got, units := fitOriginal(t, s, regress.Logistic, []string{"smoker", "age", "sex"}, recs)
	for i := range truth {
		if math.Abs(got[i]-truth[i]) > tol[i] {
			t.Errorf("%s: got %.6g, want %.6g ± %g", units[i].Name, got[i], truth[i], tol[i])
		}
	}
	if m := units[1].Meaning(0.03); m != "+1 age ≈ ×1.03 odds of smoker" {
		t.Errorf("meaning: %q", m)
	}
}

// TestUnitSlope checks that every non-intercept unit is a pure scale of one
// encoded coefficient and the intercept is not.
func TestUnitSlope(t *testing.T) {
	s, err := schema.Parse([]byte(`{"target": {"name": "y", "range": [0, 10]},
	 "features": [{"name": "a", "range": [-1, 3]}, {"name": "c", "categories": ["x", "y", "z"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	us := s.OriginalUnits()
	if len(us) != s.Dim() {
		t.Fatalf("%d units for %d columns", len(us), s.Dim())
	}
	if _, ok := us[0].Slope(); ok {
		t.Error("intercept reported as a pure scale")
	}
	// B = 3 (intercept, a, c): s = 1/√3; h_y = 5; a: h = 2.
	if sl, ok := us[1].Slope(); !ok || math.Abs(sl-5/math.Sqrt(3)/2) > 1e-15 {
		t.Errorf("slope of a = %v, want %v", sl, 5/math.Sqrt(3)/2)
	}
}

// ExampleSchema_OriginalUnits maps encoded coefficients to original units.
func ExampleSchema_OriginalUnits() {
	s, err := schema.Parse([]byte(`{"target": {"name": "wage", "transform": "log", "range": [4, 9]},
	 "features": [{"name": "education", "range": [0, 20]}]}`))
	if err != nil {
		panic(err)
	}
	encoded := []float64{-0.5, 0.57} // intercept, education (B = 2)
	for _, u := range s.OriginalUnits() {
		b := u.Apply(encoded)
		fmt.Printf("%s: %.4f (%s)\n", u.Name, b, u.Meaning(b))
	}
	// Output:
	// (intercept): 4.6085 (log(wage) at zero numeric features and reference categories (wage ≈ 100.3))
	// education: 0.1008 (+1 education ≈ ×1.106 wage)
}
