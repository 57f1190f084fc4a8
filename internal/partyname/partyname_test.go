package partyname_test

import (
	"strings"
	"testing"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/internal/partyname"
)

// TestOneRule: certs.ValidateName (a deployment's certificates),
// capefm.ValidName (a capeFM site, in process or networked) and dppp's
// Config.Validate (a DPPP teacher) accept and refuse the same names. They
// were three rules: capeFM took "Site_1", DPPP took "A B"-less anything
// such as "Teacher#1", which no certificate could carry.
func TestOneRule(t *testing.T) {
	names := []struct {
		name string
		ok   bool
	}{
		{"site-1", true}, {"a", true}, {"h1.example", true}, {"0", true}, {strings.Repeat("x", 64), true},
		{"", false}, {strings.Repeat("x", 65), false}, {"Site-1", false}, {"site_1", false}, {"-site", false},
		{"site-", false}, {".a", false}, {"a..b", false}, {"ca", false}, {"a b", false}, {"a/b", false},
		{"teacher#1", false}, {"é", false}, {"a\x00", false},
	}
	dpppOK := func(name string) bool {
		c := dppp.Config{Teachers: []string{"other", name}, Threshold: 2, Colluders: dppp.NoneAssumed, Absent: dppp.NoneAssumed,
			Classes: 3, Features: 2, Noise: dppp.Binomial, Epsilon: 1, Delta: 1e-5, BudgetEpsilon: 2, BudgetDelta: 1e-4}
		return c.Validate() == nil
	}
	if !dpppOK("b") {
		t.Fatal("the DPPP configuration of this test is invalid with a valid name")
	}
	for _, c := range names {
		got := map[string]bool{
			"partyname.Validate":   partyname.Validate(c.name) == nil,
			"certs.ValidateName":   certs.ValidateName(c.name) == nil,
			"capefm.ValidName":     capefm.ValidName(c.name),
			"dppp Config.Validate": dpppOK(c.name),
		}
		for rule, ok := range got {
			if ok != c.ok {
				t.Errorf("%s(%q) = %v, want %v", rule, c.name, ok, c.ok)
			}
		}
	}
}
