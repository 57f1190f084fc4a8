package filelock

import (
	"os"
	"path/filepath"
	"testing"
)

// TestTryLockExcludes: a second open file description cannot take the lock
// while the first holds it, and can once it is released.
func TestTryLockExcludes(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	a, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if ok, err := TryLock(a); !ok || err != nil {
		t.Fatalf("first lock: %v %v", ok, err)
	}
	if ok, err := TryLock(b); ok || err != nil {
		t.Fatalf("second lock while held: got %v %v, want false, nil", ok, err)
	}
	if err := Unlock(a); err != nil {
		t.Fatal(err)
	}
	if ok, err := TryLock(b); !ok || err != nil {
		t.Fatalf("lock after release: %v %v", ok, err)
	}
	if n, err := LinkCount(b); err != nil || n != 1 {
		t.Fatalf("LinkCount = %d, %v, want 1", n, err)
	}
	if err := os.Link(p, p+"2"); err == nil {
		if n, _ := LinkCount(b); n != 2 {
			t.Fatalf("LinkCount after link = %d, want 2", n)
		}
	}
}
