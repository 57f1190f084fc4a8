package capefm

import (
	"context"
	"errors"
	"math"
	mrand "math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/accounting"
	"github.com/dplearn/dplearn/cape"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/report"
	"github.com/dplearn/dplearn/secagg"
)

// manual drives an attempt by hand, through the binary encoding.
type manual struct {
	t     *testing.T
	agg   *Aggregator
	sites map[uint32]*Site
	down  []Message // the messages of the last Close (or the Offer)
	last  map[uint32]Message
}

func newManual(t *testing.T, f *fixture, attempt uint32, session byte) *manual {
	t.Helper()
	p := f.template.Clone()
	p.Session, p.Attempt = [32]byte{session, 1, 2, 3}, attempt
	if p.Colluders < 0 {
		p.Colluders = accounting.CAPEColluders(len(p.Sites))
	}
	if err := p.Calibrate(); err != nil {
		t.Fatal(err)
	}
	agg, err := NewAggregator(p)
	if err != nil {
		t.Fatal(err)
	}
	m := &manual{t: t, agg: agg, sites: map[uint32]*Site{}, down: []Message{agg.Offer()}}
	for _, s := range f.sites {
		info, _ := p.SiteByName(s.Name())
		m.sites[info.ID] = s
	}
	return m
}

// recode sends m through MarshalBinary and Unmarshal.
func recode(t *testing.T, m Message) Message {
	t.Helper()
	b, err := m.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	out, err := Unmarshal(b)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// deliver hands the pending down messages to their sites and returns their
// answers by site (answers are not yet given to the aggregator).
func (m *manual) deliver() map[uint32]Message {
	m.t.Helper()
	out := map[uint32]Message{}
	for _, d := range m.down {
		for id, s := range m.sites {
			if to := d.Party(); to != 0 && to != id {
				continue
			}
			ans, err := s.Handle(context.Background(), recode(m.t, d))
			if err != nil {
				m.t.Fatalf("site %d: %v", id, err)
			}
			out[id] = recode(m.t, ans)
		}
	}
	m.last = out
	return out
}

// step delivers, gives every answer to the aggregator and closes the round.
func (m *manual) step() {
	m.t.Helper()
	for _, a := range m.deliver() {
		if err := m.agg.Receive(a); err != nil {
			m.t.Fatal(err)
		}
	}
	msgs, err := m.agg.Close(context.Background())
	if err != nil {
		m.t.Fatal(err)
	}
	m.down = msgs
}

func smallFixture(t *testing.T, o fixtureOptions) *fixture {
	d := 3
	rows := syntheticRows(regress.Linear, 1500, d, mrand.New(mrand.NewPCG(21, 22)))
	return newFixture(t, split(rows, d+1, []int{500, 500, 500}), d, o)
}

// TestParamsMismatchRefused: a site whose configuration differs refuses the
// Offer naming the field; the aggregator ends the fit with that reason; a
// Hello that disagrees with the Params (schema fingerprint, N, hash) is
// refused too.
func TestParamsMismatchRefused(t *testing.T) {
	cases := []struct {
		field string
		cfg   func(c *SiteConfig)
	}{
		{"epsilon", func(c *SiteConfig) { c.Epsilon = 0.9 }},
		{"delta", func(c *SiteConfig) { c.Delta = 1e-6 }},
		{"schema fingerprint", func(c *SiteConfig) { c.Schema = [32]byte{7} }},
		{"mechanism", func(c *SiteConfig) { c.Mechanism = GaussianFMLocal }},
		{"budget split", func(c *SiteConfig) { c.Split = 0.7 }},
		{"noise ratio R", func(c *SiteConfig) { c.NoiseRatio = 5 }},
		{"colluders S_C", func(c *SiteConfig) { c.MinColluders = 2 }},
		{"number of sites", func(c *SiteConfig) { c.MinSites = 4 }},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			f := smallFixture(t, fixtureOptions{configs: func(i int, c *SiteConfig) {
				if i == 1 {
					tc.cfg(c)
				}
			}})
			_, err := f.run(t, RunOptions{})
			var ref *RefusedError
			if !errors.As(err, &ref) || ref.Site != "site-2" || !strings.Contains(ref.Reason, "parameter "+tc.field) {
				t.Fatalf("want site-2 refusing %q, got %v", tc.field, err)
			}
			for i, l := range f.ledgers {
				if l.count() != 0 {
					t.Errorf("site-%d spent budget", i+1)
				}
			}
		})
	}
	// Every field, through Check.
	f0 := smallFixture(t, fixtureOptions{})
	base := f0.template.Clone()
	base.Session, base.Attempt, base.Colluders = [32]byte{1}, 1, 0
	if err := base.Calibrate(); err != nil {
		t.Fatal(err)
	}
	if err := f0.sites[0].Check(&base); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		field string
		mod   func(p *Params)
	}{
		{"model", func(p *Params) { p.Kind = regress.Logistic }},
		{"features D", func(p *Params) { p.D = 4 }},
		{"sites", func(p *Params) { p.Sites[0].Name = "other" }},
		{"attempt", func(p *Params) { p.Attempt = DefaultMaxAttempts + 1 }},
		{"minimum sites", func(p *Params) { p.MinSites = 1 }},
		{"noise ratio R", func(p *Params) { p.NoiseRatio = math.Nextafter(p.NoiseRatio, 0) }},
	} {
		p := base.Clone()
		tc.mod(&p)
		var mis *MismatchError
		if err := f0.sites[0].Check(&p); !errors.As(err, &mis) || mis.Field != tc.field {
			t.Errorf("%s: %v", tc.field, err)
		}
	}
	// Wrong N in the roster.
	f := smallFixture(t, fixtureOptions{})
	f.template.Sites[0].N++
	if _, err := f.run(t, RunOptions{}); err == nil || !strings.Contains(err.Error(), "rows N of site-1") {
		t.Fatalf("want a refusal of N, got %v", err)
	}
	// Hellos that disagree, given directly to the aggregator.
	for _, tamper := range []struct {
		field string
		mod   func(h *Hello)
	}{
		{"schema fingerprint", func(h *Hello) { h.Schema[0] ^= 1 }},
		{"rows N", func(h *Hello) { h.N++ }},
		{"parameters hash", func(h *Hello) { h.ParamsHash[5] ^= 1 }},
		{"name", func(h *Hello) { h.Name = "site-9" }},
	} {
		f := smallFixture(t, fixtureOptions{})
		m := newManual(t, f, 1, 1)
		ans := m.deliver()
		h := ans[1].(*Hello)
		tamper.mod(h)
		err := m.agg.Receive(recode(t, h))
		var ref *RefusedError
		if !errors.As(err, &ref) || !strings.Contains(ref.Reason, "parameter "+tamper.field) {
			t.Fatalf("%s: want a refusal, got %v", tamper.field, err)
		}
		if _, err := m.agg.Close(context.Background()); err == nil {
			t.Fatalf("%s: the attempt went on", tamper.field)
		}
	}
}

