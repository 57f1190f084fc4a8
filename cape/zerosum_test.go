package cape

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/secagg"
)

func session(t testing.TB) []byte {
	t.Helper()
	s := make([]byte, 32)
	if _, err := rand.Read(s); err != nil {
		t.Fatal(err)
	}
	return s
}

func seededSources(sites []uint32, seed uint64) map[uint32]noise.Source {
	m := map[uint32]noise.Source{}
	for _, s := range sites {
		m[s] = noise.NewInsecureSeeded(seed*1000 + uint64(s))
	}
	return m
}

// drawAndAggregate draws every site's ê_s and runs the secure aggregation in
// process with the sites' single-use inputs. It also returns a copy of each
// ê_s in fixed point (which the protocol never reveals) for the checks.
func drawAndAggregate(t testing.TB, p ZeroSumParams, srcs map[uint32]noise.Source, opt secagg.RunOptions) (map[uint32]*ZeroSumSite, map[uint32][]int64, *secagg.Result) {
	t.Helper()
	cfg, err := SecAggConfig(p, session(t))
	if err != nil {
		t.Fatal(err)
	}
	zs := map[uint32]*ZeroSumSite{}
	ehat := map[uint32][]int64{}
	inputs := map[uint32]*secagg.Input{}
	for _, s := range p.Sites {
		z, err := NewZeroSumSite(p, s, srcs[s])
		if err != nil {
			t.Fatal(err)
		}
		zs[s], ehat[s], inputs[s] = z, slices.Clone(z.ehat), z.input
	}
	res, err := secagg.Run(context.Background(), cfg, inputs, opt)
	if err != nil {
		t.Fatal(err)
	}
	return zs, ehat, res
}

func TestZeroSumIsExactlyZero(t *testing.T) {
	for _, tc := range []struct {
		sites []uint32
		tau   float64
		L     int
	}{
		{[]uint32{1, 2}, 1, 10},
		{[]uint32{4, 9, 11}, 0.01, 50},
		{[]uint32{1, 2, 3, 4, 5, 6, 7}, 3.5e4, 40},
		{[]uint32{10, 20, 30, 40, 50}, 1e12, 5}, // grid > 1: FracBits = 0
	} {
		p := ZeroSumParams{Sites: tc.sites, Tau: tc.tau, Len: tc.L}
		shares, err := SimulateZeroSum(context.Background(), p, session(t), seededSources(tc.sites, 1), secagg.RunOptions{})
		if err != nil {
			t.Fatalf("%+v: %v", tc, err)
		}
		for _, s := range tc.sites {
			if shares[s].Secure || !strings.Contains(shares[s].Source, "INSECURE") {
				t.Fatalf("site %d: seeded source reported as %v %q", s, shares[s].Secure, shares[s].Source)
			}
		}
		for j := 0; j < tc.L; j++ {
			var sum int64
			nonzero := false
			for _, s := range tc.sites {
				sum += shares[s].Fixed[j]
				nonzero = nonzero || shares[s].Fixed[j] != 0
			}
			if sum != 0 || !nonzero {
				t.Fatalf("τ=%g coordinate %d: Σ e_s = %d (nonzero terms: %v)", tc.tau, j, sum, nonzero)
			}
		}
	}
}

// Independent computation of e_s from the sites' ê_s (read from the sites,
// which the protocol never reveals) with exact rationals: e_s differs from
// ê_s − mean by less than one grid unit.
func TestZeroSumMatchesDefinition(t *testing.T) {
	sites := []uint32{2, 3, 5, 8}
	p := ZeroSumParams{Sites: sites, Tau: 2, Len: 64}
	zs, ehat, res := drawAndAggregate(t, p, seededSources(sites, 7), secagg.RunOptions{})
	shares := map[uint32]*ZeroSumShare{}
	for _, s := range sites {
		sh, err := zs[s].Finish(res.Sum, res.Included)
		if err != nil {
			t.Fatal(err)
		}
		shares[s] = sh
	}
	for j := 0; j < p.Len; j++ {
		var Q int64
		for _, s := range sites {
			Q += ehat[s][j]
		}
		for _, s := range sites {
			sh := shares[s]
			// |e·S − (ê·S − Q)| < S  ⇔  |e − (ê − Q/S)| < 1 grid unit.
			d := sh.Fixed[j]*int64(len(sites)) - (ehat[s][j]*int64(len(sites)) - Q)
			if d <= -int64(len(sites)) || d >= int64(len(sites)) {
				t.Fatalf("site %d coordinate %d: e = %d, ê = %d, Q = %d", s, j, sh.Fixed[j], ehat[s][j], Q)
			}
		}
	}
}

