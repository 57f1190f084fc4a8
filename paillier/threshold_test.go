package paillier

import (
	"errors"
	"fmt"
	"math/big"
	"os"
	"strings"
	"testing"
)

func mustDeal(t testing.TB, modBits, parties, threshold int) (*ThresholdPublicKey, []*KeyShare) {
	t.Helper()
	p, q := testPrimePair(modBits)
	tpk, shares, err := dealThreshold(testRand(t, uint64(modBits*1000+parties*10+threshold)), p, q, parties, threshold, minTestModulusBits)
	if err != nil {
		t.Fatal(err)
	}
	return tpk, shares
}

// subsets calls f with every k-subset of {1..n} (ascending).
func subsets(n, k int, f func([]int)) {
	var rec func(start int, cur []int)
	rec = func(start int, cur []int) {
		if len(cur) == k {
			f(append([]int(nil), cur...))
			return
		}
		for i := start; i <= n; i++ {
			rec(i+1, append(cur, i))
		}
	}
	rec(1, nil)
}

// TestThresholdEveryTSubsetDecrypts: for (N, t) in a few shapes, every
// t-subset of partial decryptions recovers the plaintext, shares verify
// against their verification keys, and partial decryptions verify.
func TestThresholdEveryTSubsetDecrypts(t *testing.T) {
	shapes := [][2]int{{1, 1}, {3, 2}, {5, 3}, {4, 4}, {6, 2}}
	for _, shape := range shapes {
		N, T := shape[0], shape[1]
		t.Run(fmt.Sprintf("N%d_t%d", N, T), func(t *testing.T) {
			tpk, shares := mustDeal(t, 512, N, T)
			for _, s := range shares {
				if err := s.Verify(); err != nil {
					t.Fatal(err)
				}
			}
			rng := testRand(t, 7)
			m := big.NewInt(123456789)
			ct, err := tpk.Encrypt(rng, m)
			if err != nil {
				t.Fatal(err)
			}
			parts := make([]*PartialDecryption, N)
			for i, s := range shares {
				if parts[i], err = s.Decrypt(rng, ct); err != nil {
					t.Fatal(err)
				}
				if err := tpk.VerifyPartial(ct, parts[i]); err != nil {
					t.Fatal(err)
				}
			}
			count := 0
			subsets(N, T, func(set []int) {
				count++
				var sub []*PartialDecryption
				for _, i := range set {
					sub = append(sub, parts[i-1])
				}
				res, err := tpk.Combine(ct, sub)
				if err != nil {
					t.Fatalf("subset %v: %v", set, err)
				}
				if res.Plaintext.Cmp(m) != 0 {
					t.Fatalf("subset %v: decrypted %v, want %v", set, res.Plaintext, m)
				}
				if fmt.Sprint(res.Used) != fmt.Sprint(set) || len(res.Rejected) != 0 {
					t.Fatalf("subset %v: used %v, rejected %v", set, res.Used, res.Rejected)
				}
			})
			if want := binomial(N, T); count != want {
				t.Fatalf("visited %d subsets, want %d", count, want)
			}
		})
	}
}

func binomial(n, k int) int {
	return int(new(big.Int).Binomial(int64(n), int64(k)).Int64())
}

// TestThresholdTooFewShares: t-1 shares are refused by Combine, and forcing
// the interpolation over t-1 shares does not yield the plaintext.
func TestThresholdTooFewShares(t *testing.T) {
	tpk, shares := mustDeal(t, 512, 5, 3)
	rng := testRand(t, 8)
	m := big.NewInt(42)
	ct, _ := tpk.Encrypt(rng, m)
	subsets(5, 2, func(set []int) {
		var sub []*PartialDecryption
		var cs []*big.Int
		for _, i := range set {
			pd, err := shares[i-1].Decrypt(rng, ct)
			if err != nil {
				t.Fatal(err)
			}
			sub = append(sub, pd)
			cs = append(cs, pd.ci)
		}
		_, err := tpk.Combine(ct, sub)
		if !errors.Is(err, ErrTooFewShares) {
			t.Fatalf("subset %v: Combine error %v, want ErrTooFewShares", set, err)
		}
		if got, err := tpk.interpolate(set, cs); err == nil && got.Cmp(m) == 0 {
			t.Fatalf("subset %v of t-1 shares interpolated to the plaintext", set)
		}
	})
}