// TestAggregatorRefusesBadMessages: replays from another session,
// duplicates, messages of another round, from a site outside the round, and
// aggregator-to-site messages are refused without changing the state.
func TestAggregatorRefusesBadMessages(t *testing.T) {
	f := smallFixture(t, fixtureOptions{})
	old := newManual(t, f, 1, 1)
	oldHellos := old.deliver()
	m := newManual(t, f, 2, 2)
	hellos := m.deliver()
	if err := m.agg.Receive(oldHellos[1]); err == nil || !strings.Contains(err.Error(), "another session") {
		t.Errorf("replayed Hello of attempt 1: %v", err)
	}
	if err := m.agg.Receive(hellos[1]); err != nil {
		t.Fatal(err)
	}
	if err := m.agg.Receive(hellos[1]); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate Hello: %v", err)
	}
	if err := m.agg.Receive(m.agg.Offer()); err == nil {
		t.Error("an Offer was accepted by the aggregator")
	}
	rel := &Release{Session: m.agg.Params().Session, From: 2, Fixed: []int64{1}}
	if err := m.agg.Receive(rel); err == nil || !strings.Contains(err.Error(), "round Release") {
		t.Errorf("release in round Hello: %v", err)
	}
	stranger := &Hello{Session: m.agg.Params().Session, From: 9, Name: "site-9", N: 1}
	if err := m.agg.Receive(stranger); err == nil || !strings.Contains(err.Error(), "not among the sites") {
		t.Errorf("Hello from a site outside the roster: %v", err)
	}
	for id, h := range hellos {
		if id != 1 {
			if err := m.agg.Receive(h); err != nil {
				t.Fatal(err)
			}
		}
	}
	msgs, err := m.agg.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	m.down = msgs
	if err := m.agg.Receive(hellos[2]); err == nil {
		t.Error("a Hello was accepted in round AdvertiseKeys")
	}
	// Complete the attempt, then refuse a late duplicate release.
	for m.agg.Round() != RoundRelease {
		m.step()
	}
	for _, a := range m.deliver() {
		if err := m.agg.Receive(a); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.agg.Receive(m.last[1]); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate release: %v", err)
	}
	if _, err := m.agg.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := m.agg.Result(); err != nil {
		t.Fatal(err)
	}
}

