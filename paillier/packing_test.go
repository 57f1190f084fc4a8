package paillier

import (
	"math/big"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/noise"
)

// TestPackingTeacherVotes: N = 250 teachers each encrypt one packed vector
// of c = 10 noisy votes (one-hot vote plus a centred binomial noise share
// z - m/2, z ~ B(64, 1/2)); the homomorphic sum decodes to the exact
// coordinate-wise sum computed in the clear.
func TestPackingTeacherVotes(t *testing.T) {
	const (
		teachers = 250
		classes  = 10
		tosses   = 64
	)
	sk := mustTestKey(t, 512)
	pk := sk.Public()
	pp, err := NewPacking(pk, classes, -tosses/2, tosses/2+1, teachers)
	if err != nil {
		t.Fatal(err)
	}
	src := noise.NewInsecureSeeded(250)
	rng := testRand(t, 250)
	want := make([]int64, classes)
	var acc *Ciphertext
	for i := 0; i < teachers; i++ {
		votes := make([]int64, classes)
		votes[(i*7)%classes] = 1
		for j := range votes {
			z, err := noise.Binomial(src, tosses)
			if err != nil {
				t.Fatal(err)
			}
			votes[j] += z - tosses/2
			want[j] += votes[j]
		}
		m, err := pp.Encode(votes)
		if err != nil {
			t.Fatal(err)
		}
		ct, err := pk.Encrypt(rng, m)
		if err != nil {
			t.Fatal(err)
		}
		if acc == nil {
			acc = ct
		} else if acc, err = pk.Add(acc, ct); err != nil {
			t.Fatal(err)
		}
	}
	m, err := sk.Decrypt(acc)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pp.Decode(m, teachers)
	if err != nil {
		t.Fatal(err)
	}
	for j := range want {
		if got[j] != want[j] {
			t.Fatalf("class %d: decoded %d, want %d (all: %v vs %v)", j, got[j], want[j], got, want)
		}
	}
	// The same ciphertext decoded as a sum of fewer vectors must be caught:
	// with 250 x (-32) of offset the slots exceed the smaller bound.
	if _, err := pp.Decode(m, 1); err == nil {
		t.Fatal("decoding a 250-vector sum as one vector was not detected")
	}
}

// TestPackingExtremesProperty sums vectors at the bounds (all Min, all Max,
// alternating) for many layouts: the decode is exact, so the headroom is
// sufficient and tight layouts do not carry between slots.
func TestPackingExtremesProperty(t *testing.T) {
	sk := mustTestKey(t, 256)
	pk := sk.Public()
	layouts := []struct {
		min, max int64
		parties  int
	}{
		{0, 1, 1}, {0, 1, 250}, {-1, 1, 3}, {-32, 33, 250}, {5, 5, 7}, {-1000, 1000, 1000},
		{0, 1<<20 - 1, 1 << 10}, {-7, 0, 2},
	}
	for _, l := range layouts {
		slots := MaxSlots(pk, l.min, l.max, l.parties)
		pp, err := NewPacking(pk, slots, l.min, l.max, l.parties)
		if err != nil {
			t.Fatalf("%+v: %v", l, err)
		}
		if _, err := NewPacking(pk, slots+1, l.min, l.max, l.parties); err == nil {
			t.Fatalf("%+v: %d slots accepted, MaxSlots said %d", l, slots+1, slots)
		}
		for _, pattern := range []string{"min", "max", "alt"} {
			vec := make([]int64, slots)
			for j := range vec {
				switch {
				case pattern == "min", pattern == "alt" && j%2 == 0:
					vec[j] = l.min
				default:
					vec[j] = l.max
				}
			}
			m, err := pp.Encode(vec)
			if err != nil {
				t.Fatal(err)
			}
			// Sum of parties copies, computed on plaintexts mod n the
			// way the homomorphism would.
			sum := new(big.Int).Mul(m, big.NewInt(int64(l.parties)))
			if sum.Cmp(sk.n) >= 0 {
				t.Fatalf("%+v: packed sum wraps modulo n", l)
			}
			got, err := pp.Decode(sum, l.parties)
			if err != nil {
				t.Fatalf("%+v %s: %v", l, pattern, err)
			}
			for j := range got {
				if got[j] != vec[j]*int64(l.parties) {
					t.Fatalf("%+v %s slot %d: %d, want %d", l, pattern, j, got[j], vec[j]*int64(l.parties))
				}
			}
		}
	}
}