// Variance scaling (seed Section 5.2): Var(e_s) = (1 − 1/S)τ² and
// Cov(e_s, e_t) = −τ²/S. With L independent coordinates the sample
// variance has standard error ≈ σ²√(2/L) and the sample covariance
// ≈ √((1−1/S)²+1/S²)·τ²/√L. Each check allows 5 standard errors (two-sided
// false-alarm 5.7e-7 per check, < 2e-5 for all checks together); the
// seeds are fixed, so the test is deterministic.
func TestZeroSumVarianceScaling(t *testing.T) {
	L := 20000
	if testing.Short() {
		L = 6000
	}
	long := os.Getenv("DPLEARN_LONG_TESTS") == "1" // fresh randomness
	for _, S := range []int{3, 6} {
		sites := make([]uint32, S)
		for i := range sites {
			sites[i] = uint32(i + 1)
		}
		tau := 1.7
		p := ZeroSumParams{Sites: sites, Tau: tau, Len: L}
		{
			srcs := seededSources(sites, 11)
			if long {
				for _, s := range sites {
					srcs[s] = noise.NewSecure()
				}
			}
			shares, err := SimulateZeroSum(context.Background(), p, session(t), srcs, secagg.RunOptions{})
			if err != nil {
				t.Fatal(err)
			}
			wantVar := (1 - 1/float64(S)) * tau * tau
			wantCov := -tau * tau / float64(S)
			seVar := wantVar * math.Sqrt(2/float64(L))
			seCov := math.Sqrt(wantVar*wantVar+wantCov*wantCov) / math.Sqrt(float64(L))
			for a, s := range sites {
				v := shares[s].Values
				var ss float64
				for _, x := range v {
					ss += x * x
				}
				if got := ss / float64(L); math.Abs(got-wantVar) > 5*seVar {
					t.Errorf("S=%d site %d: Var(e) = %.4f, want %.4f ± %.4f", S, s, got, wantVar, 5*seVar)
				}
				if a+1 < S {
					w := shares[sites[a+1]].Values
					var c float64
					for j := range v {
						c += v[j] * w[j]
					}
					if got := c / float64(L); math.Abs(got-wantCov) > 5*seCov {
						t.Errorf("S=%d sites %d,%d: Cov = %.4f, want %.4f ± %.4f", S, s, sites[a+1], got, wantCov, 5*seCov)
					}
				}
			}
		}
	}
}

// A site that drops at any round makes the zero-sum round fail: the
// configuration requires all S sites, so the secure aggregation aborts and
// names the round and the site.
func TestZeroSumDropoutAborts(t *testing.T) {
	sites := []uint32{1, 2, 3, 4, 5}
	p := ZeroSumParams{Sites: sites, Tau: 1, Len: 8}
	for _, r := range []secagg.Round{secagg.RoundAdvertiseKeys, secagg.RoundShareKeys, secagg.RoundMaskedInput, secagg.RoundUnmasking} {
		_, err := SimulateZeroSum(context.Background(), p, session(t), seededSources(sites, 3),
			secagg.RunOptions{Drop: map[uint32]secagg.Round{4: r}})
		var ab *secagg.AbortError
		if !errors.As(err, &ab) || ab.Round != r || !slices.Equal(ab.Missing, []uint32{4}) {
			t.Fatalf("drop at %s: got %v, want abort in that round naming site 4", r, err)
		}
	}
}

