package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/experiment"
)

// newExperimentCmd builds `dplearn experiment NAME`.
func newExperimentCmd() *cobra.Command {
	var (
		runs      int
		seed      uint64
		out       string
		quick     bool
		dataDir   string
		workers   int
		replot    bool
		getFormat func() (outputFormat, error)
	)
	cmd := &cobra.Command{
		Use:   "experiment NAME|all",
		Short: "Reproduce the seed papers' central-setting experiments (CSV, PNG/SVG plot, markdown)",
		Long: `experiment reruns a figure of the seed papers on the data available offline and
writes, into --out, NAME.csv (mean and sd over runs per point), NAME.png and
NAME.svg (the figure) and NAME.md (a summary that puts each paper claim beside
the measured number).

Experiments:
  ` + strings.Join(experiment.Describe(), "\n  ") + `

Runs are spread over all cores; a progress bar goes to stderr when it is a
terminal. Without --seed the noise comes from crypto/rand; with --seed S every
run is reproducible and the outputs are marked as produced with insecure
randomness (never use seeded noise for a real release). --quick uses smaller
grids and fewer runs: "experiment all --quick" takes a few minutes on 2 cores.

The example CSVs are read from --data-dir (default: ../shared/data next to
the repository).

Example:
  dplearn experiment gfm-noise-vs-dim --out docs/figures
  dplearn experiment all --quick --seed 1 --out /tmp/exp`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := getFormat()
			if err != nil {
				return err
			}
			if runs < 0 {
				return fmt.Errorf("--runs must be ≥ 0, got %d", runs)
			}
			if dataDir == "" {
				dataDir = defaultDataDir()
			}
			if st, err := os.Stat(dataDir); err != nil || !st.IsDir() {
				return fmt.Errorf("data directory %q not found: pass --data-dir pointing at the example CSVs (../shared/data)", dataDir)
			}
			opt := experiment.Options{
				Runs: runs, Seeded: cmd.Flags().Changed("seed"), Seed: seed, Out: out,
				Quick: quick, DataDir: dataDir, Workers: workers, Progress: stderrProgress(cmd), Replot: replot,
			}
			results, err := experiment.Run(cmd.Context(), args[0], opt)
			if err != nil {
				if errors.Is(err, experiment.ErrNoData) {
					return fmt.Errorf("%w (flag --data-dir)", err)
				}
				return err
			}
			if format == formatJSON {
				return writeJSON(cmd.OutOrStdout(), experimentJSON(results, opt))
			}
			printExperiments(cmd.OutOrStdout(), results, opt)
			return nil
		},
	}
	getFormat = addFormatFlag(cmd)
	f := cmd.Flags()
	f.IntVar(&runs, "runs", 0, "independent runs per point (0: the experiment's default, fewer with --quick)")
	f.Uint64Var(&seed, "seed", 0, "seed for reproducible runs (insecure randomness; outputs are marked)")
	f.StringVar(&out, "out", "experiment-results", "output directory")
	f.BoolVar(&quick, "quick", false, "smaller grids and fewer runs")
	f.StringVar(&dataDir, "data-dir", "", "directory of the example CSVs (default ../shared/data next to the repository)")
	f.IntVar(&workers, "workers", 0, "worker goroutines (0: all cores)")
	f.BoolVar(&replot, "replot", false, "redraw figures and summaries from the CSVs already in --out, without running")
	return cmd
}

// defaultDataDir returns ../shared/data next to the repository root (found by
// walking up to go.mod), or ../shared/data relative to the working directory.
func defaultDataDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return filepath.Join("..", "shared", "data")
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(filepath.Dir(d), "shared", "data")
		}
		if filepath.Dir(d) == d {
			break
		}
	}
	return filepath.Join("..", "shared", "data")
}

type experimentOut struct {
	Randomness  string           `json:"randomness"`
	Insecure    bool             `json:"insecure_randomness"`
	Experiments []experimentItem `json:"experiments"`
}

type experimentItem struct {
	Name     string             `json:"name"`
	Title    string             `json:"title"`
	Seconds  float64            `json:"seconds"`
	Files    []string           `json:"files"`
	Claims   []experiment.Claim `json:"claims"`
	Notes    []string           `json:"notes"`
	NumPoint int                `json:"points"`
}

func experimentJSON(rs []*experiment.Result, opt experiment.Options) experimentOut {
	o := experimentOut{Randomness: "secure", Insecure: opt.Seeded}
	if opt.Seeded {
		o.Randomness = fmt.Sprintf("insecure-seeded(%d)", opt.Seed)
	}
	for _, r := range rs {
		o.Experiments = append(o.Experiments, experimentItem{Name: r.Name, Title: r.Title, Seconds: r.Elapsed.Seconds(),
			Files: r.Files, Claims: r.Claims, Notes: r.Notes, NumPoint: len(r.Rows)})
	}
	return o
}

func printExperiments(w io.Writer, rs []*experiment.Result, opt experiment.Options) {
	if opt.Seeded {
		fmt.Fprintf(w, "Randomness: INSECURE, seeded (--seed %d): reproducible, for experiments only.\n\n", opt.Seed)
	}
	for _, r := range rs {
		fmt.Fprintf(w, "%s: %s (%s, %d points)\n", r.Name, r.Title, r.Elapsed.Round(1e8), len(r.Rows))
		for _, c := range r.Claims {
			fmt.Fprintf(w, "  paper: %s\n    here: %s — holds: %s\n", c.Paper, c.Measured, c.Holds)
		}
		for _, f := range r.Files {
			fmt.Fprintf(w, "  wrote %s\n", f)
		}
		fmt.Fprintln(w)
	}
}
