package accounting

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"
)

// capeModel is the linear-Gaussian model of one scalar coordinate of a CAPE
// round, written from the protocol steps only (not from the closed form):
// latent z = (ê_1..ê_S, g_1..g_S), independent, Var ê = τ², Var g = τ²/S.
type capeModel struct {
	S, C int
	tau  float64
	// R is Var ê / Var g (the seed's S by default).
	R float64
	// colluders[s] marks the colluding sites.
	colluders []bool
}

func newCAPEModel(S int, colluding []int, tau float64) capeModel {
	m := capeModel{S: S, C: len(colluding), tau: tau, colluders: make([]bool, S), R: float64(S)}
	for _, c := range colluding {
		m.colluders[c] = true
	}
	return m
}

// covZ is the covariance of the latent z.
func (m capeModel) covZ() *mat.Dense {
	c := mat.NewDense(2*m.S, 2*m.S, nil)
	for s := 0; s < m.S; s++ {
		c.Set(s, s, m.tau*m.tau)
		c.Set(m.S+s, m.S+s, m.tau*m.tau/m.R)
	}
	return c
}

// releaseRow is the row of the noise in site s's release:
// e_s + g_s = ê_s − (1/S)Σ ê + g_s.
func (m capeModel) releaseRow(s int) []float64 {
	r := make([]float64, 2*m.S)
	for j := 0; j < m.S; j++ {
		r[j] = -1 / float64(m.S)
	}
	r[s]++
	r[m.S+s] = 1
	return r
}

// knownRows are what the aggregator and the coalition know besides the
// releases: Q = Σ ê, and ê_c, g_c for every colluder c.
func (m capeModel) knownRows() [][]float64 {
	q := make([]float64, 2*m.S)
	for j := 0; j < m.S; j++ {
		q[j] = 1
	}
	rows := [][]float64{q}
	for c := 0; c < m.S; c++ {
		if !m.colluders[c] {
			continue
		}
		e, g := make([]float64, 2*m.S), make([]float64, 2*m.S)
		e[c], g[m.S+c] = 1, 1
		rows = append(rows, e, g)
	}
	return rows
}

// viewMatrix maps z to the adversary's whole view: every site's release
// noise, then the known rows.
func (m capeModel) viewMatrix() *mat.Dense {
	var rows [][]float64
	for s := 0; s < m.S; s++ {
		rows = append(rows, m.releaseRow(s))
	}
	rows = append(rows, m.knownRows()...)
	a := mat.NewDense(len(rows), 2*m.S, nil)
	for i, r := range rows {
		a.SetRow(i, r)
	}
	return a
}

func stack(rows [][]float64, n int) *mat.Dense {
	a := mat.NewDense(len(rows), n, nil)
	for i, r := range rows {
		a.SetRow(i, r)
	}
	return a
}

// pinv returns the Moore-Penrose pseudo-inverse of a symmetric PSD matrix.
func pinv(t *testing.T, c *mat.Dense) *mat.Dense {
	t.Helper()
	var svd mat.SVD
	if !svd.Factorize(c, mat.SVDFull) {
		t.Fatal("SVD failed")
	}
	var u, v mat.Dense
	svd.UTo(&u)
	svd.VTo(&v)
	sv := svd.Values(nil)
	n := len(sv)
	d := mat.NewDense(n, n, nil)
	for i, s := range sv {
		if s > 1e-12*sv[0] {
			d.Set(i, i, 1/s)
		}
	}
	var out mat.Dense
	out.Product(&v, d, u.T())
	return &out
}

