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
