package dataset

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/schema"
)

// momentsOf returns N and the flat Σz, Σzzᵀ entries for comparison.
func momentsOf(t *testing.T, path string, s *schema.Schema, opt Options) (int64, []float64) {
	t.Helper()
	m, _, err := Moments(context.Background(), path, s, opt)
	if err != nil {
		t.Fatal(err)
	}
	var v []float64
	for i := 0; i < m.K(); i++ {
		v = append(v, m.Sum(i))
		for j := 0; j < m.K(); j++ {
			v = append(v, m.At(i, j))
		}
	}
	return m.N(), v
}

// TestDelimiters reads the same table written with each delimiter (with a
// quoted field holding the delimiter) and gets bit-identical statistics.
func TestDelimiters(t *testing.T) {
	s := mustSchema(t, testSchema)
	rows := [][]string{{"a", "b", "y", "note"}, {"1", "u", "2", `"x,;	y"`}, {"3.5", "v", "-4", "z"}, {"7", "w", "9", `""`}}
	var want []float64
	for _, d := range []byte{',', ';', '\t'} {
		var b strings.Builder
		for _, r := range rows {
			b.WriteString(strings.Join(r, string(d)) + "\n")
		}
		path := writeFile(t, "d.csv", []byte(b.String()))
		n, got := momentsOf(t, path, s, Options{Delimiter: d})
		if n != 3 {
			t.Fatalf("delimiter %q: N = %d", d, n)
		}
		if want == nil {
			want = got
		} else if !equalRows(got, want) {
			t.Fatalf("delimiter %q: statistics differ", d)
		}
		if d == ',' {
			continue
		}
		// Read with the default ',' the header is one column: the error
		// names the delimiter to pass.
		_, _, err := Moments(context.Background(), path, s, Options{})
		var de *DelimiterError
		if !errors.As(err, &de) || de.Likely != d || !strings.Contains(err.Error(), "--delimiter "+DelimiterFlag(d)) {
			t.Fatalf("delimiter %q read as ',': %v", d, err)
		}
	}
	if _, _, err := Moments(context.Background(), writeFile(t, "d.csv", []byte("a,b,y\n1,u,2\n")), s, Options{Delimiter: '"'}); err == nil {
		t.Fatal(`'"' accepted as a delimiter`)
	}
}

