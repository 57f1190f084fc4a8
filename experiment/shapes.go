package experiment

import (
	"context"
	"fmt"

	"github.com/dplearn/dplearn/regress"
)

// # utility-shapes: issue 26's goals on the outside benchmark's shapes
//
// Issue 26's public rules (gaussian-fm's eigenvalue floor, auto's band in
// N·ε/d, noisygd's step rules and clip) were chosen on the embedded tables
// and one collinear design, while the outside benchmark that will rerun
// them has N from 800 to 229,000 and d from 7 to 24. utility-shapes runs
// utility-refs' plan (refsPlan: every dplearn mechanism, every reference,
// the same calibration, claims and tables) on synthetic designs at the
// corners of that range, with and without collinearity, so a rule that
// only fits the embedded shapes shows here before it shows there:
//
//	N = 800 (640 training rows):     d = 7 independent, d = 24 collinear
//	N = 229,000 (183,200 training):  d = 7 collinear,   d = 24 independent
//
// d counts the intercept; "collinear" is a pairwise feature correlation
// of 0.95 and "independent" 0 (synthTable draws both, with the same signal
// and noise as utility-refs' collinear design). Each shape is fitted as a
// linear and as a logistic task.

// shapesShape lists the shapes in the order of the tables: name, N, d and
// the feature correlation. The linear and logistic tasks of a shape share
// the features' seed word and differ in the target.
var shapesShape = []struct {
	name      string
	n, d      int
	rho, rhoC float64
}{
	{"n800-d7", 800, 7, 0, 1},
	{"n800-d24-collinear", 800, 24, collinearRho, 1 - collinearRho},
	{"n229k-d7-collinear", 229000, 7, collinearRho, 1 - collinearRho},
	{"n229k-d24", 229000, 24, 0, 1},
}

// The linear and logistic task names of utility-shapes, in shapesShape's
// order.
var shapesLinear, shapesLogistic = shapesNames()

func shapesNames() (lin, logit []string) {
	for _, sh := range shapesShape {
		lin, logit = append(lin, "shape-"+sh.name), append(logit, "shape-"+sh.name+"-logistic")
	}
	return lin, logit
}

// shapesDesigns returns the designs of utility-shapes by task name, for
// synthShapes.
func shapesDesigns() map[string]synthShape {
	m := map[string]synthShape{}
	for i, sh := range shapesShape {
		seed := uint64(1000 + i)
		m["shape-"+sh.name] = synthShape{regress.Linear, sh.n, sh.d, sh.rho, sh.rhoC, seed}
		m["shape-"+sh.name+"-logistic"] = synthShape{regress.Logistic, sh.n, sh.d, sh.rho, sh.rhoC, seed}
	}
	return m
}

func shapesSpec() spec {
	return spec{
		name: "utility-shapes", title: "Issue 26's goals on synthetic designs shaped like the outside benchmark's tables (N 800 and 229,000, d 7 and 24, independent and collinear features)",
		paper: "issue 26 (no paper figure)", runs: 20, quickRuns: 2,
		build: buildShapes,
	}
}

func buildShapes(_ context.Context, e *env) (*plan, error) {
	lin, logit := shapesLinear, shapesLogistic
	p, err := refsPlan(e, lin, logit)
	if err != nil {
		return nil, err
	}
	var shapes string
	for _, n := range append(append([]string{}, lin...), logit...) {
		sh := synthShapes[n]
		shapes += fmt.Sprintf(" %s: N = %d, d = %d, correlation %g;", n, e.synthRows(sh), sh.d, sh.rho)
	}
	p.notes = append([]string{
		"Synthetic designs at the corners of the outside benchmark's range (N from 800 to 229,000, d from 7 to 24, d counting the intercept), drawn by synthTable like utility-refs' collinear design (the same signal, noise and encoding; a fixed seed per shape):" + shapes[:len(shapes)-1] + ". Everything else is utility-refs' (refsPlan): the same mechanisms, references, calibration, claims and tables.",
	}, p.notes...)
	return p, nil
}
