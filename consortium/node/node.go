// Package node is a consortium site's long-running process: it connects
// out to the coordinator (package consortium/coordinator) over the
// consortium's transport session, reconnects with backoff for as long as it
// runs, registers its datasets (name, schema fingerprint, public N), and
// takes part in a task's capeFM protocol only if the site's policy
// (package consortium/policy) allows it and its ledgers can pay.
//
// Authority. The node is the authority on its own data: the analyst's name
// its policy checks is the one in the certificate that signed the task
// (wire.Signed, verified against the CA), not a name the coordinator
// claims; the budgets are the node's own ledgers (package ledger), one per
// analyst and one per dataset under LedgerDir, created with the policy's
// budgets on first use (an existing ledger keeps its budget). A release is
// charged to both before it is sent (capefm.Site charges its Ledger before
// releasing; Charge below checks both ledgers exactly and then writes both,
// under one lock, so either both are charged or neither). Every offer,
// decision, charge and outcome is appended to the node's hash-chained audit
// log (package consortium/chain).
//
// The protocol itself is capefm's Site state machine driven by
// capenet.Join, over a wire.TaskConn per task multiplexed on the node's one
// connection: the node adds the policy and the ledgers, nothing else.
package node

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/capenet"
	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/consortium/chain"
	"github.com/dplearn/dplearn/consortium/policy"
	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/dataset"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/ledger"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/transport"
)

// Dataset is one of the site's datasets: a name, the data file and the
// schema the site declares it with (its fingerprint and N are registered).
type Dataset struct {
	Name   string
	Path   string
	Schema string // schema file
}

// Config configures a node.
type Config struct {
	// Identity is the node's certificate; its name is the node's.
	Identity *certs.Party
	// Coordinator is the coordinator's address, CoordinatorName its
	// certificate name (default "coordinator").
	Coordinator, CoordinatorName string
	Datasets                     []Dataset
	// Models are the DPPP deployments this site is a teacher of.
	Models []Model
	Policy *policy.Policy
	// LedgerDir holds the node's ledgers; AuditPath its audit chain.
	LedgerDir, AuditPath string
	// PeerTimeout: a connection down this long is given up and redialled
	// (transport.ClientConfig.PeerTimeout; default 20 s).
	PeerTimeout time.Duration
	// MaxBackoff caps the wait between reconnection attempts (default 10 s;
	// the wait starts at 200 ms and doubles).
	MaxBackoff time.Duration
	// IdleTimeout bounds a task's silence (capenet.JoinOptions; default
	// 10 min).
	IdleTimeout time.Duration
	// Source draws the noise (default noise.NewSecure()).
	Source func() noise.Source
	// Logger receives the node's records (nil: discard), also handed to
	// the transport and to DPPP's teacher; ProgressLine renders its
	// progress records as lines. See log.go for what they hold.
	Logger *slog.Logger
	// BeforeSend is a test hook passed to capenet.JoinOptions.BeforeSend
	// with the task's ID (the CLI's test binary uses it to stall a node in
	// the middle of a task); nil in production.
	BeforeSend func(ctx context.Context, task string, m capefm.Message) error
}

// Node is a running site.
type Node struct {
	cfg      Config
	log      *slog.Logger
	name     string
	audit    *chain.File
	verifier *certs.StatementSigner
	datasets map[string]registered
	models   map[string]*model

	ledgerMu sync.Mutex // charges and checks of this node's ledgers

	mu    sync.Mutex
	tasks map[string]*wire.TaskConn
	// accepted holds the SHA-256 of every signed specification this node
	// has accepted (from its audit log, across restarts): a coordinator
	// offering one again is refused (rule replay), so it cannot spend an
	// analyst's budget on a task the analyst asked for once.
	accepted map[string]bool
}

type registered struct {
	Dataset
	n  int64
	fp [32]byte
}

