// Package exampledata embeds two real public datasets with declared
// schemas, so that `dplearn demo` and examples run on a fresh machine with
// no files at hand.
//
//   - CPS1988: US Current Population Survey, March 1988 (28,155 rows), from
//     the R package AER (Debian r-cran-aer 1.2-10, GPL-2/3). Linear
//     regression of log weekly wage.
//   - SmokeBan: US survey on workplace smoking bans (10,000 rows), from the
//     same package. Logistic regression of smoking.
//
// The schemas declare public bounds chosen from general knowledge (years of
// education 0-20, potential experience 0-60 years, log weekly wage 4-9, adult
// age 18-90), not read off the data; values outside them are clipped.
package exampledata

import (
	_ "embed"
	"fmt"
	"sort"
)

var (
	//go:embed CPS1988.csv
	cpsCSV []byte
	//go:embed cps1988.schema.json
	cpsSchema []byte
	//go:embed SmokeBan.csv
	smokeCSV []byte
	//go:embed smokeban.schema.json
	smokeSchema []byte
)

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
		{Name: "cps1988", Model: "linear", Description: "CPS 1988 (28,155 rows): log weekly wage", CSV: cpsCSV, Schema: cpsSchema},
		{Name: "smokeban", Model: "logistic", Description: "SmokeBan (10,000 rows): smoker yes/no", CSV: smokeCSV, Schema: smokeSchema},
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
