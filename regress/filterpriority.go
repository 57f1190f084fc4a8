package regress

import (
	"context"
	"fmt"

	"github.com/dplearn/dplearn/report"
	"github.com/dplearn/dplearn/synth"
)

// DefaultFPBins is filter-priority's default number of bins per binned axis
// (numeric features, continuous target). Cormode et al. take the domain as
// given (a contingency table of discrete attributes); for numeric columns
// we use a fixed, data-independent resolution that is finer than DPME's,
// which is the sparse-domain setting their filter is built for.
const DefaultFPBins = 16

// NewFilterPriority returns the filter-priority estimator with the given
// options.
func NewFilterPriority(opt HistogramOptions) Estimator { return filterPriority{opt: opt} }

// filterPriority is Filter-Priority (Cormode, Procopiuc, Srivastava & Tran,
// "Differentially private summaries for sparse data", ICDT 2012), the FM
// seed's second baseline: geometric noise on every cell of the histogram of
// the encoded rows, a high-pass filter keeping the noisy counts ≥ θ,
// priority sampling of s survivors, and the model fitted on the synthetic
// data formed by the sampled cells' representatives with their adjusted
// weights.
//
// Privacy: two-sided geometric noise with α = e^{−ε/2} (L1 sensitivity 2
// under replace-one) on every cell makes the noisy table ε-DP; the filter
// is computed without materialising the empty cells (synth.Filter, which
// proves that its exact skip sampler keeps the guarantee at exactly ε);
// priority sampling and the fit are post-processing.
//
// Parameters: θ = synth.ThresholdFor(ε, M, N), the smallest θ ≥ 2 for which
// at most N empty cells are expected to pass (Cormode et al. set θ from the
// size of summary wanted; we want a summary of about the data's size), and
// s = N. Cost: O(N + expected survivors) time and memory, independent of
// the domain size M ≤ 2^62.
type filterPriority struct{ opt HistogramOptions }

func (filterPriority) Name() string        { return "filter-priority" }
func (filterPriority) NeedsRows(Kind) bool { return true }
func (filterPriority) Private() bool       { return true }

func (e filterPriority) Fit(ctx context.Context, data Data, cfg Config) (*Result, error) {
	bins := func(int64) func(int, float64) int {
		return func(int, float64) int { return DefaultFPBins }
	}
	return fitHistogramBaseline(ctx, "filter-priority", data, cfg, e.opt, bins, e.release)
}

func (e filterPriority) release(h *synth.Histogram, dom *synth.Domain, cells uint64, n int64, cfg Config) (*synth.Synthetic, report.Privacy, error) {
	theta := e.opt.Theta
	if theta == 0 {
		theta = synth.ThresholdFor(cfg.Epsilon, cells, float64(n))
	}
	f, err := synth.NewFilter(cfg.Epsilon, theta, cells)
	if err != nil {
		return nil, report.Privacy{}, err
	}
	entries, err := f.Apply(h, cfg.Source)
	if err != nil {
		return nil, report.Privacy{}, err
	}
	s := e.opt.SampleSize
	if s <= 0 {
		s = int(n)
	}
	sample, _, err := synth.PrioritySample(entries, s, cfg.Source)
	if err != nil {
		return nil, report.Privacy{}, err
	}
	p := report.Privacy{
		Mechanism: "filter-priority (Filter-Priority summary and synthetic data, Cormode, Procopiuc, Srivastava & Tran 2012)",
		Private:   true,
		Epsilon:   cfg.Epsilon,
		Accountant: "geometric mechanism on every cell of the histogram, L1 sensitivity 2 under replace-one (pure ε-DP); " +
			"empty cells pass the filter with probability p′ = 1 − e^{−γ′} ∈ [p, p(1 + 2^-60)], p = α^θ/(1+α), sampled exactly, proved to keep ε",
		Releases: []report.Release{{
			Name:    fmt.Sprintf("histogram counts on a %d-cell grid (%s), only those ≥ θ = %d published", cells, dom.Describe(), theta),
			Entries: int(cells), Norm: "L1", Sensitivity: synth.HistogramSensitivity,
			Noise: "two-sided geometric (discrete Laplace)", Scale: 2 / cfg.Epsilon,
		}},
		PostProcessing: []string{
			fmt.Sprintf("priority sampling (Duffield, Lund & Thorup) of %d published cells, weights adjusted to max(count, τ)", s),
			"synthetic data = sampled cells' representatives (bin centres, declared levels) with their adjusted weights",
		},
	}
	return synth.SynthesizeEntries(dom, sample), p, nil
}
