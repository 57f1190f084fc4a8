package experiment

import (
	"context"
	crand "crypto/rand"
	"encoding/binary"
	"encoding/csv"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dplearn/dplearn/noise"
)

// Options configure a run of an experiment.
type Options struct {
	// Runs is the number of independent repetitions per point; 0 means the
	// experiment's default (smaller with Quick).
	Runs int
	// Seeded makes the run reproducible: every job's noise comes from
	// noise.NewInsecureSeeded derived from Seed, and the outputs say the
	// randomness was insecure. Without it the noise is noise.NewSecure.
	Seeded bool
	Seed   uint64
	// Out is the directory the files are written to (created if needed).
	Out string
	// Quick shrinks grids, runs and iteration counts so that "all" takes a
	// few minutes on two cores.
	Quick bool
	// DataDir holds the example CSVs; "" reads the byte-identical copies
	// embedded in package exampledata (a fresh clone needs nothing else).
	DataDir string
	// Workers is the size of the worker pool; ≤ 0 means GOMAXPROCS.
	Workers int
	// Progress, when non-nil, receives a progress bar redrawn in place (the
	// CLI passes stderr when it is a terminal) or, with ProgressLines, one
	// line a minute "NAME: done/total jobs elapsed ETA" (the CLI's stderr
	// when it is a file or pipe: a log of a long run).
	Progress      io.Writer
	ProgressLines bool

	// Replot redraws the figures and summaries from the CSVs already in Out
	// instead of running the experiments (after a change of presentation).
	Replot bool

	// Checkpoint records every finished job in NAME.jobs in Out while an
	// experiment runs and removes the file when the experiment's outputs
	// are written, so an interrupted run can be resumed (checkpoint.go).
	// An existing NAME.jobs is then an error (ErrCheckpoint) unless Resume
	// is set: starting over would discard its work.
	Checkpoint bool
	// Resume continues from NAME.jobs: its jobs are not run again. The
	// file must come from a run with the same experiment, runs, quick,
	// seed and executable. Resume implies Checkpoint.
	Resume bool

	// synthN overrides the synthetic datasets' size (tests).
	synthN int
}

// Row is one aggregated point: the mean and standard deviation over runs of
// a metric of a series at one x of one panel.
type Row struct {
	Panel  string
	XName  string
	X      float64
	Series string
	Metric string
	Mean   float64
	SD     float64
	// Median and the quartiles Q1, Q3 over runs (robust summaries for
	// heavy-tailed metrics).
	Median, Q1, Q3 float64
	N              int
}

// Claim is a statement of a paper next to what this run measured.
type Claim struct {
	Paper    string // what the paper says
	Measured string // our number
	Holds    string // "yes", "no" or "partly", with a reason when not yes
}

// Result is the outcome of one experiment.
type Result struct {
	Name     string
	Title    string
	Files    []string // CSV, PNG, SVG, markdown
	Rows     []Row
	Claims   []Claim
	Notes    []string
	Insecure bool
	Elapsed  time.Duration
	// Resumed is the number of jobs read from a checkpoint instead of run
	// (Options.Resume), of Jobs in all.
	Resumed, Jobs int
}

// obs is one observation from one job.
type obs struct {
	panel, xname, series, metric string
	x, v                         float64
}

// job computes observations; src supplies the privacy noise, rng the data
// shuffling (not privacy noise).
type job func(ctx context.Context, src noise.Source, rng *rand.Rand) ([]obs, error)

// plan is what an experiment builder returns.
type plan struct {
	jobs    []job
	figures []figure
	notes   []string
	claims  func(a *Aggregate) []Claim
}

// spec is a registered experiment.
type spec struct {
	name, title, paper string
	runs, quickRuns    int
	build              func(ctx context.Context, e *env) (*plan, error)
}

// env is what a builder sees.
type env struct {
	opt  Options
	runs int
	data *dataCache
}

