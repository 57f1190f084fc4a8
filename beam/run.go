package dpbeam

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/x/beamx"
)

// WriteStatsFile builds the statistics pipeline with a WriteStats sink and
// runs it on the runner the --runner flag names (Prism, embedded, by
// default). The result carries the metrics (SkippedCounter).
func WriteStatsFile(ctx context.Context, o Options, path string) (beam.PipelineResult, error) {
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

// FitFile builds the statistics pipeline with a Fit sink and runs it like
// WriteStatsFile: the model file is written to spec.Out.
func FitFile(ctx context.Context, o Options, spec FitSpec) (beam.PipelineResult, error) {
	p, s := beam.NewPipelineWithRoot()
	st, err := Statistics(s, o)
	if err != nil {
		return nil, err
	}
	if err := Fit(s, st, o, spec); err != nil {
		return nil, err
	}
	return beamx.RunWithMetrics(ctx, p)
}
