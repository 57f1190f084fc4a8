package fit

import (
	"strings"
	"testing"

	"github.com/dplearn/dplearn/regress"
)

// TestCheckPathRefusesMismatch: checkPath refuses an auto fit whose
// released objective is not the one the planned path releases (robust on
// the Huber path, linear on the least-squares path), and passes every
// other mechanism and a matching path.
func TestCheckPathRefusesMismatch(t *testing.T) {
	robust := &regress.Result{Released: &regress.Released{Kind: regress.Robust}}
	linear := &regress.Result{Released: &regress.Released{Kind: regress.Linear}}
	for _, tc := range []struct {
		mechanism, path string
		res             *regress.Result
		ok              bool
	}{
		{"auto", autoHuberPath, robust, true},
		{"auto", autoLeastSquaresPath, linear, true},
		{"auto", autoHuberPath, linear, false},
		{"auto", autoLeastSquaresPath, robust, false},
		{"irls", "irls", robust, true},
		{"gaussian-fm", "gaussian-fm", linear, true},
	} {
		err := checkPath(tc.mechanism, tc.path, tc.res)
		if (err == nil) != tc.ok || (err != nil && !strings.Contains(err.Error(), "planned for "+tc.path)) {
			t.Errorf("%s planned for %s, fitted %s: error %v, want ok = %v", tc.mechanism, tc.path, tc.res.Released.Kind, err, tc.ok)
		}
	}
}