// Even if an aggregator ignored MinSurvivors, a site refuses to compute its
// share from a sum that does not include every site, and the aggregator's
// pre-publication check refuses releases from a different set of sites.
func TestNoiseDoesNotCancelIsDetected(t *testing.T) {
	sites := []uint32{1, 2, 3, 4}
	p := ZeroSumParams{Sites: sites, Tau: 1, Len: 4}
	zs, _, res := drawAndAggregate(t, p, seededSources(sites, 1), secagg.RunOptions{})
	z := zs[2]
	sum := make([]uint64, 4)
	if _, err := z.Finish(sum, []uint32{1, 2, 3}); !errors.Is(err, ErrNoiseDoesNotCancel) {
		t.Fatalf("sum over 3 of 4 sites: got %v", err)
	}
	if _, err := z.Finish(sum, []uint32{1, 2, 3, 4, 5}); !errors.Is(err, ErrNoiseDoesNotCancel) {
		t.Fatalf("sum with an unknown site: got %v", err)
	}
	if _, err := z.Finish(sum[:3], sites); err == nil {
		t.Fatal("short sum accepted")
	}
	if _, err := z.Finish([]uint64{1 << 62, 0, 0, 0}, sites); err == nil {
		t.Fatal("sum outside the admissible range accepted")
	}
	// The refusals released nothing; the true sum is accepted once.
	if _, err := z.Finish(res.Sum, res.Included); err != nil {
		t.Fatal(err)
	}
	if _, err := z.Finish(res.Sum, res.Included); !errors.Is(err, ErrNoiseSpent) {
		t.Fatalf("second Finish: got %v, want ErrNoiseSpent", err)
	}
	for _, tc := range []struct {
		name                  string
		included, contributed []uint32
		ok                    bool
	}{
		{"all", sites, []uint32{4, 3, 2, 1}, true},
		{"site 3 dropped after the sum", sites, []uint32{1, 2, 4}, false},
		{"site 3 not in the sum", []uint32{1, 2, 4}, []uint32{1, 2, 4}, false},
		{"extra release", sites, []uint32{1, 2, 3, 4, 9}, false},
	} {
		err := CheckContributors(p, tc.included, tc.contributed)
		if tc.ok != (err == nil) || (!tc.ok && !errors.Is(err, ErrNoiseDoesNotCancel)) {
			t.Errorf("%s: got %v", tc.name, err)
		}
	}
}

// The aggregator's view is the masked vectors, the survivor sets and Σ ê:
// the masked inputs are statistically independent of the ê_s (their bits
// are balanced and they match no ê_s word), and nothing else of a site's
// noise reaches the aggregator.
func TestAggregatorViewIsOnlyMaskedVectorsAndSum(t *testing.T) {
	sites := []uint32{1, 2, 3, 4, 5}
	p := ZeroSumParams{Sites: sites, Tau: 1, Len: 512}
	var view []secagg.Message
	_, ehat, res := drawAndAggregate(t, p, seededSources(sites, 5), secagg.RunOptions{Observe: func(m secagg.Message) { view = append(view, m) }})
	inputs := map[uint32][]uint64{}
	want := make([]uint64, p.Len)
	for _, s := range sites {
		inputs[s] = make([]uint64, p.Len)
		for j, e := range ehat[s] {
			inputs[s][j] = uint64(e)
			want[j] += uint64(e)
		}
	}
	if !slices.Equal(res.Sum, want) {
		t.Fatal("aggregated sum is not Σ ê")
	}
	counts := map[string]int{}
	ones, bits := 0, 0
	for _, m := range view {
		counts[fmt.Sprintf("%T", m)]++
		mi, ok := m.(*secagg.MaskedInput)
		if !ok {
			continue
		}
		for j, w := range mi.Masked {
			if w == inputs[mi.From][j] {
				t.Fatalf("masked input of site %d reveals coordinate %d", mi.From, j)
			}
			for k := 0; k < 64; k++ {
				ones += int(w>>k) & 1
			}
			bits += 64
		}
	}
	// ê is small, so its encoding has long runs of 0 or 1 high bits; the
	// masked words must have balanced bits: 163,840 bits, sd 202; 6 sd
	// (false alarm 2e-9).
	if d := ones - bits/2; d > 6*202 || d < -6*202 {
		t.Fatalf("masked inputs: %d ones of %d bits", ones, bits)
	}
	wantCounts := map[string]int{
		"*secagg.AdvertiseKeys": 5, "*secagg.KeyRoster": 5, "*secagg.ShareKeys": 5, "*secagg.ShareRelay": 5,
		"*secagg.MaskedInput": 5, "*secagg.UnmaskRequest": 5, "*secagg.UnmaskResponse": 5,
	}
	if fmt.Sprint(counts) != fmt.Sprint(wantCounts) {
		t.Fatalf("server's view: %v, want %v", counts, wantCounts)
	}
}

func TestZeroSumParamsValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    ZeroSumParams
	}{
		{"one site", ZeroSumParams{Sites: []uint32{1}, Tau: 1, Len: 1}},
		{"repeated site", ZeroSumParams{Sites: []uint32{1, 1}, Tau: 1, Len: 1}},
		{"site 0", ZeroSumParams{Sites: []uint32{0, 1}, Tau: 1, Len: 1}},
		{"τ = 0", ZeroSumParams{Sites: []uint32{1, 2}, Tau: 0, Len: 1}},
		{"τ NaN", ZeroSumParams{Sites: []uint32{1, 2}, Tau: math.NaN(), Len: 1}},
		{"τ Inf", ZeroSumParams{Sites: []uint32{1, 2}, Tau: math.Inf(1), Len: 1}},
		{"τ huge", ZeroSumParams{Sites: []uint32{1, 2}, Tau: 1e300, Len: 1}},
		{"τ tiny", ZeroSumParams{Sites: []uint32{1, 2}, Tau: 1e-30, Len: 1}},
		{"L = 0", ZeroSumParams{Sites: []uint32{1, 2}, Tau: 1, Len: 0}},
	} {
		if err := tc.p.Validate(); err == nil {
			t.Errorf("%s: no error", tc.name)
		}
	}
	if _, err := NewZeroSumSite(ZeroSumParams{Sites: []uint32{1, 2}, Tau: 1, Len: 1}, 3, noise.NewSecure()); err == nil {
		t.Error("unknown site accepted")
	}
	if _, err := NewZeroSumSite(ZeroSumParams{Sites: []uint32{1, 2}, Tau: 1, Len: 1}, 1, nil); err == nil {
		t.Error("nil source accepted")
	}
}

func ExampleSimulateZeroSum() {
	sites := []uint32{1, 2, 3}
	params := ZeroSumParams{Sites: sites, Tau: 0.5, Len: 4}
	srcs := map[uint32]noise.Source{}
	for _, s := range sites {
		srcs[s] = noise.NewSecure()
	}
	sess := make([]byte, 32)
	rand.Read(sess)
	shares, err := SimulateZeroSum(context.Background(), params, sess, srcs, secagg.RunOptions{})
	if err != nil {
		panic(err)
	}
	zero := true
	for j := range params.Len {
		var s int64
		for _, id := range sites {
			s += shares[id].Fixed[j]
		}
		zero = zero && s == 0
	}
	fmt.Println("noise sums to zero:", zero)
	// Output: noise sums to zero: true
}

func ExampleCheckContributors() {
	params := ZeroSumParams{Sites: []uint32{1, 2, 3}, Tau: 1, Len: 10}
	included := []uint32{1, 2, 3} // secagg.Result.Included of the zero-sum round
	// Site 2's perturbed release never arrived: its e_2 is missing from the
	// total, so the noise does not cancel and nothing may be published.
	err := CheckContributors(params, included, []uint32{1, 3})
	fmt.Println(errors.Is(err, ErrNoiseDoesNotCancel))
	// Output: true
}
