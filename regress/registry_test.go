package regress

import (
	"slices"
	"testing"
)

// TestRegistryConsistent: every mechanism's estimator carries its name and
// says it is private exactly when the registry gives it privacy
// parameters (irls-wishart, not DP, is the one exception the registry
// names: ε and an optional δ for reproducing its seed); every option a
// mechanism lists exists, and every option is read by some mechanism.
func TestRegistryConsistent(t *testing.T) {
	flags := map[string]bool{}
	for _, o := range Options() {
		if flags[o.Flag] {
			t.Errorf("option %s declared twice", o.Flag)
		}
		flags[o.Flag] = true
		if len(ReadersOf(o.Flag)) == 0 {
			t.Errorf("option %s is read by no mechanism", o.Flag)
		}
		var c Config
		if err := o.Apply(&c, o.Default); err != nil {
			t.Errorf("option %s: %v", o.Flag, err)
		}
		if err := o.Apply(&c, struct{}{}); err == nil {
			t.Errorf("option %s accepted a value of the wrong type", o.Flag)
		}
	}
	for _, m := range Registry() {
		e, err := New(m.Name)
		if err != nil {
			t.Fatal(err)
		}
		if e.Name() != m.Name {
			t.Errorf("New(%q).Name() = %q", m.Name, e.Name())
		}
		wantPrivate := m.Privacy.TakesEpsilon() && m.Privacy != EpsilonOptionalDelta
		if e.Private() != wantPrivate {
			t.Errorf("%s: Private() = %v, registry says %v", m.Name, e.Private(), m.Privacy)
		}
		if len(m.Kinds) == 0 || m.Summary == "" {
			t.Errorf("%s: no models or no summary", m.Name)
		}
		for _, f := range m.Options {
			if !flags[f] {
				t.Errorf("%s reads unknown option %s", m.Name, f)
			}
		}
		if m.EpsilonOr != "" && !m.Reads(m.EpsilonOr) {
			t.Errorf("%s: EpsilonOr %s is not one of its options", m.Name, m.EpsilonOr)
		}
	}
	if _, err := New("no-such"); err == nil {
		t.Error("New accepted an unknown mechanism")
	}
	if !slices.IsSorted(Mechanisms()) || len(Mechanisms()) != len(Registry()) {
		t.Errorf("Mechanisms() = %v", Mechanisms())
	}
}

// TestOptionsApply: an option sets the Config field it names (a sample of
// each type).
func TestOptionsApply(t *testing.T) {
	get := func(flag string) Option {
		for _, o := range Options() {
			if o.Flag == flag {
				return o
			}
		}
		t.Fatalf("no option %s", flag)
		return Option{}
	}
	var c Config
	for _, step := range []struct {
		flag string
		v    any
	}{{"split", 0.3}, {"iterations", 7}, {"irls-form", "gradient"}, {"laplace-first-moment", true}, {"radius", 2.5}} {
		if err := get(step.flag).Apply(&c, step.v); err != nil {
			t.Fatal(err)
		}
	}
	if c.Split != 0.3 || c.NoisyGD.Iterations != 7 || c.IRLS.Form != "gradient" || c.IRLS.FirstMoment != "laplace" || c.ObjPert.Radius != 2.5 {
		t.Fatalf("options not applied: %+v", c)
	}
}
