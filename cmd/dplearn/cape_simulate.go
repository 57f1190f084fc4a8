package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/capenet"
	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/suffstat"
	"github.com/dplearn/dplearn/transport"
)

type capeSimOptions struct {
	fit                      capeFitFlags
	logLevel                 string
	data, out                string
	sites, minSites, workers int
	roundTimeout             time.Duration
	processes, seeded        bool
	seed                     uint64
}

func newCapeSimulateCmd() *cobra.Command {
	var o capeSimOptions
	cmd := &cobra.Command{
		Use:   "simulate --data FILE --schema S.json --model linear|logistic --epsilon E --delta D --sites S [--processes]",
		Short: "Run a capeFM fit with every party on this machine, from one table split in S",
		Long: `simulate splits one table into --sites sites (deterministically: row r goes to
site-(r mod S + 1), so the sizes differ by at most one) and runs the aggregator
and every site on this machine with the same protocol code as serve and join:

  in one process (default): the sites talk to the aggregator through the
  in-memory transport hub, with the same checks as over the network;

  with --processes: every site is a child process of this binary ('dplearn
  cape join') connecting to the aggregator on 127.0.0.1 over mutual TLS 1.3,
  with certificates made for the run in a temporary directory (deleted
  afterwards).

No certificates or other setup are needed. It prints the per-round log
(stderr), the model and its privacy report (stdout), and writes the model to
--out if given. Each simulated site charges nothing (no ledgers).`,
		Example: `  dplearn cape simulate --data CPS1988.csv --schema cps.json --model linear \
      --epsilon 1 --delta 1e-5 --sites 5
  dplearn cape simulate --data SmokeBan.csv --schema smokeban.json --model logistic \
      --epsilon 1 --delta 1e-5 --sites 3 --processes`,
		Args: cobra.NoArgs,
	}
	o.fit.register(cmd)
	f := cmd.Flags()
	f.StringVar(&o.data, "data", "", "the table to split (CSV, CSV.gz or Parquet)")
	f.IntVar(&o.sites, "sites", 5, "number of simulated sites S (2 to 1024)")
	f.IntVar(&o.fit.colluders, "colluders", -1, "S_C: sites that may collude with the aggregator (-1: ⌈S/3⌉−1)")
	f.IntVar(&o.minSites, "min-sites", 0, "fewest sites the fit may continue with (0: all)")
	f.DurationVar(&o.roundTimeout, "round-timeout", 30*time.Second, "per-round timeout")
	f.BoolVar(&o.processes, "processes", false, "run each site as a child process over mutual TLS on 127.0.0.1")
	f.Uint64Var(&o.seed, "seed", 0, "deterministic INSECURE noise (site i uses seed+i); experiments only")
	f.StringVar(&o.out, "out", "", "also write the model to this file")
	f.IntVar(&o.workers, "workers", 0, "parsing goroutines (0: all cores)")
	var unit unitFlags
	common := capeCommonFlags(cmd, &unit, true)
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		fm, level, err := common(o.fit.mechanism)
		if err != nil {
			return err
		}
		o.logLevel = level
		if err := requireFlags(cmd, "data", "schema", "model", "epsilon"); err != nil {
			return err
		}
		if err := checkOutputs([]fileFlag{{"--out", o.out}}, []fileFlag{{"--data", o.data}, {"--schema", o.fit.schemaPath}}); err != nil {
			return err
		}
		o.seeded = cmd.Flags().Changed("seed")
		return runCapeSimulate(cmd.Context(), cmd, o, fm)
	}
	return cmd
}