// TestSiteRefusesBadMessages: replayed and stale offers, messages of
// another session or round, and a second release request are refused; a
// site releases once per attempt and never reuses its zero-sum draw.
func TestSiteRefusesBadMessages(t *testing.T) {
	f := smallFixture(t, fixtureOptions{})
	s := f.sites[0]
	ctx := context.Background()
	m1 := newManual(t, f, 1, 1)
	m1.step() // Hello → Agreed
	m1.step() // AdvertiseKeys → KeyRoster
	m1.step() // ShareKeys → ShareRelay
	m1.step() // MaskedInput → UnmaskRequest: every ê_s has been sent masked
	offer1 := m1.agg.Offer()
	if _, err := s.Handle(ctx, offer1); err == nil || !strings.Contains(err.Error(), "replay") {
		t.Errorf("replayed offer: %v", err)
	}
	keyRosterLike := m1.down[0]
	if _, err := s.Handle(ctx, &Agreed{Session: offer1.Params.Session}); err == nil || !strings.Contains(err.Error(), "unexpected agreed") {
		t.Errorf("Agreed in round Unmasking: %v", err)
	}
	zs1 := s.att.zs
	// A new attempt abandons attempt 1: its draw can never be used again.
	m2 := newManual(t, f, 2, 2)
	m2.step()
	if s.att.zs == zs1 {
		t.Fatal("attempt 2 reuses attempt 1's zero-sum draw")
	}
	cfg, _ := cape.SecAggConfig(m1.agg.Calibration().ZeroSum, offer1.Params.Session[:])
	if _, err := zs1.NewParty(cfg); !errors.Is(err, cape.ErrNoiseSpent) {
		t.Errorf("attempt 1's draw offered to a session again: %v", err)
	}
	if _, err := s.Handle(ctx, keyRosterLike); err == nil || !strings.Contains(err.Error(), "another session") {
		t.Errorf("attempt 1's message in attempt 2: %v", err)
	}
	if _, err := s.Handle(ctx, offer1); err == nil {
		t.Error("the offer of attempt 1 was accepted again")
	}
	stale := newManual(t, f, 1, 3).agg.Offer()
	if _, err := s.Handle(ctx, stale); err == nil || !strings.Contains(err.Error(), "stale") {
		t.Errorf("offer for an older attempt number: %v", err)
	}
	if _, err := s.Handle(ctx, &Hello{Session: m2.agg.Params().Session, From: 1, Name: "site-1"}); err == nil {
		t.Error("a site accepted a site-to-aggregator message")
	}
	for m2.agg.Round() != RoundRelease {
		m2.step()
	}
	sum := m2.down[0].(*SumBroadcast)
	m2.deliver()
	if _, err := s.Handle(ctx, recode(t, sum)); err == nil || !strings.Contains(err.Error(), "unexpected sum-broadcast") {
		t.Errorf("second release request: %v", err)
	}
	if n := f.ledgers[0].count(); n != 1 || s.Releases() != 1 {
		t.Errorf("site-1 charged %d times, released %d times; want once", n, s.Releases())
	}
	// A partial sum (a site missing from the included set) is refused. (The
	// next attempt must list attempt 2's release among the prior ones, or
	// the sites that released in it refuse.)
	f.template.Prior = []float64{m2.agg.Calibration().Eta}
	m3 := newManual(t, f, 3, 4)
	for m3.agg.Round() != RoundRelease {
		m3.step()
	}
	partial := m3.down[0].(*SumBroadcast)
	partial.Included = partial.Included[:2]
	if _, err := f.sites[2].Handle(ctx, recode(t, partial)); !errors.Is(err, cape.ErrNoiseDoesNotCancel) {
		t.Errorf("partial sum: %v", err)
	}
	if f.ledgers[2].count() != 1 {
		t.Error("site-3 spent budget on a partial sum")
	}
}

