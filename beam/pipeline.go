package dpbeam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/fileio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

func init() {
	register.DoFn3x1[context.Context, fileio.FileMetadata, func(*suffstat.Moments), error](&readFn{})
	register.Emitter1[*suffstat.Moments]()
	register.Combiner2[*suffstat.Moments, []byte](&statsFn{})
	beam.RegisterCoder(reflect.TypeOf((*suffstat.Moments)(nil)), encodeMoments, decodeMoments)
}

// Options configures the statistics pipeline.
type Options struct {
	// Inputs are file globs in any Beam filesystem ("data/part-*.csv.gz",
	// "gs://bucket/table/*.parquet"). Every file has its own header row.
	Inputs []string
	// Schema encodes the rows (features then target).
	Schema *schema.Schema
	// SkipBadRows skips and counts records that cannot be encoded instead
	// of failing the pipeline (see dataset.Options.SkipBadRows for the
	// caveat: the row count N is then data-dependent).
	SkipBadRows bool
	// ReadWorkers is the number of parsing goroutines per file (0: all of
	// the worker's cores).
	ReadWorkers int
	// Unit, when non-nil, bounds each privacy unit to at most K rows
	// (UnitStatistics, FitUnits; dplearn-beam fit --privacy-unit).
	Unit *Unit
}

func (o Options) check() (k int, schemaJSON string, err error) {
	if o.Schema == nil {
		return 0, "", errors.New("dpbeam: no schema")
	}
	if len(o.Inputs) == 0 {
		return 0, "", errors.New("dpbeam: no input files (give one or more globs)")
	}
	b, err := json.Marshal(o.Schema)
	if err != nil {
		return 0, "", fmt.Errorf("dpbeam: schema: %w", err)
	}
	return len(o.Schema.FeatureNames()) + 1, string(b), nil
}

// SkippedCounter names the Beam metric (namespace "dplearn") that counts
// the records skipped with SkipBadRows. The count is data-dependent: it is
// printed on the console of the run and never written to an output.
const SkippedCounter = "skipped_rows"

// Statistics adds to s the steps that read the inputs and combine their
// encoded rows. It returns a PCollection with one element: the exact
// statistics as suffstat.Moments.MarshalBinary bytes.
func Statistics(s beam.Scope, o Options) (beam.PCollection, error) {
	k, sj, err := o.check()
	if err != nil {
		return beam.PCollection{}, err
	}
	if o.Unit != nil {
		return beam.PCollection{}, errors.New("dpbeam: with Options.Unit, use UnitStatistics")
	}
	s = s.Scope("dplearn.Statistics")
	var files []beam.PCollection
	for _, glob := range o.Inputs {
		files = append(files, fileio.MatchFiles(s, glob, fileio.MatchEmptyDisallow()))
	}
	all := files[0]
	if len(files) > 1 {
		all = beam.Flatten(s, files...)
	}
	// Matching happens in one bundle; reshuffling spreads the files over
	// the workers.
	all = beam.Reshuffle(s, all)
	batches := beam.ParDo(s, &readFn{SchemaJSON: sj, SkipBadRows: o.SkipBadRows, Workers: o.ReadWorkers}, all)
	return beam.Combine(s, &statsFn{K: k}, batches), nil
}

// readFn reads one file with dplearn's streaming engine (its parsing
// workers accumulate the statistics, as in dplearn fit) and emits the
// file's partial statistics.
type readFn struct {
	SchemaJSON  string
	SkipBadRows bool
	Workers     int

	schema  *schema.Schema
	skipped beam.Counter
}

func (f *readFn) Setup() (err error) {
	f.schema, f.skipped, err = setupRead(f.SchemaJSON)
	return err
}

// setupRead is the Setup of the DoFns that read files (readFn and
// unitReadFn): the schema parsed from its JSON, and the counter of skipped
// rows. The fields it fills are unexported, so Beam does not serialise
// them; each worker calls Setup again.
func setupRead(schemaJSON string) (*schema.Schema, beam.Counter, error) {
	s, err := schema.Parse([]byte(schemaJSON))
	if err != nil {
		return nil, beam.Counter{}, fmt.Errorf("dpbeam: schema: %w", err)
	}
	return s, beam.NewCounter("dplearn", SkippedCounter), nil
}

func (f *readFn) ProcessElement(ctx context.Context, file fileio.FileMetadata, emit func(*suffstat.Moments)) error {
	opt := dataset.Options{Workers: f.Workers, SkipBadRows: f.SkipBadRows}
	m, sum, err := readFile(ctx, file.Path, f.schema, opt)
	if errors.Is(err, dataset.ErrNoRows) || errors.Is(err, dataset.ErrNoHeader) {
		// An empty shard (Spark and Beam write them); the sinks
		// refuse statistics of no rows.
		return nil
	}
	if err != nil {
		return err
	}
	if sum.Skipped > 0 {
		f.skipped.Inc(ctx, sum.Skipped)
	}
	emit(m)
	return nil
}

// readFile returns the statistics of one file: local files by path
// (Parquet needs random access), others through the Beam filesystem
// (Parquet copied to a local temporary file first).
func readFile(ctx context.Context, path string, s *schema.Schema, opt dataset.Options) (*suffstat.Moments, dataset.Summary, error) {
	parquet := strings.HasSuffix(strings.ToLower(path), ".parquet")
	if !strings.Contains(path, "://") {
		return dataset.Moments(ctx, path, s, opt)
	}
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return nil, dataset.Summary{}, fmt.Errorf("%s: %w", path, err)
	}
	defer fs.Close()
	rc, err := fs.OpenRead(ctx, path)
	if err != nil {
		return nil, dataset.Summary{}, fmt.Errorf("%s: %w", path, err)
	}
	defer rc.Close()
	if !parquet {
		return dataset.MomentsReader(ctx, rc, path, s, opt)
	}
	tmp, err := os.CreateTemp("", "dplearn-*-"+filepath.Base(path))
	if err != nil {
		return nil, dataset.Summary{}, err
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	if _, err := io.Copy(tmp, rc); err != nil {
		return nil, dataset.Summary{}, fmt.Errorf("%s: copy to a local file: %w", path, err)
	}
	m, sum, err := dataset.Moments(ctx, tmp.Name(), s, opt)
	if err != nil {
		err = fmt.Errorf("%s (local copy %s): %w", path, tmp.Name(), err)
	}
	return m, sum, err
}

// statsFn is the CombineFn: its accumulator is the exact suffstat
// accumulator and its inputs are the files' partial statistics, so any
// bundling and merge order gives the same bits.
type statsFn struct {
	K int
}

func (f *statsFn) CreateAccumulator() *suffstat.Moments {
	return suffstat.New(f.K)
}

func (f *statsFn) AddInput(m, part *suffstat.Moments) (*suffstat.Moments, error) {
	if err := m.Merge(part); err != nil {
		return nil, fmt.Errorf("dpbeam: %w", err)
	}
	return m, nil
}

func (f *statsFn) MergeAccumulators(a, b *suffstat.Moments) (*suffstat.Moments, error) {
	if err := a.Merge(b); err != nil {
		return nil, fmt.Errorf("dpbeam: %w", err)
	}
	return a, nil
}

func (f *statsFn) ExtractOutput(m *suffstat.Moments) ([]byte, error) {
	return m.MarshalBinary()
}

func encodeMoments(m *suffstat.Moments) ([]byte, error) { return m.MarshalBinary() }

func decodeMoments(b []byte) (*suffstat.Moments, error) {
	var m suffstat.Moments
	if err := m.UnmarshalBinary(b); err != nil {
		return nil, err
	}
	return &m, nil
}
