package secagg

import (
	"bytes"
	"crypto/rand"
	"math/big"
	mrand "math/rand/v2"
	"testing"
)

func TestFieldPrimeIsSmallestAbove2To256(t *testing.T) {
	p := fieldPrime()
	two256 := new(big.Int).Lsh(big.NewInt(1), 256)
	if !p.ProbablyPrime(64) {
		t.Fatal("P is not prime")
	}
	if d := new(big.Int).Sub(p, two256); d.Cmp(big.NewInt(297)) != 0 {
		t.Fatalf("P − 2^256 = %v, want 297", d)
	}
	for k := int64(1); k < 297; k += 2 {
		if new(big.Int).Add(two256, big.NewInt(k)).ProbablyPrime(20) {
			t.Fatalf("2^256 + %d is prime: P is not the smallest prime above 2^256", k)
		}
	}
}

// Known answer: f(x) = 5 + 3x + 2x² over the field, shares at 1, 2, 3 are
// 10, 19, 32; Lagrange at 0 from them gives 5.
func TestLagrangeKnownAnswer(t *testing.T) {
	in, err := newInterpolator([]uint32{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	enc := func(v int64) []byte { return big.NewInt(v).FillBytes(make([]byte, ShareLen)) }
	got, err := in.reconstruct([][]byte{enc(10), enc(19), enc(32)})
	if err != nil {
		t.Fatal(err)
	}
	want := big.NewInt(5).FillBytes(make([]byte, SecretLen))
	if !bytes.Equal(got, want) {
		t.Fatalf("reconstructed %x, want %x", got, want)
	}
}

func TestShamirEveryThresholdSubsetReconstructs(t *testing.T) {
	rng := mrand.New(mrand.NewPCG(7, 7))
	for _, tc := range []struct{ n, t int }{{2, 2}, {3, 2}, {5, 3}, {10, 7}, {31, 21}} {
		xs := make([]uint32, tc.n)
		for i := range xs {
			xs[i] = uint32(3*i + 1)
		}
		secret := make([]byte, SecretLen)
		rand.Read(secret)
		secret[0] = 0xff // near the top of the range
		shares, err := splitSecret(secret, tc.t, xs, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		for trial := 0; trial < 20; trial++ {
			perm := rng.Perm(tc.n)
			for _, k := range []int{tc.t, tc.n} { // exactly t, and all n
				sub, ys := make([]uint32, k), make([][]byte, k)
				for i := range k {
					sub[i], ys[i] = shares[perm[i]].X, shares[perm[i]].Y
				}
				in, err := newInterpolator(sub)
				if err != nil {
					t.Fatal(err)
				}
				got, err := in.reconstruct(ys)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got, secret) {
					t.Fatalf("n=%d t=%d: %d shares reconstruct %x, want %x", tc.n, tc.t, k, got, secret)
				}
			}
			// t−1 shares interpolate a degree t−2 polynomial: with t ≥ 2
			// this is, except with probability ~2^−256, not the secret.
			if tc.t >= 2 {
				sub, ys := make([]uint32, tc.t-1), make([][]byte, tc.t-1)
				for i := range tc.t - 1 {
					sub[i], ys[i] = shares[perm[i]].X, shares[perm[i]].Y
				}
				in, _ := newInterpolator(sub)
				if got, err := in.reconstruct(ys); err == nil && bytes.Equal(got, secret) {
					t.Fatalf("n=%d t=%d: t−1 shares reconstruct the secret", tc.n, tc.t)
				}
			}
		}
	}
}

// t−1 shares reveal nothing: for t = 2, a single share of a fixed secret is
// uniform on the field. We check that the top byte of share values of the
// all-zero secret is spread out (it would be 0 for a degenerate sharing).
func TestShamirSingleShareLooksUniform(t *testing.T) {
	secret := make([]byte, SecretLen)
	var ones, total int
	for i := 0; i < 200; i++ {
		sh, err := splitSecret(secret, 2, []uint32{1, 2, 3}, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range sh[0].Y[1:] {
			for k := 0; k < 8; k++ {
				ones += int(b>>k) & 1
				total++
			}
		}
	}
	// 51,200 fair bits: mean 25,600, sd 113; 6 sd ≈ false-alarm 2e-9.
	if d := ones - total/2; d > 680 || d < -680 {
		t.Fatalf("share bits: %d ones of %d", ones, total)
	}
}

func TestShamirRejectsBadInput(t *testing.T) {
	s := make([]byte, SecretLen)
	for name, f := range map[string]func() error{
		"short secret": func() error { _, err := splitSecret(s[:31], 2, []uint32{1, 2}, rand.Reader); return err },
		"t too big":    func() error { _, err := splitSecret(s, 3, []uint32{1, 2}, rand.Reader); return err },
		"x = 0":        func() error { _, err := splitSecret(s, 2, []uint32{0, 2}, rand.Reader); return err },
		"duplicate x":  func() error { _, err := splitSecret(s, 2, []uint32{2, 2}, rand.Reader); return err },
		"interp dup":   func() error { _, err := newInterpolator([]uint32{1, 1}); return err },
		"share ≥ P": func() error {
			in, _ := newInterpolator([]uint32{1, 2})
			big := bytes.Repeat([]byte{0xff}, ShareLen)
			_, err := in.reconstruct([][]byte{big, big})
			return err
		},
		"short share": func() error {
			in, _ := newInterpolator([]uint32{1, 2})
			_, err := in.reconstruct([][]byte{{1}, {2}})
			return err
		},
	} {
		if err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
