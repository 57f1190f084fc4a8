package regress

import (
	"context"
	"errors"
	"fmt"

	"github.com/dplearn/dplearn/report"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/synth"
)

// HistogramOptions are the public parameters of the two synthetic-data
// baselines of the FM seed's experiments, dpme and filter-priority. Zero
// values mean the documented defaults.
type HistogramOptions struct {
	// Domain is the public grid. When nil, it is built from Schema
	// (synth.FromSchema); when Schema is nil too, from the unit-ball bound
	// alone (synth.UnitBall, with a warning: it cannot tell the intercept
	// and indicator columns from numeric ones).
	Domain *synth.Domain
	Schema *schema.Schema
	// Bins overrides the bins per binned axis (0: the mechanism's rule).
	Bins int
	// MaxCells caps dpme's dense grid (0: synth.DefaultMaxDenseCells).
	MaxCells int
	// Theta is filter-priority's threshold (0: synth.ThresholdFor(ε, M, N)).
	Theta int64
	// SampleSize is filter-priority's priority-sample size (0: N).
	SampleSize int
}

// WithSchema returns est with the schema's public domain when est is a
// histogram baseline (dpme, filter-priority) without one, and est unchanged
// otherwise. The CLI calls it so that the grid knows the intercept and the
// categorical columns.
func WithSchema(est Estimator, s *schema.Schema) Estimator {
	switch e := est.(type) {
	case dpmeEstimator:
		if e.opt.Schema == nil {
			e.opt.Schema = s
		}
		return e
	case filterPriority:
		if e.opt.Schema == nil {
			e.opt.Schema = s
		}
		return e
	}
	return est
}

// NewDPME returns the dpme estimator with the given options.
func NewDPME(opt HistogramOptions) Estimator { return dpmeEstimator{opt: opt} }

// dpmeEstimator is DPME (Lei, "Differentially private M-estimators", NIPS
// 2011), the FM seed's first baseline: a Laplace-perturbed histogram of the
// encoded rows (x, y) over every cell of a public grid, synthetic data made
// of the cell representatives weighted by the noisy counts, and the model
// fitted on the synthetic data (weighted least squares; weighted logistic
// maximum likelihood).
//
// Privacy: the count vector has L1 sensitivity 2 under replace-one
// (synth.HistogramSensitivity), the Laplace scale is
// accounting.LaplaceScale(ε, 2) (grid slack included), so the histogram is
// pure ε-DP and everything after it is post-processing. An all-zero row (a
// record dropped for a missing value) falls in no cell and is not counted
// (withoutZeroRows): the sensitivity is unchanged.
//
// Grid: synth.LeiBins, about N/ln N cells (Lei's bandwidth; see its doc).
// Cost: Θ(cells) time and memory for the noise, which grows as bins^p in
// the number p of binned axes (and ×c per categorical feature with c
// levels). Grids above HistogramOptions.MaxCells (default 2^22) are
// refused with an error naming the limit.
type dpmeEstimator struct{ opt HistogramOptions }

func (dpmeEstimator) Name() string        { return "dpme" }
func (dpmeEstimator) NeedsRows(Kind) bool { return true }
func (dpmeEstimator) Private() bool       { return true }

func (e dpmeEstimator) Fit(ctx context.Context, data Data, cfg Config) (*Result, error) {
	bins := func(n int64) func(int, float64) int {
		return func(binned int, levels float64) int { return synth.LeiBins(n, binned, levels) }
	}
	return fitHistogramBaseline(ctx, "dpme", data, cfg, e.opt, bins, e.release)
}

func (e dpmeEstimator) release(h *synth.Histogram, dom *synth.Domain, cells uint64, _ int64, cfg Config) (*synth.Synthetic, report.Privacy, error) {
	dense, err := synth.PerturbDense(h, dom, cfg.Epsilon, cfg.Source, e.opt.MaxCells)
	if err != nil {
		return nil, report.Privacy{}, err
	}
	p := report.Privacy{
		Mechanism:  "dpme (DPME: perturbed histogram and synthetic data, Lei 2011)",
		Private:    true,
		Epsilon:    cfg.Epsilon,
		Accountant: "Laplace mechanism on every cell of the histogram, L1 sensitivity 2 under replace-one (pure ε-DP)",
		Releases: []report.Release{{
			Name: fmt.Sprintf("histogram counts on a %d-cell grid (%s)", cells, dom.Describe()), Entries: int(cells), Norm: "L1",
			Sensitivity: synth.HistogramSensitivity, Noise: "laplace", Scale: dense.Scale,
		}},
		PostProcessing: []string{
			"negative noisy counts dropped; synthetic data = cell representatives (bin centres, declared levels) weighted by the noisy counts",
		},
	}
	return dense.Synthesize(dom), p, nil
}

