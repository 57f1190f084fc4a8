package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// row is one line of the result table.
type row struct {
	metric, ours, ref, ratio, target, verdict string
}

func run(ctx context.Context, cfg *config) error {
	py := findPython(cfg.python)
	dir, err := os.MkdirTemp("", "dplearn-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	workers := cfg.workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	fmt.Printf("dplearn data-engine benchmark: %s/%s, %d CPUs, GOMAXPROCS %d, kernel %s, python %s\n",
		runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), workers, suffstat.KernelName(), orNone(py))
	if la, err := os.ReadFile("/proc/loadavg"); err == nil {
		// Other processes on the machine slow both sides; ratios are
		// measured in the same run, but say how busy the machine was.
		fmt.Printf("load average at start: %s\n", strings.Join(strings.Fields(string(la))[:3], " "))
	}
	var rows []row
	steps := []struct {
		name string
		f    func(context.Context, *config, string, string, int) ([]row, error)
	}{
		{"gram", benchGramInterleaved}, {"fit", benchFit}, {"csv", benchCSV}, {"rss", benchRSS}, {"linear", benchLinear}, {"accuracy", benchAccuracy},
	}
	for _, s := range steps {
		if !cfg.want(s.name) {
			continue
		}
		r, err := s.f(ctx, cfg, dir, py, workers)
		if err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		rows = append(rows, r...)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	printTable(rows)
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "none (reference unavailable)"
	}
	return s
}

// findPython returns a python3 that imports numpy and pandas, or "".
func findPython(explicit string) string {
	cands := []string{"python3", "/usr/bin/python3"}
	if explicit != "" {
		cands = []string{explicit}
	}
	for _, c := range cands {
		if exec.Command(c, "-c", "import numpy, pandas").Run() == nil {
			return c
		}
	}
	return ""
}

// python runs a script and returns its last output line.
func python(ctx context.Context, py, script string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, py, append([]string{"-c", script}, args...)...)
	cmd.Env = append(os.Environ(), "OPENBLAS_NUM_THREADS="+strconv.Itoa(runtime.GOMAXPROCS(0)))
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("python: %v: %s", err, ee.Stderr)
		}
		return "", err
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}

// best runs f reps times and returns the fastest duration.
func best(reps int, f func() error) (time.Duration, error) {
	b := time.Duration(math.MaxInt64)
	for i := 0; i < reps; i++ {
		runtime.GC()
		t := time.Now()
		if err := f(); err != nil {
			return 0, err
		}
		if d := time.Since(t); d < b {
			b = d
		}
	}
	return b, nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%.3f s", d.Seconds()) }

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "MISSED"
}

// ---- 1. in-memory Gram ----------------------------------------------------

// golden fills x[t] = 2·frac(t·φ⁻¹) − 1, the same formula the numpy side uses,
// so both sides see bit-identical data without sharing a 1.6 GB file.
func golden(x []float64, offset int) {
	const phi = 0.6180339887498949
	for i := range x {
		x[i] = math.Mod(float64(offset+i)*phi, 1)*2 - 1
	}
}

// compareNpy reads a float64 d×d .npy written by numpy and returns the largest
// relative difference from m's Gram.
func compareNpy(path string, m *suffstat.Moments, d int) (float64, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	if len(b) < 10 || string(b[1:6]) != "NUMPY" {
		return 0, errors.New("not an npy file")
	}
	hl := int(b[8]) | int(b[9])<<8
	body := b[10+hl:]
	if len(body) != 8*d*d {
		return 0, fmt.Errorf("npy body %d bytes, want %d", len(body), 8*d*d)
	}
	worst := 0.0
	for i := 0; i < d; i++ {
		for j := 0; j < d; j++ {
			var u uint64
			for k := 0; k < 8; k++ {
				u |= uint64(body[8*(i*d+j)+k]) << (8 * k)
			}
			v := math.Float64frombits(u)
			scale := math.Sqrt(m.At(i, i) * m.At(j, j))
			worst = math.Max(worst, math.Abs(v-m.At(i, j))/scale)
		}
	}
	return worst, nil
}

// ---- 2. CSV end to end ----------------------------------------------------

