package capefm

import (
	"context"
	"errors"
	"math"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// unitSite is one site's persons: rows[p] holds person p's rows (k values
// each), in file order.
type unitSite [][]float64

// panelSites draws persons with 1 to 7 rows each at every site (disjoint
// persons across sites, the assumption the report states).
func panelSites(kind regress.Kind, d int, persons []int, seed uint64) []unitSite {
	rng := mrand.New(mrand.NewPCG(seed, 7))
	k := d + 1
	out := make([]unitSite, len(persons))
	for s, np := range persons {
		for range np {
			r := 1 + rng.IntN(7)
			out[s] = append(out[s], syntheticRows(kind, r, d, rng)[:r*k])
		}
	}
	return out
}

// boundedStats returns the statistics of at most K rows per person (the
// first K: the choice of the subset is dataset.UnitMoments's, tested
// there) wrapped by regress.UnitStats, and the kept rows.
func boundedStats(t testing.TB, site unitSite, k, K int, unit string) (regress.Stats, []float64) {
	t.Helper()
	var kept []float64
	for _, rows := range site {
		kept = append(kept, rows[:min(len(rows)/k, K)*k]...)
	}
	st, err := regress.UnitStats(statsOf(t, kept, k), regress.PrivacyUnit{Column: unit, MaxRows: K, Units: int64(len(site))})
	if err != nil {
		t.Fatal(err)
	}
	return st, kept
}

type unitRun struct {
	template Params
	sites    []*Site
	kept     [][]float64
}

// newUnitRun builds capeFM (or mech) sites over bounded statistics.
func newUnitRun(t testing.TB, mech Mechanism, kind regress.Kind, d, K int, sites []unitSite, seed uint64) *unitRun {
	t.Helper()
	ca := testCA(t)
	u := &unitRun{}
	var names []string
	var ns []int64
	for i, site := range sites {
		name := []string{"site-a", "site-b", "site-c", "site-d"}[i]
		st, kept := boundedStats(t, site, d+1, K, "pid")
		cfg := SiteConfig{Name: name, Mechanism: mech, Kind: kind, Schema: testSchema, Epsilon: 1, Delta: 1e-6,
			Source: noise.NewInsecureSeeded(seed*100 + uint64(i)), Ledger: &memLedger{}, Unit: "pid", MaxRows: K}
		if mech == CapeFM {
			cfg.Signer = testSigner(t, ca, name)
		}
		s, err := NewSite(cfg, regress.Data{Stats: st})
		if err != nil {
			t.Fatal(err)
		}
		if s.N() != int64(len(site)) {
			t.Fatalf("%s announces N = %d, want its %d units", name, s.N(), len(site))
		}
		u.sites = append(u.sites, s)
		u.kept = append(u.kept, kept)
		names, ns = append(names, name), append(ns, s.N())
	}
	roster, err := Roster(names, ns)
	if err != nil {
		t.Fatal(err)
	}
	u.template = Params{Mechanism: mech, Kind: kind, Schema: testSchema, D: d, Epsilon: 1, Delta: 1e-6, Split: 0.5,
		Sites: roster, Colluders: -1, MinSites: 2, Unit: "pid", MaxRows: K}
	return u
}

// captureReleases runs u and returns every site's snapped whitened
// statistic (before any noise), in 2^−F units, by site ID.
func (u *unitRun) captureReleases(t *testing.T) (*RunResult, map[uint32][]int64) {
	t.Helper()
	var mu sync.Mutex
	snaps := map[uint32][]int64{}
	testHookRelease = func(site uint32, snapped, e, g []int64) {
		mu.Lock()
		defer mu.Unlock()
		snaps[site] = append([]int64(nil), snapped...)
	}
	defer func() { testHookRelease = nil }()
	res, err := Run(context.Background(), u.template, u.sites, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res, snaps
}

// TestUnitCapeFMEqualsCentralUnitFit: a capeFM fit whose sites bound their
// rows to K per person is, before noise, the central unit-level
// gaussian-fm fit on the pooled bounded rows: the sum of the sites'
// snapped releases is the central Λ = Σ_kept λ/(U·K) (to the grid), the
// whitening sensitivities are regress's at N = U units, and the pooled
// comparison scales are the central unit-level fit's, which prints the
// same sensitivities.
func TestUnitCapeFMEqualsCentralUnitFit(t *testing.T) {
	for _, tc := range []struct {
		kind regress.Kind
		K    int
	}{{regress.Linear, 1}, {regress.Linear, 3}, {regress.Logistic, 2}} {
		d := 4
		sites := panelSites(tc.kind, d, []int{300, 450, 250}, 5)
		u := newUnitRun(t, CapeFM, tc.kind, d, tc.K, sites, 9)
		res, snaps := u.captureReleases(t)
		cal := res.Calibration
		U := int64(1000)
		if cal.N != U {
			t.Fatalf("%s K=%d: calibration N = %d, want U = %d units", tc.kind, tc.K, cal.N, U)
		}
		// Central: the pooled bounded rows under UnitStats with U units.
		pooled := suffstat.New(d + 1)
		for _, kept := range u.kept {
			if err := pooled.AddRows(kept); err != nil {
				t.Fatal(err)
			}
		}
		pooled.Flush()
		cst, err := regress.UnitStats(pooled, regress.PrivacyUnit{Column: "pid", MaxRows: tc.K, Units: U})
		if err != nil {
			t.Fatal(err)
		}
		exact, err := regress.Objective(tc.kind, cst)
		if err != nil {
			t.Fatal(err)
		}
		sum := make([]float64, cal.L)
		for _, s := range snaps {
			for i, v := range s {
				sum[i] += math.Ldexp(float64(v), -int(cal.FracBits))
			}
		}
		tol := float64(cal.S) * cal.Grid // S snaps of at most half a grid step each, and then some
		for i, x := range exact.Lambda1 {
			if got := sum[i] * cal.C1; math.Abs(got-x) > tol*cal.C1 {
				t.Errorf("%s K=%d: Λ1[%d] = %v from the sites, %v central", tc.kind, tc.K, i, got, x)
			}
		}
		for i, x := range exact.Upper {
			if got := sum[cal.L1+i] * cal.C2; math.Abs(got-x) > tol*cal.C2 {
				t.Errorf("%s K=%d: Λ2[%d] = %v from the sites, %v central", tc.kind, tc.K, i, got, x)
			}
		}
		// Sensitivities at U units, as the central unit-level fit.
		sens, err := regress.SensitivitiesFor(tc.kind, d, U)
		if err != nil {
			t.Fatal(err)
		}
		if cal.Delta1 != sens.Lambda1 || cal.Delta2 != sens.Lambda2 {
			t.Errorf("%s K=%d: Δ = (%v, %v), central unit-level (%v, %v)", tc.kind, tc.K, cal.Delta1, cal.Delta2, sens.Lambda1, sens.Lambda2)
		}
		est, err := regress.New("gaussian-fm")
		if err != nil {
			t.Fatal(err)
		}
		central, err := est.Fit(context.Background(), regress.Data{Stats: cst}, regress.Config{Kind: tc.kind, Epsilon: 1, Delta: 1e-6,
			Split: 0.5, Lambda: -1, Source: noise.NewInsecureSeeded(1)})
		if err != nil {
			t.Fatal(err)
		}
		if len(central.Privacy.Releases) < 2 {
			t.Fatalf("central fit reports %d releases", len(central.Privacy.Releases))
		}
		r1, r2 := central.Privacy.Releases[0], central.Privacy.Releases[1]
		if math.Abs(r1.Sensitivity-cal.Delta1) > 1e-12*cal.Delta1 || math.Abs(r2.Sensitivity-cal.Delta2) > 1e-12*cal.Delta2 {
			t.Errorf("%s K=%d: central prints sensitivities (%v, %v), capeFM (%v, %v)", tc.kind, tc.K, r1.Sensitivity, r2.Sensitivity, cal.Delta1, cal.Delta2)
		}
		if math.Abs(r1.Scale-cal.Pooled1) > 1e-9*cal.Pooled1 || math.Abs(r2.Scale-cal.Pooled2) > 1e-9*cal.Pooled2 {
			t.Errorf("%s K=%d: central noise (%v, %v), capeFM's pooled reference (%v, %v)", tc.kind, tc.K, r1.Scale, r2.Scale, cal.Pooled1, cal.Pooled2)
		}
		if !strings.Contains(res.Privacy.Neighbouring, "differ in all rows of one person") {
			t.Errorf("neighbouring %q", res.Privacy.Neighbouring)
		}
	}
}

// TestUnitMismatchRefused: a site bounded to another K (or another unit
// column) refuses the offer naming the field, and the aggregator refuses
// its announcement naming K.
func TestUnitMismatchRefused(t *testing.T) {
	d := 3
	sites := panelSites(regress.Linear, d, []int{50, 60}, 1)
	u := newUnitRun(t, CapeFM, regress.Linear, d, 3, sites, 1)
	p := u.template.Clone()
	p.Session, p.Attempt, p.Colluders = [32]byte{9}, 1, accounting.CAPEColluders(2)
	if err := p.Calibrate(); err != nil {
		t.Fatal(err)
	}
	if err := u.sites[0].Check(&p); err != nil {
		t.Fatalf("matching K refused: %v", err)
	}
	for _, tc := range []struct {
		edit  func(*Params)
		field string
	}{
		{func(q *Params) { q.MaxRows = 2 }, "max rows per unit K"},
		{func(q *Params) { q.Unit = "household" }, "privacy unit"},
		{func(q *Params) { q.Unit, q.MaxRows = "", 0 }, "privacy unit"},
	} {
		q := p.Clone()
		tc.edit(&q)
		var me *MismatchError
		if err := u.sites[0].Check(&q); !errors.As(err, &me) || me.Field != tc.field {
			t.Errorf("offer %q K=%d: got %v, want a mismatch of %q", q.Unit, q.MaxRows, err, tc.field)
		}
	}
	// The announcement: Gather refuses another K with a reason naming K.
	an := u.sites[1].Announce()
	an.MaxRows = 2
	b, err := an.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	m, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.(*Announce); got.MaxRows != 2 || got.Unit != "pid" {
		t.Fatalf("announce round trip: %+v", got)
	}
	reason := gatherReason(t, GatherOptions{Schema: testSchema, Unit: "pid", MaxRows: 3}, "site-b", m.(*Announce))
	if !strings.Contains(reason, "max rows per unit K = 2 differs from the fit's K = 3") {
		t.Errorf("refusal %q does not name K", reason)
	}
	// Mechanisms without a unit-level derivation are refused.
	q := p.Clone()
	q.Mechanism, q.Tau, q.NoiseRatio = ObjPertLocal, 0, 0
	if err := q.Validate(); err == nil || !strings.Contains(err.Error(), "no sensitivity derived for a privacy unit") {
		t.Errorf("objpert-local with a unit: %v", err)
	}
}

// TestUnitSiteSensitivityExtremalPair: at one site, two neighbouring
// datasets that differ in all K kept rows of one person (labels flipped,
// features on orthogonal axes, K rows against one) move that site's
// actual snapped whitened release by at most the calibrated per-site
// sensitivity (grid slack included), and by more than half of it (the
// bound is nearly attained); the row-level calibration of the same rows
// (N_s = U_s·K rows) is exceeded, which is why the unit counts matter.
func TestUnitSiteSensitivityExtremalPair(t *testing.T) {
	for _, K := range []int{1, 3, 7} {
		d := 4
		k := d + 1
		base := panelSites(regress.Linear, d, []int{200, 300}, 3)
		// Person 0 at site a: K rows with y = +1 on axis 1 (a), against K
		// rows with y = −1 on axis 2 (b) or one such row (c).
		rows := func(n int, axis int, y float64) []float64 {
			out := make([]float64, n*k)
			for r := range n {
				out[r*k+axis], out[r*k+d] = 1, y
			}
			return out
		}
		rel := map[string]map[uint32][]int64{}
		var res *RunResult
		for _, pc := range []struct {
			name   string
			person []float64
		}{{"a", rows(K, 1, 1)}, {"b", rows(K, 2, -1)}, {"c", rows(1, 2, -1)}} {
			sites := []unitSite{append(unitSite{pc.person}, base[0][1:]...), base[1]}
			u := newUnitRun(t, CapeFM, regress.Linear, d, K, sites, 4)
			r, snaps := u.captureReleases(t)
			rel[pc.name], res = snaps, r
		}
		cal := res.Calibration
		shift := func(x, y string) float64 {
			s := 0.0
			for i := range rel[x][1] {
				v := math.Ldexp(float64(rel[x][1][i]-rel[y][1][i]), -int(cal.FracBits))
				s += v * v
			}
			return math.Sqrt(s)
		}
		diff, diffOne := shift("a", "b"), shift("a", "c")
		for _, v := range []float64{diff, diffOne} {
			if v > cal.Sensitivity {
				t.Errorf("K=%d: a neighbouring pair moves site-a's release by %v, above the calibrated %v", K, v, cal.Sensitivity)
			}
		}
		if diff < 0.95*cal.SiteSens[0] {
			t.Errorf("K=%d: the extremal pair moves the release by %v, below 0.95 × the sensitivity %v: not extremal", K, diff, cal.SiteSens[0])
		}
		if K > 1 {
			row := res.Calibration // recalibrate the same roster as rows
			p := Params{Mechanism: CapeFM, Kind: regress.Linear, Schema: testSchema, D: d, Epsilon: 1, Delta: 1e-6, Split: 0.5,
				Sites:     []SiteInfo{{Name: "site-a", ID: 1, N: 200 * int64(K)}, {Name: "site-b", ID: 2, N: 300 * int64(K)}},
				Colluders: row.Colluders, MinSites: 2, Session: [32]byte{1}, Attempt: 1}
			if err := p.Calibrate(); err != nil {
				t.Fatal(err)
			}
			rc, err := p.Calibration()
			if err != nil {
				t.Fatal(err)
			}
			// Whitened by the row-level c's, the same shift is K times larger relative to its sensitivity.
			if rel := diff * cal.C1 / rc.C1; !(rel > rc.SiteSens[0]) {
				t.Errorf("K=%d: the shift %v is within the row-level sensitivity %v: the pair is not extremal", K, rel, rc.SiteSens[0])
			}
		}
		t.Logf("K=%d: ‖Δ release‖ = %.6g (K rows against one: %.6g), per-site sensitivity %.6g (with slack %.6g)", K, diff, diffOne, cal.SiteSens[0], cal.Sensitivity)
	}
}

// TestUnitPrintedGuaranteeIsExactProfile: the printed guarantee of a unit
// capeFM fit is the exact CAPE profile recomputed from the printed noise
// (τ, R, S, S_C) and a per-site sensitivity derived here from the unit
// counts (regress.JointSensitivity at U_s with weight U_s/U, whitened at U);
// the noise of a row-level calibration of the same kept rows (N_s = U_s·K)
// does not meet it. The report states the unit, K, the neighbouring
// relation and the one-site assumption.
func TestUnitPrintedGuaranteeIsExactProfile(t *testing.T) {
	d, K := 4, 3
	sites := panelSites(regress.Linear, d, []int{400, 500, 600}, 8)
	u := newUnitRun(t, CapeFM, regress.Linear, d, K, sites, 2)
	res, err := Run(context.Background(), u.template, u.sites, RunOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cal, pr := res.Calibration, res.Privacy
	// Independent sensitivity from the unit counts.
	U := int64(1500)
	sens, err := regress.SensitivitiesFor(regress.Linear, d, U)
	if err != nil {
		t.Fatal(err)
	}
	J := regress.JointFactor(0.5)
	c1, c2 := sens.Lambda1*math.Sqrt(J/0.5), sens.Lambda2*math.Sqrt(J/0.5)
	hmax := 0.0
	for _, us := range []int64{400, 500, 600} {
		w := float64(us) / float64(U)
		h, err := regress.JointSensitivity(regress.Linear, d, us, regress.TaylorQuadratic, c1/w, c2/w)
		if err != nil {
			t.Fatal(err)
		}
		hmax = math.Max(hmax, h)
	}
	// The printed natural-unit noise of Λ1 and Λ2 is c_j·τ with the c_j
	// derived here: τ is in the whitening at U units.
	if len(pr.Releases) != 2 || math.Abs(pr.Releases[0].Scale-c1*cal.Tau) > 1e-12*c1*cal.Tau || math.Abs(pr.Releases[1].Scale-c2*cal.Tau) > 1e-12*c2*cal.Tau {
		t.Fatalf("printed releases %+v; want scales c·τ = %v, %v", pr.Releases, c1*cal.Tau, c2*cal.Tau)
	}
	profile := func(tau float64) float64 {
		sh := noise.GaussianCalibrationSensitivity(hmax, tauG(tau, cal.NoiseRatio), cal.L)
		cp := accounting.CAPEParams{Sites: 3, Colluders: cal.Colluders, Tau: tau, NoiseRatio: cal.NoiseRatio, Sensitivity: sh}
		dl, err := accounting.CAPEDeltaExact(cp, 1)
		if err != nil {
			t.Fatal(err)
		}
		return dl
	}
	if got := profile(cal.Tau); got > 1e-6 || got < 0.5e-6 {
		t.Errorf("recomputed δ(ε = 1) = %v at the printed τ = %v; printed (1, 1e-06), want δ ≤ 1e-6 and tight", got, cal.Tau)
	}
	if pr.Guarantee() != "(1, 1e-06)-DP" && !strings.Contains(pr.Guarantee(), "(1, 9.") {
		t.Errorf("printed guarantee %s", pr.Guarantee())
	}
	// Row-level noise: calibrated at N_s = U_s·K rows it is too small.
	p := u.template.Clone()
	for i := range p.Sites {
		p.Sites[i].N *= int64(K)
	}
	p.Unit, p.MaxRows, p.Session, p.Attempt, p.Colluders = "", 0, [32]byte{1}, 1, cal.Colluders
	if err := p.Calibrate(); err != nil {
		t.Fatal(err)
	}
	rc, err := p.Calibration()
	if err != nil {
		t.Fatal(err)
	}
	// The row-level noise c_row·τ_row in the unit-level whitening.
	tauRow := p.Tau * math.Max(rc.C1/c1, rc.C2/c2)
	if got := profile(tauRow); got <= 1e-6 {
		t.Errorf("row-level noise (τ = %v at the unit whitening) meets the person-level profile (δ = %v): the test cannot tell them apart", tauRow, got)
	} else {
		t.Logf("person-level τ = %v; row-level noise is τ = %v in the same whitening: δ(1) = %.3g under the person-level sensitivity", cal.Tau, tauRow, got)
	}
	var buf strings.Builder
	if err := pr.WriteText(&buf); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	for _, want := range []string{`privacy unit "pid"`, "at most K = 3 rows per unit", "neighbouring datasets differ in all rows of one person",
		"every person has rows at one site only (at most M = 1 site per person", "N_s = U_s: site-a 400, site-b 500, site-c 600 (N = U = 1500 units"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
}

// gatherReason runs Gather with one announcement and returns the refusal.
func gatherReason(t *testing.T, opt GatherOptions, site string, an *Announce) string {
	t.Helper()
	opt.Expected, opt.MinSites, opt.Timeout = []string{"site-a", site}, 2, 200*time.Millisecond
	var reason string
	opt.OnAnnounce = func(s string, a *Announce, refusal error, lost bool) {
		var ar *AnnounceRefusal
		if errors.As(refusal, &ar) {
			reason = ar.Reason
		}
	}
	hub := newFakeHub(Event{Site: site, Msg: an})
	_, _ = Gather(context.Background(), hub, opt)
	return reason
}

// TestUnitSiteConfigRefusals: a site refuses statistics that do not match
// its configured unit (another K, another column, unit statistics without
// a configured unit, a unit with plain statistics, encoded rows with a
// unit), naming the problem, so its announced count is always units
// exactly when the fit is person-level.
func TestUnitSiteConfigRefusals(t *testing.T) {
	d := 3
	site := panelSites(regress.Linear, d, []int{40}, 2)[0]
	unitSt, kept := boundedStats(t, site, d+1, 2, "pid")
	plain := statsOf(t, kept, d+1)
	for _, tc := range []struct {
		name    string
		unit    string
		K       int
		data    regress.Data
		mech    Mechanism
		want    string
		wantErr bool
	}{
		{"matching", "pid", 2, regress.Data{Stats: unitSt}, CapeFM, "", false},
		{"other K", "pid", 3, regress.Data{Stats: unitSt}, CapeFM, "not bounded to K rows per unit", true},
		{"other column", "household", 2, regress.Data{Stats: unitSt}, CapeFM, "not bounded to K rows per unit", true},
		{"no unit configured", "", 0, regress.Data{Stats: unitSt}, CapeFM, "no privacy unit configured", true},
		{"plain statistics", "pid", 2, regress.Data{Stats: plain}, CapeFM, "not bounded to K rows per unit", true},
		{"rows", "pid", 2, regress.Data{Stats: unitSt, Rows: kept}, GaussianFMLocal, "encoded rows", true},
		{"objpert", "pid", 2, regress.Data{Stats: unitSt}, ObjPertLocal, "no sensitivity derived", true},
		{"K only", "", 2, regress.Data{Stats: unitSt}, CapeFM, "give both or neither", true},
	} {
		cfg := SiteConfig{Name: "site-a", Mechanism: tc.mech, Kind: regress.Linear, Schema: testSchema, Epsilon: 1, Delta: 1e-6,
			Source: f64src(), Ledger: &memLedger{}, UnsignedKeys: true, Unit: tc.unit, MaxRows: tc.K}
		s, err := NewSite(cfg, tc.data)
		switch {
		case tc.wantErr && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		case !tc.wantErr && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !tc.wantErr && (s.N() != 40 || s.Announce().N != 40 || s.Announce().MaxRows != 2 || s.Announce().Unit != "pid"):
			t.Errorf("%s: announces N = %d, K = %d, unit %q; want 40 units, K = 2, pid", tc.name, s.Announce().N, s.Announce().MaxRows, s.Announce().Unit)
		}
	}
}

// TestUnitBaselines: gaussian-fm-local with a privacy unit gives every
// site the noise of central unit-level gaussian-fm on its own U_s units
// (regress.GaussianFMJointScales at U_s), and fm-local fits through
// regress's unit-aware fm; both report the person-level relation.
func TestUnitBaselines(t *testing.T) {
	d := 3
	persons := []int{200, 300}
	sites := panelSites(regress.Linear, d, persons, 6)
	for _, mech := range []Mechanism{GaussianFMLocal, FMLocal} {
		u := newUnitRun(t, mech, regress.Linear, d, 3, sites, 3)
		res, err := Run(context.Background(), u.template, u.sites, RunOptions{})
		if err != nil {
			t.Fatalf("%s: %v", mech, err)
		}
		if mech == GaussianFMLocal {
			for i, us := range persons {
				js, err := regress.GaussianFMJointScales(regress.Linear, d, int64(us), regress.TaylorQuadratic, 1, 1e-6, 0.5)
				if err != nil {
					t.Fatal(err)
				}
				if res.Calibration.SiteTau1[i] != js.Tau1 || res.Calibration.SiteTau2[i] != js.Tau2 {
					t.Errorf("site %d: noise (%v, %v), central unit-level at U_s = %d: (%v, %v)", i+1,
						res.Calibration.SiteTau1[i], res.Calibration.SiteTau2[i], us, js.Tau1, js.Tau2)
				}
			}
		}
		if !strings.Contains(res.Privacy.Neighbouring, "differ in all rows of one person") || len(res.Coef) != d {
			t.Errorf("%s: neighbouring %q, %d coefficients", mech, res.Privacy.Neighbouring, len(res.Coef))
		}
	}
}

// TestSiteRefusesDeltaAboveOneOverN: a site refuses an offer whose δ is
// not below 1/N for the pooled N (units with a privacy unit), by the rule
// of every front end (accounting.CheckDeltaN), naming δ; just below 1/N passes,
// and so does any δ for a site configured to allow it (experiments).
func TestSiteRefusesDeltaAboveOneOverN(t *testing.T) {
	d := 3
	sites := panelSites(regress.Linear, d, []int{50, 60}, 1)
	for _, tc := range []struct {
		delta  float64
		refuse bool
	}{{1.0 / 110, true}, {0.02, true}, {0.009, false}} {
		u := newUnitRun(t, GaussianFMLocal, regress.Linear, d, 3, sites, 1)
		for _, s := range u.sites {
			s.cfg.Delta = tc.delta
		}
		p := u.template.Clone()
		p.Session, p.Attempt, p.Colluders, p.Delta = [32]byte{9}, 1, 0, tc.delta
		if err := p.Calibrate(); err != nil {
			t.Fatal(err)
		}
		err := u.sites[0].Check(&p)
		var me *MismatchError
		switch {
		case tc.refuse && (!errors.As(err, &me) || me.Field != "delta" || !strings.Contains(me.Want, "below 1/N = 0.00909090909090909 for N = 110 units")):
			t.Errorf("δ = %v with N = 110 units: %v, want a refusal of delta", tc.delta, err)
		case !tc.refuse && err != nil:
			t.Errorf("δ = %v with N = 110 units: %v", tc.delta, err)
		}
		// An experiment sweeping δ opts out explicitly.
		u.sites[0].cfg.AllowDeltaAboveOneOverN = true
		if err := u.sites[0].Check(&p); err != nil {
			t.Errorf("δ = %v with AllowDeltaAboveOneOverN: %v", tc.delta, err)
		}
	}
}

// TestOfferSchemaMismatchNamesField: a site offered another schema than
// its own refuses naming the column and field when the offer carries the
// fit's declaration (checked against the offered fingerprint), and by
// fingerprint otherwise or when the declaration does not match it.
func TestOfferSchemaMismatchNamesField(t *testing.T) {
	decl := func(js string) ([32]byte, []byte) {
		s, err := schema.Parse([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		fp, err := schema.Fingerprint(s)
		if err != nil {
			t.Fatal(err)
		}
		b, err := SchemaDeclaration(s)
		if err != nil {
			t.Fatal(err)
		}
		return fp, b
	}
	siteFP, siteDecl := decl(`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "age", "range": [0, 100]}, {"name": "bmi", "range": [10, 60]}]}`)
	fitFP, fitDecl := decl(`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "age", "range": [0, 100]}, {"name": "bmi", "range": [10, 50]}]}`)
	_, otherDecl := decl(`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "age", "range": [0, 90]}, {"name": "bmi", "range": [10, 60]}]}`)
	d := 3
	rows := syntheticRows(regress.Linear, 200, d, mrand.New(mrand.NewPCG(1, 1)))
	for _, tc := range []struct {
		name  string
		decl  []byte
		field string
	}{
		{"declared", fitDecl, `schema column "bmi" range (fingerprint ` + fmtHash(siteFP) + `, offered ` + fmtHash(fitFP) + `)`},
		{"no declaration", nil, "schema fingerprint"},
		{"declaration of another schema", otherDecl, "schema fingerprint"},
	} {
		site, err := NewSite(SiteConfig{Name: "site-1", Mechanism: GaussianFMLocal, Kind: regress.Linear, Schema: siteFP, Declaration: siteDecl,
			Epsilon: 1, Delta: 1e-5, Source: f64src(), Ledger: &memLedger{}}, regress.Data{Stats: statsOf(t, rows, d+1)})
		if err != nil {
			t.Fatal(err)
		}
		roster, _ := Roster([]string{"site-1", "site-2"}, []int64{200, 300})
		p := Params{Session: [32]byte{3}, Attempt: 1, Mechanism: GaussianFMLocal, Kind: regress.Linear, Schema: fitFP, D: d,
			Epsilon: 1, Delta: 1e-5, Split: 0.5, Sites: roster, MinSites: 2}
		// Through the wire.
		b, err := (&Offer{Params: p, Declaration: tc.decl}).MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		m, err := Unmarshal(b)
		if err != nil {
			t.Fatal(err)
		}
		ans, err := site.Handle(context.Background(), m)
		var me *MismatchError
		if _, ok := ans.(*Refuse); !ok || !errors.As(err, &me) || me.Field != tc.field {
			t.Errorf("%s: answered %T, %v; want a refusal of field %q", tc.name, ans, err, tc.field)
			continue
		}
		if tc.name == "declared" && (me.Want != "[10,60]" || me.Got != "[10,50]" || !strings.Contains(ans.(*Refuse).Reason, `schema column "bmi" range`)) {
			t.Errorf("declared: want [10,60], got [10,50]; have %+v, reason %q", me, ans.(*Refuse).Reason)
		}
	}
}