// TestThresholdForgedPartialDetected: forged partial decryptions (shifted
// by a plaintext, computed with another party's share, made for another
// ciphertext, or with a tampered proof) are rejected, and Combine still
// succeeds from the honest ones.
func TestThresholdForgedPartialDetected(t *testing.T) {
	tpk, shares := mustDeal(t, 512, 5, 3)
	rng := testRand(t, 9)
	m := big.NewInt(31337)
	ct, _ := tpk.Encrypt(rng, m)
	other, _ := tpk.Encrypt(rng, big.NewInt(1))
	honest := make([]*PartialDecryption, 5)
	for i, s := range shares {
		honest[i], _ = s.Decrypt(rng, ct)
	}
	shift := func(pd *PartialDecryption) *PartialDecryption {
		// c_i * (1+n): what a cheater would send to add to the plaintext.
		ci := new(big.Int).Mul(pd.ci, new(big.Int).Add(tpk.n, bigOne))
		return &PartialDecryption{index: pd.index, ci: ci.Mod(ci, tpk.nSquared), proof: pd.proof}
	}
	wrongShare := func() *PartialDecryption {
		// party 2 claims a partial decryption made with party 3's share.
		pd, _ := shares[2].Decrypt(rng, ct)
		pd.index = 2
		return pd
	}
	wrongCT := func() *PartialDecryption {
		pd, _ := shares[1].Decrypt(rng, other)
		return pd
	}
	tamperZ := func() *PartialDecryption {
		pd := *honest[1]
		pd.proof = &Proof{a: pd.proof.a, b: pd.proof.b, z: new(big.Int).Add(pd.proof.z, bigOne)}
		return &pd
	}
	tamperA := func() *PartialDecryption {
		pd := *honest[1]
		a := new(big.Int).Mul(pd.proof.a, pd.proof.a)
		pd.proof = &Proof{a: a.Mod(a, tpk.nSquared), b: pd.proof.b, z: pd.proof.z}
		return &pd
	}
	negA := func() *PartialDecryption { // an order-2 factor on the commitment
		pd := *honest[1]
		pd.proof = &Proof{a: new(big.Int).Sub(tpk.nSquared, pd.proof.a), b: pd.proof.b, z: pd.proof.z}
		return &pd
	}
	zeroCi := &PartialDecryption{index: 2, ci: big.NewInt(0), proof: honest[1].proof}
	forgeries := map[string]*PartialDecryption{
		"shifted plaintext":   shift(honest[1]),
		"other party share":   wrongShare(),
		"other ciphertext":    wrongCT(),
		"tampered response":   tamperZ(),
		"tampered commitment": tamperA(),
		"negated commitment":  negA(),
		"zero c_i":            zeroCi,
	}
	for name, forged := range forgeries {
		t.Run(name, func(t *testing.T) {
			if err := tpk.VerifyPartial(ct, forged); err == nil {
				t.Fatal("forged partial decryption verified")
			}
			// Forged share of party 2 among parties 1..4: Combine must
			// skip it and use 1, 3, 4.
			parts := []*PartialDecryption{honest[0], forged, honest[2], nil, honest[3]}
			res, err := tpk.Combine(ct, parts)
			if err != nil {
				t.Fatal(err)
			}
			if res.Plaintext.Cmp(m) != 0 {
				t.Fatalf("decrypted %v, want %v", res.Plaintext, m)
			}
			if fmt.Sprint(res.Used) != "[1 3 4]" {
				t.Fatalf("used %v, want [1 3 4]", res.Used)
			}
			if len(res.Rejected) != 2 || res.Rejected[1].Index != 2 {
				t.Fatalf("rejected %+v, want the nil entry and party 2", res.Rejected)
			}
			// Without a spare honest share, Combine fails loudly.
			_, err = tpk.Combine(ct, []*PartialDecryption{honest[0], forged, honest[2]})
			if !errors.Is(err, ErrTooFewShares) || !strings.Contains(err.Error(), "party 2") {
				t.Fatalf("error %v, want ErrTooFewShares naming party 2", err)
			}
		})
	}
	dup, err := tpk.Combine(ct, []*PartialDecryption{honest[0], honest[0], honest[1]})
	if !errors.Is(err, ErrTooFewShares) || len(dup.Rejected) != 1 {
		t.Fatalf("duplicate shares counted twice: %v %+v", err, dup)
	}
}

