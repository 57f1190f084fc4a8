package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/consortium/analyst"
	"github.com/dplearn/dplearn/consortium/chain"
	"github.com/dplearn/dplearn/consortium/coordinator"
	"github.com/dplearn/dplearn/consortium/node"
	"github.com/dplearn/dplearn/consortium/policy"
	"github.com/dplearn/dplearn/consortium/store"
	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/schema"
)

// consortiumCmds are the consortium's commands (docs/consortium.md).
func consortiumCmds() []*cobra.Command {
	return []*cobra.Command{newCoordinatorCmd(), newNodeCmd(), newTaskCmd(), newBudgetCmd(), newAuditCmd()}
}

// newConsortiumLogger builds the coordinator's or a node's one
// *slog.Logger: its progress records become timestamped lines on w, as
// line renders them (coordinator.ProgressLine, node.ProgressLine); with
// --log-level other than off, every record at that level or above (the
// transport's too) is also written to w by slog's text handler, as the
// cape commands do. The records carry names, task IDs, public parameters
// and errors, never a dataset's values (TestConsortiumLogHasNoPrivateValues).
func newConsortiumLogger(w io.Writer, level string, line func(slog.Record) (string, bool)) *slog.Logger {
	hs := []slog.Handler{logx.LineHandler(w, "", line)}
	if l, ok := logLevels[level]; ok {
		hs = append(hs, slog.NewTextHandler(w, &slog.HandlerOptions{Level: l}))
	}
	return slog.New(slog.NewMultiHandler(hs...))
}

// logfTo returns a printf-style line writer for the test hooks of
// addNodeFaults.
func logfTo(w io.Writer) func(string, ...any) {
	return func(f string, a ...any) {
		fmt.Fprintf(w, "%s %s\n", time.Now().UTC().Format("15:04:05.000"), fmt.Sprintf(f, a...))
	}
}

