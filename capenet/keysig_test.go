package capenet

import (
	"strings"
	"testing"
	"time"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/certs"
)

// TestSignedKeys: site-4 signs its secure-aggregation keys with a
// certificate from another CA (as an aggregator substituting its keys
// would have to). With the aggregator checking the keys it relays, site-4
// counts as missing and the other three fit without it, never seeing its
// keys; with the aggregator relaying them unchecked, every honest site
// refuses the roster, naming site-4, and leaves the fit.
func TestSignedKeys(t *testing.T) {
	rogue, err := certs.NewCA(certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	withRogue := func(i int, c *capefm.SiteConfig) {
		if i != 3 {
			return
		}
		id, err := rogue.IssueParty(c.Name, certs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if c.Signer, err = certs.NewStatementSigner(id); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		name          string
		aggregatorChk bool
	}{
		{"the aggregator checks the keys", true},
		{"only the sites check the keys", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newSetup(t, 4, 3, 200, withRogue)
			f.template.MinSites = 3
			opt := ServeOptions{RoundTimeout: 5 * time.Second, JoinTimeout: 5 * time.Second}
			if c.aggregatorChk {
				id, err := f.ca.IssueParty(DefaultHubName, certs.Options{})
				if err != nil {
					t.Fatal(err)
				}
				if opt.KeyVerifier, err = certs.NewStatementSigner(id); err != nil {
					t.Fatal(err)
				}
			}
			res, serr, errs, log := memoryFit(t, f, opt, nil, nil)
			if c.aggregatorChk {
				if serr != nil {
					t.Fatalf("%v\n%s", serr, log.all())
				}
				for _, s := range res.Params.Sites {
					if s.Name == "site-4" {
						t.Fatalf("site-4 is in the final roster %v", res.Params.Sites)
					}
				}
				for i := range 3 {
					if errs[i] != nil {
						t.Errorf("site-%d: %v", i+1, errs[i])
					}
				}
				if log.find("refused-keys", "") != nil {
					t.Errorf("an honest site saw site-4's keys:\n%s", log.all())
				}
				return
			}
			if serr == nil {
				t.Fatalf("the fit completed although every honest site refused the roster\n%s", log.all())
			}
			for i := range 3 {
				if errs[i] == nil || !strings.Contains(errs[i].Error(), "site site-4's key advertisement fails its signature check") ||
					!strings.Contains(errs[i].Error(), "not from this deployment's CA") {
					t.Errorf("site-%d: %v", i+1, errs[i])
				}
			}
			if log.find("refused-keys", "site site-4") == nil {
				t.Errorf("no refused-keys event:\n%s", log.all())
			}
		})
	}
}
