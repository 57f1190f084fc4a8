package dppp

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sync"
	"testing"

	"github.com/dplearn/dplearn/internal/dppptest"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/paillier"
)

// fixture is the shared digits deployment (internal/dppptest) with 50
// query rows, built once per test binary.
type fixture struct{ *dppptest.Digits }

var digits dppptest.Cache

func getFixture(t testing.TB) *fixture {
	t.Helper()
	return &fixture{digits.Get(t, 50)}
}

func (f *fixture) config(kind NoiseKind) Config {
	return Config{Teachers: f.Names, Classes: 10, Features: 64, Noise: kind, Epsilon: 1, Delta: 1e-5,
		BudgetEpsilon: 100, BudgetDelta: 1e-3, Model: f.Spec}
}

// deployment is one set of teachers with a plaintext record of their shares.
type deployment struct {
	p        *Params
	signers  map[string]Signer
	teachers []*Teacher
	mu       sync.Mutex
	shares   map[uint64]map[string][]int64
}

// calibrations holds Calibrate's result per configuration for this test
// binary: most tests deploy the same few configurations on the one digits
// key, and the calibration (the PLD compositions) was most of their CPU.
// Each deployment draws a fresh session from the shared Params (NewSession
// deep-copies it), as the teachers of one deployment share p0 already.
var calibrations struct {
	mu sync.Mutex
	m  []calibration
}

type calibration struct {
	cfg Config
	key [32]byte
	p   *Params
}

// calibrate returns Calibrate(cfg, tpk), computed once per test binary.
func calibrate(t testing.TB, cfg Config, tpk *paillier.ThresholdPublicKey) *Params {
	t.Helper()
	calibrations.mu.Lock()
	defer calibrations.mu.Unlock()
	id := tpk.ID()
	for _, c := range calibrations.m {
		if c.key == id && reflect.DeepEqual(c.cfg, cfg) {
			return c.p
		}
	}
	p, err := Calibrate(cfg, tpk)
	if err != nil {
		t.Fatal(err)
	}
	calibrations.m = append(calibrations.m, calibration{cfg, id, p})
	return p
}

func (f *fixture) deploy(t testing.TB, cfg Config, tweak func(i int, tc *TeacherConfig)) *deployment {
	t.Helper()
	p0 := calibrate(t, cfg, f.TPK)
	p, err := p0.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	d := &deployment{p: p, shares: map[uint64]map[string][]int64{}}
	signers, err := EphemeralSigners(f.Names)
	if err != nil {
		t.Fatal(err)
	}
	d.signers = signers
	for i, name := range f.Names {
		m := f.Models[i]
		name := name
		tc := TeacherConfig{
			Name: name, Config: cfg, Key: f.Shares[i],
			Predict: func(ctx context.Context, rows [][]float64) ([]int, error) {
				out := make([]int, len(rows))
				for j, r := range rows {
					out[j] = m.Predict(r)
				}
				return out, nil
			},
			Noise:  noise.NewInsecureSeeded(uint64(1000 + i)),
			Signer: signers[name],
			RevealShares: func(batch uint64, v []int64) {
				d.mu.Lock()
				defer d.mu.Unlock()
				if d.shares[batch] == nil {
					d.shares[batch] = map[string][]int64{}
				}
				d.shares[batch][name] = append([]int64(nil), v...)
			},
		}
		if tweak != nil {
			tweak(i, &tc)
		}
		shareCalibration(&tc, cfg, p0)
		tt, err := NewTeacher(tc)
		if err != nil {
			t.Fatal(err)
		}
		d.teachers = append(d.teachers, tt)
	}
	return d
}

// reference is the plaintext path: the same shares summed without
// encryption, tallied like the aggregator.
func (d *deployment) reference(t testing.TB, br *BatchResult) ([]int64, []int) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	raw := make([]int64, d.p.QPC*d.p.Classes)
	for _, id := range br.Contributors {
		s, ok := d.shares[br.Batch][d.p.TeacherName(id)]
		if !ok {
			t.Fatalf("no share of %d in batch %d", id, br.Batch)
		}
		for j, v := range s {
			raw[j] += v
		}
	}
	_, labels, err := d.p.Tally(raw, len(br.Contributors), len(br.Labels))
	if err != nil {
		t.Fatal(err)
	}
	return raw, labels
}

func (d *deployment) checkReference(t testing.TB, res *RunResult) {
	t.Helper()
	for _, br := range res.Batches {
		raw, labels := d.reference(t, br)
		if fmt.Sprint(raw) != fmt.Sprint(br.Raw) {
			t.Fatalf("batch %d: decrypted %v, plaintext path %v", br.Batch, br.Raw, raw)
		}
		if fmt.Sprint(labels) != fmt.Sprint(br.Labels) {
			t.Fatalf("batch %d: labels %v, plaintext path %v", br.Batch, br.Labels, labels)
		}
	}
}

type paillierCT = paillier.Ciphertext

// skipCryptoUnderRace skips a single-goroutine test whose time is all
// Paillier, proof and signature arithmetic when the race detector is on
// (CI's race step runs with -short): it has no concurrency for the
// detector to check, and it runs in full in the plain `go test ./...`.
// The concurrent runs (TestDeadAfterVote, TestDigitsFiftyQueries, the
// Driver over channels) stay under the detector.
func skipCryptoUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled && testing.Short() {
		t.Skip("race detector with -short: crypto-bound single-goroutine test, run in full without -race")
	}
}

// testLogger prints a run's progress lines in the test's output.
func testLogger(t testing.TB) *slog.Logger {
	return slog.New(logx.LineHandler(t.Output(), "", ProgressLine))
}

// shareCalibration hands a teacher the deployment's calibration p0 (the
// PLD calibration costs about a second, and ten teachers would repeat it)
// unless a tweak gave it a configuration of its own, which it then
// calibrates itself. TestSharedCalibration checks that a shared
// calibration is the teacher's own.
func shareCalibration(tc *TeacherConfig, cfg Config, p0 *Params) {
	if tc.Calibrated == nil && reflect.DeepEqual(tc.Config, cfg) && tc.Key.PublicKey().ID() == p0.Key {
		tc.Calibrated = p0
	}
}