func runCapeSimulate(ctx context.Context, cmd *cobra.Command, o capeSimOptions, format outputFormat) error {
	kind, mech, s, fp, err := o.fit.parsed(cmd)
	if err != nil {
		return err
	}
	if o.sites < 2 || o.sites > 1024 {
		return fmt.Errorf("--sites %d: want 2 to 1024", o.sites)
	}
	minSites := o.minSites
	if minSites == 0 {
		minSites = o.sites
	}
	if minSites < 2 || minSites > o.sites {
		return fmt.Errorf("--min-sites %d: want 2 to %d", minSites, o.sites)
	}
	names := make([]string, o.sites)
	roster := make([]capefm.SiteInfo, o.sites)
	for i := range names {
		names[i] = fmt.Sprintf("site-%d", i+1)
		roster[i] = capefm.SiteInfo{Name: names[i], ID: uint32(i + 1)}
	}
	d := len(s.FeatureNames())
	template := capefm.Params{Mechanism: mech, Kind: kind, Schema: fp, D: d, Epsilon: o.fit.epsilon, Delta: o.fit.deltaFor(mech),
		Split: o.fit.split, Sites: roster, Colluders: o.fit.colluders, MinSites: minSites, NoiseRatio: o.fit.ratio(mech)}
	stderr := &lockedWriter{w: cmd.ErrOrStderr()} // the events and the slog records of every party
	sink := eventSink(stderr, format, "aggregator: ")
	logger := newCapeLogger(stderr, format, o.logLevel, sink)
	sopt := capenet.ServeOptions{RoundTimeout: o.roundTimeout, Events: sink, Logger: logger.With("party", capenet.DefaultHubName)}
	var res *capefm.RunResult
	if o.processes {
		res, err = simulateProcesses(ctx, cmd, o, format, template, names, stderr, logger, sopt)
	} else {
		res, err = simulateInProcess(ctx, o, format, s, template, names, stderr, logger, sopt)
	}
	if err != nil {
		return err
	}
	model, err := regress.NewModel(kind, s, &regress.Result{Coef: res.Coef, Privacy: res.Privacy, Trimmed: res.Trimmed},
		regress.Training{Rows: res.Params.N()})
	if err != nil {
		return err
	}
	path := "(not written: no --out)"
	if o.out != "" {
		if err := model.Save(o.out); err != nil {
			return err
		}
		path = o.out
	}
	return printCapeModel(cmd.OutOrStdout(), format, model, path, res)
}

// splitData reads the table once and gives row r to site r mod S: the
// rule of `cape join --part`.
func splitData(ctx context.Context, path string, s *schema.Schema, kind regress.Kind, mech capefm.Mechanism, sites, workers int) ([]regress.Data, error) {
	needRows := false
	if b := baselineEstimator(mech); b != "" {
		est, err := regress.New(b)
		if err != nil {
			return nil, err
		}
		needRows = est.NeedsRows(kind)
	}
	k := len(s.FeatureNames()) + 1
	ms := make([]*suffstat.Moments, sites)
	rows := make([][]float64, sites)
	for i := range ms {
		ms[i] = suffstat.New(k)
	}
	var index int64
	_, err := dataset.Stream(ctx, path, s, dataset.Options{Workers: workers}, func(batch []float64) error {
		for r := 0; r+k <= len(batch); r += k {
			i := int(index % int64(sites))
			row := batch[r : r+k]
			if err := ms[i].AddRows(row); err != nil {
				return err
			}
			if needRows {
				rows[i] = append(rows[i], row...)
			}
			index++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if index < int64(sites) {
		return nil, fmt.Errorf("%s: %d rows for %d sites", path, index, sites)
	}
	out := make([]regress.Data, sites)
	for i := range out {
		ms[i].Flush()
		out[i] = regress.Data{Stats: ms[i], Rows: rows[i]}
	}
	return out, nil
}

// simulateInProcess runs every party in this process over the in-memory hub.
func simulateInProcess(ctx context.Context, o capeSimOptions, format outputFormat, s *schema.Schema, template capefm.Params,
	names []string, stderr io.Writer, logger *slog.Logger, sopt capenet.ServeOptions) (*capefm.RunResult, error) {
	data, err := splitData(ctx, o.data, s, template.Kind, template.Mechanism, len(names), o.workers)
	if err != nil {
		return nil, err
	}
	// A CA for the run: the sites sign their secure-aggregation keys and
	// check each other's signatures, as over the network.
	ca, err := certs.NewCA(certs.Options{})
	if err != nil {
		return nil, err
	}
	sites := make([]*capefm.Site, len(names))
	for i, name := range names {
		id, err := ca.IssueParty(name, certs.Options{})
		if err != nil {
			return nil, err
		}
		signer, err := certs.NewStatementSigner(id)
		if err != nil {
			return nil, err
		}
		sites[i], err = capefm.NewSite(capefm.SiteConfig{Name: name, Mechanism: template.Mechanism, Kind: template.Kind, Schema: template.Schema,
			Epsilon: o.fit.epsilon, Delta: template.Delta, Split: o.fit.split, NoiseRatio: template.NoiseRatio,
			Source: randomSource(o.seeded, o.seed+uint64(i)), Ledger: memoryLedger{}, Signer: signer}, data[i])
		if err != nil {
			return nil, err
		}
	}
	aggID, err := ca.IssueParty(capenet.DefaultHubName, certs.Options{})
	if err != nil {
		return nil, err
	}
	if sopt.KeyVerifier, err = certs.NewStatementSigner(aggID); err != nil {
		return nil, err
	}
	cfg := capenet.HubConfig(names, template.D)
	cfg.Name, cfg.Logger = capenet.DefaultHubName, logger
	hub, err := transport.NewMemory(cfg)
	if err != nil {
		return nil, err
	}
	defer hub.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, len(names))
	for i, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := hub.Dial(ctx, name)
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Close()
			_, errs[i] = capenet.Join(ctx, conn, sites[i], capenet.JoinOptions{Events: eventSink(stderr, format, name+": "), Logger: logger.With("party", name)})
		}()
	}
	res, err := capenet.Serve(ctx, hub, template, sopt)
	cancel()
	wg.Wait()
	if err != nil {
		return nil, err
	}
	return res, nil
}