// dataCache loads each real dataset once per process.
type dataCache struct {
	mu sync.Mutex
	m  map[string]*table
}

func (e *env) real(name string, features []string) (*table, error) {
	key := name + "|" + strings.Join(features, ",")
	e.data.mu.Lock()
	defer e.data.mu.Unlock()
	if t, ok := e.data.m[key]; ok {
		return t, nil
	}
	t, err := loadReal(e.opt.DataDir, name, features)
	if err != nil {
		return nil, err
	}
	e.data.m[key] = t
	return t, nil
}

// registry lists the experiments in the order "all" runs them.
func registry() []spec {
	return []spec{
		gfmNoiseSpec(),
		gfmUtilitySpec("gfm-linear"),
		gfmUtilitySpec("gfm-logistic"),
		fmFiguresSpec(),
		irlsSpec(),
		utilitySpec(),
		utilityGFMSpec(),
		refsSpec(), utilityClipSpec(), refsLogitSpec(), refsRadiusSpec(), autoSweepSpec(), huberSweepSpec(), shapesSpec(),
		capeSpec("capefm-linear"), capeSpec("capefm-logistic"), capeSpec("capefm-sites"),
		dpppSpec("dppp-digits"), dpppSpec("dppp-breast-cancer"), dpppSpec("dppp-smokeban"), dpppSpec("dppp-fashion"),
	}
}

// Names returns the experiment names in the order "all" runs them.
func Names() []string {
	var n []string
	for _, s := range registry() {
		n = append(n, s.name)
	}
	return n
}

// Describe returns "name: title (paper figures)" lines for the help text.
func Describe() []string {
	var d []string
	for _, s := range registry() {
		d = append(d, fmt.Sprintf("%-17s %s (%s)", s.name, s.title, s.paper))
	}
	return d
}

