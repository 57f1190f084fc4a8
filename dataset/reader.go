package dataset

import (
	"context"
	"errors"
	"io"

	"github.com/dplearn/dplearn/schema"
)

// StreamReader is Stream for a stream of CSV (or gzip-compressed CSV)
// bytes, such as a file opened through a cluster's filesystem; name labels
// its errors (name:line:column). Parquet needs random access: use Stream
// with a path.
func StreamReader(ctx context.Context, r io.Reader, name string, s *schema.Schema, opt Options, fn func(rows []float64) error) (Summary, error) {
	if r == nil {
		return Summary{}, errors.New("dataset: nil reader")
	}
	p := &pipeline{path: name, in: r, schema: s, opt: opt}
	return p.run(ctx, func(r *result) error {
		if len(r.rows) == 0 {
			return nil
		}
		return fn(r.rows)
	})
}
