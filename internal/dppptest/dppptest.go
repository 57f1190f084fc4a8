// Package dppptest builds the DPPP test deployment shared by the dppp and
// dpppnet tests: softmax teachers on disjoint parts of the embedded digits
// data, held-out query rows, and a 1024-bit threshold Paillier key on the
// published test primes (never for real use; dealt only in test binaries).
package dppptest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"sync"
	"testing"

	"github.com/dplearn/dplearn/classify"
	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/exampledata"
	"github.com/dplearn/dplearn/internal/pailliertest"
	"github.com/dplearn/dplearn/paillier"
)

// Digits is the deployment.
type Digits struct {
	Models []classify.Model
	Rows   [][]float64 // query rows (held out)
	Truth  []int       // their true labels
	TPK    *paillier.ThresholdPublicKey
	Shares []*paillier.KeyShare
	Names  []string // teacher01, teacher02, ...
	Spec   [32]byte // fingerprint of the digits table spec
}

// NewDigits trains 10 softmax teachers on disjoint tenths of digits'
// training part (80%, seed 1), takes the first queries rows of the test part,
// and deals a (10, 6) threshold key on the 1024-bit test primes
// (pailliertest.ThresholdKey: test binaries only). The protocol's
// arithmetic does not depend on the modulus size beyond the number of
// queries packed per ciphertext (QPC 11 instead of 22 for binomial noise);
// the 2048-bit floor itself is tested in package paillier and by the CLI
// tests, whose key files must pass the decoders.
func NewDigits(ctx context.Context, queries int) (*Digits, error) {
	ds, err := exampledata.GetClassification("digits")
	if err != nil {
		return nil, err
	}
	spec, err := classify.ParseSpec(ds.Spec)
	if err != nil {
		return nil, err
	}
	data, _, err := spec.LoadReader(ctx, bytes.NewReader(ds.CSVGzip), "digits.csv.gz", dataset.Options{})
	if err != nil {
		return nil, err
	}
	train, test := classify.Split(data.N(), 0.2, 1)
	tr, te := data.Subset(train), data.Subset(test)
	parts, err := classify.Partition(tr.N(), 10, 1)
	if err != nil {
		return nil, err
	}
	if queries > te.N() {
		return nil, fmt.Errorf("dppptest: %d queries, only %d test rows", queries, te.N())
	}
	d := &Digits{Spec: sha256.Sum256([]byte(spec.Fingerprint()))}
	for i, part := range parts {
		m, err := classify.TrainSoftmax(ctx, tr.Subset(part), classify.SoftmaxOptions{MaxIterations: 30, Workers: 1})
		if err != nil {
			return nil, err
		}
		d.Models = append(d.Models, m)
		d.Names = append(d.Names, fmt.Sprintf("teacher%02d", i+1))
	}
	for i := 0; i < queries; i++ {
		d.Rows = append(d.Rows, te.Row(i))
		d.Truth = append(d.Truth, te.Y[i])
	}
	if d.TPK, d.Shares, err = pailliertest.ThresholdKey(1024, 10, 6); err != nil {
		return nil, err
	}
	return d, nil
}

// Cache builds one Digits deployment on first use and hands the same one to
// every later caller: training ten teachers and dealing a key takes seconds,
// and a test binary needs the deployment once. The zero value is ready.
type Cache struct {
	once sync.Once
	d    *Digits
	err  error
}

// Get returns the cached deployment with the given number of query rows,
// building it on the first call; it fails the test if the build failed or
// if an earlier call asked for a different number of queries.
func (c *Cache) Get(tb testing.TB, queries int) *Digits {
	tb.Helper()
	c.once.Do(func() { c.d, c.err = NewDigits(context.Background(), queries) })
	if c.err != nil {
		tb.Fatal(c.err)
	}
	if len(c.d.Rows) != queries {
		tb.Fatalf("dppptest: cached deployment has %d queries, asked for %d", len(c.d.Rows), queries)
	}
	return c.d
}