// Run runs one experiment by name, or every one for "all", and writes each
// experiment's CSV, PNG, SVG and markdown summary into opt.Out.
func Run(ctx context.Context, name string, opt Options) ([]*Result, error) {
	var specs []spec
	for _, s := range registry() {
		if name == "all" || s.name == name {
			specs = append(specs, s)
		}
	}
	if len(specs) == 0 {
		return nil, fmt.Errorf("experiment: unknown experiment %q (want all or one of %s)", name, strings.Join(Names(), ", "))
	}
	if opt.Runs < 0 {
		return nil, fmt.Errorf("experiment: runs must be ≥ 0, got %d", opt.Runs)
	}
	if opt.Out == "" {
		return nil, errors.New("experiment: no output directory")
	}
	if err := os.MkdirAll(opt.Out, 0o755); err != nil {
		return nil, fmt.Errorf("experiment: output directory: %w", err)
	}
	var program string
	if (opt.Checkpoint || opt.Resume) && !opt.Replot {
		opt.Checkpoint = true
		// Refuse before running anything: "all" would otherwise rerun
		// the experiments before the one whose checkpoint is in the way.
		if !opt.Resume {
			for _, s := range specs {
				if st, err := os.Stat(checkpointPath(opt.Out, s.name)); err == nil && st.Size() > 0 {
					return nil, errCheckpointLeft(checkpointPath(opt.Out, s.name), s.name)
				}
			}
		}
		var err error
		if program, err = programHash(); err != nil {
			return nil, err
		}
	}
	cache := &dataCache{m: map[string]*table{}}
	var out []*Result
	for _, s := range specs {
		r, err := runOne(ctx, s, opt, cache, program)
		if err != nil {
			return out, fmt.Errorf("experiment %s: %w", s.name, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// runOne runs one experiment; program is the executable's SHA-256 when
// opt.Checkpoint is set.
func runOne(ctx context.Context, s spec, opt Options, cache *dataCache, program string) (*Result, error) {
	start := time.Now()
	runs := opt.Runs
	if runs == 0 {
		runs = s.runs
		if opt.Quick {
			runs = s.quickRuns
		}
	}
	e := &env{opt: opt, runs: runs, data: cache}
	p, err := s.build(ctx, e)
	if err != nil {
		return nil, err
	}
	base := filepath.Join(opt.Out, s.name)
	var (
		agg *Aggregate
		ck  *checkpoint
	)
	label := randomnessLabel(opt)
	switch {
	case opt.Replot:
		agg, label, err = readAggregate(base + ".csv")
	case opt.Checkpoint:
		hdr := checkpointHeader{Experiment: s.name, Jobs: len(p.jobs), Runs: runs, Quick: opt.Quick,
			Seeded: opt.Seeded, Seed: opt.Seed, SynthN: opt.synthN, Program: program}
		if ck, err = openCheckpoint(checkpointPath(opt.Out, s.name), hdr, opt.Resume); err != nil {
			return nil, err
		}
		// Should writing the outputs fail below, the file stays (with
		// every job) for a resume; only success removes it.
		defer ck.close(false)
		agg, err = execute(ctx, s.name, p.jobs, opt, ck)
		if err != nil {
			return nil, ck.unfinished(err, len(p.jobs))
		}
	default:
		agg, err = execute(ctx, s.name, p.jobs, opt, nil)
	}
	if err != nil {
		return nil, err
	}
	res := &Result{Name: s.name, Title: s.title, Rows: agg.Rows(), Notes: p.notes, Insecure: label != "secure", Jobs: len(p.jobs)}
	if ck != nil {
		res.Resumed = len(ck.done)
	}
	if p.claims != nil {
		res.Claims = p.claims(agg)
	}
	res.Elapsed = time.Since(start)
	if err := writeOutputs(s, p, agg, res, opt, runs, label); err != nil {
		if ck != nil {
			// Every job finished and is recorded: a resume, once the
			// cause is fixed, writes the outputs without running any.
			return nil, ck.unfinished(err, len(p.jobs))
		}
		return nil, err
	}
	if ck != nil {
		if err := ck.close(true); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// writeOutputs writes the CSV, figures and summary of the finished run res
// into opt.Out and lists them in res.Files.
func writeOutputs(s spec, p *plan, agg *Aggregate, res *Result, opt Options, runs int, label string) error {
	base := filepath.Join(opt.Out, s.name)
	if err := writeCSV(base+".csv", res.Rows, label); err != nil {
		return err
	}
	res.Files = append(res.Files, base+".csv")
	for i, f := range p.figures {
		fb := base
		if len(p.figures) > 1 {
			fb = fmt.Sprintf("%s-%d", base, i+1)
		}
		files, err := render(f, s.title, agg, fb)
		if err != nil {
			return err
		}
		res.Files = append(res.Files, files...)
	}
	md := base + ".md"
	if err := os.WriteFile(md, []byte(summary(s, res, p, opt, runs, label)), 0o644); err != nil {
		return fmt.Errorf("experiment: %w", err)
	}
	res.Files = append(res.Files, md)
	return nil
}

func randomnessLabel(opt Options) string {
	if opt.Seeded {
		return fmt.Sprintf("insecure-seeded(%d)", opt.Seed)
	}
	return "secure"
}

// jobSeed derives a per-job seed so results do not depend on scheduling.
func jobSeed(seed uint64, name string, i int, salt string) uint64 {
	h := fnv.New64a()
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:8], seed)
	binary.LittleEndian.PutUint64(b[8:], uint64(i))
	h.Write(b[:])
	h.Write([]byte(name + "/" + salt))
	return h.Sum64()
}

// execute runs the jobs on a worker pool and aggregates their observations.
// With a checkpoint ck, the jobs it holds are aggregated from it instead of
// run, and every job that finishes is recorded in it.
func execute(ctx context.Context, name string, jobs []job, opt Options, ck *checkpoint) (*Aggregate, error) {
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	agg := newAggregate()
	idx := make(chan int)
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		done  atomic.Int64
	)
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
		cancel()
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range idx {
				var src noise.Source
				var rng *rand.Rand
				if opt.Seeded {
					src = noise.NewInsecureSeeded(jobSeed(opt.Seed, name, i, "noise"))
					rng = rand.New(rand.NewPCG(jobSeed(opt.Seed, name, i, "data"), uint64(i)))
				} else {
					src = noise.NewSecure()
					var b [16]byte
					if _, err := crand.Read(b[:]); err != nil {
						fail(err)
						continue
					}
					rng = rand.New(rand.NewPCG(binary.LittleEndian.Uint64(b[:8]), binary.LittleEndian.Uint64(b[8:])))
				}
				o, err := jobs[i](ctx, src, rng)
				if err == nil && ck != nil {
					err = ck.record(i, o)
				}
				if err != nil {
					fail(err)
					continue
				}
				agg.add(o)
				done.Add(1)
			}
		}()
	}
	if ck != nil {
		for i := range jobs {
			if o, ok := ck.done[i]; ok {
				agg.add(o)
				done.Add(1)
			}
		}
	}
	every := 250 * time.Millisecond
	if opt.ProgressLines {
		every = time.Minute
	}
	stopBar := progressBar(opt.Progress, name, len(jobs), &done, done.Load(), opt.ProgressLines, every)
feed:
	for i := range jobs {
		if ck != nil {
			if _, ok := ck.done[i]; ok {
				continue
			}
		}
		select {
		case idx <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(idx)
	wg.Wait()
	stopBar()
	if first != nil {
		return nil, first
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return agg, nil
}

// progressBar redraws a one-line bar on w every period until the returned
// function is called; the ETA extrapolates the jobs done after the first
// resumed ones (read from a checkpoint, not run here). With lines (w is a
// log file, not a terminal) it writes one whole line every period instead,
// and nothing for a run shorter than one period.
func progressBar(w io.Writer, name string, total int, done *atomic.Int64, resumed int64, lines bool, every time.Duration) func() {
	if w == nil || total == 0 {
		return func() {}
	}
	start := time.Now()
	status := func() string {
		d := int(done.Load())
		eta := ""
		if ran := d - int(resumed); ran > 0 && d < total {
			el := time.Since(start)
			eta = " ETA " + (el * time.Duration(total-d) / time.Duration(ran)).Round(time.Second).String()
		}
		round := 100 * time.Millisecond
		if lines {
			round = time.Second
		}
		return fmt.Sprintf("%d/%d jobs %s%s", d, total, time.Since(start).Round(round), eta)
	}
	draw := func() {
		if lines {
			fmt.Fprintf(w, "%s: %s\n", name, status())
			return
		}
		d := int(done.Load())
		const width = 30
		fill := width * d / total
		fmt.Fprintf(w, "\r%-15s [%s%s] %s   ", name, strings.Repeat("#", fill), strings.Repeat(" ", width-fill), status())
	}
	stop := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-stop:
				if !lines {
					draw()
					fmt.Fprintln(w)
				}
				return
			case <-t.C:
				draw()
			}
		}
	}()
	return func() { close(stop); <-finished }
}

// Aggregate accumulates observations into mean and sd per point.
type Aggregate struct {
	mu sync.Mutex
	m  map[aggKey]*welford
}

type aggKey struct {
	panel, xname, series, metric string
	x                            float64
}

type welford struct {
	n       int
	mean, s float64
	vals    []float64
	// q holds median, Q1, Q3 when read back from a CSV (vals is empty).
	q *[3]float64
}

// quartiles returns the median, Q1 and Q3 (linear interpolation).
func (w *welford) quartiles() (med, q1, q3 float64) {
	if w.q != nil {
		return w.q[0], w.q[1], w.q[2]
	}
	v := append([]float64(nil), w.vals...)
	sort.Float64s(v)
	at := func(p float64) float64 {
		if len(v) == 0 {
			return math.NaN()
		}
		h := p * float64(len(v)-1)
		i := int(math.Floor(h))
		if i+1 >= len(v) {
			return v[len(v)-1]
		}
		return v[i] + (h-float64(i))*(v[i+1]-v[i])
	}
	return at(0.5), at(0.25), at(0.75)
}

func newAggregate() *Aggregate { return &Aggregate{m: map[aggKey]*welford{}} }

func (a *Aggregate) add(os []obs) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, o := range os {
		k := aggKey{o.panel, o.xname, o.series, o.metric, o.x}
		w := a.m[k]
		if w == nil {
			w = &welford{}
			a.m[k] = w
		}
		w.n++
		w.vals = append(w.vals, o.v)
		d := o.v - w.mean
		w.mean += d / float64(w.n)
		w.s += d * (o.v - w.mean)
	}
}

