package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// workedExample returns the commands of the README's worked example: the
// first ```sh block after its heading, with continued lines joined.
func workedExample(t *testing.T, readme string) []string {
	t.Helper()
	i := strings.Index(readme, "## A worked example")
	if i < 0 {
		t.Fatal("README has no worked example")
	}
	rest := readme[i:]
	j := strings.Index(rest, "```sh\n")
	if j < 0 {
		t.Fatal("worked example has no sh block")
	}
	rest = rest[j+len("```sh\n"):]
	block := rest[:strings.Index(rest, "```")]
	block = strings.ReplaceAll(block, "\\\n", " ")
	var cmds []string
	for _, l := range strings.Split(block, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			cmds = append(cmds, l)
		}
	}
	return cmds
}

// shellWords splits a command line on blanks, honouring single and double
// quotes (enough for the README's dplearn lines, which use no expansions).
func shellWords(line string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	for _, r := range line {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

// TestREADMEWorkedExample runs the README's worked example as written, in
// a fresh directory that holds only a link to exampledata (no ../shared):
// the build line must build bin/dplearn from ./cmd/dplearn, every dplearn
// line calls bin/dplearn and runs in-process (the binary's code), and the
// other lines (head, tail) run in bash.
func TestREADMEWorkedExample(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cmds := workedExample(t, string(readme))
	dir := t.TempDir()
	if err := os.Symlink(filepath.Join(repo, "exampledata"), filepath.Join(dir, "exampledata")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "shared")); err == nil {
		t.Fatal("the test directory has a ../shared")
	}
	t.Chdir(dir)
	built, ran := false, 0
	for _, c := range cmds {
		words := shellWords(c)
		switch {
		case strings.HasPrefix(c, "go build"):
			if c != "go build -o bin/dplearn ./cmd/dplearn" {
				t.Fatalf("the build line %q does not build bin/dplearn", c)
			}
			built = true
		case words[0] == "bin/dplearn":
			if !built {
				t.Fatalf("%q runs before the binary is built", c)
			}
			cmd := newRootCmd()
			var out, errb bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&errb)
			cmd.SetArgs(words[1:])
			if err := cmd.ExecuteContext(context.Background()); err != nil {
				t.Fatalf("%s: %v\n%s", c, err, errb.String())
			}
			ran++
		case strings.Contains(c, "dplearn"):
			t.Fatalf("%q calls dplearn other than as bin/dplearn", c)
		default:
			out, err := exec.Command("bash", "-c", c).CombinedOutput()
			if err != nil {
				t.Fatalf("%s: %v\n%s", c, err, out)
			}
		}
	}
	if ran < 4 {
		t.Fatalf("only %d dplearn commands in the worked example", ran)
	}
	for _, f := range []string{"my-schema.json", "wage.json", "predictions.csv"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("the worked example did not make %s: %v", f, err)
		}
	}
	if lines := strings.Count(readFile(t, filepath.Join(dir, "predictions.csv")), "\n"); lines != 5001 {
		t.Errorf("predictions.csv has %d lines, want 5001", lines)
	}
	// The schema in the README text is the file the example fits with.
	js := string(readme)[strings.Index(string(readme), "```json\n")+len("```json\n"):]
	js = js[:strings.Index(js, "```")]
	if strings.Join(strings.Fields(js), "") != strings.Join(strings.Fields(readFile(t, filepath.Join(repo, "exampledata", "schemas", "cps1988.json"))), "") {
		t.Error("the README's schema differs from exampledata/schemas/cps1988.json")
	}
}
