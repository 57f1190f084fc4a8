package schema

import (
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
)

// TestEncodeNumbersMatchesText: a record given as numbers encodes to the
// same bits, or the same error, as the record given as the exact text of
// those numbers, for every kind of column and target.
func TestEncodeNumbersMatchesText(t *testing.T) {
	for _, js := range []string{
		`{"target": {"name": "y", "transform": "log", "range": [0, 3]}, "features": [{"name": "a", "range": [-1, 1]}, {"name": "b", "transform": "sqrt", "range": [0, 10]}, {"name": "c", "categories": ["1", "2.5", "x"]}, {"name": "d", "transform": "log1p", "range": [0, 4]}]}`,
		`{"target": {"name": "y", "above": 0.5}, "features": [{"name": "a", "range": [-1, 1]}, {"name": "b", "range": [0, 10]}, {"name": "c", "categories": ["1", "2.5", "x"]}, {"name": "d", "range": [0, 4]}]}`,
		`{"target": {"name": "y"}, "intercept": false, "features": [{"name": "a", "range": [-1, 1]}, {"name": "b", "range": [0, 10]}, {"name": "c", "categories": ["1", "2.5", "x"], "unknown": "reference"}, {"name": "d", "range": [0, 4]}]}`,
		// missing-value policies: a NaN given as a number is missing, as
		// the text "NaN" is, and is imputed, dropped or refused alike.
		`{"target": {"name": "y", "range": [-5, 5], "missing": "drop"}, "features": [{"name": "a", "range": [-1, 1], "missing": "impute", "impute": 0.25}, {"name": "b", "range": [0, 10], "missing": "drop"}, {"name": "c", "categories": ["1", "2.5", "x"], "missing": "impute", "impute": "x"}, {"name": "d", "range": [0, 4]}]}`,
	} {
		s, err := Parse([]byte(js))
		if err != nil {
			t.Fatal(err)
		}
		header := []string{"d", "y", "c", "a", "b"}
		enc, err := s.NewEncoder(header, EncoderOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(1, uint64(len(js))))
		special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), -1, 0, 1, 2.5, 1e300, -1e-300, 0.5}
		num := func() float64 {
			if rng.IntN(5) == 0 {
				return special[rng.IntN(len(special))]
			}
			return rng.NormFloat64() * math.Pow(10, float64(rng.IntN(4)))
		}
		a, b := make([]float64, enc.Width()), make([]float64, enc.Width())
		countsA, countsB := enc.NewCounts(), enc.NewCounts()
		for it := 0; it < 20000; it++ {
			nums := make([]float64, len(header))
			isNum := make([]bool, len(header))
			fields := make([][]byte, len(header))
			text := make([][]byte, len(header))
			for i := range header {
				nums[i] = num()
				if header[i] == "c" && rng.IntN(2) == 0 {
					nums[i] = []float64{1, 2.5, 3}[rng.IntN(3)]
				}
				if header[i] == "y" && s.Target.Binary() && rng.IntN(2) == 0 {
					nums[i] = float64(rng.IntN(2))
				}
				isNum[i] = rng.IntN(4) != 0
				text[i] = strconv.AppendFloat(nil, nums[i], 'g', -1, 64)
				if !isNum[i] {
					fields[i] = text[i]
				}
			}
			errA := enc.EncodeNumbersCounted(fields, nums, isNum, a, countsA)
			errB := enc.EncodeCounted(text, b, countsB)
			if (errA == nil) != (errB == nil) || (errA != nil && errA.Error() != errB.Error()) {
				t.Fatalf("record %v: EncodeNumbers err %v, Encode err %v", text, errA, errB)
			}
			if errA != nil {
				continue
			}
			for i := range a {
				if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
					t.Fatalf("record %v: slot %d: %v from numbers, %v from text", text, i, a[i], b[i])
				}
			}
		}
		for _, c := range []struct {
			name string
			x, y []int64
		}{{"clipped", countsA.Clipped, countsB.Clipped}, {"imputed", countsA.Imputed, countsB.Imputed},
			{"dropped", countsA.Dropped, countsB.Dropped}, {"unknown", countsA.Unknown, countsB.Unknown}} {
			for i := range c.x {
				if c.x[i] != c.y[i] {
					t.Errorf("schema %d: %s count of %s: %d from numbers, %d from text", len(js), c.name, countsA.Columns[i], c.x[i], c.y[i])
				}
			}
		}
	}
}