// writeCSV writes n rows of cols columns (c0..c{cols-2}, y), uniform in
// (−100, 100) with 6 decimals, and a matching schema. It returns both paths.
func writeCSV(dir string, n, cols int, seed uint64) (string, string, error) {
	path := filepath.Join(dir, fmt.Sprintf("data-%d.csv", n))
	f, err := os.Create(path)
	if err != nil {
		return "", "", err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	names := make([]string, cols)
	for j := range names {
		names[j] = "c" + strconv.Itoa(j)
	}
	names[cols-1] = "y"
	w.WriteString(strings.Join(names, ",") + "\n")
	rng := rand.New(rand.NewPCG(seed, 7))
	buf := make([]byte, 0, 16*cols)
	for i := 0; i < n; i++ {
		buf = buf[:0]
		for j := 0; j < cols; j++ {
			if j > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendFloat(buf, rng.Float64()*200-100, 'f', 6, 64)
		}
		buf = append(buf, '\n')
		w.Write(buf)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return "", "", err
	}
	if err := f.Close(); err != nil {
		return "", "", err
	}
	var sb strings.Builder
	sb.WriteString(`{"target": {"name": "y", "range": [-100, 100]}, "features": [`)
	for j := 0; j < cols-1; j++ {
		if j > 0 {
			sb.WriteString(", ")
		}
		fmt.Fprintf(&sb, `{"name": %q, "range": [-100, 100]}`, names[j])
	}
	sb.WriteString("]}")
	sp := filepath.Join(dir, fmt.Sprintf("schema-%d.json", n))
	return path, sp, os.WriteFile(sp, []byte(sb.String()), 0o600)
}

const pandasScript = `
import sys, time, pandas as pd
b = 1e9
for _ in range(2):
    t = time.perf_counter(); df = pd.read_csv(sys.argv[1]); b = min(b, time.perf_counter() - t)
    del df
print(b)
`

// benchCols is the width of the CSV that benchCSV and benchFit read.
const benchCols = 50

// benchTable is the CSV that benchCSV and benchFit read: rows rows of
// benchCols columns at path, its schema file at schemaPath, loaded as s.
type benchTable struct {
	path, schemaPath string
	s                *schema.Schema
	rows             int
}

// writeBenchTable writes the benchTable into dir: 500,000 rows (50,000
// with -quick). The caller removes its path.
func writeBenchTable(cfg *config, dir string) (benchTable, error) {
	t := benchTable{rows: 500_000}
	if cfg.quick {
		t.rows = 50_000
	}
	var err error
	if t.path, t.schemaPath, err = writeCSV(dir, t.rows, benchCols, 1); err != nil {
		return benchTable{}, err
	}
	if t.s, err = schema.Load(t.schemaPath); err != nil {
		os.Remove(t.path)
		return benchTable{}, err
	}
	return t, nil
}

func benchCSV(ctx context.Context, cfg *config, dir, py string, workers int) ([]row, error) {
	tab, err := writeBenchTable(cfg, dir)
	if err != nil {
		return nil, err
	}
	defer os.Remove(tab.path)
	st, _ := os.Stat(tab.path)
	var sum dataset.Summary
	ours, err := best(3, func() error {
		var err error
		_, sum, err = dataset.Moments(ctx, tab.path, tab.s, dataset.Options{Workers: workers})
		return err
	})
	if err != nil {
		return nil, err
	}
	refSec := 0.0
	var fitTime time.Duration
	var fitRSS int64
	if cfg.dplearn != "" {
		fitTime, err = best(2, func() error {
			var err error
			_, fitRSS, err = runFit(ctx, cfg.dplearn, tab.path, tab.schemaPath, dir)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	r := row{metric: fmt.Sprintf("2. CSV %d×%d (%.0f MB) → statistics", sum.Rows, benchCols, float64(st.Size())/1e6),
		ours: fmt.Sprintf("%s (%.0f MB/s)", secs(ours), float64(st.Size())/1e6/ours.Seconds()),
		ref:  "reference unavailable", target: "≤ 0.5× pandas.read_csv"}
	if py != "" {
		line, err := python(ctx, py, pandasScript, tab.path)
		if err != nil {
			return nil, err
		}
		refSec, err = strconv.ParseFloat(line, 64)
		if err != nil {
			return nil, fmt.Errorf("pandas output %q: %w", line, err)
		}
		ratio := ours.Seconds() / refSec
		r.ref = fmt.Sprintf("%.3f s pandas", refSec)
		r.ratio = fmt.Sprintf("%.2f×", ratio)
		r.verdict = verdict(ratio <= 0.5)
	}
	rows := []row{r}
	if cfg.dplearn != "" {
		f := row{metric: "2b. dplearn fit gaussian-fm, same CSV", ours: secs(fitTime), ref: r.ref, target: r.target}
		if refSec > 0 {
			f.ratio = fmt.Sprintf("%.2f×", fitTime.Seconds()/refSec)
			f.verdict = verdict(fitTime.Seconds()/refSec <= 0.5)
		}
		if fitRSS > 0 {
			f.verdict += fmt.Sprintf(" (peak RSS %.1f MB)", float64(fitRSS)/1e6)
		}
		rows = append(rows, f)
	}
	return rows, nil
}

// runFit runs `dplearn fit --mechanism gaussian-fm` and returns its wall time
// and, when GNU time is installed, its peak RSS in bytes (0 otherwise).
func runFit(ctx context.Context, bin, data, schemaPath, dir string) (time.Duration, int64, error) {
	args := []string{"fit", "--data", data, "--schema", schemaPath, "--model", "linear", "--mechanism", "gaussian-fm",
		"--epsilon", "1", "--delta", "1e-6", "--out", filepath.Join(dir, "model.json")}
	gnuTime := "/usr/bin/time"
	useTime := exec.Command(gnuTime, "-f", "%M", "true").Run() == nil
	var cmd *exec.Cmd
	if useTime {
		// GNU time forks a small process to run dplearn, so the peak RSS it
		// reports is dplearn's own (rusage of a child of this big process
		// can include this process's memory).
		cmd = exec.CommandContext(ctx, gnuTime, append([]string{"-f", "maxrss %M"}, append([]string{bin}, args...)...)...)
	} else {
		cmd = exec.CommandContext(ctx, bin, args...)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	t := time.Now()
	if err := cmd.Run(); err != nil {
		return 0, 0, fmt.Errorf("dplearn fit: %v: %s", err, stderr.String())
	}
	el := time.Since(t)
	var kb int64
	if useTime {
		lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
		fmt.Sscanf(lines[len(lines)-1], "maxrss %d", &kb)
	}
	return el, kb * 1024, nil
}

// ---- 3. peak RSS ------------------------------------------------------------

func rssChild(ctx context.Context, path, schemaPath string) error {
	s, err := schema.Load(schemaPath)
	if err != nil {
		return err
	}
	if _, _, err = dataset.Moments(ctx, path, s, dataset.Options{}); err != nil {
		return err
	}
	// The peak RSS of this process (VmHWM), read here rather than from the
	// parent's rusage, which can include the parent's memory at fork.
	st, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return err
	}
	for _, l := range strings.Split(string(st), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			fmt.Println(strings.TrimSpace(strings.TrimPrefix(l, "VmHWM:")))
			return nil
		}
	}
	return errors.New("no VmHWM in /proc/self/status")
}

// childRSS runs this program on a CSV and returns the child's peak RSS.
func childRSS(ctx context.Context, path, schemaPath string) (int64, error) {
	self, err := os.Executable()
	if err != nil {
		return 0, err
	}
	cmd := exec.CommandContext(ctx, self, "-rss-child", path, "-rss-schema", schemaPath)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return 0, err
	}
	var kb int64
	if _, err := fmt.Sscanf(strings.TrimSpace(string(out)), "%d kB", &kb); err != nil {
		return 0, fmt.Errorf("child output %q: %w", out, err)
	}
	return kb * 1024, nil
}

func benchRSS(ctx context.Context, cfg *config, dir, py string, workers int) ([]row, error) {
	small, large := 100_000, 4_000_000
	if cfg.quick {
		large = 400_000
	}
	var rss, fitRSS [2]int64
	for i, n := range []int{small, large} {
		path, sp, err := writeCSV(dir, n, 50, uint64(n))
		if err != nil {
			return nil, err
		}
		rss[i], err = childRSS(ctx, path, sp)
		if err == nil && cfg.dplearn != "" {
			_, fitRSS[i], err = runFit(ctx, cfg.dplearn, path, sp, dir)
		}
		os.Remove(path)
		if err != nil {
			return nil, err
		}
	}
	mb := func(b int64) string { return fmt.Sprintf("%.1f MB", float64(b)/1e6) }
	growth := float64(rss[1]-rss[0]) / 1e6
	out := []row{
		{metric: fmt.Sprintf("3a. peak RSS, dataset.Moments, CSV %d×50", large), ours: mb(rss[1]), target: "≤ 150 MB", verdict: verdict(rss[1] <= 150e6)},
		{metric: fmt.Sprintf("3b. RSS growth %d → %d rows", small, large), ours: fmt.Sprintf("%+.1f MB", growth),
			ref: mb(rss[0]) + " at " + strconv.Itoa(small), target: "< 20 MB", verdict: verdict(growth < 20)},
	}
	if fitRSS[0] > 0 && fitRSS[1] > 0 {
		g := float64(fitRSS[1]-fitRSS[0]) / 1e6
		out = append(out,
			row{metric: fmt.Sprintf("3c. peak RSS, dplearn fit, CSV %d×50", large), ours: mb(fitRSS[1]), target: "≤ 150 MB", verdict: verdict(fitRSS[1] <= 150e6)},
			row{metric: fmt.Sprintf("3d. fit RSS growth %d → %d rows", small, large), ours: fmt.Sprintf("%+.1f MB", g),
				ref: mb(fitRSS[0]) + " at " + strconv.Itoa(small), target: "< 20 MB", verdict: verdict(g < 20)})
	}
	return out, nil
}

// ---- 4. linear time ---------------------------------------------------------

func benchLinear(ctx context.Context, cfg *config, dir, py string, workers int) ([]row, error) {
	small, large, d := 1_000_000, 16_000_000, 20
	if cfg.quick {
		small, large = 250_000, 4_000_000
	}
	x := make([]float64, large*d)
	golden(x, 0)
	timeN := func(n int) (time.Duration, error) {
		return best(5, func() error {
			m := suffstat.New(d)
			m.SetWorkers(workers)
			if err := m.AddRows(x[:n*d]); err != nil {
				return err
			}
			m.At(0, 0)
			return nil
		})
	}
	ts, err := timeN(small)
	if err != nil {
		return nil, err
	}
	tl, err := timeN(large)
	if err != nil {
		return nil, err
	}
	ratio := tl.Seconds() / ts.Seconds()
	limit := float64(large/small) + 1
	return []row{{metric: fmt.Sprintf("4. time(%gM)/time(%gM) in memory, D=%d", float64(large)/1e6, float64(small)/1e6, d),
		ours: fmt.Sprintf("%.2f (%s / %s)", ratio, secs(tl), secs(ts)), target: fmt.Sprintf("≤ %.0f", limit), verdict: verdict(ratio <= limit)}}, nil
}

// ---- 5. accuracy ------------------------------------------------------------

func benchAccuracy(ctx context.Context, cfg *config, dir, py string, workers int) ([]row, error) {
	n := int64(1_000_000_000)
	if cfg.quick {
		n = 10_000_000
	}
	const k, p = 3, 1000
	rng := rand.New(rand.NewPCG(11, 12))
	pattern := make([]float64, p*k)
	for i := range pattern {
		pattern[i] = 0.1 + rng.Float64()
	}
	reps := n / p
	const per = 100
	block := make([]float64, 0, per*p*k)
	for q := 0; q < per; q++ {
		block = append(block, pattern...)
	}
	m := suffstat.New(k)
	m.SetWorkers(workers)
	var plain [k][k]float64
	t := time.Now()
	for r := int64(0); r < reps; r += per {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := m.AddRows(block); err != nil {
			return nil, err
		}
	}
	el := time.Since(t)
	for r := int64(0); r < reps; r++ {
		for q := 0; q < p*k; q += k {
			for i := 0; i < k; i++ {
				for j := i; j < k; j++ {
					plain[i][j] += pattern[q+i] * pattern[q+j]
				}
			}
		}
	}
	// Exact: reps × (exact pattern sums), at 2000 bits.
	worst, worstPlain := 0.0, 0.0
	for i := 0; i < k; i++ {
		for j := i; j < k; j++ {
			e := new(big.Float).SetPrec(2000)
			for q := 0; q < p*k; q += k {
				pr := new(big.Float).SetPrec(2000).Mul(big.NewFloat(pattern[q+i]), big.NewFloat(pattern[q+j]))
				e.Add(e, pr)
			}
			e.Mul(e, new(big.Float).SetInt64(reps))
			ef, _ := e.Float64()
			worst = math.Max(worst, math.Abs(m.At(i, j)-ef)/ef)
			worstPlain = math.Max(worstPlain, math.Abs(plain[i][j]-ef)/ef)
		}
	}
	bound := 258 * 0x1p-53
	return []row{{metric: fmt.Sprintf("5. rel. error of Σzzᵀ, N=%.0e, vs exact", float64(n)),
		ours: fmt.Sprintf("%.1e (%.1f s)", worst, el.Seconds()), ref: fmt.Sprintf("%.1e plain running sum", worstPlain),
		target: fmt.Sprintf("≤ %.1e (bound)", bound), verdict: verdict(worst <= bound)}}, nil
}

func printTable(rows []row) {
	hdr := row{"measure", "dplearn", "reference", "ratio", "target", "verdict"}
	all := append([]row{hdr}, rows...)
	width := make([]int, 6)
	cells := func(r row) []string { return []string{r.metric, r.ours, r.ref, r.ratio, r.target, r.verdict} }
	for _, r := range all {
		for i, c := range cells(r) {
			width[i] = max(width[i], len([]rune(c)))
		}
	}
	fmt.Println()
	for ri, r := range all {
		for i, c := range cells(r) {
			fmt.Print(c, strings.Repeat(" ", width[i]-len([]rune(c))+2))
		}
		fmt.Println()
		if ri == 0 {
			n := 0
			for _, w := range width {
				n += w + 2
			}
			fmt.Println(strings.Repeat("-", n))
		}
	}
}
