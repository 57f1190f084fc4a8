package regress_test

import (
	"fmt"

	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
)

// ExampleGramStructureFor reads the public identities of the encoded Gram
// matrix off a schema and projects a (noisy) Λ2 onto them: the intercept's
// diagonal is known (c² = 1/3 for B = 3), the indicator's diagonal equals
// its intercept entry (the two noisy copies are averaged), and the
// numeric feature's entries are left alone.
func ExampleGramStructureFor() {
	s, err := schema.Parse([]byte(`{"target": {"name": "y", "range": [0, 1]},
	  "features": [{"name": "x", "range": [0, 1]}, {"name": "g", "categories": ["a", "b"]}]}`))
	if err != nil {
		panic(err)
	}
	st, err := regress.GramStructureFor(s)
	if err != nil {
		panic(err)
	}
	fmt.Println(s.FeatureNames())
	fmt.Println(st)
	// A released linear Λ2 (upper triangle, row-major) with noise on it.
	q := &regress.Quadratic{D: 3, Lambda1: []float64{0.1, 0.2, 0.3},
		Upper: []float64{0.34, 0.05, 0.11, 0.09, 0.02, 0.13}}
	p, err := st.Project(q)
	if err != nil {
		panic(err)
	}
	fmt.Printf("%.4f\n", p.Upper)
	// Output:
	// [(intercept) x g=b]
	// public structure of Λ2 from the schema's encoding: 1 of the 6 released entries known, 2 averaged with the entries they equal (least-squares projection onto the identities)
	// [0.3333 0.0500 0.1200 0.0900 0.0200 0.1200]
}
