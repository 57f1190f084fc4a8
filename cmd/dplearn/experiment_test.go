package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/experiment"
)

func TestExperimentCommand(t *testing.T) {
	dir := t.TempDir()
	out, err := runCLI(t, "experiment", "gfm-noise-vs-dim", "--out", dir, "--data-dir", dir, "--seed", "4", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Randomness  string `json:"randomness"`
		Insecure    bool   `json:"insecure_randomness"`
		Experiments []struct {
			Name   string   `json:"name"`
			Files  []string `json:"files"`
			Claims []struct {
				Paper, Measured, Holds string
			} `json:"claims"`
		} `json:"experiments"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if !got.Insecure || got.Randomness != "insecure-seeded(4)" || len(got.Experiments) != 1 {
		t.Fatalf("%+v", got)
	}
	e := got.Experiments[0]
	if e.Name != "gfm-noise-vs-dim" || len(e.Files) != 4 || len(e.Claims) == 0 {
		t.Fatalf("%+v", e)
	}
	for _, f := range e.Files {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}

	// Words by default.
	out, err = runCLI(t, "experiment", "gfm-noise-vs-dim", "--out", dir, "--data-dir", dir)
	if err != nil || !strings.Contains(out, "paper:") || strings.Contains(out, "INSECURE") {
		t.Errorf("text output (err %v):\n%s", err, out)
	}
}

func TestExperimentCommandErrors(t *testing.T) {
	dir := t.TempDir()
	// A checkpoint left by another run: refused without --resume (never
	// overwritten), and refused with it because it names another binary.
	left := t.TempDir()
	if err := os.WriteFile(filepath.Join(left, "gfm-noise-vs-dim.jobs"), []byte(`{"experiment":"gfm-noise-vs-dim","program_sha256":"00"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"experiment", "gfm-linear", "--out", dir, "--data-dir", filepath.Join(dir, "nope")}, "--data-dir"},
		{[]string{"experiment", "gfm-linear", "--out", dir, "--data-dir", dir}, "--data-dir"}, // directory without the CSVs
		{[]string{"experiment", "nosuch", "--out", dir, "--data-dir", dir}, "unknown experiment"},
		{[]string{"experiment", "all", "--runs", "-2", "--data-dir", dir}, "--runs"},
		{[]string{"experiment", "all", "--format", "xml", "--data-dir", dir}, "--format"},
		{[]string{"experiment", "gfm-noise-vs-dim", "--out", left, "--seed", "1"}, "gfm-noise-vs-dim.jobs holds the finished jobs of an unfinished run of gfm-noise-vs-dim; resume it, or delete the file to start over (flag --resume)"},
		{[]string{"experiment", "all", "--out", left, "--seed", "1"}, "gfm-noise-vs-dim.jobs holds"},
		{[]string{"experiment", "gfm-noise-vs-dim", "--out", left, "--seed", "1", "--resume"}, "written by a different run"},
	}
	for _, tc := range tests {
		_, err := runCLI(t, tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want mention of %q", tc.args, err, tc.want)
		}
	}
}

// TestExperimentFreshClone: with no name the command lists the
// experiments; with no --data-dir it runs on the embedded data, from a
// directory with no ../shared next to it.
func TestExperimentFreshClone(t *testing.T) {
	out, err := runCLI(t, "experiment")
	if err != nil || !strings.Contains(out, "gfm-noise-vs-dim") || !strings.Contains(out, "dppp-fashion") {
		t.Fatalf("listing (err %v):\n%s", err, out)
	}
	dir := t.TempDir()
	t.Chdir(dir)
	if _, err := runCLI(t, "experiment", "gfm-noise-vs-dim", "--out", dir, "--seed", "1"); err != nil {
		t.Fatalf("experiment with no flags, no ../shared: %v", err)
	}
	// The experiment package's TestEmbeddedDataFallback loads every real
	// dataset from the embedded copies; the end-to-end run on one takes
	// ~20 s on 2 cores.
	if os.Getenv("DPLEARN_LONG_TESTS") == "" {
		t.Skip("set DPLEARN_LONG_TESTS=1 for the run on embedded real data")
	}
	out, err = runCLI(t, "experiment", "dppp-smokeban", "--out", dir, "--quick", "--runs", "1", "--seed", "2", "--format", "json")
	if err != nil {
		t.Fatalf("experiment without ../shared: %v", err)
	}
	if !strings.Contains(out, "SmokeBan.csv (embedded copy in exampledata)") {
		t.Fatalf("output does not say the embedded data was used:\n%s", out)
	}
}