// New checks the configuration, reads every dataset once (its N under its
// declared schema) and opens the audit chain.
func New(ctx context.Context, cfg Config) (*Node, error) {
	if cfg.Identity == nil {
		return nil, errors.New("node: no certificate (Identity)")
	}
	if cfg.Policy == nil {
		return nil, errors.New("node: no policy")
	}
	if cfg.LedgerDir == "" || cfg.AuditPath == "" {
		return nil, errors.New("node: need a ledger directory and an audit log path")
	}
	if cfg.CoordinatorName == "" {
		cfg.CoordinatorName = "coordinator"
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = 10 * time.Second
	}
	if cfg.Source == nil {
		cfg.Source = func() noise.Source { return noise.NewSecure() }
	}
	if err := os.MkdirAll(cfg.LedgerDir, 0o700); err != nil {
		return nil, fmt.Errorf("node: ledger directory: %w", err)
	}
	v, err := certs.NewStatementSigner(cfg.Identity)
	if err != nil {
		return nil, err
	}
	n := &Node{cfg: cfg, name: cfg.Identity.Name, log: logx.OrDiscard(cfg.Logger).With("node", cfg.Identity.Name), verifier: v, datasets: map[string]registered{}, tasks: map[string]*wire.TaskConn{}}
	for _, d := range cfg.Datasets {
		if _, dup := n.datasets[d.Name]; dup {
			return nil, fmt.Errorf("node: dataset %q listed twice", d.Name)
		}
		s, err := schema.Load(d.Schema)
		if err != nil {
			return nil, fmt.Errorf("node: dataset %q: %w", d.Name, err)
		}
		fp, err := schema.Fingerprint(s)
		if err != nil {
			return nil, err
		}
		m, _, err := dataset.Moments(ctx, d.Path, s, dataset.Options{})
		if err != nil {
			return nil, fmt.Errorf("node: dataset %q: %w", d.Name, err)
		}
		n.datasets[d.Name] = registered{Dataset: d, n: m.N(), fp: fp}
	}
	n.models = map[string]*model{}
	for _, md := range cfg.Models {
		if _, dup := n.datasets[md.Name]; dup || n.models[md.Name] != nil {
			return nil, fmt.Errorf("node: dataset or model %q listed twice", md.Name)
		}
		lm, err := loadModel(n.name, md)
		if err != nil {
			return nil, err
		}
		n.models[md.Name] = lm
	}
	if n.audit, err = chain.OpenFile(cfg.AuditPath); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	n.accepted = map[string]bool{}
	entries, err := chain.ReadFile(cfg.AuditPath)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	for _, e := range entries {
		if e.Action == "accept" {
			if _, h, ok := strings.Cut(e.Detail, "spec sha256 "); ok {
				n.accepted[h] = true
			}
		}
	}
	return n, nil
}

// Name returns the node's name (its certificate's).
func (n *Node) Name() string { return n.name }

// Close closes the audit log.
func (n *Node) Close() error { return n.audit.Close() }

func (n *Node) record(actor, action, task, detail string) {
	if _, err := n.audit.Append(chain.Entry{Actor: actor, Action: action, Task: task, Detail: detail}); err != nil {
		n.log.Error(msgAuditFailed, logx.Err(err))
	}
}

// Run connects to the coordinator and serves it until ctx ends,
// reconnecting with backoff (200 ms doubling to MaxBackoff, reset after a
// connection that lasted a minute) whenever the connection is lost or the
// coordinator is gone.
func (n *Node) Run(ctx context.Context) error {
	backoff := 200 * time.Millisecond
	for ctx.Err() == nil {
		start := time.Now()
		err := n.session(ctx)
		if ctx.Err() != nil {
			break
		}
		if time.Since(start) > time.Minute {
			backoff = 200 * time.Millisecond
		}
		n.log.Warn(msgConnectionLost, logx.Err(err), "backoff", backoff)
		select {
		case <-ctx.Done():
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, n.cfg.MaxBackoff)
	}
	return ctx.Err()
}

