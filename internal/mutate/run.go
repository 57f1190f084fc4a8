package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"time"
)

// Outcome is the verdict on one mutant.
type Outcome string

// The outcomes. Killed: the named test failed under the mutation (the
// wanted result). Survived: it passed. Errored: the verdict is not
// trustworthy (the entry does not apply, the mutated code does not
// compile, the test matches nothing, times out, or fails without the
// mutation).
const (
	Killed   Outcome = "killed"
	Survived Outcome = "survived"
	Errored  Outcome = "errored"
)

// Result is the run of one mutant.
type Result struct {
	Mutant  Mutant
	Outcome Outcome
	// Killers are the top-level tests that failed (Killed only).
	Killers []string
	// Detail says why a mutant errored.
	Detail  string
	Elapsed time.Duration
	// Output is the test output (kept for errored and survived mutants).
	Output string
}

// testRun is one `go test` invocation.
type testRun struct {
	Root    string // module root: the command's directory
	Overlay string // "" for none
	Package string
	Run     string
	Short   bool
	Timeout time.Duration // go test -timeout; the command gets twice that plus build time
}

// args returns the go test command line.
func (t testRun) args() []string {
	a := []string{"test", "-count=1"}
	if t.Overlay != "" {
		a = append(a, "-overlay="+t.Overlay)
	}
	if t.Short {
		a = append(a, "-short")
	}
	a = append(a, "-timeout="+t.Timeout.String(), "-run", t.Run, t.Package)
	return a
}

// exec runs the tests and returns their combined output and whether the
// command exited non-zero; err is set only when it could not run or was
// stopped by the outer deadline.
func (t testRun) exec(ctx context.Context) (out string, failed bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, 2*t.Timeout+5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", t.args()...)
	cmd.Dir = t.Root
	cmd.Env = os.Environ()
	cmd.WaitDelay = 10 * time.Second
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	runErr := cmd.Run()
	if ctx.Err() != nil {
		return b.String(), true, fmt.Errorf("go test did not finish in %v: %w", 2*t.Timeout+5*time.Minute, ctx.Err())
	}
	var ee *exec.ExitError
	switch {
	case runErr == nil:
		return b.String(), false, nil
	case errors.As(runErr, &ee):
		return b.String(), true, nil
	default:
		return b.String(), true, fmt.Errorf("go test: %w", runErr)
	}
}

