package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestPredictDigits checks --digits: with 0 every prediction is the exact
// float64 of an independent recomputation from the model file (scaled affine
// encoding, the dot product in the core's order, clip, decode), so nothing
// is lost in printing; the default keeps 8 significant digits (the same
// numbers rounded) and loses bits on most rows; --digits k rounds to k
// digits; values outside 0..17 are refused.
func TestPredictDigits(t *testing.T) {
	dir := t.TempDir()
	const schemaText = `{"target": {"name": "y", "range": [-3, 5]},
 "features": [{"name": "a", "range": [0, 10]}, {"name": "b", "range": [-2, 2]}]}`
	sp := filepath.Join(dir, "s.json")
	if err := os.WriteFile(sp, []byte(schemaText), 0o644); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	var b strings.Builder
	b.WriteString("a,b,y\n")
	type row struct{ a, b float64 }
	var rows []row
	for i := 0; i < 2000; i++ {
		r := row{rng.Float64() * 11, rng.NormFloat64()}
		rows = append(rows, r)
		fmt.Fprintf(&b, "%s,%s,%s\n", strconv.FormatFloat(r.a, 'g', -1, 64), strconv.FormatFloat(r.b, 'g', -1, 64),
			strconv.FormatFloat(0.2*r.a-0.5*r.b+rng.NormFloat64(), 'g', -1, 64))
	}
	data := filepath.Join(dir, "d.csv")
	if err := os.WriteFile(data, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	model := filepath.Join(dir, "m.json")
	if _, err := runCLI(t, "fit", "--data", data, "--schema", sp, "--model", "linear", "--mechanism", "gaussian-fm",
		"--epsilon", "2", "--delta", "1e-6", "--seed", "5", "--ci-share", "0", "--out", model); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Features     []string  `json:"features"`
		Coefficients []float64 `json:"coefficients"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(m.Features) != "[(intercept) a b]" {
		t.Fatalf("features %v", m.Features)
	}
	affine := func(v, lo, hi float64) float64 {
		v = math.Max(lo, math.Min(hi, v))
		return math.Max(-1, math.Min(1, 2*(v-lo)/(hi-lo)-1))
	}
	// the encoder's 1/√B, B = 3 groups, rounded down: the largest float64
	// s with 3s² ≤ 1 (schema package doc)
	sc := 1 / math.Sqrt(3)
	fits := func(s float64) bool {
		r := new(big.Rat).SetFloat64(s)
		return r.Mul(r, r).Mul(r, big.NewRat(3, 1)).Cmp(big.NewRat(1, 1)) <= 0
	}
	for !fits(sc) {
		sc = math.Nextafter(sc, 0)
	}
	for fits(math.Nextafter(sc, 1)) {
		sc = math.Nextafter(sc, 1)
	}
	want := make([]float64, len(rows))
	for i, r := range rows {
		x := []float64{sc, sc * affine(r.a, 0, 10), sc * affine(r.b, -2, 2)}
		z := 0.0
		for j := range x {
			z += x[j] * m.Coefficients[j]
		}
		z = math.Max(-1, math.Min(1, z))
		want[i] = -3 + (z+1)/2*(5-(-3))
	}
	predict := func(extra ...string) [][]string {
		t.Helper()
		out := filepath.Join(dir, "p.csv")
		if _, err := runCLI(t, append([]string{"predict", "--model", model, "--data", data, "--out", out}, extra...)...); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(out)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		recs, err := csv.NewReader(f).ReadAll()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != len(rows)+1 || recs[0][1] != "y_predicted" {
			t.Fatalf("%d lines, header %v", len(recs), recs[0])
		}
		return recs[1:]
	}
	full, def, three := predict("--digits", "0"), predict(), predict("--digits", "3")
	lossy := 0
	for i := range rows {
		got, err := strconv.ParseFloat(full[i][1], 64)
		if err != nil {
			t.Fatal(err)
		}
		if got != want[i] {
			t.Fatalf("row %d: --digits 0 printed %s, the model computes %s", i+1, full[i][1], strconv.FormatFloat(want[i], 'g', -1, 64))
		}
		if d := strconv.FormatFloat(want[i], 'g', 8, 64); def[i][1] != d {
			t.Fatalf("row %d: default printed %s, want 8 digits %s", i+1, def[i][1], d)
		}
		if d := strconv.FormatFloat(want[i], 'g', 3, 64); three[i][1] != d {
			t.Fatalf("row %d: --digits 3 printed %s, want %s", i+1, three[i][1], d)
		}
		if v, _ := strconv.ParseFloat(def[i][1], 64); v != want[i] {
			lossy++
		}
	}
	// the 8-digit default does lose bits: the full-precision flag matters
	if lossy < len(rows)/2 {
		t.Fatalf("only %d of %d 8-digit predictions differ from the float64: the comparison is too weak", lossy, len(rows))
	}
	for _, bad := range []string{"18", "-1"} {
		_, err := runCLI(t, "predict", "--model", model, "--data", data, "--out", filepath.Join(dir, "x.csv"), "--digits="+bad)
		if err == nil || !strings.Contains(err.Error(), "--digits") {
			t.Errorf("--digits %s: err %v, want a refusal naming --digits", bad, err)
		}
	}
}
