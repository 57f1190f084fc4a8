package main

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/dpppnet"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/internal/pailliertest"
	"github.com/dplearn/dplearn/paillier"
	"github.com/dplearn/dplearn/paillier/keyfile"
	"github.com/dplearn/dplearn/transport"
)

// args returns the flags that reproduce f's deployment settings on another
// party's command line (dppp teach), roster included.
func (f *dpppDeployFlags) args(teachers []string) []string {
	return []string{"--teachers", strings.Join(teachers, ","), "--threshold", strconv.Itoa(f.threshold), "--colluders", strconv.Itoa(f.colluders), "--absent", strconv.Itoa(f.absent), "--noise", f.noise,
		"--epsilon", fmtFloat(f.epsilon), "--delta", fmtFloat(f.delta), "--budget-epsilon", fmtFloat(f.budgetEpsilon),
		"--budget-delta", fmtFloat(f.budgetDelta), "--queries-per-ciphertext", strconv.Itoa(f.qpc)}
}

func newDPPPSimulateCmd() *cobra.Command {
	var (
		d                         dpppDeployFlags
		in                        dpppInputFlags
		models                    []string
		queries, out              string
		hist, testKeys, processes bool
		bits, workers             int
		roundTimeout              time.Duration
	)
	cmd := &cobra.Command{
		Use:   "simulate --models T1.json,T2.json,... (--schema SPEC.json | --idx) --queries Q --out LABELS.csv (--insecure-test-keys | --bits 2048) [--processes]",
		Short: "Run the aggregator and every teacher on this machine, in one process or as child processes on loopback",
		Long: `simulate runs a whole DPPP deployment on this machine: one teacher per --models
file (named teacher01, teacher02, ... in that order) and the aggregator
labelling --queries (read through --schema, or IDX images with --idx).

  in one process (default): every party over the in-memory transport, which
      makes the same checks as the network one;
  with --processes: every teacher is a child process of this binary
      ('dplearn dppp teach'), connected to the aggregator (this process) over
      gRPC with mutual TLS 1.3 on 127.0.0.1, with certificates and key share
      files generated for the run in a temporary directory (deleted at the
      end). The children's logs are forwarded to stderr, prefixed with their
      names. This is the networked deployment of the DPPP guide on one
      machine.

It deals a fresh threshold key for the run: real safe primes of --bits bits
(seconds to minutes), or, with --insecure-test-keys, shares dealt on
dplearn's PUBLISHED test primes (instant; anyone can decrypt: for tests and
demonstrations only). The deployment flags (--threshold, --colluders, --absent, --noise,
--epsilon, --delta, --budget-epsilon, --budget-delta) are those of 'dppp
serve' and 'dppp teach'. Output as 'dppp serve': LABELS.csv and
LABELS.csv.privacy.json (for 'dppp student'), the spent and remaining budget
on stdout.`,
		Example: `  for i in $(seq 1 10); do
    dplearn dppp train --data digits.csv --schema digits.json --partition $i/10 \
        --model softmax --out t$i.json
  done
  dplearn dppp simulate --models t1.json,t2.json,t3.json,t4.json,t5.json,t6.json,t7.json,t8.json,t9.json,t10.json \
      --schema digits.json --queries queries.csv --out labels.csv --insecure-test-keys
  # the same with every teacher a separate process on 127.0.0.1
  dplearn dppp simulate --models t1.json,t2.json,t3.json --schema digits.json \
      --queries queries.csv --out labels.csv --insecure-test-keys --processes`,
		Args: cobra.NoArgs,
	}
	d.register(cmd, false)
	in.register(cmd, false)
	f := cmd.Flags()
	f.StringSliceVar(&models, "models", nil, "the teachers' model files, comma-separated")
	f.StringVar(&queries, "queries", "", "query rows: a table, or with --idx an IDX images file")
	f.StringVar(&out, "out", "", "where to write LABELS.csv (and LABELS.csv.privacy.json)")
	f.BoolVar(&hist, "histogram", false, "also write each query's noisy vote counts")
	f.BoolVar(&testKeys, "insecure-test-keys", false, "deal the key on dplearn's published test primes (INSECURE: tests only)")
	f.IntVar(&bits, "bits", paillier.DefaultModulusBits, "modulus bits of the freshly generated key")
	f.IntVar(&workers, "workers", runtime.GOMAXPROCS(0), "goroutines searching for safe primes")
	f.DurationVar(&roundTimeout, "round-timeout", 30*time.Second, "how long each phase of a batch waits")
	f.BoolVar(&processes, "processes", false, "run each teacher as a child process over mutual TLS on 127.0.0.1")
	logFlags := addDPPPLogFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := logFlags.check(); err != nil {
			return err
		}
		if err := requireFlags(cmd, "models", "queries", "out"); err != nil {
			return err
		}
		if err := checkLabelsOutput(out, append(fileFlags("--models", models), fileFlag{"--queries", queries}, fileFlag{"--schema", in.spec})...); err != nil {
			return err
		}
		if err := in.check(cmd); err != nil {
			return err
		}
		ctx := cmd.Context()
		stderr := &lockedWriter{w: cmd.ErrOrStderr()} // every party logs here
		models = trimAll(models)
		n := len(models)
		if n < 2 {
			return fmt.Errorf("--models: need at least 2 teachers, got %d", n)
		}
		teachers := make([]string, n)
		for i := range teachers {
			teachers[i] = fmt.Sprintf("teacher%02d", i+1)
		}
		t := d.threshold
		if t == 0 {
			t = max(1, 2*n/3)
		}
		input, rows, err := in.load(ctx, queries)
		if err != nil {
			return err
		}
		var tpk *paillier.ThresholdPublicKey
		var shares []*paillier.KeyShare
		if testKeys {
			fmt.Fprintln(stderr, "WARNING: --insecure-test-keys: the key is dealt on dplearn's published test primes; anyone can decrypt. Tests only.")
			if tpk, shares, err = pailliertest.ThresholdKey(2048, n, t); err != nil {
				return err
			}
		} else {
			p, q, err := generatePrimes(ctx, stderr, bits, workers)
			if err != nil {
				return err
			}
			if tpk, shares, err = paillier.DealThreshold(rand.Reader, p, q, n, t); err != nil {
				return err
			}
		}
		p, err := d.session(teachers, input, tpk)
		if err != nil {
			return err
		}
		logf := logx.Printf(stderr, "")
		for _, line := range p.Report() {
			logf("%s", line)
		}
		plog, tlog := logFlags.loggers(stderr, "", dpppnet.DefaultHubName)
		sopt := dpppnet.ServeOptions{RoundTimeout: roundTimeout, Logger: plog}
		lg := simLogs{flags: logFlags, logf: logf, transport: tlog}
		var res *dppp.RunResult
		if processes {
			res, err = simulateDPPPProcesses(ctx, stderr, lg, &d, p, tpk, shares, models, rows, sopt)
		} else {
			res, err = simulateDPPPInProcess(ctx, stderr, lg, &d, p, tpk, shares, models, rows, sopt)
		}
		if res != nil && len(res.Labels) > 0 {
			if werr := writeDPPPLabels(out, input.classNames, res, hist, p); werr != nil {
				return errors.Join(err, werr)
			}
		}
		if err != nil {
			return err
		}
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "labelled %d queries in %d batches with %d teachers (t = %d); wrote %s\n", len(res.Labels), len(res.Batches), n, p.Threshold, out)
		if res.Partial != "" {
			fmt.Fprintf(w, "--queries: %s\n", res.Partial)
		}
		fmt.Fprintln(w, res.Status)
		return nil
	}
	return cmd
}

