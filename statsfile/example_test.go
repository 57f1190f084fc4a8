package statsfile_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/statsfile"
	"github.com/dplearn/dplearn/suffstat"
)

// A cluster job writes the statistics of its rows; a later fit reads them
// back under the same schema. The file is created with mode 0600.
func Example() {
	s, _ := schema.Parse([]byte(`{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "x", "range": [0, 1]}]}`))
	m := suffstat.New(3) // (intercept), x, y
	m.AddRows([]float64{0.5, 0.25, 0.5, 0.5, -0.5, 1})

	dir, _ := os.MkdirTemp("", "statsfile")
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "stats.json")
	if err := statsfile.Write(path, s, statsfile.Stats{Moments: m}); err != nil {
		panic(err)
	}
	fi, _ := os.Stat(path)
	st, err := statsfile.Read(path, s)
	if err != nil {
		panic(err)
	}
	fmt.Println(fi.Mode().Perm(), st.Moments.N(), st.Moments.Sum(2))
	// Output:
	// -rw------- 2 1.5
}
