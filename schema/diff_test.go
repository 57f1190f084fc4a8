package schema

import (
	"strings"
	"testing"
)

// TestDiffNamesColumnAndField (issue 25 item 6): two schemas that differ
// in one place are reported with that column and field and both values;
// identical declarations give nil.
func TestDiffNamesColumnAndField(t *testing.T) {
	base := `{"target": {"name": "wage", "range": [50, 5000], "transform": "log"}, "features": [{"name": "age", "range": [18, 90]}, {"name": "region", "categories": ["a", "b", "c"]}]}`
	for _, c := range []struct {
		other, column, field string
		values               []string
	}{
		{base, "", "", nil},
		{strings.Replace(base, "[18, 90]", "[18, 95]", 1), "age", "range", []string{"[18,90]", "[18,95]"}},
		{strings.Replace(base, `"c"]`, `"d"]`, 1), "region", "categories", []string{`["a","b","c"]`, `["a","b","d"]`}},
		{strings.Replace(base, "[50, 5000]", "[50, 6000]", 1), "wage", "target range", []string{"[50,5000]", "[50,6000]"}},
		{strings.Replace(base, `"name": "age"`, `"name": "years"`, 1), "feature 1", "name", []string{`"age"`, `"years"`}},
	} {
		a, err := Parse([]byte(base))
		if err != nil {
			t.Fatal(err)
		}
		b, err := Parse([]byte(c.other))
		if err != nil {
			t.Fatal(err)
		}
		d := Diff(a, b)
		if c.field == "" {
			if d != nil {
				t.Errorf("identical schemas: %v", d)
			}
			continue
		}
		if d == nil || d.Column != c.column || d.Field != c.field || d.A != c.values[0] || d.B != c.values[1] {
			t.Errorf("diff %+v, want column %q field %q values %v", d, c.column, c.field, c.values)
			continue
		}
		if s := d.String(); !strings.Contains(s, c.column) || !strings.Contains(s, c.field) {
			t.Errorf("message %q lacks the column or field", s)
		}
	}
}