// simLogs are a simulation's logs: the --log-level flags, the command's
// own progress lines (logf) and the aggregator's transport logger.
type simLogs struct {
	flags     *dpppLogFlags
	logf      func(string, ...any)
	transport *slog.Logger
}

// simulateDPPPInProcess runs every teacher in this process over the
// in-memory hub.
func simulateDPPPInProcess(ctx context.Context, stderr io.Writer, lg simLogs, d *dpppDeployFlags, p *dppp.Params, tpk *paillier.ThresholdPublicKey,
	shares []*paillier.KeyShare, models []string, rows [][]float64, sopt dpppnet.ServeOptions) (*dppp.RunResult, error) {
	hcfg := dpppnet.HubConfig(p)
	hcfg.Name = dpppnet.DefaultHubName
	hcfg.Logger = lg.transport
	hub, err := transport.NewMemory(hcfg)
	if err != nil {
		return nil, err
	}
	defer hub.Close()
	// A CA for the run: the teachers sign contributor sets and check each
	// other's signatures, as over the network.
	ca, err := certs.NewCA(certs.Options{})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	var cals dpppCalibrations // one calibration for every teacher (same configuration and key)
	for i, name := range p.Teachers {
		id, err := ca.IssueParty(name, certs.Options{})
		if err != nil {
			return nil, err
		}
		tt, pred, err := dpppTeacherFromModel(ctx, d, name, p.Teachers, models[i], shares[i], nil, nil, id, &cals)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		defer pred.Close()
		conn, err := hub.Dial(ctx, name)
		if err != nil {
			return nil, err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			plog, _ := lg.flags.loggers(stderr, name+": ", name)
			if _, err := dpppnet.Teach(ctx, conn, tt, dpppnet.TeachOptions{Logger: plog}); err != nil && ctx.Err() == nil {
				logx.Printf(stderr, name+": ")("%v", err)
			}
		}()
	}
	res, err := dpppnet.Serve(ctx, hub, p, tpk, rows, sopt)
	cancel()
	wg.Wait()
	return res, err
}