// TestCAPEConditionalCovariance builds the joint Gaussian covariance of the
// honest sites' release noise and the adversary's side information (Q and
// the colluders' ê, g), conditions numerically, and compares with
// Σ = τ²[(1 + 1/S)I − 11ᵀ/S_H], then checks [Σ⁻¹]_hh and μ_h.
func TestCAPEConditionalCovariance(t *testing.T) {
	for _, c := range []struct {
		S         int
		colluding []int
	}{
		{3, nil}, {4, []int{2}}, {10, []int{0, 1, 2}}, {10, []int{3, 7, 9}}, {7, []int{0, 1, 2, 3, 4, 5}}, {2, nil},
	} {
		tau := 0.37
		m := newCAPEModel(c.S, c.colluding, tau)
		var honest []int
		var hrows [][]float64
		for s := 0; s < c.S; s++ {
			if !m.colluders[s] {
				honest = append(honest, s)
				hrows = append(hrows, m.releaseRow(s))
			}
		}
		H := len(honest)
		n := 2 * c.S
		cz := m.covZ()
		cov := func(a, b *mat.Dense) *mat.Dense {
			var t1, out mat.Dense
			t1.Mul(a, cz)
			out.Mul(&t1, b.T())
			return &out
		}
		A, K := stack(hrows, n), stack(m.knownRows(), n)
		var kinv mat.Dense
		if err := kinv.Inverse(cov(K, K)); err != nil {
			t.Fatal(err)
		}
		var t1, t2, cond mat.Dense
		t1.Mul(cov(A, K), &kinv)
		t2.Mul(&t1, cov(K, A))
		cond.Sub(cov(A, A), &t2)
		S, SH := float64(c.S), float64(H)
		for i := 0; i < H; i++ {
			for j := 0; j < H; j++ {
				want := -tau * tau / SH
				if i == j {
					want += tau * tau * (1 + 1/S)
				}
				if math.Abs(cond.At(i, j)-want) > 1e-12 {
					t.Fatalf("S=%d colluders %v: Σ[%d][%d] = %v, want %v", c.S, c.colluding, i, j, cond.At(i, j), want)
				}
			}
		}
		var inv mat.Dense
		if err := inv.Inverse(&cond); err != nil {
			t.Fatal(err)
		}
		wantInv := S * (S + SH) / (tau * tau * SH * (S + 1))
		for i := 0; i < H; i++ {
			if !near(inv.At(i, i), wantInv, 1e-10) {
				t.Fatalf("S=%d: [Σ⁻¹]_hh = %v, want %v", c.S, inv.At(i, i), wantInv)
			}
		}
		sens := 0.03
		mu, err := CAPECoalitionMu(CAPEParams{Sites: c.S, Colluders: len(c.colluding), Tau: tau, Sensitivity: sens})
		if err != nil || !near(mu, sens*sens*wantInv/2, 1e-12) {
			t.Fatalf("S=%d: CAPECoalitionMu = %v (%v), want %v", c.S, mu, err, sens*sens*wantInv/2)
		}
	}
}

// viewLoss returns, for a record at honest site h whose change moves that
// site's scalar release by Δ, the coefficients of the exact log-likelihood
// ratio of the adversary's whole (degenerate Gaussian) view V = A z:
// L(w) = c0 − aᵀw for a noise realisation w = A z under the first dataset,
// with a = C⁺d, c0 = ½dᵀC⁺d, C = A Cov_z Aᵀ and d = Δ·e_h. It also checks
// that d lies in the range of C (otherwise the loss would be infinite).
func viewLoss(t *testing.T, m capeModel, h int, sens float64) (a []float64, c0 float64) {
	t.Helper()
	A := m.viewMatrix()
	var t1, C mat.Dense
	t1.Mul(A, m.covZ())
	C.Mul(&t1, A.T())
	P := pinv(t, &C)
	rows, _ := A.Dims()
	d := mat.NewVecDense(rows, nil)
	d.SetVec(h, sens)
	var av, back mat.VecDense
	av.MulVec(P, d)
	back.MulVec(&C, &av)
	for i := 0; i < rows; i++ {
		if math.Abs(back.AtVec(i)-d.AtVec(i)) > 1e-9*sens {
			t.Fatalf("shift not in the range of the view covariance")
		}
	}
	return av.RawVector().Data, mat.Dot(d, &av) / 2
}

