package store

import (
	"path/filepath"
	"testing"

	"github.com/dplearn/dplearn/consortium/chain"
)

func TestStoreSurvivesReopen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(path); err == nil {
		t.Fatal("a second coordinator opened the same file")
	}
	id1, _ := s.NextID("task")
	id2, _ := s.NextID("task")
	if id1 != 1 || id2 != 2 {
		t.Fatalf("ids %d %d", id1, id2)
	}
	s.PutJSON("tasks", "t1", map[string]string{"state": "done"})
	for _, a := range []string{"submit", "release"} {
		if _, err := s.Audit(chain.Entry{Actor: "alice", Action: a}); err != nil {
			t.Fatal(err)
		}
	}
	s.Close()
	s, err = Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got map[string]string
	if ok, err := s.GetJSON("tasks", "t1", &got); !ok || err != nil || got["state"] != "done" {
		t.Fatalf("task after reopen: %v %v %v", ok, err, got)
	}
	if id, _ := s.NextID("task"); id != 3 {
		t.Fatalf("id after reopen %d", id)
	}
	s.Audit(chain.Entry{Actor: "bob", Action: "submit"})
	log, _ := s.AuditLog()
	if len(log) != 3 || chain.Verify(log) != nil {
		t.Fatalf("audit after reopen: %d entries, %v", len(log), chain.Verify(log))
	}
}
