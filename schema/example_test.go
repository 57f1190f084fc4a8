package schema_test

import (
	"fmt"

	"github.com/dplearn/dplearn/schema"
)

// A declared public value replaces a missing one, and the counts say what
// the encoder did (for the data holder's console only).
func ExampleEncoder_EncodeCounted() {
	s, err := schema.Parse([]byte(`{"target": {"name": "y", "range": [0, 10]},
		"features": [{"name": "age", "range": [20, 80], "missing": "impute", "impute": 50}]}`))
	if err != nil {
		panic(err)
	}
	e, _ := s.NewEncoder([]string{"age", "y"}, schema.EncoderOptions{})
	c := e.NewCounts()
	row := make([]float64, e.Width())
	for _, rec := range [][]string{{"NA", "5"}, {"95", "5"}, {"50", "5"}} {
		fields := [][]byte{[]byte(rec[0]), []byte(rec[1])}
		if err := e.EncodeCounted(fields, row, c); err != nil {
			panic(err)
		}
	}
	fmt.Printf("%s: imputed %d, clipped %d\n", c.Columns[0], c.Imputed[0], c.Clipped[0])
	// Output:
	// age: imputed 1, clipped 1
}
