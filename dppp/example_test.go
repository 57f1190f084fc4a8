package dppp_test

import (
	"context"
	"fmt"

	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/internal/pailliertest"
	"github.com/dplearn/dplearn/noise"
)

// Four teachers (t = 2; γ = 1, so all four noise shares, hence all four
// votes, are needed) answer two queries; the teachers' models are fixed
// functions that all agree, so the noisy labels are the true ones with
// high probability at ε = 30 per query (the noise is seeded here to
// make the output reproducible; real teachers use noise.NewSecure).
func Example() {
	tpk, shares, err := pailliertest.ThresholdKey(2048, 4, 2)
	if err != nil {
		panic(err)
	}
	cfg := dppp.Config{Teachers: []string{"a", "b", "c", "d"}, Threshold: 2, Colluders: dppp.NoneAssumed, Absent: dppp.NoneAssumed,
		Classes: 3, Features: 1, Noise: dppp.Binomial, Epsilon: 30, Delta: 1e-5, BudgetEpsilon: 300, BudgetDelta: 1e-4}
	p, err := dppp.Calibrate(cfg, tpk)
	if err != nil {
		panic(err)
	}
	p, _ = p.NewSession()
	signers, err := dppp.EphemeralSigners(cfg.Teachers) // a per-run PKI
	if err != nil {
		panic(err)
	}
	var teachers []*dppp.Teacher
	for i, name := range cfg.Teachers {
		t, err := dppp.NewTeacher(dppp.TeacherConfig{Name: name, Config: cfg, Key: shares[i], Noise: noise.NewInsecureSeeded(uint64(100 + i)), Signer: signers[name],
			Predict: func(_ context.Context, rows [][]float64) ([]int, error) {
				out := make([]int, len(rows))
				for j, r := range rows {
					out[j] = int(r[0]) // every teacher agrees
				}
				return out, nil
			}})
		if err != nil {
			panic(err)
		}
		teachers = append(teachers, t)
	}
	res, err := dppp.Run(context.Background(), p, tpk, teachers, [][]float64{{2}, {0}}, dppp.RunOptions{})
	if err != nil {
		panic(err)
	}
	fmt.Println("minimum contributors:", p.MinContributors)
	fmt.Println("labels:", res.Labels)
	// Output:
	// minimum contributors: 4
	// labels: [2 0]
}
