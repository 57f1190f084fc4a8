// Command bench measures the data engine (packages suffstat and dataset)
// against the references named in issue 5 and prints a table:
//
//  1. in-memory statistics for N = 2,000,000 rows, D = 100 (float64) against
//     numpy's X.T @ X (OpenBLAS dsyrk) on the same data, interleaved (step
//     "gram", see interleave.go: one repetition of each in turn, -reps
//     times, medians, the BLAS pinned to GOMAXPROCS threads);
//     F. with -dplearn, step "fit": pandas.read_csv, dataset.Moments and
//     `dplearn fit --mechanism gaussian-fm` with and without intervals on
//     one 500,000 × 50 CSV, interleaved the same way, with CPU times, peak
//     RSS and the load average of each repetition;
//  2. end-to-end statistics of a 500,000 × 50 CSV (6 decimals) with
//     dataset.Moments against pandas.read_csv alone on the same file;
//  3. peak RSS of dataset.Moments on 100,000 and 4,000,000 rows (each in a
//     child process);
//  4. time(16M rows) / time(1M rows) on the in-memory path;
//     (with -dplearn, also `dplearn fit` end to end, its time and peak RSS);
//  5. the relative error of the statistics against an exact reference for a
//     large synthetic N.
//
// The references run when a python3 with numpy and pandas is found
// (Debian: python3-numpy python3-pandas libopenblas0-pthread); otherwise the
// table says "reference unavailable". Generated files go to a temporary
// directory that is removed at the end.
//
// Usage:
//
//	go run ./bench             # everything (a few minutes, ~2.5 GB of temp files)
//	go run ./bench -quick      # smaller sizes, for a smoke test
//	go run ./bench -only gram,csv
//	go build -o /tmp/dplearn ./cmd/dplearn && go run ./bench -dplearn /tmp/dplearn
//
// Issue 24's ratios (both cores, interleaved, medians of 7):
//
//	go build -o /tmp/dplearn ./cmd/dplearn && go build -o /tmp/bench ./bench
//	GOMAXPROCS=2 /tmp/bench -only gram,fit -reps 7 -dplearn /tmp/dplearn
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
)

func main() {
	var cfg config
	flag.BoolVar(&cfg.quick, "quick", false, "smaller sizes (smoke test)")
	flag.StringVar(&cfg.only, "only", "", "comma-separated subset of gram,fit,csv,rss,linear,accuracy")
	flag.IntVar(&cfg.reps, "reps", 5, "interleaved repetitions of the gram and fit steps (medians reported)")
	flag.StringVar(&cfg.python, "python", "", "python3 to use for the references (default: first of python3, /usr/bin/python3 that has numpy and pandas)")
	flag.IntVar(&cfg.workers, "workers", 0, "goroutines (0: GOMAXPROCS)")
	flag.StringVar(&cfg.dplearn, "dplearn", "", "a dplearn binary: also time `dplearn fit --mechanism gaussian-fm` end to end and its peak RSS")
	flag.StringVar(&cfg.rssChild, "rss-child", "", "internal: read this CSV with this schema path and exit")
	flag.StringVar(&cfg.rssSchema, "rss-schema", "", "internal")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if cfg.rssChild != "" {
		if err := rssChild(ctx, cfg.rssChild, cfg.rssSchema); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
			os.Exit(1)
		}
		return
	}
	if err := run(ctx, &cfg); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

type config struct {
	quick               bool
	reps                int
	only                string
	python              string
	workers             int
	dplearn             string
	rssChild, rssSchema string
}

func (c *config) want(name string) bool {
	if c.only == "" {
		return true
	}
	for _, s := range strings.Split(c.only, ",") {
		if strings.TrimSpace(s) == name {
			return true
		}
	}
	return false
}
