// Package exampledata embeds the small real public datasets the commands,
// the README and the experiments use, with their declared schemas, so that
// `dplearn demo`, `dplearn experiment` and the README's worked example run
// from a fresh clone with no other files at hand. Each file is a
// byte-identical copy of the project's example data (File; classify.go for
// the classification tables):
//
//   - CPS1988.csv: US Current Population Survey, March 1988 (28,155 rows),
//     from the R package AER (Debian r-cran-aer 1.2-10, GPL-2/3). Linear
//     regression of log weekly wage.
//   - SmokeBan.csv: US survey on workplace smoking bans (10,000 rows), from
//     the same package. Logistic regression of smoking.
//   - diabetes.csv (stored gzip-compressed): Efron et al.'s diabetes data,
//     442 patients, 10 raw features, disease progression after one year,
//     from Debian python3-sklearn 1.2.1 (BSD-3).
//   - breast_cancer.csv and digits.csv (gzip-compressed, classify.go): from
//     the same scikit-learn package.
//
// The schemas (schemas/NAME.json: cps1988, smokeban, diabetes,
// breast_cancer, and cps1988-highwage for the FM seed's logistic task)
// declare public bounds chosen from general knowledge (years of education
// 0-20, potential experience 0-60 years, log weekly wage 4-9, adult age
// 18-90, published ranges of the WDBC cell-nucleus descriptors), not read off
// the data; values outside them are clipped.
package exampledata

import (
	"embed"
	"fmt"
	"sort"
	"strings"
)

var (
	//go:embed CPS1988.csv
	cpsCSV []byte
	//go:embed SmokeBan.csv
	smokeCSV []byte
	//go:embed diabetes.csv.gz
	diabetesGzip []byte
	//go:embed schemas/*.json
	schemas embed.FS
)

// Schema returns the declared schema (JSON) of an example dataset.
func Schema(name string) ([]byte, error) {
	b, err := schemas.ReadFile("schemas/" + name + ".json")
	if err != nil {
		return nil, fmt.Errorf("exampledata: no schema %q (have %s)", name, strings.Join(SchemaNames(), ", "))
	}
	return b, nil
}

// SchemaNames lists the embedded schemas, sorted.
func SchemaNames() []string {
	entries, _ := schemas.ReadDir("schemas")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(names)
	return names
}

func mustSchema(name string) []byte {
	b, err := Schema(name)
	if err != nil {
		panic(err) // the embedded files are fixed at build time
	}
	return b
}

// Dataset is one embedded table.
type Dataset struct {
	Name        string
	Model       string // "linear" or "logistic"
	Description string
	CSV         []byte
	Schema      []byte
}

// All returns the embedded datasets, sorted by name.
func All() []Dataset {
	ds := []Dataset{
		{Name: "cps1988", Model: "linear", Description: "CPS 1988 (28,155 rows): log weekly wage", CSV: cpsCSV, Schema: mustSchema("cps1988")},
		{Name: "smokeban", Model: "logistic", Description: "SmokeBan (10,000 rows): smoker yes/no", CSV: smokeCSV, Schema: mustSchema("smokeban")},
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i].Name < ds[j].Name })
	return ds
}

// Get returns the embedded dataset with the given name.
func Get(name string) (Dataset, error) {
	for _, d := range All() {
		if d.Name == name {
			return d, nil
		}
	}
	return Dataset{}, fmt.Errorf("no embedded dataset %q (have cps1988, smokeban)", name)
}

// Files lists the file names File serves: the example CSVs of the
// project's data directory, each embedded here.
func Files() []string {
	return []string{"CPS1988.csv", "SmokeBan.csv", "breast_cancer.csv", "diabetes.csv", "digits.csv"}
}

// File returns the embedded copy of an example CSV by its file name in the
// project's data directory (see Files). Some copies are gzip-compressed:
// package dataset's readers recognise gzip by its content, so pass the
// bytes to dataset.LoadReader as they are.
func File(name string) ([]byte, error) {
	switch name {
	case "CPS1988.csv":
		return cpsCSV, nil
	case "SmokeBan.csv":
		return smokeCSV, nil
	case "diabetes.csv":
		return diabetesGzip, nil
	case "breast_cancer.csv":
		return mustRead("classify/breast_cancer.csv.gz"), nil
	case "digits.csv":
		return mustRead("classify/digits.csv.gz"), nil
	}
	return nil, fmt.Errorf("exampledata: no embedded file %q (have %s)", name, strings.Join(Files(), ", "))
}
