package main

import (
	"errors"
	"fmt"
	"slices"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/fit"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/statsfile"
)

// The statistics file (package statsfile; docs/beam.md): `fit --stats` and
// `cape join --stats` take it in place of --data.

const statsFlagHelp = "PRIVATE statistics file (mode 0600) from 'dplearn-beam stats', in place of --data; see docs/beam.md"

// dataOrStats checks that exactly one of --data and --stats is given and
// returns the required flags without "data" when --stats is.
func dataOrStats(cmd *cobra.Command, req []string) ([]string, error) {
	data, stats := cmd.Flags().Changed("data"), cmd.Flags().Changed("stats")
	switch {
	case data && stats:
		return nil, errors.New("--data and --stats: give one (the table or its statistics file)")
	case stats:
		return slices.DeleteFunc(slices.Clone(req), func(s string) bool { return s == "data" }), nil
	}
	return req, nil
}

// loadStatsInput reads a statistics file for a mechanism that needs only
// the statistics, checking it against the schema. It returns the data, a
// summary with the row count, and whether the file's rows were read with
// --skip-bad-rows (the fit's report must then carry the same caveat).
func loadStatsInput(path string, s *schema.Schema, est regress.Estimator, req fit.Request) (regress.Data, dataset.Summary, bool, error) {
	if req.NeedsRows() {
		return regress.Data{}, dataset.Summary{}, false, fmt.Errorf("--mechanism %s needs the rows, not only their statistics%s: give --data instead of --stats", req.Mechanism, regress.RowsHint(est, req.Kind))
	}
	st, err := statsfile.Read(path, s)
	if err != nil {
		return regress.Data{}, dataset.Summary{}, false, err
	}
	return regress.Data{Stats: st.Moments}, dataset.Summary{Rows: st.Moments.N(), HasTarget: true}, st.SkipBadRows, nil
}

// loadSiteStats is loadSiteData for a statistics file: it serves the
// mechanisms whose coefficient baseline needs no rows, and not --part, and
// refuses a file computed with --skip-bad-rows.
func loadSiteStats(path string, s *schema.Schema, kind regress.Kind, mech capefm.Mechanism, parts int) (regress.Data, error) {
	if parts > 0 {
		return regress.Data{}, errors.New("--part splits a table's rows: it cannot be used with --stats")
	}
	if b := baselineEstimator(mech); b != "" {
		est, err := regress.New(b)
		if err != nil {
			return regress.Data{}, err
		}
		if est.NeedsRows(kind) {
			return regress.Data{}, fmt.Errorf("--mechanism %s needs the rows, not only their statistics: give --data instead of --stats", mech)
		}
	}
	st, err := statsfile.Read(path, s)
	if err != nil {
		return regress.Data{}, err
	}
	if st.SkipBadRows {
		// A site announces N_s as public; with skipped rows it is
		// data-dependent, and join has no --skip-bad-rows to accept that.
		return regress.Data{}, fmt.Errorf("%s: computed with --skip-bad-rows, so its row count depends on the data; a capeFM site announces N as public: compute the statistics without skipping", path)
	}
	return regress.Data{Stats: st.Moments}, nil
}