var (
	failLine   = regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`)
	buildError = regexp.MustCompile(`\[(build|setup) failed\]`)
)

// Classify turns the output of `go test` under a mutation into an outcome,
// the failing top-level tests and, for errors, a reason.
func Classify(out string, failed bool) (Outcome, []string, string) {
	if !failed {
		if strings.Contains(out, "no tests to run") {
			return Errored, nil, "the test regexp matches no test"
		}
		return Survived, nil, ""
	}
	if strings.Contains(out, "panic: test timed out") {
		return Errored, nil, "the test timed out under the mutation"
	}
	if buildError.MatchString(out) {
		return Errored, nil, "the mutated package does not build"
	}
	seen := map[string]bool{}
	var killers []string
	for _, m := range failLine.FindAllStringSubmatch(out, -1) {
		top, _, _ := strings.Cut(m[1], "/")
		if !seen[top] {
			seen[top] = true
			killers = append(killers, top)
		}
	}
	if len(killers) > 0 {
		return Killed, killers, ""
	}
	if strings.Contains(out, "panic:") {
		return Killed, []string{"(panic)"}, ""
	}
	return Errored, nil, "go test failed without a failing test"
}

// Options configure a run.
type Options struct {
	Root    string
	Short   bool
	Timeout time.Duration
	// Baseline runs each distinct test once without mutation first; a
	// mutant whose test fails (or matches nothing) unmutated errors.
	Baseline bool
	// Log, when set, receives progress lines.
	Log func(format string, args ...any)
}

// Run applies each mutant by overlay and runs its test, one at a time (the
// build of one mutant already uses every core).
func Run(ctx context.Context, ms []Mutant, opt Options) ([]Result, error) {
	logf := opt.Log
	if logf == nil {
		logf = func(string, ...any) {}
	}
	base := map[string]string{} // test key → "" if fine, else reason
	if opt.Baseline {
		keys := []string{}
		runs := map[string]testRun{}
		for _, m := range ms {
			k := m.Package + " " + m.Run
			if _, ok := runs[k]; !ok {
				keys = append(keys, k)
				runs[k] = testRun{Root: opt.Root, Package: m.Package, Run: m.Run, Short: opt.Short, Timeout: opt.Timeout}
			}
		}
		sort.Strings(keys)
		for _, k := range keys {
			start := time.Now()
			out, failed, err := runs[k].exec(ctx)
			switch {
			case err != nil:
				base[k] = err.Error()
			case failed:
				base[k] = "the test fails without the mutation:\n" + tail(out, 30)
			case strings.Contains(out, "no tests to run"):
				base[k] = "the test regexp matches no test"
			}
			logf("baseline %-60s %s (%.1fs)", k, map[bool]string{true: "ok", false: "BROKEN"}[base[k] == ""], time.Since(start).Seconds())
		}
	}
	results := make([]Result, 0, len(ms))
	for i, m := range ms {
		if err := ctx.Err(); err != nil {
			return results, err
		}
		r := runOne(ctx, m, opt, base)
		results = append(results, r)
		by := ""
		switch r.Outcome {
		case Killed:
			by = "by " + strings.Join(r.Killers, ", ")
		case Errored:
			by = firstLine(r.Detail)
		}
		logf("[%d/%d] %-8s %-18s %s %s (%.1fs)", i+1, len(ms), r.Outcome, m.ID(), m.File, by, r.Elapsed.Seconds())
	}
	return results, nil
}

func runOne(ctx context.Context, m Mutant, opt Options, base map[string]string) Result {
	start := time.Now()
	r := Result{Mutant: m}
	defer func() { r.Elapsed = time.Since(start) }()
	if reason := base[m.Package+" "+m.Run]; reason != "" {
		r.Outcome, r.Detail = Errored, reason
		return r
	}
	dir, err := os.MkdirTemp("", "mutant-*")
	if err != nil {
		r.Outcome, r.Detail = Errored, err.Error()
		return r
	}
	defer os.RemoveAll(dir)
	ov, err := WriteOverlay(opt.Root, dir, m)
	if err != nil {
		r.Outcome, r.Detail = Errored, err.Error()
		return r
	}
	out, failed, err := testRun{Root: opt.Root, Overlay: ov, Package: m.Package, Run: m.Run, Short: opt.Short, Timeout: opt.Timeout}.exec(ctx)
	if err != nil {
		r.Outcome, r.Detail, r.Output = Errored, err.Error(), out
		return r
	}
	r.Outcome, r.Killers, r.Detail = Classify(out, failed)
	if r.Outcome != Killed {
		r.Output = out
		if r.Outcome == Errored {
			r.Detail += ":\n" + tail(out, 30)
		}
	}
	r.Elapsed = time.Since(start)
	return r
}

// BuildAll compiles each mutant's package under its overlay (`go build
// -overlay`, the package alone: its tests are not compiled) and returns,
// for each that does not build, its ID, file and the compiler's last
// lines. It stops early, reporting what it has, when ctx ends.
func BuildAll(ctx context.Context, root string, ms []Mutant) []string {
	var broken []string
	for _, m := range ms {
		if err := ctx.Err(); err != nil {
			return append(broken, fmt.Sprintf("build check stopped before %s: %v", m.ID(), err))
		}
		if err := buildOne(ctx, root, m); err != nil {
			broken = append(broken, err.Error())
		}
	}
	return broken
}

// buildOne compiles one mutant's package; the error names the entry.
func buildOne(ctx context.Context, root string, m Mutant) error {
	dir, err := os.MkdirTemp("", "mutant-*")
	if err != nil {
		return fmt.Errorf("%s: %w", m.ID(), err)
	}
	defer os.RemoveAll(dir)
	ov, err := WriteOverlay(root, dir, m)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "go", "build", "-overlay="+ov, "-o", os.DevNull, m.Package)
	cmd.Dir = root
	cmd.WaitDelay = 10 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s (%s): the mutated package does not build: %v\n%s", m.ID(), m.File, err, tail(string(out), 10))
	}
	return nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}
