package experiment

import (
	"context"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
)

// TestTapeReplaysAutoAsItsPick: auto fitted on a tape of the noise and its
// pick (regress.AutoPath) on the replay give the same coefficients bit for
// bit on both paths, a different mechanism on the replay does not, and a
// replay that runs out of bytes is an error, not fresh noise.
func TestTapeReplaysAutoAsItsPick(t *testing.T) {
	tb, err := loadReal("", "diabetes", nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	n, d := int64(tb.N()), tb.K-1
	for _, eps := range []float64{0.05, 1} { // N·ε/d ≈ 2 (gaussian-fm) and 40 (noisygd)
		tape := newTape(noise.NewInsecureSeeded(4))
		cfg := regress.Config{Kind: regress.Linear, Epsilon: eps, Delta: 1e-5, Lambda: -1, Source: tape}
		auto, err := fitWith(ctx, "auto", tb, cfg)
		if err != nil {
			t.Fatal(err)
		}
		pick := regress.AutoPath(n, d, eps)
		cfg.Source = tape.replay()
		w, err := fitWith(ctx, pick, tb, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if err := sameCoef("auto against "+pick, auto, w); err != nil {
			t.Errorf("ε = %v: %v", eps, err)
		}
		other := "gaussian-fm"
		if pick == other {
			other = "relaxed-fm"
		}
		cfg.Source = tape.replay()
		if w, err := fitWith(ctx, other, tb, cfg); err == nil && sameCoef("", auto, w) == nil {
			t.Errorf("ε = %v: %s on the replay equals auto's %s fit: the check has no power", eps, other, pick)
		}
	}
	empty := newTape(noise.NewInsecureSeeded(1)).replay()
	if _, err := empty.Read(make([]byte, 8)); err == nil || !strings.Contains(err.Error(), "more noise than the recorded one") {
		t.Errorf("reading past the tape: error %v", err)
	}
}