// TestThresholdHomomorphicTally: parties encrypt values, the aggregator
// multiplies, t parties decrypt only the sum.
func TestThresholdHomomorphicTally(t *testing.T) {
	tpk, shares := mustDeal(t, 512, 4, 3)
	rng := testRand(t, 10)
	want := new(big.Int)
	var cts []*Ciphertext
	for i := 1; i <= 20; i++ {
		x := big.NewInt(int64(i * i))
		want.Add(want, x)
		ct, err := tpk.Encrypt(rng, x)
		if err != nil {
			t.Fatal(err)
		}
		cts = append(cts, ct)
	}
	sum, err := tpk.Sum(cts...)
	if err != nil {
		t.Fatal(err)
	}
	var parts []*PartialDecryption
	for _, s := range shares[1:] {
		pd, err := s.Decrypt(rng, sum)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, pd)
	}
	res, err := tpk.Combine(sum, parts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Plaintext.Cmp(want) != 0 {
		t.Fatalf("tally %v, want %v", res.Plaintext, want)
	}
}

// TestProofRandomnessLength: B exceeds the bit length of every e Delta s_i
// by at least StatisticalSecurityBits, for the maximal challenge, and honest
// responses stay within the verifier's bound.
func TestProofRandomnessLength(t *testing.T) {
	for _, shape := range [][2]int{{3, 2}, {12, 5}} {
		tpk, shares := mustDeal(t, 512, shape[0], shape[1])
		B := tpk.proofRandomBits()
		eMax := new(big.Int).Sub(new(big.Int).Lsh(bigOne, ChallengeBits), bigOne)
		for _, s := range shares {
			x := new(big.Int).Mul(tpk.delta, s.s)
			x.Mul(x, eMax)
			if B < x.BitLen()+StatisticalSecurityBits {
				t.Fatalf("B = %d but e Delta s_%d has %d bits", B, s.index, x.BitLen())
			}
		}
		// Worst case over all possible shares: s < n m < n^2.
		worst := new(big.Int).Mul(eMax, tpk.delta)
		worst.Mul(worst, tpk.nSquared)
		if B < worst.BitLen()+StatisticalSecurityBits {
			t.Fatalf("B = %d too short for the worst case of %d bits", B, worst.BitLen())
		}
		ct, _ := tpk.Encrypt(testRand(t, 11), big.NewInt(5))
		pd, _ := shares[0].Decrypt(testRand(t, 12), ct)
		if pd.proof.z.BitLen() > B+1 {
			t.Fatalf("response has %d bits, bound %d", pd.proof.z.BitLen(), B+1)
		}
	}
}

func TestDealRejectsBadParameters(t *testing.T) {
	p, q := testPrimePair(512)
	// A prime that is not safe: the next prime after p that is not safe.
	notSafe := new(big.Int).Add(p, big.NewInt(2))
	for !notSafe.ProbablyPrime(20) || CheckSafePrime(notSafe) == nil {
		notSafe.Add(notSafe, big.NewInt(2))
	}
	p2, _ := testPrimePair(1024)
	rng := testRand(t, 13)
	tests := []struct {
		name     string
		p, q     *big.Int
		N, T     int
		minBits  int
		contains string
	}{
		{"not safe", notSafe, q, 3, 2, 16, "not safe"},
		{"p = q", p, p, 3, 2, 16, "p = q"},
		{"unequal lengths", p, p2, 3, 2, 16, "equal lengths"},
		{"t > N", p, q, 3, 4, 16, "want 1 <= t <= N"},
		{"t = 0", p, q, 3, 0, 16, "want 1 <= t <= N"},
		{"N too large", p, q, MaxParties + 1, 2, 16, "want 1 <= t <= N"},
		{"below 2048 bits", p, q, 3, 2, MinModulusBits, "want 2048"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := dealThreshold(rng, tc.p, tc.q, tc.N, tc.T, tc.minBits)
			if err == nil || !strings.Contains(err.Error(), tc.contains) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.contains)
			}
		})
	}
	// Public API enforces the 2048-bit floor.
	if _, _, err := DealThreshold(rng, p, q, 3, 2); err == nil {
		t.Fatal("DealThreshold accepted a 512-bit modulus")
	}
}

