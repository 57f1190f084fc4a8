package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// stillShipped are test hooks not yet moved out of the shipped binary:
// none (dppp teach's moved to dppp_testhook_test.go; issue 24).
var stillShipped = map[string]bool{}

// TestNoTestHooksShipped builds the production binary and checks that
// every test-only flag the test binary has (a hidden flag named test-*) is unknown
// to it: the hooks (--test-fault calls os.Exit) live in test files and are
// registered only by the test binary's init functions.
func TestNoTestHooksShipped(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "dplearn")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	var hooks [][]string // command path, then the flag
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if f.Hidden && strings.HasPrefix(f.Name, "test-") {
				hooks = append(hooks, append(append([]string(nil), path...), "--"+f.Name))
			}
		})
		for _, sub := range c.Commands() {
			walk(sub, append(path, sub.Name()))
		}
	}
	walk(newRootCmd(), nil)
	found := map[string]bool{}
	for _, h := range hooks {
		name := strings.Join(h, " ")
		found[name] = true
		out, err := exec.Command(bin, append(h, "1", "--help")...).CombinedOutput()
		unknown := err != nil && strings.Contains(string(out), "unknown flag: "+h[len(h)-1])
		switch {
		case stillShipped[name] && unknown:
			t.Errorf("%s is no longer shipped: remove it from stillShipped", name)
		case !stillShipped[name] && !unknown:
			t.Errorf("the production binary accepts the test hook %s (%v):\n%s", name, err, out)
		}
	}
	for _, want := range []string{"cape join --test-fault", "dppp teach --test-noise-seed", "dppp teach --test-exit-after-vote"} {
		if !found[want] {
			t.Errorf("the test binary has no %s: the walk did not find the hook, so it checked nothing for it", want)
		}
	}
}
