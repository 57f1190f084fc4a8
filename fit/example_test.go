package fit_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/exampledata"
	"github.com/dplearn/dplearn/fit"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
)

// A linear Gaussian FM fit of log wage with confidence intervals: 5% of ε
// pays for the noisy Λ0 the intervals need, and the report composes it.
func ExampleRun() {
	ctx := context.Background()
	ds, _ := exampledata.Get("cps1988")
	s, err := schema.Parse(ds.Schema) // the public bounds
	if err != nil {
		fmt.Println(err)
		return
	}
	m, sum, err := dataset.MomentsReader(ctx, bytes.NewReader(ds.CSV), "cps1988.csv", s, dataset.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	req := fit.Request{
		Kind: regress.Linear, Mechanism: "gaussian-fm",
		Epsilon: 1, Delta: 1e-6, CIShare: fit.DefaultCIShare,
		Seeded: true, Seed: 1, // INSECURE: reproducible output for the example only
	}
	res, err := fit.Run(ctx, req, fit.Data{Data: regress.Data{Stats: m}, N: sum.Rows}, s)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("guarantee:", res.Model.Privacy.Guarantee())
	fmt.Println("ε of the fit itself:", res.FitEpsilon)
	for _, r := range res.Model.Privacy.Releases {
		fmt.Printf("release: %s, %s noise\n", r.Name, r.Noise)
	}
	fmt.Printf("%d coefficients with %g%% intervals\n", len(res.Table.Rows), 100*res.Table.Level)
	// Output:
	// guarantee: (1, 1e-06)-DP
	// ε of the fit itself: 0.95
	// release: Λ1 (order-1 coefficients), gaussian noise
	// release: Λ2 upper triangle (order-2 coefficients), gaussian noise
	// release: Λ0 = (1/N)Σy² (target second moment, for the residual variance of the confidence intervals), laplace noise
	// 9 coefficients with 95% intervals
}
