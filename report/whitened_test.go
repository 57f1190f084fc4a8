package report

import (
	"strings"
	"testing"
)

// TestWriteTextWhitened checks the joint-calibration line: it names exactly
// the covered releases and prints the whitened sensitivity rounded up, and
// it is absent when nothing (or an impossible count) is declared.
func TestWriteTextWhitened(t *testing.T) {
	rel := []Release{
		{Name: "Λ1", Entries: 3, Norm: "L2", Sensitivity: 0.25, Noise: "gaussian", Scale: 1.5},
		{Name: "Λ2", Entries: 6, Norm: "L2", Sensitivity: 0.1, Noise: "gaussian", Scale: 0.5},
		{Name: "Λ0", Entries: 1, Norm: "L1", Sensitivity: 0.1, Noise: "laplace", Scale: 2},
	}
	for _, c := range []struct {
		name    string
		sens    float64
		k       int
		want    string // "" means no jointly line
		mustNot string
	}{
		{"two of three", 0.12345678901, 2, "jointly:       Λ1 and Λ2, each divided by its noise scale, are one Gaussian mechanism with unit noise and L2 sensitivity 0.123457", "Λ0, each"},
		{"one", 0.5, 1, "jointly:       Λ1, each divided", "Λ1 and Λ2"},
		{"none declared", 0, 0, "", "jointly"},
		{"count beyond the releases", 0.5, 4, "", "jointly"},
	} {
		p := Privacy{Mechanism: "m", Private: true, Epsilon: 1, Delta: 1e-6, Releases: rel, WhitenedSensitivity: c.sens, WhitenedReleases: c.k}
		var b strings.Builder
		if err := p.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		out := b.String()
		if c.want != "" && !strings.Contains(out, c.want) {
			t.Errorf("%s: missing %q in:\n%s", c.name, c.want, out)
		}
		if strings.Contains(out, c.mustNot) {
			t.Errorf("%s: unexpected %q in:\n%s", c.name, c.mustNot, out)
		}
	}
}
