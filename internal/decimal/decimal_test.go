package decimal

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

func same(t *testing.T, s string) {
	t.Helper()
	got, gerr := Parse([]byte(s))
	want, werr := strconv.ParseFloat(s, 64)
	if math.Float64bits(got) != math.Float64bits(want) && !(math.IsNaN(got) && math.IsNaN(want)) {
		t.Fatalf("Parse(%q) = %v (%x), strconv %v (%x)", s, got, math.Float64bits(got), want, math.Float64bits(want))
	}
	if (gerr == nil) != (werr == nil) {
		t.Fatalf("Parse(%q) error %v, strconv %v", s, gerr, werr)
	}
	if werr != nil && !errors.Is(gerr, werr.(*strconv.NumError).Err) {
		t.Fatalf("Parse(%q) error %v, want %v", s, gerr, werr)
	}
}

func TestMatchesStrconv(t *testing.T) {
	for _, s := range []string{
		"", "0", "-0", "+0", "0.0", "-0.000", "1", "-1", "12.345678", "-99.999999", ".5", "5.", ".", "-", "+",
		"e5", "1e", "1e+", "1e5", "1E-5", "1e22", "1e23", "1e-22", "1e-23", "9007199254740992", "9007199254740993",
		"123456789012345678", "1234567890123456789", "12345678901234567890", "0.1", "0.3", "1.7976931348623157e308",
		"1e309", "-1e309", "4.9e-324", "1e-400", "inf", "-Inf", "NaN", "infinity", "0x1p-2", "1_000", "1,5", " 1",
		"1 ", "00000000000000000000000001.5", "0.000000000000000000000000001", "1e0000000000000000000001",
		"3.14159265358979323846", "--1", "1.2.3", "1e5e5", "1..2",
	} {
		same(t, s)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 200000; i++ {
		var s string
		switch i % 4 {
		case 0:
			s = strconv.FormatFloat(rng.Float64()*200-100, 'f', rng.IntN(12), 64)
		case 1:
			s = strconv.FormatFloat(math.Float64frombits(rng.Uint64()), 'g', -1, 64)
		case 2:
			s = strconv.FormatFloat(rng.NormFloat64()*math.Pow(10, float64(rng.IntN(40)-20)), 'e', rng.IntN(18), 64)
		default:
			s = strconv.FormatInt(rng.Int64()>>rng.IntN(64), 10)
		}
		same(t, s)
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{"12.345678", "-0", "1e22", "9007199254740993", "0x1p3", "inf", "1e", "."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { same(t, s) })
}

func BenchmarkParse(b *testing.B) {
	in := []byte("-12.345678")
	b.Run("decimal", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			Parse(in)
		}
	})
	b.Run("strconv", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			strconv.ParseFloat(string(in), 64)
		}
	})
}

// samePrefix checks Prefix(b) against strconv on the prefix it claims, and
// that it claims a prefix whenever the fast path must apply.
func samePrefix(t *testing.T, s string) {
	t.Helper()
	v, n, ok := Prefix([]byte(s))
	if !ok {
		if n != 0 || v != 0 {
			t.Fatalf("Prefix(%q) = %v, %d, false: want 0, 0", s, v, n)
		}
		return
	}
	want, err := strconv.ParseFloat(s[:n], 64)
	if err != nil || math.Float64bits(v) != math.Float64bits(want) {
		t.Fatalf("Prefix(%q) = %v (%x) over %q, strconv %v (%x), %v", s, v, math.Float64bits(v), s[:n], want, math.Float64bits(want), err)
	}
	if n < len(s) {
		if c := s[n]; c >= '0' && c <= '9' || (c == '.' && !strings.Contains(s[:n], ".")) {
			t.Fatalf("Prefix(%q) stopped at %d before %q: not the longest prefix", s, n, c)
		}
	}
}

func TestPrefix(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		ok   bool
		want float64
	}{
		{"-38.271102,", 10, true, -38.271102},
		{"12345678901234567", 0, false, 0}, // > 2⁵³
		{"9007199254740992,1", 16, true, 9007199254740992},
		{"0.5e3", 3, true, 0.5},
		{"5.", 2, true, 5},
		{".5", 2, true, 0.5},
		{"+7", 2, true, 7},
		{"-0.000000", 9, true, math.Copysign(0, -1)},
		{"-", 0, false, 0},
		{".", 0, false, 0},
		{"", 0, false, 0},
		{"x1", 0, false, 0},
		{"1.00000000000000000000001", 0, false, 0},         // 23 decimals
		{"00000000000000000000000000001.25|", 0, false, 0}, // > 19 digits: Parse's job
		{"0000001.25|", 10, true, 1.25},
		{"1234567890123456789", 0, false, 0},
		{"9999999999999999999.5", 0, false, 0},
		{"12345678.12345678\r", 17, true, 12345678.12345678},
	} {
		v, n, ok := Prefix([]byte(c.in))
		if ok != c.ok || n != c.n || math.Float64bits(v) != math.Float64bits(c.want) {
			t.Errorf("Prefix(%q) = %v, %d, %v; want %v, %d, %v", c.in, v, n, ok, c.want, c.n, c.ok)
		}
		samePrefix(t, c.in)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	seps := []string{"", ",", ";1", "\r", "e5", ".3", "x", "1234567890,"}
	for i := 0; i < 200000; i++ {
		var s string
		switch i % 4 {
		case 0:
			s = strconv.FormatFloat(rng.Float64()*200-100, 'f', rng.IntN(12), 64)
		case 1:
			s = strconv.FormatFloat(rng.NormFloat64()*math.Pow(10, float64(rng.IntN(30)-10)), 'f', -1, 64)
		case 2:
			s = strings.Repeat("0", rng.IntN(12)) + strconv.FormatInt(rng.Int64()>>rng.IntN(64), 10)
		default:
			b := make([]byte, rng.IntN(24))
			for j := range b {
				b[j] = "0123456789.-+,e"[rng.IntN(15)]
			}
			s = string(b)
		}
		sep := seps[rng.IntN(len(seps))]
		whole := i%4 == 0 && (sep == "" || sep[0] == ',' || sep[0] == ';' || sep[0] == '\r')
		s += sep
		samePrefix(t, s)
		// A field that is a whole fast-path number must take the fast
		// path: the reader's speed depends on it.
		if whole {
			if _, n, ok := Prefix([]byte(s)); !ok || n == 0 {
				t.Fatalf("Prefix(%q) refused a six-decimal field", s)
			}
		}
	}
}

func FuzzPrefix(f *testing.F) {
	for _, s := range []string{"12.345678,", "-0", "9007199254740993", "0.5e3", ".", "00000000012345678.9"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { samePrefix(t, s) })
}

func BenchmarkPrefix(b *testing.B) {
	in := []byte("-12.345678,")
	for i := 0; i < b.N; i++ {
		Prefix(in)
	}
}