// capeMC estimates δ(ε) = E[(1 − e^{ε−L})₊] under the first dataset by
// simulating the protocol itself (Q = Σ ê, e_s = ê_s − Q/S, r_s = e_s + g_s)
// for a dim-dimensional release whose change at honest site h is a vector of
// norm Δ, with the exact log-likelihood ratio of the whole view (summed over
// the independent coordinates). It returns the estimate and its standard
// error.
func capeMC(t *testing.T, m capeModel, h int, sens, eps float64, dim, n int, rng *rand.Rand) (float64, float64) {
	t.Helper()
	// The change is Δ·u with ‖u‖ = 1; coordinate k shifts by Δ·u_k.
	u := []float64{0.6, 0.8}[:dim]
	if dim == 1 {
		u = []float64{1}
	}
	as := make([][]float64, dim)
	var c0 float64
	for k := range as {
		a, c := viewLoss(t, m, h, sens*u[k])
		as[k] = a
		c0 += c
	}
	S := m.S
	eh, g := make([]float64, S), make([]float64, S)
	view := make([]float64, len(as[0]))
	var sum, sum2 float64
	for i := 0; i < n; i++ {
		L := c0
		for k := 0; k < dim; k++ {
			var q float64
			for s := 0; s < S; s++ {
				eh[s] = m.tau * rng.NormFloat64()
				g[s] = m.tau / math.Sqrt(float64(S)) * rng.NormFloat64()
				q += eh[s]
			}
			j := 0
			for s := 0; s < S; s++ {
				view[j] = eh[s] - q/float64(S) + g[s] // r_s minus its data part
				j++
			}
			view[j] = q
			j++
			for c := 0; c < S; c++ {
				if m.colluders[c] {
					view[j], view[j+1] = eh[c], g[c]
					j += 2
				}
			}
			for i, v := range view {
				L -= as[k][i] * v
			}
		}
		if L > eps {
			x := -math.Expm1(eps - L)
			sum += x
			sum2 += x * x
		}
	}
	mean := sum / float64(n)
	return mean, math.Sqrt((sum2/float64(n) - mean*mean) / float64(n))
}

// The review's three cases (PRIVACY-NOTES item 18), in the seed's
// convention: per-site sensitivity S/N (a per-site mean over N/S records).
var reviewCAPECases = []struct {
	S, C, N  int
	tau, eps float64
	// exact δ, pinned after checking it against the Monte Carlo below.
	exact float64
}{
	{3, 0, 100, 0.106, 0.9, 8.0e-4},
	{3, 0, 100, 0.15, 0.5, 2.38e-3},
	{10, 3, 1000, 0.03, 0.5, 5.11e-2},
}

