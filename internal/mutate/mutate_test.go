package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestParseList(t *testing.T) {
	for _, c := range []struct {
		name, in string
		want     []Mutant
		err      string // substring of the error; "" means none
	}{
		{name: "one entry", in: "# why: halves Δ1\nfile: regress/fm.go\nfind: sens1 := 2 * float64(d)\nreplace: sens1 := 1 * float64(d)\ntest: ./regress TestGaussianFMSensitivity\n",
			want: []Mutant{{List: "l.txt", Line: 1, Why: "halves Δ1", File: "regress/fm.go", Find: "sens1 := 2 * float64(d)", Replace: "sens1 := 1 * float64(d)", Package: "./regress", Run: "TestGaussianFMSensitivity"}}},
		{name: "header, two entries, ci, empty replace, comments",
			in: "# Mutants of the noise package.\n# more header\n\n\n# why: a\n# a comment line\nfile: a.go\nfind: x := 2\nreplace: x := 1\ntest: ./a TestA|TestB\nci: yes\n\n# why: b\nfile: b/b.go\nfind:   y + z  \nreplace:\ntest: ./b TestB\n",
			want: []Mutant{
				{List: "l.txt", Line: 5, Why: "a", File: "a.go", Find: "x := 2", Replace: "x := 1", Package: "./a", Run: "TestA|TestB", CI: true},
				{List: "l.txt", Line: 13, Why: "b", File: "b/b.go", Find: "  y + z  ", Replace: "", Package: "./b", Run: "TestB"},
			}},
		{name: "CRLF and no final newline", in: "# why: a\r\nfile: a.go\r\nfind: p\r\nreplace: q\r\ntest: ./a TestA",
			want: []Mutant{{List: "l.txt", Line: 1, Why: "a", File: "a.go", Find: "p", Replace: "q", Package: "./a", Run: "TestA"}}},
		{name: "colon in values", in: "# why: a: b\nfile: a.go\nfind: m := map[string]int{\"a\": 1}\nreplace: m := map[string]int{\"a\": 2}\ntest: ./a TestA\n",
			want: []Mutant{{List: "l.txt", Line: 1, Why: "a: b", File: "a.go", Find: `m := map[string]int{"a": 1}`, Replace: `m := map[string]int{"a": 2}`, Package: "./a", Run: "TestA"}}},
		{name: "missing test", in: "# why: a\nfile: a.go\nfind: p\nreplace: q\n", err: "l.txt:1: entry missing test"},
		{name: "missing why", in: "file: a.go\nfind: p\nreplace: q\ntest: ./a TestA\n", err: "l.txt:1: entry missing # why"},
		{name: "two entries without a blank line", in: "# why: a\nfile: a.go\nfind: p\nreplace: q\ntest: ./a TestA\n# why: b\n", err: "l.txt:6: second \"# why\""},
		{name: "duplicate key", in: "# why: a\nfile: a.go\nfile: b.go\n", err: "l.txt:3: second \"file\""},
		{name: "unknown key", in: "# why: a\nfiel: a.go\n", err: "unknown key \"fiel\""},
		{name: "not key value", in: "# why: a\njust text\n", err: "want \"key: value\""},
		{name: "test without regexp", in: "# why: a\nfile: a.go\nfind: p\nreplace: q\ntest: ./a\n", err: "test must be"},
		{name: "test not relative", in: "# why: a\nfile: a.go\nfind: p\nreplace: q\ntest: github.com/x/a TestA\n", err: "test must be"},
		{name: "absolute file", in: "# why: a\nfile: /etc/passwd\n", err: "file must be a path inside the module"},
		{name: "parent file", in: "# why: a\nfile: ../x.go\n", err: "file must be a path inside the module"},
		{name: "no-op mutation", in: "# why: a\nfile: a.go\nfind: p\nreplace: p\ntest: ./a TestA\n", err: "replace equals find"},
		{name: "empty find", in: "# why: a\nfile: a.go\nfind:\nreplace: p\ntest: ./a TestA\n", err: "empty find"},
		{name: "bad ci", in: "# why: a\nfile: a.go\nfind: p\nreplace: q\ntest: ./a TestA\nci: maybe\n", err: "ci must be yes or no"},
		{name: "empty why", in: "# why:\n", err: "empty \"# why\""},
		{name: "only comments", in: "# header\n# more\n", want: nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseList("l.txt", strings.NewReader(c.in))
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one containing %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("got  %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func TestMutate(t *testing.T) {
	m := Mutant{List: "l.txt", Line: 7, File: "f.go"}
	for _, c := range []struct {
		name, src, find, replace, want, err string
	}{
		{"once", "a := 2 * b\nc := 2\n", "2 * b", "1 * b", "a := 1 * b\nc := 2\n", ""},
		{"delete a term", "s := x + y + z\n", " + y", "", "s := x + z\n", ""},
		{"absent", "a := 2\n", "a := 3", "a := 4", "", "l.txt:7: find \"a := 3\" does not occur in f.go"},
		{"twice", "a := 2\na := 2\n", "a := 2", "a := 3", "", "l.txt:7: find \"a := 2\" occurs 2 times in f.go (must be exactly once)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			m.Find, m.Replace = c.find, c.replace
			got, err := Mutate([]byte(c.src), m)
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || string(got) != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

// TestWriteOverlay checks the overlay step: the JSON maps the original
// file's absolute path to a mutated copy in the temporary directory, and
// the original is left unchanged.
func TestWriteOverlay(t *testing.T) {
	root := t.TempDir()
	orig := []byte("package p\n\nconst Sens = 2.0\n")
	if err := os.MkdirAll(filepath.Join(root, "p"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "p", "p.go"), orig, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, find, err string
	}{
		{"applies", "Sens = 2.0", ""},
		{"stale find", "Sens = 4.0", "does not occur"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tmp := t.TempDir()
			m := Mutant{List: "l.txt", Line: 1, File: "p/p.go", Find: c.find, Replace: "Sens = 1.0"}
			ov, err := WriteOverlay(root, tmp, m)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var o struct{ Replace map[string]string }
			data, err := os.ReadFile(ov)
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(data, &o); err != nil {
				t.Fatal(err)
			}
			abs, _ := filepath.Abs(filepath.Join(root, "p", "p.go"))
			to, ok := o.Replace[abs]
			if len(o.Replace) != 1 || !ok || filepath.Dir(to) != tmp {
				t.Fatalf("overlay %s, want %s mapped into %s", data, abs, tmp)
			}
			if got, _ := os.ReadFile(to); string(got) != "package p\n\nconst Sens = 1.0\n" {
				t.Errorf("mutated copy %q", got)
			}
			if got, _ := os.ReadFile(filepath.Join(root, "p", "p.go")); !bytes.Equal(got, orig) {
				t.Errorf("the original was changed: %q", got)
			}
		})
	}
}

func TestClassify(t *testing.T) {
	for _, c := range []struct {
		name    string
		out     string
		failed  bool
		outcome Outcome
		killers []string
		detail  string
	}{
		{"pass", "ok  \tgithub.com/x/p\t0.1s\n", false, Survived, nil, ""},
		{"no tests", "ok  \tgithub.com/x/p\t0.1s [no tests to run]\n", false, Errored, nil, "matches no test"},
		{"fail", "--- FAIL: TestA (0.0s)\n    a_test.go:3: bad\n--- FAIL: TestB (0.0s)\n    --- FAIL: TestB/sub (0.0s)\nFAIL\nFAIL\tgithub.com/x/p\t0.1s\n", true, Killed, []string{"TestA", "TestB"}, ""},
		{"subtest only line", "    --- FAIL: TestC/x (0.0s)\nFAIL\n", true, Killed, []string{"TestC"}, ""},
		{"build", "# github.com/x/p\np/p.go:3:1: syntax error\nFAIL\tgithub.com/x/p [build failed]\n", true, Errored, nil, "does not build"},
		{"timeout", "panic: test timed out after 1s\n", true, Errored, nil, "timed out"},
		{"panic", "panic: runtime error: index out of range\nFAIL\tgithub.com/x/p\t0.1s\n", true, Killed, []string{"(panic)"}, ""},
		{"other", "FAIL\tgithub.com/x/p\t0.1s\n", true, Errored, nil, "without a failing test"},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, k, d := Classify(c.out, c.failed)
			if o != c.outcome || !reflect.DeepEqual(k, c.killers) || !strings.Contains(d, c.detail) {
				t.Errorf("got %s %v %q, want %s %v %q", o, k, d, c.outcome, c.killers, c.detail)
			}
		})
	}
}

func TestSelect(t *testing.T) {
	ms := []Mutant{{List: "a.txt", Line: 1, File: "x/x.go", Why: "halves Δ", CI: true}, {List: "b.txt", Line: 9, File: "y/y.go", Why: "drops a term"}}
	for _, c := range []struct {
		expr string
		ci   bool
		want int
		err  bool
	}{{"", false, 2, false}, {"", true, 1, false}, {"b.txt:9", false, 1, false}, {"x/x.go", false, 1, false}, {"term", false, 1, false}, {"nothing", false, 0, true}, {"(", false, 0, true}} {
		got, err := Select(ms, c.expr, c.ci)
		if (err != nil) != c.err || len(got) != c.want {
			t.Errorf("Select(%q, %v) = %d mutants, %v; want %d", c.expr, c.ci, len(got), err, c.want)
		}
	}
}

// TestRunEndToEnd runs the runner on a throwaway module with one mutant
// its test kills, one it cannot see, one that does not compile and one whose
// test matches nothing: the verdicts are killed, survived, errored and
// errored, and the module's file is unchanged.
func TestRunEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a throwaway module four times")
	}
	root, files := throwawayModule(t)
	ms := []Mutant{
		{List: "l.txt", Line: 1, File: "p/p.go", Find: "return 2 / float64(n)", Replace: "return 1 / float64(n)", Package: "./p", Run: "TestScale"},
		{List: "l.txt", Line: 7, File: "p/p.go", Find: "return 3", Replace: "return 4", Package: "./p", Run: "TestScale"},
		{List: "l.txt", Line: 13, File: "p/p.go", Find: "return 3", Replace: "return x", Package: "./p", Run: "TestScale"},
		{List: "l.txt", Line: 19, File: "p/p.go", Find: "return 3", Replace: "return 5", Package: "./p", Run: "TestNothing"},
	}
	res, err := Run(context.Background(), ms, Options{Root: root, Timeout: time.Minute, Baseline: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []Outcome{Killed, Survived, Errored, Errored}
	for i, r := range res {
		if r.Outcome != want[i] {
			t.Errorf("%s: %s (%s), want %s\n%s", r.Mutant.ID(), r.Outcome, r.Detail, want[i], r.Output)
		}
	}
	if len(res) == 4 && !reflect.DeepEqual(res[0].Killers, []string{"TestScale"}) {
		t.Errorf("killers %v, want TestScale", res[0].Killers)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "p/p.go")); string(got) != files["p/p.go"] {
		t.Errorf("the module's file was changed:\n%s", got)
	}
	var b bytes.Buffer
	if n := Summarise(&b, res, false); n != 3 || !strings.Contains(b.String(), "4 mutants: 1 killed, 1 survived, 2 errored") {
		t.Errorf("summary (%d bad):\n%s", n, b.String())
	}
}

// throwawayModule writes a one-package module (a noise scale with its
// test and a function with none) to a temporary directory.
func throwawayModule(t *testing.T) (root string, files map[string]string) {
	t.Helper()
	root = t.TempDir()
	files = map[string]string{
		"go.mod":      "module example.com/m\n\ngo 1.21\n",
		"p/p.go":      "package p\n\n// Scale is the noise scale.\nfunc Scale(n int) float64 { return 2 / float64(n) }\n\n// Unused has no test.\nfunc Unused() int { return 3 }\n",
		"p/p_test.go": "package p\n\nimport \"testing\"\n\nfunc TestScale(t *testing.T) {\n\tif Scale(4) != 0.5 {\n\t\tt.Fatal(Scale(4))\n\t}\n}\n",
	}
	writeFiles(t, root, files)
	return root, files
}

// writeFiles writes each file (by its slash path) below root.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestBuildAll checks -check -build's step: of two mutants that apply, the
// one whose replacement leaves a variable unused (the way regress.txt:82
// reached CI) is reported by ID and with the compiler's message, the one
// that compiles is not, and the module's file is unchanged.
func TestBuildAll(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a throwaway module twice")
	}
	root, files := throwawayModule(t)
	ms := []Mutant{
		{List: "l.txt", Line: 1, File: "p/p.go", Find: "return 2 / float64(n)", Replace: "return 1 / float64(n)", Package: "./p", Run: "TestScale"},
		{List: "l.txt", Line: 7, File: "p/p.go", Find: "return 2 / float64(n)", Replace: "j := n; return 2", Package: "./p", Run: "TestScale"},
	}
	broken := BuildAll(context.Background(), root, ms)
	if len(broken) != 1 || !strings.Contains(broken[0], "l.txt:7") || !strings.Contains(broken[0], "declared and not used") {
		t.Fatalf("broken = %q, want only l.txt:7 with the compiler's message", broken)
	}
	if got, _ := os.ReadFile(filepath.Join(root, "p/p.go")); string(got) != files["p/p.go"] {
		t.Errorf("the module's file was changed:\n%s", got)
	}
}

// TestRunFlags drives the command as a developer does, from the root of a
// throwaway module with a mutation list: each flag combination's exit
// status and the line that names what happened. -check alone only applies
// the entries; -check -build compiles them and names the one that does not
// build; -build without -check is refused; a stale find text is refused
// before anything runs, with its entry named.
func TestRunFlags(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a throwaway module")
	}
	root, _ := throwawayModule(t)
	lists := map[string]string{
		"good/l.txt": "# why: halves the scale\nfile: p/p.go\nfind: return 2 / float64(n)\nreplace: return 1 / float64(n)\ntest: ./p TestScale\n\n" +
			"# why: does not compile\nfile: p/p.go\nfind: return 2 / float64(n)\nreplace: j := n; return 2\ntest: ./p TestScale\n",
		"stale/l.txt": "# why: stale\nfile: p/p.go\nfind: return 9\nreplace: return 8\ntest: ./p TestScale\n",
	}
	writeFiles(t, root, lists)
	t.Chdir(filepath.Join(root, "p")) // the root is found from below, too
	for _, c := range []struct {
		name         string
		args         []string
		code         int
		stdout, errs string // substrings; "" checks nothing
	}{
		{"check applies", []string{"-list", "good", "-check"}, 0, "2 mutants selected", ""},
		{"check selects", []string{"-list", "good", "-check", "-run", "l.txt:1$"}, 0, "1 mutants selected", ""},
		{"check build names the broken entry", []string{"-list", "good", "-check", "-build"}, 2, "1 of 2 mutated packages build", "l.txt:7"},
		{"check build of the good one", []string{"-list", "good", "-check", "-build", "-run", "l.txt:1$"}, 0, "1 of 1 mutated packages build", ""},
		{"build without check", []string{"-list", "good", "-build"}, 2, "", "-build goes with -check"},
		{"stale entry", []string{"-list", "stale", "-check"}, 2, "", "1 entries do not apply"},
		{"no such list", []string{"-list", "none", "-check"}, 2, "", "mutate:"},
		{"unknown flag", []string{"-bogus"}, 2, "", "flag provided but not defined"},
		{"stray argument", []string{"-check", "extra"}, 2, "", "unexpected arguments"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := run(c.args, &out, &errb)
			if code != c.code || !strings.Contains(out.String(), c.stdout) || !strings.Contains(errb.String(), c.errs) {
				t.Errorf("run(%q) = %d, want %d with stdout ∋ %q, stderr ∋ %q\nstdout:\n%s\nstderr:\n%s",
					c.args, code, c.code, c.stdout, c.errs, out.String(), errb.String())
			}
		})
	}
}
