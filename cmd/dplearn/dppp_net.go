package main

import (
	"context"
	"crypto/sha256"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/classify"
	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/dpppnet"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/paillier"
	"github.com/dplearn/dplearn/paillier/keyfile"
	"github.com/dplearn/dplearn/transport"
	"github.com/spf13/cobra"
)

// dpppDeployFlags are the public settings every party configures by itself
// (dppp.Config); a teacher refuses an offer that differs from its own.
type dpppDeployFlags struct {
	teachers                   []string
	threshold, qpc             int
	colluders, absent          int
	gamma, noise               string
	epsilon, delta             float64
	budgetEpsilon, budgetDelta float64
	budgetQueries              int
	cmd                        *cobra.Command
}

func (f *dpppDeployFlags) register(cmd *cobra.Command, withTeachers bool) {
	fl := cmd.Flags()
	f.cmd = cmd
	if withTeachers {
		fl.StringSliceVar(&f.teachers, "teachers", nil, "the roster: teacher names, comma-separated, in the order of their key shares (teacher i holds share i)")
	}
	fl.IntVar(&f.threshold, "threshold", 0, "t, shares needed to decrypt (0: ⌊2N/3⌋, the seed's default; must be the key's)")
	fl.IntVar(&f.colluders, "colluders", -1, "C, the teachers that may collude with the aggregator (-1: ⌈N/3⌉ − 1); C < t is required")
	fl.IntVar(&f.absent, "absent", -1, "A, the teachers that may be absent from a batch (-1: N − t); a sum is decrypted only with ≥ N − A votes, and the noise is sized for N − A − C honest shares; t ≤ N − A is required")
	fl.StringVar(&f.gamma, "gamma", "", "REMOVED: use --colluders and --absent (⌈γN⌉ contributors were not ⌈γN⌉ honest shares: issue 22)")
	_ = fl.MarkHidden("gamma")
	fl.StringVar(&f.noise, "noise", "binomial", "noise kind: binomial or dgauss")
	fl.Float64Var(&f.epsilon, "epsilon", 1, "per-query ε: the noise makes one query (ε, δ)-DP (not with --budget-queries)")
	fl.Float64Var(&f.delta, "delta", 1e-5, "per-query δ (not with --budget-queries)")
	fl.Float64Var(&f.budgetEpsilon, "budget-epsilon", 10, "total ε of all answered queries (composed by the exact privacy-loss-distribution accountant)")
	fl.Float64Var(&f.budgetDelta, "budget-delta", 1e-3, "total δ of all answered queries")
	fl.IntVar(&f.budgetQueries, "budget-queries", 0, "Q: size the noise so that Q answered queries compose to (--budget-epsilon, --budget-delta); the per-query ε and δ are then derived and printed, and giving --epsilon or --delta too is refused (0: size it by --epsilon/--delta)")
	fl.IntVar(&f.qpc, "queries-per-ciphertext", 0, "queries packed into one ciphertext (0: as many as fit)")
}

// trustFlag maps a --colluders/--absent value to dppp.Config's: -1 the
// default (0 there), 0 none (dppp.NoneAssumed).
func trustFlag(v int) int {
	switch {
	case v < 0:
		return 0
	case v == 0:
		return dppp.NoneAssumed
	}
	return v
}

// config builds the dppp.Config for the roster and an input spec.
func (f *dpppDeployFlags) config(teachers []string, classes, features int, model [32]byte) (dppp.Config, error) {
	if f.gamma != "" {
		return dppp.Config{}, fmt.Errorf("--gamma was removed: say how many teachers may collude with the aggregator (--colluders C) and how many may be absent (--absent A); the noise is then sized for N − A − C honest shares (issue 22: ⌈γN⌉ contributors were not ⌈γN⌉ honest shares)")
	}
	if f.colluders < -1 || f.absent < -1 {
		return dppp.Config{}, fmt.Errorf("--colluders %d, --absent %d: want ≥ 0, or -1 for the default", f.colluders, f.absent)
	}
	kind, err := dppp.ParseNoiseKind(f.noise)
	if err != nil {
		return dppp.Config{}, fmt.Errorf("--noise: %w", err)
	}
	eps, delta := f.epsilon, f.delta
	if f.budgetQueries < 0 {
		return dppp.Config{}, fmt.Errorf("--budget-queries %d: want ≥ 1, or 0 to size the noise by --epsilon/--delta", f.budgetQueries)
	}
	if f.budgetQueries > 0 {
		if f.cmd != nil && (f.cmd.Flags().Changed("epsilon") || f.cmd.Flags().Changed("delta")) {
			return dppp.Config{}, fmt.Errorf("--budget-queries %d sizes the noise for the total budget (--budget-epsilon %g, --budget-delta %g) and derives the per-query ε and δ: drop --epsilon/--delta, or drop --budget-queries to size the noise per query", f.budgetQueries, f.budgetEpsilon, f.budgetDelta)
		}
		eps, delta = 0, 0
	}
	cfg := dppp.Config{Teachers: teachers, Threshold: f.threshold, Colluders: trustFlag(f.colluders), Absent: trustFlag(f.absent), Classes: classes, Features: features,
		Noise: kind, Epsilon: eps, Delta: delta, BudgetEpsilon: f.budgetEpsilon, BudgetDelta: f.budgetDelta, Queries: f.budgetQueries,
		QueriesPerCiphertext: f.qpc, Model: model}
	return cfg, nil // Calibrate validates, with the defaults applied
}

