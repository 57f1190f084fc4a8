package certs_test

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/dplearn/dplearn/certs"
)

// Provision a CA and three parties, add a fourth later, and load one
// party's identity as its machine would.
func ExampleCreate() {
	tmp, err := os.MkdirTemp("", "pki")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(tmp)
	dir := filepath.Join(tmp, "pki")
	if _, err := certs.Create(dir, []string{"aggregator", "site-1", "site-2"}, certs.Options{}); err != nil {
		panic(err)
	}
	if _, err := certs.Add(dir, "site-3", certs.Options{}); err != nil {
		panic(err)
	}
	p, err := certs.LoadParty(filepath.Join(dir, "site-3"))
	if err != nil {
		panic(err)
	}
	fmt.Println(p.Name, p.Certificate.Leaf.DNSNames)
	// Output: site-3 [site-3.dplearn.invalid]
}

// A party signs a statement with its certificate key; another party of the
// same CA checks it, naming the party it expects. A relay can pass the
// statement on but not alter it.
func ExampleSignStatement() {
	ca, err := certs.NewCA(certs.Options{})
	if err != nil {
		panic(err)
	}
	alice, _ := ca.IssueParty("alice", certs.Options{})
	bob, _ := ca.IssueParty("bob", certs.Options{})
	session, keys := []byte("session 1"), []byte("alice's public keys")
	cert, sig, err := certs.SignStatement(alice, "example-keys-v1", session, keys)
	if err != nil {
		panic(err)
	}
	fmt.Println(certs.VerifyStatement(bob.Roots, cert, "alice", sig, "example-keys-v1", session, keys))
	fmt.Println(certs.VerifyStatement(bob.Roots, cert, "alice", sig, "example-keys-v1", session, []byte("substituted keys")))
	fmt.Println(certs.VerifyStatement(bob.Roots, cert, "carol", sig, "example-keys-v1", session, keys))
	// Output:
	// <nil>
	// the signature does not match the statement
	// signed by "alice"'s certificate, not "carol"'s
}
