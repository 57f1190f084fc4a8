package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/dataset"
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
		resume    bool
		getFormat func() (outputFormat, error)
	)
	cmd := &cobra.Command{
		Use:   "experiment [NAME|all]",
		Short: "Reproduce the seed papers' central-setting experiments (CSV, PNG/SVG plot, markdown)",
		Long: `experiment reruns a figure of the seed papers on the data available offline and
writes, into --out, NAME.csv (mean and sd over runs per point), NAME.png and
NAME.svg (the figure) and NAME.md (a summary that puts each paper claim beside
the measured number).

Experiments:
  ` + strings.Join(experiment.Describe(), "\n  ") + `

Runs are spread over all cores; a progress bar goes to stderr when it is a
terminal, and a line a minute (jobs done, elapsed, ETA) when it is a file. Without --seed the noise comes from crypto/rand; with --seed S every
run is reproducible and the outputs are marked as produced with insecure
randomness (never use seeded noise for a real release). --quick uses smaller
grids and fewer runs: "experiment all --quick" takes a few minutes on 2 cores.

The example CSVs are embedded in the binary (package exampledata, byte-identical
copies with their provenance); --data-dir reads them from a directory instead.
Fashion-MNIST (dppp-fashion) is too big to embed: it is read from the Debian
package dataset-fashion-mnist when installed, and the experiment says it was
skipped otherwise. Without a NAME, experiment lists the experiments.

Long runs keep what they finish: every finished job is recorded in NAME.jobs
in --out, and the file is removed once NAME's outputs are written. If a run
stops (Ctrl-C, a killed process, a failed job), rerun the same command with
--resume: the recorded jobs are not run again, and with --seed the result is
the one an uninterrupted run gives. A resume needs the same experiment, --runs,
--quick, --seed and dplearn binary (the file records them and a mismatch is an
error); without --resume a leftover NAME.jobs is an error, never overwritten.

Example:
  dplearn experiment
  dplearn experiment gfm-noise-vs-dim --out docs/figures
  dplearn experiment all --quick --seed 1 --out /tmp/exp
  dplearn experiment utility-shapes --seed 1 --out /tmp/exp --resume`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			format, err := getFormat()
			if err != nil {
				return err
			}
			if len(args) == 0 {
				return listExperiments(cmd.OutOrStdout(), format)
			}
			if runs < 0 {
				return fmt.Errorf("--runs must be ≥ 0, got %d", runs)
			}
			if dataDir != "" {
				if st, err := os.Stat(dataDir); err != nil || !st.IsDir() {
					return fmt.Errorf("--data-dir %q: not a directory (omit --data-dir to use the embedded example data)", dataDir)
				}
			}
			opt := experiment.Options{
				Runs: runs, Seeded: cmd.Flags().Changed("seed"), Seed: seed, Out: out,
				Quick: quick, DataDir: dataDir, Workers: workers, Progress: stderrProgress(cmd), Replot: replot,
				Checkpoint: true, Resume: resume,
			}
			if opt.Progress == nil {
				// Not a terminal: a line a minute, for the log of a long run.
				opt.Progress, opt.ProgressLines = cmd.ErrOrStderr(), true
			}
			results, err := experiment.Run(cmd.Context(), args[0], opt)
			if err != nil {
				if errors.Is(err, experiment.ErrNoData) {
					return fmt.Errorf("%w (flag --data-dir)", err)
				}
				var unfinished *experiment.UnfinishedError
				if errors.Is(err, experiment.ErrCheckpoint) || errors.As(err, &unfinished) {
					return fmt.Errorf("%w (flag --resume)", err)
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
	f.StringVar(&dataDir, "data-dir", "", "directory of the example CSVs (default: the copies embedded in the binary)")
	f.IntVar(&workers, "workers", 0, "worker goroutines (0: all cores)")
	f.BoolVar(&replot, "replot", false, "redraw figures and summaries from the CSVs already in --out, without running")
	f.BoolVar(&resume, "resume", false, "continue an interrupted run from the NAME.jobs it left in --out (same flags and binary)")
	return cmd
}

// listExperiments prints the experiments, one per line.
func listExperiments(w io.Writer, format outputFormat) error {
	if format == formatJSON {
		return writeJSON(w, map[string]any{"experiments": experiment.Names()})
	}
	fmt.Fprintln(w, "Experiments (dplearn experiment NAME, or all):")
	for _, d := range experiment.Describe() {
		fmt.Fprintf(w, "  %s\n", d)
	}
	return nil
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
		fmt.Fprintf(w, "%s: %s (%s, %s)\n", r.Name, r.Title, r.Elapsed.Round(1e8), dataset.Plural(int64(len(r.Rows)), "point"))
		for _, c := range r.Claims {
			fmt.Fprintf(w, "  paper: %s\n    here: %s — holds: %s\n", c.Paper, c.Measured, c.Holds)
		}
		for _, n := range r.Notes {
			if strings.HasPrefix(n, "Skipped") {
				fmt.Fprintf(w, "  %s\n", n)
			}
		}
		for _, f := range r.Files {
			fmt.Fprintf(w, "  wrote %s\n", f)
		}
		fmt.Fprintln(w)
	}
}
