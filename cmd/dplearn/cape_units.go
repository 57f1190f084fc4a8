package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/capefm"
)

// capeUnitFlags registers --privacy-unit COLUMN --max-rows-per-unit K on a
// capeFM command (the flags of `dplearn fit`, unitFlags) and returns a
// function that checks them once the flags are parsed.
//
// A person-level capeFM fit (capefm.Params.Unit, MaxRows; the derivation
// is in capefm's documentation and docs/privacy-units.md): every site
// bounds its own rows to K per unit with dataset.UnitMoments, announces
// its number of units U_s, and all sites and the aggregator must agree on
// the column and K (in the fingerprinted parameters: a site with another K
// is refused naming the field). The guarantee assumes that a person has
// rows at one site only (printed in the report).
//
// Refused: mechanisms without a unit-level sensitivity (objpert-local,
// noisygd-local), --stats (a statistics file does not bound rows per
// unit), and `cape simulate` and `cape join --part`, which split one table
// by row, putting a person's rows at several sites against the one-site
// assumption.
func capeUnitFlags(cmd *cobra.Command, u *unitFlags, simulate bool) func(mech capefm.Mechanism) error {
	f := cmd.Flags()
	if simulate {
		f.StringVar(&u.column, "privacy-unit", "", "not available for cape simulate: refused (it splits one table by row, so a person's rows would be at several sites); run cape serve and cape join with each site's own table")
		f.IntVar(&u.k, "max-rows-per-unit", 0, "not available for cape simulate: refused, as --privacy-unit")
	} else {
		f.StringVar(&u.column, "privacy-unit", "", "column identifying the privacy unit (a person ID): the guarantee protects all rows of one person, assumed to have rows at one site only; the aggregator and every site give the same column and --max-rows-per-unit (capefm, gaussian-fm-local, fm-local)")
		f.IntVar(&u.k, "max-rows-per-unit", 0, "with --privacy-unit: every site keeps at most K rows per unit of its own table (a uniformly random subset) and announces its number of units")
	}
	return func(mech capefm.Mechanism) error {
		if simulate && (f.Changed("privacy-unit") || f.Changed("max-rows-per-unit")) {
			return errCapeSimulateUnits
		}
		if u.column == "" {
			if f.Changed("max-rows-per-unit") {
				return errors.New("--max-rows-per-unit needs --privacy-unit COLUMN")
			}
			return nil
		}
		if u.k < 1 || u.k > capefm.MaxRowsPerUnit {
			return fmt.Errorf("--privacy-unit %s needs --max-rows-per-unit K from 1 to %d", u.column, capefm.MaxRowsPerUnit)
		}
		if mech != capefm.CapeFM && mech != capefm.GaussianFMLocal && mech != capefm.FMLocal {
			return fmt.Errorf("--privacy-unit: --mechanism %s has no sensitivity derived for a unit of K rows; use capefm, gaussian-fm-local or fm-local", mech)
		}
		if f.Lookup("stats") != nil && f.Changed("stats") {
			return errors.New("--privacy-unit cannot be used with --stats: the statistics file does not bound rows per unit")
		}
		if f.Lookup("part") != nil && f.Changed("part") {
			return errors.New("--privacy-unit cannot be used with --part: splitting one table by row puts a person's rows at several sites")
		}
		return nil
	}
}

// errCapeSimulateUnits refuses --privacy-unit in cape simulate.
var errCapeSimulateUnits = errors.New("--privacy-unit is not available for cape simulate: it splits one table among the sites by row, " +
	"so a person's rows would be at several sites, against the person-level guarantee's assumption that every person has rows at one site; " +
	"run 'dplearn cape serve --privacy-unit' and 'dplearn cape join --privacy-unit' with each site's own table (docs/privacy-units.md)")

// capeCommonFlags registers the flags every capeFM command shares
// (--format, --log-level and the privacy-unit pair, capeUnitFlags) and
// returns the function that checks them once the flags are parsed: the
// unit flags against the mechanism first, then the output format and the
// log level, in the order the commands have always reported them.
func capeCommonFlags(cmd *cobra.Command, u *unitFlags, simulate bool) func(mech string) (outputFormat, string, error) {
	format := addFormatFlag(cmd)
	logLevel := addLogLevelFlag(cmd)
	units := capeUnitFlags(cmd, u, simulate)
	return func(mech string) (outputFormat, string, error) {
		if err := units(capefm.Mechanism(mech)); err != nil {
			return "", "", err
		}
		fm, err := format()
		if err != nil {
			return "", "", err
		}
		level, err := logLevel()
		if err != nil {
			return "", "", err
		}
		return fm, level, nil
	}
}
