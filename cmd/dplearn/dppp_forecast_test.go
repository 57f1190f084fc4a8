package main

import (
	"strings"
	"testing"
)

// TestPrivacyDPPP: the calculator calibrates like a deployment (115 coins
// for (1, 1e-5) per query; --budget-queries sizes the noise so that 100
// queries fit (10, 1e-5)), prints the forecast and warns when the noise
// swamps the votes; --epsilon beside --budget-queries is refused.
func TestPrivacyDPPP(t *testing.T) {
	m := privacyJSON(t, "dppp", "--n", "20", "--classes", "2", "--colluders", "0", "--absent", "0")
	if m["histogram_coins"].(float64) != 115 || m["honest"].(float64) != 20 || !strings.Contains(m["warning"].(string), "the noise is large") {
		t.Errorf("per-query (1, 1e-5): %v", m)
	}
	m = privacyJSON(t, "dppp", "--n", "20", "--classes", "2", "--colluders", "0", "--absent", "0",
		"--budget-epsilon", "10", "--budget-delta", "1e-5", "--budget-queries", "100")
	if m["max_queries"].(float64) < 100 || m["composed_epsilon"].(float64) > 10 || m["histogram_coins"].(float64) != 202 {
		t.Errorf("total (10, 1e-5) over 100: %v", m)
	}
	if m90 := m["margin_90"].(float64); m90 < 1 || m90 > 20 {
		t.Errorf("margin for 90%%: %v", m90)
	}
	out, _, err := runPrivacy(t, "dppp", "--n", "20", "--classes", "10", "--budget-epsilon", "10", "--budget-delta", "1e-5", "--budget-queries", "100")
	if err != nil || !strings.Contains(out, "WARNING: the noise swamps the votes") || !strings.Contains(out, "forecast (public quantities only") {
		t.Errorf("10 classes, default trust: %v\n%s", err, out)
	}
	t.Log(out)
	if _, _, err := runPrivacy(t, "dppp", "--n", "20", "--classes", "2", "--epsilon", "1", "--budget-queries", "100"); err == nil || !strings.Contains(err.Error(), "drop --epsilon") {
		t.Errorf("--epsilon with --budget-queries: %v", err)
	}
}

// TestPrivacyDPPPTeachersNeeded: --teachers-needed finds the fewest
// teachers for which a unanimous binary vote is labelled as voted with
// worst-case probability ≥ 0.99 at (10, 1e-5) over 100 queries with every
// share trusted: 26 (dppp.TestTeachersNeeded checks 25 falls short).
func TestPrivacyDPPPTeachersNeeded(t *testing.T) {
	if testing.Short() {
		t.Skip("short: about ten calibrations")
	}
	m := privacyJSON(t, "dppp", "--n", "20", "--classes", "2", "--colluders", "0", "--absent", "0",
		"--budget-epsilon", "10", "--budget-delta", "1e-5", "--budget-queries", "100", "--teachers-needed", "0.99")
	if m["teachers_needed"].(float64) != 26 {
		t.Errorf("teachers needed %v, want 26", m["teachers_needed"])
	}
}
