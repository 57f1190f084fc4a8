// Package experiment reproduces the central-setting experiments of the seed
// papers: the Gaussian FM seed's Figures A1-A2 (noise per order vs
// dimension), Figures 1-2 and A3 (utility vs noise, training size and δ),
// the FM seed's Figures 4-9 (error and time vs dimensionality, cardinality
// and ε), the DP-IRLS seed's Figure 1, and the capeFM figures of the
// Gaussian FM seed (Figures 3-5 and A4: capefm-linear, capefm-logistic,
// capefm-sites), where every decentralised fit is a real in-process run of
// the capefm protocol.
//
// Run executes a named experiment (or "all") over a worker pool and writes,
// per experiment, a CSV of mean and standard deviation over runs, a figure
// as PNG and SVG (gonum/plot; log axes where the papers use them, error
// bars of one standard deviation, noisy gradient descent's overall ε on a
// right-hand axis drawn by hand) and a markdown summary that sets each
// paper claim beside the measured number.
//
// Randomness: with Options.Seeded every job draws its privacy noise from
// noise.NewInsecureSeeded (derived from the seed and the job index, so the
// numbers do not depend on scheduling) and every output says so; otherwise
// noise.NewSecure. Data shuffling and synthetic data use math/rand/v2: they
// are not privacy noise.
//
// Datasets: the papers' datasets are not available offline; the real data
// are the example CSVs (embedded in package exampledata; Options.DataDir
// reads them from a directory instead), encoded with the public schemas
// embedded from exampledata/schemas (declared ranges, never read off the
// data), and the synthetic data of the Gaussian FM seed's Appendix B are
// generated here.
package experiment
