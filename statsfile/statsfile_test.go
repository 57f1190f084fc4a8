package statsfile

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
)

const testSchema = `{"target": {"name": "y", "range": [0, 1]}, "features": [{"name": "a", "range": [0, 10]}, {"name": "b", "categories": ["u", "v", "w"]}]}`

func fixture(t *testing.T) (*schema.Schema, *suffstat.Moments) {
	t.Helper()
	s, err := schema.Parse([]byte(testSchema))
	if err != nil {
		t.Fatal(err)
	}
	k := len(s.FeatureNames()) + 1
	m := suffstat.New(k)
	row := make([]float64, k)
	for r := 0; r < 50; r++ {
		for i := range row {
			row[i] = float64((r*7+i*3)%11)/10 - 0.5
		}
		if err := m.AddRows(row); err != nil {
			t.Fatal(err)
		}
	}
	return s, m
}

func TestRoundTrip(t *testing.T) {
	s, m := fixture(t)
	p := filepath.Join(t.TempDir(), "stats.json")
	for _, skip := range []bool{false, true} {
		if err := Write(p, s, Stats{Moments: m, SkipBadRows: skip}); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != Perm {
			t.Fatalf("mode %v, want %v", fi.Mode().Perm(), Perm)
		}
		data, _ := os.ReadFile(p)
		if first := strings.SplitN(string(data), "\n", 3)[1]; !strings.Contains(first, "PRIVATE") {
			t.Fatalf("the first field does not say PRIVATE: %q", first)
		}
		got, err := Read(p, s)
		if err != nil {
			t.Fatal(err)
		}
		a, _ := m.MarshalBinary()
		b, _ := got.Moments.MarshalBinary()
		if !bytes.Equal(a, b) || got.SkipBadRows != skip {
			t.Fatalf("round trip changed the statistics or the skip flag (%v)", got.SkipBadRows)
		}
	}
}

func TestRefusals(t *testing.T) {
	s, m := fixture(t)
	dir := t.TempDir()
	good, err := Encode(s, Stats{Moments: m})
	if err != nil {
		t.Fatal(err)
	}
	other, _ := schema.Parse([]byte(strings.Replace(testSchema, `"w"]`, `"x"]`, 1)))
	otherRange, _ := schema.Parse([]byte(strings.Replace(testSchema, `[0, 10]`, `[0, 20]`, 1)))
	write := func(name string, data []byte, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil {
			t.Fatal(err)
		}
		return p
	}
	edit := func(old, new string) []byte { return []byte(strings.Replace(string(good), old, new, 1)) }
	for _, tc := range []struct {
		name   string
		path   string
		schema *schema.Schema
		want   string
		is     error
	}{
		{"group readable", write("g.json", good, 0o640), s, "readable by other users", ErrReadable},
		{"world readable", write("w.json", good, 0o604), s, "chmod 600", ErrReadable},
		{"other schema", write("o.json", good, 0o600), other, "different schema", ErrSchemaMismatch},
		// issue 25 item 6: name the column and field, not two identical
		// column lists.
		{"other categories named", write("o2.json", good, 0o600), other, `column "b": field "categories" is ["u","v","w"] in one schema and ["u","v","x"]`, ErrSchemaMismatch},
		{"other range named", write("o3.json", good, 0o600), otherRange, `column "a": field "range" is [0,10] in one schema and [0,20]`, ErrSchemaMismatch},
		{"not json", write("n.json", []byte("a,b\n1,2\n"), 0o600), s, "not a statistics file", nil},
		{"format", write("f.json", edit(`"dplearn-statistics"`, `"other"`), 0o600), s, "not a statistics file", nil},
		{"newer version", write("v.json", edit(`"version": 2`, `"version": 3`), 0o600), s, "version 3 is newer than this build reads (versions 1 to 2)", nil},
		{"version 0", write("v0.json", edit(`"version": 2`, `"version": 0`), 0o600), s, "version 0 is not a version", nil},
		{"version 2 without its schema", write("v2.json", withoutDeclaration(t, good, 2), 0o600), s, `lacks its "schema" declaration`, nil},
		{"unknown key", write("u.json", edit(`"format"`, `"extra": 1, "format"`), 0o600), s, "unknown field", nil},
		{"columns", write("c.json", edit(`"a"`, `"z"`), 0o600), s, "different schema", ErrSchemaMismatch},
		{"corrupt moments", write("m.json", edit(`"moments": "`, `"moments": "AAAA`), 0o600), s, "corrupt", suffstat.ErrCorrupt},
		{"directory", dir, s, "not a regular file", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(tc.path, tc.schema)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Fatalf("err = %v does not wrap %v", err, tc.is)
			}
		})
	}
	if _, err := Encode(s, Stats{Moments: suffstat.New(2)}); err == nil {
		t.Error("Encode accepted statistics of the wrong width")
	}
	empty, _ := Encode(s, Stats{Moments: suffstat.New(m.K())})
	if _, err := Decode(empty, "e", s); err == nil || !strings.Contains(err.Error(), "no rows") {
		t.Errorf("no rows: err = %v", err)
	}
}

// withoutDeclaration returns the file good with the given version and no
// "schema" declaration (a version 1 file as written before the field).
func withoutDeclaration(t *testing.T, good []byte, version int) []byte {
	t.Helper()
	var f fileJSON
	if err := json.Unmarshal(good, &f); err != nil {
		t.Fatal(err)
	}
	f.Version, f.Declaration = version, nil
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(b, []byte(`"schema":`)) {
		t.Fatal("declaration still present")
	}
	return b
}

// TestReadsVersion1 checks the version bump that came with the "schema"
// field: Encode writes version 2 with the declaration; version 1 files,
// without the declaration (before the field) or with it (written by the
// builds that added it without a bump), read to the same statistics; a
// version 1 file without the declaration still refuses another schema,
// naming the column lists when they differ. On the starting commit Encode
// wrote version 1.
func TestReadsVersion1(t *testing.T) {
	s, m := fixture(t)
	good, err := Encode(s, Stats{Moments: m})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(good, []byte(`"version": 2`)) || !bytes.Contains(good, []byte(`"schema": {`)) {
		t.Fatalf("Encode wrote no version 2 file with its declaration:\n%s", good)
	}
	want, _ := m.MarshalBinary()
	withDecl := bytes.Replace(good, []byte(`"version": 2`), []byte(`"version": 1`), 1)
	for name, data := range map[string][]byte{
		"version 1 without the declaration": withoutDeclaration(t, good, 1),
		"version 1 with the declaration":    withDecl,
	} {
		t.Run(name, func(t *testing.T) {
			got, err := Decode(data, "old.json", s)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := got.Moments.MarshalBinary()
			if !bytes.Equal(b, want) {
				t.Fatal("version 1 file read to other statistics")
			}
		})
	}
	other, _ := schema.Parse([]byte(strings.Replace(testSchema, `"w"]`, `"x"]`, 1)))
	_, err = Decode(withoutDeclaration(t, good, 1), "old.json", other)
	if !errors.Is(err, ErrSchemaMismatch) || !strings.Contains(err.Error(), "file columns") {
		t.Fatalf("version 1 file under another schema: err = %v, want a mismatch naming the columns", err)
	}
}
