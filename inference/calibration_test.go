package inference

import (
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// TestCalibrationNearFloor checks the rule that keeps a first-level
// replicate out of a coefficient's calibration (CalibrationMargin) by hand:
// without structure the noise SD of vᵀEv for a coordinate direction is σ
// (here 1), so with z = 1.96 and margin 1 a direction is near its floor
// below 2.96; a dropped direction always is; only coefficients loading on
// it by at least UnlocatedLoading are affected; margin −∞ (the rule before
// the margin) keeps every replicate.
func TestCalibrationNearFloor(t *testing.T) {
	l := &locator{z: 1.96, sd2: 1, maxS: math.Sqrt2}
	c04 := math.Sqrt(1 - 0.04*0.04)
	rot := []float64{ // columns: (0.04, c04, 0), (c04, −0.04, 0), (0, 0, 1)
		0.04, c04, 0,
		c04, -0.04, 0,
		0, 0, 1,
	}
	id := []float64{1, 0, 0, 0, 1, 0, 0, 0, 1}
	cases := []struct {
		name    string
		vecs    []float64
		vals    []float64
		located []bool
		margin  float64
		want    []bool
	}{
		{"just below margin", id, []float64{10, 2.9, 10}, []bool{true, true, true}, 1, []bool{false, true, false}},
		{"just above margin", id, []float64{10, 3.0, 10}, []bool{true, true, true}, 1, []bool{false, false, false}},
		{"margin 0: located by 0.9 SD is kept", id, []float64{10, 2.9, 10}, []bool{true, true, true}, 0, []bool{false, false, false}},
		{"margin 2", id, []float64{10, 3.9, 10}, []bool{true, true, true}, 2, []bool{false, true, false}},
		{"dropped direction", id, []float64{10, 0.5, 10}, []bool{true, false, true}, 1, []bool{false, true, false}},
		{"below maxS test still checks s(v)", id, []float64{3.5, 10, 10}, []bool{true, true, true}, 1, []bool{false, false, false}},
		{"loading 0.04 < UnlocatedLoading", rot, []float64{2.5, 10, 10}, []bool{true, true, true}, 1, []bool{false, true, false}},
		{"margin −∞ keeps everything", id, []float64{10, 0.5, 10}, []bool{true, false, true}, math.Inf(-1), []bool{false, false, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &calibration{d: 3, loc: l, margin: tc.margin}
			rs := &solution{vals: tc.vals, vecs: mat.NewDense(3, 3, tc.vecs), located: tc.located}
			got := c.nearFloor(rs)
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("coefficient %d: near %v, want %v (all %v)", i, got[i], tc.want[i], got)
				}
			}
		})
	}
}