// specFingerprint is the model fingerprint of dppp.Config: SHA-256 of the
// input spec's fingerprint (all teachers answer the same question).
func specFingerprint(s *classify.Spec) [32]byte { return sha256.Sum256([]byte(s.Fingerprint())) }

func newDPPPServeCmd() *cobra.Command {
	var (
		d                             dpppDeployFlags
		in                            dpppInputFlags
		listen, certDir, pub, queries string
		out, name, ledgerAt           string
		hist, insecure                bool
		roundTimeout, joinTimeout     time.Duration
		minTeachers, maxRequests      int
		clients                       []string
	)
	cmd := &cobra.Command{
		Use:   "serve --listen HOST:PORT --certs DIR/aggregator --public-key public.pem --teachers NAMES (--schema SPEC.json | --idx) (--queries Q --out LABELS.csv | --clients NAMES) [--ledger FILE]",
		Short: "Run the DPPP aggregator: label query rows by the teachers' noisy encrypted votes",
		Long: `serve is the aggregator, and the client: it reads the query rows (--queries,
through the input spec --schema, without labels), listens on --listen for the
teachers named in --teachers (mutual TLS 1.3 with the certificate in --certs;
only certificates from the same CA whose name is in --teachers get in), and:

 1. offers the public parameters (roster, t, colluders C, absent A, noise kind
    and its calibration,
    per-query ε and δ, the total budget and the number of queries it allows,
    the key and the spec's fingerprint); every teacher recomputes them from
    its own flags and key and refuses any difference, naming the field;
 2. sends the query rows in batches of as many queries as one ciphertext
    holds; every teacher charges its budget, then votes: its one-hot labels
    plus its share of noise, packed and encrypted under the threshold key,
    with a proof that it knows what it encrypted;
 3. checks the proofs, multiplies the votes once at least N − A teachers
    voted (otherwise the batch is refused and nothing is decrypted), has
    every contributor sign the contributor set (one set per batch; a
    contributor lost before signing abandons the batch, whose queries are
    voted again: new noise, charged again), and asks t contributors to
    decrypt the sum; each checks every signature and proof and the sum
    first. A teacher lost or silent for --round-timeout is replaced by
    another contributor, so up to N − t failures do not stop a batch;
 4. writes one line per query to --out: row, label (the class with the most
    noisy votes) and, with --histogram, the noisy vote counts; and beside it
    LABELS.csv.privacy.json, the deployment's public parameters and the
    labels' composed guarantee (for 'dplearn dppp student').

Queries are a table read through the input spec --schema (the teachers'
models were trained with it), or, with --idx, IDX images (teachers trained
with 'dppp train --idx-images'; --idx-shape ROWSxCOLS when there is no
--queries file, --classes or --class-names as the teachers declared them).

Instead of (or after) --queries, --clients NAMES lets client parties (their
own certificates from the same CA) send rows with 'dplearn dppp query' and
receive the labels; serve then answers requests until --max-requests were
answered or it is interrupted.

Budget. Every answered query is charged before anything is decrypted: within
the run, composed by the noise kind's accountant (the run refuses past
--budget-epsilon/--budget-delta); with --ledger FILE, also to a ledger file
kept across runs (created with the budget flags if it does not exist; basic
composition across runs, as the teachers' ledgers), so a restarted
aggregator refuses past its budget: it checks before it starts that the
file can pay for --queries, and before each batch (or client request) that
it can pay for it, so nothing is charged for a refused batch.
The teachers keep their own ledgers and refuse past their budgets even if
the aggregator asks.

What the aggregator learns is the noisy histogram of each query (which the
labels are computed from), never a single teacher's vote. Logs go to stderr;
a summary with the spent and remaining budget to stdout (and to each client
after each answer). --insecure runs without certificates on a loopback
address only, for tests.`,
		Example: `  dplearn dppp keygen --parties 5 --threshold 3 --out keys/
  dplearn certs --out pki --names aggregator,teacher1,teacher2,teacher3,teacher4,teacher5,client1
  dplearn dppp serve --listen 0.0.0.0:7443 --certs pki/aggregator --public-key keys/public.pem \
      --teachers teacher1,teacher2,teacher3,teacher4,teacher5 --threshold 3 --schema digits.json \
      --epsilon 1 --delta 1e-5 --budget-epsilon 20 --queries queries.csv --out labels.csv --histogram
  # or serve clients' requests ('dplearn dppp query'):
  dplearn dppp serve --listen 0.0.0.0:7443 --certs pki/aggregator --public-key keys/public.pem \
      --teachers teacher1,teacher2,teacher3,teacher4,teacher5 --threshold 3 --schema digits.json \
      --budget-epsilon 20 --clients client1 --ledger aggregator-budget.json
  # teachers trained on 28×28 IDX images (Fashion-MNIST)
  dplearn dppp serve --listen 0.0.0.0:7443 --certs pki/aggregator --public-key keys/public.pem \
      --teachers teacher1,teacher2,teacher3,teacher4,teacher5 --idx --idx-shape 28x28 --clients client1`,
		Args: cobra.NoArgs,
	}
	d.register(cmd, true)
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:7443", "address to listen on (HOST:PORT; port 0 picks a free one)")
	f.StringVar(&certDir, "certs", "", "the aggregator's certificate directory from 'dplearn certs'")
	f.StringVar(&pub, "public-key", "", "the threshold public key from 'dplearn dppp keygen'")
	in.register(cmd, true)
	f.StringVar(&queries, "queries", "", "query rows: a table (CSV, CSV.gz or Parquet; the spec's features, no label needed), or with --idx an IDX images file")
	f.StringVar(&out, "out", "", "where to write LABELS.csv (and LABELS.csv.privacy.json, the labels' guarantee)")
	f.BoolVar(&hist, "histogram", false, "also write each query's noisy vote counts")
	f.StringVar(&ledgerAt, "ledger", "", "the aggregator's budget ledger file, kept across runs (created with --budget-epsilon and --budget-delta if it does not exist)")
	f.DurationVar(&roundTimeout, "round-timeout", 30*time.Second, "how long each phase of a batch waits for the teachers")
	f.DurationVar(&joinTimeout, "join-timeout", 0, "how long to wait for the teachers to connect and accept (0: --round-timeout)")
	f.IntVar(&minTeachers, "min-teachers", 0, "fewest accepting teachers to start with (0 or less than N − A: N − A)")
	f.StringSliceVar(&clients, "clients", nil, "client parties allowed to send queries with 'dplearn dppp query' (their certificates' names)")
	f.IntVar(&maxRequests, "max-requests", 0, "with --clients: stop after answering this many requests (0: serve until interrupted)")
	f.BoolVar(&insecure, "insecure", false, "no TLS, no certificates, loopback only: for tests on this machine")
	f.StringVar(&name, "name", dpppnet.DefaultHubName, "with --insecure: the aggregator's name")
	logFlags := addDPPPLogFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := logFlags.check(); err != nil {
			return err
		}
		req := []string{"teachers", "public-key"}
		clients = trimAll(clients)
		if len(clients) == 0 || queries != "" {
			req = append(req, "queries", "out")
		}
		if !insecure {
			req = append(req, "certs")
		}
		if err := requireFlags(cmd, req...); err != nil {
			return err
		}
		if insecure && cmd.Flags().Changed("certs") {
			return errors.New("--insecure and --certs: choose one")
		}
		if err := in.check(cmd); err != nil {
			return err
		}
		if err := checkLabelsOutput(out, append(certFiles("--certs", certDir), fileFlag{"--queries", queries}, fileFlag{"--schema", in.spec}, fileFlag{"--public-key", pub}, fileFlag{"--ledger", ledgerAt})...); err != nil {
			return err
		}
		ctx := cmd.Context()
		stderr := &lockedWriter{w: cmd.ErrOrStderr()} // the transport and the protocol log here concurrently
		logf := logx.Printf(stderr, "")
		plog, tlog := logFlags.loggers(stderr, "", name)
		input, rows, err := in.load(ctx, queries)
		if err != nil {
			return err
		}
		tpk, err := keyfile.LoadThresholdPublicKey(pub)
		if err != nil {
			return err
		}
		teachers := trimAll(d.teachers)
		for _, t := range teachers {
			if err := certs.ValidateName(t); err != nil {
				return fmt.Errorf("--teachers: %w", err)
			}
		}
		for _, c := range clients {
			if err := certs.ValidateName(c); err != nil {
				return fmt.Errorf("--clients: %w", err)
			}
			if slices.Contains(teachers, c) {
				return fmt.Errorf("--clients: %s is a teacher", c)
			}
		}
		p, err := d.session(teachers, input, tpk)
		if err != nil {
			return err
		}
		aopt := dppp.AggregatorOptions{}
		var status func() string
		var canPay func(int) error
		var left func() int
		if ledgerAt != "" {
			led, err := openRunFile(ctx, ledgerAt, "dppp aggregator", p.BudgetEpsilon, p.BudgetDelta)
			if err != nil {
				return err
			}
			led.bind(p)
			led.restart = true
			// A restart past the budget refuses before any teacher is
			// asked (not even one query remains); a --queries file larger
			// than what remains gets the rows that remain labelled.
			if err := led.canPay(1); err != nil {
				return err
			}
			aopt.Ledger, status, canPay, left = led, led.status, led.canPay, led.remaining
			logf("%s", led.note)
		}
		scfg := transport.ServerConfig{HubConfig: dpppnet.HubConfig(p, clients...), Address: listen, Insecure: insecure}
		scfg.Logger = tlog
		if scfg.Identity, scfg.Name, err = partyIdentity(stderr, insecure, certDir, name); err != nil {
			return err
		}
		srv, err := transport.Listen(ctx, scfg)
		if err != nil {
			return err
		}
		defer srv.Close()
		for _, line := range p.Report() {
			logf("%s", line)
		}
		logf("listening on %s; expecting %s; %d queries in batches of %d", srv.Addr(), strings.Join(teachers, ", "), len(rows), p.QPC)
		if len(clients) > 0 {
			logf("answering requests of %s", strings.Join(clients, ", "))
		}
		if scfg.Identity != nil {
			// Check the teachers' set signatures on arrival (the teachers
			// check them anyway): a bad one abandons the batch at once.
			if aopt.Verifier, err = certs.NewStatementSigner(scfg.Identity); err != nil {
				return err
			}
		} else {
			logf("WARNING: --insecure: no certificates, so no set signatures: neither the transport nor the consistency round protects this run against a malicious aggregator (differencing); tests only")
		}
		res, err := dpppnet.Serve(ctx, srv, p, tpk, rows, dpppnet.ServeOptions{RoundTimeout: roundTimeout, JoinTimeout: joinTimeout, MinTeachers: minTeachers, Logger: plog,
			Clients: clients, MaxRequests: maxRequests, Aggregator: aopt, Status: status, CanPay: canPay, Left: left})
		if res != nil && len(rows) > 0 && len(res.Labels) > 0 {
			if werr := writeDPPPLabels(out, input.classNames, res, hist, p); werr != nil {
				return errors.Join(err, werr)
			}
		}
		if err != nil {
			if res != nil && res.Status != "" {
				fmt.Fprintln(cmd.OutOrStdout(), res.Status)
			}
			return err
		}
		w := cmd.OutOrStdout()
		fmt.Fprintf(w, "labelled %d queries in %d batches", len(res.Labels), len(res.Batches))
		if len(rows) > 0 {
			fmt.Fprintf(w, "; wrote %s", out)
		}
		fmt.Fprintln(w)
		if res.Partial != "" {
			fmt.Fprintf(w, "--queries: %s\n", res.Partial)
		}
		fmt.Fprintln(w, res.Status)
		if insecure {
			fmt.Fprintln(w, "WARNING: --insecure run: no certificates, no set signatures; neither the transport nor the consistency round protected it against a malicious aggregator")
		}
		return nil
	}
	return cmd
}

