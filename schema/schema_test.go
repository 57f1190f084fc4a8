package schema

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

const cpsSchema = `{"target": {"name": "wage", "transform": "log", "range": [4, 9]},
 "features": [
   {"name": "education", "range": [0, 20]},
   {"name": "ethnicity", "categories": ["cauc", "afam"]},
   {"name": "region", "categories": ["northeast", "midwest", "south", "west"]}
 ]}`

func mustParse(t *testing.T, s string) *Schema {
	t.Helper()
	sc, err := Parse([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func fields(s string) [][]byte {
	var out [][]byte
	for _, f := range strings.Split(s, ",") {
		out = append(out, []byte(f))
	}
	return out
}

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, doc, want string
	}{
		{"syntax", "{\"target\": {\"name\": \"y\",\n \"range\": [0, 1]]}", "line 2"},
		{"empty", "", "empty document"},
		{"unknown key", `{"target": {"name": "y", "rang": [0,1]}, "features": [{"name":"a","range":[0,1]}]}`, "unknown field"},
		{"no target name", `{"target": {}, "features": [{"name":"a","range":[0,1]}]}`, "target: name is missing"},
		{"no features", `{"target": {"name": "y", "range": [0,1]}, "features": []}`, "no features"},
		{"feature without bounds", `{"target": {"name": "y", "range": [0,1]}, "features": [{"name":"a"}]}`, "never read off the data"},
		{"inverted range", `{"target": {"name": "y", "range": [1,0]}, "features": [{"name":"a","range":[0,1]}]}`, "lo < hi"},
		{"range and categories", `{"target": {"name": "y", "range": [0,1]}, "features": [{"name":"a","range":[0,1],"categories":["x"]}]}`, "not both"},
		{"duplicate category", `{"target": {"name": "y", "range": [0,1]}, "features": [{"name":"a","categories":["x","x"]}]}`, "listed twice"},
		{"duplicate feature", `{"target": {"name": "y", "range": [0,1]}, "features": [{"name":"a","range":[0,1]},{"name":"a","range":[0,1]}]}`, "declared twice"},
		{"target as feature", `{"target": {"name": "y", "range": [0,1]}, "features": [{"name":"y","range":[0,1]}]}`, "target cannot also be a feature"},
		{"bad transform", `{"target": {"name": "y", "range": [0,1], "transform": "exp"}, "features": [{"name":"a","range":[0,1]}]}`, "unknown transform"},
		{"binary with transform", `{"target": {"name": "y", "positive": "1", "transform": "log"}, "features": [{"name":"a","range":[0,1]}]}`, "no transform"},
		{"range and threshold", `{"target": {"name": "y", "range": [0,1], "above": 0.5}, "features": [{"name":"a","range":[0,1]}]}`, "not both"},
		{"labels and threshold", `{"target": {"name": "y", "positive": "1", "above": 0.5}, "features": [{"name":"a","range":[0,1]}]}`, "not both"},
		{"range type", `{"target": {"name": "y", "range": ["a", 1]}, "features": []}`, "line 1"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.doc))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want it to contain %q", err, c.want)
			}
		})
	}
}

