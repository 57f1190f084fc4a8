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
			for _, s := range []string{rSSPClip, rAdaSSP, cRidge4, cRidgeSqd, clipSeries(2)} {
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
