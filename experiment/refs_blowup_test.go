package experiment

import (
	"strings"
	"testing"
)

// TestRefsMarkdownRMSEBlowups: the blow-up table reads the test RMSE ratio's
// draws: largest ÷ median and the share above 3× the median, computed here
// by hand (draws 1, 1, 1.2, 1.1, 4: median 1.1, max/median 3.64, one draw
// of five above 3.3).
func TestRefsMarkdownRMSEBlowups(t *testing.T) {
	a := newAggregate()
	series := refsLinearMechs[0]
	var os []obs
	for _, v := range []float64{1, 1, 1.2, 1.1, 4} {
		os = append(os, obs{panel: "t", xname: "epsilon", x: refsEps[0], series: series, metric: "rmse_ratio", v: v})
		os = append(os, obs{panel: "t", xname: "epsilon", x: refsEps[0], series: series, metric: "excess_rmse", v: v - 1})
	}
	a.add(os)
	md := refsMarkdown(a, []string{"t"}, nil)
	i := strings.Index(md, "largest draw ÷ median draw")
	if i < 0 {
		t.Fatalf("no blow-up table:\n%s", md)
	}
	want := "| " + series + " | 3.64 (20%) | – | – | – |"
	if !strings.Contains(md[i:], want) {
		t.Errorf("blow-up row %q not in\n%s", want, md[i:])
	}
}

// TestRefsClaimsRMSEBlowup: the linear default's blow-up claim holds at a
// largest draw of 3× the median and fails just above it.
func TestRefsClaimsRMSEBlowup(t *testing.T) {
	for _, c := range []struct {
		max  float64
		want string
	}{{3, "yes"}, {3.01, "no (3.01×)"}} {
		a := newAggregate()
		var os []obs
		for _, v := range []float64{1, 1, 1, c.max} {
			for _, m := range []struct {
				metric string
				v      float64
			}{{"rmse_ratio", v}, {"excess_rmse", v - 1}} {
				os = append(os, obs{panel: "t", xname: "epsilon", x: refsEps[0], series: "gaussian-fm", metric: m.metric, v: m.v})
			}
		}
		a.add(os)
		var found bool
		for _, cl := range refsClaims(a, []string{"t"}, nil) {
			if strings.Contains(cl.Paper, "no draw of gaussian-fm's test RMSE above 3×") {
				found = true
				if cl.Holds != c.want {
					t.Errorf("largest draw %v× the median: holds %q, want %q", c.max, cl.Holds, c.want)
				}
			}
		}
		if !found {
			t.Fatalf("no blow-up claim")
		}
	}
}
