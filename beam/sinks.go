package dpbeam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dplearn/dplearn/fit"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/statsfile"
	"github.com/dplearn/dplearn/suffstat"
)

func init() {
	register.DoFn3x1[context.Context, []byte, func(*[]byte) bool, error](&writeStatsFn{})
	register.DoFn3x1[context.Context, []byte, func(*[]byte) bool, error](&fitFn{})
	register.Iter1[[]byte]()
}

// sinkInput runs a sink once, on an impulse, with the statistics as a side
// input: a combine of no rows outputs nothing, and the sink must then fail
// rather than never run.
func sinkInput(s beam.Scope, stats beam.PCollection) (beam.PCollection, beam.SideInput) {
	return beam.Impulse(s), beam.SideInput{Input: stats}
}

// sinkArgs parses a sink's schema and returns the statistics.
func sinkArgs(schemaJSON string, stats func(*[]byte) bool) (*schema.Schema, *suffstat.Moments, error) {
	sch, err := schema.Parse([]byte(schemaJSON))
	if err != nil {
		return nil, nil, err
	}
	m, err := theStats(stats)
	return sch, m, err
}

// theStats returns the single statistics element of the side input.
func theStats(iter func(*[]byte) bool) (*suffstat.Moments, error) {
	var b []byte
	if !iter(&b) {
		return nil, errors.New("dpbeam: the input files hold no data rows")
	}
	var extra []byte
	if iter(&extra) {
		return nil, errors.New("dpbeam: more than one statistics element (the combine is global)")
	}
	return decodeStats(b)
}

// local reports whether path is on the local filesystem (no scheme).
func local(path string) bool { return !strings.Contains(path, "://") }

