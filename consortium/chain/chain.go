// Package chain is the consortium's append-only, hash-chained audit log:
// who asked what, what was released, what was charged. Entry i carries the
// SHA-256 of entry i−1 (Prev) and its own hash over its canonical encoding
// (every field but Hash, in a fixed order), so editing, removing or
// reordering any entry breaks every later link: Verify names the first
// entry that does not check. The coordinator keeps its chain in its
// database (package consortium/store), every node in a file (File).
//
// What a chain proves: that the log read is the log written, unless the
// writer rewrote the whole chain from the altered entry on (anyone holding
// the file can). Publish or copy the head hash (Head) elsewhere to pin it.
package chain

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Entry is one audit record.
type Entry struct {
	Seq    uint64    `json:"seq"`
	Time   time.Time `json:"time"`
	Actor  string    `json:"actor"`  // who: a certificate name, or the writer itself
	Action string    `json:"action"` // what: submit, accept, refuse, release, charge, ...
	Task   string    `json:"task,omitempty"`
	Detail string    `json:"detail,omitempty"`
	Prev   string    `json:"prev"` // hex SHA-256 of the previous entry ("" for the first)
	Hash   string    `json:"hash"` // hex SHA-256 of this entry's canonical encoding
}

// digest hashes every field but Hash, length-prefixed, in a fixed order.
func (e *Entry) digest() string {
	h := sha256.New()
	put := func(s string) {
		var n [8]byte
		for i := range 8 {
			n[i] = byte(uint64(len(s)) >> (8 * i))
		}
		h.Write(n[:])
		h.Write([]byte(s))
	}
	put("dplearn-consortium-audit-v1")
	put(fmt.Sprint(e.Seq))
	put(e.Time.UTC().Format(time.RFC3339Nano))
	put(e.Actor)
	put(e.Action)
	put(e.Task)
	put(e.Detail)
	put(e.Prev)
	return hex.EncodeToString(h.Sum(nil))
}

// Next returns e chained after prev (nil: e is the first entry): its Seq,
// Prev and Hash filled in, Time set to now if zero.
func Next(prev *Entry, e Entry) Entry {
	if e.Time.IsZero() {
		e.Time = time.Now().UTC()
	}
	e.Time = e.Time.UTC()
	e.Seq, e.Prev = 1, ""
	if prev != nil {
		e.Seq, e.Prev = prev.Seq+1, prev.Hash
	}
	e.Hash = e.digest()
	return e
}

// BreakError names the first entry of a chain that does not check.
type BreakError struct {
	Index  int
	Seq    uint64
	Reason string
}

func (e *BreakError) Error() string {
	return fmt.Sprintf("chain: entry %d (seq %d) does not check: %s", e.Index+1, e.Seq, e.Reason)
}

// Verify checks a whole chain from its first entry: sequence numbers 1, 2,
// ..., every Prev the previous entry's Hash, every Hash its entry's.
func Verify(entries []Entry) error {
	prev := ""
	for i := range entries {
		e := &entries[i]
		switch {
		case e.Seq != uint64(i+1):
			return &BreakError{i, e.Seq, fmt.Sprintf("sequence number %d, want %d (an entry was removed or inserted)", e.Seq, i+1)}
		case e.Prev != prev:
			return &BreakError{i, e.Seq, "its prev hash is not the previous entry's hash (an entry before it was changed, removed or reordered)"}
		case e.digest() != e.Hash:
			return &BreakError{i, e.Seq, "its hash does not match its content (the entry was edited)"}
		}
		prev = e.Hash
	}
	return nil
}

// File is a chain kept in a file, one JSON entry per line, each append
// written and fsynced before Append returns. One process writes a File
// (the node holds it for its lifetime).
type File struct {
	mu   sync.Mutex
	f    *os.File
	last *Entry
}

// OpenFile opens (or creates) a chain file, verifies it and returns it
// ready to append.
func OpenFile(path string) (*File, error) {
	entries, err := ReadFile(path)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if err := Verify(entries); err != nil {
		return nil, fmt.Errorf("chain %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("chain: %w", err)
	}
	cf := &File{f: f}
	if len(entries) > 0 {
		cf.last = &entries[len(entries)-1]
	}
	return cf, nil
}

// ReadFile reads every entry of a chain file (without verifying them).
func ReadFile(path string) ([]Entry, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []Entry
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for line := 1; sc.Scan(); line++ {
		if len(bytes.TrimSpace(sc.Bytes())) == 0 {
			continue
		}
		var e Entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("chain %s: line %d: %w", path, line, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// Append chains e after the last entry and writes it durably.
func (c *File) Append(e Entry) (Entry, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e = Next(c.last, e)
	b, err := json.Marshal(e)
	if err != nil {
		return Entry{}, err
	}
	if _, err := c.f.Write(append(b, '\n')); err != nil {
		return Entry{}, fmt.Errorf("chain: append: %w", err)
	}
	if err := c.f.Sync(); err != nil {
		return Entry{}, fmt.Errorf("chain: sync: %w", err)
	}
	c.last = &e
	return e, nil
}

// Head returns the last entry's hash ("" for an empty chain).
func (c *File) Head() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.last == nil {
		return ""
	}
	return c.last.Hash
}

// Close closes the file.
func (c *File) Close() error { return c.f.Close() }
