package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math/big"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dplearn/dplearn/internal/pailliertest"
	"github.com/dplearn/dplearn/paillier"
	"github.com/dplearn/dplearn/paillier/keyfile"
)

func runDPPP(t *testing.T, args ...string) (string, string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errb bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errb)
	cmd.SetArgs(append([]string{"dppp"}, args...))
	err := cmd.ExecuteContext(context.Background())
	return out.String(), errb.String(), err
}

// writePrimes writes the published 2048-bit test primes in the --primes
// format; keygen refuses them unless the test calls allowTestPrimes.
func writePrimes(t *testing.T) string {
	t.Helper()
	p, q, err := pailliertest.Primes(2048)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "primes.txt")
	if err := os.WriteFile(path, paillier.FormatSafePrimes(p, q), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// allowTestPrimes lets keygen --primes use the published test primes for
// the rest of the test, so that it need not generate primes (seconds to
// minutes at 2048 bits).
func allowTestPrimes(t *testing.T) {
	t.Helper()
	saved := publishedTestPrime
	publishedTestPrime = func(*big.Int) bool { return false }
	t.Cleanup(func() { publishedTestPrime = saved })
}

// TestDPPPKeygenFromPrimes writes a (4, 3) key from fixture primes and
// checks the files decrypt: any 3 loaded shares recover an encrypted value.
func TestDPPPKeygenFromPrimes(t *testing.T) {
	allowTestPrimes(t)
	dir := filepath.Join(t.TempDir(), "keys")
	out, _, err := runDPPP(t, "keygen", "--parties", "4", "--threshold", "3", "--bits", "2048",
		"--out", dir, "--primes", writePrimes(t), "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		PublicKey   string   `json:"public_key"`
		Shares      []string `json:"shares"`
		Parties     int      `json:"parties"`
		Threshold   int      `json:"threshold"`
		ModulusBits int      `json:"modulus_bits"`
		KeyID       string   `json:"key_id"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	if err := dec.Decode(&res); err != nil || dec.More() {
		t.Fatalf("not exactly one JSON object: %v\n%s", err, out)
	}
	if res.Parties != 4 || res.Threshold != 3 || res.ModulusBits != 2048 || len(res.Shares) != 4 || len(res.KeyID) != 64 {
		t.Fatalf("unexpected summary %+v", res)
	}
	tpk, err := keyfile.LoadThresholdPublicKey(res.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	var parts []*paillier.PartialDecryption
	ct, err := tpk.Encrypt(bytes.NewReader(bytes.Repeat([]byte{7}, 1024)), big.NewInt(2026))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Shares[1:] {
		st, err := os.Stat(p)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("%s: mode %v, %v", p, st.Mode().Perm(), err)
		}
		ks, err := keyfile.LoadKeyShare(p)
		if err != nil {
			t.Fatal(err)
		}
		pd, err := ks.Decrypt(bytes.NewReader(bytes.Repeat([]byte{9}, 2048)), ct)
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, pd)
	}
	comb, err := tpk.Combine(ct, parts)
	if err != nil || comb.Plaintext.Int64() != 2026 {
		t.Fatalf("decryption with the written shares: %v, %v", comb, err)
	}

	// A primes file readable by others draws a warning.
	loose := writePrimes(t)
	if err := os.Chmod(loose, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, err := runDPPP(t, "keygen", "--parties", "2", "--threshold", "1", "--out", filepath.Join(t.TempDir(), "k"), "--primes", loose)
	if err != nil || !strings.Contains(stderr, "readable by others") {
		t.Fatalf("no warning for a world-readable primes file: %q, %v", stderr, err)
	}

	// Words output, and no overwriting of existing keys without --force.
	_, _, err = runDPPP(t, "keygen", "--parties", "4", "--threshold", "3", "--out", dir, "--primes", writePrimes(t))
	if err == nil || !strings.Contains(err.Error(), "refusing to overwrite") {
		t.Fatalf("overwrote keys: %v", err)
	}
	words, _, err := runDPPP(t, "keygen", "--parties", "4", "--threshold", "3", "--out", dir, "--primes", writePrimes(t), "--force")
	if err != nil || !strings.Contains(words, "any 3 of 4 shares decrypt") {
		t.Fatalf("words output %q, %v", words, err)
	}
}

func TestDPPPKeygenRejects(t *testing.T) {
	dir := t.TempDir()
	allowTestPrimes(t)
	primes := writePrimes(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--parties", "3", "--out", dir}, "--threshold"},
		{[]string{"--parties", "3", "--threshold", "4", "--out", dir}, "--threshold 4"},
		{[]string{"--parties", "0", "--threshold", "1", "--out", dir}, "--parties 0"},
		{[]string{"--parties", "3", "--threshold", "2", "--bits", "1024", "--out", dir}, "--bits 1024"},
		{[]string{"--parties", "3", "--threshold", "2", "--bits", "3072", "--primes", primes, "--out", dir}, "p*q has 2048 bits"},
		{[]string{"--parties", "3", "--threshold", "2", "--primes", primes, "--save-primes", "x", "--out", dir}, "make no sense"},
		{[]string{"--parties", "3", "--threshold", "2", "--primes", filepath.Join(dir, "missing"), "--out", dir}, "--primes"},
		{[]string{"--parties", "3", "--threshold", "2", "--out", dir, "--format", "yaml"}, "--format"},
	}
	for _, c := range cases {
		_, _, err := runDPPP(t, append([]string{"keygen"}, c.args...)...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("keygen %v: error %v, want one mentioning %q", c.args, err, c.want)
		}
	}
	// Primes that are not safe are refused by the dealer (notSafe is close
	// to p, so it is paired with q).
	bad := filepath.Join(dir, "bad.txt")
	p, q, _ := pailliertest.Primes(2048)
	notSafe := new(big.Int).Add(p, big.NewInt(2))
	for !notSafe.ProbablyPrime(20) || paillier.CheckSafePrime(notSafe) == nil {
		notSafe.Add(notSafe, big.NewInt(2))
	}
	os.WriteFile(bad, paillier.FormatSafePrimes(notSafe, q), 0o600)
	_, _, err := runDPPP(t, "keygen", "--parties", "3", "--threshold", "2", "--primes", bad, "--out", filepath.Join(dir, "k"))
	if err == nil || !strings.Contains(err.Error(), "not safe") {
		t.Fatalf("non-safe primes: %v", err)
	}
}

// TestDPPPKeygenRefusesTestPrimes: the test primes published in dplearn's
// source (internal/pailliertest) are refused by --primes, whether both are
// given or one is paired with another prime, and nothing is written.
func TestDPPPKeygenRefusesTestPrimes(t *testing.T) {
	p, q, _ := pailliertest.Primes(2048)
	dir := t.TempDir()
	fresh := nextPrimeAbove(t, q) // not published (found at run time)
	for name, pair := range map[string][2]*big.Int{
		"both published": {p, q},
		"p published":    {p, fresh},
		"q published":    {fresh, q},
	} {
		file := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".txt")
		if err := os.WriteFile(file, paillier.FormatSafePrimes(pair[0], pair[1]), 0o600); err != nil {
			t.Fatal(err)
		}
		out := filepath.Join(dir, "k-"+strings.ReplaceAll(name, " ", "-"))
		_, _, err := runDPPP(t, "keygen", "--parties", "3", "--threshold", "2", "--primes", file, "--out", out)
		if err == nil || !strings.Contains(err.Error(), "published test primes") {
			t.Errorf("%s: %v, want a refusal of the published test primes", name, err)
		}
		if _, err := os.Stat(out); !os.IsNotExist(err) {
			t.Errorf("%s: output directory created: %v", name, err)
		}
	}
	// The 3072-bit published pair too.
	p3, q3, _ := pailliertest.Primes(3072)
	file := filepath.Join(dir, "p3072.txt")
	os.WriteFile(file, paillier.FormatSafePrimes(p3, q3), 0o600)
	_, _, err := runDPPP(t, "keygen", "--parties", "3", "--threshold", "2", "--bits", "3072", "--primes", file, "--out", filepath.Join(dir, "k3072"))
	if err == nil || !strings.Contains(err.Error(), "published test primes") {
		t.Errorf("3072-bit test primes: %v", err)
	}
}

// nextPrimeAbove returns the first prime from x + 2^1000 on (any prime: the
// refusal of a published partner comes before the dealer checks safety).
func nextPrimeAbove(t *testing.T, x *big.Int) *big.Int {
	t.Helper()
	c := new(big.Int).Add(x, new(big.Int).Lsh(big.NewInt(1), 1000))
	c.SetBit(c, 0, 1)
	for !c.ProbablyPrime(0) {
		c.Add(c, big.NewInt(2))
	}
	return c
}

// TestDPPPKeygenRefusesLooseOut: an existing --out directory that group or
// others can access is refused with its name and mode.
func TestDPPPKeygenRefusesLooseOut(t *testing.T) {
	allowTestPrimes(t)
	dir := filepath.Join(t.TempDir(), "keys")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, _, err := runDPPP(t, "keygen", "--parties", "2", "--threshold", "2", "--primes", writePrimes(t), "--out", dir)
	if err == nil || !strings.Contains(err.Error(), dir+" has mode 0755") {
		t.Fatalf("loose --out directory: %v", err)
	}
}

// TestDPPPKeygenGenerates runs the real safe-prime search for a 2048-bit
// modulus and saves the primes. The search takes from seconds to a minute of
// CPU (its length is random), so it runs with DPLEARN_LONG_TESTS=1, which
// CI's long-tests step sets for this test; the default run covers keygen
// with --primes (the tests above) and paillier covers GenerateSafePrime up
// to 256 bits.
func TestDPPPKeygenGenerates(t *testing.T) {
	if testing.Short() || os.Getenv("DPLEARN_LONG_TESTS") != "1" {
		t.Skip("set DPLEARN_LONG_TESTS=1 (and no -short) for the real 1024-bit safe-prime search")
	}
	dir := t.TempDir()
	saved := filepath.Join(dir, "primes.txt")
	_, stderr, err := runDPPP(t, "keygen", "--parties", "2", "--threshold", "2", "--out", filepath.Join(dir, "k"), "--save-primes", saved)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stderr, "safe prime 2/2 found") {
		t.Fatalf("no progress on stderr: %q", stderr)
	}
	st, err := os.Stat(saved)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("saved primes: %v %v", st, err)
	}
	data, _ := os.ReadFile(saved)
	p, q, err := paillier.ParseSafePrimes(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range []*big.Int{p, q} {
		if err := paillier.CheckSafePrime(x); err != nil || x.BitLen() != 1024 {
			t.Fatalf("generated prime: %v (%d bits)", err, x.BitLen())
		}
	}
	tpk, err := keyfile.LoadThresholdPublicKey(filepath.Join(dir, "k", keyfile.PublicKeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if tpk.N().Cmp(new(big.Int).Mul(p, q)) != 0 {
		t.Fatal("saved primes do not factor the written key")
	}
}

func TestDPPPHelpTeaches(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"keygen", "--help"}} {
		out, _, err := runDPPP(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, "Example") || !strings.Contains(out, "dplearn dppp keygen --parties") {
			t.Fatalf("%v: help without an example:\n%s", args, out)
		}
	}
}
