package schema

import (
	"errors"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
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
		{"unknown key", `{"target": {"name": "y", "rang": [0,1]}, "features": [{"name":"a","range":[0,1]}]}`, `unknown key "rang"`},
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
		{"100,NaN,cauc,west", "education", ErrMissingValue},
		{"100,Infinity,cauc,west", "education", ErrNotFinite},
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

// TestUnitScale checks that the scale is 1/√B rounded down: B·s² ≤ 1 and
// B·next(s)² > 1, compared exactly, and that the float64 nearest to 1/√B
// does not satisfy the bound for some B (why rounding down is needed).
func TestUnitScale(t *testing.T) {
	sq := func(s float64, b int) *big.Rat {
		r := new(big.Rat).SetFloat64(s)
		return r.Mul(r, r).Mul(r, new(big.Rat).SetInt64(int64(b)))
	}
	one := big.NewRat(1, 1)
	nearestFails := 0
	for b := 1; b <= 5000; b++ {
		s := unitScale(b)
		if sq(s, b).Cmp(one) > 0 || sq(math.Nextafter(s, math.Inf(1)), b).Cmp(one) <= 0 {
			t.Fatalf("B=%d: scale %v is not 1/√B rounded down", b, s)
		}
		if sq(1/math.Sqrt(float64(b)), b).Cmp(one) > 0 {
			nearestFails++
		}
	}
	if nearestFails == 0 {
		t.Fatal("expected the rounded-to-nearest 1/√B to overshoot for some B")
	}
	t.Logf("1/√B rounded to nearest gives B·s² > 1 for %d of B = 1..5000", nearestFails)
}

// TestUnitBallExact encodes adversarial records (every numeric feature at a
// range end, just inside it or far outside, every categorical group at a
// non-reference level) for schemas with many groups, and checks ‖x‖² ≤ 1
// exactly: the sum of the exact squares of the float64 values written,
// computed in rational arithmetic. The target must be in [−1, 1] exactly.
func TestUnitBallExact(t *testing.T) {
	type shape struct {
		numeric, categorical, levels int
		intercept                    bool
	}
	shapes := []shape{
		{2, 0, 0, true}, {3, 0, 0, false}, {5, 5, 2, true}, {9, 1, 4, true}, {24, 0, 0, true},
		{0, 25, 3, false}, {17, 13, 5, true}, {100, 0, 0, false}, {150, 150, 2, true}, {299, 0, 0, true},
	}
	ranges := [][2]float64{{0, 1}, {-3.7, 12.1}, {0, 3}, {4, 9}, {-1e-3, 1e-3}, {1, 1e6}}
	rng := rand.New(rand.NewPCG(7, 11))
	for _, sh := range shapes {
		var feats []string
		var header []string
		for i := 0; i < sh.numeric; i++ {
			r := ranges[i%len(ranges)]
			feats = append(feats, fmt.Sprintf(`{"name":"n%d","range":[%v,%v]}`, i, r[0], r[1]))
			header = append(header, fmt.Sprintf("n%d", i))
		}
		for i := 0; i < sh.categorical; i++ {
			var cats []string
			for l := 0; l < sh.levels; l++ {
				cats = append(cats, fmt.Sprintf(`"l%d"`, l))
			}
			feats = append(feats, fmt.Sprintf(`{"name":"c%d","categories":[%s]}`, i, strings.Join(cats, ",")))
			header = append(header, fmt.Sprintf("c%d", i))
		}
		doc := fmt.Sprintf(`{"target":{"name":"y","range":[-2.5,7.25]},"intercept":%v,"features":[%s]}`, sh.intercept, strings.Join(feats, ","))
		s := mustParse(t, doc)
		e, err := s.NewEncoder(append(header, "y"), EncoderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		b := s.Bound()
		dst := make([]float64, e.Width())
		maxN2 := new(big.Rat)
		for trial := 0; trial < 200; trial++ {
			rec := make([]string, 0, len(header)+1)
			for i := 0; i < sh.numeric; i++ {
				r := ranges[i%len(ranges)]
				var v float64
				switch mode := (trial + i) % 6; {
				case trial == 0 || mode == 0:
					v = r[1]
				case trial == 1 || mode == 1:
					v = r[0]
				case mode == 2:
					v = math.Nextafter(r[1], math.Inf(-1)) // just inside
				case mode == 3:
					v = math.Nextafter(r[0], math.Inf(1))
				case mode == 4:
					v = r[1] * (1 + 1e3*rng.Float64()) // far outside
				default:
					v = r[0] + (r[1]-r[0])*rng.Float64()
				}
				rec = append(rec, strconv.FormatFloat(v, 'g', -1, 64))
			}
			for i := 0; i < sh.categorical; i++ {
				l := sh.levels - 1
				if trial > 1 {
					l = 1 + rng.IntN(sh.levels-1)
				}
				rec = append(rec, fmt.Sprintf("l%d", l))
			}
			rec = append(rec, strconv.FormatFloat([]float64{-2.5, 7.25, 1e9, -1e9, math.Nextafter(7.25, 0)}[trial%5], 'g', -1, 64))
			if err := e.Encode(fields(strings.Join(rec, ",")), dst); err != nil {
				t.Fatal(err)
			}
			n2 := new(big.Rat)
			for _, v := range dst[:e.Width()-1] {
				r := new(big.Rat).SetFloat64(v)
				n2.Add(n2, r.Mul(r, r))
			}
			if n2.Cmp(big.NewRat(1, 1)) > 0 {
				f, _ := n2.Float64()
				t.Fatalf("%+v (B=%d): ‖x‖² = %v > 1 exactly for %v", sh, b, f, rec)
			}
			if n2.Cmp(maxN2) > 0 {
				maxN2 = n2
			}
			if y := dst[e.Width()-1]; y < -1 || y > 1 {
				t.Fatalf("target %v outside [−1, 1]", y)
			}
		}
		if f, _ := maxN2.Float64(); f < 1-1e-12 {
			t.Errorf("%+v: largest ‖x‖² %v: the extreme record should reach 1 to rounding", sh, f)
		}
	}
}
