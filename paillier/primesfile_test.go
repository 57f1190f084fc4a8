package paillier

import (
	"strings"
	"testing"
)

func TestSafePrimesFile(t *testing.T) {
	p, q := testPrimePair(2048)
	got1, got2, err := ParseSafePrimes(FormatSafePrimes(p, q))
	if err != nil || got1.Cmp(p) != 0 || got2.Cmp(q) != 0 {
		t.Fatalf("round trip: %v %v %v", got1, got2, err)
	}
	// openssl-style decimal, bare lines.
	got1, got2, err = ParseSafePrimes([]byte("\n" + p.String() + "\n" + q.String() + "\n"))
	if err != nil || got1.Cmp(p) != 0 || got2.Cmp(q) != 0 {
		t.Fatalf("decimal: %v", err)
	}
	bad := []struct{ in, want string }{
		{"p = 23\n", "want exactly 2"},
		{"p = 23\nq = 47\nr = 59\n", "unknown name"},
		{"p = 23\nq = 47\n83\n", "holds 3 integers"},
		{"p = zz\nq = 47\n", "not a positive integer"},
		{"p = -23\nq = 47\n", "not a positive integer"},
	}
	for _, tc := range bad {
		if _, _, err := ParseSafePrimes([]byte(tc.in)); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSafePrimes(%q) error %v, want %q", tc.in, err, tc.want)
		}
	}
}
