package dataset

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/bits"
	"strings"
	"testing"
)

const unitSchema = `{"target": {"name": "y", "range": [-1, 1]},
 "features": [{"name": "a", "range": [0, 64]}]}`

// panelCSV writes person,a,y rows: person p has counts[p] rows with
// a = 2^j (j its occurrence) and y = (last byte of p mod 3 − 1)/2.
func panelCSV(counts map[string]int, order []string) []byte {
	var b strings.Builder
	b.WriteString("person,a,y\n")
	seen := map[string]int{}
	// Interleave the persons' rows, as a visit table would.
	for more := true; more; {
		more = false
		for _, p := range order {
			if seen[p] < counts[p] {
				fmt.Fprintf(&b, "%s,%d,%g\n", p, 1<<seen[p], float64(int(p[len(p)-1])%3-1)/2)
				seen[p]++
				more = true
			}
		}
	}
	return []byte(b.String())
}

func keyReader(seed byte) *bytes.Reader { return bytes.NewReader(bytes.Repeat([]byte{seed}, 32)) }

// TestUnitMoments checks the bound (every unit contributes min(n_u, K)
// rows, N of units counted) and the privacy argument of UnitMoments: under
// one key, replacing all rows of one person leaves every other person's
// kept rows unchanged (the statistics differ exactly by that person's kept
// rows), whether the person has fewer or more rows than K.
func TestUnitMoments(t *testing.T) {
	s := mustSchema(t, unitSchema)
	ctx := context.Background()
	const k = 3
	others := map[string]int{"q1": 7, "q2": 1, "q3": 4, "q4": 7, "q5": 3, "q6": 6}
	order := []string{"q1", "q2", "p0", "q3", "q4", "q5", "q6"}
	read := func(counts map[string]int, ord []string) (*UnitSummary, func(i, j int) float64, int64) {
		path := writeFile(t, "panel.csv", panelCSV(counts, ord))
		m, sum, err := UnitMoments(ctx, path, s, Options{Workers: 2}, UnitOptions{Column: "person", MaxRows: k, Rand: keyReader(7)})
		if err != nil {
			t.Fatal(err)
		}
		return &sum, m.At, m.N()
	}
	with := func(n int) map[string]int {
		c := map[string]int{}
		for p, v := range others {
			c[p] = v
		}
		if n > 0 {
			c["p0"] = n
		}
		return c
	}
	base, atBase, nBase := read(with(0), order)
	want := int64(0)
	for _, n := range others {
		want += int64(min(n, k))
	}
	if nBase != want || base.Units != int64(len(others)) || base.Kept != want {
		t.Fatalf("kept %d rows of %d units (summary %d), want %d rows of %d", nBase, base.Units, base.Kept, want, len(others))
	}
	for _, n0 := range []int{2, 6} {
		sum, at, n := read(with(n0), order)
		if n-nBase != int64(min(n0, k)) || sum.Units != base.Units+1 {
			t.Fatalf("p0 with %d rows: %d rows kept more, want %d", n0, n-nBase, min(n0, k))
		}
		// Read p0's rows alone, unbounded, for the exact difference when
		// all are kept.
		if n0 <= k {
			path := writeFile(t, "p0.csv", panelCSV(map[string]int{"p0": n0}, []string{"p0"}))
			m0, _, err := Moments(ctx, path, s, Options{})
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < m0.K(); i++ {
				for j := i; j < m0.K(); j++ {
					if g := at(i, j) - atBase(i, j); math.Abs(g-m0.At(i, j)) > 1e-9 {
						t.Errorf("p0 with %d rows: entry (%d, %d) moved by %v, p0's rows give %v: another unit's selection changed", n0, i, j, g, m0.At(i, j))
					}
				}
			}
		}
	}
	if _, _, err := UnitMoments(ctx, "-", s, Options{}, UnitOptions{Column: "person", MaxRows: 1, Rand: keyReader(1)}); err == nil {
		t.Error("standard input accepted for a two-pass read")
	}
}