// TestExperimentSaysWhatWasSkipped: an experiment whose external dataset is
// absent says so in the text output (dppp-fashion without the Debian
// package); other notes stay in the summary file.
func TestExperimentSaysWhatWasSkipped(t *testing.T) {
	var b strings.Builder
	printExperiments(&b, []*experiment.Result{{Name: "dppp-fashion", Title: "t",
		Notes: []string{"Skipped: Fashion-MNIST not found at /usr/share/datasets/fashion-mnist", "a long methods note"}}}, experiment.Options{})
	out := b.String()
	if !strings.Contains(out, "Skipped: Fashion-MNIST not found") || strings.Contains(out, "methods note") || !strings.Contains(out, "0 points") {
		t.Fatalf("output:\n%s", out)
	}
}

// TestExperimentUtilityRefsCLI runs the README's `dplearn experiment
// utility-refs` through the CLI (--quick, one run): every reference beside
// dplearn's mechanisms, its files written, its claims stated.
func TestExperimentUtilityRefsCLI(t *testing.T) {
	if testing.Short() {
		t.Skip("short: a seeded experiment run (about 6 s)")
	}
	dir := t.TempDir()
	out, err := runCLI(t, "experiment", "utility-refs", "--quick", "--runs", "1", "--out", dir, "--seed", "1", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Experiments []struct {
			Name   string   `json:"name"`
			Files  []string `json:"files"`
			Claims []struct {
				Paper, Measured, Holds string
			} `json:"claims"`
		} `json:"experiments"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not one JSON object: %v\n%s", err, out)
	}
	if len(got.Experiments) != 1 || got.Experiments[0].Name != "utility-refs" || len(got.Experiments[0].Claims) == 0 {
		t.Fatalf("%+v", got)
	}
	var text strings.Builder
	for _, c := range got.Experiments[0].Claims {
		text.WriteString(c.Paper + " " + c.Measured + "\n")
	}
	for _, ref := range []string{"AdaSSP", "DP-GD"} {
		if !strings.Contains(text.String(), ref) {
			t.Errorf("no claim names %s:\n%s", ref, text.String())
		}
	}
	for _, f := range got.Experiments[0].Files {
		if _, err := os.Stat(f); err != nil {
			t.Error(err)
		}
	}
}

// TestAutoSweepThroughCLI runs `dplearn experiment auto-sweep` (the sweep
// the README lists behind --mechanism auto's rule) through the CLI on one
// seeded split and checks its claims: one per table and ε (3 × 6), each
// naming the path regress.AutoPath takes at that cell's N·ε/d (gaussian-fm
// at diabetes ε = 0.1 and CPS1988 ε ≥ 8, noisygd elsewhere), the hindsight
// best, and a verdict that is "yes" or "no".
func TestAutoSweepThroughCLI(t *testing.T) {
	e := runSweepJSON(t, "auto-sweep")
	if e.Name != "auto-sweep" || len(e.Claims) != 18 || len(e.Files) != 4 {
		t.Fatalf("%s: %d claims, %d files", e.Name, len(e.Claims), len(e.Files))
	}
	ls := map[string]bool{"cps1988, ε = 8 ": true, "cps1988, ε = 32 ": true, "diabetes, ε = 0.1 ": true}
	for _, c := range e.Claims {
		cell := c.Paper[:strings.Index(c.Paper, "(")]
		want := "auto: noisygd)"
		if ls[cell] {
			want = "auto: gaussian-fm)"
		}
		if !strings.Contains(c.Paper, want) || (c.Holds != "yes" && c.Holds != "no") || !strings.Contains(c.Measured, "hindsight best ") || !strings.Contains(c.Measured, "auto ") {
			t.Errorf("claim %q / %q / %q, want path %q", c.Paper, c.Measured, c.Holds, want)
		}
	}
}

// TestHuberSweepThroughCLI runs the README's `dplearn experiment
// huber-sweep` through the CLI: one claim per table, ε and mechanism (3 ×
// 4 × 2), each judging that mechanism's default, the Huber loss at
// η = 0.5, against the best reference, beside its squared loss.
func TestHuberSweepThroughCLI(t *testing.T) {
	e := runSweepJSON(t, "huber-sweep")
	if e.Name != "huber-sweep" || len(e.Claims) != 24 || len(e.Files) != 4 {
		t.Fatalf("%s: %d claims, %d files", e.Name, len(e.Claims), len(e.Files))
	}
	for i, c := range e.Claims {
		mech := []string{"noisygd", "objpert"}[i%2]
		if !strings.Contains(c.Paper, mech+"'s default (Huber, η = 0.5)") || (c.Holds != "yes" && c.Holds != "no") ||
			!strings.Contains(c.Measured, mech+" default ") || !strings.Contains(c.Measured, mech+" squared ") {
			t.Errorf("claim %d %q / %q / %q: want %s's default at η = 0.5 beside its squared loss", i, c.Paper, c.Measured, c.Holds, mech)
		}
	}
}

// sweepResult is one experiment of `dplearn experiment --format json`.
type sweepResult struct {
	Name   string
	Files  []string
	Claims []struct{ Paper, Measured, Holds string }
}

// runSweepJSON runs one split of the named experiment through the CLI
// (seed 3, JSON) and returns its result.
func runSweepJSON(t *testing.T, name string) sweepResult {
	t.Helper()
	out, err := runCLI(t, "experiment", name, "--out", t.TempDir(), "--runs", "1", "--seed", "3", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct{ Experiments []sweepResult }
	if err := json.Unmarshal([]byte(out), &got); err != nil || len(got.Experiments) != 1 {
		t.Fatalf("not one experiment: %v\n%s", err, out)
	}
	return got.Experiments[0]
}

// TestExperimentResumeThroughCLI continues an unfinished run through the
// CLI, as a user does after an interruption, and gets the uninterrupted
// run's CSV byte for byte. The unfinished run is made deterministic: its
// CSV path is a directory, so writing the outputs fails after every job
// finished and the CLI keeps them all in NAME.jobs (saying --resume); the
// test then drops all but the first two jobs' lines, as if the run had been
// stopped there, and resumes.
func TestExperimentResumeThroughCLI(t *testing.T) {
	const name = "irls-vs-n"
	args := func(dir string, extra ...string) []string {
		return append([]string{"experiment", name, "--out", dir, "--quick", "--runs", "1", "--seed", "6", "--workers", "2"}, extra...)
	}
	full := t.TempDir()
	if _, err := runCLI(t, args(full)...); err != nil {
		t.Fatal(err)
	}
	want := readFile(t, filepath.Join(full, name+".csv"))

	part := t.TempDir()
	csvPath := filepath.Join(part, name+".csv")
	if err := os.Mkdir(csvPath, 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := runCLI(t, args(part)...); err == nil || !strings.Contains(err.Error(), "is a directory") || !strings.Contains(err.Error(), "jobs finished and are kept in") || !strings.Contains(err.Error(), "--resume") {
		t.Fatalf("run whose outputs cannot be written: error %v, want the cause, the kept jobs and --resume", err)
	}
	if err := os.Remove(csvPath); err != nil {
		t.Fatal(err)
	}
	jobsPath := filepath.Join(part, name+".jobs")
	lines := strings.SplitAfter(readFile(t, jobsPath), "\n")
	if len(lines) < 1+3+1 { // header, ≥ 3 jobs, the empty tail
		t.Fatalf("checkpoint has %d lines, want a header and at least 3 jobs", len(lines))
	}
	jobs := len(lines) - 2
	if err := os.WriteFile(jobsPath, []byte(strings.Join(lines[:3], "")), 0o644); err != nil {
		t.Fatal(err)
	}

	out, err := runCLI(t, args(part, "--resume", "--format", "json")...)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, csvPath); got != want {
		t.Fatalf("resumed CSV differs from the uninterrupted run's:\n%s\nwant\n%s", got, want)
	}
	if _, err := os.Stat(jobsPath); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("checkpoint left after the resumed run finished: %v", err)
	}
	if !strings.Contains(readFile(t, filepath.Join(part, name+".md")), fmt.Sprintf("resumed 2 of the %d jobs", jobs)) {
		t.Fatalf("summary does not say 2 of %d jobs were resumed", jobs)
	}
	if !strings.Contains(out, `"name": "`+name+`"`) && !strings.Contains(out, `"name":"`+name+`"`) {
		t.Fatalf("resumed run's JSON does not name the experiment:\n%s", out)
	}
}
