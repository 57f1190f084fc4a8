package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/accounting"
)

// runPrivacy runs `dplearn privacy args...` in-process.
func runPrivacy(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(append([]string{"privacy"}, args...))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

func privacyJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	out, _, err := runPrivacy(t, append(args, "--format", "json")...)
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	var m map[string]any
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%v: not JSON: %v\n%s", args, err, out)
	}
	if dec.More() {
		t.Fatalf("%v: more than one JSON object", args)
	}
	return m
}

func TestPrivacyCalibrate(t *testing.T) {
	gs, _ := accounting.GaussianSigma(1, 1e-5, 2)
	ls, _ := accounting.LaplaceScale(0.5, 1)
	for _, c := range []struct {
		args []string
		want float64
		rel  float64
	}{
		{[]string{"--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "2"}, gs, 0},
		{[]string{"--mechanism", "laplace", "--epsilon", "0.5", "--sensitivity", "1"}, ls, 0},
		// Classic: Δ√(2 ln(1.25/δ))/ε up to the 2^-20 grid slack.
		{[]string{"--mechanism", "gaussian-classic", "--epsilon", "0.5", "--delta", "1e-5", "--sensitivity", "1"}, math.Sqrt(2*math.Log(1.25e5)) / 0.5, 1e-4},
		{[]string{"--mechanism", "discrete-gaussian", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "1"}, 3.7405, 1e-4},
	} {
		m := privacyJSON(t, append([]string{"calibrate"}, c.args...)...)
		got, ok := m["scale"].(float64)
		if !ok || math.Abs(got-c.want) > c.rel*c.want {
			t.Errorf("%v: scale %v want %v", c.args, m["scale"], c.want)
		}
	}
	out, _, err := runPrivacy(t, "calibrate", "--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "1")
	if err != nil || !strings.Contains(out, "scale = 3.7306") {
		t.Errorf("text output %q %v", out, err)
	}
}

func TestPrivacyGaussianSteps(t *testing.T) {
	m := privacyJSON(t, "gaussian-steps", "--sigma", "10", "--sensitivity", "1", "--steps", "100", "--delta", "1e-5", "--no-grid-slack")
	r, _ := accounting.GaussianSteps(10, 1, 100, 1e-5)
	for k, want := range map[string]float64{"epsilon_exact": r.EpsilonExact, "epsilon_rdp": r.EpsilonRDP, "epsilon_rdp_classic": r.EpsilonRDPClassic, "epsilon_zcdp": r.EpsilonZCDP} {
		if got, _ := m[k].(float64); got != want {
			t.Errorf("%s = %v want %v", k, m[k], want)
		}
	}
	// ρ = 0.5, δ = 1e-5: ε_zCDP = 0.5 + 2√(0.5 ln 1e5).
	if got := m["epsilon_zcdp"].(float64); math.Abs(got-(0.5+2*math.Sqrt(0.5*math.Log(1e5)))) > 1e-12 {
		t.Errorf("epsilon_zcdp %v", got)
	}
	// Default includes the grid slack: slightly larger.
	m2 := privacyJSON(t, "gaussian-steps", "--sigma", "10", "--sensitivity", "1", "--steps", "100", "--delta", "1e-5")
	if !(m2["epsilon_rdp"].(float64) > r.EpsilonRDP) {
		t.Errorf("grid slack not included: %v", m2["epsilon_rdp"])
	}
}

func TestPrivacyCAPE(t *testing.T) {
	// The review's first case in the paper's convention (Δ = S/N): exact δ,
	// and the as-published figure labelled as such.
	m := privacyJSON(t, "cape", "--sites", "3", "--tau", "0.106", "--n", "100", "--epsilon", "0.9")
	sens, _ := accounting.CAPESeedSensitivity(3, 100)
	want, _ := accounting.CAPEDeltaExact(accounting.CAPEParams{Sites: 3, Colluders: 0, Tau: 0.106, Sensitivity: sens}, 0.9)
	pub, _ := accounting.CAPEDeltaAsPublished(3, 0, 0.106, 100, 0.9)
	if m["delta"].(float64) != want || m["colluders"].(float64) != 0 || m["delta_as_published"].(float64) != pub ||
		m["sensitivity"].(float64) != sens || m["mode"] != "delta" || m["n"].(float64) != 100 {
		t.Errorf("cape %v want δ=%v, as published %v", m, want, pub)
	}
	if !(want > 7e-4 && want < 9e-4) || !(pub < 1e-16) {
		t.Errorf("δ = %v, as published %v", want, pub)
	}
	out, _, err := runPrivacy(t, "cape", "--sites", "3", "--tau", "0.106", "--n", "100", "--epsilon", "0.9")
	if err != nil || !strings.Contains(out, "delta = 7.9473e-04") || !strings.Contains(out, "as published") || !strings.Contains(out, "NOT a guarantee") {
		t.Errorf("text %q %v", out, err)
	}
	// Explicit sensitivity, colluders; no --n: no as-published figure.
	m = privacyJSON(t, "cape", "--sites", "10", "--colluders", "1", "--tau", "0.02", "--sensitivity", "0.002", "--epsilon", "0.5")
	want, _ = accounting.CAPEDeltaExact(accounting.CAPEParams{Sites: 10, Colluders: 1, Tau: 0.02, Sensitivity: 0.002}, 0.5)
	if m["delta"].(float64) != want || m["delta_as_published"] != nil || m["sensitivity_source"] != "--sensitivity" {
		t.Errorf("cape %v want %v", m, want)
	}
	// Calibrate τ for a target δ; default colluders ⌈10/3⌉−1 = 3.
	m = privacyJSON(t, "cape", "--sites", "10", "--n", "1000", "--epsilon", "0.5", "--delta", "1e-5")
	tau, _ := accounting.CAPETau(0.5, 1e-5, 10, 3, 0.01)
	if m["tau"].(float64) != tau || m["mode"] != "calibrate-tau" || m["delta"].(float64) > 1e-5 || m["target_delta"].(float64) != 1e-5 || m["colluders"].(float64) != 3 {
		t.Errorf("calibrate %v want τ = %v", m, tau)
	}
	// Unequal sites: the worst one.
	m = privacyJSON(t, "cape", "--site-sensitivities", "0.01,0.02,0.005,0.01", "--tau", "0.1", "--epsilon", "1")
	want, worst, _ := accounting.CAPEDeltaSites([]float64{0.01, 0.02, 0.005, 0.01}, 1, 0.1, 1)
	if m["delta"].(float64) != want || m["worst_site"].(float64) != float64(worst) || worst != 1 || m["sites"].(float64) != 4 {
		t.Errorf("sites %v want %v at %d", m, want, worst)
	}
}

// TestPrivacyPrintsRoundedUp: every guarantee printed as text is at least the
// full-precision JSON value (PRIVACY-NOTES item 20), and a calibrated noise
// scale is never printed below the computed one.
func TestPrivacyPrintsRoundedUp(t *testing.T) {
	num := func(t *testing.T, out, prefix string) float64 {
		t.Helper()
		i := strings.Index(out, prefix)
		if i < 0 {
			t.Fatalf("%q not in %q", prefix, out)
		}
		f := strings.FieldsFunc(out[i+len(prefix):], func(r rune) bool { return strings.ContainsRune(" \n,;()", r) })
		v, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "."), 64)
		if err != nil {
			t.Fatalf("%q: %v", f[0], err)
		}
		return v
	}
	check := func(args []string, pairs map[string]string) {
		t.Helper()
		m := privacyJSON(t, args...)
		out, _, err := runPrivacy(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		for prefix, key := range pairs {
			if got, want := num(t, out, prefix), m[key].(float64); got < want {
				t.Errorf("%v: printed %s%v below %v", args, prefix, got, want)
			}
		}
	}
	check([]string{"cape", "--sites", "10", "--tau", "0.03", "--n", "1000", "--epsilon", "0.5"},
		map[string]string{"delta = ": "delta", "μ = ": "mu", "μ_GDP = √(2μ) = ": "gdp_mu"})
	check([]string{"cape", "--sites", "3", "--n", "100", "--epsilon", "0.9", "--delta", "1e-5"},
		map[string]string{"tau = ": "tau"})
	check([]string{"calibrate", "--mechanism", "gaussian", "--epsilon", "0.7", "--delta", "1e-6", "--sensitivity", "3"},
		map[string]string{"scale = ": "scale"})
	check([]string{"gaussian-steps", "--sigma", "7", "--sensitivity", "1.3", "--steps", "37", "--delta", "1e-5"},
		map[string]string{"ε = ": "epsilon_exact", "ρ = ": "rho", "μ = ": "mu"})
	check([]string{"subsampled", "--epsilon", "2", "--q", "0.01", "--steps", "300", "--delta", "1e-5"},
		map[string]string{"σ = ": "sigma", "(ε = ": "epsilon"})
}

func TestPrivacyBinomial(t *testing.T) {
	m := privacyJSON(t, "binomial", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "1")
	// Exact profile (checked independently with exact binomial coefficients
	// in Python: δ(61) = 1.20e-5, δ(62) = 9.63e-6): n = 62.
	if m["n"].(float64) != 62 || m["n_dppp"].(float64) != 220 {
		t.Errorf("binomial %v", m)
	}
}

func TestPrivacySample(t *testing.T) {
	for _, mech := range []string{"laplace", "gaussian", "discrete-laplace", "discrete-gaussian"} {
		out, _, err := runPrivacy(t, "sample", "--mechanism", mech, "--scale", "2", "--count", "200")
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Fields(out)
		if len(lines) != 200 {
			t.Fatalf("%s: %d lines", mech, len(lines))
		}
		var sum float64
		for _, l := range lines {
			v, err := strconv.ParseFloat(l, 64)
			if err != nil {
				t.Fatalf("%s: %q", mech, l)
			}
			if strings.HasPrefix(mech, "discrete") && v != math.Trunc(v) {
				t.Fatalf("%s: non-integer %v", mech, v)
			}
			sum += v
		}
		// Mean of 200 draws with sd ≤ 2√2: |mean| < 6·sd/√200 (false alarm < 1e-8).
		if math.Abs(sum/200) > 6*2*math.Sqrt2/math.Sqrt(200) {
			t.Errorf("%s: mean %v", mech, sum/200)
		}
	}
	out, _, err := runPrivacy(t, "sample", "--mechanism", "binomial", "--n-flips", "7", "--count", "50")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Fields(out) {
		v, err := strconv.ParseFloat(l, 64)
		if err != nil || math.Abs(v) > 3.5 || v-math.Floor(v) != 0.5 {
			t.Fatalf("binomial sample %q", l)
		}
	}
	// Seeded: reproducible and labelled.
	a, errA, _ := runPrivacy(t, "sample", "--mechanism", "gaussian", "--scale", "1", "--count", "5", "--insecure-seed", "9")
	b, _, _ := runPrivacy(t, "sample", "--mechanism", "gaussian", "--scale", "1", "--count", "5", "--insecure-seed", "9")
	if a != b || !strings.Contains(errA, "INSECURE") {
		t.Errorf("seeded output not reproducible or not labelled: %q", errA)
	}
	m := privacyJSON(t, "sample", "--mechanism", "discrete-gaussian", "--scale", "3", "--count", "4")
	if s, ok := m["samples"].([]any); !ok || len(s) != 4 || m["secure"] != true {
		t.Errorf("json %v", m)
	}
}

func TestPrivacyErrors(t *testing.T) {
	for _, args := range [][]string{
		{"calibrate", "--mechanism", "gaussian-classic", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "1"},
		{"calibrate", "--mechanism", "gaussian", "--epsilon", "1", "--sensitivity", "1"},
		{"calibrate", "--mechanism", "laplace", "--epsilon", "NaN", "--sensitivity", "1"},
		{"calibrate", "--mechanism", "magic", "--epsilon", "1", "--sensitivity", "1"},
		{"calibrate", "--mechanism", "discrete-gaussian", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "0.5"},
		{"gaussian-steps", "--sigma", "0", "--sensitivity", "1", "--steps", "1", "--delta", "1e-5"},
		{"cape", "--sites", "6", "--colluders", "2", "--tau", "1", "--n", "100", "--epsilon", "0.5"},
		{"cape", "--sites", "6", "--tau", "1", "--epsilon", "0.5"},
		{"cape", "--sites", "6", "--tau", "1", "--delta", "1e-5", "--n", "100", "--epsilon", "0.5"},
		{"cape", "--sites", "6", "--n", "100", "--epsilon", "0.5"},
		{"cape", "--sites", "6", "--tau", "1", "--sensitivity", "0.1", "--site-sensitivities", "0.1,0.2", "--epsilon", "0.5"},
		{"cape", "--sites", "3", "--tau", "1", "--site-sensitivities", "0.1,0.2", "--epsilon", "0.5"},
		{"cape", "--sites", "3", "--tau", "1", "--sensitivity", "-1", "--epsilon", "0.5"},
		{"cape", "--tau", "1", "--sensitivity", "0.1", "--epsilon", "0.5"},
		{"binomial", "--epsilon", "1", "--delta", "2"},
		{"sample", "--mechanism", "gaussian", "--count", "3"},
		{"sample", "--mechanism", "binomial", "--count", "3"},
		{"sample", "--mechanism", "gaussian", "--scale", "-1"},
		{"calibrate", "--mechanism", "gaussian", "--epsilon", "1", "--delta", "1e-5", "--sensitivity", "1", "--format", "xml"},
	} {
		if _, _, err := runPrivacy(t, args...); err == nil {
			t.Errorf("%v: no error", args)
		}
	}
}

func TestPrivacyHelpTeaches(t *testing.T) {
	for _, sub := range []string{"calibrate", "gaussian-steps", "cape", "binomial", "sample", "subsampled", "ledger"} {
		out, _, err := runPrivacy(t, sub, "--help")
		if err != nil || !strings.Contains(out, "Example:") || !strings.Contains(out, "dplearn privacy "+sub) {
			t.Errorf("%s --help lacks an example: %v", sub, err)
		}
	}
}

func TestPrivacySubsampled(t *testing.T) {
	m := privacyJSON(t, "subsampled", "--sigma", "1.5", "--q", "0.04", "--steps", "2250", "--delta", "1e-5", "--neighbours", "add-remove")
	if e := m["epsilon"].(float64); math.Abs(e-7.329) > 0.001 {
		t.Errorf("ε = %v, want ≈ 7.329 (Opacus)", e)
	}
	// dplearn's default relation, replace-one, costs more than add/remove.
	r := privacyJSON(t, "subsampled", "--sigma", "1.5", "--q", "0.04", "--steps", "2250", "--delta", "1e-5")
	if e := r["epsilon"].(float64); r["neighbours"] != "replace-one" || !(e > 7.329) {
		t.Errorf("replace-one: %v", r)
	}
	m = privacyJSON(t, "subsampled", "--epsilon", "7.329", "--q", "0.04", "--steps", "2250", "--delta", "1e-5", "--neighbours", "add-remove")
	if s := m["sigma"].(float64); math.Abs(s-1.5) > 0.001 || m["epsilon"].(float64) > 7.329 {
		t.Errorf("solved σ = %v, ε = %v", s, m["epsilon"])
	}
	if _, _, err := runPrivacy(t, "subsampled", "--sigma", "1", "--epsilon", "1", "--q", "0.1", "--steps", "1", "--delta", "1e-5"); err == nil {
		t.Error("both --sigma and --epsilon accepted")
	}
}

func TestPrivacyLedger(t *testing.T) {
	f := t.TempDir() + "/ledger.json"
	m := privacyJSON(t, "ledger", "create", "--file", f, "--name", "site", "--epsilon", "1", "--delta", "1e-5")
	if m["spent_epsilon"].(float64) != 0 || m["budget_epsilon"].(float64) != 1 {
		t.Fatalf("create %v", m)
	}
	m = privacyJSON(t, "ledger", "charge", "--file", f, "--label", "q1", "--epsilon", "0.6", "--delta", "1e-6")
	if m["spent_epsilon"].(float64) != 0.6 || m["charges"].(float64) != 1 {
		t.Fatalf("charge %v", m)
	}
	_, _, err := runPrivacy(t, "ledger", "charge", "--file", f, "--label", "q2", "--epsilon", "0.6")
	if err == nil || !strings.Contains(err.Error(), "budget exceeded") {
		t.Fatalf("over-budget charge: %v", err)
	}
	m = privacyJSON(t, "ledger", "show", "--file", f)
	if m["spent_epsilon"].(float64) != 0.6 || m["charges"].(float64) != 1 {
		t.Fatalf("show %v", m)
	}
	if _, _, err := runPrivacy(t, "ledger", "create", "--file", f, "--name", "again", "--epsilon", "1"); err == nil {
		t.Error("existing ledger overwritten")
	}
}
