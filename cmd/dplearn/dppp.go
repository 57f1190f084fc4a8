package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/big"
	"os"
	"runtime"
	"sync"
	"time"

	"github.com/dplearn/dplearn/internal/atomicfile"
	"github.com/dplearn/dplearn/internal/pailliertest"
	"github.com/dplearn/dplearn/paillier"
	"github.com/dplearn/dplearn/paillier/keyfile"
	"github.com/spf13/cobra"
)

// newDPPPCmd builds `dplearn dppp`, the distributed private prediction
// group (DPPP: teachers' noisy votes summed under threshold Paillier).
// keygen is its first subcommand; the protocol commands join it.
func newDPPPCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dppp",
		Short: "Distributed private prediction: N teachers label queries by noisy encrypted votes",
		Long: `dplearn dppp is distributed private prediction (DPPP): N teachers, each with
a model trained on its own data, label a client's query rows. Every teacher
adds a share of noise to its one-hot vote and encrypts it under threshold
Paillier; the aggregator, which is not trusted, multiplies the ciphertexts,
and any t teachers decrypt only the noisy vote histogram, after checking that
it sums at least N − A votes including their own, every one proven known to
its sender and every contributor having signed that one set of the batch.
The noise is sized for N − A − C honest shares (--colluders C, --absent A).
The labels are differentially private with respect to the teachers'
training data.

  keygen    trusted-dealer key generation: one public key, one share per teacher
  train     a teacher's local classifier (softmax, MLP, or an external program)
  serve     the aggregator: offers the parameters, collects encrypted votes,
            asks t teachers for checked partial decryptions, labels the queries
  teach     one teacher: its model, its key share, its own budget ledger
  query     a client: sends query rows, receives labels and their guarantee
  student   trains a model on the labels (the PATE use), with their guarantee
  simulate  every party on this machine: in one process, or with --processes
            each teacher a child process over mutual TLS on 127.0.0.1

Certificates for the parties come from 'dplearn certs'. Step by step,
with a 3-machine example, the checks each party makes, the errors and what the
guarantee does not cover: docs/dppp.md.

Examples:
  dplearn dppp keygen --parties 5 --threshold 3 --out keys/
  dplearn dppp train --help
  dplearn dppp simulate --models t1.json,t2.json,t3.json --schema digits.json \
      --queries queries.csv --out labels.csv --insecure-test-keys --processes`,
	}
	cmd.AddCommand(newDPPPKeygenCmd())
	cmd.AddCommand(newDPPPTrainCmd())
	cmd.AddCommand(newDPPPNetCmds()...)
	cmd.AddCommand(newDPPPStudentCmd())
	return cmd
}

