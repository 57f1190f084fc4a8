package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCapeRefusesPrivacyUnit: cape join and cape simulate refuse
// --privacy-unit/--max-rows-per-unit with the capeFM reason (no unit-level
// calibration, K not in the offer) instead of fitting a row-level model
// that a user would read as person-level, and before touching the data or
// the network.
func TestCapeRefusesPrivacyUnit(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 50)
	sp := filepath.Join(dir, "s.json")
	if err := os.WriteFile(sp, []byte(wageSchema), 0o600); err != nil {
		t.Fatal(err)
	}
	common := []string{"--data", data, "--schema", sp, "--model", "linear", "--epsilon", "1", "--delta", "1e-5"}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"simulate", append([]string{"cape", "simulate", "--sites", "2", "--privacy-unit", "education", "--max-rows-per-unit", "2"}, common...)},
		{"simulate-k-only", append([]string{"cape", "simulate", "--sites", "2", "--max-rows-per-unit", "2"}, common...)},
		{"join", append([]string{"cape", "join", "--insecure", "--name", "s1", "--server", "127.0.0.1:1", "--privacy-unit", "education", "--max-rows-per-unit", "2"}, common...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := runCLI(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), "--privacy-unit is not available for capeFM") {
				t.Fatalf("err = %v, want the capeFM privacy-unit refusal", err)
			}
		})
	}
}