// writeFile writes data at a non-local path through the Beam filesystem.
func writeFile(ctx context.Context, path string, data []byte) error {
	fs, err := filesystem.New(ctx, path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	defer fs.Close()
	w, err := fs.OpenWrite(ctx, path)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

func decodeStats(b []byte) (*suffstat.Moments, error) {
	m, err := decodeMoments(b)
	if err != nil {
		return nil, err
	}
	if m.N() == 0 {
		return nil, errors.New("dpbeam: the input files hold no data rows")
	}
	return m, nil
}

// WriteStats adds a step that writes the statistics (the output of
// Statistics) to the PRIVATE statistics file at path: locally with mode
// 0600 through an atomic rename (package statsfile); on another filesystem
// (gs://, ...) through Beam's, where the bucket's access control is what
// protects it (docs/beam.md).
func WriteStats(s beam.Scope, stats beam.PCollection, o Options, path string) error {
	_, sj, err := o.check()
	if err != nil {
		return err
	}
	if o.Unit != nil {
		return errUnitStatsFile
	}
	s = s.Scope("dplearn.WriteStats")
	imp, side := sinkInput(s, stats)
	beam.ParDo0(s, &writeStatsFn{SchemaJSON: sj, SkipBadRows: o.SkipBadRows, Path: path}, imp, side)
	return nil
}

type writeStatsFn struct {
	SchemaJSON  string
	SkipBadRows bool
	Path        string
}

func (f *writeStatsFn) ProcessElement(ctx context.Context, _ []byte, stats func(*[]byte) bool) error {
	sch, m, err := sinkArgs(f.SchemaJSON, stats)
	if err != nil {
		return err
	}
	st := statsfile.Stats{Moments: m, SkipBadRows: f.SkipBadRows}
	if local(f.Path) {
		return statsfile.Write(f.Path, sch, st)
	}
	data, err := statsfile.Encode(sch, st)
	if err != nil {
		return err
	}
	return writeFile(ctx, f.Path, data)
}

// FitSpec is what the Fit step needs besides the statistics: the public
// parameters of a statistics-only mechanism, as flags give them; FitModel
// maps them to a fit.Request, so the pipeline refuses and reports exactly
// what `dplearn fit --stats` does. It is serialised into the pipeline, so
// it holds no secrets.
type FitSpec struct {
	Model        string  // linear or logistic
	Mechanism    string  // a mechanism that needs only the statistics (fm, gaussian-fm, ...)
	Epsilon      float64 // ε of the whole release (the fit and the intervals' share)
	Delta        float64 // δ (Gaussian mechanisms)
	Lambda       float64 // ridge λ; negative: the mechanism's default
	LambdaFactor float64 // λ = this × the noise std when Lambda < 0 (0: the default)
	Split        float64 // gaussian-fm's budget share of Λ1 (0: the default)
	// CIShare is the share of Epsilon spent on the target moment Λ0 that
	// linear FM-family confidence intervals need (fit.DefaultCIShare is
	// the CLI's default; 0: no intervals, the fit keeps the whole ε).
	CIShare float64
	// NoStructure turns off the projection of the released Λ2 onto the
	// identities the schema's encoding implies (regress.GramStructureFor),
	// which `dplearn fit` applies by default (--no-schema-structure).
	NoStructure bool
	// Seeded selects the deterministic INSECURE generator with Seed
	// (experiments only; the report says so). Otherwise the noise comes
	// from crypto/rand on the worker that runs the step.
	Seeded bool
	Seed   uint64
	Out    string // the model file (any Beam filesystem)
}

// Request maps the spec to the fit.Request `dplearn fit` would make from
// the same flags. An option is given (and refused by a mechanism that does
// not read it) when it differs from the mechanism's default; zero
// LambdaFactor and Split mean the default.
func (f FitSpec) Request(kind regress.Kind, skipBadRows bool) fit.Request {
	opts := map[string]any{"lambda": f.Lambda}
	if f.LambdaFactor != 0 {
		opts["lambda-factor"] = f.LambdaFactor
	}
	if f.Split != 0 {
		opts["split"] = f.Split
	}

	return fit.Request{Kind: kind, Mechanism: f.Mechanism, Epsilon: f.Epsilon, Delta: f.Delta, Options: opts,
		CIShare: f.CIShare, NoStructure: f.NoStructure, Seeded: f.Seeded, Seed: f.Seed,
		SkipBadRows: skipBadRows, NoForecast: true}
}

// Validate checks the spec before the pipeline runs: what fit.Check and
// fit.CheckTarget refuse, a mechanism that needs the rows, and no --out.
func (f FitSpec) Validate(s *schema.Schema) (regress.Kind, regress.Estimator, error) {
	kind, err := regress.ParseKind(f.Model)
	if err != nil {
		return "", nil, fmt.Errorf("--model: %w", err)
	}
	if err := fit.CheckTarget(kind, s); err != nil {
		return "", nil, err
	}
	est, err := regress.New(f.Mechanism)
	if err != nil {
		return "", nil, fmt.Errorf("--mechanism: %w", err)
	}
	if f.Request(kind, false).NeedsRows() {
		return "", nil, fmt.Errorf("--mechanism %s needs the rows, not only their statistics: it cannot run on Beam (use dplearn fit --data)", f.Mechanism)
	}
	if err := fit.Check(f.Request(kind, false)); err != nil {
		return "", nil, err
	}
	if f.Out == "" {
		return "", nil, errors.New("--out: no model file given")
	}
	return kind, est, nil
}

// FitModel runs fit.Run on the statistics and returns the model with its
// coefficient table and privacy report, exactly as `dplearn fit --stats`
// does from the same statistics (same refusals, e.g. δ ≥ 1/N; same
// intervals, notes and warnings).
func FitModel(ctx context.Context, s *schema.Schema, m *suffstat.Moments, spec FitSpec, skipBadRows bool) (*regress.Model, error) {
	kind, _, err := spec.Validate(s)
	if err != nil {
		return nil, err
	}
	// The pipeline's statistics are a statistics file's (WriteStatsFile
	// writes the same): bad rows left out, dropped records not counted.
	res, err := fit.Run(ctx, spec.Request(kind, skipBadRows), fit.Data{Data: regress.Data{Stats: m}, FromStatsFile: true}, s)
	if err != nil {
		return nil, err
	}
	return res.Model, nil
}

// Fit adds a step that fits spec's mechanism to the statistics (the output
// of Statistics) and writes the model file: the un-noised statistics never
// leave the pipeline. The noise is drawn on the worker that runs the step;
// if the runner retries the step after the file was written, the file is
// replaced by a fresh fit (a second release: see docs/beam.md).
func Fit(s beam.Scope, stats beam.PCollection, o Options, spec FitSpec) error {
	_, sj, err := o.check()
	if err != nil {
		return err
	}
	if o.Unit != nil {
		return errors.New("dpbeam: with Options.Unit, fit the outputs of UnitStatistics with FitUnits")
	}
	if _, _, err := spec.Validate(o.Schema); err != nil {
		return err
	}
	s = s.Scope("dplearn.Fit")
	imp, side := sinkInput(s, stats)
	beam.ParDo0(s, &fitFn{SchemaJSON: sj, SkipBadRows: o.SkipBadRows, Spec: spec}, imp, side)
	return nil
}

type fitFn struct {
	SchemaJSON  string
	SkipBadRows bool
	Spec        FitSpec
}

func (f *fitFn) ProcessElement(ctx context.Context, _ []byte, stats func(*[]byte) bool) error {
	sch, m, err := sinkArgs(f.SchemaJSON, stats)
	if err != nil {
		return err
	}
	model, err := FitModel(ctx, sch, m, f.Spec, f.SkipBadRows)
	if err != nil {
		return err
	}
	return saveModel(ctx, f.Spec.Out, model)
}

// saveModel writes the model file at out (any Beam filesystem).
func saveModel(ctx context.Context, out string, model *regress.Model) error {
	if local(out) {
		return model.Save(out)
	}
	data, err := json.MarshalIndent(model, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(ctx, out, append(data, '\n'))
}