// TestLedgerRefusal: a site whose ledger cannot pay releases nothing; with a
// LedgerChecker it refuses at the Offer, before anyone spends.
func TestLedgerRefusal(t *testing.T) {
	f := smallFixture(t, fixtureOptions{configs: func(i int, c *SiteConfig) {
		if i == 2 {
			c.Ledger = &memLedger{budget: 0.5}
		}
	}})
	_, err := f.run(t, RunOptions{})
	var ab *AbortError
	if !errors.As(err, &ab) || !ab.NoiseFixed || ab.Missing[0] != "site-3" {
		t.Fatalf("want an abort naming site-3, got %v", err)
	}
	f = smallFixture(t, fixtureOptions{configs: func(i int, c *SiteConfig) {
		if i == 2 {
			c.Ledger = &checkedLedger{memLedger{budget: 0.5}}
		}
	}})
	_, err = f.run(t, RunOptions{})
	var ref *RefusedError
	if !errors.As(err, &ref) || ref.Site != "site-3" || !strings.Contains(ref.Reason, "budget") {
		t.Fatalf("want site-3 refusing for budget, got %v", err)
	}
	for i, l := range f.ledgers[:2] {
		if l.count() != 0 {
			t.Errorf("site-%d spent budget", i+1)
		}
	}
}

type checkedLedger struct{ memLedger }

func (l *checkedLedger) CanCharge(eps, delta float64) error {
	if l.budget > 0 && l.eps+eps > l.budget {
		return errors.New("over budget")
	}
	return nil
}

// TestNoDataInReport: two different datasets with the same public sizes and
// the same noise seeds give identical reports; the printed guarantee is
// recomputed from the printed numbers by accounting.CAPEDeltaExact.
func TestNoDataInReport(t *testing.T) {
	d := 4
	sizes := []int{300, 700, 1000, 1000, 2000}
	var texts []string
	for i, kind := range []regress.Kind{regress.Linear, regress.Linear} {
		rows := syntheticRows(kind, 5000, d, mrand.New(mrand.NewPCG(uint64(100+i), 1)))
		f := newFixture(t, split(rows, d+1, sizes), d, fixtureOptions{seed: 77, eps: 0.7, delta: 1e-6})
		res, err := f.run(t, RunOptions{NewSession: func() ([32]byte, error) { return [32]byte{5}, nil }})
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := res.Privacy.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, b.String())
		if i == 0 {
			checkPrintedGuarantee(t, &res.Privacy, b.String())
		}
	}
	if texts[0] != texts[1] {
		t.Errorf("reports differ between datasets:\n%s\n---\n%s", texts[0], texts[1])
	}
	if testing.Verbose() {
		t.Log("\n" + texts[0])
	}
}

var (
	reS     = regexp.MustCompile(`S = (\d+) sites, S_C = (\d+), noise ratio R = Var ê/Var g = ([0-9.e+-]+), τ = ([0-9.e+-]+) `)
	reDelta = regexp.MustCompile(`Δ_h = ([0-9.e+-]+) `)
	reGuar  = regexp.MustCompile(`guarantee:\s+\(([0-9.e+-]+), ([0-9.e+-]+)\)-DP`)
)

func checkPrintedGuarantee(t *testing.T, p *report.Privacy, text string) {
	t.Helper()
	ms, md, mg := reS.FindStringSubmatch(text), reDelta.FindStringSubmatch(text), reGuar.FindStringSubmatch(text)
	if ms == nil || md == nil || mg == nil {
		t.Fatalf("report lacks the printed figures:\n%s", text)
	}
	S, _ := strconv.Atoi(ms[1])
	SC, _ := strconv.Atoi(ms[2])
	ratio, _ := strconv.ParseFloat(ms[3], 64)
	tau, _ := strconv.ParseFloat(ms[4], 64)
	sens, _ := strconv.ParseFloat(md[1], 64)
	eps, _ := strconv.ParseFloat(mg[1], 64)
	delta, _ := strconv.ParseFloat(mg[2], 64)
	got, err := accounting.CAPEDeltaExact(accounting.CAPEParams{Sites: S, Colluders: SC, Tau: tau, NoiseRatio: ratio, Sensitivity: sens}, eps)
	if err != nil {
		t.Fatal(err)
	}
	if got > delta {
		t.Errorf("printed (%v, %v)-DP, but CAPEDeltaExact of the printed S=%d S_C=%d R=%v τ=%v Δ_h=%v gives δ = %v", eps, delta, S, SC, ratio, tau, sens, got)
	}
	if delta > 1e-6 || got < 0.99*delta {
		t.Errorf("printed δ %v vs recomputed %v (target 1e-6)", delta, got)
	}
	if strings.Contains(text, "as published") && !strings.Contains(text, "not a guarantee") {
		t.Error("the seed's figure is printed as a guarantee")
	}
}