// Rows returns the aggregated points sorted by panel, series, metric, x.
func (a *Aggregate) Rows() []Row {
	a.mu.Lock()
	defer a.mu.Unlock()
	rows := make([]Row, 0, len(a.m))
	for k, w := range a.m {
		sd := 0.0
		if w.n > 1 {
			sd = math.Sqrt(w.s / float64(w.n-1))
		}
		med, q1, q3 := w.quartiles()
		rows = append(rows, Row{Panel: k.panel, XName: k.xname, X: k.x, Series: k.series, Metric: k.metric, Mean: w.mean, SD: sd,
			Median: med, Q1: q1, Q3: q3, N: w.n})
	}
	sort.Slice(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if a.Panel != b.Panel {
			return a.Panel < b.Panel
		}
		if a.Series != b.Series {
			return a.Series < b.Series
		}
		if a.Metric != b.Metric {
			return a.Metric < b.Metric
		}
		return a.X < b.X
	})
	return rows
}

// series returns the rows of one curve sorted by x.
func (a *Aggregate) series(panel, series, metric string) []Row {
	var out []Row
	for _, r := range a.Rows() {
		if r.Panel == panel && r.Series == series && r.Metric == metric {
			out = append(out, r)
		}
	}
	return out
}

func (a *Aggregate) has(panel, series, metric string) bool {
	return len(a.series(panel, series, metric)) > 0
}

