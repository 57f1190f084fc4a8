package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Mutant is one entry of a mutation list.
type Mutant struct {
	// List and Line locate the entry (its first line) for messages.
	List string
	Line int
	// Why is the text of the entry's "# why:" comment.
	Why string
	// File is the mutated file, relative to the module root (slash form).
	File string
	// Find is replaced by Replace; Find must occur exactly once in File.
	Find, Replace string
	// Package and Run are the `go test` package and -run regexp that must
	// fail under the mutation.
	Package, Run string
	// CI marks the entry as part of the fast subset CI runs with -ci.
	CI bool
}

// ID names the entry in reports: "list.txt:line".
func (m Mutant) ID() string { return fmt.Sprintf("%s:%d", m.List, m.Line) }

// ParseList reads a mutation list. Entries are separated by blank lines;
// each has the lines
//
//	# why: what the mutation breaks (required)
//	file: path relative to the module root
//	find: exact text, occurring exactly once in the file
//	replace: its replacement (may be empty: the text is deleted)
//	test: ./package TestRegexp
//	ci: yes            (optional: in the fast subset of -ci)
//
// Other lines beginning with '#' are comments. A value is the rest of the
// line after "key:" and one space (or none); trailing spaces of find and
// replace are kept. Lines before the first entry that are comments form
// the list's header and are ignored.
func ParseList(name string, r io.Reader) ([]Mutant, error) {
	var (
		out  []Mutant
		cur  *Mutant
		seen map[string]bool
	)
	finish := func() error {
		if cur == nil {
			return nil
		}
		m := *cur
		cur = nil
		if !seen["file"] && !seen["find"] && !seen["replace"] && !seen["test"] && m.Why == "" {
			return nil // a comment block (header), not an entry
		}
		var missing []string
		for _, k := range []string{"file", "find", "replace", "test"} {
			if !seen[k] {
				missing = append(missing, k)
			}
		}
		if m.Why == "" {
			missing = append([]string{"# why"}, missing...)
		}
		if len(missing) > 0 {
			return fmt.Errorf("%s: entry missing %s", m.ID(), strings.Join(missing, ", "))
		}
		if m.Find == "" {
			return fmt.Errorf("%s: empty find", m.ID())
		}
		if m.Find == m.Replace {
			return fmt.Errorf("%s: replace equals find (no mutation)", m.ID())
		}
		out = append(out, m)
		return nil
	}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimRight(sc.Text(), "\r")
		if strings.TrimSpace(text) == "" {
			if err := finish(); err != nil {
				return nil, err
			}
			continue
		}
		if cur == nil {
			cur = &Mutant{List: name, Line: line}
			seen = map[string]bool{}
		}
		if strings.HasPrefix(text, "#") {
			c := strings.TrimSpace(strings.TrimPrefix(text, "#"))
			if why, ok := strings.CutPrefix(c, "why:"); ok {
				if cur.Why != "" {
					return nil, fmt.Errorf("%s:%d: second \"# why\" in one entry (missing blank line?)", name, line)
				}
				cur.Why = strings.TrimSpace(why)
				if cur.Why == "" {
					return nil, fmt.Errorf("%s:%d: empty \"# why\"", name, line)
				}
			}
			continue
		}
		key, val, ok := strings.Cut(text, ":")
		if !ok {
			return nil, fmt.Errorf("%s:%d: want \"key: value\", got %q", name, line, text)
		}
		key = strings.TrimSpace(key)
		val = strings.TrimPrefix(val, " ")
		if seen[key] {
			return nil, fmt.Errorf("%s:%d: second %q in one entry (missing blank line?)", name, line, key)
		}
		seen[key] = true
		switch key {
		case "file":
			cur.File = filepath.ToSlash(strings.TrimSpace(val))
			if cur.File == "" || filepath.IsAbs(cur.File) || strings.HasPrefix(cur.File, "../") {
				return nil, fmt.Errorf("%s:%d: file must be a path inside the module, got %q", name, line, val)
			}
		case "find":
			cur.Find = val
		case "replace":
			cur.Replace = val
		case "test":
			pkg, run, _ := strings.Cut(strings.TrimSpace(val), " ")
			run = strings.TrimSpace(run)
			if !strings.HasPrefix(pkg, "./") || run == "" {
				return nil, fmt.Errorf("%s:%d: test must be \"./package TestRegexp\", got %q", name, line, val)
			}
			cur.Package, cur.Run = pkg, run
		case "ci":
			switch strings.TrimSpace(val) {
			case "yes":
				cur.CI = true
			case "no":
			default:
				return nil, fmt.Errorf("%s:%d: ci must be yes or no, got %q", name, line, val)
			}
		default:
			return nil, fmt.Errorf("%s:%d: unknown key %q (want file, find, replace, test or ci)", name, line, key)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if err := finish(); err != nil {
		return nil, err
	}
	return out, nil
}

// LoadLists parses every *.txt file of dir, in name order.
func LoadLists(dir string) ([]Mutant, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("no mutation lists (*.txt) in %s", dir)
	}
	sort.Strings(names)
	var all []Mutant
	for _, n := range names {
		f, err := os.Open(n)
		if err != nil {
			return nil, err
		}
		ms, err := ParseList(filepath.Base(n), f)
		f.Close()
		if err != nil {
			return nil, err
		}
		all = append(all, ms...)
	}
	return all, nil
}
