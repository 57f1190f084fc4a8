package chain

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestChainDetectsTampering(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.jsonl")
	f, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []string{"submit", "accept", "charge", "release"} {
		if _, err := f.Append(Entry{Actor: "alice", Action: a, Task: "t1", Detail: "ε=1"}); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()
	good, err := ReadFile(path)
	if err != nil || Verify(good) != nil || len(good) != 4 {
		t.Fatalf("clean chain: %v %v", err, Verify(good))
	}
	// reopen appends after the last entry
	f, err = OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if e, _ := f.Append(Entry{Action: "x"}); e.Seq != 5 || e.Prev != good[3].Hash {
		t.Fatalf("reopened chain appended %+v", e)
	}
	f.Close()
	good, _ = ReadFile(path)
	cases := []struct {
		name  string
		mod   func([]Entry) []Entry
		index int
	}{
		{"edit detail", func(e []Entry) []Entry { e[2].Detail = "ε=0.1"; return e }, 2},
		{"remove one", func(e []Entry) []Entry { return append(e[:1], e[2:]...) }, 1},
		{"swap two", func(e []Entry) []Entry { e[1], e[2] = e[2], e[1]; return e }, 1},
		{"rehash edited entry only", func(e []Entry) []Entry {
			e[1].Actor = "bob"
			e[1].Hash = e[1].digest()
			return e
		}, 2},
		{"truncate to empty is fine", func(e []Entry) []Entry { return e[:0] }, -1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			es := c.mod(append([]Entry(nil), good...))
			err := Verify(es)
			if c.index < 0 {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			be, ok := err.(*BreakError)
			if !ok || be.Index != c.index {
				t.Fatalf("want a break at entry index %d, got %v", c.index, err)
			}
		})
	}
	// a tampered file refuses to open for appending
	b, _ := os.ReadFile(path)
	os.WriteFile(path, []byte(strings.Replace(string(b), "ε=1", "ε=9", 1)), 0o600)
	if _, err := OpenFile(path); err == nil {
		t.Fatal("tampered chain opened")
	}
}
