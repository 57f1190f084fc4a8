package classify

import (
	"bytes"
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/exampledata"
)

var ctx = context.Background()

// separable draws n points around k well-separated centres in 2-D.
func separable(n, k int) *Data {
	d := &Data{D: 2, Classes: k}
	for i := range n {
		c := i % k
		ang := 2 * math.Pi * float64(c) / float64(k)
		jit := float64(i%7)/7 - 0.5
		d.X = append(d.X, 3*math.Cos(ang)+0.3*jit, 3*math.Sin(ang)-0.2*jit)
		d.Y = append(d.Y, c)
	}
	return d
}

func TestSoftmaxSeparable(t *testing.T) {
	d := separable(120, 4)
	for _, solver := range []string{SolverLBFGS, SolverSGD} {
		m, err := TrainSoftmax(ctx, d, SoftmaxOptions{Solver: solver, Epochs: 30, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		if acc := Accuracy(m, d); acc != 1 {
			t.Fatalf("%s: accuracy %v on a separable problem", solver, acc)
		}
		p := make([]float64, 4)
		m.PredictProba(d.Row(0), p)
		sum := 0.0
		for _, v := range p {
			sum += v
		}
		if math.Abs(sum-1) > 1e-12 || argmax(p) != m.Predict(d.Row(0)) {
			t.Fatalf("%s: probabilities %v", solver, p)
		}
	}
}

func TestMLPSeparableAndXOR(t *testing.T) {
	d := separable(120, 3)
	m, err := TrainMLP(ctx, d, MLPOptions{Hidden: 8, Seed: 1, LearningRate: 0.01})
	if err != nil {
		t.Fatal(err)
	}
	if acc := Accuracy(m, d); acc != 1 {
		t.Fatalf("accuracy %v on a separable problem", acc)
	}
	// XOR: no linear model separates it; a hidden layer does.
	var x [][]float64
	var y []int
	for i := range 200 {
		a, b := float64(i%2), float64(i/2%2)
		x = append(x, []float64{2*a - 1 + 0.1*float64(i%5)/5, 2*b - 1 - 0.1*float64(i%3)/3})
		y = append(y, int(a)^int(b))
	}
	xor, err := FromRows(x, y, 2)
	if err != nil {
		t.Fatal(err)
	}
	for _, act := range []string{ActivationReLU, ActivationTanh} {
		for _, o := range []string{OptimizerAdam, OptimizerMomentum} {
			m, err := TrainMLP(ctx, xor, MLPOptions{Hidden: 8, Activation: act, Optimizer: o, Epochs: 200, Seed: 2})
			if err != nil {
				t.Fatal(err)
			}
			if acc := Accuracy(m, xor); acc != 1 {
				t.Errorf("%s/%s: XOR accuracy %v", act, o, acc)
			}
		}
	}
	lin, err := TrainSoftmax(ctx, xor, SoftmaxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if acc := Accuracy(lin, xor); acc > 0.8 {
		t.Errorf("softmax fits XOR with accuracy %v: the test problem is too easy", acc)
	}
}

func TestDeterministic(t *testing.T) {
	d := randomData(300, 6, 3, 9)
	a, _ := TrainMLP(ctx, d, MLPOptions{Hidden: 5, Epochs: 3, Seed: 4})
	b, _ := TrainMLP(ctx, d, MLPOptions{Hidden: 5, Epochs: 3, Seed: 4})
	c, _ := TrainMLP(ctx, d, MLPOptions{Hidden: 5, Epochs: 3, Seed: 5})
	if !slices.Equal(a.W1, b.W1) || !slices.Equal(a.W2, b.W2) {
		t.Fatal("MLP: same seed, different weights")
	}
	if slices.Equal(a.W1, c.W1) {
		t.Fatal("MLP: different seeds, same weights")
	}
	s1, _ := TrainSoftmax(ctx, d, SoftmaxOptions{Solver: SolverSGD, Epochs: 2, Seed: 4, Workers: 1})
	s2, _ := TrainSoftmax(ctx, d, SoftmaxOptions{Solver: SolverSGD, Epochs: 2, Seed: 4, Workers: 2})
	if !slices.Equal(s1.W, s2.W) {
		t.Fatal("softmax SGD: same seed, different weights")
	}
	big := randomData(1500, 4, 3, 10) // three chunks of the full-batch sum
	l1, _ := TrainSoftmax(ctx, big, SoftmaxOptions{Solver: SolverLBFGS, Workers: 1})
	l2, _ := TrainSoftmax(ctx, big, SoftmaxOptions{Solver: SolverLBFGS, Workers: 3})
	if !slices.Equal(l1.W, l2.W) {
		t.Fatal("softmax L-BFGS: weights depend on the number of workers")
	}
}

func TestBadData(t *testing.T) {
	good := func() *Data { return randomData(10, 3, 2, 1) }
	cases := map[string]struct {
		mut  func(*Data)
		want error
	}{
		"NaN":         {func(d *Data) { d.X[4] = math.NaN() }, ErrNotFinite},
		"Inf":         {func(d *Data) { d.X[0] = math.Inf(-1) }, ErrNotFinite},
		"label":       {func(d *Data) { d.Y[3] = 2 }, ErrLabel},
		"negative":    {func(d *Data) { d.Y[3] = -1 }, ErrLabel},
		"width":       {func(d *Data) { d.X = d.X[:len(d.X)-1] }, ErrWidth},
		"empty":       {func(d *Data) { d.X, d.Y = nil, nil }, ErrEmpty},
		"zero D":      {func(d *Data) { d.D = 0 }, ErrWidth},
		"one class":   {func(d *Data) { d.Classes = 1 }, nil},
		"huge labels": {func(d *Data) { d.Classes = MaxClasses + 1 }, nil},
	}
	for name, c := range cases {
		d := good()
		c.mut(d)
		_, err1 := TrainSoftmax(ctx, d, SoftmaxOptions{})
		_, err2 := TrainMLP(ctx, d, MLPOptions{})
		for _, err := range []error{err1, err2} {
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
				t.Errorf("%s: err = %v, want %v", name, err, c.want)
			}
		}
	}
	if _, err := FromRows([][]float64{{1, 2}, {3}}, []int{0, 1}, 2); !errors.Is(err, ErrWidth) {
		t.Errorf("ragged rows: %v", err)
	}
	for _, o := range []SoftmaxOptions{{Solver: "newton"}, {LearningRate: -1}, {L2: math.NaN()}} {
		if _, err := TrainSoftmax(ctx, good(), o); err == nil {
			t.Errorf("softmax options %+v accepted", o)
		}
	}
	for _, o := range []MLPOptions{{Activation: "sigmoid"}, {Optimizer: "lbfgs"}, {Hidden: -1}, {Momentum: 1, Optimizer: OptimizerMomentum}} {
		if _, err := TrainMLP(ctx, good(), o); err == nil {
			t.Errorf("mlp options %+v accepted", o)
		}
	}
	// Predictions through a Predictor check their rows.
	m, _ := TrainSoftmax(ctx, good(), SoftmaxOptions{})
	p := InProcess(m)
	if _, err := p.PredictBatch(ctx, [][]float64{{1, 2}}); !errors.Is(err, ErrWidth) {
		t.Errorf("short row: %v", err)
	}
	if _, err := p.PredictBatch(ctx, [][]float64{{1, math.NaN(), 2}}); !errors.Is(err, ErrNotFinite) {
		t.Errorf("NaN row: %v", err)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Error("Predict on a short row did not panic")
			}
		}()
		m.Predict([]float64{1})
	}()
}

