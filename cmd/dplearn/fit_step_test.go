package main

import (
	"encoding/json"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/exampledata"
)

// TestFitNoisyGDDataStepThroughCLI runs `dplearn fit --mechanism noisygd`
// where its data-scaled step fires (all 28,155 CPS 1988 rows at ε = 2: the
// public ceiling 1/(0.5·√(dT)·s) exceeds 1/L) and where it does not (3,000
// rows; --learning-rate given), `--mechanism auto` where its rule picks
// noisygd, and the logistic default (the clipped gradient; all 10,000
// SmokeBan rows at ε = 2, ceiling 1/(0.2·√(dT)·s) above 1/L = 4, the step
// 1/(¼·t⁺ + λ)). From the JSON report alone it recomputes what the data-scaled
// step promises (regress/noisygd.go, "The data-scaled step"): a second
// release, the trace, with sensitivity (1 + encTol)/N; the composed
// μ = √(T·(Δ/σ)² + (Δ_t/σ_t)²) within the grid slack of the printed one;
// the printed (ε, δ) from that μ by the Gaussian-DP curve written out here;
// the trace's share 2% of μ²; the printed ceiling from the gradient
// release's noise; and, for the linear fits, the noise-walk ball.
func TestFitNoisyGDDataStepThroughCLI(t *testing.T) {
	ds, err := exampledata.Get("cps1988")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lines := strings.SplitAfter(string(ds.CSV), "\n")
	full := writeFile(t, dir, "cps.csv", string(ds.CSV))
	small := writeFile(t, dir, "cps3000.csv", strings.Join(lines[:3001], ""))
	sch := writeFile(t, dir, "cps.json", string(ds.Schema))
	smoke, err := exampledata.Get("smokeban")
	if err != nil {
		t.Fatal(err)
	}
	smokeCSV := writeFile(t, dir, "smokeban.csv", string(smoke.CSV))
	smokeSch := writeFile(t, dir, "smokeban.json", string(smoke.Schema))
	const eps, delta = 2.0, 1e-6
	for _, tc := range []struct {
		name        string
		data, sch   string
		model       string
		mechanism   string
		flags       []string
		step        bool    // the trace is released and the data-scaled step used
		c, invL, lt float64 // the ceiling's factor, 1/L, and L per unit of trace, written out
	}{
		{"full table", full, sch, "linear", "noisygd", nil, true, 0.5, 0.5, 2},
		// At the default T (4000 here) the noise walk W outgrows R₀ and the
		// ball is R₀ at any step; at T = 1000 it grows, from the step used.
		{"full table, T = 1000", full, sch, "linear", "noisygd", []string{"--iterations", "1000"}, true, 0.5, 0.5, 2},
		{"auto picks noisygd", full, sch, "linear", "auto", nil, true, 0.5, 0.5, 2},
		{"learning rate given", full, sch, "linear", "noisygd", []string{"--learning-rate", "0.25"}, false, 0, 0, 0},
		{"3000 rows", small, sch, "linear", "noisygd", nil, false, 0, 0, 0},
		{"logistic, the clipped gradient", smokeCSV, smokeSch, "logistic", "noisygd", nil, true, 0.2, 4, 0.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"fit", "--data", tc.data, "--schema", tc.sch, "--model", tc.model, "--mechanism", tc.mechanism,
				"--epsilon", "2", "--delta", "1e-6", "--seed", "5", "--format", "json", "--out", dir + "/m.json"}, tc.flags...)
			out, err := runCLI(t, args...)
			if err != nil {
				t.Fatal(err)
			}
			var fit struct {
				Rows    int64 `json:"rows"`
				Privacy struct {
					Epsilon, Delta float64
					Accountant     string
					Releases       []struct {
						Name               string
						Entries            int
						Sensitivity, Scale float64
					}
					PostProcessing []string `json:"post_processing"`
					Notes          []string
				}
			}
			if err := json.Unmarshal([]byte(out), &fit); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			p := fit.Privacy
			if p.Epsilon != eps || p.Delta != delta {
				t.Fatalf("guarantee (%v, %v), want (%v, %v)", p.Epsilon, p.Delta, eps, delta)
			}
			stepLine := strings.Join(p.PostProcessing, "\n")
			if !tc.step {
				if len(p.Releases) != 1 || strings.Contains(stepLine, "data-scaled") || strings.Contains(p.Accountant, "trace") {
					t.Fatalf("the trace is released or the step used where the ceiling does not fire or the rate is given:\n%s", out)
				}
				return
			}
			if len(p.Releases) != 2 || !strings.HasPrefix(p.Releases[1].Name, "trace") {
				t.Fatalf("want the gradient and trace releases, got %+v", p.Releases)
			}
			g, tr := p.Releases[0], p.Releases[1]
			n := float64(fit.Rows)
			if tr.Entries != 1 || tr.Sensitivity < 1/n || tr.Sensitivity > 1.0001/n {
				t.Errorf("trace: %d entries, sensitivity %v; want 1 entry, (1 + encTol)/N ≈ %v", tr.Entries, tr.Sensitivity, 1/n)
			}
			m := regexp.MustCompile(`each of (\d+) steps`).FindStringSubmatch(g.Name)
			if m == nil {
				t.Fatalf("no step count in %q", g.Name)
			}
			steps, _ := strconv.Atoi(m[1])
			muG := math.Sqrt(float64(steps)) * g.Sensitivity / g.Scale
			muT := tr.Sensitivity / tr.Scale
			recomputed := math.Hypot(muG, muT)
			m = regexp.MustCompile(`μ = √\(T/z² \+ μ_t²\) = ([0-9.e+-]+)`).FindStringSubmatch(p.Accountant)
			if m == nil {
				t.Fatalf("no composed μ in the accountant line %q", p.Accountant)
			}
			printed, _ := strconv.ParseFloat(m[1], 64)
			// The printed μ includes the grid slack (≤ 1e-3 of each σ here).
			if printed < recomputed*(1-1e-5) || printed > recomputed*1.002 {
				t.Errorf("printed μ %v, recomputed from the releases %v", printed, recomputed)
			}
			if got := gdpDelta(eps, printed); got > delta*(1+1e-4) || got < 0.99*delta {
				t.Errorf("δ(ε = %v) of the printed %v-GDP is %v, want just under %v", eps, printed, got, delta)
			}
			if share := muT * muT / (recomputed * recomputed); math.Abs(share-0.02) > 0.001 {
				t.Errorf("the trace's share of μ² is %v, want 0.02", share)
			}
			ceil := 1 / (tc.c * math.Sqrt(float64(g.Entries*steps)) * g.Scale)
			if want := strconv.FormatFloat(ceil, 'g', 4, 64); !strings.Contains(stepLine, "min("+want+", 1/("+strconv.FormatFloat(tc.lt, 'g', -1, 64)+"·t⁺ + λ))") {
				t.Errorf("the step line does not print the ceiling 1/(%v√(dT)·s) = %s and the bound 1/(%v·t⁺ + λ):\n%s", tc.c, want, tc.lt, stepLine)
			}
			if tc.model == "logistic" {
				// The clipped gradient has no ball; its step is printed
				// in the step line: at least 1/L, at most the ceiling.
				sm := regexp.MustCompile(`\)\)\) = ([0-9.e+-]+) with t⁺`).FindStringSubmatch(stepLine)
				if sm == nil {
					t.Fatalf("no step in the step line:\n%s", stepLine)
				}
				if h, _ := strconv.ParseFloat(sm[1], 64); h < tc.invL || h > ceil*(1+1e-3) {
					t.Errorf("step h = %v outside [1/L = %v, ceiling %v]", h, tc.invL, ceil)
				}
				return
			}
			// The noise-walk ball (regress/noisygd.go): R = min(R₀·R₀/(2W),
			// max(R₀, 2η·h·T)), W = h·s·√(T·d), h the step used (printed:
			// post-processing of the released trace, at most the ceiling).
			nm := regexp.MustCompile(`ball R = .* = ([0-9.e+-]+) with R₀ = ([0-9.e+-]+) and W = h·s·√\(T·d\) = ([0-9.e+-]+) at the step h = ([0-9.e+-]+) `).FindStringSubmatch(stepLine)
			if nm == nil {
				t.Fatalf("no noise-walk ball in the post-processing:\n%s", stepLine)
			}
			var got [4]float64
			for i := range got {
				got[i], _ = strconv.ParseFloat(nm[i+1], 64)
			}
			h, r0 := got[3], got[1]
			if h < tc.invL || h > ceil*(1+1e-3) {
				t.Errorf("step h = %v outside [1/L, ceiling %v]", h, ceil)
			}
			w := h * g.Scale * math.Sqrt(float64(steps*g.Entries))
			wantR := math.Min(r0*math.Max(1, r0/(2*w)), math.Max(r0, 2*0.5*h*float64(steps)))
			if math.Abs(got[2]-w) > 2e-3*w || math.Abs(got[0]-wantR) > 3e-3*wantR {
				t.Errorf("ball: printed R = %v, W = %v; recomputed W = %v, R = %v (R₀ = %v, h = %v)", got[0], got[2], w, wantR, r0, h)
			}
			if !strings.Contains(strings.Join(p.Notes, "\n"), "‖ω‖ ≤ R = "+strconv.FormatFloat(got[0], 'g', 4, 64)+" ") {
				t.Errorf("the ball note does not state the R used (%v):\n%s", got[0], strings.Join(p.Notes, "\n"))
			}
		})
	}
}

// gdpDelta is δ(ε) of μ-Gaussian DP (Dong, Roth & Su 2019, Corollary 2.13),
// written out independently of package accounting:
// Φ(−ε/μ + μ/2) − e^ε·Φ(−ε/μ − μ/2).
func gdpDelta(eps, mu float64) float64 {
	phi := func(x float64) float64 { return math.Erfc(-x/math.Sqrt2) / 2 }
	return phi(-eps/mu+mu/2) - math.Exp(eps)*phi(-eps/mu-mu/2)
}
