package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/regress"
)

// TestCoefTableWeaklyLocated checks that a weakly located coefficient
// (regress.CoefRow.WeaklyLocated) gets a † after its interval and the
// footnote under the table, that it is carried in the JSON as
// "weakly_located": true, and that a table without one prints neither and
// omits the field (unchanged output for well-conditioned fits).
func TestCoefTableWeaklyLocated(t *testing.T) {
	rows := func(weak bool) []regress.CoefRow {
		return []regress.CoefRow{
			{Name: "intercept", Identified: true, SE: 0.1, OriginalSE: 0.1, OriginalLower: 4.8, OriginalUpper: 5.2},
			{Name: "education", Identified: true, SE: 0.2, OriginalSE: 0.01, OriginalLower: 0.08, OriginalUpper: 0.12, WeaklyLocated: weak},
		}
	}
	for _, weak := range []bool{true, false} {
		tab := &regress.CoefTable{Level: 0.95, Method: "m", Estimand: "e", Rows: rows(weak)}
		var buf bytes.Buffer
		if err := writeCoefTable(&buf, tab); err != nil {
			t.Fatal(err)
		}
		out := buf.String()
		lines := strings.Split(out, "\n")
		if got := strings.Contains(lines[2], "[0.08, 0.12]"+weakMark); got != weak {
			t.Errorf("weak=%v: education row %q marked %v", weak, lines[2], got)
		}
		if strings.Contains(lines[1], "†") {
			t.Errorf("weak=%v: intercept row %q marked", weak, lines[1])
		}
		if got := strings.Contains(out, weakFootnote); got != weak {
			t.Errorf("weak=%v: footnote printed %v:\n%s", weak, got, out)
		}
		js, err := json.Marshal(tab)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Count(string(js), `"weakly_located":true`); got != map[bool]int{true: 1, false: 0}[weak] {
			t.Errorf("weak=%v: %d weakly_located fields in %s", weak, got, js)
		}
		if !weak && strings.Contains(string(js), "weakly_located") {
			t.Errorf("field not omitted when false: %s", js)
		}
	}
}
