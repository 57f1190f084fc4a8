package capefm

// Attacks of issue 22 (items 5 and 6), written as the coalition against the
// transport-free state machines, and the exact privacy of every party's
// view recomputed from the implemented noise. The attack tests use only API
// that already existed at the starting commit (42fe189), so that
// they can be run there: both succeed there (the printed guarantee is
// false), and fail here (refused, or the printed guarantee is true).

import (
	"context"
	"errors"
	"math"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/dplearn/dplearn/regress"
	"gonum.org/v1/gonum/mat"
	"gonum.org/v1/gonum/stat/distuv"
)

// gaussProfile is the exact δ(ε) of a Gaussian mechanism with
// sensitivity/σ = eta, written out independently of package accounting:
// δ(ε) = Φ(η/2 − ε/η) − e^ε Φ(−η/2 − ε/η).
func gaussProfile(eta, eps float64) float64 {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	return phi(eta/2-eps/eta) - math.Exp(eps)*phi(-eta/2-eps/eta)
}

// gaussEpsilon returns the smallest ε with gaussProfile(eta, ε) ≤ delta
// (bisection; δ(ε) decreases in ε).
func gaussEpsilon(eta, delta float64) float64 {
	lo, hi := 0.0, 1.0
	for gaussProfile(eta, hi) > delta {
		hi *= 2
	}
	for range 200 {
		mid := (lo + hi) / 2
		if gaussProfile(eta, mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// viewEta2 returns η² = dᵀC⁺d, the squared Mahalanobis distance between the
// two neighbouring laws of a linear-Gaussian view V = A·z (z independent
// with the given variances), shifted by d between the neighbours; it fails
// the test if d is outside the range of C (the view would then reveal the
// record exactly). It is computed numerically, from the rows of the view,
// not from any closed form.
func viewEta2(t *testing.T, rows [][]float64, variances []float64, d []float64) float64 {
	t.Helper()
	n := len(variances)
	A := mat.NewDense(len(rows), n, nil)
	for i, r := range rows {
		A.SetRow(i, r)
	}
	cz := mat.NewDiagDense(n, variances)
	var t1, C mat.Dense
	t1.Mul(A, cz)
	C.Mul(&t1, A.T())
	var svd mat.SVD
	if !svd.Factorize(&C, mat.SVDFull) {
		t.Fatal("SVD failed")
	}
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	sv := svd.Values(nil)
	inv := mat.NewDense(len(sv), len(sv), nil)
	for i, s := range sv {
		if s > 1e-12*sv[0] {
			inv.Set(i, i, 1/s)
		}
	}
	var P mat.Dense
	P.Product(&v, inv, u.T())
	dv := mat.NewVecDense(len(d), slices.Clone(d))
	var a, back mat.VecDense
	a.MulVec(&P, dv)
	back.MulVec(&C, &a)
	for i := range d {
		if math.Abs(back.AtVec(i)-d[i]) > 1e-8*(1+math.Abs(d[i])) {
			t.Fatalf("the shift is not in the range of the view's covariance")
		}
	}
	return mat.Dot(dv, &a)
}

// capeLatent indexes the latent noise of one whitened coordinate: ê_s at
// s, g_s at S + s (site s = 0..S−1), with variances τ² and τ_g², the
// implemented scales (Params.Tau, Calibration.TauG).
func capeLatent(S int, tau, tauG float64) []float64 {
	v := make([]float64, 2*S)
	for s := range S {
		v[s], v[S+s] = tau*tau, tauG*tauG
	}
	return v
}

// releaseNoiseRow is the noise of site s's release, e_s + g_s =
// ê_s − Q/S + g_s (the implementation's m_s(Q) differs from Q/S by less than
// one grid step and is a function of Q, which the view holds).
func releaseNoiseRow(S, s int) []float64 {
	r := make([]float64, 2*S)
	for j := range S {
		r[j] = -1 / float64(S)
	}
	r[s]++
	r[S+s] = 1
	return r
}

func unitRow(n, i int) []float64 { r := make([]float64, n); r[i] = 1; return r }

func qRow(S int) []float64 {
	r := make([]float64, 2*S)
	for j := range S {
		r[j] = 1
	}
	return r
}

// coalitionEta returns η for a record at a site outside the coalition of
// the aggregator with sites 0..colluders−1: the view is every site's
// release, Q, and the colluders' ê_c and g_c; the record moves the release
// of site h = colluders by sens.
func coalitionEta(t *testing.T, S, colluders int, tau, tauG, sens float64) float64 {
	t.Helper()
	var rows [][]float64
	for s := range S {
		rows = append(rows, releaseNoiseRow(S, s))
	}
	rows = append(rows, qRow(S))
	for c := range colluders {
		rows = append(rows, unitRow(2*S, c), unitRow(2*S, S+c))
	}
	d := make([]float64, len(rows))
	d[colluders] = sens
	return math.Sqrt(viewEta2(t, rows, capeLatent(S, tau, tauG), d))
}

// loneSiteEta returns η for a record at site 1 against site 0 alone: its
// view is the published model (whose noise is the sum of every release's),
// its own ê_0, g_0, and Q; the record moves the model by sens.
func loneSiteEta(t *testing.T, S int, tau, tauG, sens float64) float64 {
	t.Helper()
	model := make([]float64, 2*S)
	for s := range S {
		for j, x := range releaseNoiseRow(S, s) {
			model[j] += x
		}
	}
	rows := [][]float64{model, unitRow(2*S, 0), unitRow(2*S, S), qRow(S)}
	d := []float64{sens, 0, 0, 0}
	return math.Sqrt(viewEta2(t, rows, capeLatent(S, tau, tauG), d))
}

// trueSensitivity is the whitened L2 sensitivity of a site's release as
// implemented: the largest per-site joint sensitivity plus the grid slack
// (without the 6-digit rounding or the lattice margin of the printed Δ_h).
func trueSensitivity(cal *Calibration) float64 {
	return slices.Max(cal.SiteSens) + cal.Slack
}

// TestAttackCapeLoneSite (issue 22 item 5): with S_C = 0 (the default for
// S ≤ 3) a participating site reads the published model and subtracts its
// own local noise g_s; the remaining noise is exactly Σ_{s′≠s} g_{s′}. The
// test runs the protocol, performs the subtraction on the real release
// values (checking the identity exactly, in fixed point, and the residual's
// variance against (S − 1)τ_g² with a χ² test at false-alarm rate 1e-6),
// then computes the true ε of that view at the printed δ from the
// implemented noise: it must not exceed the printed ε. At 42fe189 it is
// 1.46 (S = 2) and 1.24 (S = 3) for a printed 1.
func TestAttackCapeLoneSite(t *testing.T) {
	const d = 6 // L = 27 coordinates per release
	for _, S := range []int{2, 3} {
		t.Run(string(rune('0'+S))+"-sites", func(t *testing.T) {
			rows := syntheticRows(regress.Linear, 300*S, d, mrand.New(mrand.NewPCG(uint64(S), 22)))
			sizes := make([]int, S)
			for i := range sizes {
				sizes[i] = 300
			}
			var sumSq float64
			var coords int
			var eps, delta, tau, tauG, sens float64
			var sc int
			for run := range 12 {
				f := newFixture(t, split(rows, d+1, sizes), d, fixtureOptions{seed: uint64(1000*S + run)})
				type parts struct{ snapped, e, g []int64 }
				got := map[uint32]parts{}
				var mu sync.Mutex // the sites release concurrently
				testHookRelease = func(site uint32, snapped, e, g []int64) {
					mu.Lock()
					defer mu.Unlock()
					got[site] = parts{slices.Clone(snapped), slices.Clone(e), slices.Clone(g)}
				}
				var releases [][]int64
				res, err := f.run(t, RunOptions{Observe: func(m Message) {
					if r, ok := m.(*Release); ok {
						releases = append(releases, slices.Clone(r.Fixed))
					}
				}})
				testHookRelease = nil
				if err != nil {
					t.Fatal(err)
				}
				cal := res.Calibration
				eps, delta, tau, tauG, sens, sc = res.Privacy.Epsilon, res.Privacy.Delta, res.Params.Tau, cal.TauG, trueSensitivity(cal), cal.Colluders
				if len(releases) != S || len(got) != S {
					t.Fatalf("%d releases, %d hooked", len(releases), len(got))
				}
				// The published model's whitened objective, exactly (the
				// aggregator's fixed-point sum; Result.Objective is it
				// scaled back by c_j).
				model := make([]int64, cal.L)
				for _, r := range releases {
					for i, v := range r {
						model[i] += v
					}
				}
				scale := math.Ldexp(1, -int(cal.FracBits))
				for i, x := range res.Objective.Lambda1 {
					if w := float64(model[i]) * scale * cal.C1; math.Abs(w-x) > 1e-9*(1+math.Abs(x)) {
						t.Fatalf("published Λ1[%d] = %v, sum of releases %v", i, x, w)
					}
				}
				// Site 1 removes its own statistic and local noise g_1.
				me := got[1]
				for i := range model {
					residual := model[i] - me.snapped[i] - me.g[i]
					var others, otherG int64
					for id, p := range got {
						if id != 1 {
							others += p.snapped[i]
							otherG += p.g[i]
						}
					}
					if residual-others != otherG {
						t.Fatalf("coordinate %d: the model minus site 1's own part is not the other sites' statistics plus Σ_{s≠1} g_s", i)
					}
					x := float64(otherG) * scale
					sumSq += x * x
					coords++
				}
			}
			// The noise the site cannot remove has variance (S − 1)τ_g².
			v := float64(S-1) * tauG * tauG
			chi := distuv.ChiSquared{K: float64(coords)}
			if q := sumSq / v; q < chi.Quantile(5e-7) || q > chi.Quantile(1-5e-7) {
				t.Errorf("residual noise: Σx²/((S−1)τ_g²) = %v over %d coordinates: not (S−1)τ_g²", q, coords)
			}
			// Its true privacy, from the implemented noise, numerically.
			eta := loneSiteEta(t, S, tau, tauG, sens)
			if direct := sens / (math.Sqrt(float64(S-1)) * tauG); math.Abs(eta-direct) > 1e-6*direct {
				t.Fatalf("lone-site η %v, direct %v", eta, direct)
			}
			trueEps := gaussEpsilon(eta, delta)
			t.Logf("S = %d, S_C = %d: printed (%g, %g)-DP per site; a site that removes its own g_s from the model: η = %.6g, ε = %.4f at δ = %g (ratio %.4f)",
				S, sc, eps, delta, eta, trueEps, delta, trueEps/eps)
			if trueEps > eps*(1+1e-9) {
				t.Errorf("lone-site attack succeeds: S = %d, S_C = %d: a site that reads the model and removes its own noise sees ε = %.4f at δ = %g for a printed ε = %g", S, sc, trueEps, delta, eps)
			}
		})
	}
}

// TestAttackCapeColludersShrink (issue 22 item 6): four sites (S_C = 1
// against one colluder, site-1, with the aggregator). The aggregator gets a
// site dropped before the zero-sum noise is fixed, so that the redo runs at
// S = 3, where the default S_C is 0. Two ways: the honest Serve after a
// real dropout ("serve-redo"), and a malicious aggregator that declares
// site-4 dropped and offers S_C = 0 to the state machines directly
// ("declared-dropped"). The attack succeeds if a redo at smaller S_C is
// accepted and the coalition's true ε (computed numerically from the
// implemented noise of the accepted attempt) exceeds the printed one; it
// fails if the sites refuse (a refusal naming "colluders S_C") or the
// printed guarantee holds against the one colluder. At 42fe189: ε = 1.24
// for a printed 1, both ways.
func TestAttackCapeColludersShrink(t *testing.T) {
	const d = 4
	rows := syntheticRows(regress.Linear, 1200, d, mrand.New(mrand.NewPCG(6, 22)))
	parts := split(rows, d+1, []int{300, 300, 300, 300})
	const colluders = 1 // site-1, with the aggregator, as planned for S = 4

	check := func(t *testing.T, p Params) {
		t.Helper()
		cal, err := p.Calibration()
		if err != nil {
			t.Fatal(err)
		}
		S := len(p.Sites)
		eta := coalitionEta(t, S, colluders, p.Tau, cal.TauG, trueSensitivity(cal))
		trueEps := gaussEpsilon(eta, cal.ComposedDelta)
		t.Logf("attempt %d: S = %d, printed S_C = %d, (%g, %g)-DP; against the aggregator with %d colluder: η = %.6g, ε = %.4f (ratio %.4f)",
			p.Attempt, S, p.Colluders, p.Epsilon, cal.ComposedDelta, colluders, eta, trueEps, trueEps/p.Epsilon)
		if trueEps > p.Epsilon*(1+1e-9) {
			t.Errorf("colluders-shrink attack succeeds: attempt %d with S = %d was run at S_C = %d; against the same %d colluder ε = %.4f for a printed %g", p.Attempt, S, p.Colluders, colluders, trueEps, p.Epsilon)
		}
	}

	t.Run("serve-redo", func(t *testing.T) {
		f := newFixture(t, parts, d, fixtureOptions{seed: 61})
		res, err := f.run(t, RunOptions{Drop: map[string]Round{"site-4": RoundMaskedInput}})
		if err != nil {
			// A refusal would stop the attack, but an honest Serve must
			// not need one: it keeps S_C, and the redo succeeds.
			t.Fatalf("the honest redo failed: %v", err)
		}
		if res.Params.Colluders < colluders {
			t.Errorf("Serve's redo at S = %d assumes S_C = %d, fewer than the first roster's %d", len(res.Params.Sites), res.Params.Colluders, colluders)
		}
		if res.Params.Attempt != 2 || len(res.Params.Sites) != 3 {
			t.Fatalf("want the model from attempt 2 with 3 sites, got attempt %d with %d", res.Params.Attempt, len(res.Params.Sites))
		}
		check(t, res.Params)
	})

	t.Run("declared-dropped", func(t *testing.T) {
		f := newFixture(t, parts, d, fixtureOptions{seed: 62})
		ctx := context.Background()
		p1 := f.template.Clone()
		p1.Colluders, p1.Attempt, p1.Session = colluders, 1, [32]byte{1}
		if err := p1.Calibrate(); err != nil {
			t.Fatal(err)
		}
		for _, s := range f.sites {
			if _, err := s.Handle(ctx, &Offer{Params: p1.Clone()}); err != nil {
				t.Fatalf("attempt 1: %v", err)
			}
		}
		// The aggregator declares site-4 dropped (nothing was released)
		// and offers a redo of three sites at S_C = 0.
		p2 := p1.Clone()
		p2.Sites, p2.Attempt, p2.Session, p2.Colluders = p1.Sites[:3], 2, [32]byte{2}, 0
		if err := p2.Calibrate(); err != nil {
			t.Fatal(err)
		}
		accepted := 0
		for _, s := range f.sites[:3] {
			ans, err := s.Handle(ctx, &Offer{Params: p2.Clone()})
			var mis *MismatchError
			switch {
			case errors.As(err, &mis) && mis.Field == "colluders S_C":
				if _, ok := ans.(*Refuse); !ok {
					t.Errorf("%s: refusal not sent back: %T", s.Name(), ans)
				}
			case err != nil:
				t.Fatalf("%s: %v", s.Name(), err)
			default:
				accepted++
			}
		}
		if accepted == 0 {
			return // every site refused the smaller S_C: the attack fails
		}
		t.Logf("%d of 3 sites accepted attempt 2 at S_C = 0", accepted)
		check(t, p2)
	})
}
