package fit_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/fit"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
)

// writeUnitPanel writes a panel of persons × per rows whose rows are
// correlated within a person: x = c_p + e with a person component c_p, and
// y = 0.5 + 0.8·x + a_p + u with a person effect a_p (intra-person
// correlation of the residual 0.8). The population least-squares line of
// y on x is (0.5, 0.8): a_p is independent of x and has mean 0.
func writeUnitPanel(t testing.TB, path string, rng *rand.Rand, persons, per int) {
	t.Helper()
	var b strings.Builder
	b.WriteString("person,x,y\n")
	for p := 0; p < persons; p++ {
		c := 1.5 * (2*rng.Float64() - 1)
		a := 2*rng.Float64() - 1
		for i := 0; i < per; i++ {
			x := c + (2*rng.Float64() - 1)
			y := 0.5 + 0.8*x + a + 0.5*(2*rng.Float64()-1)
			fmt.Fprintf(&b, "p%d,%.6f,%.6f\n", p, x, y)
		}
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestUnitIntervalsCoverage: linear gaussian-fm with intervals under a
// privacy unit (K = 7) on fresh panels of 3,000 persons × 7 rows correlated
// within a person (design effect of the intercept's sampling variance ≈ 5.8
// for rows treated as independent): the 95% intervals of the intercept and
// the slope (original units) cover the population line (0.5, 0.8) at
// least at 0.95 − 3·√(0.95·0.05/R) (false-alarm rate ≈ 0.0013 per
// coefficient under exact nominal coverage, less since the rule is
// conservative), at ε = 1 and at ε = 20 (where the sampling part
// dominates); the method names the inflation (K + 1)²/4 = 16.
func TestUnitIntervalsCoverage(t *testing.T) {
	reps := 200
	if testing.Short() {
		reps = 60
	}
	s, err := schema.Parse([]byte(`{"target": {"name": "y", "range": [-4, 4]}, "features": [{"name": "x", "range": [-3, 3]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "panel.csv")
	truth := map[string]float64{}
	for _, eps := range []float64{1, 20} {
		rng := rand.New(rand.NewPCG(uint64(eps), 30))
		covered := map[string]int{}
		for r := 0; r < reps; r++ {
			writeUnitPanel(t, path, rng, 3000, 7)
			m, sum, err := dataset.UnitMoments(context.Background(), path, s, dataset.Options{Workers: 1},
				dataset.UnitOptions{Column: "person", MaxRows: 7, Rand: noise.NewInsecureSeeded(uint64(r + 1))})
			if err != nil {
				t.Fatal(err)
			}
			st, err := regress.UnitStats(m, regress.PrivacyUnit{Column: "person", MaxRows: 7, Units: sum.Units})
			if err != nil {
				t.Fatal(err)
			}
			req := fit.Request{Kind: regress.Linear, Mechanism: "gaussian-fm", Epsilon: eps, Delta: 1e-6, CIShare: 0.1,
				Seeded: true, Seed: uint64(1000 + r), NoForecast: true}
			res, err := fit.Run(context.Background(), req, fit.Data{Data: regress.Data{Stats: st}, N: sum.Units}, s)
			if err != nil {
				t.Fatal(err)
			}
			tab := res.Table
			if tab == nil || tab.Unavailable != "" {
				t.Fatalf("no intervals: %+v", tab)
			}
			if r == 0 && !strings.Contains(tab.Method, "(K + 1)²/4 = 16") {
				t.Errorf("method does not name the unit inflation: %s", tab.Method)
			}
			truth["(intercept)"], truth["x"] = 0.5, 0.8
			for _, row := range tab.Rows {
				want, ok := truth[row.Name]
				if !ok {
					t.Fatalf("unexpected coefficient %q", row.Name)
				}
				if row.Identified && row.OriginalLower <= want && want <= row.OriginalUpper {
					covered[row.Name]++
				}
			}
		}
		floor := 0.95 - 3*math.Sqrt(0.95*0.05/float64(reps))
		for name := range truth {
			c := float64(covered[name]) / float64(reps)
			t.Logf("ε = %v, K = 7: coverage of %s %.3f over %d panels (floor %.3f)", eps, name, c, reps, floor)
			if c < floor {
				t.Errorf("ε = %v: coverage of %s %.3f below %.3f", eps, name, c, floor)
			}
		}
	}
}
