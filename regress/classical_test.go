package regress_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/exampledata"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// classicalExample loads an embedded table as dplearn encodes it.
func classicalExample(t *testing.T, name string) (*schema.Schema, regress.Data) {
	t.Helper()
	ds, err := exampledata.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Parse(ds.Schema)
	if err != nil {
		t.Fatal(err)
	}
	tab, _, err := dataset.LoadReader(context.Background(), bytes.NewReader(ds.CSV), name, s, dataset.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	m := suffstat.New(tab.K)
	if err := m.AddRows(tab.Rows); err != nil {
		t.Fatal(err)
	}
	m.Flush()
	return s, regress.Data{Stats: m, Rows: tab.Rows}
}

// originalDesign maps encoded rows back to the design in original units
// that the original-units coefficients multiply: the constant 1, each
// numeric feature's (transformed, clipped) value, each indicator, and the
// target on its declared (transformed) scale. For a column j with weight
// c_j in its unit and −c_j·m_j in the intercept's, v_j = (h_y·x_j −
// icpt_j)/c_j (schema/units.go's map inverted).
func originalDesign(s *schema.Schema, rows []float64) (names []string, out [][]float64) {
	units := s.OriginalUnits()
	d := len(units)
	k := d + 1
	my, hy := 0.0, 1.0
	if !s.Target.Binary() {
		my, hy = (s.Target.Range[0]+s.Target.Range[1])/2, (s.Target.Range[1]-s.Target.Range[0])/2
	}
	for _, u := range units {
		names = append(names, u.Name)
	}
	for r := 0; r < len(rows); r += k {
		row := rows[r : r+k]
		o := make([]float64, k)
		for j, u := range units {
			if _, ok := u.Slope(); !ok {
				o[j] = 1
				continue
			}
			icpt := 0.0
			if s.HasIntercept() {
				icpt = units[0].Weights[j]
			}
			o[j] = (hy*row[j] - icpt) / u.Weights[j]
		}
		o[d] = my + hy*row[d]
		out = append(out, o)
	}
	return names, out
}

// TestClassicalDumpDesign writes the original-units design of the embedded
// tables for testdata/statsmodels/gen.py when DPLEARN_STATSMODELS_DUMP names
// a directory (skipped otherwise).
func TestClassicalDumpDesign(t *testing.T) {
	dir := os.Getenv("DPLEARN_STATSMODELS_DUMP")
	if dir == "" {
		t.Skip("set DPLEARN_STATSMODELS_DUMP=DIR to dump the designs for gen.py")
	}
	for _, name := range []string{"cps1988", "smokeban"} {
		s, data := classicalExample(t, name)
		names, rows := originalDesign(s, data.Rows)
		var b strings.Builder
		b.WriteString(strings.Join(append(names, "y"), ",") + "\n")
		for _, r := range rows {
			for j, v := range r {
				if j > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "%.17g", v)
			}
			b.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(dir, name+".csv"), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// closeRel reports whether got matches want to rel relative error (or abs
// absolute error for values near 0).
func closeRel(got, want, rel float64) bool {
	if got == want {
		return true
	}
	return math.Abs(got-want) <= rel*math.Max(math.Abs(want), 1e-300)
}

// TestClassicalMatchesStatsmodels compares the reference fit's classical
// summary, in original units, with statsmodels' OLS (CPS1988, log wage) and
// Logit (SmokeBan) on the identical design (golden values from
// testdata/statsmodels/gen.py): every coefficient's estimate, SE, t or z,
// p-value and 95% interval, and the fit statistics, to 1e-8 relative.
func TestClassicalMatchesStatsmodels(t *testing.T) {
	const tol = 1e-8
	for _, g := range statsmodelsGolden {
		t.Run(g.name+"/"+g.cov, func(t *testing.T) {
			s, data := classicalExample(t, g.name)
			kind := regress.Linear
			var coef []float64
			opt := regress.ClassicalOptions{Cov: g.cov, HasIntercept: s.HasIntercept()}
			if s.Target.Binary() {
				kind = regress.Logistic
				w, warn, err := regress.LogisticMLE(context.Background(), data.Rows, data.Stats.K())
				if err != nil || warn != "" {
					t.Fatalf("MLE: %v %s", err, warn)
				}
				coef = w
			} else {
				opt.TargetScale = (s.Target.Range[1] - s.Target.Range[0]) / 2
				if g.cov == regress.CovNonrobust {
					data.Rows = nil // the statistics-only path
				}
			}
			c, err := regress.ClassicalFit(context.Background(), kind, data, coef, opt)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, got, want float64) {
				t.Helper()
				if !closeRel(got, want, tol) {
					t.Errorf("%s: got %.12g, statsmodels %.12g (rel %.2g)", what, got, want, math.Abs(got-want)/math.Abs(want))
				}
			}
			units := s.OriginalUnits()
			if len(units) != len(g.coef) {
				t.Fatalf("%d coefficients, golden %d", len(units), len(g.coef))
			}
			for i, u := range units {
				est, se, stat, p, lo, hi := c.Test(u.Offset, u.Weights)
				check(u.Name+" coef", est, g.coef[i])
				check(u.Name+" se", se, g.se[i])
				check(u.Name+" t/z", stat, g.stat[i])
				check(u.Name+" p", p, g.p[i])
				check(u.Name+" lower", lo, g.lo[i])
				check(u.Name+" upper", hi, g.hi[i])
			}
			if int64(g.nobs) != c.N {
				t.Errorf("nobs %d, statsmodels %v", c.N, g.nobs)
			}
			check("df_resid", c.DFResid, g.dfResid)
			check("log-likelihood", c.LogLik, g.llf)
			check("aic", c.AIC, g.aic)
			check("bic", c.BIC, g.bic)
			if kind == regress.Linear {
				check("r2", c.R2, g.r2)
				check("adj r2", c.AdjR2, g.adjR2)
				check("F", c.F, g.f)
				check("F p", c.FPValue, g.fp)
			} else {
				check("ll null", c.LLNull, g.llnull)
				check("llr", c.LLR, g.llr)
				check("llr p", c.LLRPValue, g.llrp)
				check("pseudo r2", c.PseudoR2, g.prsq)
				check("deviance", c.Deviance, -2*g.llf)
			}
		})
	}
}

// TestClassicalDroppedRows: appending all-zero rows (records dropped for a
// missing value) and declaring them leaves every statistic unchanged.
func TestClassicalDroppedRows(t *testing.T) {
	for _, name := range []string{"cps1988", "smokeban"} {
		s, data := classicalExample(t, name)
		k := data.Stats.K()
		kind, h := regress.Logistic, 0.0
		var coef []float64
		if s.Target.Binary() {
			coef, _, _ = regress.LogisticMLE(context.Background(), data.Rows, k)
		} else {
			kind, h = regress.Linear, (s.Target.Range[1]-s.Target.Range[0])/2
		}
		for _, cov := range []string{regress.CovNonrobust, regress.CovHC1} {
			opt := regress.ClassicalOptions{Cov: cov, HasIntercept: true, TargetScale: h}
			a, err := regress.ClassicalFit(context.Background(), kind, data, coef, opt)
			if err != nil {
				t.Fatal(err)
			}
			const extra = 137
			rows := append(append([]float64(nil), data.Rows...), make([]float64, extra*k)...)
			m := suffstat.New(k)
			if err := m.AddRows(rows); err != nil {
				t.Fatal(err)
			}
			m.Flush()
			opt.Dropped = extra
			b, err := regress.ClassicalFit(context.Background(), kind, regress.Data{Stats: m, Rows: rows}, coef, opt)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range [][2]float64{{a.LogLik, b.LogLik}, {a.R2, b.R2}, {a.F, b.F}, {a.LLR, b.LLR}, {a.Covariance[1][1], b.Covariance[1][1]}, {float64(a.N), float64(b.N)}} {
				if !closeRel(p[1], p[0], 1e-10) {
					t.Errorf("%s %s: with %d zero rows declared dropped %.12g, without %.12g", name, cov, extra, p[1], p[0])
				}
			}
		}
	}
}