// TestMessagesRoundTrip encodes every message type, decodes it, and checks
// that truncations and a trailing byte are refused.
func TestMessagesRoundTrip(t *testing.T) {
	for _, b := range sampleMessages(t) {
		m, err := Unmarshal(b)
		if err != nil {
			t.Fatalf("%x: %v", b[:2], err)
		}
		again, err := m.MarshalBinary()
		if err != nil || string(again) != string(b) {
			t.Fatalf("%s: re-encoding differs (%v)", m.Type(), err)
		}
		for n := 0; n < len(b); n++ {
			if _, err := Unmarshal(b[:n]); !errors.Is(err, ErrMalformed) {
				t.Fatalf("%s truncated to %d of %d bytes: %v", m.Type(), n, len(b), err)
			}
		}
		if _, err := Unmarshal(append(b, 0)); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s with a trailing byte: %v", m.Type(), err)
		}
		bad := append([]byte(nil), b...)
		bad[0] = wireVersion + 1
		if _, err := Unmarshal(bad); !errors.Is(err, ErrMalformed) {
			t.Fatalf("%s with version %d: %v", m.Type(), bad[0], err)
		}
	}
}

// sampleMessages returns the encoding of every message type of a real run.
func sampleMessages(t testing.TB) [][]byte {
	d := 2
	rows := syntheticRows(regress.Linear, 90, d, mrand.New(mrand.NewPCG(1, 2)))
	f := newFixture(t, split(rows, d+1, []int{30, 30, 30}), d, fixtureOptions{})
	var out [][]byte
	seen := map[string]bool{}
	opt := RunOptions{Observe: func(m Message) {
		if seen[m.Type()] {
			return
		}
		seen[m.Type()] = true
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}}
	if _, err := Run(context.Background(), f.template, f.sites, opt); err != nil {
		t.Fatal(err)
	}
	extra := []Message{
		&Refuse{Session: [32]byte{1}, From: 2, Name: "site-2", Reason: "parameter epsilon"},
		&Release{Session: [32]byte{1}, From: 2, Values: []float64{0.5, -1}},
		&SumBroadcast{Session: [32]byte{1}, Included: []uint32{1, 2}},
		&Announce{Name: "site-2", N: 30, Schema: testSchema, Secure: true},
		&Outcome{Session: [32]byte{1}, OK: true, Text: "model published: (1, 1e-05)-DP per site"},
		&Outcome{Text: "refusé: schéma différent"},
	}
	for _, m := range extra {
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	if len(seen) != 12 {
		t.Fatalf("saw %d message types in a run: %v", len(seen), seen)
	}
	return out
}

// FuzzUnmarshal: decoding never panics, and whatever decodes re-encodes to
// the same bytes (so trailing or non-canonical bytes are refused).
func FuzzUnmarshal(f *testing.F) {
	for _, b := range sampleMessages(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := Unmarshal(b)
		if err != nil {
			if !errors.Is(err, ErrMalformed) {
				t.Fatalf("error not wrapping ErrMalformed: %v", err)
			}
			return
		}
		again, err := m.MarshalBinary()
		if err != nil {
			t.Fatalf("%s decoded but does not re-encode: %v", m.Type(), err)
		}
		if string(again) != string(b) {
			t.Fatalf("%s: decoded message re-encodes differently", m.Type())
		}
		_ = m.Round()
		_ = m.Party()
		_ = m.SessionID()
	})
}