func newCoordinatorCmd() *cobra.Command {
	var (
		listen, certDir, db, statusAddr string
		nodes, analysts, deployments    []string
		roundTimeout, joinWait, answer  time.Duration
		maxRunning                      int
		logLevel                        func() (string, error)
	)
	cmd := &cobra.Command{
		Use:   "coordinator --listen ADDR --certs DIR/coordinator --db FILE --nodes A,B,C --analysts X,Y",
		Short: "Run the consortium's coordinator (long-running)",
		Long: `coordinator keeps the consortium's nodes, datasets, tasks, results, the nodes'
budget reports and a hash-chained audit log in one bbolt file (--db), which
survives restarts, and runs analysts' tasks between the nodes that accept them
(mutual TLS 1.3, the same CA as every node and analyst). --nodes and
--analysts are the certificate names allowed to connect. --status-listen
serves a read-only HTML status page over TLS 1.3 to the analysts'
certificates. See docs/consortium.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "certs", "db", "nodes", "analysts"); err != nil {
				return err
			}
			level, err := logLevel()
			if err != nil {
				return err
			}
			id, err := certs.LoadParty(certDir)
			if err != nil {
				return err
			}
			deps, err := parseDeployments(deployments)
			if err != nil {
				return err
			}
			st, err := store.Open(db)
			if err != nil {
				return err
			}
			defer st.Close()
			logger := newConsortiumLogger(cmd.ErrOrStderr(), level, coordinator.ProgressLine)
			c, err := coordinator.New(coordinator.Config{Identity: id, Address: listen, Nodes: trimAll(nodes), Analysts: trimAll(analysts), Deployments: deps,
				Store: st, RoundTimeout: roundTimeout, JoinWait: joinWait, AnswerTimeout: answer, MaxRunning: maxRunning, Logger: logger,
				OnListen: func(a string) { fmt.Fprintf(cmd.OutOrStdout(), "listening on %s\n", a) }})
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			if statusAddr != "" {
				go func() {
					// A failure is logged by ServeStatus; the coordinator runs on.
					_ = c.ServeStatus(ctx, statusAddr, trimAll(analysts), func(a string) {
						fmt.Fprintf(cmd.OutOrStdout(), "status page on https://%s/\n", a)
					})
				}()
			}
			err = c.Run(ctx)
			if errors.Is(err, context.Canceled) {
				return nil
			}
			return err
		},
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:7500", "address to listen on")
	f.StringVar(&certDir, "certs", "", "the coordinator's certificate directory from 'dplearn certs'")
	f.StringVar(&db, "db", "", "the coordinator's state file (bbolt; created if missing)")
	f.StringSliceVar(&nodes, "nodes", nil, "the nodes' certificate names")
	f.StringSliceVar(&analysts, "analysts", nil, "the analysts' certificate names")
	f.StringVar(&statusAddr, "status-listen", "", "serve the read-only status page (HTTPS, analysts' certificates) on this address")
	f.StringArrayVar(&deployments, "deployment", nil, "NAME=DEPLOYMENT.json:PUBLIC_KEY.pem (repeatable): a DPPP deployment analysts may query; the coordinator is its aggregator")
	f.DurationVar(&roundTimeout, "round-timeout", 30*time.Second, "bound on each capeFM round")
	f.DurationVar(&joinWait, "join-wait", 10*time.Second, "once a task's minimum sites are online, wait this long (from submission) for the others")
	f.DurationVar(&answer, "answer-timeout", 30*time.Second, "bound on the nodes' answers to an offer")
	f.IntVar(&maxRunning, "max-running", 16, "tasks offered or running at once (the rest wait in the queue)")
	logLevel = addLogLevelFlag(cmd)
	return cmd
}

func newNodeCmd() *cobra.Command {
	var (
		server, serverName, certDir, policyPath, ledgerDir, auditPath string
		datasets, models                                              []string
		peerTimeout, maxBackoff                                       time.Duration
		faults                                                        func(func(string, ...any)) func(context.Context, string, capefm.Message) error
		logLevel                                                      func() (string, error)
	)
	cmd := &cobra.Command{
		Use:   "node --coordinator ADDR --certs DIR/SITE --policy FILE --dataset NAME=DATA:SCHEMA --ledgers DIR --audit FILE",
		Short: "Run a consortium site (long-running)",
		Long: `node connects out to the coordinator, reconnects with backoff for as long as
it runs, registers its datasets (--dataset NAME=DATA_FILE:SCHEMA_FILE,
repeatable: the name, the schema's fingerprint and N are registered), and
takes part in a task only if its policy file (--policy) allows it and its
ledgers (one per analyst and one per dataset under --ledgers, created with
the policy's budgets) can pay; every release is charged to both before it is
sent. Offers, decisions, charges and outcomes go to the hash-chained --audit
log. See docs/consortium.md for the policy file.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := requireFlags(cmd, "coordinator", "certs", "policy", "ledgers", "audit"); err != nil {
				return err
			}
			level, err := logLevel()
			if err != nil {
				return err
			}
			if len(datasets) == 0 && len(models) == 0 {
				return errors.New("give --dataset or --model (at least one)")
			}
			mods, err := parseModels(models)
			if err != nil {
				return err
			}
			id, err := certs.LoadParty(certDir)
			if err != nil {
				return err
			}
			pol, err := policy.Load(policyPath)
			if err != nil {
				return err
			}
			var ds []node.Dataset
			for _, d := range datasets {
				name, rest, ok := strings.Cut(d, "=")
				data, sch, ok2 := strings.Cut(rest, ":")
				if !ok || !ok2 || name == "" || data == "" || sch == "" {
					return fmt.Errorf("--dataset %q: want NAME=DATA_FILE:SCHEMA_FILE", d)
				}
				ds = append(ds, node.Dataset{Name: name, Path: data, Schema: sch})
			}
			cfg := node.Config{Identity: id, Coordinator: server, CoordinatorName: serverName, Datasets: ds, Models: mods,
				Policy: pol, LedgerDir: ledgerDir, AuditPath: auditPath, PeerTimeout: peerTimeout, MaxBackoff: maxBackoff,
				Logger: newConsortiumLogger(cmd.ErrOrStderr(), level, node.ProgressLine)}
			if faults != nil {
				cfg.BeforeSend = faults(logfTo(cmd.ErrOrStderr()))
			}
			n, err := node.New(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			defer n.Close()
			fmt.Fprintf(cmd.OutOrStdout(), "node %s: %d dataset(s), %d model(s) registered with the coordinator at %s\n", n.Name(), len(ds), len(mods), server)
			if err := n.Run(cmd.Context()); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&server, "coordinator", "", "the coordinator's HOST:PORT")
	f.StringVar(&serverName, "coordinator-name", "coordinator", "the name in the coordinator's certificate")
	f.StringVar(&certDir, "certs", "", "this node's certificate directory (its name is the node's)")
	f.StringVar(&policyPath, "policy", "", "the site's policy file (JSON; docs/consortium.md)")
	f.StringArrayVar(&datasets, "dataset", nil, "NAME=DATA_FILE:SCHEMA_FILE (repeatable)")
	f.StringArrayVar(&models, "model", nil, "NAME=MODEL.json:KEY_SHARE.pem:DEPLOYMENT.json (repeatable): this site is a teacher of DPPP deployment NAME with this model and key share")
	f.StringVar(&ledgerDir, "ledgers", "", "directory of the node's ledgers (one per analyst and per dataset)")
	f.StringVar(&auditPath, "audit", "", "the node's hash-chained audit log (JSON lines)")
	f.DurationVar(&peerTimeout, "peer-timeout", 20*time.Second, "redial when the connection has been down this long")
	f.DurationVar(&maxBackoff, "max-backoff", 10*time.Second, "longest wait between reconnection attempts")
	if addNodeFaults != nil {
		faults = addNodeFaults(f)
	}
	logLevel = addLogLevelFlag(cmd)
	return cmd
}

// addNodeFaults adds test-only flags to `node` and returns the hook they
// make; nil in the shipped binary (set by consortium_procs_test.go's init,
// as addCapeJoinFaults is).
var addNodeFaults func(*pflag.FlagSet) func(logf func(string, ...any)) func(context.Context, string, capefm.Message) error

// analystFlags are every analyst command's connection flags.
type analystFlags struct{ server, serverName, certDir string }

func (a *analystFlags) register(cmd *cobra.Command) {
	f := cmd.PersistentFlags()
	f.StringVar(&a.server, "coordinator", "", "the coordinator's HOST:PORT")
	f.StringVar(&a.serverName, "coordinator-name", "coordinator", "the name in the coordinator's certificate")
	f.StringVar(&a.certDir, "certs", "", "the analyst's certificate directory (its name is the analyst's)")
}

func (a *analystFlags) dial(ctx context.Context) (*analyst.Client, error) {
	if a.server == "" || a.certDir == "" {
		return nil, errors.New("--coordinator and --certs are required")
	}
	id, err := certs.LoadParty(a.certDir)
	if err != nil {
		return nil, err
	}
	return analyst.Dial(ctx, id, a.server, a.serverName)
}

func newTaskCmd() *cobra.Command {
	var af analystFlags
	cmd := &cobra.Command{Use: "task submit|status|result|cancel", Short: "Submit and follow consortium tasks (as an analyst)"}
	af.register(cmd)
	var (
		sites                    []string
		schemaPath, model, mech  string
		kind, deployment, qfile  string
		eps, delta, split, ratio float64
		minSites, colluders      int
		deadline                 time.Duration
		wait, redo               bool
	)
	submit := &cobra.Command{
		Use:   "submit (--site NODE=DATASET ... --schema S.json --model linear --epsilon E --delta D | --kind dppp --deployment NAME --schema SPEC.json --queries FILE)",
		Short: "Sign and submit a capeFM fit over named datasets at named sites, or a DPPP query task",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var spec wire.TaskSpec
			switch kind {
			case "", "capefm":
			case wire.KindDPPP:
				if err := requireFlags(cmd, "deployment", "schema", "queries"); err != nil {
					return err
				}
				var err error
				if spec, err = dpppTaskSpec(cmd.Context(), deployment, schemaPath, qfile); err != nil {
					return err
				}
				spec.Deadline = time.Now().Add(deadline).UTC()
				return submitTask(cmd, &af, spec, wait)
			default:
				return fmt.Errorf("--kind %q: want capefm or dppp", kind)
			}
			if err := requireFlags(cmd, "site", "schema", "epsilon"); err != nil {
				return err
			}
			sb, err := os.ReadFile(schemaPath)
			if err != nil {
				return fmt.Errorf("--schema: %w", err)
			}
			if _, err := schema.Parse(sb); err != nil {
				return fmt.Errorf("--schema %s: %w", schemaPath, err)
			}
			spec = wire.TaskSpec{Sites: map[string]string{}, Model: model, Mechanism: mech, Epsilon: eps, Delta: delta, Split: split,
				NoiseRatio: ratio, Colluders: colluders, MinSites: minSites, Schema: json.RawMessage(sb), Deadline: time.Now().Add(deadline).UTC(), RedoAfterRelease: redo}
			for _, s := range sites {
				n, d, ok := strings.Cut(s, "=")
				if !ok || n == "" || d == "" {
					return fmt.Errorf("--site %q: want NODE=DATASET", s)
				}
				spec.Sites[n] = d
			}
			return submitTask(cmd, &af, spec, wait)
		},
	}
	f := submit.Flags()
	f.StringArrayVar(&sites, "site", nil, "NODE=DATASET (repeatable): a site and the dataset it fits on")
	f.StringVar(&schemaPath, "schema", "", "the schema file every site encodes its rows with (--kind dppp: the deployment's input spec, which reads --queries)")
	f.StringVar(&kind, "kind", "capefm", "capefm (a fit) or dppp (label --queries by a DPPP deployment's teachers)")
	f.StringVar(&deployment, "deployment", "", "--kind dppp: the deployment to query")
	f.StringVar(&qfile, "queries", "", "--kind dppp: the query rows (a table read through --schema; labels ignored)")
	f.StringVar(&model, "model", "linear", "linear or logistic")
	f.StringVar(&mech, "mechanism", "capefm", "capefm or gaussian-fm-local")
	f.Float64Var(&eps, "epsilon", 0, "ε per site")
	f.Float64Var(&delta, "delta", 1e-6, "δ per site")
	f.Float64Var(&split, "split", 0, "budget split of Gaussian FM (0: 0.5)")
	f.Float64Var(&ratio, "noise-ratio", 0, "capeFM noise ratio R (0: 100)")
	f.IntVar(&colluders, "colluders", 0, "colluding sites S_C to assume (0: capeFM's default)")
	f.IntVar(&minSites, "min-sites", 0, "run with at least this many sites (0: all)")
	f.DurationVar(&deadline, "deadline", 10*time.Minute, "give up if the minimum sites are not online within this")
	f.BoolVar(&wait, "wait", false, "wait for the task to end and print it")
	f.BoolVar(&redo, "redo-after-release", false, "capeFM: redo (composing) instead of aborting when a site is lost after releasing")
	one := func(op string) *cobra.Command {
		return &cobra.Command{Use: op + " TASK", Short: strings.ToUpper(op[:1]) + op[1:] + " of a task", Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				c, err := af.dial(cmd.Context())
				if err != nil {
					return err
				}
				defer c.Close()
				var t *coordinator.Task
				if op == "cancel" {
					t, err = c.Cancel(cmd.Context(), args[0])
				} else {
					t, err = c.Task(cmd.Context(), op, args[0])
				}
				if err != nil {
					return err
				}
				return printTask(cmd.OutOrStdout(), t)
			}}
	}
	cmd.AddCommand(submit, one("status"), one("result"), one("cancel"))
	return cmd
}

// submitTask signs and submits spec; with wait it waits for the end and
// prints the task, else it prints the task's ID.
func submitTask(cmd *cobra.Command, af *analystFlags, spec wire.TaskSpec, wait bool) error {
	c, err := af.dial(cmd.Context())
	if err != nil {
		return err
	}
	defer c.Close()
	t, err := c.Submit(cmd.Context(), spec)
	if err != nil {
		return err
	}
	if !wait {
		fmt.Fprintln(cmd.OutOrStdout(), t.ID)
		return nil
	}
	if t, err = c.Wait(cmd.Context(), t.ID); err != nil {
		return err
	}
	if t.State == "done" {
		if t, err = c.Task(cmd.Context(), "result", t.ID); err != nil {
			return err
		}
	}
	return printTask(cmd.OutOrStdout(), t)
}

// printTask prints a task: state, every site's part, the model.
func printTask(w io.Writer, t *coordinator.Task) error {
	fmt.Fprintf(w, "task %s (%s): %s\n", t.ID, t.Analyst, t.State)
	if t.Error != "" {
		fmt.Fprintf(w, "  %s\n", t.Error)
	}
	names := make([]string, 0, len(t.Sites))
	for n := range t.Sites {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := t.Sites[n]
		line := fmt.Sprintf("  site %s (%s): %s", n, s.Dataset, s.State)
		if s.Rule != "" {
			line += fmt.Sprintf(" by rule %s: %s", s.Rule, s.Reason)
		} else if s.Reason != "" {
			line += ": " + s.Reason
		}
		fmt.Fprintln(w, line)
	}
	if r := t.Result; r != nil && t.Spec.Kind == wire.KindDPPP {
		printLabels(w, r)
	} else if r != nil {
		fmt.Fprintf(w, "  model (%d sites, N = %d, attempt %d): %s\n", len(r.Sites), r.N, r.Attempts, r.Guarantee)
		for i, c := range r.Coef {
			name := fmt.Sprint(i)
			if i < len(r.Features) {
				name = r.Features[i]
			}
			fmt.Fprintf(w, "    %-20s %.6g\n", name, c)
		}
	}
	return nil
}

func newBudgetCmd() *cobra.Command {
	var af analystFlags
	cmd := &cobra.Command{
		Use:   "budget --coordinator ADDR --certs DIR",
		Short: "Spent and remaining budget per analyst and dataset at every node (as the nodes report them)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := af.dial(cmd.Context())
			if err != nil {
				return err
			}
			defer c.Close()
			bs, err := c.Budgets(cmd.Context())
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "%-12s %-22s %10s %10s %10s %10s %8s\n", "node", "ledger", "spent ε", "budget ε", "left ε", "spent δ", "charges")
			for _, b := range bs {
				for _, l := range b.Report.Ledgers {
					fmt.Fprintf(w, "%-12s %-22s %10.6g %10.6g %10.6g %10.3g %8d\n", b.Node, l.Kind+" "+l.Name, l.SpentEpsilon, l.BudgetEpsilon,
						l.RemainingEpsilon(), l.SpentDelta, l.Charges)
				}
			}
			return nil
		},
	}
	af.register(cmd)
	return cmd
}

func newAuditCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "audit verify", Short: "Check a consortium audit log's hash chain"}
	var db, logPath string
	verify := &cobra.Command{
		Use:   "verify --db COORDINATOR.db | --log NODE-AUDIT.jsonl",
		Short: "Verify the hash chain of the coordinator's (--db, stopped) or a node's (--log) audit log",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var entries []chain.Entry
			var err error
			var what string
			switch {
			case (db == "") == (logPath == ""):
				return errors.New("give one of --db and --log")
			case db != "":
				entries, err = store.ReadAuditLog(db)
				what = db
			default:
				entries, err = chain.ReadFile(logPath)
				what = logPath
			}
			if err != nil {
				return err
			}
			if err := chain.Verify(entries); err != nil {
				return fmt.Errorf("%s: %w", filepath.Base(what), err)
			}
			head := ""
			if len(entries) > 0 {
				head = entries[len(entries)-1].Hash
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s: %d entries, chain intact, head %s\n", what, len(entries), head)
			return nil
		},
	}
	verify.Flags().StringVar(&db, "db", "", "the coordinator's state file")
	verify.Flags().StringVar(&logPath, "log", "", "a node's audit log")
	cmd.AddCommand(verify)
	return cmd
}
