package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/certs"
)

func runCerts(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(append([]string{"certs"}, args...))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

// certs makes a CA and three parties; add issues a fourth under the same
// CA; existing files are never overwritten.
func TestCertsCreateAndAdd(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	out, err := runCerts(t, "--out", dir, "--names", "aggregator,site-1,site-2", "--days", "30")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Keep it offline", "aggregator", "site-2", "dplearn certs add --ca"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	st, err := os.Stat(filepath.Join(dir, "ca", certs.CAKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("CA key: %v, %v", st, err)
	}
	st, err = os.Stat(dir)
	if err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("out dir: %v, %v", st, err)
	}

	out, err = runCerts(t, "add", "--ca", dir, "--name", "site-3", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		CA struct {
			Dir string `json:"dir"`
		} `json:"ca"`
		Parties []struct {
			Name string `json:"name"`
			Dir  string `json:"dir"`
		} `json:"parties"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	if len(got.Parties) != 1 || got.Parties[0].Name != "site-3" || got.CA.Dir != filepath.Join(dir, "ca") {
		t.Fatalf("add printed %+v", got)
	}
	agg, err := certs.LoadParty(filepath.Join(dir, "aggregator"))
	if err != nil {
		t.Fatal(err)
	}
	s3, err := certs.LoadParty(got.Parties[0].Dir)
	if err != nil {
		t.Fatal(err)
	}
	if !s3.CA.Equal(agg.CA) {
		t.Fatal("the added party has another CA")
	}

	if _, err := runCerts(t, "--out", dir, "--names", "site-9"); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Fatalf("certs over an existing CA: %v", err)
	}
	if _, err := runCerts(t, "add", "--ca", dir, "--name", "site-3"); err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Fatalf("adding an existing party: %v", err)
	}
}

func TestCertsRejectsBadFlags(t *testing.T) {
	dir := t.TempDir()
	cases := [][]string{
		{"--names", "a,b"},                                      // no --out
		{"--out", filepath.Join(dir, "x")},                      // no --names
		{"--out", filepath.Join(dir, "x"), "--names", "Site-1"}, // uppercase
		{"--out", filepath.Join(dir, "x"), "--names", "a,a"},    // repeated
		{"--out", filepath.Join(dir, "x"), "--names", "a", "--days", "0"},
		{"add", "--ca", dir, "--name", "site-1"}, // no CA there
		{"add", "--name", "site-1"},              // no --ca
	}
	for _, args := range cases {
		if _, err := runCerts(t, args...); err == nil {
			t.Errorf("certs %v succeeded", args)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "x")); err == nil {
		t.Error("a refused run created its --out directory")
	}
}
