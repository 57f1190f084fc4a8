package main

import (
	"strings"
	"testing"

	dpbeam "github.com/dplearn/dplearn/beam"
)

// TestSetUnit: --privacy-unit and --max-rows-per-unit map to the
// pipeline's Unit (with the seed, for the key) and refuse what dplearn fit
// refuses with them; the default --ci-share becomes 0.
func TestSetUnit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cmd    string
		column string
		k      int
		ci     float64
		want   string // error substring; "" for success
	}{
		{"none", "fit", "", 0, 0.05, ""},
		{"k-without-column", "fit", "", 3, 0.05, "needs --privacy-unit"},
		{"no-k", "fit", "person", 0, 0.05, "K ≥ 1"},
		{"stats", "stats", "person", 3, 0.05, "statistics file"},
		{"ok", "fit", "person", 3, 0.05, ""},
		{"ok-ci-zero", "fit", "person", 3, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := options{unitColumn: tc.column, unitK: tc.k, spec: dpbeam.FitSpec{CIShare: tc.ci, Seeded: true, Seed: 5}}
			err := o.setUnit(tc.cmd)
			if tc.want != "" {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Fatalf("err = %v, want %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.column == "" {
				if o.unit != nil {
					t.Fatal("a unit without --privacy-unit")
				}
				return
			}
			if *o.unit != (dpbeam.Unit{Column: "person", MaxRows: 3, Seeded: true, Seed: 5}) || o.spec.CIShare != tc.ci {
				t.Fatalf("unit %+v, ci-share %v", *o.unit, o.spec.CIShare)
			}
		})
	}
}
