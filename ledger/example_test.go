package ledger_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dplearn/dplearn/ledger"
)

func ExampleLedger_Charge() {
	dir, _ := os.MkdirTemp("", "ledger")
	defer os.RemoveAll(dir)
	ctx := context.Background()
	l, _ := ledger.Create(ctx, filepath.Join(dir, "site.json"), "hospital-A", ledger.Budget{Epsilon: 1, Delta: 1e-5})
	for _, eps := range []float64{0.5, 0.4, 0.2} {
		_, err := l.Charge(ctx, "query", ledger.Charge{Epsilon: eps, Delta: 1e-6})
		fmt.Println(eps, errors.Is(err, ledger.ErrOverBudget))
	}
	// Output:
	// 0.5 false
	// 0.4 false
	// 0.2 true
}