// TestCAPEMonteCarlo compares CAPEDeltaExact with a Monte Carlo of the
// privacy loss of the adversary's whole view, simulated from the protocol,
// on the review's three cases (a 2-dimensional release for the third) and
// two more (colluders, unequal honest site). The as-published figure is far
// below the simulated δ.
func TestCAPEMonteCarlo(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 2024))
	n := 200_000
	if testing.Short() {
		n = 100_000
	}
	type mcCase struct {
		S         int
		colluding []int
		h         int
		tau, sens float64
		eps       float64
		dim       int
		n         int // for the as-published figure; 0: none
	}
	var cases []mcCase
	for i, c := range reviewCAPECases {
		var col []int
		for j := 0; j < c.C; j++ {
			col = append(col, c.S-1-j) // any C sites: only their number matters
		}
		dim := 1
		if i == 2 {
			dim = 2
		}
		cases = append(cases, mcCase{c.S, col, 0, c.tau, float64(c.S) / float64(c.N), c.eps, dim, c.N})
	}
	cases = append(cases, mcCase{5, []int{0}, 3, 0.5, 0.4, 1.2, 1, 0}, mcCase{4, []int{1, 2, 3}, 0, 1, 0.5, 0.3, 1, 0})
	for _, c := range cases {
		p := CAPEParams{Sites: c.S, Colluders: len(c.colluding), Tau: c.tau, Sensitivity: c.sens}
		exact, err := CAPEDeltaExact(p, c.eps)
		if err != nil {
			t.Fatal(err)
		}
		mc, se := capeMC(t, newCAPEModel(c.S, c.colluding, c.tau), c.h, c.sens, c.eps, c.dim, n, rng)
		pub := math.NaN()
		if c.n > 0 {
			if pub, err = CAPEDeltaAsPublished(c.S, len(c.colluding), c.tau, c.n, c.eps); err != nil {
				t.Fatal(err)
			}
		}
		mu, _ := CAPEMu(p)
		t.Logf("S=%d S_C=%d τ=%g Δ=%g ε=%g: μ=%.6g exact δ=%.6g, Monte Carlo δ=%.6g ± %.2g (n=%d, dim %d), as published %.3g",
			c.S, len(c.colluding), c.tau, c.sens, c.eps, mu, exact, mc, se, n, c.dim, pub)
		if math.Abs(mc-exact) > 4*se || se > 0.05*exact {
			t.Errorf("S=%d S_C=%d: exact δ %v vs Monte Carlo %v ± %v", c.S, len(c.colluding), exact, mc, se)
		}
		if c.n > 0 && !(pub < mc-10*se) {
			t.Errorf("as-published δ %v not below the simulated %v", pub, mc)
		}
		if c.n > 0 {
			// The seed's μ_z with only σ_z corrected to √(2μ_z) is refuted too:
			// μ must come from the whole view.
			S, C, N := float64(c.S), float64(len(c.colluding)), float64(c.n)
			muz := S * S * S / (2 * c.tau * c.tau * N * N * (1 + S)) * ((S-C+2)/(S-C) + 9/(S-C)*C*C/(S*(1+S)-3*C*C))
			seedMu := analyticDelta(c.eps, math.Sqrt(2*muz))
			t.Logf("  seed's μ_z = %.6g with σ_z = √(2μ_z): δ = %.3g", muz, seedMu)
			if !(seedMu < mc-6*se) {
				t.Errorf("the seed's μ_z (δ %v) is not refuted by the simulation (%v ± %v)", seedMu, mc, se)
			}
		}
	}
}

// TestCAPEReviewCases pins the exact δ of the review's three cases, the
// seed's convention for their sensitivity, and the as-published figure of
// the first (2·10⁻¹⁷ printed; PRIVACY-NOTES item 18).
func TestCAPEReviewCases(t *testing.T) {
	for _, c := range reviewCAPECases {
		sens, err := CAPESeedSensitivity(c.S, c.N)
		if err != nil || sens < float64(c.S)/float64(c.N) {
			t.Fatalf("seed sensitivity %v %v", sens, err)
		}
		d, err := CAPEDeltaExact(CAPEParams{Sites: c.S, Colluders: c.C, Tau: c.tau, Sensitivity: sens}, c.eps)
		if err != nil || !near(d, c.exact, 0.01) {
			t.Errorf("%+v: exact δ = %v (%v), want ≈ %v", c, d, err, c.exact)
		}
	}
	pub, err := CAPEDeltaAsPublished(3, 0, 0.106, 100, 0.9)
	if err != nil || pub < 1.5e-17 || pub > 2.5e-17 {
		t.Errorf("as-published δ = %v (%v), the review printed 2e-17", pub, err)
	}
}

