package dataset

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/schema"
)

// TestSplitNumbersMatchesText checks the CSV reader's one-scan split and
// parse (splitNumbers: plain decimals of numeric columns reach the encoder
// as numbers) against an independent recomputation that splits each line
// with strings.Split and encodes the text fields: the same rows to the bit,
// the same pass-through text, the same counts of clipped and skipped
// values, and the same error text for bad records. The fields mix plain
// decimals with what must stay text: spaces, exponents, missing tokens,
// categories that look like numbers, a Keep column that looks like a
// number, values beyond the fast path, a transform's domain error and CR
// line ends. The last third of the records quote some fields (the quoted
// chunks' parser, then parseNumbers).
func TestSplitNumbersMatchesText(t *testing.T) {
	s := mustSchema(t, `{"target": {"name": "y", "range": [-100, 100]},
 "features": [{"name": "a", "range": [-100, 100]},
  {"name": "l", "range": [-5, 5], "transform": "log"},
  {"name": "b", "categories": ["1", "2.5", "3"], "unknown": "reference"},
  {"name": "c", "range": [0, 1], "missing": "impute", "impute": 0.5}]}`)
	header := []string{"id", "a", "l", "b", "c", "y", "unused"}
	numeric := []string{"12.345678", "-99.999999", "0", "-0", "+3.25", "0.000000", ".5", "5.", "1000", "-1000.5",
		"007", "9007199254740993", "123456789012345678901", "0.00000000000000000000000001", "1e2", "1E-3",
		" 1.5", "2.5 ", "NA", "", "NaN", "Inf", "-inf", "1.5.3", "abc", "--1", "0x10", "1_0"}
	rng := rand.New(rand.NewPCG(5, 6))
	field := func(col string) string {
		if rng.IntN(12) > 0 && col != "b" {
			v := rng.Float64()*240 - 120
			if col == "l" {
				v = math.Abs(v) + 0.01 // a negative value fails the log (below)
			}
			// Trailing zeros trimmed or not; a "." may end the text.
			return strings.TrimRight(strconv.FormatFloat(v, 'f', rng.IntN(9), 64), "0"[:rng.IntN(2)])
		}
		if col == "b" {
			return []string{"1", "2.5", "3", "2.50", "1.0", "x"}[rng.IntN(6)]
		}
		return numeric[rng.IntN(len(numeric))]
	}
	var sb strings.Builder
	sb.WriteString(strings.Join(header, ",") + "\n")
	var lines [][]string
	for i := 0; i < 3000; i++ {
		rec := make([]string, len(header))
		for j, h := range header {
			rec[j] = field(h)
		}
		if rng.IntN(50) == 0 { // wrong field count
			rec = rec[:len(rec)-1]
		}
		lines = append(lines, rec)
		out := append([]string(nil), rec...)
		if i >= 2000 && len(out) > 3 {
			// The last third quotes some fields: the chunks holding them
			// take parseRecord, then parseNumbers.
			for j := range out {
				if rng.IntN(3) == 0 {
					out[j] = `"` + out[j] + `"`
				}
			}
		}
		sb.WriteString(strings.Join(out, ","))
		if rng.IntN(4) == 0 {
			sb.WriteString("\r")
		}
		sb.WriteString("\n")
	}
	path := writeFile(t, "mix.csv", []byte(sb.String()))

	// The recomputation.
	enc, err := s.NewEncoder(header, schema.EncoderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	counts := enc.NewCounts()
	var want []float64
	var wantIDs []string
	var bad []int // indices of bad records
	dst := make([]float64, enc.Width())
	for i, rec := range lines {
		f := make([][]byte, len(rec))
		for j := range rec {
			f[j] = []byte(rec[j])
		}
		if len(rec) != len(header) || enc.EncodeCounted(f, dst, counts) != nil {
			bad = append(bad, i)
			clear(dst)
		}
		want = append(want, dst...)
		if len(bad) > 0 && bad[len(bad)-1] == i {
			wantIDs = append(wantIDs, "|") // a bad record kept as a zero row
		} else {
			wantIDs = append(wantIDs, rec[0]+"|"+rec[1])
		}
	}
	if len(bad) < 100 || len(bad) > len(lines)/2 {
		t.Fatalf("%d bad records of %d: the mix does not test both paths", len(bad), len(lines))
	}

	for _, workers := range []int{1, 3} {
		var got []float64
		var ids []string
		sum, err := StreamBatches(context.Background(), path, s, Options{Workers: workers, SkipBadRows: true, KeepBadRows: true, Keep: []string{"id", "a"}, chunkSize: 16 << 10},
			func(b Batch) error {
				got = append(got, b.Rows...)
				for k := 0; k < len(b.Keep); k += 2 {
					ids = append(ids, b.Keep[k]+"|"+b.Keep[k+1])
				}
				return nil
			})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Fatalf("workers %d: %d values, want %d", workers, len(got), len(want))
		}
		for i := range got {
			if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
				r := i / enc.Width()
				t.Fatalf("workers %d: record %q, value %d: got %v, want %v", workers, lines[r], i%enc.Width(), got[i], want[i])
			}
		}
		for i, id := range ids {
			if id != wantIDs[i] {
				t.Fatalf("workers %d: record %d passes %q through, want %q", workers, i, id, wantIDs[i])
			}
		}
		if sum.Skipped != int64(len(bad)) {
			t.Fatalf("workers %d: %d skipped, want %d", workers, sum.Skipped, len(bad))
		}
		for j := range counts.Clipped {
			if sum.Columns.Clipped[j] != counts.Clipped[j] || sum.Columns.Imputed[j] != counts.Imputed[j] || sum.Columns.Unknown[j] != counts.Unknown[j] {
				t.Fatalf("workers %d: counts %+v, want %+v", workers, sum.Columns, counts)
			}
		}
	}

	// Bad records stop a strict read with the text path's error.
	for _, i := range bad[:40] {
		rec := lines[i]
		if len(rec) != len(header) {
			continue
		}
		p := writeFile(t, "one.csv", []byte(strings.Join(header, ",")+"\n"+strings.Join(rec, ",")+"\n"))
		_, _, err := Moments(context.Background(), p, s, Options{})
		f := make([][]byte, len(rec))
		for j := range rec {
			f[j] = []byte(rec[j])
		}
		werr := enc.Encode(f, dst)
		if err == nil || werr == nil || !strings.HasSuffix(err.Error(), werr.Error()) {
			t.Fatalf("record %q: error %v, want one ending in %v", rec, err, werr)
		}
	}
}
