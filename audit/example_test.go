package audit_test

import (
	"context"
	"fmt"

	"github.com/dplearn/dplearn/audit"
	"github.com/dplearn/dplearn/noise"
)

// Audit a Laplace mechanism that claims ε = 1 but uses a third of the noise.
func ExampleAudit() {
	src := noise.NewInsecureSeeded(7)
	mech := func(neighbour int) (float64, error) {
		z, err := noise.Laplace(src, 1.0/3)
		return float64(neighbour) + z, err
	}
	r, err := audit.Audit(context.Background(), mech, 20000, 0.95)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(r.Check(1) != nil)
	// Output: true
}
