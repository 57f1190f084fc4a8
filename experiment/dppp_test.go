package experiment

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
)

// TestRunDPPPDigitsTinyDeterministic runs dppp-digits in quick mode twice
// with one seed: the CSVs are byte-identical and every series is present.
func TestRunDPPPDigitsTinyDeterministic(t *testing.T) {
	var csvs [][]byte
	for i := 0; i < 2; i++ {
		out := t.TempDir()
		res, err := Run(context.Background(), "dppp-digits", Options{Out: out, DataDir: out, Runs: 1, Quick: true, Seeded: true, Seed: 7, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 1 || len(res[0].Claims) < 6 {
			t.Fatalf("results %+v", res)
		}
		seen := map[string]bool{}
		for _, r := range res[0].Rows {
			seen[r.Series] = true
			if r.Metric == "accuracy" && (r.Mean < 0 || r.Mean > 1) {
				t.Errorf("accuracy %v out of [0, 1]: %+v", r.Mean, r)
			}
		}
		for _, s := range dpppSeries {
			if !seen[s] {
				t.Errorf("series %q missing", s)
			}
		}
		b, err := os.ReadFile(filepath.Join(out, "dppp-digits.csv"))
		if err != nil {
			t.Fatal(err)
		}
		csvs = append(csvs, b)
	}
	if !bytes.Equal(csvs[0], csvs[1]) {
		t.Error("two seeded runs differ")
	}
}
