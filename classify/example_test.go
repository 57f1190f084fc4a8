package classify_test

import (
	"bytes"
	"context"
	"fmt"

	"github.com/dplearn/dplearn/classify"
	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/exampledata"
)

// Ten DPPP teachers each train softmax regression on their tenth of the
// digits table; their plurality vote labels a query row.
func Example() {
	ctx := context.Background()
	ds, _ := exampledata.GetClassification("digits")
	spec, err := classify.ParseSpec(ds.Spec)
	if err != nil {
		panic(err)
	}
	data, _, err := spec.LoadReader(ctx, bytes.NewReader(ds.CSVGzip), "digits.csv.gz", dataset.Options{})
	if err != nil {
		panic(err)
	}
	train, test := classify.Split(data.N(), 0.2, 1)
	trainSet, testSet := data.Subset(train), data.Subset(test)
	parts, _ := classify.Partition(trainSet.N(), 10, 1)
	var teachers []classify.Predictor
	for _, p := range parts {
		m, err := classify.TrainSoftmax(ctx, trainSet.Subset(p), classify.SoftmaxOptions{})
		if err != nil {
			panic(err)
		}
		teachers = append(teachers, classify.InProcess(m))
	}
	// Every teacher labels every test row; the plurality of the votes is
	// the (non-private) ensemble's answer. DPPP adds noise to these votes.
	rows := make([][]float64, testSet.N())
	for i := range rows {
		rows[i] = testSet.Row(i)
	}
	votes := make([][]int, testSet.N())
	for i := range votes {
		votes[i] = make([]int, spec.Classes())
	}
	single := 0.0
	for _, t := range teachers {
		labels, err := t.PredictBatch(ctx, rows)
		if err != nil {
			panic(err)
		}
		for i, l := range labels {
			votes[i][l]++
			if l == testSet.Y[i] {
				single += 1 / float64(testSet.N()*len(teachers))
			}
		}
	}
	correct := 0
	for i, v := range votes {
		best := 0
		for k := range v {
			if v[k] > v[best] {
				best = k
			}
		}
		if best == testSet.Y[i] {
			correct++
		}
	}
	fmt.Printf("%d teachers of %d rows each\n", len(teachers), len(parts[0]))
	fmt.Printf("votes on test row 0 (true label %s): %v\n", spec.ClassNames()[testSet.Y[0]], votes[0])
	fmt.Printf("test accuracy: one teacher %.2f, plurality vote %.2f\n", single, float64(correct)/float64(testSet.N()))
	// Output:
	// 10 teachers of 144 rows each
	// votes on test row 0 (true label 3): [0 0 0 10 0 0 0 0 0 0]
	// test accuracy: one teacher 0.91, plurality vote 0.95
}
