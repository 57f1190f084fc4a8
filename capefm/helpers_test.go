package capefm

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	mrand "math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/exampledata"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

// memLedger is an in-memory Ledger for tests; budget ≤ 0 means unlimited.
type memLedger struct {
	mu      sync.Mutex
	budget  float64
	charges []string
	eps     float64
}

func (l *memLedger) Charge(label string, eps, delta float64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.budget > 0 && l.eps+eps > l.budget {
		return fmt.Errorf("over budget: spent %v of %v", l.eps, l.budget)
	}
	l.eps += eps
	l.charges = append(l.charges, label)
	return nil
}

func (l *memLedger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.charges)
}

// syntheticRows draws n encoded rows with d features (the first is the
// intercept) for a linear or logistic model: ‖x‖ ≤ 1, y ∈ [−1, 1] or
// {0, 1}. Test data, not privacy noise: math/rand is fine here.
func syntheticRows(kind regress.Kind, n, d int, rng *mrand.Rand) []float64 {
	k := d + 1
	rows := make([]float64, n*k)
	w := make([]float64, d)
	for j := range w {
		w[j] = rng.Float64()*2 - 1
	}
	for r := 0; r < n; r++ {
		row := rows[r*k : (r+1)*k]
		row[0] = 1
		for j := 1; j < d; j++ {
			row[j] = rng.Float64()*2 - 1
		}
		s := 1 / math.Sqrt(float64(d))
		dot := 0.0
		for j := 0; j < d; j++ {
			row[j] *= s
			dot += row[j] * w[j]
		}
		switch kind {
		case regress.Linear:
			row[d] = math.Max(-1, math.Min(1, dot+0.1*rng.NormFloat64()))
		case regress.Logistic:
			if rng.Float64() < 1/(1+math.Exp(-4*dot)) {
				row[d] = 1
			}
		}
	}
	return rows
}

func statsOf(t testing.TB, rows []float64, k int) *suffstat.Moments {
	t.Helper()
	st := suffstat.New(k)
	if err := st.AddRows(rows); err != nil {
		t.Fatal(err)
	}
	st.Flush()
	return st
}

var testSchema = [32]byte{1, 2, 3}

// fixture is S sites over given rows with a common configuration.
type fixture struct {
	template Params
	ca       *certs.CA // issued every site's certificate
	sites    []*Site
	ledgers  []*memLedger
	rows     [][]float64
}

type fixtureOptions struct {
	mech    Mechanism
	kind    regress.Kind
	eps     float64
	delta   float64
	seed    uint64
	secure  bool
	noRows  bool
	configs func(i int, c *SiteConfig)
}

func newFixture(t testing.TB, parts [][]float64, d int, o fixtureOptions) *fixture {
	t.Helper()
	if o.mech == "" {
		o.mech = CapeFM
	}
	if o.kind == "" {
		o.kind = regress.Linear
	}
	if o.eps == 0 {
		o.eps = 1
	}
	if o.delta == 0 {
		o.delta = 1e-5
	}
	ca := testCA(t)
	f := &fixture{rows: parts, ca: ca}
	var names []string
	var ns []int64
	for i, rows := range parts {
		name := fmt.Sprintf("site-%d", i+1)
		st := statsOf(t, rows, d+1)
		var src noise.Source = noise.NewInsecureSeeded(o.seed*1000 + uint64(i))
		if o.secure {
			src = noise.NewSecure()
		}
		led := &memLedger{}
		cfg := SiteConfig{Name: name, Mechanism: o.mech, Kind: o.kind, Schema: testSchema,
			Epsilon: o.eps, Delta: o.delta, Source: src, Ledger: led}
		if o.mech == CapeFM {
			cfg.Signer = testSigner(t, ca, name)
		}
		if o.configs != nil {
			o.configs(i, &cfg)
		}
		data := regress.Data{Stats: st, Rows: rows}
		if o.noRows {
			data.Rows = nil
		}
		s, err := NewSite(cfg, data)
		if err != nil {
			t.Fatal(err)
		}
		f.sites = append(f.sites, s)
		f.ledgers = append(f.ledgers, led)
		names = append(names, name)
		ns = append(ns, st.N())
	}
	roster, err := Roster(names, ns)
	if err != nil {
		t.Fatal(err)
	}
	f.template = Params{Mechanism: o.mech, Kind: o.kind, Schema: testSchema, D: d,
		Epsilon: o.eps, Delta: o.delta, Split: 0.5, Sites: roster, Colluders: -1, MinSites: 2}
	return f
}

// pooledObjective returns the exact average objective over all the rows.
func (f *fixture) pooledObjective(t testing.TB) *regress.Quadratic {
	t.Helper()
	k := f.template.D + 1
	st := suffstat.New(k)
	for _, r := range f.rows {
		if err := st.AddRows(r); err != nil {
			t.Fatal(err)
		}
	}
	st.Flush()
	q, err := regress.Objective(f.template.Kind, st)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func (f *fixture) run(t testing.TB, opt RunOptions) (*RunResult, error) {
	t.Helper()
	if opt.RoundTimeout == 0 {
		opt.RoundTimeout = 10 * time.Second
	}
	if testing.Verbose() && opt.Logger == nil {
		opt.Logger = slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return Run(context.Background(), f.template, f.sites, opt)
}

// split cuts rows (k per row) into parts of the given sizes.
func split(rows []float64, k int, sizes []int) [][]float64 {
	var out [][]float64
	at := 0
	for _, n := range sizes {
		out = append(out, rows[at*k:(at+n)*k])
		at += n
	}
	return out
}

// loadExample encodes an embedded dataset.
func loadExample(t testing.TB, name string) (*schema.Schema, *dataset.Table) {
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
	return s, tab
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

func f64src() noise.Source { return noise.NewInsecureSeeded(1) }

// testCA returns a fresh CA (the deployment's: every site's certificate is
// issued by it).
func testCA(t testing.TB) *certs.CA {
	t.Helper()
	ca, err := certs.NewCA(certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// testSigner issues name's certificate from ca and returns its key signer.
func testSigner(t testing.TB, ca *certs.CA, name string) *certs.StatementSigner {
	t.Helper()
	p, err := ca.IssueParty(name, certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := certs.NewStatementSigner(p)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