func TestKeyShareVerifyDetectsTampering(t *testing.T) {
	_, shares := mustDeal(t, 512, 3, 2)
	bad := *shares[0]
	bad.s = new(big.Int).Add(bad.s, bigOne)
	if err := bad.Verify(); err == nil {
		t.Fatal("tampered share verified")
	}
}

// TestThreshold2048 is the full-size round trip (2 of 3 at 2048 bits).
func TestThreshold2048(t *testing.T) {
	if testing.Short() {
		t.Skip("2048-bit threshold round trip skipped in -short")
	}
	p, q := testPrimePair(2048)
	tpk, shares, err := DealThreshold(testRand(t, 2048), p, q, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	rng := testRand(t, 14)
	m := big.NewInt(1 << 40)
	ct, _ := tpk.Encrypt(rng, m)
	var parts []*PartialDecryption
	for _, s := range []*KeyShare{shares[2], shares[0]} {
		pd, err := s.Decrypt(rng, ct)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, pd)
	}
	res, err := tpk.Combine(ct, parts)
	if err != nil {
		t.Fatal(err)
	}
	if res.Plaintext.Cmp(m) != 0 {
		t.Fatalf("decrypted %v, want %v", res.Plaintext, m)
	}
}

// TestThresholdForgedCopyBeforeHonest: a forged entry claiming an honest
// party's index does not shadow that party's real partial decryption.
func TestThresholdForgedCopyBeforeHonest(t *testing.T) {
	tpk, shares := mustDeal(t, 512, 3, 3)
	rng := testRand(t, 15)
	ct, _ := tpk.Encrypt(rng, big.NewInt(8))
	var parts []*PartialDecryption
	for _, s := range shares {
		pd, _ := s.Decrypt(rng, ct)
		parts = append(parts, pd)
	}
	forged := &PartialDecryption{pub: tpk, index: 2, ci: big.NewInt(4), proof: parts[1].proof}
	res, err := tpk.Combine(ct, []*PartialDecryption{forged, parts[0], parts[1], parts[2]})
	if err != nil || res.Plaintext.Int64() != 8 {
		t.Fatalf("combine: %v, %+v", err, res)
	}
	if len(res.Rejected) != 1 || res.Rejected[0].Index != 2 {
		t.Fatalf("rejected %+v, want only the forged copy of party 2", res.Rejected)
	}
}

// TestThresholdDPPPScale runs the DPPP shape end to end: N = 250 teachers,
// t = 167 (two thirds), packed 10-class vote vectors, Delta = 250!.
func TestThresholdDPPPScale(t *testing.T) {
	if testing.Short() {
		t.Skip("250-party threshold run skipped in -short")
	}
	const N, T, classes = 250, 167, 10
	// A 256-bit test modulus keeps this fast; the arithmetic is the same.
	tpk, shares := mustDeal(t, 256, N, T)
	pp, err := NewPacking(tpk.Public(), classes, 0, 1, N)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := NewEncryptor(tpk.Public(), testRand(t, 16))
	if err != nil {
		t.Fatal(err)
	}
	want := make([]int64, classes)
	var cts []*Ciphertext
	for i := 0; i < N; i++ {
		v := make([]int64, classes)
		v[(i*i)%classes] = 1
		want[(i*i)%classes]++
		m, _ := pp.Encode(v)
		ct, err := enc.Encrypt(m)
		if err != nil {
			t.Fatal(err)
		}
		cts = append(cts, ct)
	}
	sum, _ := tpk.Sum(cts...)
	rng := testRand(t, 17)
	var parts []*PartialDecryption
	for _, s := range shares[N-T-5:] { // the last T+5 teachers answer
		pd, err := s.Decrypt(rng, sum)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, pd)
	}
	res, err := tpk.Combine(sum, parts)
	if err != nil {
		t.Fatal(err)
	}
	got, err := pp.Decode(res.Plaintext, N)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("histogram %v, want %v", got, want)
	}
}

