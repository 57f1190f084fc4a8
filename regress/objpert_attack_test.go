package regress

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"

	"github.com/dplearn/dplearn/audit"
	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/exampledata"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/schema"
)

// The noise-recovery attack on objective perturbation (PRIVACY-NOTES item
// 19, issue 11 item 1), aimed at the implementation.
//
// Threat model: the attacker holds the N − 1 rows that D and its neighbour
// D' share, the two candidate rows (the one in D and its replacement in
// D'), the public parameters (ε, δ, Λ, R, N) and the released model with its
// privacy report (the report's release scales are what a model file
// carries). From the released ω it reconstructs, under the hypothesis "the
// data are D", the noise vector the optimality condition implies:
//
//	logistic:         b̂ = Σ t_i σ(−t_i x_iᵀω) x_i − NΛω          (t = 2y − 1)
//	linear, interior: b̂ = 2Σ y_i x_i − 2Σ x_i x_iᵀω − NΛω
//	linear, Huber η:  b̂ = Σ ψ(y_i − x_iᵀω) x_i − NΛω,  ψ(r) = 2r/√(1 + (r/η)²)
//
// (the objective is the average (1/N)[Σℓ + bᵀω] + (Λ/2)‖ω‖² in both the
// old and the new implementation). If ω is the exact minimiser of the
// perturbed objective on D, b̂ is exactly the noise that was drawn; on D' it
// is that noise shifted by a data-dependent vector. The test statistics
// look for the lattice structure of the noise samplers:
//
//   - "norm lattice": the old noise.ObjPert draws b with ‖b‖ = a sum of
//     Laplace draws on the grid LaplaceGrid(scale, d) of the report's first
//     release, so ‖b̂‖/grid is an integer on D and uniform mod 1 on D'.
//     Accept when the distance to the nearest integer is < 0.002.
//   - "coordinate lattice": noise.AddGaussian puts each coordinate of b on
//     GaussianGrid(scale, d); accept when every coordinate of b̂/grid is
//     within 0.25 of an integer (probability 2^−d for uniform fractions).
//   - "likelihood direction": the projection of b̂ on the difference of the
//     two candidates' gradients at ω, the statistic of the Gaussian shift
//     test (accept D' when it exceeds two noise scales).
//
// Each statistic gives an event E accepted with probabilities p (on the
// numerator dataset) and q; (ε, δ)-DP implies p ≤ e^ε q + δ, so
// ln((Lo(p) − δ)/Hi(q)) with one-sided Clopper-Pearson bounds is a lower
// bound on ε. The three bounds are taken at family-wise confidence 95%
// (Bonferroni: each one-sided bound at level 0.05/6), and each must not
// exceed the printed ε.
//
// Measured on the code before the rebuild (pure ε-DP objective
// perturbation with noise.ObjPert, ε = 1, 150 releases per dataset,
// N = 2,000 rows, the "norm lattice" statistic): SmokeBan 122/150 releases
// accepted on D against 2/150 on D' (seeded source), 121/150 against 0/150
// (secure randomness), ε ≥ 2.56 and ε ≥ 3.13 at family-wise 95%; CPS1988
// 28/150 against 0/150 (seeded), ε ≥ 1.31 (the linear solver's rounding
// blurs ‖b̂‖ more often). On the rebuilt mechanism no statistic accepts more
// than a handful of releases on either dataset and every bound is 0.

