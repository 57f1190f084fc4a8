// Package exampledata embeds two real public datasets, and the declared
// schemas of every example dataset in ../shared/data, so that `dplearn demo`
// and examples run on a fresh machine with no files at hand.
//
//   - CPS1988: US Current Population Survey, March 1988 (28,155 rows), from
//     the R package AER (Debian r-cran-aer 1.2-10, GPL-2/3). Linear
//     regression of log weekly wage.
//   - SmokeBan: US survey on workplace smoking bans (10,000 rows), from the
//     same package. Logistic regression of smoking.
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