// TestParamsEncoding: canonical, hashed, strict.
func TestParamsEncoding(t *testing.T) {
	f := smallFixture(t, fixtureOptions{})
	p := f.template.Clone()
	p.Session, p.Attempt, p.Colluders = [32]byte{3}, 2, 0
	p.Prior = []float64{0.25}
	if err := p.Calibrate(); err != nil {
		t.Fatal(err)
	}
	b, err := p.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var q Params
	if err := q.UnmarshalBinary(b); err != nil {
		t.Fatal(err)
	}
	h1, _ := p.Hash()
	h2, _ := q.Hash()
	if h1 != h2 {
		t.Fatal("hash changed through the encoding")
	}
	r := q.Clone()
	r.NoiseRatio = 99
	if h4, _ := r.Hash(); h4 == h1 {
		t.Fatal("hash ignores the noise ratio")
	}
	q.Epsilon = math.Nextafter(q.Epsilon, 2)
	if h3, _ := q.Hash(); h3 == h1 {
		t.Fatal("hash ignores ε")
	}
	if err := q.UnmarshalBinary(append(b, 1)); err == nil {
		t.Fatal("trailing byte accepted")
	}
	// A τ below the calibration is refused by Calibration (every site checks).
	p.Tau *= 0.99
	if _, err := p.Calibration(); err == nil || !strings.Contains(err.Error(), "above the agreed δ") {
		t.Fatalf("τ too small accepted: %v", err)
	}
	// Too many colluders for secure aggregation.
	p.Tau /= 0.99
	p.Colluders = secagg.DefaultThreshold(3)
	if err := p.Validate(); err == nil {
		t.Fatal("S_C ≥ threshold accepted")
	}
}

// TestValidateData refuses statistics and rows no schema encoding produces.
func TestValidateData(t *testing.T) {
	rows := []float64{0.5, 0.5, 0.2, 0.5, -0.5, 1}
	ok := regress.Data{Stats: statsOf(t, rows, 3), Rows: rows}
	if err := ValidateData(regress.Linear, ok); err != nil {
		t.Fatal(err)
	}
	if err := ValidateData(regress.Logistic, ok); err == nil {
		t.Error("non-0/1 target accepted for logistic")
	}
	big := []float64{1, 1, 0.2}
	if err := ValidateData(regress.Linear, regress.Data{Stats: statsOf(t, big, 3)}); err == nil {
		t.Error("‖x‖ > 1 accepted")
	}
	bad := []float64{0.5, 0.5, 0.2, 0.5, -0.5, 2}
	if err := ValidateData(regress.Linear, regress.Data{Stats: statsOf(t, []float64{0.5, 0.5, 0.2, 0.5, -0.5, 0.5}, 3), Rows: bad}); err == nil {
		t.Error("row with |y| > 1 accepted")
	}
	if _, err := NewSite(SiteConfig{Name: "x", Mechanism: NoisyGDLocal, Kind: regress.Linear, Epsilon: 1, Delta: 1e-5,
		Source: f64src(), Ledger: &memLedger{}}, regress.Data{Stats: ok.Stats}); err == nil {
		t.Error("noisygd-local without rows accepted")
	}
}

// TestMessageSizes checks the byte counts stated in the package
// documentation: per site, upload 16L + 135S + 301 + len(name) + A_s and
// download 8L + 200S + 333 + Σ len(names) + Σ A + 8·len(Prior) + len(Unit) bytes of
// payload, where A_s is site s's key signature and certificate.
func TestMessageSizes(t *testing.T) {
	for _, tc := range []struct{ S, D int }{{3, 2}, {5, 20}} {
		rows := syntheticRows(regress.Linear, 100*tc.S, tc.D, mrand.New(mrand.NewPCG(1, 2)))
		sizes := make([]int, tc.S)
		for i := range sizes {
			sizes[i] = 100
		}
		f := newFixture(t, split(rows, tc.D+1, sizes), tc.D, fixtureOptions{})
		up, down, auth := map[uint32]int{}, map[uint32]int{}, map[uint32]int{}
		opt := RunOptions{Observe: func(m Message) {
			b, _ := m.MarshalBinary()
			if x, ok := m.(*SecAgg); ok && m.Type() == "advertise-keys" {
				if len(x.Auth) != 1 || len(x.Auth[0].Cert) == 0 || len(x.Auth[0].Sig) == 0 {
					t.Errorf("site %d advertised unsigned keys", m.Party())
				} else {
					auth[m.Party()] = len(x.Auth[0].Cert) + len(x.Auth[0].Sig)
				}
			}
			switch {
			case m.Upstream():
				up[m.Party()] += len(b)
			case m.Party() != 0:
				down[m.Party()] += len(b)
			default:
				for id := uint32(1); id <= uint32(tc.S); id++ {
					down[id] += len(b)
				}
			}
		}}
		if _, err := Run(context.Background(), f.template, f.sites, opt); err != nil {
			t.Fatal(err)
		}
		L := tc.D + tc.D*(tc.D+1)/2
		names, auths := 0, 0
		for _, s := range f.template.Sites {
			names += len(s.Name)
			auths += auth[s.ID]
		}
		for id := uint32(1); id <= uint32(tc.S); id++ {
			wantUp := 16*L + 135*tc.S + 301 + len("site-1") + auth[id]
			wantDown := 8*L + 200*tc.S + 333 + names + auths
			if up[id] != wantUp || down[id] != wantDown {
				t.Errorf("S=%d D=%d site %d: up %d (formula %d), down %d (formula %d)", tc.S, tc.D, id, up[id], wantUp, down[id], wantDown)
			}
		}
		t.Logf("S=%d D=%d (L=%d): %d bytes up, %d down per site (key signature and certificate: %d bytes)", tc.S, tc.D, L, up[1], down[1], auth[1])
	}
}

