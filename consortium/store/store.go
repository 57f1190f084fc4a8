// Package store keeps the coordinator's state in one bbolt file
// (go.etcd.io/bbolt): tasks and their results, nodes and their datasets,
// the budget reports of the nodes, the analysts, and the hash-chained
// audit log (package consortium/chain). It survives restarts: every write
// is a committed, fsynced bbolt transaction.
//
// Why bbolt and not SQLite. The coordinator's state is a handful of
// key-value collections read whole (the status page, a restart) or by key
// (a task): no joins, no ad-hoc queries. bbolt is pure Go (no cgo), one
// file, one writer with serialisable transactions, crash-safe by
// copy-on-write B+tree pages and fsync at commit, and holds an exclusive
// file lock so a second coordinator on the same file fails at once instead
// of corrupting it. A pure-Go SQLite (github.com/glebarez/go-sqlite,
// a transpiled C library) would bring a SQL layer, a schema to migrate and
// about ten times the dependency weight for nothing this state needs.
package store

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/dplearn/dplearn/consortium/chain"
)

var (
	bTasks   = []byte("tasks")
	bNodes   = []byte("nodes")
	bBudgets = []byte("budgets")
	bAudit   = []byte("audit")
	bMeta    = []byte("meta")
)

// Store is the coordinator's database.
type Store struct {
	db *bolt.DB
}

// Open opens (or creates) the database file. A file held by another
// coordinator is refused after a second.
func Open(path string) (*Store, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w (is another coordinator using it?)", path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bTasks, bNodes, bBudgets, bAudit, bMeta} {
			if _, err := tx.CreateBucketIfNotExists(b); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("store: %s: %w", path, err)
	}
	return &Store{db: db}, nil
}

// Close closes the database.
func (s *Store) Close() error { return s.db.Close() }

// NextID returns a new sequence number under name (task IDs).
func (s *Store) NextID(name string) (uint64, error) {
	var id uint64
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bMeta)
		if v := b.Get([]byte(name)); len(v) == 8 {
			id = binary.BigEndian.Uint64(v)
		}
		id++
		return b.Put([]byte(name), binary.BigEndian.AppendUint64(nil, id))
	})
	return id, err
}

func (s *Store) put(bucket []byte, key string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("store: encode %s/%s: %w", bucket, key, err)
	}
	return s.db.Update(func(tx *bolt.Tx) error { return tx.Bucket(bucket).Put([]byte(key), b) })
}

func (s *Store) get(bucket []byte, key string, v any) (bool, error) {
	var raw []byte
	s.db.View(func(tx *bolt.Tx) error {
		if b := tx.Bucket(bucket).Get([]byte(key)); b != nil {
			raw = append([]byte(nil), b...)
		}
		return nil
	})
	if raw == nil {
		return false, nil
	}
	return true, json.Unmarshal(raw, v)
}

func all[T any](s *Store, bucket []byte) ([]T, error) {
	var out []T
	err := s.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(bucket).ForEach(func(_, v []byte) error {
			var x T
			if err := json.Unmarshal(v, &x); err != nil {
				return err
			}
			out = append(out, x)
			return nil
		})
	})
	return out, err
}

// PutJSON stores v under key in collection ("tasks", "nodes", "budgets").
func (s *Store) PutJSON(collection, key string, v any) error {
	return s.put(bucketOf(collection), key, v)
}

// GetJSON reads key of collection into v; false if absent.
func (s *Store) GetJSON(collection, key string, v any) (bool, error) {
	return s.get(bucketOf(collection), key, v)
}

// Raw returns every value of a collection, in key order.
func (s *Store) Raw(collection string) ([]json.RawMessage, error) {
	return all[json.RawMessage](s, bucketOf(collection))
}

func bucketOf(c string) []byte {
	switch c {
	case "tasks":
		return bTasks
	case "nodes":
		return bNodes
	case "budgets":
		return bBudgets
	}
	panic("store: unknown collection " + c)
}

// Audit appends an entry to the chain, in the same transaction as reading
// the last one (so the chain has one writer at a time).
func (s *Store) Audit(e chain.Entry) (chain.Entry, error) {
	err := s.db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bAudit)
		var prev *chain.Entry
		if k, v := b.Cursor().Last(); k != nil {
			var p chain.Entry
			if err := json.Unmarshal(v, &p); err != nil {
				return err
			}
			prev = &p
		}
		e = chain.Next(prev, e)
		raw, err := json.Marshal(e)
		if err != nil {
			return err
		}
		return b.Put(binary.BigEndian.AppendUint64(nil, e.Seq), raw)
	})
	if err != nil {
		return chain.Entry{}, fmt.Errorf("store: audit: %w", err)
	}
	return e, nil
}

// AuditLog returns the whole chain, in order.
func (s *Store) AuditLog() ([]chain.Entry, error) {
	return all[chain.Entry](s, bAudit)
}

// ErrNotFound is returned for a missing key.
var ErrNotFound = errors.New("store: not found")

// ReadAuditLog opens a database file read-only and returns its chain (for
// `dplearn audit verify` while the coordinator is stopped).
func ReadAuditLog(path string) ([]chain.Entry, error) {
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: time.Second, ReadOnly: true})
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w (a running coordinator holds it: stop it, or copy the file)", path, err)
	}
	defer db.Close()
	s := &Store{db: db}
	return all[chain.Entry](s, bAudit)
}
