package dpbeam

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"

	"github.com/dplearn/dplearn/noise"
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

// FitSpec is what the Fit step needs besides the statistics: the
// regress.Config fields a statistics-only mechanism uses, as flags give
// them. It is serialised into the pipeline, so it holds no secrets.
type FitSpec struct {
	Model        string  // linear or logistic
	Mechanism    string  // a mechanism that needs only the statistics (fm, gaussian-fm, ...)
	Epsilon      float64 // ε
	Delta        float64 // δ (Gaussian mechanisms)
	Lambda       float64 // ridge λ; negative: the mechanism's default
	LambdaFactor float64 // λ = this × the noise std when Lambda < 0
	Split        float64 // gaussian-fm's budget share of Λ1
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

// Validate checks the spec before the pipeline runs.
func (f FitSpec) Validate(s *schema.Schema) (regress.Kind, regress.Estimator, error) {
	kind, err := regress.ParseKind(f.Model)
	if err != nil {
		return "", nil, fmt.Errorf("--model: %w", err)
	}
	switch {
	case kind == regress.Logistic && !s.Target.Binary():
		return "", nil, fmt.Errorf("--model logistic needs a binary target; the schema gives %q a range (declare \"positive\" instead)", s.Target.Name)
	case kind != regress.Logistic && s.Target.Binary():
		return "", nil, fmt.Errorf("--model %s needs a continuous target with a declared range; the schema declares %q as binary", kind, s.Target.Name)
	}
	est, err := regress.New(f.Mechanism)
	if err != nil {
		return "", nil, fmt.Errorf("--mechanism: %w", err)
	}
	if est.NeedsRows(kind) {
		return "", nil, fmt.Errorf("--mechanism %s needs the rows, not only their statistics: it cannot run on Beam (use dplearn fit --data)", f.Mechanism)
	}
	if est.Private() && (!(f.Epsilon > 0) || math.IsInf(f.Epsilon, 0)) {
		return "", nil, fmt.Errorf("--epsilon must be a finite number > 0, got %v", f.Epsilon)
	}
	if f.Out == "" {
		return "", nil, errors.New("--out: no model file given")
	}
	return kind, est, nil
}

// FitModel runs the mechanism on the statistics and returns the model with
// its privacy report, exactly as `dplearn fit` does from the same
// statistics (same notes and warnings).
func FitModel(ctx context.Context, s *schema.Schema, m *suffstat.Moments, spec FitSpec, skipBadRows bool) (*regress.Model, error) {
	kind, est, err := spec.Validate(s)
	if err != nil {
		return nil, err
	}
	var src noise.Source = noise.NewSecure()
	if spec.Seeded {
		src = noise.NewInsecureSeeded(spec.Seed)
	}
	cfg := regress.Config{Kind: kind, Epsilon: spec.Epsilon, Delta: spec.Delta, Lambda: spec.Lambda,
		LambdaFactor: spec.LambdaFactor, Split: spec.Split, Source: src}
	if !spec.NoStructure {
		if cfg.Structure, err = regress.GramStructureFor(s); err != nil {
			return nil, err
		}
	}
	res, err := est.Fit(ctx, regress.Data{Stats: m}, cfg)
	if err != nil {
		return nil, err
	}
	n := m.N()
	if est.Private() && skipBadRows {
		res.Privacy.Notes = append(res.Privacy.Notes,
			"fitted with --skip-bad-rows: the guarantee treats the number of encoded rows N as public; if the number of bad rows is not public knowledge, N reveals something about the data and is not covered")
	}
	if est.Private() && spec.Delta > 0 && spec.Delta >= 1/float64(n) {
		res.Warnings = append(res.Warnings, fmt.Sprintf("δ = %g is not small next to 1/N = %g: such a guarantee permits publishing a whole record with probability δ", spec.Delta, 1/float64(n)))
	}
	return regress.NewModel(kind, s, res, regress.Training{Rows: n})
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
	if local(f.Spec.Out) {
		return model.Save(f.Spec.Out)
	}
	data, err := json.MarshalIndent(model, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(ctx, f.Spec.Out, append(data, '\n'))
}
