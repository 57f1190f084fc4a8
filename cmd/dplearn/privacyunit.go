package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// unitFlags are --privacy-unit COLUMN --max-rows-per-unit K.
type unitFlags struct {
	column string
	k      int
}

func addUnitFlags(cmd *cobra.Command, u *unitFlags) {
	f := cmd.Flags()
	f.StringVar(&u.column, "privacy-unit", "", "column identifying the privacy unit (a person ID): the guarantee protects all rows of one person; needs --max-rows-per-unit (fit: fm, relaxed-fm, gaussian-fm, irls, noisygd, linear objpert)")
	f.IntVar(&u.k, "max-rows-per-unit", 0, "with --privacy-unit: keep at most K rows per unit (a uniformly random subset, secure generator); sensitivities scale to K rows")
}

// check validates the flag pair against the rest of the fit.
func (u unitFlags) check(cmd *cobra.Command, est regress.Estimator, kind regress.Kind, statsPath string) error {
	if u.column == "" {
		if cmd.Flags().Changed("max-rows-per-unit") {
			return fmt.Errorf("--max-rows-per-unit needs --privacy-unit COLUMN")
		}
		return nil
	}
	if u.k < 1 {
		return fmt.Errorf("--privacy-unit %s needs --max-rows-per-unit K ≥ 1", u.column)
	}
	if statsPath != "" {
		return fmt.Errorf("--privacy-unit cannot be used with --stats: the statistics file does not bound rows per unit")
	}
	if err := regress.UnitSupported(est, kind); err != nil {
		return fmt.Errorf("--privacy-unit: %w", err)
	}
	// An explicit --ci-share > 0 asks for intervals: fit.Run allows them
	// for linear fm, relaxed-fm and gaussian-fm (sampling part inflated by
	// fit.UnitSamplingInflation) and refuses the rest with the reason.
	return nil
}

// loadUnitInput reads the statistics of at most K rows per unit and wraps
// them for the unit-level sensitivities (regress.UnitStats); with needsRows
// (irls, noisygd) it also keeps those rows, the same kept rows as the
// statistics' (one pass of dataset.UnitStreamBatches feeds both).
func loadUnitInput(ctx context.Context, path string, s *schema.Schema, u unitFlags, src noise.Source, opt dataset.Options, needsRows bool) (regress.Data, dataset.UnitSummary, error) {
	uo := dataset.UnitOptions{Column: u.column, MaxRows: u.k, Rand: src}
	var (
		m    *suffstat.Moments
		rows []float64
		sum  dataset.UnitSummary
		err  error
	)
	if needsRows {
		m = suffstat.New(s.Dim() + 1)
		sum, err = dataset.UnitStreamBatches(ctx, path, s, opt, uo, func(b dataset.Batch) error {
			rows = append(rows, b.Rows...)
			return m.AddRows(b.Rows)
		})
		m.Flush()
	} else {
		m, sum, err = dataset.UnitMoments(ctx, path, s, opt, uo)
	}
	if err != nil {
		return regress.Data{}, sum, err
	}
	st, err := regress.UnitStats(m, regress.PrivacyUnit{Column: u.column, MaxRows: u.k, Units: sum.Units})
	if err != nil {
		return regress.Data{}, sum, err
	}
	return regress.Data{Stats: st, Rows: rows}, sum, nil
}
