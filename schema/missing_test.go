package schema

import (
	"errors"
	"strings"
	"testing"
)

const missingSchema = `{"target": {"name": "y", "range": [0, 10], "missing": "drop"},
 "features": [
   {"name": "a", "range": [0, 10], "missing": "impute", "impute": 5},
   {"name": "b", "range": [0, 10], "missing": "drop"},
   {"name": "c", "categories": ["x", "z"], "missing": "impute", "impute": "z"},
   {"name": "d", "range": [0, 10]}
 ]}`

// TestMissingPolicies encodes records with missing values under each policy
// and compares with the record written with the imputed value itself.
func TestMissingPolicies(t *testing.T) {
	s := mustParse(t, missingSchema)
	e, err := s.NewEncoder([]string{"a", "b", "c", "d", "y"}, EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	encode := func(rec string) ([]float64, error) {
		dst := make([]float64, e.Width())
		return dst, e.Encode(fields(rec), dst)
	}
	want, err := encode("5,1,z,2,3")
	if err != nil {
		t.Fatal(err)
	}
	for _, tok := range MissingTokens {
		got, err := encode(tok + ",1," + tok + ",2,3")
		if err != nil {
			t.Fatalf("token %q: %v", tok, err)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("token %q: imputed row %v, want %v", tok, got, want)
			}
		}
	}
	cases := []struct {
		rec, column string
		want        error
	}{
		{"5,NA,z,2,3", "b", ErrDropped},
		{"5,1,z,2,", "y", ErrDropped},
		{"5,1,z,NaN,3", "d", ErrMissingValue},
		{"5,1,z,,3", "d", ErrMissingValue},
		{"5,1,q,2,3", "c", ErrUnknownCategory},
		{"5,1,z,Inf,3", "d", ErrNotFinite},
	}
	for _, c := range cases {
		_, err := encode(c.rec)
		var fe *FieldError
		if !errors.Is(err, c.want) || !errors.As(err, &fe) || fe.Column != c.column {
			t.Errorf("%q: %v, want %v on %q", c.rec, err, c.want, c.column)
		}
	}
	// The error under the default policy names the schema key to change.
	_, err = encode("5,1,z,NA,3")
	if err == nil || !strings.Contains(err.Error(), `"missing" policy is "error"`) {
		t.Errorf("default policy error: %v", err)
	}
}

// TestMissingAsCategory: a declared category that looks like a missing
// token is read as that category.
func TestMissingAsCategory(t *testing.T) {
	s := mustParse(t, `{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "c", "categories": ["NA", "x"]}]}`)
	e, err := s.NewEncoder([]string{"c", "y"}, EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float64, e.Width())
	if err := e.Encode(fields("NA,1"), dst); err != nil {
		t.Fatal(err)
	}
	if err := e.Encode(fields(",1"), dst); !errors.Is(err, ErrMissingValue) {
		t.Fatalf("empty field: %v", err)
	}
}

// TestCounts checks the per-column tallies against a hand count; a record
// that fails or is dropped adds nothing but its drop.
func TestCounts(t *testing.T) {
	s := mustParse(t, `{"target": {"name": "y", "range": [0, 10]},
 "features": [
   {"name": "a", "range": [0, 10], "missing": "impute", "impute": 50},
   {"name": "b", "range": [0, 10], "missing": "drop"},
   {"name": "c", "categories": ["x", "z"], "unknown": "reference"}
 ]}`)
	e, err := s.NewEncoder([]string{"a", "b", "c", "y"}, EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	c := e.NewCounts()
	recs := []string{
		"1,2,x,3",    // nothing
		"11,2,x,3",   // a clipped
		",2,x,3",     // a imputed (and the imputed 50 clipped)
		"-1,-1,q,30", // a, b, y clipped; c unknown
		"11,NA,q,30", // dropped by b: nothing else counted
		"11,2,x,bad", // error: nothing counted
	}
	dst := make([]float64, e.Width())
	for _, r := range recs {
		_ = e.EncodeCounted(fields(r), dst, c)
	}
	want := map[string][4]int64{ // clipped, imputed, dropped, unknown
		"a": {3, 1, 0, 0}, "b": {1, 0, 1, 0}, "c": {0, 0, 0, 1}, "y": {1, 0, 0, 0},
	}
	for i, name := range c.Columns {
		got := [4]int64{c.Clipped[i], c.Imputed[i], c.Dropped[i], c.Unknown[i]}
		if got != want[name] {
			t.Errorf("column %s: counts %v, want %v", name, got, want[name])
		}
	}
	d := e.NewCounts()
	d.Add(c)
	d.Add(c)
	if d.Clipped[0] != 6 {
		t.Errorf("Add: %v", d.Clipped)
	}
	d.Reset()
	if d.Clipped[0] != 0 {
		t.Errorf("Reset: %v", d.Clipped)
	}
}

func TestMissingSchemaErrors(t *testing.T) {
	cases := []struct{ schema, want string }{
		{`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "a", "range": [0, 1], "missing": "skip"}]}`, `"missing": "skip"`},
		{`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "a", "range": [0, 1], "missing": "impute"}]}`, `needs a declared public "impute" value`},
		{`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "a", "range": [0, 1], "impute": 3}]}`, `set "missing": "impute"`},
		{`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "a", "range": [0, 1], "missing": "impute", "impute": "x"}]}`, "not a number"},
		{`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "a", "range": [0, 1], "transform": "log", "missing": "impute", "impute": 0}]}`, "log of non-positive"},
		{`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "c", "categories": ["x"], "missing": "impute", "impute": "w"}]}`, "not one of the declared categories"},
		{`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "c", "categories": ["x"], "missing": "impute", "impute": 1}]}`, "not a string"},
		{`{"target": {"name": "y", "range": [0, 1], "missing": "impute"}, "features": [{"name": "a", "range": [0, 1]}]}`, "a missing target can only be"},
		{`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "c", "categories": [1, 2]}]}`, `not [1, 2]`},
		{`{"target": {"name": "y", "range": "0-1"}, "features": [{"name": "a", "range": [0, 1]}]}`, `key "target.range": got a JSON string, want a list of two numbers`},
	}
	for _, c := range cases {
		_, err := Parse([]byte(c.schema))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s:\n got %v\n want %q", c.schema, err, c.want)
		}
		if err != nil && strings.Contains(err.Error(), "Go struct") {
			t.Errorf("Go type names in a user error: %v", err)
		}
	}
}

// TestIgnoreTarget: prediction reads no label, whatever it holds.
func TestIgnoreTarget(t *testing.T) {
	s := mustParse(t, missingSchema)
	e, err := s.NewEncoder([]string{"a", "b", "c", "d", "y"}, EncoderOptions{IgnoreTarget: true})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]float64, e.Width())
	if err := e.Encode(fields("1,1,x,1,garbage"), dst); err != nil || dst[len(dst)-1] != 0 || e.HasTarget() {
		t.Fatalf("ignored target: %v %v", err, dst)
	}
}
