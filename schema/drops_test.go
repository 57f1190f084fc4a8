package schema

import "testing"

func TestDropsRecords(t *testing.T) {
	for _, c := range []struct {
		name, json string
		want       bool
	}{
		{"none", `{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "a", "range": [0, 1]}]}`, false},
		{"impute", `{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "a", "range": [0, 1], "missing": "impute", "impute": 0.5}]}`, false},
		{"feature", `{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "a", "range": [0, 1], "missing": "drop"}]}`, true},
		{"target", `{"target": {"name": "y", "range": [0, 1], "missing": "drop"}, "features": [{"name": "a", "range": [0, 1]}]}`, true},
	} {
		s, err := Parse([]byte(c.json))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got := s.DropsRecords(); got != c.want {
			t.Errorf("%s: DropsRecords = %v, want %v", c.name, got, c.want)
		}
	}
}