// TestCAPEClosedForms checks special cases, monotonicity and the GDP link.
func TestCAPEClosedForms(t *testing.T) {
	// S_H = 1: only g_h (variance τ²/S) protects: μ = Δ²S/(2τ²).
	p := CAPEParams{Sites: 6, Colluders: 5, Tau: 0.5, Sensitivity: 0.25}
	if mu, _ := CAPEMu(p); !near(mu, 0.25*0.25*6/(2*0.25), 1e-15) {
		t.Errorf("S_H = 1: μ = %v", mu)
	}
	// S_C = 0: μ = Δ²S/(τ²(S+1)).
	p = CAPEParams{Sites: 3, Colluders: 0, Tau: 2, Sensitivity: 1}
	if mu, _ := CAPEMu(p); !near(mu, 3.0/(4*4), 1e-15) {
		t.Errorf("S_C = 0: μ = %v", mu)
	}
	// One CAPE release is √(2μ)-GDP: δ equals the Gaussian mechanism's.
	eta, _ := CAPEGDPMu(p)
	mu, _ := CAPEMu(p)
	if !near(eta, math.Sqrt(2*mu), 1e-15) {
		t.Errorf("η = %v, √(2μ) = %v", eta, math.Sqrt(2*mu))
	}
	d, _ := CAPEDeltaExact(p, 0.4)
	if g, _ := AnalyticGaussianDelta(0.4, 1, eta); d != g {
		t.Errorf("δ %v vs analytic Gaussian %v", d, g)
	}
	// Written out: δ = Φ(√(μ/2) − ε/√(2μ)) − e^ε Φ(−√(μ/2) − ε/√(2μ)).
	if w := normCDF(math.Sqrt(mu/2)-0.4/math.Sqrt(2*mu)) - math.Exp(0.4)*normCDF(-math.Sqrt(mu/2)-0.4/math.Sqrt(2*mu)); !near(d, w, 1e-9) {
		t.Errorf("δ %v vs written-out curve %v", d, w)
	}
	if e, _ := CAPEEpsilonExact(p, d); !near(e, 0.4, 1e-9) {
		t.Errorf("ε round trip %v", e)
	}
	// More colluders, more δ; larger ε, less δ.
	prev := 0.0
	for c := 0; c < 10; c++ {
		d, err := CAPEDeltaExact(CAPEParams{Sites: 10, Colluders: c, Tau: 0.02, Sensitivity: 0.004}, 0.5)
		if err != nil || !(d > prev) {
			t.Fatalf("S_C=%d: δ %v not above %v (%v)", c, d, prev, err)
		}
		prev = d
	}
	// μ rounds up: never below the exact rational value.
	q := CAPEParams{Sites: 7, Colluders: 2, Tau: 0.1, Sensitivity: 0.3}
	mu, _ = CAPEMu(q)
	exact := new(big.Rat).Mul(q.twoMuRat(), big.NewRat(1, 2))
	if new(big.Rat).SetFloat64(mu).Cmp(exact) < 0 {
		t.Error("CAPEMu rounded down")
	}
	for _, bad := range []CAPEParams{
		{Sites: 1, Colluders: 0, Tau: 1, Sensitivity: 1},
		{Sites: 3, Colluders: 3, Tau: 1, Sensitivity: 1},
		{Sites: 3, Colluders: -1, Tau: 1, Sensitivity: 1},
		{Sites: 3, Tau: 0, Sensitivity: 1},
		{Sites: 3, Tau: 1, Sensitivity: math.NaN()},
		{Sites: 3, Tau: math.Inf(1), Sensitivity: 1},
	} {
		if _, err := CAPEDeltaExact(bad, 0.5); err == nil {
			t.Errorf("%+v accepted", bad)
		}
	}
	if _, err := CAPEDeltaExact(p, -1); err == nil {
		t.Error("ε < 0 accepted")
	}
}