func TestEncodeKnownValues(t *testing.T) {
	s := mustParse(t, cpsSchema)
	if got := s.FeatureNames(); strings.Join(got, "|") != "(intercept)|education|ethnicity=afam|region=midwest|region=south|region=west" {
		t.Fatalf("names %v", got)
	}
	e, err := s.NewEncoder([]string{"wage", "education", "experience", "ethnicity", "region"}, EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if e.Width() != 7 {
		t.Fatalf("width %d", e.Width())
	}
	r := 1 / math.Sqrt(4) // B = intercept + education + ethnicity + region
	cases := []struct {
		rec  string
		want []float64
	}{
		{fmt.Sprint(math.Exp(6.5), ",10,3,cauc,northeast"), []float64{r, 0, 0, 0, 0, 0, 0}},
		{"20000,25,3,afam,west", []float64{r, r, r, 0, 0, r, 1}},                          // clipped above
		{"1,-3,3,cauc,midwest", []float64{r, -r, 0, r, 0, 0, -1}},                         // clipped below
		{" 54.598150033144236 , 5 ,x, afam ,south", []float64{r, -r / 2, r, 0, r, 0, -1}}, // spaces trimmed; log(54.598)=4
	}
	for _, c := range cases {
		dst := make([]float64, e.Width())
		if err := e.Encode(fields(c.rec), dst); err != nil {
			t.Fatalf("%q: %v", c.rec, err)
		}
		for i := range dst {
			if math.Abs(dst[i]-c.want[i]) > 1e-12 {
				t.Fatalf("%q: got %v want %v", c.rec, dst, c.want)
			}
		}
	}
	if got := s.DecodeTarget(0); math.Abs(got-math.Exp(6.5)) > 1e-9 {
		t.Fatalf("DecodeTarget(0) = %v", got)
	}
}

func TestEncodeErrors(t *testing.T) {
	s := mustParse(t, cpsSchema)
	e, err := s.NewEncoder([]string{"wage", "education", "ethnicity", "region"}, EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		rec    string
		column string
		want   error
	}{
		{"100,NaN,cauc,west", "education", ErrNotFinite},
		{"100,+Inf,cauc,west", "education", ErrNotFinite},
		{"100,1e400,cauc,west", "education", ErrNotFinite},
		{"100,,cauc,west", "education", ErrMissingValue},
		{"100,NA,cauc,west", "education", ErrMissingValue},
		{"100,twelve,cauc,west", "education", ErrNotNumber},
		{"100,12,hispanic,west", "ethnicity", ErrUnknownCategory},
		{"-5,12,cauc,west", "wage", nil}, // log of negative
	}
	for _, c := range cases {
		err := e.Encode(fields(c.rec), make([]float64, e.Width()))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Column != c.column {
			t.Fatalf("%q: error %v, want a FieldError on %q", c.rec, err, c.column)
		}
		if c.want != nil && !errors.Is(err, c.want) {
			t.Fatalf("%q: error %v, want %v", c.rec, err, c.want)
		}
	}
	if err := e.Encode(fields("100,12"), make([]float64, e.Width())); err == nil {
		t.Fatal("short record accepted")
	}
}

func TestMissingColumns(t *testing.T) {
	s := mustParse(t, cpsSchema)
	_, err := s.NewEncoder([]string{"education", "region"}, EncoderOptions{})
	var me *MissingColumnsError
	if !errors.As(err, &me) || strings.Join(me.Columns, ",") != "ethnicity,wage" {
		t.Fatalf("got %v", err)
	}
	e, err := s.NewEncoder([]string{"education", "ethnicity", "region"}, EncoderOptions{TargetOptional: true})
	if err != nil || e.HasTarget() {
		t.Fatalf("target optional: %v", err)
	}
}

func TestBinaryTargets(t *testing.T) {
	cases := []struct {
		target string
		value  string
		want   float64
		err    bool
	}{
		{`{"name":"y","positive":"yes"}`, "yes", 1, false},
		{`{"name":"y","positive":"yes"}`, "no", 0, false},
		{`{"name":"y","positive":"yes"}`, "", 0, true},
		{`{"name":"y","positive":"yes","negative":"no"}`, "Yes", 0, true},
		{`{"name":"y","positive":"yes","negative":"no"}`, "no", 0, false},
		{`{"name":"y"}`, "1", 1, false},
		{`{"name":"y"}`, "0", 0, false},
		{`{"name":"y"}`, "2", 0, true},
		{`{"name":"y","above":500}`, "500.01", 1, false},
		{`{"name":"y","above":500}`, "500", 0, false},
		{`{"name":"y","above":500}`, "NaN", 0, true},
		{`{"name":"y","above":500}`, "", 0, true},
	}
	for _, c := range cases {
		s := mustParse(t, `{"target":`+c.target+`,"features":[{"name":"a","range":[0,1]}]}`)
		e, err := s.NewEncoder([]string{"a", "y"}, EncoderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dst := make([]float64, e.Width())
		err = e.Encode(fields("0.5,"+c.value), dst)
		if (err != nil) != c.err || (err == nil && dst[2] != c.want) {
			t.Fatalf("%s %q: got %v err %v", c.target, c.value, dst, err)
		}
	}
}

// TestUnitBall checks the public rule's promise on random records, including
// values far outside the declared ranges and undeclared categories mapped to
// the reference level.
func TestUnitBall(t *testing.T) {
	s := mustParse(t, `{"target":{"name":"y","range":[-1,1]},"features":[
	  {"name":"a","range":[0,1]},{"name":"b","range":[-5,4],"transform":"log1p"},
	  {"name":"c","categories":["p","q","r"],"unknown":"reference"},{"name":"d","categories":["only"]}]}`)
	e, err := s.NewEncoder([]string{"a", "b", "c", "d", "y"}, EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	cats := []string{"p", "q", "r", "zzz"}
	dst := make([]float64, e.Width())
	maxNorm := 0.0
	for i := 0; i < 10000; i++ {
		rec := fmt.Sprintf("%g,%g,%s,only,%g", rng.NormFloat64()*10, rng.Float64()*100, cats[rng.IntN(4)], rng.NormFloat64()*3)
		if err := e.Encode(fields(rec), dst); err != nil {
			t.Fatal(err)
		}
		n2 := 0.0
		for _, v := range dst[:e.Width()-1] {
			n2 += v * v
		}
		maxNorm = math.Max(maxNorm, math.Sqrt(n2))
		if y := dst[e.Width()-1]; y < -1 || y > 1 {
			t.Fatalf("target %v outside [-1,1]", y)
		}
	}
	if maxNorm > 1+1e-12 {
		t.Fatalf("max ‖x‖ = %v > 1", maxNorm)
	}
	if maxNorm < 0.99 {
		t.Fatalf("max ‖x‖ = %v: the bound is not nearly attained; the scaling is too conservative", maxNorm)
	}
}

func ExampleSchema_NewEncoder() {
	s, _ := Parse([]byte(`{"target": {"name": "wage", "transform": "log", "range": [4, 9]},
	  "features": [{"name": "education", "range": [0, 20]},
	               {"name": "ethnicity", "categories": ["cauc", "afam"]}]}`))
	e, _ := s.NewEncoder([]string{"wage", "education", "ethnicity"}, EncoderOptions{})
	row := make([]float64, e.Width())
	_ = e.Encode([][]byte{[]byte("354.94"), []byte("20"), []byte("afam")}, row)
	fmt.Println(s.FeatureNames())
	fmt.Printf("%.4f\n", row)
	// Output:
	// [(intercept) education ethnicity=afam]
	// [0.5774 0.5774 0.5774 -0.2512]
}
