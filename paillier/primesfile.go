package paillier

import (
	"bufio"
	"bytes"
	"fmt"
	"math/big"
	"strings"
)

// FormatSafePrimes renders p and q in the primes-file format read by
// ParseSafePrimes. The file is the factorisation of n: whoever holds it can
// decrypt everything, so store it like a private key (mode 0600) or not at
// all.
func FormatSafePrimes(p, q *big.Int) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "# dplearn safe primes (p = 2p'+1, q = 2q'+1), %d bits each.\n", p.BitLen())
	b.WriteString("# SECRET: these factor the Paillier modulus n = p*q. Anyone holding this file can decrypt.\n")
	fmt.Fprintf(&b, "p = %#x\nq = %#x\n", p, q)
	return []byte(b.String())
}

// ParseSafePrimes reads two primes from text: blank lines and lines
// starting with '#' are ignored; each remaining line is "p = X", "q = X" or
// a bare X, with X decimal or 0x-prefixed hexadecimal (so `openssl prime
// -generate -safe -bits 1024` output can be pasted in). Whether they are
// safe primes is checked by DealThreshold.
func ParseSafePrimes(data []byte) (p, q *big.Int, err error) {
	var vals []*big.Int
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || strings.HasPrefix(s, "#") {
			continue
		}
		if k, v, ok := strings.Cut(s, "="); ok {
			k = strings.TrimSpace(k)
			if k != "p" && k != "q" {
				return nil, nil, fmt.Errorf("paillier: primes file line %d: unknown name %q (want p or q)", line, k)
			}
			s = strings.TrimSpace(v)
		}
		x, ok := new(big.Int).SetString(s, 0)
		if !ok || x.Sign() <= 0 {
			return nil, nil, fmt.Errorf("paillier: primes file line %d: %q is not a positive integer", line, truncate(s, 40))
		}
		vals = append(vals, x)
	}
	if err := sc.Err(); err != nil {
		return nil, nil, fmt.Errorf("paillier: primes file: %w", err)
	}
	if len(vals) != 2 {
		return nil, nil, fmt.Errorf("paillier: primes file holds %d integers, want exactly 2 (p and q)", len(vals))
	}
	return vals[0], vals[1], nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
