package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/suffstat"
)

// # Interleaved measurements
//
// On a shared machine the load changes from second to second, so a
// reference measured a minute apart says little. The "fit" and "gram"
// steps keep the reference in a long-running python process that times
// one repetition per request; the Go side alternates one repetition of its
// own with one of the reference, cfg.reps times, and reports medians, the
// median of the per-repetition ratios, CPU times, and the load average at
// each repetition.

// pyServer is a python process that, after its setup, times one
// repetition per line read on stdin and prints "wall cpu".
type pyServer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// threadEnv pins the BLAS to n threads (OpenBLAS and OpenMP builds).
func threadEnv(n int) []string {
	s := strconv.Itoa(n)
	return append(os.Environ(), "OPENBLAS_NUM_THREADS="+s, "OMP_NUM_THREADS="+s, "MKL_NUM_THREADS="+s)
}

func startPy(ctx context.Context, py, script string, threads int, args ...string) (*pyServer, error) {
	cmd := exec.CommandContext(ctx, py, append([]string{"-c", script}, args...)...)
	cmd.Env = threadEnv(threads)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &pyServer{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	if !p.out.Scan() || p.out.Text() != "ready" {
		p.close()
		return nil, fmt.Errorf("python setup failed (%q)", p.out.Text())
	}
	return p, nil
}

// rep asks for one timed repetition and returns its wall and CPU seconds.
func (p *pyServer) rep() (wall, cpu float64, err error) {
	if _, err := io.WriteString(p.in, "go\n"); err != nil {
		return 0, 0, err
	}
	if !p.out.Scan() {
		return 0, 0, errors.New("python exited")
	}
	if _, err := fmt.Sscanf(p.out.Text(), "%g %g", &wall, &cpu); err != nil {
		return 0, 0, fmt.Errorf("python output %q: %w", p.out.Text(), err)
	}
	return wall, cpu, nil
}

func (p *pyServer) close() {
	p.in.Close()
	p.cmd.Wait()
}

const pyLoop = `
print("ready", flush=True)
for line in sys.stdin:
    w, c = time.perf_counter(), time.process_time()
    rep()
    print(time.perf_counter() - w, time.process_time() - c, flush=True)
`

const pandasServer = `
import sys, time, pandas as pd
def rep():
    df = pd.read_csv(sys.argv[1])
    del df
` + pyLoop

const gramServer = `
import sys, time, numpy as np
n, d = int(sys.argv[1]), int(sys.argv[2])
X = np.empty((n, d))
flat = X.reshape(-1)
step = 1 << 22
for s in range(0, n * d, step):
    e = min(s + step, n * d)
    flat[s:e] = np.remainder(np.arange(s, e, dtype=np.float64) * 0.6180339887498949, 1.0) * 2 - 1
G = X.T @ X
np.save(sys.argv[3], G)
def rep():
    G = X.T @ X
` + pyLoop

// loadAvg returns the 1-minute load average (0 when unknown).
func loadAvg() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	return f
}

