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
// asked for directly with the same --seed, ε, δ and interval flags, and
// checks that the printed coefficient table with its intervals, method,
// estimand and bootstrap lines, and the guarantee with its accountant and
// releases, are the chosen mechanism's: on the Huber path (noisygd, N·ε/d
// = 300, no intervals, the reason naming auto's rule), on the
// least-squares path below (3.3) and above (20,000) the range with
// gaussian-fm's intervals, at the lower boundary (8.2: noisygd takes the
// whole ε, so the rule at 8.2 decides), and with --intervals off.
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
		{"huber", 300, nil, 0, "noisygd", autoNoIntervals},
		{"least squares", 3.3, nil, 0.05, "gaussian-fm", "Estimand: population least-squares coefficients"},
		{"least squares above", 20000, nil, 0.05, "gaussian-fm", "Estimand: population least-squares coefficients"},
		{"lower boundary", 8.2, nil, 0, "noisygd", autoNoIntervals},
		{"huber intervals off", 300, []string{"--intervals", "off"}, 0, "noisygd", autoNoIntervals},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eps := tc.r * float64(d) / n
			fitEps := eps * (1 - tc.fitShare)
			if regress.AutoPath(n, d, fitEps) != tc.want {
				t.Fatalf("test setup: the rule at the fit's ε %v does not choose %s", fitEps, tc.want)
			}
			common := append([]string{"fit", "--data", data, "--schema", sch, "--epsilon", strconv.FormatFloat(eps, 'g', -1, 64), "--delta", "1e-6", "--seed", "5"}, tc.flags...)
			auto, err := runCLI(t, append(common, "--model", "linear", "--mechanism", "auto", "--out", dir+"/auto.json")...)
			if err != nil {
				t.Fatalf("auto: %v", err)
			}
			chosen, err := runCLI(t, append(common, "--out", dir+"/ref.json", "--mechanism", tc.want, "--model", "linear")...)
			if err != nil {
				t.Fatalf("%s: %v", tc.want, err)
			}
			at, ct := tableLines(auto), tableLines(chosen)
			if tc.want == "noisygd" {
				// The one difference: why there are no intervals.
				if !strings.Contains(ct, "no confidence intervals for noisygd") {
					t.Errorf("noisygd's table lacks its reason for no intervals:\n%s", ct)
				}
				at, ct = dropLines(at, "no confidence intervals"), dropLines(ct, "no confidence intervals")
				if !strings.Contains(tableLines(auto), tc.table) {
					t.Errorf("auto's table lacks %q:\n%s", tc.table, tableLines(auto))
				}
			} else if !strings.Contains(at, tc.table) {
				t.Errorf("auto's table lacks %q:\n%s", tc.table, at)
			}
			if at == "" || at != ct {
				t.Errorf("auto's table differs from %s's:\nauto:\n%s\n%s:\n%s", tc.want, at, tc.want, ct)
			}
			for _, key := range []string{"guarantee:", "accountant:", "release:", "jointly:"} {
				if a, c := reportLines(auto, key), reportLines(chosen, key); a == "" && key != "jointly:" || a != c {
					t.Errorf("auto's %s lines differ from %s's:\nauto:\n%s\n%s:\n%s", key, tc.want, a, tc.want, c)
				}
			}
		})
	}
}

// autoNoIntervals begins the reason auto's Huber path prints for having no
// intervals.
const autoNoIntervals = "no confidence intervals: auto's rule chose Huber's loss by noisygd"

// dropLines removes the lines of s that contain sub.
func dropLines(s, sub string) string {
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if !strings.Contains(l, sub) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
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

// TestFitAutoLogisticThroughCLI runs `dplearn fit --mechanism auto
// --model logistic` on 3,000 SmokeBan rows and `--mechanism noisygd` with
// the same --seed, ε and δ: auto's rule fits every logistic model by
// noisygd's clipped gradient, so the coefficient tables (but for the
// reason there are no intervals) and the guarantee, accountant and release
// lines are the same, and auto's table says why it has no intervals.
func TestFitAutoLogisticThroughCLI(t *testing.T) {
	ds, err := exampledata.Get("smokeban")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	lines := strings.SplitAfter(string(ds.CSV), "\n")
	data := writeFile(t, dir, "smoke.csv", strings.Join(lines[:3001], ""))
	sch := writeFile(t, dir, "smoke.json", string(ds.Schema))
	common := []string{"fit", "--data", data, "--schema", sch, "--model", "logistic", "--epsilon", "0.5", "--delta", "1e-6", "--seed", "5"}
	auto, err := runCLI(t, append(common, "--mechanism", "auto", "--out", dir+"/auto.json")...)
	if err != nil {
		t.Fatalf("auto: %v", err)
	}
	chosen, err := runCLI(t, append(common, "--mechanism", "noisygd", "--out", dir+"/ref.json")...)
	if err != nil {
		t.Fatalf("noisygd: %v", err)
	}
	at, ct := tableLines(auto), tableLines(chosen)
	if !strings.Contains(at, "no confidence intervals: auto fits logistic models by noisygd's clipped gradient") {
		t.Errorf("auto's table lacks its reason for no intervals:\n%s", at)
	}
	if !strings.Contains(at, "noisygd's clipped-gradient fit") {
		t.Errorf("auto's table does not say what its coefficients are:\n%s", at)
	}
	at, ct = dropLines(at, "no confidence intervals"), dropLines(ct, "no confidence intervals")
	if at == "" || at != ct {
		t.Errorf("auto's table differs from noisygd's:\nauto:\n%s\nnoisygd:\n%s", at, ct)
	}
	for _, key := range []string{"guarantee:", "accountant:", "release:"} {
		if a, c := reportLines(auto, key), reportLines(chosen, key); a == "" || a != c {
			t.Errorf("auto's %s lines differ from noisygd's:\nauto:\n%s\nnoisygd:\n%s", key, a, c)
		}
	}
}
