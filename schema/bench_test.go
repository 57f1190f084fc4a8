package schema

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
)

// BenchmarkEncode encodes a 50-column numeric record without and with the
// per-column counts (EncodeCounted): the reference for the counted path's
// cost is the plain path, measured in the same run.
func BenchmarkEncode(b *testing.B) {
	const cols = 50
	var feats, header []string
	var rec [][]byte
	for j := 0; j < cols-1; j++ {
		feats = append(feats, fmt.Sprintf(`{"name": "c%d", "range": [-100, 100]}`, j))
		header = append(header, fmt.Sprintf("c%d", j))
		rec = append(rec, []byte(strconv.FormatFloat(float64(j*7%230)-115+0.123456, 'f', 6, 64)))
	}
	header = append(header, "y")
	rec = append(rec, []byte("12.5"))
	s, err := Parse([]byte(`{"target": {"name": "y", "range": [-100, 100]}, "features": [` + strings.Join(feats, ",") + `]}`))
	if err != nil {
		b.Fatal(err)
	}
	e, err := s.NewEncoder(header, EncoderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	dst := make([]float64, e.Width())
	b.Run("plain", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if err := e.Encode(rec, dst); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("counted", func(b *testing.B) {
		c := e.NewCounts()
		for i := 0; i < b.N; i++ {
			if err := e.EncodeCounted(rec, dst, c); err != nil {
				b.Fatal(err)
			}
		}
	})
}