func newDPPPKeygenCmd() *cobra.Command {
	var (
		parties, threshold, bits, workers int
		out, primesFile, savePrimes       string
		force                             bool
	)
	cmd := &cobra.Command{
		Use:   "keygen",
		Short: "Generate an (N, t) threshold Paillier key and write one share file per party",
		Long: `keygen acts as the trusted dealer of threshold Paillier (Shoup; Damgård-Jurik
2001): it generates two safe primes p = 2p'+1 and q = 2q'+1 (or reads them with
--primes), builds n = pq, splits the decryption key into N shares of which any
t decrypt and fewer learn nothing, and writes

  DIR/public.pem         the threshold public key (mode 0644): encryption key n,
                         verification keys, N and t; give it to everyone
  DIR/share-001.pem ...  party i's secret share (mode 0600); hand share i to
                         party i only, over a private channel

Files are PEM blocks ("DPLEARN PAILLIER THRESHOLD PUBLIC KEY", "DPLEARN
PAILLIER KEY SHARE") around dplearn's versioned binary encoding, described in
the paillier package documentation. Existing files are not overwritten unless
--force is given.

The dealer sees every share and the factorisation of n: run keygen on a
machine you trust, distribute the shares, then delete them (and any
--save-primes file) from that machine.

Safe-prime generation runs on --workers goroutines and reports progress on
stderr; it takes seconds at 2048 bits and up to minutes at 3072 or more. To
reuse primes, pass --primes FILE: two lines "p = 0x..." and "q = 0x..." (or
two bare decimal integers, e.g. from 'openssl prime -generate -safe -bits
1024' run twice). --save-primes FILE writes the generated primes (mode 0600);
that file decrypts everything, guard it like a private key. The test primes
published in dplearn's source are refused, and so are primes of unequal
length or closer than 2^(bits/2-100).

--out must be a new directory or one that only its owner can access (mode
0700): an existing directory with group or other permissions is refused.

With --format json, prints one object with keys: public_key, shares,
parties, threshold, modulus_bits, key_id, primes.

Example:
  dplearn dppp keygen --parties 5 --threshold 3 --bits 2048 --out keys/`,
		Args: cobra.NoArgs,
	}
	format := addFormatFlag(cmd)
	f := cmd.Flags()
	f.IntVar(&parties, "parties", 0, "number of share holders N (1 to 1000)")
	f.IntVar(&threshold, "threshold", 0, "number of shares t needed to decrypt (1 <= t <= N)")
	f.IntVar(&bits, "bits", paillier.DefaultModulusBits, "modulus size in bits: 2048, 3072, or another multiple of 256 up to 8192")
	f.StringVar(&out, "out", "", "output directory (created with mode 0700)")
	f.StringVar(&primesFile, "primes", "", "read the safe primes p and q from this file instead of generating them")
	f.StringVar(&savePrimes, "save-primes", "", "also write the generated primes to this file (mode 0600; SECRET)")
	f.IntVar(&workers, "workers", runtime.GOMAXPROCS(0), "goroutines searching for safe primes")
	f.BoolVar(&force, "force", false, "overwrite existing key files in --out")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		fmtOut, err := format()
		if err != nil {
			return err
		}
		if err := requireFlags(cmd, "parties", "threshold", "out"); err != nil {
			return err
		}
		if parties < 1 || parties > paillier.MaxParties {
			return fmt.Errorf("--parties %d: want 1 to %d", parties, paillier.MaxParties)
		}
		if threshold < 1 || threshold > parties {
			return fmt.Errorf("--threshold %d: want 1 to --parties (%d)", threshold, parties)
		}
		if bits < paillier.MinModulusBits || bits > 8192 || bits%256 != 0 {
			return fmt.Errorf("--bits %d: want a multiple of 256 from %d to 8192", bits, paillier.MinModulusBits)
		}
		if workers < 1 {
			return fmt.Errorf("--workers %d: want at least 1", workers)
		}
		if primesFile != "" && savePrimes != "" {
			return errors.New("--primes and --save-primes together make no sense: the primes already are in a file")
		}
		stderr := cmd.ErrOrStderr()
		var p, q *big.Int
		source := "generated"
		if primesFile != "" {
			data, perm, err := readPrimesFile(primesFile)
			if err != nil {
				return fmt.Errorf("--primes: %w", err)
			}
			if perm&0o077 != 0 {
				fmt.Fprintf(stderr, "warning: %s is readable by others (mode %#o); it factors n and decrypts everything\n", primesFile, perm)
			}
			if p, q, err = paillier.ParseSafePrimes(data); err != nil {
				return fmt.Errorf("--primes %s: %w", primesFile, err)
			}
			for k, x := range []*big.Int{p, q} {
				if publishedTestPrime(x) {
					return fmt.Errorf("--primes %s: %s is one of dplearn's published test primes (internal/pailliertest): anyone who reads dplearn's source can factor n and decrypt everything; generate fresh primes (omit --primes)", primesFile, []string{"p", "q"}[k])
				}
			}
			if nb := new(big.Int).Mul(p, q).BitLen(); nb != bits {
				return fmt.Errorf("--primes %s: p*q has %d bits, --bits is %d", primesFile, nb, bits)
			}
			source = "file " + primesFile
		} else {
			if err := checkKeygenDir(out, parties, force); err != nil {
				return err // before minutes of prime search
			}
			if p, q, err = generatePrimes(cmd.Context(), stderr, bits, workers); err != nil {
				return err
			}
			if savePrimes != "" {
				if err := writeSecretFile(savePrimes, paillier.FormatSafePrimes(p, q), force); err != nil {
					return fmt.Errorf("--save-primes: %w", err)
				}
				fmt.Fprintf(stderr, "wrote the primes to %s (SECRET: they decrypt everything)\n", savePrimes)
			}
		}
		tpk, shares, err := paillier.DealThreshold(rand.Reader, p, q, parties, threshold)
		if err != nil {
			return err
		}
		pubPath, sharePaths, err := keyfile.WriteKeyFiles(out, tpk, shares, force)
		if err != nil {
			return err
		}
		id := tpk.ID()
		if fmtOut == formatJSON {
			return writeJSON(cmd.OutOrStdout(), map[string]any{
				"public_key":   pubPath,
				"shares":       sharePaths,
				"parties":      parties,
				"threshold":    threshold,
				"modulus_bits": tpk.Bits(),
				"key_id":       hex.EncodeToString(id[:]),
				"primes":       source,
			})
		}
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "Threshold Paillier key: %d-bit modulus, any %d of %d shares decrypt (primes: %s).\n", tpk.Bits(), threshold, parties, source)
		fmt.Fprintf(w, "Public key: %s (key id %s)\n", pubPath, hex.EncodeToString(id[:8]))
		fmt.Fprintf(w, "Shares (mode 0600): %s", sharePaths[0])
		if len(sharePaths) > 1 {
			fmt.Fprintf(w, " ... %s", sharePaths[len(sharePaths)-1])
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, "Give share i to party i only, over a private channel, then delete the shares from this machine.")
		return nil
	}
	return cmd
}

