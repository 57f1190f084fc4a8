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

// TestWriteInRoot: WriteFileIn replaces a file inside an *os.Root (content,
// mode, a dead writer's temporary file removed, nothing else left),
// WriteNewIn refuses an existing one with fs.ErrExist, and names that
// leave the root ("..", a symbolic link to a directory outside) are
// refused without writing outside.
func TestWriteInRoot(t *testing.T) {
	base := t.TempDir()
	dir, outside := filepath.Join(base, "in"), filepath.Join(base, "out")
	for _, d := range []string{dir, outside} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(outside, filepath.Join(dir, "esc")); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, "k"), []byte("old"), 0o644)
	dead := filepath.Join(dir, ".k.tmp123")
	os.WriteFile(dead, nil, 0o600)
	old := time.Now().Add(-2 * StaleAge)
	os.Chtimes(dead, old, old)
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()

	if err := WriteFileIn(root, "k", []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "k"))
	st, _ := os.Stat(filepath.Join(dir, "k"))
	if string(b) != "new" || st.Mode().Perm() != 0o600 {
		t.Fatalf("got %q mode %o, want \"new\" mode 600", b, st.Mode().Perm())
	}
	if es, _ := os.ReadDir(dir); len(es) != 2 { // k and esc
		t.Fatalf("%d entries left, want 2 (the stale temporary file removed)", len(es))
	}
	if err := WriteNewIn(root, "k", []byte("two"), 0o644); !errors.Is(err, fs.ErrExist) {
		t.Fatalf("WriteNewIn over k: err = %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "k")); string(b) != "new" {
		t.Fatalf("WriteNewIn changed k to %q", b)
	}
	for _, name := range []string{"../out/x", "esc/x"} {
		for _, write := range []func(*os.Root, string, []byte, os.FileMode) error{WriteFileIn, WriteNewIn} {
			if err := write(root, name, []byte("x"), 0o600); err == nil {
				t.Errorf("write %s inside the root: no error", name)
			}
		}
	}
	if es, _ := os.ReadDir(outside); len(es) != 0 {
		t.Errorf("%d files written outside the root", len(es))
	}
}