// TestCAPETau calibrates τ for the review's cases at δ = 1e-5 and checks it
// is the smallest that meets the target.
func TestCAPETau(t *testing.T) {
	for _, c := range reviewCAPECases {
		sens := float64(c.S) / float64(c.N)
		tau, err := CAPETau(c.eps, 1e-5, c.S, c.C, sens)
		if err != nil {
			t.Fatal(err)
		}
		p := CAPEParams{Sites: c.S, Colluders: c.C, Tau: tau, Sensitivity: sens}
		d, _ := CAPEDeltaExact(p, c.eps)
		p.Tau = tau * (1 - 1e-9)
		below, _ := CAPEDeltaExact(p, c.eps)
		t.Logf("S=%d S_C=%d N=%d ε=%g: τ = %.6g for δ = 1e-5 (reviewed τ = %g)", c.S, c.C, c.N, c.eps, tau, c.tau)
		if !(d <= 1e-5) || !(below > 1e-5) {
			t.Errorf("%+v: τ = %v gives δ = %v; 1e-9 less gives %v", c, tau, d, below)
		}
	}
	// Unequal sites: the smallest site (largest Δ = 1/N_s) is the worst.
	sens := []float64{1.0 / 500, 1.0 / 80, 1.0 / 300, 1.0 / 1000}
	d, worst, err := CAPEDeltaSites(sens, 1, 0.05, 0.5)
	want, _ := CAPEDeltaExact(CAPEParams{Sites: 4, Colluders: 1, Tau: 0.05, Sensitivity: 1.0 / 80}, 0.5)
	if err != nil || worst != 1 || d != want {
		t.Errorf("CAPEDeltaSites = %v, %d, %v; want %v, 1", d, worst, err, want)
	}
	tau, err := CAPETauSites(0.5, 1e-5, sens, 1)
	want, _ = CAPETau(0.5, 1e-5, 4, 1, 1.0/80)
	if err != nil || tau != want {
		t.Errorf("CAPETauSites = %v (%v), want %v", tau, err, want)
	}
	if _, _, err := CAPEDeltaSites([]float64{0.1}, 0, 1, 1); err == nil {
		t.Error("one site accepted")
	}
	if _, _, err := CAPEDeltaSites([]float64{0.1, -1}, 0, 1, 1); err == nil {
		t.Error("negative sensitivity accepted")
	}
	if _, err := CAPETau(0.5, 0, 3, 0, 0.01); err == nil {
		t.Error("δ = 0 accepted")
	}
}

func TestCAPEAsPublishedLimits(t *testing.T) {
	if CAPEColluders(3) != 0 || CAPEColluders(4) != 1 || CAPEColluders(9) != 2 || CAPEColluders(10) != 3 {
		t.Fatal("S_C default wrong")
	}
	// The theorem's own range: ε ∈ (0, 1), S_C ≤ ⌈S/3⌉ − 1.
	if _, err := CAPEDeltaAsPublished(3, 0, 0.05, 1000, 1.5); err == nil {
		t.Error("ε ≥ 1 accepted")
	}
	if _, err := CAPEDeltaAsPublished(6, 2, 0.05, 1000, 0.5); err == nil {
		t.Error("too many colluders accepted")
	}
	// Hand computation with S_C = 0: μ = S²(S+2)/(2τ²N²(1+S)), σ_z = 2μ.
	S, tau, N, eps := 3.0, 0.05, 1000.0, 0.5
	mu := S * S * (S + 2) / (2 * tau * tau * N * N * (1 + S))
	x := (eps - mu) / (2 * mu)
	want := 2 * 2 * mu / (eps - mu) * math.Exp(-x*x/2) / math.Sqrt(2*math.Pi)
	if got, err := CAPEDeltaAsPublished(3, 0, tau, 1000, eps); err != nil || !near(got, want, 1e-12) {
		t.Fatalf("δ = %v want %v (%v)", got, want, err)
	}
}