// publishedTestPrime reports whether x is one of the test primes published
// in dplearn's source. It is a variable only so that this package's tests
// can run --primes with those fixtures instead of generating primes.
var publishedTestPrime = pailliertest.IsPublished

// maxPrimesFileBytes bounds a --primes file: two 4096-bit primes in hex
// with comments fit in a few KiB.
const maxPrimesFileBytes = 64 << 10

// readPrimesFile opens path once and checks, on the open handle, that it is
// a regular file of at most maxPrimesFileBytes bytes; it returns the
// contents and the permission bits of the file read.
func readPrimesFile(path string) ([]byte, os.FileMode, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if !st.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("%s is not a regular file", path)
	}
	data, err := io.ReadAll(io.LimitReader(f, maxPrimesFileBytes+1))
	if err != nil {
		return nil, 0, err
	}
	if len(data) > maxPrimesFileBytes {
		return nil, 0, fmt.Errorf("%s is larger than %d bytes; not a primes file", path, maxPrimesFileBytes)
	}
	return data, st.Mode().Perm(), nil
}

// generatePrimes searches two distinct safe primes of bits/2 bits in
// parallel, reporting progress on stderr at most every two seconds.
func generatePrimes(ctx context.Context, stderr io.Writer, bits, workers int) (p, q *big.Int, err error) {
	start := time.Now()
	var found []*big.Int
	for len(found) < 2 {
		k := len(found) + 1
		var mu sync.Mutex
		counts := map[int]uint64{}
		last := time.Now()
		progress := func(worker int, tested uint64) {
			mu.Lock()
			defer mu.Unlock()
			counts[worker] = tested
			if time.Since(last) < 2*time.Second {
				return
			}
			last = time.Now()
			var total uint64
			for _, c := range counts {
				total += c
			}
			fmt.Fprintf(stderr, "safe prime %d/2 (%d bits): %d candidates tested on %d workers, %s elapsed\n",
				k, bits/2, total, workers, time.Since(start).Round(time.Second))
		}
		x, err := paillier.GenerateSafePrime(ctx, rand.Reader, bits/2, workers, progress)
		if err != nil {
			return nil, nil, err
		}
		if len(found) == 1 && found[0].Cmp(x) == 0 {
			continue
		}
		found = append(found, x)
		fmt.Fprintf(stderr, "safe prime %d/2 found after %s\n", k, time.Since(start).Round(10*time.Millisecond))
	}
	return found[0], found[1], nil
}

// writeSecretFile writes data with mode 0600, atomically (never a partial
// file), refusing to overwrite unless force.
func writeSecretFile(path string, data []byte, force bool) error {
	if force {
		return atomicfile.WriteFile(path, data, 0o600)
	}
	return atomicfile.WriteNew(path, data, 0o600)
}
