package classify

import (
	"os"
	"sync"
	"testing"
	"time"

	"github.com/dplearn/dplearn/idx"
)

// fashion loads Fashion-MNIST from the Debian package once per test binary,
// or skips.
var fashion = sync.OnceValues(func() (*[2]*Data, error) {
	train, test, err := idx.FashionMNIST("")
	if err != nil {
		return nil, err
	}
	tr, err := FromIDX(train, 10)
	if err != nil {
		return nil, err
	}
	te, err := FromIDX(test, 10)
	if err != nil {
		return nil, err
	}
	return &[2]*Data{tr, te}, nil
})

func loadFashion(tb testing.TB) (train, test *Data) {
	tb.Helper()
	if _, err := os.Stat(idx.DebianFashionMNIST); err != nil {
		tb.Skipf("Fashion-MNIST not installed at %s (apt-get install dataset-fashion-mnist)", idx.DebianFashionMNIST)
	}
	if testing.Short() {
		tb.Skip("Fashion-MNIST training skipped in -short mode")
	}
	d, err := fashion()
	if err != nil {
		tb.Fatal(err)
	}
	return d[0], d[1]
}

// TestFashionMNISTAccuracy trains softmax on the full training set (the
// centralised baseline) and on one of 250 partitions (one DPPP teacher's
// share), and checks test accuracy.
func TestFashionMNISTAccuracy(t *testing.T) {
	train, test := loadFashion(t)
	start := time.Now()
	// One epoch (the default is 5) keeps the test short; it reaches 0.837.
	m, err := TrainSoftmax(ctx, train, SoftmaxOptions{Solver: SolverSGD, Epochs: 1, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	acc := Accuracy(m, test)
	t.Logf("softmax, 60,000 rows, SGD 1 epoch: test accuracy %.4f in %v", acc, time.Since(start).Round(time.Millisecond))
	if acc < 0.83 {
		t.Errorf("full training set: test accuracy %.4f, want ≥ 0.83", acc)
	}
	parts, err := Partition(train.N(), 250, 1)
	if err != nil {
		t.Fatal(err)
	}
	start = time.Now()
	one := train.Subset(parts[0])
	m, err = TrainSoftmax(ctx, one, SoftmaxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	acc = Accuracy(m, test)
	t.Logf("softmax, one teacher of 250 (%d rows), L-BFGS: test accuracy %.4f in %v", one.N(), acc, time.Since(start).Round(time.Millisecond))
	if acc < 0.70 {
		t.Errorf("1/250 partition: test accuracy %.4f, want ≥ 0.70", acc)
	}
}

// BenchmarkSoftmaxFashionMNIST times training on Fashion-MNIST: the full
// training set by SGD, and one teacher's 1/250 share by L-BFGS. Run with
// go test -bench Fashion -run ^$ ./classify/.
func BenchmarkSoftmaxFashionMNIST(b *testing.B) {
	train, test := loadFashion(b)
	parts, err := Partition(train.N(), 250, 1)
	if err != nil {
		b.Fatal(err)
	}
	one := train.Subset(parts[0])
	for _, c := range []struct {
		name string
		d    *Data
		opt  SoftmaxOptions
	}{
		{"full/sgd-5-epochs", train, SoftmaxOptions{Solver: SolverSGD}},
		{"full/lbfgs", train, SoftmaxOptions{Solver: SolverLBFGS}},
		{"teacher-1of250/lbfgs", one, SoftmaxOptions{}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var m Model
			for b.Loop() {
				var err error
				if m, err = TrainSoftmax(ctx, c.d, c.opt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(Accuracy(m, test), "test-accuracy")
		})
	}
}

// BenchmarkMLPFashionMNIST times the MLP (100 ReLU units) on one teacher's
// share and for one epoch of the full training set.
func BenchmarkMLPFashionMNIST(b *testing.B) {
	train, test := loadFashion(b)
	parts, err := Partition(train.N(), 250, 1)
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		d    *Data
		opt  MLPOptions
	}{
		{"teacher-1of250", train.Subset(parts[0]), MLPOptions{}},
		{"full/1-epoch", train, MLPOptions{Epochs: 1}},
	} {
		b.Run(c.name, func(b *testing.B) {
			var m Model
			for b.Loop() {
				var err error
				if m, err = TrainMLP(ctx, c.d, c.opt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(Accuracy(m, test), "test-accuracy")
		})
	}
}