// TestSecretsAreNotPrinted: formatting a share or private key with the
// usual verbs never prints the secret.
func TestSecretsAreNotPrinted(t *testing.T) {
	_, shares := mustDeal(t, 512, 3, 2)
	sk := mustTestKey(t, 512)
	secrets := []struct {
		secret *big.Int
		obj    any
	}{{shares[0].s, shares[0]}, {sk.p, sk}}
	for _, c := range secrets {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
			out := fmt.Sprintf(verb, c.obj)
			if strings.Contains(out, c.secret.String()) || strings.Contains(out, c.secret.Text(16)) {
				t.Fatalf("%s printed the secret: %s", verb, out)
			}
			if !strings.Contains(out, "redacted") {
				t.Fatalf("%s: %s", verb, out)
			}
		}
	}
}

// TestLagrangeDelta: known values for N = 3 (Delta = 6), S = {1, 2, 3}:
// mu = (18, -18, 6); and for random subsets of {1..12}, sum_i mu_i i^k equals
// Delta for k = 0 and 0 for 0 < k < |S| (exact interpolation of monomials).
func TestLagrangeDelta(t *testing.T) {
	delta := factorial(3)
	for i, want := range []int64{18, -18, 6} {
		mu, err := lagrangeDelta(delta, []int{1, 2, 3}, i+1)
		if err != nil || mu.Int64() != want {
			t.Fatalf("mu_%d = %v (%v), want %d", i+1, mu, err, want)
		}
	}
	const N = 12
	delta = factorial(N)
	for _, set := range [][]int{{1}, {5, 9}, {1, 2, 3, 4}, {2, 3, 5, 7, 11}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}} {
		for k := 0; k < len(set); k++ {
			sum := new(big.Int)
			for _, i := range set {
				mu, err := lagrangeDelta(delta, set, i)
				if err != nil {
					t.Fatal(err)
				}
				pow := new(big.Int).Exp(big.NewInt(int64(i)), big.NewInt(int64(k)), nil)
				sum.Add(sum, pow.Mul(pow, mu))
			}
			want := new(big.Int)
			if k == 0 {
				want.Set(delta)
			}
			if sum.Cmp(want) != 0 {
				t.Fatalf("set %v, x^%d: sum mu_i i^k = %v, want %v", set, k, sum, want)
			}
		}
	}
}

func TestGenerateThresholdKey(t *testing.T) {
	for _, c := range [][3]int{{1024, 3, 2}, {2048, 3, 4}, {2048, 0, 1}} {
		if _, _, err := GenerateThresholdKey(t.Context(), testRand(t, 40), c[0], c[1], c[2]); err == nil {
			t.Fatalf("GenerateThresholdKey%v succeeded", c)
		}
	}
	if os.Getenv("DPLEARN_LONG_TESTS") != "1" {
		t.Skip("set DPLEARN_LONG_TESTS=1 to generate a 2048-bit threshold key")
	}
	tpk, shares, err := GenerateThresholdKey(t.Context(), testRand(t, 41), 2048, 3, 2)
	if err != nil {
		t.Fatal(err)
	}
	ct, _ := tpk.Encrypt(testRand(t, 42), big.NewInt(3))
	a, _ := shares[0].Decrypt(testRand(t, 43), ct)
	b, _ := shares[2].Decrypt(testRand(t, 44), ct)
	res, err := tpk.Combine(ct, []*PartialDecryption{a, b})
	if err != nil || res.Plaintext.Int64() != 3 {
		t.Fatalf("%v %v", res, err)
	}
}

// TestNegatedPartial: -c_i satisfies the proof's equations (which speak
// about c_i^2) but not its hash, which binds c_i itself, so it is rejected;
// and the even exponent of the interpolation would make the sign harmless.
func TestNegatedPartial(t *testing.T) {
	tpk, shares := mustDeal(t, 512, 3, 2)
	rng := testRand(t, 60)
	ct, _ := tpk.Encrypt(rng, big.NewInt(777))
	a, _ := shares[0].Decrypt(rng, ct)
	b, _ := shares[1].Decrypt(rng, ct)
	neg := *b
	neg.ci = new(big.Int).Sub(tpk.nSquared, b.ci)
	if err := tpk.VerifyPartial(ct, &neg); err == nil {
		t.Fatal("negated partial decryption accepted")
	}
	m, err := tpk.interpolate([]int{1, 2}, []*big.Int{a.ci, neg.ci})
	if err != nil || m.Int64() != 777 {
		t.Fatalf("interpolation with -c_2: %v %v", m, err)
	}
}
