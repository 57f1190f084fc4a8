package experiment

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
)

// TestUtilityClipExperiment runs the sweep small: every rule has a value
// per task and ε, one claim per task and ε, the ratio table is in the
// summary.
func TestUtilityClipExperiment(t *testing.T) {
	out := t.TempDir()
	res, err := Run(context.Background(), "utility-clip", Options{Out: out, Runs: 1, Seeded: true, Seed: 3, Workers: 2, synthN: 200})
	if err != nil {
		t.Fatal(err)
	}
	r := res[0]
	for _, task := range refsLinearTables {
		for _, eps := range refsEps {
			for _, s := range []string{rSSPClip, rAdaSSP, cPaired, cStruct, cRidge4, cRidgeSqd, clipSeries(2), filterSeries("tikhonov", 2), filterSeries("soft", 1.5)} {
				if v := rowMean(t, r, task, s, "excess_rmse", eps); math.IsNaN(v) {
					t.Errorf("%s %s ε=%g: NaN", task, s, eps)
				}
			}
		}
	}
	if n := len(r.Claims); n != len(refsLinearTables)*len(refsEps) {
		t.Errorf("%d claims", n)
	}
	md, err := os.ReadFile(filepath.Join(out, "utility-clip.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| clip c=2 |") {
		t.Error("the ratio table is missing from the summary")
	}
}

// TestClipSweepPaired: the sweep's "clip c=2" series is exactly
// gaussian-fm's default fit of the same release (the rule swept is the
// rule shipped).
func TestClipSweepPaired(t *testing.T) {
	tb, _ := collinearTable(regress.Linear, 600)
	res, err := gfmRelease(context.Background(), "gaussian-fm", tb, regress.Config{Kind: regress.Linear, Epsilon: 1, Delta: 1e-5, Lambda: -1, Source: noise.NewInsecureSeeded(4)})
	if err != nil {
		t.Fatal(err)
	}
	q := res.Released.Objective
	w, _, err := q.Minimize(regress.PostProcess{Floor: regress.EigenFloor(q.D, math.Sqrt(res.Released.VarLambda2), regress.DefaultEigenFloorFactor)})
	if err != nil {
		t.Fatal(err)
	}
	for i := range w {
		if w[i] != res.Coef[i] {
			t.Fatalf("sweep's c = 2 fit %v differs from gaussian-fm's %v", w, res.Coef)
		}
	}
}

// TestPairedSSPClipIsTheReference: the paired reference is refSSPClip's
// estimator (S units: Ŝ = S + σ_S·Z, b̂ = b + σ_b·z, eigenvalues floored
// at 2σ_S√d, Ŝ⁻¹b̂ through symEigen and eigSolve) on the standardised
// noise draws of the gaussian-fm release, recomputed here independently.
func TestPairedSSPClipIsTheReference(t *testing.T) {
	for _, eps := range []float64{0.1, 1} {
		tb, _ := collinearTable(regress.Linear, 600)
		res, err := gfmRelease(context.Background(), "gaussian-fm", tb, regress.Config{Kind: regress.Linear, Epsilon: eps, Delta: utilityDelta, Lambda: -1, Source: noise.NewInsecureSeeded(5)})
		if err != nil {
			t.Fatal(err)
		}
		got, err := pairedSSPClip(tb, res.Released, eps)
		if err != nil {
			t.Fatal(err)
		}
		st, err := moments(tb)
		if err != nil {
			t.Fatal(err)
		}
		ex, err := regress.ObjectiveApprox(regress.Linear, st, regress.TaylorQuadratic)
		if err != nil {
			t.Fatal(err)
		}
		d, _ := rowsDim(tb.Rows, tb.K)
		sig, err := gaussCalibrate(eps, utilityDelta, []float64{sspSensS, sspSensB}, []int{d * (d + 1) / 2, d}, []float64{0.5, 0.5}, nil)
		if err != nil {
			t.Fatal(err)
		}
		tau1, tau2 := math.Sqrt(res.Released.VarLambda1), math.Sqrt(res.Released.VarLambda2)
		S, b := sspStats(tb.Rows, tb.K)
		rel := res.Released.Objective
		for i := 0; i < d; i++ {
			b[i] -= sig[1] * (rel.Lambda1[i] - ex.Lambda1[i]) / tau1
			for j := i; j < d; j++ {
				z := (rel.At(i, j) - ex.At(i, j)) / tau2
				S[i*d+j] += sig[0] * z
				if i != j {
					S[j*d+i] += sig[0] * z
				}
			}
		}
		vals, vecs, err := symEigen(S, d)
		if err != nil {
			t.Fatal(err)
		}
		clipped := 0
		for i := range vals {
			if f := 2 * sig[0] * math.Sqrt(float64(d)); vals[i] < f {
				vals[i], clipped = f, clipped+1
			}
		}
		want := eigSolve(vals, vecs, b)
		if clipped == 0 {
			t.Errorf("ε=%g: no eigenvalue clipped; the test does not exercise the floor", eps)
		}
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-8*(1+math.Abs(want[i])) {
				t.Fatalf("ε=%g: paired reference %v, recomputed %v", eps, got, want)
			}
		}
	}
}