// TestCAPENoiseRatio checks step 6 of the derivation: with Var g = τ²/R the
// numerically conditioned covariance gives [Σ⁻¹]_hh = R(R+S_H)/(τ²S_H(R+1)),
// CAPEMu with NoiseRatio R agrees, R = S is the default, and the model's
// variance ratio κ = (Sτ²/R)·[Σ⁻¹]_hh matches CAPEModelVarianceRatio and falls
// towards S/S_H as R grows.
func TestCAPENoiseRatio(t *testing.T) {
	const tau, sens = 0.37, 0.03
	for _, c := range []struct {
		S         int
		colluding []int
	}{{5, []int{1}}, {5, nil}, {10, []int{0, 4, 9}}} {
		prevKappa := math.Inf(1)
		for _, R := range []float64{0.5, 1, float64(c.S), 20, 1000} {
			m := newCAPEModel(c.S, c.colluding, tau)
			m.R = R
			var hrows [][]float64
			for s := 0; s < c.S; s++ {
				if !m.colluders[s] {
					hrows = append(hrows, m.releaseRow(s))
				}
			}
			cz := m.covZ()
			cov := func(a, b *mat.Dense) *mat.Dense {
				var t1, out mat.Dense
				t1.Mul(a, cz)
				out.Mul(&t1, b.T())
				return &out
			}
			A, K := stack(hrows, 2*c.S), stack(m.knownRows(), 2*c.S)
			var kinv, t1, t2, cond, inv mat.Dense
			if err := kinv.Inverse(cov(K, K)); err != nil {
				t.Fatal(err)
			}
			t1.Mul(cov(A, K), &kinv)
			t2.Mul(&t1, cov(K, A))
			cond.Sub(cov(A, A), &t2)
			if err := inv.Inverse(&cond); err != nil {
				t.Fatal(err)
			}
			SH := float64(c.S - len(c.colluding))
			want := R * (R + SH) / (tau * tau * SH * (R + 1))
			if !near(inv.At(0, 0), want, 1e-9) {
				t.Fatalf("S=%d R=%v: [Σ⁻¹]_hh = %v, want %v", c.S, R, inv.At(0, 0), want)
			}
			p := CAPEParams{Sites: c.S, Colluders: len(c.colluding), Tau: tau, Sensitivity: sens, NoiseRatio: R}
			mu, err := CAPECoalitionMu(p)
			if err != nil || !near(mu, sens*sens*inv.At(0, 0)/2, 1e-9) {
				t.Fatalf("S=%d R=%v: CAPECoalitionMu = %v (%v), want %v", c.S, R, mu, err, sens*sens*inv.At(0, 0)/2)
			}
			// With the lone-site view (variance (S−1)τ²/R of the other
			// sites' local noise), [Σ⁻¹]_hh is replaced by the larger of
			// the two precisions.
			prec := math.Max(inv.At(0, 0), R/(tau*tau*float64(c.S-1)))
			if all, err := CAPEMu(p); err != nil || !near(all, sens*sens*prec/2, 1e-9) {
				t.Fatalf("S=%d R=%v: CAPEMu = %v (%v), want %v", c.S, R, all, err, sens*sens*prec/2)
			}
			kappa, err := CAPEModelVarianceRatio(p)
			if direct := float64(c.S) * tau * tau / R * prec; err != nil || !near(kappa, direct, 1e-9) {
				t.Fatalf("S=%d R=%v: κ = %v (%v), direct %v", c.S, R, kappa, err, direct)
			}
			floor := math.Max(float64(c.S)/SH, float64(c.S)/float64(c.S-1))
			if kappa > prevKappa || kappa < floor*(1-1e-12) {
				t.Fatalf("S=%d R=%v: κ = %v not decreasing towards max(S/S_H, S/(S−1)) = %v", c.S, R, kappa, floor)
			}
			prevKappa = kappa
		}
		def, _ := CAPEMu(CAPEParams{Sites: c.S, Colluders: len(c.colluding), Tau: tau, Sensitivity: sens})
		seed, _ := CAPEMu(CAPEParams{Sites: c.S, Colluders: len(c.colluding), Tau: tau, Sensitivity: sens, NoiseRatio: float64(c.S)})
		if def != seed {
			t.Fatalf("S=%d: default ratio μ %v ≠ R = S μ %v", c.S, def, seed)
		}
	}
	// The figure the capefm protocol reports: S = 5, S_C = 1 at the seed's
	// ratio.
	if k, _ := CAPEModelVarianceRatio(CAPEParams{Sites: 5, Colluders: 1, Tau: 1, Sensitivity: 1}); !near(k, 1.875, 1e-12) {
		t.Fatalf("κ(S=5, S_C=1, R=S) = %v, want 1.875", k)
	}
}

