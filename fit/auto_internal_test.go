package fit

import (
	"strings"
	"testing"

	"github.com/dplearn/dplearn/regress"
)

// TestCheckPathRefusesMismatch: checkPath refuses an auto fit whose
// release is not the one the planned path makes (Gaussian FM's objective
// on the least-squares path, none on noisygd's Huber path), and passes
// every other mechanism and a matching path.
func TestCheckPathRefusesMismatch(t *testing.T) {
	released := &regress.Result{Released: &regress.Released{Kind: regress.Linear}}
	none := &regress.Result{}
	for _, tc := range []struct {
		mechanism, path string
		res             *regress.Result
		ok              bool
	}{
		{"auto", regress.AutoHuberPath, none, true},
		{"auto", regress.AutoLeastSquaresPath, released, true},
		{"auto", regress.AutoHuberPath, released, false},
		{"auto", regress.AutoLeastSquaresPath, none, false},
		{"noisygd", "noisygd", none, true},
		{"gaussian-fm", "gaussian-fm", released, true},
	} {
		err := checkPath(tc.mechanism, tc.path, tc.res)
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "planned for "+tc.path)) {
			t.Errorf("%s planned for %s, released %v: error %v, want ok = %v", tc.mechanism, tc.path, tc.res.Released != nil, err, tc.ok)
		}
	}
}
