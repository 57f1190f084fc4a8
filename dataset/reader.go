package dataset

import (
	"context"
	"errors"
	"io"

	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// MomentsReader is Moments for a stream of CSV (or gzip-compressed CSV)
// bytes, such as a file opened through a cluster's filesystem; name labels
// its errors (name:line:column). The statistics are accumulated in the
// parsing workers, as Moments does. Parquet needs random access: use
// Moments with a path.
func MomentsReader(ctx context.Context, r io.Reader, name string, s *schema.Schema, opt Options) (*suffstat.Moments, Summary, error) {
	if r == nil {
		return nil, Summary{}, errors.New("dataset: nil reader")
	}
	p := &pipeline{path: name, in: r, schema: s, opt: opt, moments: true}
	var total *suffstat.Moments
	sum, err := p.run(ctx, func(r *result) error {
		if total == nil {
			total = suffstat.New(p.width)
			total.SetWorkers(p.workers)
		}
		if r.mom != nil {
			return total.Merge(r.mom)
		}
		if len(r.rows) > 0 {
			return total.AddRows(r.rows)
		}
		return nil
	})
	if err != nil {
		return nil, sum, err
	}
	total.Flush()
	return total, sum, nil
}