// session is one connection's lifetime.
func (n *Node) session(ctx context.Context) error {
	conn, err := transport.Dial(ctx, transport.ClientConfig{Address: n.cfg.Coordinator, Server: n.cfg.CoordinatorName,
		Identity: n.cfg.Identity, Session: wire.Session(), PeerTimeout: n.cfg.PeerTimeout, MaxPayload: wire.MaxPayload,
		Logger: n.log})
	if err != nil {
		return err
	}
	defer conn.Close()
	sctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var reg wire.Register
	for _, name := range sortedNames(n.datasets) {
		d := n.datasets[name]
		reg.Datasets = append(reg.Datasets, wire.Dataset{Name: name, Fingerprint: fmt.Sprintf("%x", d.fp), N: d.n})
	}
	for _, name := range sortedNames(n.models) {
		m := n.models[name]
		reg.Datasets = append(reg.Datasets, wire.Dataset{Name: name, Kind: "model", Fingerprint: fmt.Sprintf("%x", m.fp),
			Classes: len(m.file.ClassNames), Features: m.file.Features, ClassNames: m.file.ClassNames})
	}
	if err := n.send(sctx, conn, wire.TypeRegister, reg); err != nil {
		return err
	}
	n.log.Info(msgConnected, "coordinator", n.cfg.CoordinatorName, "address", n.cfg.Coordinator, "datasets", len(reg.Datasets))
	n.reportBudget(sctx, conn)
	var wg sync.WaitGroup
	defer func() {
		n.mu.Lock()
		for _, tc := range n.tasks {
			tc.Fail(errors.New("node: the connection to the coordinator was lost"))
		}
		n.mu.Unlock()
		cancel()
		wg.Wait()
	}()
	for {
		env, err := conn.Recv(sctx)
		if err != nil {
			var gap *transport.GapError
			if errors.As(err, &gap) {
				continue
			}
			return err
		}
		switch env.Type {
		case wire.TypeOffer:
			var o wire.Offer
			if err := wire.Decode(env, &o); err != nil {
				n.log.Warn(msgIgnored, logx.Err(err))
				continue
			}
			// Deciding reads the dataset: off the receive loop, so that the
			// rounds of the tasks already running are not held up.
			wg.Add(1)
			go func() {
				defer wg.Done()
				run, tc, ans := n.decide(sctx, conn, o)
				if err := n.send(sctx, conn, wire.TypeAnswer, ans); err != nil {
					n.log.Warn(msgAnswerFailed, "task", o.Task, logx.Err(err))
					if tc != nil {
						tc.Fail(err)
						n.mu.Lock()
						delete(n.tasks, o.Task)
						n.mu.Unlock()
					}
					return
				}
				if run != nil {
					run()
				}
			}()
		case wire.TypeCape:
			var c wire.Cape
			if err := wire.Decode(env, &c); err != nil {
				continue
			}
			n.mu.Lock()
			tc := n.tasks[c.Task]
			n.mu.Unlock()
			if tc != nil {
				tc.Deliver(c)
			}
		case wire.TypeCancel:
			var c wire.Cancel
			if wire.Decode(env, &c) == nil {
				n.mu.Lock()
				if tc := n.tasks[c.Task]; tc != nil {
					tc.Fail(fmt.Errorf("node: the coordinator cancelled task %s: %s", c.Task, c.Reason))
				}
				n.mu.Unlock()
			}
		}
	}
}

func (n *Node) send(ctx context.Context, conn transport.Conn, typ string, v any) error {
	env, err := wire.Encode(typ, v)
	if err != nil {
		return err
	}
	return conn.Send(ctx, env)
}

// refuse builds a refusal answer and records it.
func (n *Node) refuse(o wire.Offer, analyst, rule, reason string) wire.Answer {
	n.record(analyst, "refuse", o.Task, fmt.Sprintf("rule %s: %s", rule, reason))
	n.log.Info(msgRefused, "task", o.Task, "analyst", analyst, "rule", rule, "reason", reason)
	return wire.Answer{Task: o.Task, Rule: rule, Reason: reason}
}

