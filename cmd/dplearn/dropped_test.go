package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// TestDroppedShareCorrectsIntervals (issue 25 item 5): with 40% of the
// records dropped for a missing value, a linear gaussian-fm fit at a large
// ε (noise negligible, so the SE is the sampling SE) must report the
// standard errors of a fit on the kept records alone. Before the
// correction they were short by √(1 − 0.4) ≈ 0.77 (the zero rows shrink
// Λ0 − βᵀΛ2β); now the ratio is within 4% of 1. It also checks that the
// dropped share is released (one more Laplace release, composed so that
// the guarantee stays the --epsilon given).
func TestDroppedShareCorrectsIntervals(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(5, 5))
	var all, kept strings.Builder
	all.WriteString("wage,education,ethnicity\n")
	kept.WriteString("wage,education,ethnicity\n")
	const n = 20000
	for i := 0; i < n; i++ {
		ed := rng.IntN(19)
		eth, afam := "cauc", 0.0
		if rng.IntN(4) == 0 {
			eth, afam = "afam", 1
		}
		line := fmt.Sprintf("%.4f,%d,%s\n", math.Exp(5+0.1*float64(ed)-0.2*afam+0.3*rng.NormFloat64()), ed, eth)
		if rng.Float64() < 0.4 {
			line = fmt.Sprintf("%.4f,NA,%s\n", math.Exp(5+0.3*rng.NormFloat64()), eth)
		} else {
			kept.WriteString(line)
		}
		all.WriteString(line)
	}
	allPath := writeFile(t, dir, "all.csv", all.String())
	keptPath := writeFile(t, dir, "kept.csv", kept.String())
	dropSchema := writeFile(t, dir, "drop.json", `{"target": {"name": "wage", "transform": "log", "range": [4, 9]},
	 "features": [{"name": "education", "range": [0, 20], "missing": "drop"},
	              {"name": "ethnicity", "categories": ["cauc", "afam"]}]}`)
	plainSchema := writeFile(t, dir, "plain.json", wageSchema)
	se := func(data, sch, name string) (map[string]float64, int, float64) {
		model := filepath.Join(dir, name+".json")
		out, _, err := runCLIBoth(t, "fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm",
			"--epsilon", "200", "--delta", "1e-6", "--seed", "3", "--format", "json", "--out", model)
		if err != nil {
			t.Fatal(err)
		}
		var res struct {
			Privacy struct {
				Epsilon  float64           `json:"epsilon"`
				Releases []json.RawMessage `json:"releases"`
			} `json:"privacy"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil {
			t.Fatal(err)
		}
		inf, _ := loadInference(t, model)
		m := map[string]float64{}
		for _, r := range inf.Rows {
			if !r.Identified {
				t.Fatalf("%s: %s unidentified", name, r.Name)
			}
			m[r.Name] = r.OriginalSE
		}
		return m, len(res.Privacy.Releases), res.Privacy.Epsilon
	}
	withDrops, relDrops, epsDrops := se(allPath, dropSchema, "all")
	keptOnly, relKept, _ := se(keptPath, plainSchema, "kept")
	if relDrops != relKept+1 {
		t.Errorf("%d releases with drops, %d without: want one more (the dropped share)", relDrops, relKept)
	}
	if math.Abs(epsDrops-200) > 1e-9 {
		t.Errorf("composed ε = %v, want 200", epsDrops)
	}
	for name, s := range keptOnly {
		r := withDrops[name] / s
		t.Logf("%s: SE with dropped records %.4g, on the kept records %.4g, ratio %.3f", name, withDrops[name], s, r)
		if r < 0.96 || r > 1.04 {
			t.Errorf("%s: SE ratio %.3f (with drops / kept only), want 1 ± 0.04 (uncorrected: √0.6 ≈ 0.77)", name, r)
		}
	}
}
