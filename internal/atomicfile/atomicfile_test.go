package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWriteFileReplaces: the content and mode arrive, and no temporary
// file is left.
func TestWriteFileReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "out.json")
	if err := os.WriteFile(p, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(p, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "new" || st.Mode().Perm() != 0o600 {
		t.Fatalf("got %q mode %o", b, st.Mode().Perm())
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Fatalf("%d entries left, want 1", len(es))
	}
}

// TestAbortAndPrepareLeaveTarget: nothing is published before Commit.
func TestAbortAndPrepareLeaveTarget(t *testing.T) {
	p := filepath.Join(t.TempDir(), "m")
	os.WriteFile(p, []byte("old"), 0o644)
	a, err := Create(p, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	a.Write([]byte("new"))
	if err := a.Prepare(); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p); string(b) != "old" {
		t.Fatalf("published before Commit: %q", b)
	}
	tmp := a.TempName()
	a.Abort()
	if _, err := os.Stat(tmp); !os.IsNotExist(err) {
		t.Fatalf("temporary file left after Abort: %v", err)
	}
}

// TestRemoveStaleSparesLiveWriters: an old unlocked temporary file is
// removed, a locked one (a live writer's) is not, nor a young one.
func TestRemoveStaleSparesLiveWriters(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "m")
	live, err := Create(p, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer live.Abort()
	dead := filepath.Join(dir, ".m.tmp123")
	young := filepath.Join(dir, ".m.tmp456")
	os.WriteFile(dead, nil, 0o600)
	os.WriteFile(young, nil, 0o600)
	old := time.Now().Add(-2 * StaleAge)
	os.Chtimes(dead, old, old)
	os.Chtimes(live.TempName(), old, old)
	RemoveStale(p, StaleAge)
	if _, err := os.Stat(dead); !os.IsNotExist(err) {
		t.Fatal("a dead writer's temporary file was kept")
	}
	for _, keep := range []string{live.TempName(), young} {
		if _, err := os.Stat(keep); err != nil {
			t.Fatalf("%s removed: %v", keep, err)
		}
	}
}

// TestWriteNewNeverReplaces: a new file gets the content and mode with no
// temporary file left; an existing file is refused with fs.ErrExist and
// keeps its content and mode.
func TestWriteNewNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "key.pem")
	if err := WriteNew(p, []byte("one"), 0o600); err != nil {
		t.Fatal(err)
	}
	err := WriteNew(p, []byte("two"), 0o644)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("second WriteNew: err = %v, want fs.ErrExist", err)
	}
	b, _ := os.ReadFile(p)
	st, _ := os.Stat(p)
	if string(b) != "one" || st.Mode().Perm() != 0o600 {
		t.Fatalf("got %q mode %o, want the first write's", b, st.Mode().Perm())
	}
	if es, _ := os.ReadDir(dir); len(es) != 1 {
		t.Fatalf("%d entries left, want 1", len(es))
	}
}