// TestUnitSelectionUniform: of a unit with 5 rows and K = 2, each of the
// 10 pairs is kept with probability 1/10 over the key. 500 keys; the
// chi-square statistic with 9 degrees of freedom exceeds 33.72 with
// probability 1e-4 (the false-alarm rate).
func TestUnitSelectionUniform(t *testing.T) {
	s := mustSchema(t, unitSchema)
	ctx := context.Background()
	path := writeFile(t, "one.csv", panelCSV(map[string]int{"p": 5}, []string{"p"}))
	// The encoding of a is affine: recover Σa of the kept pair from the
	// sums of a file with a = 1 and a = 2 (Σa = 3) and one with 1, 4.
	ref := func(rows string) float64 {
		m, _, err := Moments(ctx, writeFile(t, "r.csv", []byte("person,a,y\n"+rows)), s, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return m.Sum(m.K() - 2)
	}
	s3, s5 := ref("p,1,0\np,2,0\n"), ref("p,1,0\np,4,0\n")
	slope := (s5 - s3) / 2
	counts := map[int]int{}
	const runs = 500
	for r := 0; r < runs; r++ {
		key := bytes.NewReader([]byte(fmt.Sprintf("%032d", r)))
		m, _, err := UnitMoments(ctx, path, s, Options{Workers: 1}, UnitOptions{Column: "person", MaxRows: 2, Rand: key})
		if err != nil {
			t.Fatal(err)
		}
		if m.N() != 2 {
			t.Fatalf("kept %d rows, want 2", m.N())
		}
		sumA := int(math.Round(3 + (m.Sum(m.K()-2)-s3)/slope))
		if bits.OnesCount(uint(sumA)) != 2 || sumA >= 32 {
			t.Fatalf("kept rows with Σa = %d: not two distinct occurrences", sumA)
		}
		counts[sumA]++
	}
	if len(counts) != 10 {
		t.Fatalf("saw %d of the 10 pairs: %v", len(counts), counts)
	}
	chi := 0.0
	for _, c := range counts {
		e := float64(runs) / 10
		chi += (float64(c) - e) * (float64(c) - e) / e
	}
	if chi > 33.72 {
		t.Errorf("pairs kept %v: chi-square %.1f > 33.72 (9 df, p = 1e-4)", counts, chi)
	}
}

// TestUnitKeptRanksIsUnitMomentsRule: UnitKeptRanks (the rule the Beam
// pipeline applies to a unit's gathered rows) keeps exactly the rows
// UnitStreamBatches keeps under the same key, min(n_u, K) of each unit, for
// several K and keys.
func TestUnitKeptRanksIsUnitMomentsRule(t *testing.T) {
	s := mustSchema(t, unitSchema)
	counts := map[string]int{"q1": 7, "q2": 1, "q3": 4, "q4": 7, "q5": 3, "q6": 6, "p0": 5}
	order := []string{"q1", "q2", "p0", "q3", "q4", "q5", "q6"}
	path := writeFile(t, "panel.csv", panelCSV(counts, order))
	for _, k := range []int{1, 2, 3, 6} {
		for _, seed := range []byte{1, 9} {
			got := map[string][]int64{}
			_, err := UnitStreamBatches(context.Background(), path, s, Options{Keep: []string{"person", "a"}},
				UnitOptions{Column: "person", MaxRows: k, Rand: keyReader(seed)}, func(b Batch) error {
					for i := 0; i+1 < len(b.Keep); i += 2 {
						var a int64
						fmt.Sscan(b.Keep[i+1], &a)
						got[b.Keep[i]] = append(got[b.Keep[i]], int64(bits.TrailingZeros64(uint64(a))))
					}
					return nil
				})
			if err != nil {
				t.Fatal(err)
			}
			key := bytes.Repeat([]byte{seed}, UnitKeySize)
			for p, n := range counts {
				want := UnitKeptRanks(key, p, int64(n), k)
				if len(want) != min(n, k) || fmt.Sprint(got[p]) != fmt.Sprint(want) {
					t.Errorf("K = %d, key %d, unit %s of %d rows: streamed ranks %v, UnitKeptRanks %v (want %d)", k, seed, p, n, got[p], want, min(n, k))
				}
			}
		}
	}
}