// decide verifies an offer, applies the policy and the ledgers, reads the
// data and builds the site's state machine (a DPPP task: the teacher);
// it returns the task's run, or nil with a refusal.
func (n *Node) decide(ctx context.Context, conn transport.Conn, o wire.Offer) (func(), *wire.TaskConn, wire.Answer) {
	// The analyst is whoever signed the specification.
	if err := n.verifier.Verify(o.Analyst, o.Signed.Cert, o.Signed.Sig, wire.SpecDomain, o.Signed.Spec); err != nil {
		return nil, nil, n.refuse(o, o.Analyst, "signature", "the task is not signed by analyst "+o.Analyst+": "+err.Error())
	}
	digest := fmt.Sprintf("%x", sha256.Sum256(o.Signed.Spec))
	n.mu.Lock()
	replay := n.accepted[digest]
	n.mu.Unlock()
	if replay {
		return nil, nil, n.refuse(o, o.Analyst, "replay", fmt.Sprintf("this site already accepted this signed task (spec sha256 %s…); the analyst must submit it again", digest[:12]))
	}
	var spec wire.TaskSpec
	if err := wire.Decode(transport.Envelope{Type: "spec", Payload: o.Signed.Spec}, &spec); err != nil {
		return nil, nil, n.refuse(o, o.Analyst, "spec", err.Error())
	}
	if spec.Kind == wire.KindDPPP {
		return n.decideDPPP(ctx, conn, o, spec, digest)
	}
	if spec.Kind != "" {
		return nil, nil, n.refuse(o, o.Analyst, "spec", fmt.Sprintf("unknown task kind %q", spec.Kind))
	}
	if spec.Sites[n.name] != o.Dataset {
		return nil, nil, n.refuse(o, o.Analyst, "spec", fmt.Sprintf("the signed task names dataset %q at %s, the offer %q", spec.Sites[n.name], n.name, o.Dataset))
	}
	n.record(o.Analyst, "offer", o.Task, fmt.Sprintf("%s %s on %s, ε = %v, δ = %v per site", spec.Mechanism, spec.Model, o.Dataset, spec.Epsilon, spec.Delta))
	d, ok := n.datasets[o.Dataset]
	if !ok {
		return nil, nil, n.refuse(o, o.Analyst, "dataset", fmt.Sprintf("this site has no dataset %q", o.Dataset))
	}
	s, err := schema.Parse(spec.Schema)
	if err != nil {
		return nil, nil, n.refuse(o, o.Analyst, "schema", err.Error())
	}
	mech := capefm.Mechanism(spec.Mechanism)
	delta := spec.Delta
	if mech == capefm.FMLocal {
		delta = 0
	}
	cols := append([]string{s.Target.Name}, featureColumns(s)...)
	if r := n.cfg.Policy.Decide(policy.Request{Analyst: o.Analyst, Dataset: o.Dataset, Mechanism: spec.Mechanism,
		Epsilon: spec.Epsilon, Delta: delta, N: d.n, Columns: cols}); r != nil {
		return nil, nil, n.refuse(o, o.Analyst, r.Rule, r.Reason)
	}
	if mech != capefm.CapeFM && mech != capefm.GaussianFMLocal {
		return nil, nil, n.refuse(o, o.Analyst, "mechanism", fmt.Sprintf("a node runs capefm and gaussian-fm-local (from statistics); %q needs rows", mech))
	}
	led, err := n.ledgers(ctx, o.Analyst, o.Dataset, o.Task)
	if err != nil {
		return nil, nil, n.refuse(o, o.Analyst, "ledger", err.Error())
	}
	if rule, err := led.check(spec.Epsilon, delta); err != nil {
		return nil, nil, n.refuse(o, o.Analyst, rule, err.Error())
	}
	kind, err := regress.ParseKind(spec.Model)
	if err != nil {
		return nil, nil, n.refuse(o, o.Analyst, "spec", err.Error())
	}
	fp, err := schema.Fingerprint(s)
	if err != nil {
		return nil, nil, n.refuse(o, o.Analyst, "schema", err.Error())
	}
	m, _, err := dataset.Moments(ctx, d.Path, s, dataset.Options{})
	if err != nil {
		return nil, nil, n.refuse(o, o.Analyst, "data", err.Error())
	}
	if m.N() < n.cfg.Policy.Datasets[o.Dataset].MinN {
		return nil, nil, n.refuse(o, o.Analyst, "min-n", fmt.Sprintf("under the task's schema dataset %q has %d rows, the policy requires at least %d", o.Dataset, m.N(), n.cfg.Policy.Datasets[o.Dataset].MinN))
	}
	site, err := capefm.NewSite(capefm.SiteConfig{Name: n.name, Mechanism: mech, Kind: kind, Schema: fp,
		Epsilon: spec.Epsilon, Delta: delta, Split: spec.Split, NoiseRatio: spec.NoiseRatio, MinColluders: max(spec.Colluders, 0),
		MinSites: spec.MinSites, Source: n.cfg.Source(), Ledger: led, Signer: n.verifier}, regress.Data{Stats: m})
	if err != nil {
		return nil, nil, n.refuse(o, o.Analyst, "spec", err.Error())
	}
	tc := n.admit(o.Task, digest, conn)
	n.record(o.Analyst, "accept", o.Task, fmt.Sprintf("dataset %s, N = %d, spec sha256 %s", o.Dataset, m.N(), digest))
	n.log.Info(msgAccepted, "task", o.Task, "analyst", o.Analyst, "mechanism", mech, "dataset", o.Dataset, "epsilon", spec.Epsilon, "delta", delta)
	return func() { n.run(ctx, conn, o, site, tc) }, tc, wire.Answer{Task: o.Task, Accept: true}
}

