package experiment

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/dplearn/dplearn/noise"
)

// interruptAfter runs the jobs of experiment name as Run does, with a
// checkpoint, on one worker (so exactly k jobs finish), and cancels the
// context once k jobs have finished: what Ctrl-C leaves behind. It
// returns the error execute gave.
func interruptAfter(t *testing.T, name string, opt Options, k int) error {
	t.Helper()
	var sp spec
	for _, s := range registry() {
		if s.name == name {
			sp = s
		}
	}
	e := &env{opt: opt, runs: opt.Runs, data: &dataCache{m: map[string]*table{}}}
	p, err := sp.build(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	prog, err := programHash()
	if err != nil {
		t.Fatal(err)
	}
	hdr := checkpointHeader{Experiment: name, Jobs: len(p.jobs), Runs: opt.Runs, Quick: opt.Quick,
		Seeded: opt.Seeded, Seed: opt.Seed, SynthN: opt.synthN, Program: prog}
	ck, err := openCheckpoint(checkpointPath(opt.Out, name), hdr, false)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var n atomic.Int64
	jobs := make([]job, len(p.jobs))
	for i, j := range p.jobs {
		jobs[i] = func(ctx context.Context, src noise.Source, rng *rand.Rand) ([]obs, error) {
			if n.Load() >= int64(k) {
				return nil, ctx.Err()
			}
			o, err := j(ctx, src, rng)
			if n.Add(1) == int64(k) {
				cancel()
			}
			return o, err
		}
	}
	opt.Workers = 1
	_, err = execute(ctx, name, jobs, opt, ck)
	if cerr := ck.close(false); cerr != nil {
		t.Fatal(cerr)
	}
	return err
}

// TestCheckpointResumeIsExact interrupts a seeded utility-shapes run after
// 5 of its 16 jobs and resumes it: the CSV must be byte-identical to an
// uninterrupted run's, the resumed run must run only the 11 missing jobs,
// and the checkpoint must be gone afterwards. A resume that re-derived the
// job seeds differently, lost a recorded observation or rounded one would
// change the CSV.
func TestCheckpointResumeIsExact(t *testing.T) {
	// Two workers record concurrently (the race detector's CI step runs
	// this); the CSV's 8 significant digits do not see the order in
	// which the workers' observations were summed.
	base := Options{Runs: 2, Seeded: true, Seed: 9, Workers: 2, synthN: 150, Checkpoint: true}
	full := base
	full.Out = t.TempDir()
	ref, err := Run(context.Background(), "utility-shapes", full)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(checkpointPath(full.Out, "utility-shapes")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("checkpoint left after a finished run: %v", err)
	}
	want, err := os.ReadFile(filepath.Join(full.Out, "utility-shapes.csv"))
	if err != nil {
		t.Fatal(err)
	}

	part := base
	part.Out = t.TempDir()
	if err := interruptAfter(t, "utility-shapes", part, 5); !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted run: %v, want context.Canceled", err)
	}
	// Without Resume the leftover checkpoint is refused, not overwritten.
	if _, err := Run(context.Background(), "utility-shapes", part); !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "utility-shapes.jobs") {
		t.Fatalf("run over a leftover checkpoint: %v, want ErrCheckpoint naming the file", err)
	}
	part.Resume = true
	res, err := Run(context.Background(), "utility-shapes", part)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Resumed != 5 || res[0].Jobs != ref[0].Jobs || res[0].Jobs != 16 {
		t.Fatalf("resumed %d of %d jobs, want 5 of 16 (full run: %d)", res[0].Resumed, res[0].Jobs, ref[0].Jobs)
	}
	got, err := os.ReadFile(filepath.Join(part.Out, "utility-shapes.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("resumed CSV differs from the uninterrupted run's:\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(checkpointPath(part.Out, "utility-shapes")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("checkpoint left after the resumed run finished: %v", err)
	}
	md, err := os.ReadFile(filepath.Join(part.Out, "utility-shapes.md"))
	if err != nil || !strings.Contains(string(md), "resumed 5 of the 16 jobs") {
		t.Fatalf("summary does not say the run was resumed (%v)", err)
	}
}

