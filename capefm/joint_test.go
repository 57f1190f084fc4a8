package capefm

import (
	"math"
	"testing"

	"github.com/dplearn/dplearn/regress"
)

// TestJointWhitening checks capeFM's calibration under the joint supremum
// of regress/joint.go, for both kinds and several splits: every site's
// whitened sensitivity is 1 (to rounding), while the separate sum of the
// two blocks (PRIVACY-NOTES item 2, the calibration before) would be
// 1/√J²(w) > 1; the natural-unit noise of capeFM and of the pooled
// baseline both shrink by √J²(w) against the separate calibration, so the
// variance ratio κ is unchanged; and every gaussian-fm-local site's scales
// are regress.GaussianFMJointScales on its own rows.
func TestJointWhitening(t *testing.T) {
	for _, kind := range []regress.Kind{regress.Linear, regress.Logistic} {
		for _, split := range []float64{0.3, 0.5, 0.8} {
			roster, err := Roster([]string{"a", "b", "c", "d"}, []int64{300, 1200, 2500, 6000})
			if err != nil {
				t.Fatal(err)
			}
			p := Params{Session: [32]byte{3}, Attempt: 1, Mechanism: CapeFM, Kind: kind, D: 6, Epsilon: 0.5, Delta: 1e-6,
				Split: split, Sites: roster, Colluders: 1, MinSites: 2}
			if err := p.Calibrate(); err != nil {
				t.Fatal(err)
			}
			c, err := p.Calibration()
			if err != nil {
				t.Fatal(err)
			}
			f := regress.JointFactor(split)
			for i, s := range p.Sites {
				if math.Abs(c.SiteSens[i]-1) > 1e-6 {
					t.Errorf("%s split %v site %s: whitened sensitivity %v, want 1", kind, split, s.Name, c.SiteSens[i])
				}
				w := float64(s.N) / float64(c.N)
				ss, _ := regress.SensitivitiesFor(kind, p.D, s.N)
				if sep := math.Hypot(w*ss.Lambda1/c.C1, w*ss.Lambda2/c.C2); math.Abs(sep-1/math.Sqrt(f)) > 1e-6 {
					t.Errorf("%s split %v: separate sum %v, want 1/√J² = %v", kind, split, sep, 1/math.Sqrt(f))
				}
			}
			if r := c.C1 / (c.Delta1 / math.Sqrt(split)); math.Abs(r-math.Sqrt(f)) > 1e-12 {
				t.Errorf("%s split %v: c1 is %v × the separate whitening, want √J² = %v", kind, split, r, math.Sqrt(f))
			}
			t1, _, _, err := regress.GaussianFMScales(p.Epsilon, p.Delta, split, c.Delta1, c.Delta2, c.L1, c.L2)
			if err != nil {
				t.Fatal(err)
			}
			if r := c.Pooled1 / t1; math.Abs(r-math.Sqrt(f)) > 1e-4 || r > 1 {
				t.Errorf("%s split %v: pooled τ1 %v × the separate calibration's, want √J² = %v", kind, split, r, math.Sqrt(f))
			}
			if math.Abs(c.VarianceRatio/c.Kappa-1) > 1e-3 {
				t.Errorf("%s split %v: variance ratio %v, κ %v", kind, split, c.VarianceRatio, c.Kappa)
			}

			p.Mechanism, p.NoiseRatio = GaussianFMLocal, 0
			if err := p.Calibrate(); err != nil {
				t.Fatal(err)
			}
			lc, err := p.Calibration()
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range p.Sites {
				js, err := regress.GaussianFMJointScales(kind, p.D, s.N, regress.TaylorQuadratic, p.Epsilon, p.Delta, split)
				if err != nil {
					t.Fatal(err)
				}
				if lc.SiteTau1[i] != js.Tau1 || lc.SiteTau2[i] != js.Tau2 || lc.SiteDelta > p.Delta {
					t.Errorf("%s split %v site %s: scales (%v, %v), joint calibration (%v, %v), δ %v", kind, split, s.Name, lc.SiteTau1[i], lc.SiteTau2[i], js.Tau1, js.Tau2, lc.SiteDelta)
				}
			}
		}
	}
}
