package exampledata

import (
	"embed"
	"fmt"
)

// The classification tables of the DPPP teachers (package classify), with
// their specs: schema files whose target declares its classes.
//
//   - digits: 1,797 8×8 handwritten digits, pixel values 0-16, classes 0-9
//     (Debian python3-sklearn 1.2.1, BSD-3; ../shared/data/digits.csv).
//   - breast_cancer: Wisconsin diagnostic breast cancer, 569 rows, 30
//     features, malignant 0/1 (same source), with the declared schema
//     schemas/breast_cancer.json.
//
// The CSVs are stored gzip-compressed; dataset.LoadReader and
// classify.Spec.LoadReader read them as they are.
var (
	//go:embed classify/digits.csv.gz classify/breast_cancer.csv.gz classify/digits.json
	classifyFS embed.FS
)

// ClassifyDataset is one embedded classification table.
type ClassifyDataset struct {
	Name        string
	Description string
	CSVGzip     []byte // the table, gzip-compressed CSV with a header row
	Spec        []byte // classify spec (JSON)
	// Teachers is the number of DPPP teachers the DPPP seed's setup (or
	// ours, for tables the seed does not use) splits the training part
	// into.
	Teachers int
}

func mustRead(name string) []byte {
	b, err := classifyFS.ReadFile(name)
	if err != nil {
		panic(err) // the embedded files are fixed at build time
	}
	return b
}

// Classification returns the embedded classification tables, sorted by
// name.
func Classification() []ClassifyDataset {
	return []ClassifyDataset{
		{Name: "breast_cancer", Description: "Wisconsin diagnostic breast cancer (569 rows, 30 features): malignant 0/1",
			CSVGzip: mustRead("classify/breast_cancer.csv.gz"), Spec: mustSchema("breast_cancer"), Teachers: 20},
		{Name: "digits", Description: "8×8 handwritten digits (1,797 rows, 64 pixels 0-16): digit 0-9",
			CSVGzip: mustRead("classify/digits.csv.gz"), Spec: mustRead("classify/digits.json"), Teachers: 10},
	}
}

// GetClassification returns the embedded classification table name.
func GetClassification(name string) (ClassifyDataset, error) {
	for _, d := range Classification() {
		if d.Name == name {
			return d, nil
		}
	}
	return ClassifyDataset{}, fmt.Errorf("exampledata: no embedded classification table %q (have breast_cancer, digits)", name)
}