// at returns the row at x (nearest), or ok = false.
func (a *Aggregate) at(panel, series, metric string, x float64) (Row, bool) {
	best, ok := Row{}, false
	for _, r := range a.series(panel, series, metric) {
		if !ok || math.Abs(r.X-x) < math.Abs(best.X-x) {
			best, ok = r, true
		}
	}
	return best, ok
}

// CSVHeader is the header row of every experiment CSV.
var CSVHeader = []string{"panel", "x_name", "x", "series", "metric", "mean", "sd", "runs", "randomness", "median", "q1", "q3"}

func writeCSV(path string, rows []Row, randomness string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("experiment: %w", err)
	}
	w := csv.NewWriter(f)
	w.Write(CSVHeader)
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 8, 64) }
	for _, r := range rows {
		w.Write([]string{r.Panel, r.XName, g(r.X), r.Series, r.Metric, g(r.Mean), g(r.SD), strconv.Itoa(r.N), randomness,
			g(r.Median), g(r.Q1), g(r.Q3)})
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Close()
		return fmt.Errorf("experiment: write %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("experiment: write %s: %w", path, err)
	}
	return nil
}

func summary(s spec, res *Result, p *plan, opt Options, runs int, label string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s: %s\n\n", s.name, s.title)
	fmt.Fprintf(&b, "Reproduces: %s.\n\n", s.paper)
	mode := "full"
	if opt.Quick {
		mode = "quick"
	}
	if opt.Replot {
		fmt.Fprintf(&b, "Figures redrawn from `%s.csv` (--replot).\n\n", s.name)
	} else {
		fmt.Fprintf(&b, "Mode: %s, %d run(s) per point, elapsed %s", mode, runs, res.Elapsed.Round(time.Second))
		if res.Resumed > 0 {
			fmt.Fprintf(&b, " in this process, which resumed %d of the %d jobs from a checkpoint", res.Resumed, res.Jobs)
		}
		b.WriteString(".\n\n")
	}
	if res.Insecure {
		fmt.Fprintf(&b, "**Randomness: %s** — insecure, reproducible, for experiments only; these outputs are not privacy-protected releases.\n\n", label)
	} else {
		b.WriteString("Randomness: secure (crypto/rand); rerunning gives different numbers.\n\n")
	}
	for _, f := range res.Files {
		if strings.HasSuffix(f, ".png") {
			fmt.Fprintf(&b, "![%s](%s)\n\n", s.name, filepath.Base(f))
		}
	}
	for _, f := range p.figures {
		if f.caption != "" {
			fmt.Fprintf(&b, "%s\n\n", f.caption)
		}
	}
	if len(res.Claims) > 0 {
		b.WriteString("| paper claim | measured here | holds |\n| --- | --- | --- |\n")
		for _, c := range res.Claims {
			fmt.Fprintf(&b, "| %s | %s | %s |\n", c.Paper, c.Measured, c.Holds)
		}
		b.WriteString("\n")
	}
	for _, n := range p.notes {
		fmt.Fprintf(&b, "- %s\n", n)
	}
	fmt.Fprintf(&b, "\nData: `%s.csv` (columns %s).\n", s.name, strings.Join(CSVHeader, ", "))
	return b.String()
}

