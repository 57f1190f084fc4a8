package dpbeam

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/fileio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/transforms/stats"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/fit"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*unitRow)(nil)).Elem())
	register.DoFn3x1[context.Context, fileio.FileMetadata, func(string, unitRow), error](&unitReadFn{})
	register.Emitter2[string, unitRow]()
	register.DoFn4x1[context.Context, string, func(*unitRow) bool, func(*suffstat.Moments), error](&unitSelectFn{})
	register.Iter1[unitRow]()
	register.DoFn4x1[context.Context, []byte, func(*[]byte) bool, func(*int) bool, error](&unitFitFn{})
	register.Iter1[int]()
}

// Unit bounds each privacy unit's contribution, as `dplearn fit
// --privacy-unit COLUMN --max-rows-per-unit K` does (dataset.UnitMoments):
// the rows are keyed by the unit column, each unit's rows are gathered
// (a GroupByKey: a unit's rows are held in one worker's memory), and of a
// unit with more than K rows the K chosen by dataset.UnitKeptRanks are
// kept, the rows of a unit ordered by (file path, row in the file). With
// one input file, or files that split one table in path order, that is the
// table's order, and the kept rows are those `dplearn fit` keeps under the
// same key.
//
// # The selection key
//
// Seeded: the key is the first dataset.UnitKeySize bytes of the INSECURE
// generator seeded with Seed, as `dplearn fit --seed` draws it
// (experiments only; the report says the run is seeded). Otherwise each
// instance of the selecting step draws its own key from crypto/rand when it
// starts (the key is never serialised into the pipeline nor written
// anywhere). Different units may then be chosen under different keys; the
// privacy argument of dataset.UnitMoments is unchanged, because each key is
// independent of the data and a unit's choice depends only on its key, its
// ID, its number of rows and their ranks: the other units' kept rows have
// the same distribution whether one unit's rows are replaced or not.
type Unit struct {
	Column  string // the unit column (it need not be in the schema)
	MaxRows int    // K: at most K rows per unit
	Seeded  bool
	Seed    uint64
}

func (u Unit) check() error {
	if u.Column == "" {
		return errors.New("dpbeam: privacy unit: no unit column")
	}
	if u.MaxRows < 1 {
		return fmt.Errorf("--privacy-unit %s needs --max-rows-per-unit K ≥ 1", u.Column)
	}
	return nil
}

// unitRow is one encoded row of a unit with its place in the input.
type unitRow struct {
	File  string
	Index int64
	Row   []float64
}

// UnitStatistics adds the steps that read the inputs, bound each unit of
// o.Unit to at most K rows and combine the kept rows' exact statistics.
// It returns the statistics (one element, suffstat.Moments.MarshalBinary
// bytes) and the number of units (one int: public, the N of the
// unit-level guarantee).
func UnitStatistics(s beam.Scope, o Options) (beam.PCollection, beam.PCollection, error) {
	k, sj, err := o.check()
	if err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	if o.Unit == nil {
		return beam.PCollection{}, beam.PCollection{}, errors.New("dpbeam: UnitStatistics needs Options.Unit")
	}
	if err := o.Unit.check(); err != nil {
		return beam.PCollection{}, beam.PCollection{}, err
	}
	s = s.Scope("dplearn.UnitStatistics")
	var files []beam.PCollection
	for _, glob := range o.Inputs {
		files = append(files, fileio.MatchFiles(s, glob, fileio.MatchEmptyDisallow()))
	}
	all := files[0]
	if len(files) > 1 {
		all = beam.Flatten(s, files...)
	}
	all = beam.Reshuffle(s, all)
	rows := beam.ParDo(s, &unitReadFn{SchemaJSON: sj, SkipBadRows: o.SkipBadRows, Workers: o.ReadWorkers, Column: o.Unit.Column}, all)
	grouped := beam.GroupByKey(s, rows)
	perUnit := beam.ParDo(s, &unitSelectFn{K: o.Unit.MaxRows, Width: k, Seeded: o.Unit.Seeded, Seed: o.Unit.Seed}, grouped)
	return beam.Combine(s, &statsFn{K: k}, perUnit), stats.CountElms(s, perUnit), nil
}