// cpuNow returns this process's user+system CPU time.
func cpuNow() time.Duration {
	u, s := processCPU()
	return u + s
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// series collects one measured quantity over the repetitions.
type series struct {
	name      string
	wall, cpu []float64
	rss       float64 // peak RSS in bytes (max over reps), 0 if unknown
}

func (s *series) add(wall, cpu float64) {
	s.wall = append(s.wall, wall)
	s.cpu = append(s.cpu, cpu)
}

// ratioRow reports s against ref: median times, the median of the
// per-repetition wall ratios and of the CPU ratios.
func ratioRow(metric string, s, ref *series, target float64) row {
	wr := make([]float64, len(s.wall))
	cr := make([]float64, len(s.wall))
	for i := range s.wall {
		wr[i] = s.wall[i] / ref.wall[i]
		cr[i] = s.cpu[i] / ref.cpu[i]
	}
	r := row{metric: metric,
		ours:   fmt.Sprintf("%.3f s (cpu %.3f s)", median(s.wall), median(s.cpu)),
		ref:    fmt.Sprintf("%.3f s (cpu %.3f s) %s", median(ref.wall), median(ref.cpu), ref.name),
		ratio:  fmt.Sprintf("%.2f× (cpu %.2f×)", median(wr), median(cr)),
		target: fmt.Sprintf("≤ %.1f× %s", target, ref.name)}
	r.verdict = verdict(median(wr) <= target)
	if s.rss > 0 {
		r.verdict += fmt.Sprintf(" (peak RSS %.1f MB)", s.rss/1e6)
	}
	return r
}

func printReps(all []*series, loads []float64) {
	fmt.Printf("  %-34s", "repetition")
	for i := range loads {
		fmt.Printf("  %14d", i+1)
	}
	fmt.Printf("\n  %-34s", "load average (1 min)")
	for _, l := range loads {
		fmt.Printf("  %14.1f", l)
	}
	fmt.Println()
	for _, s := range all {
		fmt.Printf("  %-34s", s.name+" wall/cpu s")
		for i := range s.wall {
			fmt.Printf("  %6.3f/%6.3f", s.wall[i], s.cpu[i])
		}
		fmt.Println()
	}
}

// benchFit times, interleaved, pandas.read_csv, dataset.Moments in this
// process, and `dplearn fit --mechanism gaussian-fm` with and without
// intervals on one 500,000 × 50 CSV.
func benchFit(ctx context.Context, cfg *config, dir, py string, workers int) ([]row, error) {
	if py == "" || cfg.dplearn == "" {
		return []row{{metric: "fit: needs python with pandas and -dplearn", verdict: "not run"}}, nil
	}
	tab, err := writeBenchTable(cfg, dir)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tab.path)
	srv, err := startPy(ctx, py, pandasServer, 1, tab.path)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	pandas := &series{name: "pandas.read_csv"}
	mom := &series{name: "dataset.Moments"}
	fitCI := &series{name: "dplearn fit"}
	fitNo := &series{name: "dplearn fit --ci-share 0"}
	var loads []float64
	fmt.Printf("fit: %d interleaved repetitions on %s\n", cfg.reps, filepath.Base(tab.path))
	for rep := 0; rep < cfg.reps; rep++ {
		loads = append(loads, loadAvg())
		w, c, err := srv.rep()
		if err != nil {
			return nil, err
		}
		pandas.add(w, c)
		runtime.GC()
		t, c0 := time.Now(), cpuNow()
		if _, _, err := dataset.Moments(ctx, tab.path, tab.s, dataset.Options{Workers: workers}); err != nil {
			return nil, err
		}
		mom.add(time.Since(t).Seconds(), (cpuNow() - c0).Seconds())
		for _, f := range []*series{fitCI, fitNo} {
			share := "0.05"
			if f == fitNo {
				share = "0"
			}
			res, err := runFitShare(ctx, cfg.dplearn, tab.path, tab.schemaPath, dir, share)
			if err != nil {
				return nil, err
			}
			f.add(res.wall.Seconds(), res.cpu.Seconds())
			f.rss = max(f.rss, float64(res.rss))
		}
	}
	printReps([]*series{pandas, mom, fitCI, fitNo}, loads)
	return []row{
		ratioRow(fmt.Sprintf("F1. CSV %d×%d → statistics (in process)", tab.rows, benchCols), mom, pandas, 0.3),
		ratioRow("F2. dplearn fit gaussian-fm, intervals", fitCI, pandas, 0.3),
		ratioRow("F3. dplearn fit gaussian-fm, --ci-share 0", fitNo, pandas, 0.3),
	}, nil
}

// fitRun is one run of the CLI.
type fitRun struct {
	wall, cpu time.Duration
	rss       int64
}