// simulateDPPPProcesses runs the aggregator in this process and every
// teacher as a child process ('dppp teach') over mutual TLS on 127.0.0.1,
// with certificates and key share files made for the run in a temporary
// directory.
func simulateDPPPProcesses(ctx context.Context, stderr io.Writer, lg simLogs, d *dpppDeployFlags, p *dppp.Params, tpk *paillier.ThresholdPublicKey,
	shares []*paillier.KeyShare, models []string, rows [][]float64, sopt dpppnet.ServeOptions) (*dppp.RunResult, error) {
	tmp, err := os.MkdirTemp("", "dplearn-dppp-simulate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	pki := filepath.Join(tmp, "pki")
	if _, err := certs.Create(pki, append([]string{dpppnet.DefaultHubName}, p.Teachers...), certs.Options{}); err != nil {
		return nil, err
	}
	_, sharePaths, err := keyfile.WriteKeyFiles(filepath.Join(tmp, "keys"), tpk, shares, false)
	if err != nil {
		return nil, err
	}
	id, err := certs.LoadParty(filepath.Join(pki, dpppnet.DefaultHubName))
	if err != nil {
		return nil, err
	}
	abs := make([]string, len(models))
	for i, m := range models {
		if abs[i], err = filepath.Abs(m); err != nil {
			return nil, err
		}
	}
	scfg := transport.ServerConfig{HubConfig: dpppnet.HubConfig(p), Address: "127.0.0.1:0", Identity: id}
	scfg.Logger = lg.transport
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, err := transport.Listen(ctx, scfg)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	lg.logf("listening on %s (mutual TLS 1.3, certificates and key shares for this run in %s); starting %d teacher processes", srv.Addr(), tmp, len(p.Teachers))
	if sopt.JoinTimeout == 0 {
		sopt.JoinTimeout = 2 * sopt.RoundTimeout // the children start, load their models and connect
	}
	common := append(d.args(p.Teachers), lg.flags.args()...)
	kids, err := startChildren(ctx, stderr, p.Teachers, func(i int) []string {
		return append([]string{"dppp", "teach", "--server", srv.Addr().String(), "--certs", filepath.Join(pki, p.Teachers[i]),
			"--model", abs[i], "--key-share", sharePaths[i], "--idle-timeout", (4 * sopt.RoundTimeout).String()}, common...)
	})
	if err != nil {
		return nil, err
	}
	res, serr := dpppnet.Serve(ctx, srv, p, tpk, rows, sopt)
	// The teachers exit once told the run is over; give them a moment,
	// then stop any that did not.
	failed := kids.wait(10*time.Second, cancel)
	if serr != nil {
		return res, serr
	}
	if len(failed) > 0 {
		return res, errors.Join(failed...)
	}
	return res, nil
}
