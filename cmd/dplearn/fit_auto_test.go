package main

import (
	"strconv"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/exampledata"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
)

// TestFitAutoIntervalsThroughCLI runs `dplearn fit --mechanism auto` on
// 3,000 CPS 1988 rows (d = 9) and the mechanism its public rule chooses,
// asked for directly with the same --seed, ε, δ and interval flags (irls:
// --model robust with auto's residual floor η at the fit's ε), and checks
// that the printed coefficient table with its intervals, method, estimand
// and bootstrap lines, and the guarantee with its accountant and releases,
// are the chosen mechanism's: on the Huber path (N·ε/d = 300), on the
// least-squares path (3.3), at the lower boundary where the fit's ε
// (ε·0.95: N·ε/d = 7.8) leaves the Huber range that the requested ε
// (8.2) is in, and with --intervals off and --ci-share 0.
func TestFitAutoIntervalsThroughCLI(t *testing.T) {
	ds, err := exampledata.Get("cps1988")
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Parse(ds.Schema)
	if err != nil {
		t.Fatal(err)
	}
	const n = 3000
	d := s.Dim()
	dir := t.TempDir()
	lines := strings.SplitAfter(string(ds.CSV), "\n")
	data := writeFile(t, dir, "cps.csv", strings.Join(lines[:n+1], ""))
	sch := writeFile(t, dir, "cps.json", string(ds.Schema))
	for _, tc := range []struct {
		name     string
		r        float64  // N·ε/d at the requested ε
		flags    []string // interval flags, for both fits
		fitShare float64  // the share of ε the fit gives up
		want     string   // the mechanism chosen at the fit's ε
		table    string   // in the table's lines
	}{
		{"huber", 300, nil, 0.05, "irls", "Estimand: fixed point of the IRLS weights"},
		{"least squares", 3.3, nil, 0.05, "gaussian-fm", "Estimand: population least-squares coefficients"},
		{"lower boundary", 8.2, nil, 0.05, "gaussian-fm", "Estimand: population least-squares coefficients"},
		{"lower boundary ci-share 0", 8.2, []string{"--ci-share", "0"}, 0, "irls", "--ci-share 0 spent no budget"},
		{"huber intervals off", 300, []string{"--intervals", "off"}, 0, "irls", "--intervals off"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := tc.r * float64(d) / n
			fitEps := eps * (1 - tc.fitShare)
			if regress.AutoUsesHuber(n, d, fitEps) != (tc.want == "irls") {
				t.Fatalf("test setup: the rule at the fit's ε %v does not choose %s", fitEps, tc.want)
			}
			common := append([]string{"fit", "--data", data, "--schema", sch, "--epsilon", strconv.FormatFloat(eps, 'g', -1, 64), "--delta", "1e-6", "--seed", "5"}, tc.flags...)
			auto, err := runCLI(t, append(common, "--model", "linear", "--mechanism", "auto", "--out", dir+"/auto.json")...)
			if err != nil {
				t.Fatalf("auto: %v", err)
			}
			ref := append(common, "--out", dir+"/ref.json", "--mechanism", tc.want)
			if tc.want == "irls" {
				ref = append(ref, "--model", "robust", "--residual-floor", strconv.FormatFloat(regress.AutoHuberResidualFloor(n, d, fitEps), 'g', -1, 64))
			} else {
				ref = append(ref, "--model", "linear")
			}
			chosen, err := runCLI(t, ref...)
			if err != nil {
				t.Fatalf("%s: %v", tc.want, err)
			}
			at, ct := tableLines(auto), tableLines(chosen)
			if at == "" || at != ct {
				t.Errorf("auto's table differs from %s's:\nauto:\n%s\n%s:\n%s", tc.want, at, tc.want, ct)
			}
			if !strings.Contains(at, tc.table) {
				t.Errorf("auto's table lacks %q:\n%s", tc.table, at)
			}
			for _, key := range []string{"guarantee:", "accountant:", "release:", "jointly:"} {
				if a, c := reportLines(auto, key), reportLines(chosen, key); a == "" && key != "jointly:" || a != c {
					t.Errorf("auto's %s lines differ from %s's:\nauto:\n%s\n%s:\n%s", key, tc.want, a, tc.want, c)
				}
			}
		})
	}
}

// tableLines is the printed coefficient table and the lines after it up
// to the privacy report (intervals, estimand, bootstrap, why).
func tableLines(out string) string {
	i := strings.Index(out, "\ncoefficient ")
	j := strings.Index(out, "\nPrivacy report")
	if i < 0 || j < i {
		return ""
	}
	return strings.TrimSpace(out[i:j])
}

// reportLines are the privacy report's lines that start with key.
func reportLines(out, key string) string {
	var ls []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), key) {
			ls = append(ls, l)
		}
	}
	return strings.Join(ls, "\n")
}
