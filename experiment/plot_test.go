package experiment

import (
	"image/color"
	"testing"
)

// TestFigureColours: no two palette colours are equal, the right-axis
// colour is none of them, and within a figure no two series share a
// colour, whatever mix of mechanisms and other series it draws.
func TestFigureColours(t *testing.T) {
	same := func(a, b color.Color) bool {
		r1, g1, b1, a1 := a.RGBA()
		r2, g2, b2, a2 := b.RGBA()
		return r1 == r2 && g1 == g2 && b1 == b2 && a1 == a2
	}
	for i := range palette {
		if same(palette[i], rightColor) {
			t.Errorf("palette colour %d is the right-axis colour", i)
		}
		for j := i + 1; j < len(palette); j++ {
			if same(palette[i], palette[j]) {
				t.Errorf("palette colours %d and %d are equal", i, j)
			}
		}
	}
	for _, names := range [][]string{
		{"nonprivate", "fm", "gaussian-fm", "relaxed-fm", "objpert", "noisygd"},
		{"fm", "dppp-binomial", "dppp-dgauss", "standalone", "gaussian-fm"},
		{"ldp", "nonprivate", "x", "y", "z", "w"},
		{"irls", "irls-wishart", "nonprivate"},
	} {
		st := assignStyles(names)
		for i, a := range names {
			if k, ok := knownStyles[a]; ok && !same(st[a].c, palette[k]) {
				t.Errorf("%v: mechanism %s lost its fixed colour", names, a)
			}
			for _, b := range names[i+1:] {
				if same(st[a].c, st[b].c) {
					t.Errorf("%v: %s and %s share a colour", names, a, b)
				}
			}
		}
	}
}

// TestRightAxisOnlyWithInformation: a secondary axis is drawn for a curve
// that varies, not for a constant (stated in the title instead) nor for a
// curve equal to x.
func TestRightAxisOnlyWithInformation(t *testing.T) {
	pn := panel{id: "p", metric: "m", series: []string{"fm"}, right: "r", rightSeries: "noisygd", rightLabel: "overall ε", logX: true}
	cases := []struct {
		name     string
		xs, ys   []float64
		axis     bool
		constant bool
	}{
		{"varies", []float64{1, 2, 4}, []float64{30, 12, 5}, true, false},
		{"constant", []float64{100, 200, 400}, []float64{18.6, 18.6, 18.6}, false, true},
		{"equal to x", []float64{0.5, 1, 2}, []float64{0.5, 1, 2}, false, false},
		{"absent", nil, nil, false, false},
	}
	for _, c := range cases {
		a := newAggregate()
		var obs0 []obs
		for i := range c.xs {
			obs0 = append(obs0, obs{panel: "p", xname: "x", series: "fm", metric: "m", x: c.xs[i], v: 1},
				obs{panel: "p", xname: "x", series: "noisygd", metric: "r", x: c.xs[i], v: c.ys[i]})
		}
		a.add(obs0)
		if got := len(rightPoints(pn, a)) > 0; got != c.axis {
			t.Errorf("%s: axis drawn %v, want %v", c.name, got, c.axis)
		}
		if _, got := rightConstant(pn, a); got != c.constant {
			t.Errorf("%s: constant %v, want %v", c.name, got, c.constant)
		}
		if len(c.xs) == 0 {
			continue
		}
		p, err := makePanel(pn, a, assignStyles([]string{"fm"}))
		if err != nil {
			t.Fatal(err)
		}
		if c.constant && p.Title.Text != " (noisygd overall ε = 18.6)" {
			t.Errorf("%s: title %q does not state the constant", c.name, p.Title.Text)
		}
	}
}