// fmtNum formats a number for tables.
func fmtNum(x float64) string { return strconv.FormatFloat(x, 'g', 4, 64) }

// meanSD formats a row.
func meanSD(r Row) string {
	if r.N > 1 {
		return fmt.Sprintf("%s ± %s", fmtNum(r.Mean), fmtNum(r.SD))
	}
	return fmtNum(r.Mean)
}

// readAggregate loads the rows of an experiment CSV written by writeCSV.
func readAggregate(path string) (*Aggregate, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", fmt.Errorf("experiment: replot: %w", err)
	}
	defer f.Close()
	recs, err := csv.NewReader(f).ReadAll()
	if err != nil {
		return nil, "", fmt.Errorf("experiment: replot %s: %w", path, err)
	}
	// Files written before the quartile columns existed have the first 9.
	if len(recs) == 0 || (strings.Join(recs[0], ",") != strings.Join(CSVHeader, ",") && strings.Join(recs[0], ",") != strings.Join(CSVHeader[:9], ",")) {
		return nil, "", fmt.Errorf("experiment: replot %s: not an experiment CSV (header %v)", path, recs[0])
	}
	a := newAggregate()
	label := "secure"
	for i, r := range recs[1:] {
		v := [6]float64{0, 0, 0, math.NaN(), math.NaN(), math.NaN()}
		cols := []int{2, 5, 6, 9, 10, 11}
		if len(r) < len(CSVHeader) {
			cols = cols[:3]
		}
		for j, c := range cols {
			if v[j], err = strconv.ParseFloat(r[c], 64); err != nil {
				return nil, "", fmt.Errorf("experiment: replot %s:%d: column %s: %w", path, i+2, CSVHeader[c], err)
			}
		}
		n, err := strconv.Atoi(r[7])
		if err != nil || n < 1 {
			return nil, "", fmt.Errorf("experiment: replot %s:%d: runs %q", path, i+2, r[7])
		}
		if r[8] != "secure" {
			label = r[8]
		}
		a.m[aggKey{r[0], r[1], r[3], r[4], v[0]}] = &welford{n: n, mean: v[1], s: v[2] * v[2] * float64(n-1), q: &[3]float64{v[3], v[4], v[5]}}
	}
	return a, label, nil
}
