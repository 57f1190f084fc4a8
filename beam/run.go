package dpbeam

import (
	"context"
	"errors"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
)

// WriteStatsFile builds the statistics pipeline with a WriteStats sink and
// runs it on the runner the --runner flag names (Prism, embedded, by
// default). The result carries the metrics (SkippedCounter).
func WriteStatsFile(ctx context.Context, o Options, path string) (beam.PipelineResult, error) {
	if o.Unit != nil {
		return nil, errUnitStatsFile
	}
	p, s := beam.NewPipelineWithRoot()
	st, err := Statistics(s, o)
	if err != nil {
		return nil, err
	}
	if err := WriteStats(s, st, o, path); err != nil {
		return nil, err
	}
	return beamx.RunWithMetrics(ctx, p)
}

// errUnitStatsFile refuses a statistics file of unit-bounded rows: the
// file records neither the unit bound nor the number of units, and
// `dplearn fit --stats` would fit it at the row level.
var errUnitStatsFile = errors.New("--privacy-unit: a statistics file does not record the rows-per-unit bound or the number of units; fit inside the pipeline (dplearn-beam fit --privacy-unit)")

// FitFile builds the statistics pipeline with a Fit sink and runs it like
// WriteStatsFile: the model file is written to spec.Out; with o.Unit, the
// unit-level pipeline (UnitStatistics, FitUnits).
func FitFile(ctx context.Context, o Options, spec FitSpec) (beam.PipelineResult, error) {
	p, s := beam.NewPipelineWithRoot()
	if o.Unit != nil {
		st, units, err := UnitStatistics(s, o)
		if err != nil {
			return nil, err
		}
		if err := FitUnits(s, st, units, o, spec); err != nil {
			return nil, err
		}
		return beamx.RunWithMetrics(ctx, p)
	}
	st, err := Statistics(s, o)
	if err != nil {
		return nil, err
	}
	if err := Fit(s, st, o, spec); err != nil {
		return nil, err
	}
	return beamx.RunWithMetrics(ctx, p)
}