// admit opens the accepted task's connection and records the task as
// running and its spec digest as accepted (an offer with the same digest
// is then refused as a replay).
func (n *Node) admit(task, digest string, conn transport.Conn) *wire.TaskConn {
	tc := wire.NewTaskConn(task, conn)
	n.mu.Lock()
	n.tasks[task] = tc
	n.accepted[digest] = true
	n.mu.Unlock()
	return tc
}

// run drives the site's capeFM state machine for one task.
func (n *Node) run(ctx context.Context, conn transport.Conn, o wire.Offer, site *capefm.Site, tc *wire.TaskConn) {
	defer func() {
		n.mu.Lock()
		delete(n.tasks, o.Task)
		n.mu.Unlock()
		tc.Close()
		n.reportBudget(ctx, conn)
	}()
	jopt := capenet.JoinOptions{IdleTimeout: n.cfg.IdleTimeout}
	if h := n.cfg.BeforeSend; h != nil {
		jopt.BeforeSend = func(ctx context.Context, m capefm.Message, _ []byte, _ *capefm.Params) error {
			return h(ctx, o.Task, m)
		}
	}
	jopt.Events = func(ev capenet.Event) {
		if ev.Kind == "released" {
			n.record(n.name, "release", o.Task, ev.Message)
		}
		n.log.Info(msgTaskEvent, "task", o.Task, "event", ev.Message)
	}
	res, err := capenet.Join(ctx, tc, site, jopt)
	if err != nil {
		n.record(n.name, "outcome", o.Task, fmt.Sprintf("ended without a model for this site: %v (releases %d)", err, site.Releases()))
		return
	}
	n.record(n.name, "outcome", o.Task, fmt.Sprintf("%s (releases %d)", res.Outcome.Text, res.Releases))
}

// Ledgers returns the node's ledger states (analysts and datasets).
func (n *Node) Ledgers(ctx context.Context) ([]wire.LedgerState, error) {
	n.ledgerMu.Lock()
	defer n.ledgerMu.Unlock()
	ents, err := os.ReadDir(n.cfg.LedgerDir)
	if err != nil {
		return nil, err
	}
	var out []wire.LedgerState
	for _, e := range ents {
		kind, name, ok := parseLedgerFile(e.Name())
		if !ok {
			continue
		}
		l, err := ledger.Open(filepath.Join(n.cfg.LedgerDir, e.Name()))
		if err != nil {
			return nil, err
		}
		st, err := l.State(ctx)
		if err != nil {
			return nil, err
		}
		sp := st.Spent()
		out = append(out, wire.LedgerState{Kind: kind, Name: name, BudgetEpsilon: st.Budget.Epsilon, BudgetDelta: st.Budget.Delta,
			SpentEpsilon: sp.Epsilon, SpentDelta: sp.Delta, Charges: len(st.Charges)})
	}
	return out, nil
}

