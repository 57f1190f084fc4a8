package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestFitIntervalsBudget runs `dplearn fit` on a 50-coefficient table of
// 1,000 rows, where the inference budget allows no intervals: the text
// names d, N and --intervals=on and says nothing was spent on them; the
// JSON carries the budget and the model file the whole ε for the fit;
// --intervals on computes them.
func TestFitIntervalsBudget(t *testing.T) {
	dir := t.TempDir()
	const d, n = 50, 1000
	var fs, hdr []string
	for j := 1; j < d; j++ {
		fs = append(fs, fmt.Sprintf(`{"name": "x%d", "range": [-1, 1]}`, j))
		hdr = append(hdr, fmt.Sprintf("x%d", j))
	}
	sch := writeFile(t, dir, "schema.json", fmt.Sprintf(`{"target": {"name": "y", "range": [-3, 3]}, "features": [%s]}`, strings.Join(fs, ", ")))
	rng := rand.New(rand.NewPCG(4, 4))
	var b strings.Builder
	b.WriteString("y," + strings.Join(hdr, ",") + "\n")
	for i := 0; i < n; i++ {
		row := make([]string, d)
		y := 0.0
		for j := 1; j < d; j++ {
			x := 2*rng.Float64() - 1
			y += 0.1 * x
			row[j] = fmt.Sprintf("%.4f", x)
		}
		row[0] = fmt.Sprintf("%.4f", y+0.3*rng.NormFloat64())
		b.WriteString(strings.Join(row, ",") + "\n")
	}
	data := writeFile(t, dir, "wide.csv", b.String())
	model := filepath.Join(dir, "m.json")
	args := []string{"fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm", "--epsilon", "1", "--delta", "1e-5", "--seed", "2", "--out", model}
	out, err := runCLI(t, args...)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(no confidence intervals by default at d = 50, N = 1000", "--intervals=on computes them anyway)", "forecast: skipped"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	raw, err := os.ReadFile(model)
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Privacy struct {
			Epsilon  float64 `json:"epsilon"`
			Releases []struct {
				Name string `json:"name"`
			} `json:"releases"`
		} `json:"privacy"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	if m.Privacy.Epsilon != 1 || len(m.Privacy.Releases) != 2 {
		t.Errorf("model file guarantee ε = %v with %d releases: want ε = 1 spent by the fit's two releases alone", m.Privacy.Epsilon, len(m.Privacy.Releases))
	}
	out, err = runCLI(t, append(args, "--format", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	var js struct {
		Budget struct {
			Replicates int     `json:"replicates"`
			D          int     `json:"d"`
			N          int64   `json:"n"`
			Ratio      float64 `json:"cost_ratio"`
		} `json:"inference_budget"`
	}
	if err := json.Unmarshal([]byte(out), &js); err != nil {
		t.Fatal(err)
	}
	if js.Budget.Replicates != 0 || js.Budget.D != d || js.Budget.N != n || !(js.Budget.Ratio > 0.2) {
		t.Errorf("JSON inference_budget %+v", js.Budget)
	}
	out, err = runCLI(t, append(args, "--intervals", "on")...)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, "Intervals: parametric bootstrap") || !strings.Contains(out, "2000 replicates") {
		t.Errorf("--intervals on: no intervals at the default size:\n%s", out)
	}
}