// runFitShare runs `dplearn fit --mechanism gaussian-fm --ci-share share`
// under GNU time (peak RSS and CPU of the dplearn process), or without it
// when GNU time is missing (CPU from the child's rusage, no RSS).
func runFitShare(ctx context.Context, bin, data, schemaPath, dir, share string) (fitRun, error) {
	args := []string{"fit", "--data", data, "--schema", schemaPath, "--model", "linear", "--mechanism", "gaussian-fm",
		"--epsilon", "1", "--delta", "1e-6", "--ci-share", share, "--out", filepath.Join(dir, "model.json")}
	gnuTime := "/usr/bin/time"
	useTime := exec.Command(gnuTime, "-f", "%M", "true").Run() == nil
	var cmd *exec.Cmd
	if useTime {
		cmd = exec.CommandContext(ctx, gnuTime, append([]string{"-f", "maxrss %M cpu %U %S"}, append([]string{bin}, args...)...)...)
	} else {
		cmd = exec.CommandContext(ctx, bin, args...)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	t := time.Now()
	if err := cmd.Run(); err != nil {
		return fitRun{}, fmt.Errorf("dplearn fit: %v: %s", err, stderr.String())
	}
	r := fitRun{wall: time.Since(t), cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
	if useTime {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		var kb int64
		var u, s float64
		if _, err := fmt.Sscanf(lines[len(lines)-1], "maxrss %d cpu %g %g", &kb, &u, &s); err == nil {
			r.rss = kb * 1024
			r.cpu = time.Duration((u + s) * float64(time.Second))
		}
	}
	return r, nil
}

// benchGramInterleaved times, interleaved, the exact Gram of N = 2,000,000
// rows of D = 100 (suffstat, `workers` goroutines) and numpy's X.T @ X on
// the same values (BLAS pinned to `workers` threads).
func benchGramInterleaved(ctx context.Context, cfg *config, dir, py string, workers int) ([]row, error) {
	n, d := 2_000_000, 100
	if cfg.quick {
		n = 200_000
	}
	x := make([]float64, n*d)
	golden(x, 0)
	var m *suffstat.Moments
	pass := func() error {
		m = suffstat.New(d)
		m.SetWorkers(workers)
		if err := m.AddRows(x); err != nil {
			return err
		}
		m.Flush()
		return nil
	}
	ours := &series{name: "suffstat " + suffstat.KernelName()}
	if py == "" {
		d, err := best(3, pass)
		if err != nil {
			return nil, err
		}
		return []row{{metric: fmt.Sprintf("1. Gram in memory, N=%d D=%d", n, d), ours: secs(d), ref: "reference unavailable"}}, nil
	}
	out := filepath.Join(dir, "gram.npy")
	srv, err := startPy(ctx, py, gramServer, workers, strconv.Itoa(n), strconv.Itoa(d), out)
	if err != nil {
		return nil, err
	}
	defer srv.close()
	numpy := &series{name: "numpy X.T@X"}
	var loads []float64
	fmt.Printf("gram: %d interleaved repetitions, N=%d D=%d, %d Go workers, %d BLAS threads\n", cfg.reps, n, d, workers, workers)
	for rep := 0; rep < cfg.reps; rep++ {
		loads = append(loads, loadAvg())
		w, c, err := srv.rep()
		if err != nil {
			return nil, err
		}
		numpy.add(w, c)
		runtime.GC()
		t, c0 := time.Now(), cpuNow()
		if err := pass(); err != nil {
			return nil, err
		}
		ours.add(time.Since(t).Seconds(), (cpuNow() - c0).Seconds())
	}
	printReps([]*series{numpy, ours}, loads)
	r := ratioRow(fmt.Sprintf("G. Gram in memory, N=%d D=%d", n, d), ours, numpy, 1.0)
	if diff, err := compareNpy(out, m, d); err == nil {
		r.verdict += fmt.Sprintf(" (max rel. diff vs numpy %.1e)", diff)
	} else {
		r.verdict += " (cross-check failed: " + err.Error() + ")"
	}
	return []row{r}, nil
}