func newDPPPQueryCmd() *cobra.Command {
	var (
		in                                           dpppInputFlags
		server, serverName, certDir, name, data, out string
		hist, insecure                               bool
		timeout, peerTimeout                         time.Duration
		attempts                                     int
	)
	cmd := &cobra.Command{
		Use:   "query --server HOST:PORT --certs DIR/CLIENT (--schema SPEC.json | --idx) --data QUERIES --out LABELS.csv [--histogram]",
		Short: "Ask a DPPP aggregator for labels of query rows, as a client",
		Long: `query is a client of 'dplearn dppp serve --clients NAME'. It reads the query
rows (--data, through the input spec --schema; labels, if present, are
ignored), connects to --server with mutual TLS 1.3 (its certificate's name
must be in the aggregator's --clients), receives the deployment's public
parameters, sends the rows in requests of one batch each, and writes one line
per row to --out: row, label and, with --histogram, the noisy vote counts.

With --idx the rows are IDX images (pixels / 255), for a deployment of
teachers trained on IDX images ('serve --idx'); --class-names names their
classes in LABELS.csv. query checks the deployment's input fingerprint
against its own (--schema, or the images' size and the class names) before
it sends any row.

Beside LABELS.csv it writes LABELS.csv.privacy.json: the deployment's public
parameters and the number of labels, from which 'dplearn dppp student'
recomputes the labels' composed guarantee. stdout says that guarantee and
the aggregator's spent and remaining budget.

The aggregator sees the rows and the noisy histograms (as it does when it
reads the queries itself); the teachers see the rows. Every answered query
spends budget at the aggregator and at every decrypting teacher; a request
past the budget is refused.`,
		Example: `  dplearn dppp query --server agg.example.org:7443 --certs pki/client \
      --schema digits.json --data queries.csv --out labels.csv --histogram
  dplearn dppp query --server agg.example.org:7443 --certs pki/client \
      --idx --data t10k-images-idx3-ubyte.gz --out labels.csv`,
		Args: cobra.NoArgs,
	}
	f := cmd.Flags()
	f.StringVar(&server, "server", "", "the aggregator's HOST:PORT")
	f.StringVar(&serverName, "server-name", dpppnet.DefaultHubName, "the name in the aggregator's certificate")
	f.StringVar(&certDir, "certs", "", "this client's certificate directory from 'dplearn certs'")
	in.register(cmd, false)
	f.StringVar(&data, "data", "", "query rows: a table (CSV, CSV.gz or Parquet), or with --idx an IDX images file")
	f.StringVar(&out, "out", "", "where to write LABELS.csv (and LABELS.csv.privacy.json, the labels' guarantee for 'dppp student')")
	f.BoolVar(&hist, "histogram", false, "also ask for and write the noisy vote counts")
	f.DurationVar(&timeout, "timeout", 10*time.Minute, "how long to wait for each answer")
	f.IntVar(&attempts, "connect-attempts", 8, "connection attempts before giving up")
	f.DurationVar(&peerTimeout, "peer-timeout", transport.DefaultPeerTimeout, "give up when the connection to the aggregator has been down this long (it died or is unreachable)")
	f.BoolVar(&insecure, "insecure", false, "no TLS, no certificates, loopback only: for tests on this machine")
	f.StringVar(&name, "name", "", "with --insecure: this client's name")
	logFlags := addDPPPLogFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := logFlags.check(); err != nil {
			return err
		}
		if err := requireFlags(cmd, partyFlags(insecure, "server", "data", "out")...); err != nil {
			return err
		}
		ctx := cmd.Context()
		stderr := &lockedWriter{w: cmd.ErrOrStderr()} // the transport and the protocol log here concurrently
		id, name, err := partyIdentity(stderr, insecure, certDir, name)
		if err != nil {
			return err
		}
		if err := in.check(cmd); err != nil {
			return err
		}
		if err := checkLabelsOutput(out, append(certFiles("--certs", certDir), fileFlag{"--data", data}, fileFlag{"--schema", in.spec})...); err != nil {
			return err
		}
		input, rows, err := in.load(ctx, data)
		if err != nil {
			return err
		}
		plog, tlog := logFlags.loggers(stderr, name+": ", name)
		ccfg := transport.ClientConfig{Address: server, Server: serverName, Identity: id, Insecure: insecure, Session: dpppnet.Session(),
			Attempts: attempts, PeerTimeout: peerTimeout, AckTimeout: timeout, MaxPayload: transport.DefaultMaxPayload,
			Logger: tlog}
		if insecure {
			ccfg.Name = name
		}
		conn, err := transport.Dial(ctx, ccfg)
		if err != nil {
			return err
		}
		defer conn.Close()
		res, err := dpppnet.Query(ctx, conn, rows, dpppnet.QueryOptions{Histogram: hist, Timeout: timeout, Logger: plog, Model: input.fingerprint})
		if res != nil && len(res.Labels) > 0 {
			if werr := writeDPPPLabels(out, input.classNames, &dppp.RunResult{Labels: res.Labels, Hist: res.Hist}, hist, res.Params); werr != nil {
				return errors.Join(err, werr)
			}
		}
		w := cmd.OutOrStdout()
		if res != nil && len(res.Labels) > 0 {
			g, eps, delta, gerr := labelsGuarantee(res.Params, len(res.Labels))
			if gerr != nil {
				return errors.Join(err, gerr)
			}
			fmt.Fprintf(w, "%d labels written to %s (%s noise, ε = %g, δ = %g per query); together they are (%s, %s)-DP for the teachers' data [%s]\n",
				len(res.Labels), out, res.Params.Noise, res.Params.Epsilon, res.Params.Delta, eps, delta, g.Accountant)
		}
		if res != nil && res.Partial != "" {
			fmt.Fprintln(w, res.Partial)
		}
		if res != nil && res.Budget != "" {
			fmt.Fprintln(w, res.Budget)
		}
		return err
	}
	return cmd
}

