package describe

import (
	"context"
	"fmt"
	"io"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/schema"
)

// Read streams the table at path through the schema's encoder (its
// transforms, clipping, missing-value and unknown-category policies) and
// adds every row to d. Records dropped for a missing value count in N
// only. A value the schema cannot encode (a column not in the table, a
// missing value under the "error" policy, an undeclared category) is an
// error naming the row and column.
func (d *Data) Read(ctx context.Context, path string, s *schema.Schema, opt dataset.Options) (dataset.Summary, error) {
	opt.KeepDropped = true
	opt.SkipDropped = false
	k := s.Dim() + 1
	return dataset.StreamBatches(ctx, path, s, opt, func(b dataset.Batch) error {
		n := len(b.Rows) / k
		for r := range n {
			dropped := b.Dropped != nil && b.Dropped[r]
			d.Add(b.Rows[r*k:(r+1)*k], dropped)
		}
		return nil
	})
}

// ReadRaw streams the raw text of every column of the table at path (CSV,
// CSV.gz or Parquet, as package dataset reads them): fn gets the header
// once and then each record's fields (reused after fn returns).
func ReadRaw(ctx context.Context, path string, opt dataset.Options, fn func(header, fields []string) error) error {
	if path == "-" {
		return fmt.Errorf("standard input cannot be read here (the header is read before the rows): give a file")
	}
	header, err := dataset.ReadHeader(path, opt)
	if err != nil {
		return err
	}
	if len(header) == 0 {
		return fmt.Errorf("%s: no columns", path)
	}
	// A carrier schema that accepts any text in the first column (every
	// level is read as the reference level, a missing one imputed), so
	// that the reader hands over each record's raw fields through Keep.
	carrier := &schema.Schema{
		Target: schema.Target{Name: "\x00describe-no-target"},
		Features: []schema.Feature{{
			Name: header[0], Categories: []string{"\x00"}, Unknown: "reference",
			Missing: schema.MissingImpute, Impute: []byte(`"\u0000"`),
		}},
	}
	if err := carrier.Validate(); err != nil {
		return fmt.Errorf("describe: carrier schema: %w", err)
	}
	opt.Keep = header
	opt.TargetOptional = true
	opt.IgnoreTarget = true
	if err := fn(header, nil); err != nil {
		return err
	}
	_, err = dataset.StreamBatches(ctx, path, carrier, opt, func(b dataset.Batch) error {
		w := len(header)
		for r := 0; r+w <= len(b.Keep); r += w {
			if err := fn(header, b.Keep[r:r+w]); err != nil {
				return err
			}
		}
		return nil
	})
	return err
}

// ReadUnits is Read under a privacy unit (Options.PrivacyUnit and
// MaxRowsPerUnit): at most K records of each unit are added, chosen by
// dataset.UnitStreamBatches (two passes, a per-run key from rnd, which
// must be a secure generator for the guarantee), and the public number of
// units is recorded.
func (d *Data) ReadUnits(ctx context.Context, path string, s *schema.Schema, opt dataset.Options, rnd io.Reader) (dataset.UnitSummary, error) {
	if d.opt.MaxRowsPerUnit < 1 {
		return dataset.UnitSummary{}, fmt.Errorf("describe: ReadUnits without a privacy unit in Options")
	}
	opt.KeepDropped = true
	opt.SkipDropped = false
	k := s.Dim() + 1
	us, err := dataset.UnitStreamBatches(ctx, path, s, opt, dataset.UnitOptions{Column: d.opt.PrivacyUnit, MaxRows: d.opt.MaxRowsPerUnit, Rand: rnd}, func(b dataset.Batch) error {
		n := len(b.Rows) / k
		for r := range n {
			dropped := b.Dropped != nil && b.Dropped[r]
			d.Add(b.Rows[r*k:(r+1)*k], dropped)
		}
		return nil
	})
	if err == nil {
		d.SetUnits(us.Units)
	}
	return us, err
}