// unitReadFn reads one file as `dplearn fit --privacy-unit` does
// (records dropped for a missing value, and with SkipBadRows bad records,
// enter as all-zero rows of their unit) and emits each encoded row keyed
// by its unit.
type unitReadFn struct {
	SchemaJSON  string
	SkipBadRows bool
	Workers     int
	Column      string

	schema  *schema.Schema
	skipped beam.Counter
}

func (f *unitReadFn) Setup() (err error) {
	f.schema, f.skipped, err = setupRead(f.SchemaJSON)
	return err
}

func (f *unitReadFn) ProcessElement(ctx context.Context, file fileio.FileMetadata, emit func(string, unitRow)) error {
	path, cleanup, err := localCopy(ctx, file.Path)
	if err != nil {
		return err
	}
	defer cleanup()
	opt := dataset.Options{Workers: f.Workers, SkipBadRows: f.SkipBadRows, KeepBadRows: f.SkipBadRows,
		KeepDropped: true, Keep: []string{f.Column}}
	width := f.schema.Dim() + 1
	var idx int64
	sum, err := dataset.StreamBatches(ctx, path, f.schema, opt, func(b dataset.Batch) error {
		n := len(b.Rows) / width
		if len(b.Keep) != n {
			return fmt.Errorf("dpbeam: %s: %d unit IDs for %d rows", file.Path, len(b.Keep), n)
		}
		for i := 0; i < n; i++ {
			emit(b.Keep[i], unitRow{File: file.Path, Index: idx, Row: slices.Clone(b.Rows[i*width : (i+1)*width])})
			idx++
		}
		return nil
	})
	if errors.Is(err, dataset.ErrNoRows) || errors.Is(err, dataset.ErrNoHeader) {
		return nil // an empty shard
	}
	if err != nil {
		return fmt.Errorf("%s: %w", file.Path, err)
	}
	if sum.Skipped > 0 {
		f.skipped.Inc(ctx, sum.Skipped)
	}
	return nil
}

// localCopy returns a local path for path: itself when local, otherwise a
// temporary copy through the Beam filesystem (removed by cleanup).
func localCopy(ctx context.Context, path string) (string, func(), error) {
	if local(path) {
		return path, func() {}, nil
	}
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	defer fs.Close()
	rc, err := fs.OpenRead(ctx, path)
	if err != nil {
		return "", nil, fmt.Errorf("%s: %w", path, err)
	}
	defer rc.Close()
	tmp, err := os.CreateTemp("", "dplearn-*-"+filepath.Base(path))
	if err != nil {
		return "", nil, err
	}
	cleanup := func() { tmp.Close(); os.Remove(tmp.Name()) }
	if _, err := io.Copy(tmp, rc); err != nil {
		cleanup()
		return "", nil, fmt.Errorf("%s: copy to a local file: %w", path, err)
	}
	return tmp.Name(), cleanup, nil
}

// unitSelectFn keeps at most K rows of one unit (dataset.UnitKeptRanks)
// and emits their exact statistics.
type unitSelectFn struct {
	K      int
	Width  int
	Seeded bool
	Seed   uint64

	key []byte // drawn in Setup; never serialised
}

func (f *unitSelectFn) Setup() error {
	var src io.Reader = noise.NewSecure()
	if f.Seeded {
		src = noise.NewInsecureSeeded(f.Seed)
	}
	f.key = make([]byte, dataset.UnitKeySize)
	if _, err := io.ReadFull(src, f.key); err != nil {
		return fmt.Errorf("dpbeam: privacy unit: draw the selection key: %w", err)
	}
	return nil
}

func (f *unitSelectFn) ProcessElement(ctx context.Context, id string, iter func(*unitRow) bool, emit func(*suffstat.Moments)) error {
	var rows []unitRow
	var r unitRow
	for iter(&r) {
		rows = append(rows, r)
		r = unitRow{}
	}
	// The unit's rows in input order: the ranks of dataset.UnitKeptRanks.
	slices.SortFunc(rows, func(a, b unitRow) int {
		return cmp.Or(cmp.Compare(a.File, b.File), cmp.Compare(a.Index, b.Index))
	})
	kept := make([]float64, 0, min(len(rows), f.K)*f.Width)
	for _, j := range dataset.UnitKeptRanks(f.key, id, int64(len(rows)), f.K) {
		if len(rows[j].Row) != f.Width {
			return fmt.Errorf("dpbeam: privacy unit: a row of width %d, want %d", len(rows[j].Row), f.Width)
		}
		kept = append(kept, rows[j].Row...)
	}
	m := suffstat.New(f.Width)
	if err := m.AddRows(kept); err != nil {
		return fmt.Errorf("dpbeam: %w", err)
	}
	m.Flush()
	emit(m)
	return ctx.Err()
}

