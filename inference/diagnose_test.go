package inference

import (
	"math"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/regress"
)

// TestDiagnosisNamesTheDirection makes encoded columns 1 and 2 of a
// released Λ2 identical (row, column and diagonal), so Λ2 is singular
// along (e₁ − e₂)/√2: exactly coefficients 1 and 2 are unidentified (the
// others do not load on that direction and keep their intervals; before
// issue 25 every coefficient was reported unidentified) and the diagnosis
// must say "trimmed", name exactly that direction (two loadings of ±1/√2
// on columns 1 and 2) and say what would identify it. A well-conditioned
// release gets no diagnosis and no failed replicates.
func TestDiagnosisNamesTheDirection(t *testing.T) {
	rel, y2 := fitReleased(t, "gaussian-fm", regress.Linear, 1, 100000)
	ok, err := FM(rel, y2, Options{Replicates: 200})
	if err != nil {
		t.Fatal(err)
	}
	if ok.Diagnosis != nil || ok.Failed != 0 {
		t.Fatalf("well-conditioned release: diagnosis %+v, %d failed", ok.Diagnosis, ok.Failed)
	}
	q := *rel.Objective
	q.Upper = append([]float64(nil), q.Upper...)
	set := func(i, j int, v float64) {
		if i > j {
			i, j = j, i
		}
		q.Upper[i*q.D-i*(i-1)/2+(j-i)] = v
	}
	for k := 0; k < q.D; k++ {
		if k != 2 {
			set(2, k, q.At(1, k))
		}
	}
	set(2, 2, q.At(1, 1))
	set(1, 2, q.At(1, 1))
	bad := *rel
	bad.Objective = &q
	iv, err := FM(&bad, y2, Options{Replicates: 200})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range iv.Coefficients {
		if want := i != 1 && i != 2; c.Identified != want {
			t.Errorf("coefficient %d: identified %v on Λ2 singular along (e₁ − e₂)/√2, want %v", i, c.Identified, want)
		}
	}
	dg := iv.Diagnosis
	if dg == nil || dg.Cause != "trimmed" || len(dg.Directions) != 1 {
		t.Fatalf("diagnosis %+v", dg)
	}
	l := dg.Directions[0].Loadings
	if len(l) != 2 || l[0].Index+l[1].Index != 3 || math.Abs(math.Abs(l[0].Weight)-math.Sqrt2/2) > 1e-6 || l[0].Weight*l[1].Weight > 0 {
		t.Errorf("direction loadings %+v, want ±(e₁ − e₂)/√2", l)
	}
	text := dg.Explain([]string{"(intercept)", "a", "b", "c"})
	for _, w := range []string{"not significantly positive", "a", "b", "more ε", "fewer category levels", "coarser schema"} {
		if !strings.Contains(text, w) {
			t.Errorf("explanation lacks %q: %s", w, text)
		}
	}
}