func (n *Node) reportBudget(ctx context.Context, conn transport.Conn) {
	ls, err := n.Ledgers(ctx)
	if err != nil {
		n.log.Warn(msgLedgerReport, logx.Err(err))
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	n.send(sctx, conn, wire.TypeBudget, wire.BudgetReport{Ledgers: ls, Time: time.Now().UTC()})
}

// LedgerPath returns the path of the ledger of an analyst ("analyst") or a
// dataset ("dataset") under dir.
func LedgerPath(dir, kind, name string) string {
	return filepath.Join(dir, kind+"-"+name+".ledger.json")
}

func parseLedgerFile(f string) (kind, name string, ok bool) {
	for _, k := range []string{"analyst", "dataset"} {
		pre, suf := k+"-", ".ledger.json"
		if len(f) > len(pre)+len(suf) && f[:len(pre)] == pre && f[len(f)-len(suf):] == suf {
			return k, f[len(pre) : len(f)-len(suf)], true
		}
	}
	return "", "", false
}

// taskLedger is capefm.Ledger over the analyst's and the dataset's ledgers.
type taskLedger struct {
	n                  *Node
	ctx                context.Context
	task               string
	analyst, dataset   *ledger.Ledger
	analystN, datasetN string
	// limitE, limitD (DPPP tasks): the policy's maximum (ε, δ) per task,
	// which Raise checks the run's raised total against. A DPPP batch
	// voted again (a contributor lost before signing) is charged again
	// (dppp.RunLedger counts it), so the offer's RunCharge(k) is not a
	// bound by itself: Raise refuses the total that would pass the limit.
	limitE, limitD float64
}

func (n *Node) ledgers(ctx context.Context, analyst, ds, task string) (*taskLedger, error) {
	n.ledgerMu.Lock()
	defer n.ledgerMu.Unlock()
	open := func(kind, name string, b ledger.Budget) (*ledger.Ledger, error) {
		path := LedgerPath(n.cfg.LedgerDir, kind, name)
		if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
			return ledger.Create(ctx, path, n.name+" "+kind+" "+name, b)
		}
		return ledger.Open(path)
	}
	a, err := open("analyst", analyst, n.cfg.Policy.Analysts[analyst].Budget)
	if err != nil {
		return nil, err
	}
	d, err := open("dataset", ds, n.cfg.Policy.Datasets[ds].Budget)
	if err != nil {
		return nil, err
	}
	return &taskLedger{n: n, ctx: ctx, task: task, analyst: a, dataset: d, analystN: analyst, datasetN: ds}, nil
}

// payment says how (ε, δ) would enter a ledger: as one more charge
// (ledger.Ledger.Charge; the zero value), or, with raise, as the new total
// of the charges recorded under label, which it replaces
// (ledger.Ledger.Raise: a DPPP run's label holds the run's total so far).
type payment struct {
	raise bool
	label string
	// fresh, with raise, refuses a ledger that already holds a charge
	// under label (a new run's label is its own).
	fresh bool
}

// canPay reports whether l can take (ε, δ) paid as p says, by the
// ledger's own exact rule (ledger.State.CheckCharge, CheckRaise: what
// Charge and Raise will decide), without recording anything.
func canPay(ctx context.Context, l *ledger.Ledger, eps, delta float64, p payment) error {
	st, err := l.State(ctx)
	if err != nil {
		return err
	}
	c := ledger.Charge{Epsilon: eps, Delta: delta}
	if !p.raise {
		return st.CheckCharge(c)
	}
	if p.fresh && slices.ContainsFunc(st.Charges, func(c ledger.Charge) bool { return c.Label == p.label }) {
		return fmt.Errorf("ledger %q already holds a charge labelled %q", st.Name, p.label)
	}
	return st.CheckRaise(p.label, c)
}

// check returns the budget rule that refuses (ε, δ), if any.
func (t *taskLedger) check(eps, delta float64) (string, error) {
	return t.checkPay(eps, delta, payment{})
}

// checkRaise returns the budget rule that refuses (ε, δ) as the total
// under label in the analyst's or the dataset's ledger, if any.
func (t *taskLedger) checkRaise(label string, eps, delta float64, fresh bool) (string, error) {
	return t.checkPay(eps, delta, payment{raise: true, label: label, fresh: fresh})
}

