package describe

import (
	"bytes"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/noise"
)

// TestUnitSensitivitiesExtremal: with a privacy unit of K = 3 records,
// neighbouring tables differ in all records of one unit (replaced by 3, 1
// or 0 kept records of another). Every release moves by at most K times
// its per-record sensitivity (Data.unitFactor), and the extremal pairs
// reach K times it for each release kind, so the factor cannot be smaller.
func TestUnitSensitivitiesExtremal(t *testing.T) {
	const k = 3
	s := mustSchema(t, `{"target": {"name": "y", "range": [-1, 3]},
 "features": [{"name": "x", "range": [0, 10], "missing": "drop"},
              {"name": "g", "categories": ["a", "b", "c"]}]}`)
	rest := synthData(rand.New(rand.NewPCG(5, 6)), 200)
	unit := func(r rec, n int) []rec {
		out := make([]rec, n)
		for i := range out {
			out[i] = r
		}
		return out
	}
	base := append(unit(rec{x: 0, g: 0, y: -1}, k), rest...)
	pairs := []struct {
		name string
		by   string
		to   []rec
	}{
		{"x low to high", "", unit(rec{x: 10, g: 0, y: 3}, k)},
		{"x low to high across groups", "g", unit(rec{x: 10, g: 1, y: 3}, k)},
		{"same value across groups", "g", unit(rec{x: 0, g: 2, y: -1}, k)},
		{"kept to dropped", "", unit(rec{drp: true}, k)},
		{"kept to dropped by group", "g", unit(rec{drp: true}, k)},
		{"three records to one", "", unit(rec{x: 10, g: 1, y: 3}, 1)},
		{"three records to one by group", "g", unit(rec{x: 10, g: 1, y: 3}, 1)},
	}
	l1 := func(a, b []float64) float64 {
		s := 0.0
		for i := range a {
			s += math.Abs(a[i] - b[i])
		}
		return s
	}
	maxSeen := map[string]float64{}
	check := func(key, name string, v, sens float64) {
		if v > sens*(1+1e-12) {
			t.Errorf("%s: %s changed by %v > K·Δ = %v", name, key, v, sens)
		}
		maxSeen[key] = max(maxSeen[key], v/sens)
	}
	for _, p := range pairs {
		other := append(append([]rec(nil), p.to...), rest...)
		opt := Options{Epsilon: 1, By: p.by, PrivacyUnit: "person", MaxRowsPerUnit: k}
		d1 := build(t, s, opt, base)
		d2 := build(t, s, opt, other)
		kf := float64(d1.unitFactor())
		if kf != k {
			t.Fatalf("unit factor %v, want %d", kf, k)
		}
		G := d1.groups
		for _, i := range d1.use {
			c := d1.cols[i]
			if i == d1.by {
				continue
			}
			h1, h2 := make([]float64, len(d1.hist[i])), make([]float64, len(d1.hist[i]))
			for j := range h1 {
				h1[j], h2[j] = float64(d1.hist[i][j]), float64(d2.hist[i][j])
			}
			check("hist", p.name, l1(h1, h2), histSens*kf)
			if !c.Numeric {
				continue
			}
			w := c.Hi - c.Lo
			check("sum", p.name, l1(d1.sum[i], d2.sum[i]), sumSens(w)*kf)
			check(map[bool]string{true: "sq G>1", false: "sq G=1"}[G > 1], p.name, l1(d1.sq[i], d2.sq[i]), sqSens(w, G)*kf)
			for g := range G {
				for _, q := range []float64{0.01, 0.5, 0.99} {
					a := quantileScores(d1.gridByG[i][g], q, d1.gridByG[i][g].n())
					b := quantileScores(d2.gridByG[i][g], q, d2.gridByG[i][g].n())
					for j := range a {
						df, _ := new(big.Rat).Sub(a[j], b[j]).Float64()
						check("score", p.name, math.Abs(df), kf)
					}
				}
			}
		}
		cn, cm := make([]float64, G), make([]float64, G)
		for g := range G {
			cn[g], cm[g] = float64(d1.n[g]), float64(d2.n[g])
		}
		check(map[bool]string{true: "count G>1", false: "count G=1"}[G > 1], p.name, l1(cn, cm), float64(countSens(G))*kf)
	}
	for _, key := range []string{"hist", "sum", "sq G=1", "sq G>1", "count G=1", "count G>1", "score"} {
		if maxSeen[key] < 1-1e-9 {
			t.Errorf("%s: the largest change is %v of K times the per-record sensitivity, want it reached", key, maxSeen[key])
		}
	}
}

// TestUnitRelease: under a privacy unit the release states the unit, K and
// "differ in all rows of one person", reports the number of units (not
// of records) as public, releases the counts with noise, and every part's
// sensitivity is K times the per-record one.
func TestUnitRelease(t *testing.T) {
	s := mustSchema(t, testSchema)
	recs := synthData(rand.New(rand.NewPCG(1, 2)), 300)
	row := build(t, s, Options{Epsilon: 1}, recs)
	unit := build(t, s, Options{Epsilon: 1, PrivacyUnit: "person", MaxRowsPerUnit: 4}, recs)
	if _, err := unit.Release(noise.NewInsecureSeeded(1)); err == nil {
		t.Fatal("released without the number of units")
	}
	unit = build(t, s, Options{Epsilon: 1, PrivacyUnit: "person", MaxRowsPerUnit: 4}, recs)
	unit.SetUnits(90)
	rr, err := row.Release(noise.NewInsecureSeeded(1))
	if err != nil {
		t.Fatal(err)
	}
	ur, err := unit.Release(noise.NewInsecureSeeded(1))
	if err != nil {
		t.Fatal(err)
	}
	if ur.Rows != 90 || ur.NPublic || len(ur.Parts) != len(rr.Parts)+1 || ur.Parts[0].What != "record counts" {
		t.Fatalf("unit release: rows %d, N public %v, %d parts (row-level %d)", ur.Rows, ur.NPublic, len(ur.Parts), len(rr.Parts))
	}
	for i, p := range rr.Parts {
		if q := ur.Parts[i+1]; q.What != p.What || q.Sensitivity != 4*p.Sensitivity {
			t.Errorf("part %s: sensitivity %v, want 4 × %v", q.What, q.Sensitivity, p.Sensitivity)
		}
	}
	var b bytes.Buffer
	ur.WriteText(&b)
	for _, want := range []string{"differ in all rows of one person", `privacy unit "person"`, "K = 4", "Units (person): 90"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
}
