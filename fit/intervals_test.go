package fit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/fit"
	"github.com/dplearn/dplearn/regress"
)

// TestEstimandNamesThePostProcessing checks that the estimand line says
// what the fit did to the noisy Λ2 (issue 25): a linear gaussian-fm fit
// clips its eigenvalues at a public floor and adds no ridge, so its line
// names the clip and not a ridge; a linear fm fit (Laplace noise) adds the
// ridge, so its line says de-ridged. The clipped case fails on the
// starting commit (its line said "de-ridged … ridge-regularised fit").
func TestEstimandNamesThePostProcessing(t *testing.T) {
	data, s := load(t, "cps1988", 3000)
	for _, tc := range []struct {
		mechanism string
		want, not []string
	}{
		{"gaussian-fm", []string{"without the eigenvalue clip", "eigenvalue-clipped fit", "no ridge"}, []string{"de-ridged", "ridge-regularised"}},
		{"fm", []string{"de-ridged", "ridge-regularised fit"}, []string{"clip"}},
	} {
		t.Run(tc.mechanism, func(t *testing.T) {
			req := fit.Request{Kind: regress.Linear, Mechanism: tc.mechanism, Epsilon: 1, Delta: 1e-6, CIShare: 0.05, Seeded: true, Seed: 3, NoForecast: true}
			if tc.mechanism == "fm" {
				req.Delta = 0
			}
			res, err := fit.Run(context.Background(), req, data, s)
			if err != nil {
				t.Fatal(err)
			}
			line := res.Table.Estimand
			for _, w := range tc.want {
				if !strings.Contains(line, w) {
					t.Errorf("estimand line lacks %q: %s", w, line)
				}
			}
			for _, w := range tc.not {
				if strings.Contains(line, w) {
					t.Errorf("estimand line says %q: %s", w, line)
				}
			}
		})
	}
}