// checkPay returns the budget rule that refuses (ε, δ) paid as p in the
// analyst's or the dataset's ledger, if any.
func (t *taskLedger) checkPay(eps, delta float64, p payment) (string, error) {
	if err := canPay(t.ctx, t.analyst, eps, delta, p); err != nil {
		return policy.RuleAnalystBudget, err
	}
	if err := canPay(t.ctx, t.dataset, eps, delta, p); err != nil {
		return policy.RuleDatasetBudget, err
	}
	return "", nil
}

// CanCharge is capefm.LedgerChecker: asked when an offer arrives.
func (t *taskLedger) CanCharge(eps, delta float64) error {
	t.n.ledgerMu.Lock()
	defer t.n.ledgerMu.Unlock()
	_, err := t.check(eps, delta)
	return err
}

// Charge is capefm.Ledger: called by the site before its release. Both
// ledgers are checked, then both charged, under the node's ledger lock, so
// a release is paid by both or refused by both.
func (t *taskLedger) Charge(label string, eps, delta float64) error {
	t.n.ledgerMu.Lock()
	defer t.n.ledgerMu.Unlock()
	return t.pay(eps, delta, payment{label: fmt.Sprintf("task %s: %s", t.task, label)})
}

// Raise is dppp.RunStore (a DPPP task's dppp.RunLedger calls it before
// each batch's vote leaves): the task's one entry in the analyst's and
// the dataset's ledgers becomes the run's total (ε, δ). The task's limit
// and both ledgers are checked, then both raised, under the node's ledger
// lock, so a total is held by both or refused by both.
func (t *taskLedger) Raise(label string, eps, delta float64) error {
	t.n.ledgerMu.Lock()
	defer t.n.ledgerMu.Unlock()
	if !(eps <= t.limitE) || !(delta <= t.limitD) {
		err := fmt.Errorf("%w: task %s's total (ε = %v, δ = %v) would exceed analyst %s's maximum per task (ε = %v, δ = %v)", ledger.ErrOverBudget, t.task, eps, delta, t.analystN, t.limitE, t.limitD)
		t.n.record(t.analystN, "refuse-charge", t.task, "rule max-epsilon: "+err.Error())
		return err
	}
	return t.pay(eps, delta, payment{raise: true, label: label})
}

// pay is Charge's and Raise's common step, with the node's ledger lock
// held: both ledgers are checked for (ε, δ) paid as p (under p.label),
// then the dataset's is paid and then the analyst's, and each outcome is
// recorded in the analyst's log. The dataset pays first so that a failure
// between the two (only if a ledger file was changed behind the node's
// back) leaves the dataset overcharged for a release that is not sent:
// safe, never the reverse.
func (t *taskLedger) pay(eps, delta float64, p payment) error {
	if rule, err := t.checkPay(eps, delta, p); err != nil {
		t.n.record(t.analystN, "refuse-charge", t.task, fmt.Sprintf("rule %s: %v", rule, err))
		return err
	}
	c := ledger.Charge{Epsilon: eps, Delta: delta}
	apply, verb := (*ledger.Ledger).Charge, "charged"
	if p.raise {
		apply, verb = (*ledger.Ledger).Raise, "raised"
	}
	if _, err := apply(t.dataset, t.ctx, p.label, c); err != nil {
		return err
	}
	if _, err := apply(t.analyst, t.ctx, p.label, c); err != nil {
		t.n.record(t.analystN, "charge-failed", t.task, fmt.Sprintf("dataset %s %s, analyst ledger refused: %v", t.datasetN, verb, err))
		return err
	}
	what := fmt.Sprintf("ε = %v, δ = %v to analyst %s and dataset %s (%s)", eps, delta, t.analystN, t.datasetN, p.label)
	if p.raise {
		what = fmt.Sprintf("run total raised to ε = %v, δ = %v at analyst %s and dataset %s (%s)", eps, delta, t.analystN, t.datasetN, p.label)
	}
	t.n.record(t.analystN, "charge", t.task, what)
	return nil
}

func featureColumns(s *schema.Schema) []string {
	out := make([]string, len(s.Features))
	for i, f := range s.Features {
		out[i] = f.Name
	}
	return out
}

func sortedNames[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