func TestPackingOverflowDetected(t *testing.T) {
	sk := mustTestKey(t, 256)
	pk := sk.Public()
	pp, err := NewPacking(pk, 4, 0, 10, 3)
	if err != nil {
		t.Fatal(err)
	}
	ten, _ := pp.Encode([]int64{10, 10, 10, 10})
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"value above max", errOf(pp.Encode([]int64{0, 11, 0, 0})), "outside [0, 10]"},
		{"value below min", errOf(pp.Encode([]int64{0, 0, -1, 0})), "outside [0, 10]"},
		{"wrong length", errOf(pp.Encode([]int64{0})), "want 4"},
		{"too many parties", errOf(pp.Decode(ten, 4)), "holds 1 to 3"},
		{"slot over bound", errOf(pp.Decode(new(big.Int).Mul(ten, big.NewInt(3)), 2)), "overflow in slot 0"},
		{"bits above last slot", errOf(pp.Decode(new(big.Int).Lsh(bigOne, 4*5), 1)), "overflow: plaintext has"},
		{"layout too large", errOf(NewPacking(pk, 100, 0, 1<<40, 1000)), "at most"},
		{"min > max", errOf(NewPacking(pk, 1, 1, 0, 1)), "min 1 > max 0"},
		{"zero parties", errOf(NewPacking(pk, 1, 0, 1, 0)), "0 parties"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.err == nil {
				t.Fatal("overflow or bad input not detected")
			}
			if !strings.Contains(tc.err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", tc.err, tc.want)
			}
		})
	}
}

// TestPackingRandomProperty: for random layouts and random vectors, the
// plaintext sum of k <= MaxParties packed vectors decodes to the exact
// coordinate-wise sum.
func TestPackingRandomProperty(t *testing.T) {
	sk := mustTestKey(t, 512)
	pk := sk.Public()
	src := noise.NewInsecureSeeded(77)
	draw := func(n int64) int64 {
		v, err := noise.Binomial(src, 2*n) // in [0, 2n]
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for trial := 0; trial < 40; trial++ {
		lo := draw(500) - 500
		hi := lo + draw(300)
		parties := int(1 + draw(200))
		slots := 1 + int(draw(int64(MaxSlots(pk, lo, hi, parties)/2))%int64(MaxSlots(pk, lo, hi, parties)))
		pp, err := NewPacking(pk, slots, lo, hi, parties)
		if err != nil {
			t.Fatalf("layout [%d, %d] x %d parties, %d slots: %v", lo, hi, parties, slots, err)
		}
		k := 1 + int(draw(int64(parties))%int64(parties))
		sum := new(big.Int)
		want := make([]int64, slots)
		for i := 0; i < k; i++ {
			v := make([]int64, slots)
			for j := range v {
				v[j] = lo + draw(hi-lo)%(hi-lo+1)
				want[j] += v[j]
			}
			m, err := pp.Encode(v)
			if err != nil {
				t.Fatal(err)
			}
			sum.Add(sum, m)
		}
		if sum.Cmp(sk.n) >= 0 {
			t.Fatal("packed sum wrapped modulo n")
		}
		got, err := pp.Decode(sum, k)
		if err != nil {
			t.Fatal(err)
		}
		for j := range got {
			if got[j] != want[j] {
				t.Fatalf("trial %d slot %d: %d, want %d", trial, j, got[j], want[j])
			}
		}
	}
}