// session calibrates the deployment of teachers on input under tpk and
// draws the run's session.
func (f *dpppDeployFlags) session(teachers []string, input *dpppInput, tpk *paillier.ThresholdPublicKey) (*dppp.Params, error) {
	cfg, err := f.config(teachers, len(input.classNames), input.features, input.fingerprint)
	if err != nil {
		return nil, err
	}
	p0, err := dppp.Calibrate(cfg, tpk)
	if err != nil {
		return nil, err
	}
	return p0.NewSession()
}

// writeDPPPLabels writes row, label (class name) and, with hist, the noisy
// vote counts per class, and beside it the labels' privacy record
// (writeLabelsMeta) of deployment p.
func writeDPPPLabels(path string, classes []string, res *dppp.RunResult, hist bool, p *dppp.Params) error {
	f, err := createOutput(path, os.Stdout) // atomic: a temporary file renamed by Commit
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	head := []string{"row", "label"}
	if hist {
		for _, c := range classes {
			head = append(head, "votes_"+c)
		}
	}
	_ = w.Write(head)
	for i, l := range res.Labels {
		rec := []string{strconv.Itoa(i + 1), strconv.Itoa(l)}
		if l >= 0 && l < len(classes) {
			rec[1] = classes[l]
		}
		if hist {
			for _, v := range res.Hist[i] {
				rec = append(rec, strconv.FormatFloat(v, 'g', -1, 64))
			}
		}
		_ = w.Write(rec)
	}
	w.Flush()
	if err := w.Error(); err != nil {
		f.Abort()
		return err
	}
	if err := f.Commit(); err != nil {
		return err
	}
	return writeLabelsMeta(path, p, len(res.Labels))
}

