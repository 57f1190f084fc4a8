// Command mutate runs the privacy mutation tests: every entry of the
// mutation lists (mutants/*.txt) breaks one privacy-critical constant,
// sensitivity, noise scale, composition or threshold, and names the test
// that must fail under it. For each entry the runner checks that its find
// text occurs exactly once in its file, writes the mutated copy to a
// temporary directory and runs
//
//	go test -count=1 -overlay=<json> -timeout=<t> -run '<regexp>' <package>
//
// with the overlay mapping the file to the copy (the tree is never
// edited). A mutant is killed when a test fails, survived when the tests
// pass (the named test cannot see the bug it guards against), errored when
// the verdict means nothing (the entry does not apply, the mutation does not
// compile, the test matches no test, times out, or fails without the
// mutation: a baseline run of each distinct test comes first). The exit
// status is non-zero if any mutant survived or errored.
//
// Usage, from the module root:
//
//	go run ./internal/mutate [-list mutants] [-run REGEXP] [-short] [-ci] [-timeout 10m] [-no-baseline]
//	go run ./internal/mutate -check [-build]
//
// -check only checks that every entry applies; with -build it also
// compiles each mutated package (`go build -overlay`, about a second an
// entry), so an entry whose mutation no longer compiles is found before
// the full run spends half an hour reaching it.
//
// -run selects the entries whose "list.txt:line", file or why matches;
// -ci the entries marked "ci: yes".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mutate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	list := fs.String("list", "mutants", "directory of mutation lists (*.txt)")
	sel := fs.String("run", "", "run only the entries whose \"list.txt:line\", file or why matches this regexp")
	short := fs.Bool("short", false, "pass -short to go test")
	ci := fs.Bool("ci", false, "run only the entries marked \"ci: yes\"")
	timeout := fs.Duration("timeout", 10*time.Minute, "go test -timeout per mutant")
	noBase := fs.Bool("no-baseline", false, "skip the unmutated run of each test")
	check := fs.Bool("check", false, "only parse the lists and check that every entry applies")
	build := fs.Bool("build", false, "with -check, also compile each mutated package")
	verbose := fs.Bool("v", false, "print the test output of survivors")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "mutate: unexpected arguments %q\n", fs.Args())
		return 2
	}
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintf(stderr, "mutate: %v\n", err)
		return 2
	}
	dir := *list
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	ms, err := LoadLists(dir)
	if err != nil {
		fmt.Fprintf(stderr, "mutate: %v\n", err)
		return 2
	}
	ms, err = Select(ms, *sel, *ci)
	if err != nil {
		fmt.Fprintf(stderr, "mutate: %v\n", err)
		return 2
	}
	// Every entry must apply before anything runs: a stale find text is
	// an error of the list, reported at once with the entry named.
	var bad []string
	for _, m := range ms {
		src, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(m.File)))
		if err == nil {
			_, err = Mutate(src, m)
		}
		if err != nil {
			bad = append(bad, err.Error())
		}
	}
	if len(bad) > 0 {
		fmt.Fprintf(stderr, "mutate: %d entries do not apply:\n  %s\n", len(bad), strings.Join(bad, "\n  "))
		return 2
	}
	fmt.Fprintf(stdout, "%d mutants selected from %s\n", len(ms), *list)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *check {
		if !*build {
			return 0
		}
		start := time.Now()
		broken := BuildAll(ctx, root, ms)
		for _, b := range broken {
			fmt.Fprintf(stderr, "mutate: %s\n", b)
		}
		fmt.Fprintf(stdout, "%d of %d mutated packages build (%s)\n", len(ms)-len(broken), len(ms), time.Since(start).Round(time.Second))
		if len(broken) > 0 {
			return 2
		}
		return 0
	}
	if *build {
		fmt.Fprintln(stderr, "mutate: -build goes with -check (the full run already reports a mutant that does not build)")
		return 2
	}
	start := time.Now()
	res, err := Run(ctx, ms, Options{Root: root, Short: *short, Timeout: *timeout, Baseline: !*noBase,
		Log: func(f string, a ...any) { fmt.Fprintf(stdout, f+"\n", a...) }})
	if err != nil {
		fmt.Fprintf(stderr, "mutate: %v\n", err)
		return 2
	}
	bad2 := Summarise(stdout, res, *verbose)
	fmt.Fprintf(stdout, "elapsed %s\n", time.Since(start).Round(time.Second))
	if bad2 > 0 {
		return 1
	}
	return 0
}

// Select keeps the entries matching the regexp (on "list.txt:line", file
// and why; "" keeps all) and, with ci, marked "ci: yes".
func Select(ms []Mutant, expr string, ci bool) ([]Mutant, error) {
	var re *regexp.Regexp
	if expr != "" {
		var err error
		if re, err = regexp.Compile(expr); err != nil {
			return nil, fmt.Errorf("-run: %w", err)
		}
	}
	var out []Mutant
	for _, m := range ms {
		if ci && !m.CI {
			continue
		}
		if re != nil && !re.MatchString(m.ID()) && !re.MatchString(m.File) && !re.MatchString(m.Why) {
			continue
		}
		out = append(out, m)
	}
	if len(out) == 0 {
		return nil, errors.New("no mutant selected")
	}
	return out, nil
}

// Summarise prints the survivors and errors in full, the counts and the
// kills per test, and returns the number of survivors and errors.
func Summarise(w io.Writer, res []Result, verbose bool) int {
	count := map[Outcome]int{}
	byTest := map[string]int{}
	for _, r := range res {
		count[r.Outcome]++
		for _, k := range r.Killers {
			byTest[r.Mutant.Package+" "+k]++
		}
	}
	for _, r := range res {
		switch r.Outcome {
		case Survived:
			fmt.Fprintf(w, "\nSURVIVED %s (%s): %s\n  %s passed with %q → %q\n", r.Mutant.ID(), r.Mutant.File, r.Mutant.Why,
				r.Mutant.Package+" -run "+r.Mutant.Run, r.Mutant.Find, r.Mutant.Replace)
			if verbose {
				fmt.Fprintln(w, tail(r.Output, 40))
			}
		case Errored:
			fmt.Fprintf(w, "\nERRORED %s (%s): %s\n%s\n", r.Mutant.ID(), r.Mutant.File, r.Mutant.Why, r.Detail)
		}
	}
	tests := make([]string, 0, len(byTest))
	for t := range byTest {
		tests = append(tests, t)
	}
	sort.Strings(tests)
	fmt.Fprintf(w, "\n%d mutants: %d killed, %d survived, %d errored\n", len(res), count[Killed], count[Survived], count[Errored])
	if len(tests) > 0 {
		fmt.Fprintln(w, "kills by test (a mutant can be killed by several):")
		for _, t := range tests {
			fmt.Fprintf(w, "  %3d  %s\n", byTest[t], t)
		}
	}
	return count[Survived] + count[Errored]
}

// moduleRoot is the directory of the nearest go.mod at or above the
// working directory.
func moduleRoot() (string, error) {
	d, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d, nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", errors.New("no go.mod at or above the working directory")
		}
		d = up
	}
}