// histogramRelease is one baseline's private step: from the histogram on
// the public grid (cells cells, n rows) to synthetic data and the report of
// what was released.
type histogramRelease func(h *synth.Histogram, dom *synth.Domain, cells uint64, n int64, cfg Config) (*synth.Synthetic, report.Privacy, error)

// fitHistogramBaseline is the pipeline both baselines share: public grid,
// histogram, release (noise), synthetic data, fit, report.
func fitHistogramBaseline(ctx context.Context, name string, data Data, cfg Config, opt HistogramOptions,
	bins func(n int64) func(int, float64) int, release histogramRelease) (*Result, error) {
	rows, dom, warns, err := histogramInput(data, cfg, opt, bins)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	h, err := synth.Build(dom, rows)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cells, _ := dom.Cells()
	syn, p, err := release(h, dom, cells, data.Stats.N(), cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	coef, fitWarn, err := fitSynthetic(ctx, cfg.Kind, syn)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	p.PostProcessing = append(p.PostProcessing, "model fitted on the synthetic data: "+synthFitName(cfg.Kind))
	p.Neighbouring = report.Neighbouring
	p.Randomness, p.Insecure = randomness(cfg.Source)
	if cfg.Delta > 0 {
		p.Notes = append(p.Notes, "pure ε-DP; the δ given was not used")
	}
	return &Result{Coef: coef, Privacy: p, Warnings: append(warns, fitWarn...)}, nil
}

// histogramInput validates the configuration and returns the rows and the
// public grid. bins gives the bins rule for N rows.
func histogramInput(data Data, cfg Config, opt HistogramOptions, bins func(n int64) func(int, float64) int) ([]float64, *synth.Domain, []string, error) {
	if err := cfg.validate(data, true); err != nil {
		return nil, nil, nil, err
	}
	k := data.Stats.K()
	n := data.Stats.N()
	if len(data.Rows) == 0 || len(data.Rows) != int(n)*k {
		return nil, nil, nil, errors.New("needs the encoded rows (Data.Rows), one per counted record")
	}
	rule := bins(n)
	if opt.Bins > 0 {
		rule = func(int, float64) int { return opt.Bins }
	}
	var warns []string
	dom := opt.Domain
	var err error
	switch {
	case dom != nil:
		dom = withBins(dom, rule)
	case opt.Schema != nil:
		if dom, err = synth.FromSchema(opt.Schema, rule); err != nil {
			return nil, nil, nil, err
		}
	default:
		if dom, err = synth.UnitBall(k, cfg.Kind == Logistic, rule); err != nil {
			return nil, nil, nil, err
		}
		warns = append(warns, "no schema given: every column binned over the unit-ball bound [−1, 1], the intercept and indicators included (their synthetic values are bin centres); give the schema for a faithful grid")
	}
	if dom.Width() != k {
		return nil, nil, nil, fmt.Errorf("the grid covers %d columns but the rows have %d", dom.Width(), k)
	}
	return withoutZeroRows(data.Rows, k), dom, warns, nil
}

// withoutZeroRows returns the rows (width k) that are not all zero: rows
// unchanged when none is.
//
// An all-zero row is a record dropped for a missing value ("missing":
// "drop", or a bad row with --skip-bad-rows): the reader keeps it so that N
// stays the number of records read (see the schema package doc). Its
// intercept slot is 0, which is no level of the grid's intercept axis, so
// it has no cell; before, synth.Build then refused the whole table, and
// whether a model existed depended on one record. Such a row belongs to a
// null cell that is neither counted nor synthesised. Privacy: each row is
// mapped to a cell or to the null cell by itself, so replacing one record
// still changes at most two counts by one each (L1 sensitivity 2, as
// synth.HistogramSensitivity states), N is the public number of records,
// and nothing counts the null cell. Utility: an all-zero row adds nothing
// to Σ x xᵀ or Σ y x and a constant to the logistic loss, so leaving it out
// changes neither synthetic objective's minimiser.
func withoutZeroRows(rows []float64, k int) []float64 {
	zero := func(r []float64) bool {
		for _, v := range r {
			if v != 0 {
				return false
			}
		}
		return true
	}
	var out []float64
	for i := 0; i+k <= len(rows); i += k {
		r := rows[i : i+k]
		switch {
		case !zero(r) && out != nil:
			out = append(out, r...)
		case zero(r) && out == nil:
			out = make([]float64, i, len(rows)-k)
			copy(out, rows[:i])
		}
	}
	if out == nil {
		return rows
	}
	return out
}

// withBins returns a copy of d whose binned axes with Bins = 0 get the
// rule's bins.
func withBins(d *synth.Domain, rule func(int, float64) int) *synth.Domain {
	c := &synth.Domain{Axes: append([]synth.Axis(nil), d.Axes...)}
	binned, levels := 0, 1.0
	for _, a := range c.Axes {
		switch {
		case a.Levels != nil:
			levels *= float64(len(a.Levels))
		case a.Bins == 0:
			binned++
		default:
			levels *= float64(a.Bins)
		}
	}
	if binned == 0 {
		return c
	}
	m := rule(binned, levels)
	for i := range c.Axes {
		if c.Axes[i].Levels == nil && c.Axes[i].Bins == 0 {
			c.Axes[i].Bins = m
		}
	}
	return c
}

func synthFitName(k Kind) string {
	if k == Linear {
		return "weighted least squares"
	}
	return "weighted logistic maximum likelihood (Newton's method)"
}

// fitSynthetic fits the model on weighted synthetic rows. Empty synthetic
// data (every noisy count dropped) gives the zero model and a warning.
func fitSynthetic(ctx context.Context, kind Kind, syn *synth.Synthetic) ([]float64, []string, error) {
	k := syn.Width
	d := k - 1
	if syn.TotalWeight() <= 0 {
		return make([]float64, d), []string{"the synthetic data are empty (the noise removed every cell): the zero model is returned"}, nil
	}
	if kind == Linear {
		q := weightedQuadratic(syn)
		w, trimmed, err := q.Minimize(PostProcess{RelTol: exactRelTol})
		if err != nil {
			return nil, nil, err
		}
		var warns []string
		if trimmed > 0 {
			warns = append(warns, fmt.Sprintf("%d collinear direction(s) in the synthetic data: the minimum-norm least-squares solution is returned", trimmed))
		}
		return w, warns, nil
	}
	w, gnorm, err := logisticNewton(ctx, syn.Rows, syn.Width, 0, nil, 100, syn.Weights)
	if err != nil {
		return nil, nil, err
	}
	var warns []string
	switch {
	case maxAbs(w) > 1e3:
		warns = append(warns, "the synthetic classes look linearly separable: the iterate after 100 Newton steps is returned")
	case gnorm > 1e-8:
		warns = append(warns, fmt.Sprintf("Newton's method on the synthetic data did not converge in 100 steps (gradient norm %.3g)", gnorm))
	}
	return w, warns, nil
}

// weightedQuadratic is the linear least-squares objective of weighted rows:
// Λ1 = −2Σw y x/W, Λ2 = Σw x xᵀ/W.
func weightedQuadratic(syn *synth.Synthetic) *Quadratic {
	k := syn.Width
	d := k - 1
	q := &Quadratic{D: d, Lambda1: make([]float64, d), Upper: make([]float64, d*(d+1)/2)}
	W := syn.TotalWeight()
	for r, wt := range syn.Weights {
		z := syn.Rows[r*k : (r+1)*k]
		y := z[d]
		c := wt / W
		q.Lambda0 += c * y * y
		for i := 0; i < d; i++ {
			q.Lambda1[i] -= 2 * c * y * z[i]
			for j := i; j < d; j++ {
				q.Upper[packedIndex(d, i, j)] += c * z[i] * z[j]
			}
		}
	}
	return q
}

// NewWithDomain returns est with an explicit public grid when est is a
// histogram baseline, and est unchanged otherwise. Axes of a binned axis
// with Bins = 0 get the mechanism's bins rule.
func NewWithDomain(est Estimator, d *synth.Domain) Estimator {
	switch e := est.(type) {
	case dpmeEstimator:
		e.opt.Domain = d
		return e
	case filterPriority:
		e.opt.Domain = d
		return e
	}
	return est
}
