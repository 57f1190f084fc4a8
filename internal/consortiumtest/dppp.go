package consortiumtest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/classify"
	"github.com/dplearn/dplearn/internal/pailliertest"
	"github.com/dplearn/dplearn/paillier"
	"github.com/dplearn/dplearn/paillier/keyfile"
	"github.com/dplearn/dplearn/schema"
)

// DPPPTeachers are a DPPP deployment's teachers on the seeded two-class
// problem y = pos iff x1 + x2 > 0: their model files, held-out query rows
// and every teacher's plaintext prediction of each.
type DPPPTeachers struct {
	Models  []string
	Spec    *classify.Spec
	Queries [][]float64
	Preds   [][]int // teacher × query
}

// DPPPModels trains n softmax teachers on 200 rows each (seeded) and
// writes their model files under dir, with queries held-out rows.
func DPPPModels(t testing.TB, dir string, n, queries int) *DPPPTeachers {
	t.Helper()
	rng := func(lo, hi float64) *[2]float64 { return &[2]float64{lo, hi} }
	spec, err := classify.NewSpec("y", []string{"neg", "pos"}, []schema.Feature{{Name: "x1", Range: rng(-1, 1)}, {Name: "x2", Range: rng(-1, 1)}})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(29, 1))
	row := func() ([]float64, int) {
		for {
			x1, x2 := 2*r.Float64()-1, 2*r.Float64()-1
			if math.Abs(x1+x2) > 0.3 { // a margin away from the line
				if x1+x2 > 0 {
					return []float64{x1, x2}, 1
				}
				return []float64{x1, x2}, 0
			}
		}
	}
	out := &DPPPTeachers{Spec: spec}
	for i := range n {
		d := &classify.Data{D: 2, Classes: 2}
		for range 200 {
			x, y := row()
			d.X, d.Y = append(d.X, x...), append(d.Y, y)
		}
		m, err := classify.TrainSoftmax(context.Background(), d, classify.SoftmaxOptions{MaxIterations: 50, Workers: 1})
		if err != nil {
			t.Fatal(err)
		}
		mf, err := classify.NewModelFile(m, spec.ClassNames(), spec)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fmt.Sprintf("model%d.json", i+1))
		if err := mf.Save(path); err != nil {
			t.Fatal(err)
		}
		out.Models = append(out.Models, path)
	}
	for range queries {
		x, _ := row()
		out.Queries = append(out.Queries, x)
	}
	for _, path := range out.Models {
		mf, err := classify.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		pred, err := mf.Open(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		ls, err := pred.PredictBatch(context.Background(), out.Queries)
		pred.Close()
		if err != nil {
			t.Fatal(err)
		}
		out.Preds = append(out.Preds, ls)
	}
	return out
}

// WriteQueries writes the query rows as a CSV table (x1,x2) and returns
// its path.
func (d *DPPPTeachers) WriteQueries(t testing.TB, dir string) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("x1,x2\n")
	for _, q := range d.Queries {
		fmt.Fprintf(&b, "%s,%s\n", fmtFloat(q[0]), fmtFloat(q[1]))
	}
	p := filepath.Join(dir, "queries.csv")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// WriteSpec writes the teachers' input spec (JSON) and returns its path.
func (d *DPPPTeachers) WriteSpec(t testing.TB, dir string) string {
	t.Helper()
	b, err := json.Marshal(d.Spec)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "spec.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func fmtFloat(x float64) string { return fmt.Sprintf("%.17g", x) }

// Plurality returns the teachers' plurality vote on query q, or -1 on a
// tie.
func (d *DPPPTeachers) Plurality(q int) int {
	votes := [2]int{}
	for _, p := range d.Preds {
		votes[p[q]]++
	}
	switch {
	case votes[0] > votes[1]:
		return 0
	case votes[1] > votes[0]:
		return 1
	}
	return -1
}

// DPPPKeys deals a threshold key of n shares (threshold thr) on the
// published 2048-bit test primes (TESTS ONLY) and writes it under dir.
func DPPPKeys(t testing.TB, dir string, n, thr int) (*paillier.ThresholdPublicKey, string, []string) {
	t.Helper()
	tpk, shares, err := pailliertest.ThresholdKey(2048, n, thr)
	if err != nil {
		t.Fatal(err)
	}
	pub, paths, err := keyfile.WriteKeyFiles(filepath.Join(dir, "keys"), tpk, shares, false)
	if err != nil {
		t.Fatal(err)
	}
	return tpk, pub, paths
}

// DPPPPolicy grants analysts (name → max ε per query, analyst budget ε)
// queries to deployment "signs" (deployment budget ε 40), at most ε = 30
// per task.
func DPPPPolicy(analysts map[string][2]float64) string {
	var as []string
	for name, lim := range analysts {
		as = append(as, fmt.Sprintf(`%q: {"datasets": ["signs"], "mechanisms": ["dppp"], "max_epsilon": 30, "max_delta": 1e-3,
 "max_query_epsilon": %v, "max_query_delta": 1e-5, "budget": {"epsilon": %v, "delta": 1e-2}}`, name, lim[0], lim[1]))
	}
	return fmt.Sprintf(`{"datasets": {"signs": {"budget": {"epsilon": 40, "delta": 1e-2}}}, "analysts": {%s}}`, strings.Join(as, ",\n"))
}
