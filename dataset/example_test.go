package dataset_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/schema"
)

func Example() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "data.csv")
	os.WriteFile(path, []byte("age,smoker\n30,yes\n50,no\n70,yes\n"), 0o600)
	s, err := schema.Parse([]byte(`{"target": {"name": "smoker", "positive": "yes"},
		"features": [{"name": "age", "range": [20, 80]}]}`))
	if err != nil {
		panic(err)
	}
	m, sum, err := dataset.Moments(context.Background(), path, s, dataset.Options{})
	if err != nil {
		panic(err)
	}
	// Rows are (intercept, age, smoker) with ‖(intercept, age)‖ ≤ 1.
	fmt.Printf("rows %d, K %d, Σ smoker %.0f\n", sum.Rows, m.K(), m.Sum(m.K()-1))
	// Output:
	// rows 3, K 3, Σ smoker 2
}

func ExampleRowError() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "data.csv")
	os.WriteFile(path, []byte("age,smoker\n30,yes\nforty,no\n"), 0o600)
	s, _ := schema.Parse([]byte(`{"target": {"name": "smoker", "positive": "yes"},
		"features": [{"name": "age", "range": [20, 80]}]}`))
	_, _, err := dataset.Moments(context.Background(), path, s, dataset.Options{})
	fmt.Println(strings.TrimPrefix(err.Error(), dir+string(filepath.Separator)))
	_, sum, _ := dataset.Moments(context.Background(), path, s, dataset.Options{SkipBadRows: true})
	fmt.Println("rows", sum.Rows, "skipped", sum.Skipped)
	// Output:
	// data.csv:3:1: column "age": value "forty": not a number
	// rows 1 skipped 1
}

func ExampleStream() {
	dir, _ := os.MkdirTemp("", "example")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "data.csv")
	os.WriteFile(path, []byte("x,y\n0,1\n10,0\n"), 0o600)
	s, _ := schema.Parse([]byte(`{"target": {"name": "y"}, "features": [{"name": "x", "range": [0, 10]}], "intercept": false}`))
	dataset.Stream(context.Background(), path, s, dataset.Options{}, func(rows []float64) error {
		fmt.Println(rows) // row-major (x, y), x mapped onto [−1, 1]
		return nil
	})
	// Output:
	// [-1 1 1 0]
}

// StreamBatches with a missing-value policy, a pass-through identifier and
// standard input ("-").
func ExampleStreamBatches() {
	s, _ := schema.Parse([]byte(`{"target": {"name": "smoker", "positive": "yes"},
		"features": [{"name": "age", "range": [20, 80], "missing": "drop"}]}`))
	in := strings.NewReader("id;age;smoker\na;30;yes\nb;NA;no\nc;95;no\n")
	opt := dataset.Options{Stdin: in, Delimiter: ';', KeepDropped: true, Keep: []string{"id"}}
	sum, _ := dataset.StreamBatches(context.Background(), "-", s, opt, func(b dataset.Batch) error {
		for i, id := range b.Keep {
			fmt.Printf("%s dropped=%v\n", id, b.Dropped[i])
		}
		return nil
	})
	// The counts are for the local console only.
	fmt.Printf("%s read, %d dropped, age clipped %d\n", dataset.Plural(sum.Rows, "row"), sum.Dropped, sum.Columns.Clipped[0])
	// Output:
	// a dropped=false
	// b dropped=true
	// c dropped=false
	// 3 rows read, 1 dropped, age clipped 1
}
