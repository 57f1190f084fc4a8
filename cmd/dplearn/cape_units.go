package main

import (
	"errors"

	"github.com/spf13/cobra"
)

// errCapeUnits is the refusal of --privacy-unit on the capeFM commands.
//
// A unit-level capeFM fit is not derived yet. What it needs (docs/privacy-units.md,
// "capeFM sites"): each site bounds its rows per unit (dataset.UnitMoments)
// and announces units·K as its public N (regress.UnitStats), while every
// noise share is calibrated at the sensitivity N = units, the one
// rows-per-unit factor (regress.sensitivityN), which capefm's calibration
// (capefm/calibrate.go) takes from the announced N's today; the offer and
// every announce must carry K so that a site with another K is refused by
// name; and a unit that spans two sites breaks the per-site bound (the
// consortium must then assume disjoint units across sites, or bound K over
// all sites together). Until those are built and tested with an extremal
// neighbouring pair at one site, the flags are refused rather than ignored.
var errCapeUnits = errors.New("--privacy-unit is not available for capeFM (cape join, cape simulate): " +
	"the capeFM calibration takes each site's public N as its row count and has no unit-level sensitivity, " +
	"and the offer does not carry the rows-per-unit bound K; fit each person-level model with " +
	"'dplearn fit --privacy-unit' instead (docs/privacy-units.md)")

// addCapeUnitFlags registers --privacy-unit and --max-rows-per-unit on a
// capeFM command so that they are refused with errCapeUnits, not reported
// as unknown flags (which would read as a typo) and never silently ignored.
func addCapeUnitFlags(cmd *cobra.Command) func() error {
	f := cmd.Flags()
	f.String("privacy-unit", "", "not available for capeFM: refused (a unit-level capeFM fit is not derived; docs/privacy-units.md)")
	f.Int("max-rows-per-unit", 0, "not available for capeFM: refused, as --privacy-unit")
	return func() error {
		if cmd.Flags().Changed("privacy-unit") || cmd.Flags().Changed("max-rows-per-unit") {
			return errCapeUnits
		}
		return nil
	}
}