// TestStdin reads "-" from Options.Stdin, gzip-compressed or not.
func TestStdin(t *testing.T) {
	s := mustSchema(t, testSchema)
	text := "a,b,y\n1,u,2\n3,v,oops\n"
	path := writeFile(t, "d.csv", []byte(text))
	_, want := momentsOf(t, path, s, Options{SkipBadRows: true})
	n, got := momentsOf(t, "-", s, Options{SkipBadRows: true, Stdin: strings.NewReader(text)})
	if n != 1 || !equalRows(got, want) {
		t.Fatalf("stdin: N = %d, statistics equal %v", n, equalRows(got, want))
	}
	_, _, err := Moments(context.Background(), "-", s, Options{Stdin: strings.NewReader(text)})
	if err == nil || !strings.HasPrefix(err.Error(), "stdin:3:3:") {
		t.Fatalf("error from stdin: %v", err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(text))
	zw.Close()
	n, got = momentsOf(t, "-", s, Options{SkipBadRows: true, Stdin: &gz})
	if n != 1 || !equalRows(got, want) {
		t.Fatalf("gzip on stdin: N = %d, statistics equal %v", n, equalRows(got, want))
	}
}

// TestKeepDropped: a dropped record becomes a zero row, so N stays the
// number of records and the sums equal those of the kept records; without
// KeepDropped it is left out. The counts say which column dropped it.
func TestKeepDropped(t *testing.T) {
	s := mustSchema(t, `{"target": {"name": "y", "range": [-10, 10], "missing": "drop"},
 "features": [{"name": "a", "range": [0, 10], "missing": "drop"}, {"name": "b", "categories": ["u", "v", "w"], "missing": "impute", "impute": "v"}]}`)
	full := writeFile(t, "full.csv", []byte("id,a,b,y\nr1,1,u,2\nr2,NA,v,3\nr3,4,,5\nr4,20,w,\nr5,6,w,7\n"))
	kept := writeFile(t, "kept.csv", []byte("id,a,b,y\nr1,1,u,2\nr3,4,v,5\nr5,6,w,7\n"))
	_, want := momentsOf(t, kept, s, Options{})
	n, got := momentsOf(t, full, s, Options{KeepDropped: true})
	if n != 5 || !equalRows(got, want) {
		t.Fatalf("KeepDropped: N = %d (want 5), sums equal %v", n, equalRows(got, want))
	}
	n, got = momentsOf(t, full, s, Options{SkipDropped: true})
	if n != 3 || !equalRows(got, want) {
		t.Fatalf("drop: N = %d (want 3), statistics equal %v", n, equalRows(got, want))
	}
	// A reader that chose neither cannot change N silently: a bad row.
	if _, _, err := Moments(context.Background(), full, s, Options{}); !errors.Is(err, schema.ErrDropped) || !strings.Contains(err.Error(), "full.csv:3:2:") {
		t.Fatalf("drop without a choice: %v", err)
	}
	if _, sum, err := Moments(context.Background(), full, s, Options{SkipBadRows: true}); err != nil || sum.Skipped != 2 || sum.Dropped != 0 {
		t.Fatalf("drop without a choice, skipping bad rows: %+v %v", sum, err)
	}
	var flags []bool
	var ids []string
	sum, err := StreamBatches(context.Background(), full, s, Options{KeepDropped: true, Keep: []string{"id"}}, func(b Batch) error {
		flags = append(flags, b.Dropped...)
		ids = append(ids, b.Keep...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(ids, ",") != "r1,r2,r3,r4,r5" || len(flags) != 5 || !flags[1] || !flags[3] || flags[0] || flags[2] || flags[4] {
		t.Fatalf("flags %v ids %v", flags, ids)
	}
	if sum.Rows != 5 || sum.Dropped != 2 {
		t.Fatalf("summary %+v", sum)
	}
	c := sum.Columns
	// Columns: a, b, y. r2 dropped by a, r4 dropped by y; r3's b imputed;
	// r4's a=20 is not counted as clipped (its record was dropped).
	if c.Dropped[0] != 1 || c.Dropped[2] != 1 || c.Imputed[1] != 1 || c.Clipped[0] != 0 {
		t.Fatalf("counts %+v", c)
	}
	if _, err := StreamBatches(context.Background(), full, s, Options{Keep: []string{"nope"}}, func(Batch) error { return nil }); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("unknown pass-through column: %v", err)
	}
	all := writeFile(t, "all.csv", []byte("id,a,b,y\nr2,NA,v,3\n"))
	if _, _, err := Moments(context.Background(), all, s, Options{SkipDropped: true}); !errors.Is(err, ErrNoRows) || !strings.Contains(err.Error(), "all 1 row dropped") {
		t.Fatalf("every row dropped: %v", err)
	}
}

func TestSkippedByColumn(t *testing.T) {
	s := mustSchema(t, testSchema)
	path := writeFile(t, "d.csv", []byte("a,b,y\n1,u,2\nx,u,2\n1,q,2\n1,u\n"))
	_, sum, err := Moments(context.Background(), path, s, Options{SkipBadRows: true})
	if err != nil {
		t.Fatal(err)
	}
	got := sum.SkippedByColumn
	if sum.Skipped != 3 || got["a"] != 1 || got["b"] != 1 || got["y"] != 1 {
		t.Fatalf("skipped %d by column %v", sum.Skipped, got)
	}
}

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int64
		want string
	}{{0, "0 rows"}, {1, "1 row"}, {2, "2 rows"}} {
		if got := Plural(c.n, "row"); got != c.want {
			t.Errorf("Plural(%d) = %q", c.n, got)
		}
	}
}

// TestReadHeader reads column names only, from CSV (any delimiter, stdin)
// and Parquet.
func TestReadHeader(t *testing.T) {
	for _, c := range []struct {
		path string
		opt  Options
		want string
	}{
		{writeFile(t, "h.csv", []byte("\ufeffa,\"b,c\",y\n1,2,3\n")), Options{}, "a|b,c|y"},
		{writeFile(t, "h.tsv", []byte("a\tb\ty\n")), Options{Delimiter: '\t'}, "a|b|y"},
		{"-", Options{Stdin: strings.NewReader("p;q\n1;2\n"), Delimiter: ';'}, "p|q"},
		{writeParquet(t, "h.parquet", []pqRec{{A: 1, B: "u", N: 2}}), Options{}, "a|b|y|n"},
	} {
		h, err := ReadHeader(c.path, c.opt)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if got := strings.Join(h, "|"); strings.TrimPrefix(got, "\ufeff") != c.want {
			t.Errorf("%s: header %q, want %q", c.path, got, c.want)
		}
	}
	if _, err := ReadHeader(t.TempDir(), Options{}); !errors.Is(err, ErrNotTable) {
		t.Errorf("directory: %v", err)
	}
}

// TestKeepBadRows: with SkipBadRows and KeepBadRows a bad record (a value
// that is not a number, a wrong number of fields) is an all-zero row: N is
// the number of records read and the sums are those of the good records,
// through Moments, Load and StreamBatches alike.
func TestKeepBadRows(t *testing.T) {
	s := mustSchema(t, testSchema)
	bad := writeFile(t, "bad.csv", []byte("id,a,b,y\nr1,1,u,2\nr2,abc,v,3\nr3,4,v,5\nr4,5,w\nr5,6,w,7\n"))
	good := writeFile(t, "good.csv", []byte("id,a,b,y\nr1,1,u,2\nr3,4,v,5\nr5,6,w,7\n"))
	_, want := momentsOf(t, good, s, Options{})
	opt := Options{SkipBadRows: true, KeepBadRows: true}
	n, got := momentsOf(t, bad, s, opt)
	if n != 5 || !equalRows(got, want) {
		t.Fatalf("Moments: N = %d (want 5 records read), sums equal %v", n, equalRows(got, want))
	}
	tab, sum, err := Load(context.Background(), bad, s, opt)
	if err != nil || sum.Rows != 5 || sum.Skipped != 2 || len(tab.Rows) != 5*tab.K {
		t.Fatalf("Load: %+v, %d values, %v", sum, len(tab.Rows), err)
	}
	for _, i := range []int{1, 3} {
		for _, v := range tab.Rows[i*tab.K : (i+1)*tab.K] {
			if v != 0 {
				t.Fatalf("bad record %d encoded as %v", i+1, tab.Rows[i*tab.K:(i+1)*tab.K])
			}
		}
	}
	var ids []string
	if _, err := StreamBatches(context.Background(), bad, s, Options{SkipBadRows: true, KeepBadRows: true, KeepDropped: true, Keep: []string{"id"}}, func(b Batch) error {
		ids = append(ids, b.Keep...)
		if len(b.Dropped) != len(b.Keep) {
			t.Fatalf("%d flags for %d rows", len(b.Dropped), len(b.Keep))
		}
		return nil
	}); err != nil || len(ids) != 5 {
		t.Fatalf("StreamBatches: %d rows, %v", len(ids), err)
	}
	if n, _ := momentsOf(t, bad, s, Options{SkipBadRows: true}); n != 3 {
		t.Fatalf("SkipBadRows alone: N = %d, want 3", n)
	}
}
