package decimal

import (
	"errors"
	"math"
	"math/rand/v2"
	"strconv"
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
