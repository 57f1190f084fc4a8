package suffstat_test

import (
	"fmt"

	"github.com/dplearn/dplearn/suffstat"
)

// Two sites accumulate their rows, ship the encoded partial results, and the
// aggregator merges them: the result equals one pass over all rows.
func Example() {
	siteA := suffstat.New(2)
	siteA.AddRows([]float64{1, 2, 3, 4}) // rows (1,2) and (3,4)
	siteB := suffstat.New(2)
	siteB.AddRows([]float64{5, 6})

	wire, err := siteB.MarshalBinary()
	if err != nil {
		panic(err)
	}
	var fromB suffstat.Moments
	if err := fromB.UnmarshalBinary(wire); err != nil {
		panic(err)
	}
	if err := siteA.Merge(&fromB); err != nil {
		panic(err)
	}
	fmt.Println("N:", siteA.N())
	fmt.Println("Σz:", siteA.Sum(0), siteA.Sum(1))
	fmt.Println("Σzzᵀ:", siteA.At(0, 0), siteA.At(0, 1), siteA.At(1, 1))
	// Output:
	// N: 3
	// Σz: 9 12
	// Σzzᵀ: 35 44 56
}

func ExampleMoments_AddRows() {
	m := suffstat.New(3)
	err := m.AddRows([]float64{1, 2}) // not a whole row
	fmt.Println(err)
	// Output:
	// suffstat: AddRows: 2 values is not a whole number of rows of width 3
}