// TestCAPELoneSiteView builds the view of one site that reads the published
// model (every release summed: noise Σ_s g_s) and knows its own ê_s, g_s
// and Q, computes the privacy loss of a record at another site numerically
// (½dᵀC⁺d over the degenerate Gaussian view), and compares it with
// CAPELoneSiteMu = Δ²R/(2τ²(S − 1)); then CAPEMu is the larger of the two
// views, and with S_C ≥ 1 the coalition's always.
func TestCAPELoneSiteView(t *testing.T) {
	const tau, sens = 0.37, 0.03
	for _, S := range []int{2, 3, 4, 5, 10} {
		for _, R := range []float64{0.5, float64(S), 100, 1000} {
			m := newCAPEModel(S, nil, tau)
			m.R = R
			n := 2 * S
			// The site is 0. Rows: the model's noise Σ_s (e_s + g_s) =
			// Σ_s g_s, then ê_0, g_0 and Q.
			model, e0, g0, q := make([]float64, n), make([]float64, n), make([]float64, n), make([]float64, n)
			for s := 0; s < S; s++ {
				r := m.releaseRow(s)
				for j := range model {
					model[j] += r[j]
				}
				q[s] = 1
			}
			e0[0], g0[S] = 1, 1
			A := stack([][]float64{model, e0, g0, q}, n)
			var t1, C mat.Dense
			t1.Mul(A, m.covZ())
			C.Mul(&t1, A.T())
			P := pinv(t, &C)
			d := mat.NewVecDense(4, []float64{sens, 0, 0, 0}) // a record at site 1 moves the model only
			var av, back mat.VecDense
			av.MulVec(P, d)
			back.MulVec(&C, &av)
			for i := 0; i < 4; i++ {
				if math.Abs(back.AtVec(i)-d.AtVec(i)) > 1e-9*sens {
					t.Fatalf("S=%d R=%v: shift not in the range of the view", S, R)
				}
			}
			numeric := mat.Dot(d, &av) / 2
			p := CAPEParams{Sites: S, Tau: tau, Sensitivity: sens, NoiseRatio: R}
			lone, err := CAPELoneSiteMu(p)
			if err != nil || !near(lone, numeric, 1e-9) {
				t.Fatalf("S=%d R=%v: CAPELoneSiteMu = %v (%v), numeric %v", S, R, lone, err, numeric)
			}
			coal, _ := CAPECoalitionMu(p)
			all, _ := CAPEMu(p)
			if all != math.Max(lone, coal) {
				t.Fatalf("S=%d R=%v: CAPEMu = %v, views %v and %v", S, R, all, coal, lone)
			}
			if S >= 3 {
				p.Colluders = 1
				coal, _ := CAPECoalitionMu(p)
				if all, _ := CAPEMu(p); all != coal || lone > coal {
					t.Fatalf("S=%d R=%v S_C=1: the aggregator with one site (μ %v) must cover the lone site (μ %v); CAPEMu %v", S, R, coal, lone, all)
				}
			}
		}
	}
	// The attack of issue 22 item 5: S = 3, S_C = 0, R = 100 calibrated by
	// the coalition view alone leaves the lone site 1.47 times the μ.
	p := CAPEParams{Sites: 3, Tau: 1, Sensitivity: 1, NoiseRatio: 100}
	coal, _ := CAPECoalitionMu(p)
	lone, _ := CAPELoneSiteMu(p)
	if r := lone / coal; !near(r, 3.0*101/(2*103), 1e-12) {
		t.Fatalf("μ_lone/μ_h = %v, want 303/206", r)
	}
}
