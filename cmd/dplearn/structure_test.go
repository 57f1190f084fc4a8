package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestFitProjectsOntoSchemaStructure: an FM-family fit projects the released
// Λ2 onto the schema's Gram structure by default and says so in the report's
// post-processing; --no-schema-structure turns it off, and the two fits of
// the same seeded release differ (the projection is not a no-op).
func TestFitProjectsOntoSchemaStructure(t *testing.T) {
	dir := t.TempDir()
	data := writeWageData(t, dir, 3000)
	sch := writeFile(t, dir, "schema.json", wageSchema)
	fit := func(extra ...string) ([]string, []float64) {
		t.Helper()
		args := append([]string{"fit", "--data", data, "--schema", sch, "--model", "linear", "--mechanism", "gaussian-fm",
			"--epsilon", "0.3", "--delta", "1e-6", "--out", filepath.Join(dir, "m.json"), "--format", "json", "--seed", "5"}, extra...)
		out, err := runCLI(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		var r struct {
			Privacy struct {
				PostProcessing []string `json:"post_processing"`
			} `json:"privacy"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("%v in %s", err, out)
		}
		var m struct {
			Coef []float64 `json:"coefficients"`
		}
		if err := json.Unmarshal([]byte(readFile(t, filepath.Join(dir, "m.json"))), &m); err != nil {
			t.Fatal(err)
		}
		return r.Privacy.PostProcessing, m.Coef
	}
	listed := func(pp []string) bool {
		for _, l := range pp {
			if strings.HasPrefix(l, "public structure of Λ2 from the schema's encoding: 1 of the 6 released entries known, 2 averaged") {
				return true
			}
		}
		return false
	}
	pp, with := fit()
	if !listed(pp) {
		t.Fatalf("default fit does not list the structure (intercept known, the afam diagonal = its intercept entry): %q", pp)
	}
	pp, without := fit("--no-schema-structure")
	if listed(pp) {
		t.Fatalf("--no-schema-structure still lists the structure: %q", pp)
	}
	if len(with) != 3 || len(without) != 3 {
		t.Fatalf("coefficients %v and %v", with, without)
	}
	same := true
	for i := range with {
		same = same && with[i] == without[i]
	}
	if same {
		t.Fatalf("the projection did not change the fit: %v", with)
	}
}