// dpppTeacherFromModel builds a teacher from a model file and a key share.
// src is the noise source (nil: secure).
// cals, if not nil, shares one calibration among the teachers built with
// it (simulate's in-process teachers).
func dpppTeacherFromModel(ctx context.Context, d *dpppDeployFlags, name string, teachers []string, modelPath string, key *paillier.KeyShare, ledger dppp.Ledger, src noise.Source, id *certs.Party, cals *dpppCalibrations) (*dppp.Teacher, classify.Predictor, error) {
	t, pred, _, err := dpppTeacherParams(ctx, d, name, teachers, modelPath, key, ledger, src, id, cals)
	return t, pred, err
}

// dpppCalibrations shares the result of dppp.Calibrate among the teachers
// one process builds (simulate runs every teacher in-process): Calibrate
// is a function of the configuration and the public key alone and costs
// about half a second per call with the PLD accountant. A teacher whose
// configuration or key differs from the cached one calibrates afresh (and
// becomes the cached one); NewTeacher checks a shared calibration against
// the teacher's own configuration and key in any case. Safe for
// concurrent use; the zero value is ready.
type dpppCalibrations struct {
	mu  sync.Mutex
	cfg dppp.Config
	p   *dppp.Params
}

// calibrate returns Calibrate(cfg, tpk), from the cache when it holds the
// same configuration and key. A nil c always calibrates.
func (c *dpppCalibrations) calibrate(cfg dppp.Config, tpk *paillier.ThresholdPublicKey) (*dppp.Params, error) {
	if c == nil {
		return dppp.Calibrate(cfg, tpk)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.p != nil && c.p.Key == tpk.ID() && reflect.DeepEqual(c.cfg, cfg) {
		return c.p.Clone(), nil
	}
	p, err := dppp.Calibrate(cfg, tpk)
	if err != nil {
		return nil, err
	}
	c.cfg, c.p = cfg, p
	return p.Clone(), nil
}

// dpppTeacherParams is dpppTeacherFromModel that also returns the
// parameters the teacher calibrated itself (session aside): the ones it
// accepts.
func dpppTeacherParams(ctx context.Context, d *dpppDeployFlags, name string, teachers []string, modelPath string, key *paillier.KeyShare, ledger dppp.Ledger, src noise.Source, id *certs.Party, cals *dpppCalibrations) (*dppp.Teacher, classify.Predictor, *dppp.Params, error) {
	mf, err := classify.Load(modelPath)
	if err != nil {
		return nil, nil, nil, err
	}
	model, err := modelFingerprint(modelPath, mf)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg, err := d.config(teachers, len(mf.ClassNames), mf.Features, model)
	if err != nil {
		return nil, nil, nil, err
	}
	p, err := cals.calibrate(cfg, key.PublicKey())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", name, err)
	}
	pred, err := mf.Open(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	tc := dppp.TeacherConfig{Name: name, Config: cfg, Key: key, Predict: pred.PredictBatch, Ledger: ledger, Noise: src, Calibrated: p} // p: calibrated once, above
	if id != nil {
		// The teacher signs contributor sets with its certificate's key and
		// checks the others' against the deployment's CA.
		if tc.Signer, err = certs.NewStatementSigner(id); err != nil {
			pred.Close()
			return nil, nil, nil, err
		}
	} else {
		tc.Unsigned = true // --insecure: no identities, so no set signatures
	}
	t, err := dppp.NewTeacher(tc)
	if err != nil {
		pred.Close()
		return nil, nil, nil, err
	}
	return t, pred, p, nil
}

func newDPPPTeachCmd() *cobra.Command {
	var (
		d                                                   dpppDeployFlags
		server, serverName, certDir, model, share, ledgerAt string
		name                                                string
		insecure                                            bool
		idle, peerTimeout                                   time.Duration
		attempts                                            int
	)
	cmd := &cobra.Command{
		Use:   "teach --server HOST:PORT --certs DIR/TEACHER --model MODEL.json --key-share share-00I.pem --teachers NAMES [--ledger FILE]",
		Short: "Take part in DPPP as one teacher: vote on queries and help decrypt noisy histograms",
		Long: `teach runs one teacher. It loads its model (--model, from 'dplearn dppp train')
and its threshold key share (--key-share, from 'dplearn dppp keygen'), connects
to --server with mutual TLS 1.3 (its name is its certificate's and must be on
--teachers, at the position of its share), and then:

  - checks the offered parameters against its own flags (roster, t,
    --colluders, --absent, noise, per-query ε and δ, total budget, the key,
    the model's input spec) and refuses any difference, naming the field;
  - votes on every batch its budget allows: each query is charged to its
    ledger (--ledger FILE, created with the --budget-epsilon and
    --budget-delta it agrees to if it does not exist; without --ledger the
    count is kept in memory) BEFORE it sends the vote, its model's labels as
    one-hot counts plus its share of noise, packed and encrypted, with a
    proof that it knows the plaintext; it refuses queries past the budget
    even if the aggregator asks;
  - signs the batch's contributor set (with its certificate's key) if its
    own vote is in it byte for byte, it has at least N − A contributors, and
    it signed no other set for that batch;
  - partially decrypts a sum only if it is of the set it signed, every
    listed contributor signed that set, every listed vote's proof holds,
    and the sum is the product of the listed votes. Decrypting charges
    nothing more: a vote is in at most one decrypted sum.

With --insecure there are no certificates: the teacher signs no set and
checks no signature (its log says so), so only its own memory keeps its
vote out of a second sum; never outside tests.

A model trained on a table (--data/--schema) takes part in deployments of
that spec; one trained on IDX images (--idx-images) in deployments of IDX
images of that size and those class names ('serve --idx'): the input is part
of the parameters it checks.

Logs go to stderr; the outcome to stdout: the aggregator's last word, the
votes and partial decryptions sent, and this teacher's spent and remaining
budget (this run by the noise kind's accountant; the ledger file across
runs).`,
		Example: `  dplearn dppp teach --server agg.example.org:7443 --certs pki/teacher2 \
      --model teacher2.json --key-share keys/share-002.pem \
      --teachers teacher1,teacher2,teacher3,teacher4,teacher5 --threshold 3 \
      --epsilon 1 --delta 1e-5 --budget-epsilon 20 --ledger teacher2-budget.json`,
		Args: cobra.NoArgs,
	}
	d.register(cmd, true)
	f := cmd.Flags()
	f.StringVar(&server, "server", "", "the aggregator's HOST:PORT")
	f.StringVar(&serverName, "server-name", dpppnet.DefaultHubName, "the name in the aggregator's certificate")
	f.StringVar(&certDir, "certs", "", "this teacher's certificate directory from 'dplearn certs'")
	f.StringVar(&model, "model", "", "this teacher's model file from 'dplearn dppp train'")
	f.StringVar(&share, "key-share", "", "this teacher's key share from 'dplearn dppp keygen' (SECRET)")
	f.StringVar(&ledgerAt, "ledger", "", "privacy budget ledger file; each answered query is charged before decrypting")
	f.DurationVar(&idle, "idle-timeout", 10*time.Minute, "give up when the aggregator sends nothing for this long")
	f.IntVar(&attempts, "connect-attempts", 8, "connection attempts before giving up")
	f.DurationVar(&peerTimeout, "peer-timeout", transport.DefaultPeerTimeout, "give up when the connection to the aggregator has been down this long (it died or is unreachable)")
	f.BoolVar(&insecure, "insecure", false, "no TLS, no certificates, loopback only: for tests on this machine")
	f.StringVar(&name, "name", "", "with --insecure: this teacher's name")
	hooks := func(io.Writer) dpppTeachHooks { return dpppTeachHooks{} }
	if addDPPPTeachHooks != nil {
		hooks = addDPPPTeachHooks(f) // the test binary only
	}
	logFlags := addDPPPLogFlags(cmd)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := logFlags.check(); err != nil {
			return err
		}
		if err := requireFlags(cmd, partyFlags(insecure, "server", "model", "key-share", "teachers")...); err != nil {
			return err
		}
		ctx := cmd.Context()
		stderr := &lockedWriter{w: cmd.ErrOrStderr()} // the transport and the protocol log here concurrently
		id, name, err := partyIdentity(stderr, insecure, certDir, name)
		if err != nil {
			return err
		}
		teachers := trimAll(d.teachers)
		key, err := keyfile.LoadKeyShare(share)
		if err != nil {
			return err
		}
		var ledger dppp.Ledger
		var fileLedger *runFile
		note := "no --ledger: the spend is counted in memory only, for this run"
		if ledgerAt != "" {
			l, err := openRunFile(ctx, ledgerAt, name, d.budgetEpsilon, d.budgetDelta)
			if err != nil {
				return err
			}
			ledger, fileLedger, note = l, l, l.note
		}
		h := hooks(stderr)
		t, pred, p0, err := dpppTeacherParams(ctx, &d, name, teachers, model, key, ledger, h.source, id, nil)
		if err != nil {
			return err
		}
		defer pred.Close()
		if fileLedger != nil {
			fileLedger.bind(p0)
		}
		logf := logx.Printf(stderr, name+": ")
		plog, tlog := logFlags.loggers(stderr, name+": ", name)
		logf("model %s (%d classes, %d features); %s", model, pred.Classes(), pred.Features(), note)
		ccfg := transport.ClientConfig{Address: server, Server: serverName, Identity: id, Insecure: insecure, Session: dpppnet.Session(),
			Attempts: attempts, PeerTimeout: peerTimeout, AckTimeout: idle, MaxPayload: transport.DefaultMaxPayload,
			Logger: tlog}
		if insecure {
			ccfg.Name = name
		}
		conn, err := transport.Dial(ctx, ccfg)
		if err != nil {
			return err
		}
		defer conn.Close()
		logf("connected to %s at %s", serverName, server)
		topt := dpppnet.TeachOptions{IdleTimeout: idle, Logger: plog, AfterSend: h.afterSend}
		res, err := dpppnet.Teach(ctx, conn, t, topt)
		w := cmd.OutOrStdout()
		if res != nil && res.Done != "" {
			fmt.Fprintf(w, "%s: %s\n", name, res.Done)
		}
		if res != nil {
			fmt.Fprintf(w, "%s: %d votes, %d partial decryptions, %d refusals\n", name, res.Votes, res.Partials, res.Refusals)
		}
		status := "this run: " + runStatus(p0, t.Answered())
		if fileLedger != nil {
			status = fileLedger.status()
		}
		fmt.Fprintf(w, "%s: %s\n", name, status)
		return err
	}
	return cmd
}

// newDPPPNetCmds returns the networked DPPP commands (serve, teach,
// simulate).
func newDPPPNetCmds() []*cobra.Command {
	return []*cobra.Command{newDPPPServeCmd(), newDPPPTeachCmd(), newDPPPQueryCmd(), newDPPPSimulateCmd()}
}