// checkUnitSpec refuses what `dplearn fit --privacy-unit` refuses: a
// mechanism without a unit-level guarantee for the model (the one rule,
// regress.UnitSupported; Validate has already refused the mechanisms that
// need the rows), and confidence intervals where fit.CheckUnitIntervals
// refuses them (other mechanisms, dropped or zero rows).
func checkUnitSpec(est regress.Estimator, kind regress.Kind, spec FitSpec, u Unit, skipBadRows, zeroRows bool) error {
	if err := u.check(); err != nil {
		return err
	}
	if err := regress.UnitSupported(est, kind); err != nil {
		return fmt.Errorf("--privacy-unit: %w", err)
	}
	// Intervals under a unit: fit's rule, checked before reading.
	if err := fit.CheckUnitIntervals(spec.Request(kind, skipBadRows), u.Column, zeroRows); err != nil {
		return fmt.Errorf("--privacy-unit: %w", err)
	}
	return nil
}

// FitUnitModel runs fit.Run on the statistics of unit-bounded rows
// (UnitStatistics) of units units, wrapped by regress.UnitStats: the
// guarantee, the sensitivities and the report are those of `dplearn fit
// --privacy-unit` (N = units public; the rows per unit not released).
func FitUnitModel(ctx context.Context, s *schema.Schema, m *suffstat.Moments, units int64, u Unit, spec FitSpec, skipBadRows bool) (*regress.Model, error) {
	kind, est, err := spec.Validate(s)
	if err != nil {
		return nil, err
	}
	if err := checkUnitSpec(est, kind, spec, u, skipBadRows, s.DropsRecords() || skipBadRows); err != nil {
		return nil, err
	}
	st, err := regress.UnitStats(m, regress.PrivacyUnit{Column: u.Column, MaxRows: u.MaxRows, Units: units})
	if err != nil {
		return nil, err
	}
	// The rows were read here, dropped and bad records kept as zero rows:
	// not a statistics file's.
	res, err := fit.Run(ctx, spec.Request(kind, skipBadRows), fit.Data{Data: regress.Data{Stats: st}, N: units}, s)
	if err != nil {
		return nil, err
	}
	return res.Model, nil
}

// FitUnits adds a step that fits spec's mechanism at the unit level to the
// outputs of UnitStatistics and writes the model file, like Fit.
func FitUnits(s beam.Scope, stats, units beam.PCollection, o Options, spec FitSpec) error {
	_, sj, err := o.check()
	if err != nil {
		return err
	}
	if o.Unit == nil {
		return errors.New("dpbeam: FitUnits needs Options.Unit")
	}
	kind, est, err := spec.Validate(o.Schema)
	if err != nil {
		return err
	}
	if err := checkUnitSpec(est, kind, spec, *o.Unit, o.SkipBadRows, o.Schema.DropsRecords() || o.SkipBadRows); err != nil {
		return err
	}
	s = s.Scope("dplearn.FitUnits")
	imp := beam.Impulse(s)
	beam.ParDo0(s, &unitFitFn{SchemaJSON: sj, SkipBadRows: o.SkipBadRows, Spec: spec, Unit: *o.Unit}, imp,
		beam.SideInput{Input: stats}, beam.SideInput{Input: units})
	return nil
}

type unitFitFn struct {
	SchemaJSON  string
	SkipBadRows bool
	Spec        FitSpec
	Unit        Unit
}

func (f *unitFitFn) ProcessElement(ctx context.Context, _ []byte, stats func(*[]byte) bool, units func(*int) bool) error {
	sch, m, err := sinkArgs(f.SchemaJSON, stats)
	if err != nil {
		return err
	}
	var n int
	if !units(&n) {
		return errors.New("dpbeam: the input files hold no data rows")
	}
	model, err := FitUnitModel(ctx, sch, m, int64(n), f.Unit, f.Spec, f.SkipBadRows)
	if err != nil {
		return err
	}
	return saveModel(ctx, f.Spec.Out, model)
}
