package report

import (
	"strings"
	"testing"
)

func TestGuarantee(t *testing.T) {
	cases := []struct {
		p    Privacy
		want string
	}{
		{Privacy{Private: true, Epsilon: 0.5, Delta: 1e-5}, "(0.5, 1e-05)-DP"},
		{Privacy{Private: true, Epsilon: 1}, "1-DP (pure)"},
		{Privacy{Private: true, Epsilon: 0.123456789, Delta: 0.001}, "(0.123457, 0.001)-DP"},
		{Privacy{Private: true, Epsilon: 1.0000004, Delta: 1.0000001e-5}, "(1.00001, 1.00001e-05)-DP"},
		{Privacy{Private: false, Epsilon: 1}, "none (non-private reference fit: do not release)"},
	}
	for _, c := range cases {
		if got := c.p.Guarantee(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.p, got, c.want)
		}
	}
}

// TestWriteTextWarnsInsecure checks that a release made with seeded
// randomness can never print without the warning.
func TestWriteTextWarnsInsecure(t *testing.T) {
	p := Privacy{Mechanism: "m", Private: true, Epsilon: 1, Randomness: "INSECURE seeded", Insecure: true,
		Releases: []Release{{Name: "Λ1", Entries: 3, Norm: "L2", Sensitivity: 0.25, Noise: "gaussian", Scale: 1.5}}}
	var b strings.Builder
	if err := p.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"WARNING", "INSECURE", "Λ1: 3 values, L2 sensitivity 0.25, gaussian noise with scale 1.5", "1-DP"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q in:\n%s", want, out)
		}
	}
	p.Insecure = false
	b.Reset()
	_ = p.WriteText(&b)
	if strings.Contains(b.String(), "WARNING") {
		t.Error("warning printed for secure randomness")
	}
}