// simulateProcesses runs the aggregator here and every site as a child
// process of this binary over mutual TLS on 127.0.0.1.
func simulateProcesses(ctx context.Context, cmd *cobra.Command, o capeSimOptions, format outputFormat, template capefm.Params,
	names []string, stderr io.Writer, logger *slog.Logger, sopt capenet.ServeOptions) (*capefm.RunResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	tmp, err := os.MkdirTemp("", "dplearn-cape-simulate-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(tmp)
	pki := filepath.Join(tmp, "pki")
	if _, err := certs.Create(pki, append([]string{capenet.DefaultHubName}, names...), certs.Options{}); err != nil {
		return nil, err
	}
	id, err := certs.LoadParty(filepath.Join(pki, capenet.DefaultHubName))
	if err != nil {
		return nil, err
	}
	if sopt.KeyVerifier, err = certs.NewStatementSigner(id); err != nil {
		return nil, err
	}
	cfg := transport.ServerConfig{HubConfig: capenet.HubConfig(names, template.D), Address: "127.0.0.1:0", Identity: id}
	cfg.Logger = logger
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	srv, err := transport.Listen(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	sopt.Events(capenet.Event{Time: time.Now(), Kind: "listening", Address: srv.Addr().String(), Sites: names,
		Message: fmt.Sprintf("listening on %s (mutual TLS 1.3, certificates for this run in %s); starting %d site processes", srv.Addr(), pki, len(names))})
	var mu sync.Mutex // serialises the children's forwarded lines
	var wg sync.WaitGroup
	children := make([]*exec.Cmd, len(names))
	for i, name := range names {
		args := []string{"cape", "join", "--server", srv.Addr().String(), "--certs", filepath.Join(pki, name),
			"--data", o.data, "--part", fmt.Sprintf("%d/%d", i+1, len(names)), "--schema", o.fit.schemaPath, "--model", o.fit.model,
			"--mechanism", string(template.Mechanism), "--epsilon", fmtFloat(o.fit.epsilon), "--delta", fmtFloat(o.fit.delta),
			"--split", fmtFloat(o.fit.split), "--format", string(format), "--log-level", o.logLevel, "--workers", "1"}
		if template.Mechanism == capefm.CapeFM {
			args = append(args, "--noise-ratio", fmtFloat(template.NoiseRatio))
		}
		if o.seeded {
			args = append(args, "--seed", strconv.FormatUint(o.seed+uint64(i), 10))
		}
		c := exec.CommandContext(ctx, exe, args...)
		c.WaitDelay = 5 * time.Second
		out, err := c.StderrPipe()
		if err != nil {
			return nil, err
		}
		c.Stdout = c.Stderr
		if err := c.Start(); err != nil {
			return nil, fmt.Errorf("starting %s: %w", name, err)
		}
		children[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				mu.Lock()
				if format == formatJSON {
					fmt.Fprintln(stderr, sc.Text())
				} else {
					fmt.Fprintf(stderr, "%s: %s\n", name, sc.Text())
				}
				mu.Unlock()
			}
		}()
	}
	res, serr := capenet.Serve(ctx, srv, template, sopt)
	// The sites exit once they have the outcome; give them a moment, then
	// stop any that did not.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		cancel()
		<-done
	}
	var failed []error
	for i, c := range children {
		if err := c.Wait(); err != nil && serr == nil {
			failed = append(failed, fmt.Errorf("%s: %w", names[i], err))
		}
	}
	if serr != nil {
		return nil, serr
	}
	if len(failed) > 0 {
		return res, errors.Join(failed...)
	}
	return res, nil
}

func fmtFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
