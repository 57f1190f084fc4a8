package suffstat_test

import (
	"fmt"

	"github.com/dplearn/dplearn/suffstat"
)

// Two sites accumulate their rows, ship the encoded partial results, and the
// aggregator merges them: the result equals one pass over all rows.
func Example() {
	siteA := suffstat.New(2)
	siteA.AddRows([]float64{0.125, 0.25, 0.375, 0.5}) // rows (1/8, 2/8) and (3/8, 4/8)
	siteB := suffstat.New(2)
	siteB.AddRows([]float64{0.625, 0.75})

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
	fmt.Println("8·Σz:", 8*siteA.Sum(0), 8*siteA.Sum(1))
	fmt.Println("64·Σzzᵀ:", 64*siteA.At(0, 0), 64*siteA.At(0, 1), 64*siteA.At(1, 1))
	// Output:
	// N: 3
	// 8·Σz: 9 12
	// 64·Σzzᵀ: 35 44 56
}

func ExampleMoments_AddRows() {
	m := suffstat.New(3)
	err := m.AddRows([]float64{1, 2}) // not a whole row
	fmt.Println(err)
	// Output:
	// suffstat: AddRows: 2 values is not a whole number of rows of width 3
}
