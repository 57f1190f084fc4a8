// Package synth builds differentially private synthetic data from
// histograms of encoded rows, for the two baselines of the Functional
// Mechanism seed's experiments:
//
//   - DPME (Lei, "Differentially private M-estimators", NIPS 2011): a
//     Laplace-perturbed histogram over every cell of a public grid
//     (PerturbDense), whose cell representatives weighted by the noisy
//     counts are the synthetic data (Dense.Synthesize).
//   - Filter-Priority (Cormode, Procopiuc, Srivastava & Tran, ICDT 2012):
//     geometric noise on the histogram, a high-pass filter at threshold θ
//     (Filter.Apply), priority sampling of the survivors (PrioritySample)
//     and synthetic data from the sample (SynthesizeEntries). The filter
//     never materialises the empty cells: it samples which of them pass the
//     threshold by exact geometric skips, so memory and time are
//     O(N + expected survivors) whatever the domain size.
//
// The grid (Domain) is public: it comes from the schema (FromSchema) or the
// unit-ball bound (UnitBall), never from the data. A histogram has L1
// sensitivity 2 under the project's replace-one neighbouring relation
// (HistogramSensitivity).
package synth