// bigStats are the statistics of n all-zero rows: valid for any n, so a
// site can claim a table too large for the fixed point.
type bigStats struct {
	k int
	n int64
}

func (b bigStats) K() int              { return b.k }
func (b bigStats) N() int64            { return b.n }
func (b bigStats) Sum(int) float64     { return 0 }
func (b bigStats) At(int, int) float64 { return 0 }

// TestFixedPointRange: the larger zero-sum draw of a large noise ratio
// still fits the 64-bit fixed point for realistic problems (every R up to
// MaxNoiseRatio at N = 5·10⁶, D = 100), and a problem that does not fit is
// refused by the aggregator's calibration and by every site when it is
// offered, before anything is drawn or spent.
func TestFixedPointRange(t *testing.T) {
	mk := func(n int64, d int, ratio float64) Params {
		roster, _ := Roster([]string{"site-1", "site-2", "site-3", "site-4", "site-5"}, []int64{n, n, n, n, n})
		return Params{Session: [32]byte{9}, Attempt: 1, Mechanism: CapeFM, Kind: regress.Linear, Schema: testSchema, D: d,
			Epsilon: 1, Delta: 1e-5, Split: 0.5, Sites: roster, Colluders: 1, MinSites: 2, NoiseRatio: ratio}
	}
	for _, ratio := range []float64{5, DefaultNoiseRatio, 1e4, MaxNoiseRatio} {
		p := mk(1e6, 100, ratio)
		if err := p.Calibrate(); err != nil {
			t.Fatalf("R = %g: %v", ratio, err)
		}
		c, err := p.Calibration()
		if err != nil {
			t.Fatalf("R = %g: %v", ratio, err)
		}
		// The sum of S shares of ê at 128 τ and the releases stay below 2^62.
		if got := float64(c.S) * 128 * c.Tau * math.Ldexp(1, int(c.FracBits)); got > 1<<62 {
			t.Errorf("R = %g: ê range %g units", ratio, got)
		}
	}
	p := mk(1e9, 100, DefaultNoiseRatio)
	err := p.Calibrate()
	if err == nil {
		_, err = p.Calibration()
	}
	if err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("N = 5·10⁹, D = 100: want a refusal, got %v", err)
	}
	// A site offered such Params refuses before drawing or spending (δ
	// below 1/N, so that the refusal is the fixed point's).
	p.Tau, p.Delta = 200, 1e-11
	led := &memLedger{}
	site, err := NewSite(SiteConfig{Name: "site-1", Mechanism: CapeFM, Kind: regress.Linear, Schema: testSchema,
		Epsilon: 1, Delta: 1e-11, Source: f64src(), Ledger: led, Signer: testSigner(t, testCA(t), "site-1")}, regress.Data{Stats: bigStats{k: 101, n: 1e9}})
	if err != nil {
		t.Fatal(err)
	}
	ans, err := site.Handle(context.Background(), &Offer{Params: p})
	if _, ok := ans.(*Refuse); !ok || err == nil || !strings.Contains(err.Error(), "not supported") {
		t.Fatalf("site answered %T, %v", ans, err)
	}
	if led.count() != 0 || site.Releases() != 0 {
		t.Fatal("the site spent budget")
	}
}
