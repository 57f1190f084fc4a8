package capefm_test

import (
	"context"
	"fmt"
	"math"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/suffstat"
)

type ledger struct{ spent float64 }

func (l *ledger) Charge(label string, eps, delta float64) error { l.spent += eps; return nil }

// Three sites fit one linear model with capeFM, in process. In a deployment
// each Site runs at its own site (dplearn cape join) and the Aggregator at
// the aggregator (dplearn cape serve), with a transport carrying the
// messages' MarshalBinary payloads. Every site signs its secure-aggregation
// keys with its certificate from the deployment's CA (dplearn certs), and
// checks the others' signatures, so the aggregator cannot substitute keys.
func Example() {
	schemaFP := [32]byte{1}                 // schema.Fingerprint(schema) in real use
	ca, err := certs.NewCA(certs.Options{}) // certs.LoadCA / certs.LoadParty in real use
	if err != nil {
		panic(err)
	}
	names := []string{"hospital-a", "hospital-b", "hospital-c"}
	var sites []*capefm.Site
	var sizes []int64
	for i, name := range names {
		// Each site's schema-encoded rows: x (intercept first, ‖x‖ ≤ 1), y.
		st := suffstat.New(3)
		n := 200 * (i + 1)
		for r := 0; r < n; r++ {
			u := math.Sin(float64(r*7 + i)) // a deterministic stand-in for data
			x := []float64{1 / math.Sqrt2, u / math.Sqrt2}
			y := 0.3*x[0] - 0.5*x[1]
			if err := st.AddRows([]float64{x[0], x[1], y}); err != nil {
				panic(err)
			}
		}
		st.Flush()
		id, err := ca.IssueParty(name, certs.Options{})
		if err != nil {
			panic(err)
		}
		signer, err := certs.NewStatementSigner(id)
		if err != nil {
			panic(err)
		}
		site, err := capefm.NewSite(capefm.SiteConfig{
			Name: name, Mechanism: capefm.CapeFM, Kind: regress.Linear, Schema: schemaFP,
			Epsilon: 1, Delta: 1e-5,
			Source: noise.NewInsecureSeeded(uint64(i)), // noise.NewSecure() in real use
			Ledger: &ledger{},
			Signer: signer,
		}, regress.Data{Stats: st})
		if err != nil {
			panic(err)
		}
		sites = append(sites, site)
		sizes = append(sizes, st.N())
	}
	roster, _ := capefm.Roster(names, sizes)
	params := capefm.Params{Mechanism: capefm.CapeFM, Kind: regress.Linear, Schema: schemaFP, D: 2,
		Epsilon: 1, Delta: 1e-5, Split: 0.5, Sites: roster, Colluders: -1, MinSites: 2}
	res, err := capefm.Run(context.Background(), params, sites, capefm.RunOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("attempts:", len(res.Attempts))
	fmt.Println("coefficients:", len(res.Coef))
	fmt.Println("guarantee per site:", res.Privacy.Guarantee())
	fmt.Printf("noise ratio R = %g, model noise variance vs pooled Gaussian FM: κ = %.3f\n", res.Calibration.NoiseRatio, res.Calibration.Kappa)
	// Output:
	// attempts: 1
	// coefficients: 2
	// guarantee per site: (1, 9.99946e-06)-DP
	// noise ratio R = 100, model noise variance vs pooled Gaussian FM: κ = 1.500
}