// attackTable loads an embedded example dataset through the regular reader.
func attackTable(t *testing.T, name string) *dataset.Table {
	t.Helper()
	ds, err := exampledata.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := schema.Parse(ds.Schema)
	if err != nil {
		t.Fatal(err)
	}
	tab, _, err := dataset.LoadReader(context.Background(), bytes.NewReader(ds.CSV), name, s, dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return tab
}

// attackNeighbours returns D (n rows of tab chosen by a seeded permutation,
// not privacy noise) and D' (D with its last row replaced by another row of
// tab with a different target).
func attackNeighbours(tab *dataset.Table, n int) (d0, d1 []float64) {
	perm := rand.New(rand.NewPCG(19, 11)).Perm(tab.N())
	k := tab.K
	for _, p := range perm[:n] {
		d0 = append(d0, tab.Row(p)...)
	}
	d1 = append([]float64(nil), d0...)
	last := d0[(n-1)*k:]
	for _, p := range perm[n:] {
		r := tab.Row(p)
		if r[k-1] != last[k-1] {
			copy(d1[(n-1)*k:], r)
			break
		}
	}
	return d0, d1
}

// neumaier is compensated summation (the attacker's b̂ should be as exact
// as float64 allows).
type neumaier struct{ s, c float64 }

func (a *neumaier) add(x float64) {
	t := a.s + x
	if math.Abs(a.s) >= math.Abs(x) {
		a.c += (a.s - t) + x
	} else {
		a.c += (x - t) + a.s
	}
	a.s = t
}

func (a *neumaier) sum() float64 { return a.s + a.c }

// attackPsi is the attacker's own ψ(r) = 2r/√(1 + (r/η)²) of the
// pseudo-Huber loss 2η²(√(1 + (r/η)²) − 1) (η > 0).
func attackPsi(r, eta float64) float64 { return 2 * r / math.Sqrt(1+(r/eta)*(r/eta)) }

// attackRowGrad returns the gradient of one row's loss at w (sum form):
// logistic, linear with the squared loss (eta = 0) or with the
// pseudo-Huber loss of scale eta > 0.
func attackRowGrad(kind Kind, eta float64, r, w []float64) []float64 {
	d := len(w)
	x := r[:d]
	g := make([]float64, d)
	var c float64
	switch {
	case kind == Logistic:
		tt := 2*r[d] - 1
		c = -tt * sigmoid(-tt*dot(x, w))
	case eta > 0:
		c = -attackPsi(r[d]-dot(x, w), eta)
	default:
		c = -2 * (r[d] - dot(x, w))
	}
	for j := range g {
		g[j] = c * x[j]
	}
	return g
}

// reconstructNoise returns b̂ = −Σ∇ℓ_i(w) − NΛw over rows (sum form),
// computed with compensated sums.
func reconstructNoise(kind Kind, eta float64, rows []float64, k int, lambda float64, w []float64) []float64 {
	d := k - 1
	n := len(rows) / k
	acc := make([]neumaier, d)
	for i := 0; i < n; i++ {
		r := rows[i*k : (i+1)*k]
		x := r[:d]
		var c float64
		if kind == Logistic {
			tt := 2*r[d] - 1
			c = tt * sigmoid(-tt*dot(x, w))
			for j := 0; j < d; j++ {
				acc[j].add(c * x[j])
			}
		} else if eta > 0 {
			c := attackPsi(r[d]-dot(x, w), eta)
			for j := 0; j < d; j++ {
				acc[j].add(c * x[j])
			}
		} else {
			res := r[d] - dot(x, w)
			for j := 0; j < d; j++ {
				acc[j].add(2 * res * x[j])
			}
		}
	}
	b := make([]float64, d)
	for j := range b {
		acc[j].add(-float64(n) * lambda * w[j])
		b[j] = acc[j].sum()
	}
	return b
}

func fracDist(v float64) float64 { return math.Abs(v - math.Round(v)) }

// attackCounts holds, per statistic, how many releases on D and on D' it
// accepted.
type attackCounts struct {
	name           string
	numeratorIsD   bool
	onD, onDPrime  int
	trials         int
	printedEpsilon float64
	printedDelta   float64
}

// lowerBound returns the Clopper-Pearson lower bound on ε at one-sided
// level alpha for each of the two bounds.
func (a attackCounts) lowerBound(alpha float64) float64 {
	ka, kb := a.onD, a.onDPrime
	if !a.numeratorIsD {
		ka, kb = kb, ka
	}
	lo := audit.ClopperPearsonLower(ka, a.trials, alpha) - a.printedDelta
	hi := audit.ClopperPearsonUpper(kb, a.trials, alpha)
	if lo <= 0 {
		return 0
	}
	return math.Max(0, math.Log(lo/hi))
}

// runObjPertAttack releases trials fits on D and on D' and applies the
// three statistics, all computed under the hypothesis D.
func runObjPertAttack(t *testing.T, kind Kind, d0, d1 []float64, k int, cfg Config, trials int) []attackCounts {
	t.Helper()
	ctx := context.Background()
	d := k - 1
	n := len(d0) / k
	lambda := cfg.ObjPert.Lambda
	radius := cfg.ObjPert.Radius
	eta := huberScale(cfg, int64(n), d) // as Fit resolves it
	if eta > 0 {
		radius = 0 // no ball
	}
	data := [2]Data{xpData(t, d0, k), xpData(t, d1, k)}
	rowD, rowDp := d0[(n-1)*k:], d1[(n-1)*k:]
	stats := []attackCounts{{name: "norm lattice", numeratorIsD: true}, {name: "coordinate lattice", numeratorIsD: true}, {name: "likelihood direction"}}
	for i := range stats {
		stats[i].trials = trials
	}
	for trial := 0; trial < trials; trial++ {
		for nb := 0; nb < 2; nb++ {
			res, err := objPert{}.Fit(ctx, data[nb], cfg)
			if err != nil {
				t.Fatal(err)
			}
			for i := range stats {
				stats[i].printedEpsilon, stats[i].printedDelta = res.Privacy.Epsilon, res.Privacy.Delta
			}
			w := res.Coef
			if kind == Linear && radius > 0 && math.Sqrt(dot(w, w)) >= radius*(1-1e-9) {
				continue // on the sphere the multiplier hides ‖b̂‖: reject
			}
			rel := res.Privacy.Releases[0]
			bh := reconstructNoise(kind, eta, d0, k, lambda, w)
			count := func(i int, accept bool) {
				if !accept {
					return
				}
				if nb == 0 {
					stats[i].onD++
				} else {
					stats[i].onDPrime++
				}
			}
			// norm lattice
			if g, err := noise.LaplaceGrid(rel.Scale, d); err == nil {
				count(0, fracDist(math.Sqrt(dot(bh, bh))/g) < 0.002)
			}
			// coordinate lattice
			if g, err := noise.GaussianGrid(rel.Scale, d); err == nil {
				m := 0.0
				for _, v := range bh {
					m = math.Max(m, fracDist(v/g))
				}
				count(1, m < 0.25)
			}
			// likelihood direction: under D' the hypothesis-D noise is
			// shifted by −(∇ℓ(w; z) − ∇ℓ(w; z')).
			gz, gzp := attackRowGrad(kind, eta, rowD, w), attackRowGrad(kind, eta, rowDp, w)
			diff := make([]float64, d)
			for j := range diff {
				diff[j] = gz[j] - gzp[j]
			}
			if nd := math.Sqrt(dot(diff, diff)); nd > 0 {
				count(2, -dot(bh, diff)/nd > 2*rel.Scale)
			}
		}
	}
	return stats
}

// TestObjPertNoiseRecoveryAttack runs the attack on SmokeBan (logistic) and
// CPS1988 (linear, with the squared loss on the ball and with the default
// pseudo-Huber loss) subsamples of 2,000 rows at ε = 1, δ = 1e-5, with the
// regularisation Λ and radius R of the pre-rebuild defaults passed
// explicitly (public values; the Huber fit has no radius). It fails if any statistic proves, at
// family-wise confidence 95%, an ε above the printed one. The default run
// uses a seeded source and 150 releases per dataset (a few seconds);
// DPLEARN_LONG_TESTS=1 uses secure randomness and 400 releases.
func TestObjPertNoiseRecoveryAttack(t *testing.T) {
	trials := 150
	var src noise.Source = noise.NewInsecureSeeded(2019)
	if longTests() {
		trials, src = 400, noise.NewSecure()
	}
	if testing.Short() {
		trials = 60
	}
	if s := os.Getenv("DPLEARN_ATTACK_TRIALS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("DPLEARN_ATTACK_TRIALS=%q", s)
		}
		trials = v
	}
	const eps, delta, n = 1.0, 1e-5, 2000
	alpha := 0.05 / 6
	for _, c := range []struct {
		kind  Kind
		data  string
		huber float64
	}{{Logistic, "smokeban", 0}, {Linear, "cps1988", -1}, {Linear, "cps1988", 0}} {
		tab := attackTable(t, c.data)
		d0, d1 := attackNeighbours(tab, n)
		d := tab.K - 1
		// The pre-rebuild default Λ: 2·(Hessian bound)/(N(e^{ε/4} − 1))
		// (logistic, c = 1/4) or 2·2/(N(e^{ε/2} − 1)) (linear).
		lambda := 2 * 0.25 / (n * math.Expm1(eps/4))
		if c.kind == Linear {
			lambda = 2 * 2 / (n * math.Expm1(eps/2))
		}
		radius := math.Sqrt(float64(d)) / 2
		if c.kind == Linear && c.huber >= 0 {
			radius = 0 // the pseudo-Huber loss has no ball
		}
		cfg := Config{Kind: c.kind, Epsilon: eps, Delta: delta, Source: src, Huber: c.huber,
			ObjPert: ObjPertOptions{Lambda: lambda, Radius: radius}}
		for _, s := range runObjPertAttack(t, c.kind, d0, d1, tab.K, cfg, trials) {
			lb := s.lowerBound(alpha)
			t.Logf("%s (Huber %v) %-20s accepted %3d/%d on D, %3d/%d on D' → ε ≥ %.3f (95%% family-wise; printed ε = %g, δ = %g)",
				c.data, c.huber, s.name, s.onD, s.trials, s.onDPrime, s.trials, lb, s.printedEpsilon, s.printedDelta)
			if lb > s.printedEpsilon {
				t.Errorf("%s: the %s attack proves ε ≥ %.3f > printed ε = %g (accepted %d/%d releases on D, %d/%d on D')",
					c.data, s.name, lb, s.printedEpsilon, s.onD, s.trials, s.onDPrime, s.trials)
			}
		}
	}
}
