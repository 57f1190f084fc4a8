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
	return (&pipeline{path: name, in: r, schema: s, opt: opt, moments: true}).accumulate(ctx)
}