func TestCancel(t *testing.T) {
	c, cancel := context.WithCancel(ctx)
	cancel()
	d := randomData(100, 3, 2, 1)
	if _, err := TrainSoftmax(c, d, SoftmaxOptions{Solver: SolverSGD}); !errors.Is(err, context.Canceled) {
		t.Errorf("softmax SGD: %v", err)
	}
	if _, err := TrainSoftmax(c, d, SoftmaxOptions{Solver: SolverLBFGS}); !errors.Is(err, context.Canceled) {
		t.Errorf("softmax L-BFGS: %v", err)
	}
	if _, err := TrainMLP(c, d, MLPOptions{}); !errors.Is(err, context.Canceled) {
		t.Errorf("mlp: %v", err)
	}
}

func TestPartition(t *testing.T) {
	parts, err := Partition(1003, 10, 7)
	if err != nil {
		t.Fatal(err)
	}
	seen := make([]bool, 1003)
	for p, idx := range parts {
		if want := 100 + btoi(p < 3); len(idx) != want {
			t.Fatalf("part %d has %d rows, want %d", p, len(idx), want)
		}
		if !slices.IsSorted(idx) {
			t.Fatalf("part %d not sorted", p)
		}
		for _, i := range idx {
			if seen[i] {
				t.Fatalf("row %d in two parts", i)
			}
			seen[i] = true
		}
	}
	again, _ := Partition(1003, 10, 7)
	other, _ := Partition(1003, 10, 8)
	if !slices.Equal(parts[4], again[4]) || slices.Equal(parts[4], other[4]) {
		t.Fatal("partition not a function of the seed")
	}
	if _, err := Partition(5, 6, 1); err == nil {
		t.Fatal("5 rows into 6 parts accepted")
	}
	if _, err := Partition(5, 0, 1); err == nil {
		t.Fatal("0 parts accepted")
	}
	tr, te := Split(100, 0.25, 3)
	if len(tr) != 75 || len(te) != 25 {
		t.Fatalf("split %d/%d", len(tr), len(te))
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// embedded loads an embedded classification table.
func embedded(t testing.TB, name string) (*Spec, *Data) {
	t.Helper()
	ds, err := exampledata.GetClassification(name)
	if err != nil {
		t.Fatal(err)
	}
	s, err := ParseSpec(ds.Spec)
	if err != nil {
		t.Fatal(err)
	}
	d, _, err := s.LoadReader(ctx, bytes.NewReader(ds.CSVGzip), name+".csv.gz", dataset.Options{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	return s, d
}

func TestSpecDigits(t *testing.T) {
	s, d := embedded(t, "digits")
	if d.N() != 1797 || d.D != 64 || d.Classes != 10 || s.Classes() != 10 || s.Features() != 64 {
		t.Fatalf("digits: %d rows × %d, %d classes", d.N(), d.D, d.Classes)
	}
	// Row 0 of digits.csv: 0,0,5,13,9,1,... label 0; row 1 is label 1.
	if d.Y[0] != 0 || d.Y[1] != 1 || d.Row(0)[0] != -1 || math.Abs(d.Row(0)[2]-(2*5.0/16-1)) > 1e-15 {
		t.Fatalf("row 0: %v label %d", d.Row(0)[:4], d.Y[0])
	}
	counts := make([]int, 10)
	for _, y := range d.Y {
		counts[y]++
	}
	if counts[0] != 178 || counts[9] != 180 {
		t.Fatalf("class counts %v", counts)
	}
	// The spec survives a JSON round trip.
	b, err := s.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := ParseSpec(b)
	if err != nil || !slices.Equal(s2.FeatureNames(), s.FeatureNames()) || !slices.Equal(s2.ClassNames(), s.ClassNames()) {
		t.Fatalf("round trip: %v", err)
	}
	if s.Fingerprint() != s2.Fingerprint() || len(s.Fingerprint()) != 64 {
		t.Fatalf("fingerprints %s %s", s.Fingerprint(), s2.Fingerprint())
	}
}

func TestSpecBinaryAndCategorical(t *testing.T) {
	s, d := embedded(t, "breast_cancer")
	if d.N() != 569 || d.D != 30 || !slices.Equal(s.ClassNames(), []string{"0", "1"}) {
		t.Fatalf("breast_cancer: %d × %d, classes %v", d.N(), d.D, s.ClassNames())
	}
	mal := 0
	for _, y := range d.Y {
		mal += y
	}
	if mal != 212 {
		t.Fatalf("%d malignant, want 212", mal)
	}
	// A multiclass spec with a categorical feature; labels in any order;
	// an unknown label stops the read with its line.
	spec := []byte(`{"target": {"name": "animal", "classes": ["cat", "dog", "bird"]},
	  "features": [{"name": "w", "range": [0, 10]}, {"name": "c", "categories": ["a", "b", "c"]}]}`)
	s, err := ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.FeatureNames(); !slices.Equal(got, []string{"w", "c=b", "c=c"}) {
		t.Fatalf("features %v", got)
	}
	csv := "animal,c,w\nbird,c,10\ncat,a,0\ndog,b,20\n"
	d, _, err = s.LoadReader(ctx, strings.NewReader(csv), "t.csv", dataset.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(d.Y, []int{2, 0, 1}) || !slices.Equal(d.X, []float64{1, 0, 1, -1, 0, 0, 1, 1, 0}) {
		t.Fatalf("decoded %v %v", d.X, d.Y)
	}
	_, _, err = s.LoadReader(ctx, strings.NewReader(csv+"fish,a,1\n"), "t.csv", dataset.Options{})
	var re *dataset.RowError
	if !errors.As(err, &re) || re.Line != 5 || !strings.Contains(err.Error(), "fish") {
		t.Fatalf("unknown label: %v", err)
	}
	// Query rows need no label column.
	path := filepath.Join(t.TempDir(), "q.csv")
	if err := os.WriteFile(path, []byte("w,c\n5,c\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	q, _, err := s.LoadFeatures(ctx, path, dataset.Options{})
	if err != nil || !slices.Equal(q.X, []float64{0, 0, 1}) {
		t.Fatalf("query: %v %v", q, err)
	}
	x, err := s.EncodeRecord([]string{"c", "w"}, []string{"b", "2.5"})
	if err != nil || !slices.Equal(x, []float64{-0.5, 1, 0}) {
		t.Fatalf("record: %v %v", x, err)
	}
	if _, err := s.EncodeRecord([]string{"c", "w"}, []string{"b", "NaN"}); err == nil {
		t.Fatal("NaN feature accepted")
	}
	bad := []string{
		`{"target": {"name": "y", "classes": ["a"]}, "features": [{"name": "w", "range": [0, 1]}]}`,
		`{"target": {"name": "y", "classes": ["a", "a"]}, "features": [{"name": "w", "range": [0, 1]}]}`,
		`{"target": {"name": "y", "classes": ["a", ""]}, "features": [{"name": "w", "range": [0, 1]}]}`,
		`{"target": {"name": "y", "classes": ["a", "b"]}, "features": [{"name": "y", "range": [0, 1]}]}`,
		`{"target": {"name": "y", "classes": ["a", "b"], "positive": "a"}, "features": [{"name": "w", "range": [0, 1]}]}`,
		`{"target": {"name": "y", "classes": ["a", "b"]}, "features": [{"name": "w"}]}`,
		`{"target": {"name": "y", "classes": ["a", "b"]}, "features": [{"name": "w", "range": [0, 1]}], "extra": 1}`,
		`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "w", "range": [0, 1]}]}`,
		`{"target": {"name": "", "classes": ["a", "b"]}, "features": [{"name": "w", "range": [0, 1]}]}`,
		`{"target": {"name": "y", "classes": ["a", "b"]}, "features": [{"name": "w", "range": [0, 1]}]} {}`,
		`{"target": `,
		`{"target": {"name": "y", "classes": ["a", "b"]}, "features": [{"name": "c", "categories": ["only"]}]}`,
	}
	for _, b := range bad {
		if _, err := ParseSpec([]byte(b)); err == nil {
			t.Errorf("accepted %s", b)
		}
	}
	s, err = ParseSpec([]byte(`{"target": {"name": "y", "positive": "yes"}, "features": [{"name": "w", "range": [0, 1]}]}`))
	if err != nil || !slices.Equal(s.ClassNames(), []string{"not yes", "yes"}) {
		t.Fatalf("positive label: %v %v", s, err)
	}
}

// TestAccuracyEmbedded trains both models on 80% of the embedded tables
// and checks their test accuracy.
func TestAccuracyEmbedded(t *testing.T) {
	for _, c := range []struct {
		name            string
		softmax, mlpMin float64
	}{
		{"digits", 0.94, 0.95},
		{"breast_cancer", 0.94, 0.94},
	} {
		_, d := embedded(t, c.name)
		trIdx, teIdx := Split(d.N(), 0.2, 1)
		tr, te := d.Subset(trIdx), d.Subset(teIdx)
		sm, err := TrainSoftmax(ctx, tr, SoftmaxOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mlp, err := TrainMLP(ctx, tr, MLPOptions{Hidden: 64, Epochs: 30, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		as, am := Accuracy(sm, te), Accuracy(mlp, te)
		t.Logf("%s: test accuracy softmax %.4f, mlp %.4f (%d train, %d test rows)", c.name, as, am, tr.N(), te.N())
		if as < c.softmax || am < c.mlpMin {
			t.Errorf("%s: accuracy softmax %.4f (want ≥ %v), mlp %.4f (want ≥ %v)", c.name, as, c.softmax, am, c.mlpMin)
		}
	}
}
