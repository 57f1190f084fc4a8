package experiment

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/dplearn/dplearn/internal/filelock"
)

// # Checkpoints: a long run that stops loses only its unfinished jobs
//
// Some experiments run for hours (utility-shapes, utility-refs). With
// Options.Checkpoint set, execute appends every finished job's
// observations to NAME.jobs in the output directory, one JSON line per
// job after a header line that names the run; runOne removes the file
// once the experiment's CSV, figures and summary are written. After an
// interruption (Ctrl-C, a killed process, a failed job), a run with
// Options.Resume reads the file back, feeds the recorded observations to
// the aggregate and runs only the jobs it does not hold.
//
// Resuming is exact for seeded runs: a job's noise and data streams are
// functions of (seed, experiment, job index) alone (jobSeed), so job i
// gives the same observations whichever process runs it. The header
// therefore pins everything that changes the job list or a job's output:
// the experiment, the number of jobs, runs, quick, the seed and whether
// the run is seeded, the synthetic size, and the SHA-256 of the running
// executable (two builds may compute different numbers; mixing them in
// one table would be a silent wrong answer). Any difference is an error
// naming the field, and so is a checkpoint that exists when Resume is not
// set: starting over would discard finished work, so the user chooses
// (resume, or delete the file). A line cut short by a kill mid-write is
// dropped and its job rerun: the file is cut back to its last whole line
// before new lines are appended, and no whole line is ever rewritten. The
// open file holds an exclusive lock (internal/filelock), so a second
// process resuming the same run is refused instead of appending the same
// jobs beside the first.

// checkpointHeader is the first line of a checkpoint file.
type checkpointHeader struct {
	Experiment string `json:"experiment"`
	Jobs       int    `json:"jobs"`
	Runs       int    `json:"runs"`
	Quick      bool   `json:"quick"`
	Seeded     bool   `json:"seeded"`
	Seed       uint64 `json:"seed"`
	SynthN     int    `json:"synth_n"`
	Program    string `json:"program_sha256"`
}

// checkpointLine is one finished job. Floats are strings
// (strconv.FormatFloat 'g', -1: exact, and NaN and ±Inf survive, which
// JSON numbers cannot carry).
type checkpointLine struct {
	Job int         `json:"job"`
	Obs [][6]string `json:"obs"`
}

// checkpointPath is the checkpoint file of experiment name in dir.
func checkpointPath(dir, name string) string { return filepath.Join(dir, name+".jobs") }

