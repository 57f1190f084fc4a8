package dppp

import (
	"context"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/internal/pailliertest"
)

// TestSharedCalibration: a teacher given a shared calibration
// (TeacherConfig.Calibrated) accepts it only when it is of the teacher's
// own configuration and key, and then checks offers against exactly what
// it would have calibrated itself (same parameters hash, same MaxQueries).
func TestSharedCalibration(t *testing.T) {
	f := getFixture(t)
	cfg := f.config(Binomial)
	p0, err := Calibrate(cfg, f.TPK)
	if err != nil {
		t.Fatal(err)
	}
	other := cfg
	other.Epsilon = 2
	pOther, err := Calibrate(other, f.TPK)
	if err != nil {
		t.Fatal(err)
	}
	tpk2, _, err := pailliertest.ThresholdKey(1024, 10, 6)
	if err != nil {
		t.Fatal(err)
	}
	pKey, err := Calibrate(cfg, tpk2)
	if err != nil {
		t.Fatal(err)
	}
	predict := func(ctx context.Context, rows [][]float64) ([]int, error) { return make([]int, len(rows)), nil }
	base := TeacherConfig{Name: f.Names[0], Config: cfg, Key: f.Shares[0], Unsigned: true, Predict: predict}
	for _, tc := range []struct {
		name string
		cal  *Params
	}{{"another configuration", pOther}, {"another key", pKey}} {
		c := base
		c.Calibrated = tc.cal
		if _, err := NewTeacher(c); err == nil || !strings.Contains(err.Error(), "another configuration or key") {
			t.Errorf("%s: NewTeacher: %v, want a refusal", tc.name, err)
		}
	}
	shared := base
	shared.Calibrated = p0
	ts, err := NewTeacher(shared)
	if err != nil {
		t.Fatal(err)
	}
	own, err := NewTeacher(base)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := ts.calibration()
	b, _ := own.calibration()
	if a.Hash() != b.Hash() || a.MaxQueries != b.MaxQueries || a == p0 {
		t.Errorf("shared calibration: hash %x, MaxQueries %d (a copy: %v); own: hash %x, MaxQueries %d", a.Hash(), a.MaxQueries, a != p0, b.Hash(), b.MaxQueries)
	}
	// Calibrated to a total budget (Calibrate derives the per-query ε, δ):
	// accepted for the same budget, refused for another number of queries.
	total := cfg
	total.Epsilon, total.Delta = 0, 0
	total.BudgetEpsilon, total.BudgetDelta, total.Queries = 10, 1e-5, 20
	pTotal, err := Calibrate(total, f.TPK)
	if err != nil {
		t.Fatal(err)
	}
	more := total
	more.Queries = 40
	c := base
	c.Config, c.Calibrated = total, pTotal
	if _, err := NewTeacher(c); err != nil {
		t.Errorf("total budget: NewTeacher refused its own calibration: %v", err)
	}
	c.Config = more
	if _, err := NewTeacher(c); err == nil || !strings.Contains(err.Error(), "another configuration or key") {
		t.Errorf("total budget of 20 queries handed to a teacher of 40: NewTeacher: %v, want a refusal", err)
	}
	// An offer of other parameters is refused by the teacher that was
	// handed the calibration, as by the one that calibrated itself.
	pOff, err := pOther.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []*Teacher{ts, own} {
		if _, err := tt.Accept(&Offer{Params: *pOff}); err == nil {
			t.Error("a teacher accepted parameters of another ε")
		}
	}
}
