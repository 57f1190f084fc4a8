package regress_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"testing"

	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
)

// goldenFits is the SHA-256 of goldenFitStream: every mechanism of the
// registry, on each model it fits, three seeded fits (noise.
// NewInsecureSeeded(1..3)) of 600 records of an example table, each fit's
// coefficients (their float64 bits) and privacy report (JSON).
//
// A changed digest means some seeded output changed. That may be right (a
// corrected sensitivity, a new default); it must never be silent: explain
// the change in the commit that updates the constant. Regenerate with
//
//	go test ./regress -run TestGoldenFits -v
//
// which prints the new digest when it differs.
const goldenFits = "48d5f0d1a0e2cdef7215cb591e1259a56ac8b1c41069cc553400971a1a6258e0"

// TestGoldenFits checks that seeded fits of every mechanism are unchanged,
// as crypto/mlkem's TestAccumulated checks its outputs: one digest over
// many outputs, compared with a constant.
func TestGoldenFits(t *testing.T) {
	lin := loadNeighbours(t, "CPS1988.csv", "cps1988", 600, `8103.08,20,60,"afam","yes","west","yes"`)
	logi := loadNeighbours(t, "SmokeBan.csv", "smokeban", 600, `"no","yes",90,"master","yes","yes","male"`)
	h := sha256.New()
	for _, m := range regress.Registry() {
		for _, kind := range m.Kinds {
			ds := lin
			if kind == regress.Logistic {
				ds = logi
			}
			for seed := uint64(1); seed <= 3; seed++ {
				est, err := regress.New(m.Name)
				if err != nil {
					t.Fatal(err)
				}
				est = regress.WithSchema(est, ds.schema)
				cfg := regress.Config{Kind: kind, Lambda: -1, Source: noise.NewInsecureSeeded(seed)}
				if m.Privacy.TakesEpsilon() {
					cfg.Epsilon = 1
				}
				if m.Privacy.TakesDelta() {
					cfg.Delta = 1e-6
				}
				if cfg.Structure, err = regress.GramStructureFor(ds.schema); err != nil {
					t.Fatal(err)
				}
				res, err := est.Fit(context.Background(), ds.data[0], cfg)
				if err != nil {
					t.Fatalf("%s %s seed %d: %v", m.Name, kind, seed, err)
				}
				h.Write([]byte(m.Name + "/" + string(kind) + "\x00"))
				for _, c := range res.Coef {
					h.Write(binary.BigEndian.AppendUint64(nil, math.Float64bits(c)))
				}
				p, err := json.Marshal(res.Privacy)
				if err != nil {
					t.Fatal(err)
				}
				h.Write(p)
			}
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != goldenFits {
		t.Errorf("seeded fits changed: digest %s, want %s (see goldenFits: explain the change in the commit)", got, goldenFits)
	}
}

// TestRegistryStatesRho fits every private mechanism of the registry on
// each model it fits and checks that its report agrees with the registry's
// StatesRho, the rule `dplearn fit --ledger` uses to take or refuse a
// ρ-zCDP ledger before reading the data: a mechanism said to state ρ must
// report ρ > 0 or be pure ε-DP (δ = 0), and one said not to must report
// no ρ and a δ > 0 (else the refusal would turn away a chargeable fit).
// noisygd is fitted with full and Poisson batches, the two sides of its
// rule.
func TestRegistryStatesRho(t *testing.T) {
	lin := loadNeighbours(t, "CPS1988.csv", "cps1988", 600, `8103.08,20,60,"afam","yes","west","yes"`)
	logi := loadNeighbours(t, "SmokeBan.csv", "smokeban", 600, `"no","yes",90,"master","yes","yes","male"`)
	seen := map[bool]int{}
	for _, m := range regress.Registry() {
		est, err := regress.New(m.Name)
		if err != nil {
			t.Fatal(err)
		}
		if !est.Private() {
			continue
		}
		batches := []float64{0}
		if m.Reads("batch-rate") {
			batches = append(batches, 0.5)
		}
		for _, kind := range m.Kinds {
			ds := lin
			if kind == regress.Logistic {
				ds = logi
			}
			for _, q := range batches {
				cfg := regress.Config{Kind: kind, Lambda: -1, Epsilon: 1, Source: noise.NewInsecureSeeded(1)}
				if m.Privacy.TakesDelta() {
					cfg.Delta = 1e-6
				}
				cfg.NoisyGD.BatchRate = q
				if q > 0 {
					cfg.NoisyGD.Iterations = 20
				}
				if cfg.Structure, err = regress.GramStructureFor(ds.schema); err != nil {
					t.Fatal(err)
				}
				res, err := regress.WithSchema(est, ds.schema).Fit(context.Background(), ds.data[0], cfg)
				if err != nil {
					t.Fatalf("%s %s q=%v: %v", m.Name, kind, q, err)
				}
				p, says := res.Privacy, m.StatesRho(cfg)
				seen[says]++
				if has := p.Rho > 0 || p.Delta == 0; has != says {
					t.Errorf("%s %s (batch rate %v): StatesRho = %v, but the report has ρ = %v, δ = %v", m.Name, kind, q, says, p.Rho, p.Delta)
				}
			}
		}
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Errorf("both sides of the rule must be fitted: %v", seen)
	}
}
