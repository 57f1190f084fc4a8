package capenet

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/suffstat"
	"github.com/dplearn/dplearn/transport"
)

var testSchema = [32]byte{4, 2}

// synthetic returns n schema-encoded linear rows with d features (the
// first the intercept): ‖x‖ ≤ 1, y ∈ [−1, 1]. Test data: math/rand.
func synthetic(n, d int, seed uint64) []float64 {
	rng := mrand.New(mrand.NewPCG(seed, 7))
	k := d + 1
	w := make([]float64, d)
	for j := range w {
		w[j] = rng.Float64()*2 - 1
	}
	rows := make([]float64, n*k)
	s := 1 / math.Sqrt(float64(d))
	for r := 0; r < n; r++ {
		row := rows[r*k : (r+1)*k]
		row[0] = s
		dot := s * w[0]
		for j := 1; j < d; j++ {
			row[j] = (rng.Float64()*2 - 1) * s
			dot += row[j] * w[j]
		}
		row[d] = math.Max(-1, math.Min(1, dot+0.1*rng.NormFloat64()))
	}
	return rows
}

func stats(t testing.TB, rows []float64, k int) *suffstat.Moments {
	t.Helper()
	m := suffstat.New(k)
	if err := m.AddRows(rows); err != nil {
		t.Fatal(err)
	}
	m.Flush()
	return m
}

type countLedger struct {
	mu sync.Mutex
	n  int
}

func (l *countLedger) Charge(string, float64, float64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n++
	return nil
}

func (l *countLedger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.n
}

// party is one site of a test fit.
type party struct {
	name   string
	id     *certs.Party // its certificate from the setup's CA
	site   *capefm.Site
	ledger *countLedger
}

// fitSetup is S sites with equal shares of synthetic data.
type fitSetup struct {
	d        int
	ca       *certs.CA // the deployment's CA: every site's certificate
	parties  []*party
	template capefm.Params
}

func newSetup(t testing.TB, S, d, perSite int, cfg func(i int, c *capefm.SiteConfig)) *fitSetup {
	t.Helper()
	rows := synthetic(S*perSite, d, uint64(S*1000+d))
	k := d + 1
	ca, err := certs.NewCA(certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fitSetup{d: d, ca: ca}
	var roster []capefm.SiteInfo
	for i := range S {
		name := fmt.Sprintf("site-%d", i+1)
		led := &countLedger{}
		id, err := ca.IssueParty(name, certs.Options{})
		if err != nil {
			t.Fatal(err)
		}
		signer, err := certs.NewStatementSigner(id)
		if err != nil {
			t.Fatal(err)
		}
		c := capefm.SiteConfig{Name: name, Mechanism: capefm.CapeFM, Kind: regress.Linear, Schema: testSchema,
			Epsilon: 1, Delta: 1e-5, Source: noise.NewInsecureSeeded(uint64(100 + i)), Ledger: led, Signer: signer}
		if cfg != nil {
			cfg(i, &c)
		}
		site, err := capefm.NewSite(c, regress.Data{Stats: stats(t, rows[i*perSite*k:(i+1)*perSite*k], k)})
		if err != nil {
			t.Fatal(err)
		}
		f.parties = append(f.parties, &party{name: name, id: id, site: site, ledger: led})
		roster = append(roster, capefm.SiteInfo{Name: name, ID: uint32(i + 1)})
	}
	f.template = capefm.Params{Mechanism: capefm.CapeFM, Kind: regress.Linear, Schema: testSchema, D: d,
		Epsilon: 1, Delta: 1e-5, Split: 0.5, Sites: roster, Colluders: -1, MinSites: 2}
	return f
}

func (f *fitSetup) names() []string {
	out := make([]string, len(f.parties))
	for i, p := range f.parties {
		out[i] = p.name
	}
	return out
}

// eventLog collects events for assertions.
type eventLog struct {
	mu  sync.Mutex
	evs []Event
	t   testing.TB
}

func (l *eventLog) sink(prefix string) func(Event) {
	return func(e Event) {
		l.mu.Lock()
		defer l.mu.Unlock()
		l.evs = append(l.evs, e)
		if testing.Verbose() {
			l.t.Logf("%s%s", prefix, e.Message)
		}
	}
}

func (l *eventLog) find(kind, contains string) *Event {
	l.mu.Lock()
	defer l.mu.Unlock()
	for i := range l.evs {
		if l.evs[i].Kind == kind && strings.Contains(l.evs[i].Message, contains) {
			e := l.evs[i]
			return &e
		}
	}
	return nil
}

func (l *eventLog) all() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var b strings.Builder
	for _, e := range l.evs {
		b.WriteString(e.Kind + ": " + e.Message + "\n")
	}
	return b.String()
}

var quiet = slog.New(slog.DiscardHandler)

// memoryFit runs Serve and one Join per party over an in-memory hub.
// dial may change the name a party dials with; joinOpt adjusts a party's
// options. It returns Serve's result and each party's Join error.
func memoryFit(t *testing.T, f *fitSetup, opt ServeOptions, dial func(i int) string, joinOpt func(i int, conn transport.Conn, o *JoinOptions)) (*capefm.RunResult, error, []error, *eventLog) {
	t.Helper()
	return memoryFitWrapped(t, f, opt, nil, dial, joinOpt)
}

// memoryFitWrapped is memoryFit with the aggregator's hub wrapped (a
// misbehaving aggregator's transport), if wrap is not nil.
func memoryFitWrapped(t *testing.T, f *fitSetup, opt ServeOptions, wrap func(transport.Hub) transport.Hub, dial func(i int) string, joinOpt func(i int, conn transport.Conn, o *JoinOptions)) (*capefm.RunResult, error, []error, *eventLog) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cfg := HubConfig(f.names(), f.d)
	cfg.Name, cfg.Logger = DefaultHubName, quiet
	hub, err := transport.NewMemory(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer hub.Close()
	log := &eventLog{t: t}
	opt.Events = log.sink("aggregator: ")
	if opt.RoundTimeout == 0 {
		opt.RoundTimeout = 10 * time.Second
	}
	if opt.ReconnectGrace == 0 {
		opt.ReconnectGrace = 100 * time.Millisecond
	}
	errs := make([]error, len(f.parties))
	var wg sync.WaitGroup
	for i, p := range f.parties {
		name := p.name
		if dial != nil {
			name = dial(i)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := hub.Dial(ctx, name)
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Close()
			o := JoinOptions{Events: log.sink(p.name + ": "), IdleTimeout: 30 * time.Second}
			if joinOpt != nil {
				joinOpt(i, conn, &o)
			}
			_, errs[i] = Join(ctx, conn, p.site, o)
		}()
	}
	var aggHub transport.Hub = hub
	if wrap != nil {
		aggHub = wrap(hub)
	}
	res, serr := Serve(ctx, aggHub, f.template, opt)
	wg.Wait()
	return res, serr, errs, log
}

func slogOf(sink func(Event)) *slog.Logger { return slog.New(SlogHandler(sink)) }