// programHash returns the SHA-256 of the running executable.
func programHash() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("experiment: checkpoint: locate the executable: %w", err)
	}
	f, err := os.Open(exe)
	if err != nil {
		return "", fmt.Errorf("experiment: checkpoint: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("experiment: checkpoint: hash %s: %w", exe, err)
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// checkpoint records finished jobs of one experiment.
type checkpoint struct {
	path string
	mu   sync.Mutex
	f    *os.File
	// done holds the observations loaded from an earlier run by job index;
	// n counts them and the jobs recorded since (under mu).
	done map[int][]obs
	n    int
}

// UnfinishedError is a run that stopped (a failed job, a cancelled
// context) with a checkpoint: Done of its Jobs are recorded in Path and a
// run with Options.Resume continues from them.
type UnfinishedError struct {
	Path       string
	Done, Jobs int
	Err        error
}

func (e *UnfinishedError) Error() string {
	return fmt.Sprintf("%v (%d of %d jobs finished and are kept in %s: resume to continue)", e.Err, e.Done, e.Jobs, e.Path)
}

func (e *UnfinishedError) Unwrap() error { return e.Err }

// unfinished closes the checkpoint, keeping its file, and returns err as
// an *UnfinishedError saying how many of jobs it holds.
func (c *checkpoint) unfinished(err error, jobs int) error {
	if cerr := c.close(false); cerr != nil {
		return errors.Join(err, cerr)
	}
	return &UnfinishedError{Path: c.path, Done: c.recorded(), Jobs: jobs, Err: err}
}

// recorded is the number of jobs the checkpoint holds.
func (c *checkpoint) recorded() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// ErrCheckpoint marks an error about a checkpoint file: one left by an
// earlier run when Resume is not set, or one that does not match this run.
var ErrCheckpoint = errors.New("experiment: checkpoint")

// errCheckpointLeft is the error for a checkpoint at path, of experiment
// name, that a run without Resume would overwrite.
func errCheckpointLeft(path, name string) error {
	return fmt.Errorf("%w: %s holds the finished jobs of an unfinished run of %s; resume it, or delete the file to start over", ErrCheckpoint, path, name)
}

// openCheckpoint opens the checkpoint of the run hdr describes, locked
// against a second process (filelock; where the system has no file locks
// it runs unlocked). With resume it loads the finished jobs of an existing
// file and cuts off a last line cut short by a kill, leaving every whole
// line where it is (nothing finished is rewritten, so a crash here loses
// nothing); without resume it refuses an existing file; otherwise it
// writes the header.
func openCheckpoint(path string, hdr checkpointHeader, resume bool) (*checkpoint, error) {
	c := &checkpoint{path: path, done: map[int][]obs{}}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	fail := func(err error) (*checkpoint, error) {
		f.Close()
		return nil, err
	}
	switch ok, err := filelock.TryLock(f); {
	case errors.Is(err, filelock.ErrUnsupported):
	case err != nil:
		return fail(fmt.Errorf("%w: lock %s: %w", ErrCheckpoint, path, err))
	case !ok:
		return fail(fmt.Errorf("%w: %s is in use by another run of %s", ErrCheckpoint, path, hdr.Experiment))
	}
	old, err := io.ReadAll(f)
	if err != nil {
		return fail(fmt.Errorf("%w: %s: %w", ErrCheckpoint, path, err))
	}
	keep := int64(0)
	switch {
	case len(old) == 0:
	case !resume:
		return fail(errCheckpointLeft(path, hdr.Experiment))
	default:
		if err := c.load(old, hdr); err != nil {
			return fail(err)
		}
		keep = int64(bytes.LastIndexByte(old, '\n') + 1)
	}
	if err := f.Truncate(keep); err != nil {
		return fail(fmt.Errorf("%w: %s: %w", ErrCheckpoint, path, err))
	}
	if _, err := f.Seek(keep, io.SeekStart); err != nil {
		return fail(fmt.Errorf("%w: %s: %w", ErrCheckpoint, path, err))
	}
	if keep == 0 {
		b, err := json.Marshal(hdr)
		if err == nil {
			_, err = f.Write(append(b, '\n'))
		}
		if err != nil {
			return fail(fmt.Errorf("%w: %s: %w", ErrCheckpoint, path, err))
		}
	}
	c.f = f
	return c, nil
}

// load parses an existing checkpoint written for hdr.
func (c *checkpoint) load(data []byte, hdr checkpointHeader) error {
	bad := func(line int, format string, a ...any) error {
		return fmt.Errorf("%w: %s:%d: %s", ErrCheckpoint, c.path, line, fmt.Sprintf(format, a...))
	}
	// A kill mid-write can leave the last line without its newline: drop
	// it (its job reruns). Any other unreadable line is corruption.
	lines := bytes.Split(data, []byte{'\n'})
	lines = lines[:len(lines)-1]
	if len(lines) == 0 {
		return bad(1, "no complete header line (delete the file to start over)")
	}
	var got checkpointHeader
	if err := json.Unmarshal(lines[0], &got); err != nil {
		return bad(1, "not a checkpoint header: %v", err)
	}
	if d := headerDiff(got, hdr); d != "" {
		return bad(1, "written by a different run (%s); rerun with the same flags and binary, or delete the file to start over", d)
	}
	for k, raw := range lines[1:] {
		n := k + 2
		var l checkpointLine
		if err := json.Unmarshal(raw, &l); err != nil {
			return bad(n, "%v", err)
		}
		if l.Job < 0 || l.Job >= hdr.Jobs {
			return bad(n, "job %d out of range [0, %d)", l.Job, hdr.Jobs)
		}
		if _, dup := c.done[l.Job]; dup {
			return bad(n, "job %d recorded twice", l.Job)
		}
		o, err := decodeJob(l)
		if err != nil {
			return bad(n, "job %d: %v", l.Job, err)
		}
		c.done[l.Job] = o
	}
	c.n = len(c.done)
	return nil
}

// headerDiff names the first field in which two headers differ, or "".
func headerDiff(got, want checkpointHeader) string {
	for _, f := range []struct {
		name      string
		got, want any
	}{
		{"experiment", got.Experiment, want.Experiment},
		{"jobs", got.Jobs, want.Jobs},
		{"runs", got.Runs, want.Runs},
		{"quick", got.Quick, want.Quick},
		{"seeded", got.Seeded, want.Seeded},
		{"seed", got.Seed, want.Seed},
		{"synthetic size", got.SynthN, want.SynthN},
		{"executable sha256", got.Program, want.Program},
	} {
		if f.got != f.want {
			return fmt.Sprintf("%s %v there, %v here", f.name, f.got, f.want)
		}
	}
	return ""
}

func encodeJob(i int, os []obs) checkpointLine {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	l := checkpointLine{Job: i, Obs: make([][6]string, len(os))}
	for k, o := range os {
		l.Obs[k] = [6]string{o.panel, o.xname, o.series, o.metric, g(o.x), g(o.v)}
	}
	return l
}

func decodeJob(l checkpointLine) ([]obs, error) {
	out := make([]obs, len(l.Obs))
	for k, r := range l.Obs {
		x, err := strconv.ParseFloat(r[4], 64)
		if err != nil {
			return nil, fmt.Errorf("observation %d: x: %w", k, err)
		}
		v, err := strconv.ParseFloat(r[5], 64)
		if err != nil {
			return nil, fmt.Errorf("observation %d: value: %w", k, err)
		}
		out[k] = obs{panel: r[0], xname: r[1], series: r[2], metric: r[3], x: x, v: v}
	}
	return out, nil
}

// record appends job i's observations as one line.
func (c *checkpoint) record(i int, o []obs) error {
	b, err := json.Marshal(encodeJob(i, o))
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, err := c.f.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("%w: %s: %w", ErrCheckpoint, c.path, err)
	}
	c.n++
	return nil
}

// close closes the file; remove also deletes it (the experiment finished),
// while the lock is still held. Only the first call acts, so a deferred
// close(false) after a successful close(true) does nothing.
func (c *checkpoint) close(remove bool) error {
	if c.f == nil {
		return nil
	}
	var err error
	if remove {
		err = os.Remove(c.path)
	}
	if cerr := c.f.Close(); err == nil {
		err = cerr
	}
	c.f = nil
	if err != nil {
		return fmt.Errorf("%w: %w", ErrCheckpoint, err)
	}
	return nil
}
