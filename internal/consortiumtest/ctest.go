// Package consortiumtest builds consortium test fixtures: certificates, a linear
// dataset with known coefficients split over sites, a schema and policies.
package consortiumtest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/certs"
)

// Schema is the fixtures' schema: y = 0.5 + 0.3·x1 − 0.2·x2 + noise, all
// in [-1, 1]; "zip" is a column that policies may forbid.
const Schema = `{"target": {"name": "y", "range": [-2, 2]},
 "features": [{"name": "x1", "range": [-1, 1]}, {"name": "x2", "range": [-1, 1]}]}`

// SchemaZip reads the forbidden column too.
const SchemaZip = `{"target": {"name": "y", "range": [-2, 2]},
 "features": [{"name": "x1", "range": [-1, 1]}, {"name": "x2", "range": [-1, 1]}, {"name": "zip", "range": [0, 99999]}]}`

// Certs creates a CA and certificates for names under dir.
func Certs(t testing.TB, dir string, names ...string) {
	t.Helper()
	if _, err := certs.Create(dir, names, certs.Options{}); err != nil {
		t.Fatal(err)
	}
}

// Party loads a party's certificate.
func Party(t testing.TB, dir, name string) *certs.Party {
	t.Helper()
	p, err := certs.LoadParty(filepath.Join(dir, name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// Data writes n rows of the linear model to path (seeded). The normal draw
// is the synthetic table's own error term, test data and not privacy noise
// (PRIVACY-NOTES item 17 concerns the mechanisms' noise, which comes from
// package noise).
func Data(t testing.TB, path string, n int, seed uint64) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	var b strings.Builder
	b.WriteString("x1,x2,zip,y\n")
	for range n {
		x1, x2 := 2*r.Float64()-1, 2*r.Float64()-1
		y := 0.5 + 0.3*x1 - 0.2*x2 + 0.1*r.NormFloat64()
		fmt.Fprintf(&b, "%.6f,%.6f,%d,%.6f\n", x1, x2, 10000+r.IntN(9000), y)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Write writes content to dir/name and returns the path.
func Write(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// Policy returns a policy for dataset "cohort" granting the analysts
// (name → max ε per task, analyst budget ε) capefm, with the dataset's
// min N and allowed columns.
func Policy(minN int, columns []string, datasetEps float64, analysts map[string][2]float64) string {
	var as []string
	for name, lim := range analysts {
		as = append(as, fmt.Sprintf(`%q: {"datasets": ["cohort"], "mechanisms": ["capefm", "gaussian-fm-local"], "max_epsilon": %v, "max_delta": 1e-5, "budget": {"epsilon": %v, "delta": 1e-4}}`, name, lim[0], lim[1]))
	}
	cols := `"` + strings.Join(columns, `", "`) + `"`
	return fmt.Sprintf(`{"datasets": {"cohort": {"min_n": %d, "allowed_columns": [%s], "budget": {"epsilon": %v, "delta": 1e-3}}},
 "analysts": {%s}}`, minN, cols, datasetEps, strings.Join(as, ",\n"))
}