// TestCheckpointLoad checks what a resume accepts and refuses, on
// hand-written files: a line cut short by a kill is dropped (its job
// reruns), and a different run, a corrupt line, a job recorded twice or
// out of range are errors naming the problem.
func TestCheckpointLoad(t *testing.T) {
	hdr := checkpointHeader{Experiment: "x", Jobs: 3, Runs: 1, Seeded: true, Seed: 4, Program: "abc"}
	head := `{"experiment":"x","jobs":3,"runs":1,"quick":false,"seeded":true,"seed":4,"synth_n":0,"program_sha256":"abc"}` + "\n"
	job0 := `{"job":0,"obs":[["p","epsilon","s","m","0.5","NaN"],["p","epsilon","s","m","1","-Inf"]]}` + "\n"
	job2 := `{"job":2,"obs":[["p","epsilon","s","m","0.5","0.1"]]}` + "\n"
	for _, tc := range []struct {
		name, file string
		done       []int
		err        string
	}{
		{"complete", head + job0 + job2, []int{0, 2}, ""},
		{"cut short", head + job0 + job2[:20], []int{0}, ""},
		{"header only", head, nil, ""},
		{"header cut short", head[:30], nil, "no complete header"},
		{"other seed", strings.Replace(head, `"seed":4`, `"seed":5`, 1) + job0, nil, "seed 5 there, 4 here"},
		{"other binary", strings.Replace(head, "abc", "abd", 1) + job0, nil, "executable sha256 abd there, abc here"},
		{"other runs", strings.Replace(head, `"runs":1`, `"runs":2`, 1), nil, "runs 2 there, 1 here"},
		{"corrupt line", head + "{garbage\n" + job2, nil, ":2:"},
		{"twice", head + job0 + job0, nil, "job 0 recorded twice"},
		{"out of range", head + strings.Replace(job2, `"job":2`, `"job":3`, 1), nil, "job 3 out of range"},
		{"bad number", head + strings.Replace(job2, `"0.1"`, `"zero"`, 1), nil, "job 2: observation 0: value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.jobs")
			if err := os.WriteFile(path, []byte(tc.file), 0o644); err != nil {
				t.Fatal(err)
			}
			ck, err := openCheckpoint(path, hdr, true)
			if tc.err != "" {
				if !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want ErrCheckpoint containing %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer ck.close(false)
			if len(ck.done) != len(tc.done) || ck.recorded() != len(tc.done) {
				t.Fatalf("loaded %d jobs (recorded %d), want %v", len(ck.done), ck.recorded(), tc.done)
			}
			for _, i := range tc.done {
				if _, ok := ck.done[i]; !ok {
					t.Fatalf("job %d not loaded", i)
				}
			}
			// The file is rewritten without the cut-short line, so a
			// record appends a whole line after whole lines.
			if err := ck.record(1, []obs{{panel: "p", xname: "epsilon", series: "s", metric: "m", x: 2, v: 3}}); err != nil {
				t.Fatal(err)
			}
			b, _ := os.ReadFile(path)
			ck2 := &checkpoint{path: path, done: map[int][]obs{}}
			if err := ck2.load(b, hdr); err != nil || len(ck2.done) != len(tc.done)+1 {
				t.Fatalf("reload after a record: %v, %d jobs", err, len(ck2.done))
			}
		})
	}
	// A second process (here, a second open file description) cannot
	// resume a run another one is writing.
	path := filepath.Join(t.TempDir(), "x.jobs")
	first, err := openCheckpoint(path, hdr, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openCheckpoint(path, hdr, true); !errors.Is(err, ErrCheckpoint) || !strings.Contains(err.Error(), "in use by another run of x") {
		t.Fatalf("second open: %v, want ErrCheckpoint: in use", err)
	}
	if err := first.close(true); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("finished checkpoint not removed: %v", err)
	}

	// NaN and -Inf survive the round trip.
	ck := &checkpoint{path: "x", done: map[int][]obs{}}
	if err := ck.load([]byte(head+job0), hdr); err != nil {
		t.Fatal(err)
	}
	if o := ck.done[0]; len(o) != 2 || o[0].v == o[0].v || o[1].v > -1e308 || o[0].x != 0.5 {
		t.Fatalf("round trip: %+v", o)
	}
}

// TestCheckpointKeptWhenOutputsFail: when the jobs finish but the outputs
// cannot be written (here NAME.csv is a directory), the checkpoint stays
// with every job, and a resume after the fix runs none of them again.
func TestCheckpointKeptWhenOutputsFail(t *testing.T) {
	opt := Options{Out: t.TempDir(), Runs: 1, Seeded: true, Seed: 3, Workers: 2, synthN: 150, Checkpoint: true}
	csv := filepath.Join(opt.Out, "utility-shapes.csv")
	if err := os.Mkdir(csv, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := Run(context.Background(), "utility-shapes", opt)
	var unfinished *UnfinishedError
	if !errors.As(err, &unfinished) || unfinished.Done != 8 || unfinished.Jobs != 8 || !strings.Contains(err.Error(), "is a directory") {
		t.Fatalf("outputs over a directory: error %v, want an UnfinishedError keeping 8 of 8 jobs and naming the cause", err)
	}
	b, err := os.ReadFile(checkpointPath(opt.Out, "utility-shapes"))
	if err != nil {
		t.Fatalf("checkpoint lost when the outputs failed: %v", err)
	}
	if n := bytes.Count(b, []byte{'\n'}); n != 1+8 {
		t.Fatalf("checkpoint has %d lines, want the header and 8 jobs", n)
	}
	if err := os.Remove(csv); err != nil {
		t.Fatal(err)
	}
	opt.Resume = true
	res, err := Run(context.Background(), "utility-shapes", opt)
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Resumed != 8 || res[0].Jobs != 8 {
		t.Fatalf("resumed %d of %d jobs, want all 8", res[0].Resumed, res[0].Jobs)
	}
}
