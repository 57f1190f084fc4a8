// Package coordinator is the consortium's long-running server: it keeps
// nodes, datasets, analysts' tasks, results, the nodes' budget reports and
// a hash-chained audit log in one bbolt file (package consortium/store),
// takes analysts' requests, and runs each task's capeFM protocol between
// the sites that accept it, relaying its messages over the consortium's
// transport session (package consortium/wire).
//
// One driver. Run owns every piece of state and is the only goroutine that
// changes it: it reads the hub's inbox and events, a tick, and the end of
// each task's protocol, in one select loop. Each running task's protocol is
// capenet.Serve (capefm's aggregator state machine and its driver), over a
// wire.TaskHub fed by the loop; it reports back through channels.
//
// Task lifecycle:
//
//	queued    waits until every named site is online, or until MinSites are
//	          and JoinWait has passed since submission; fails at Deadline
//	offered   the online sites get the signed offer and answer accept, or
//	          refuse naming the policy rule (AnswerTimeout: absent)
//	running   capenet.Serve with the accepting sites (≥ MinSites)
//	done | failed | cancelled
//
// Every site of a task ends as accepted (then included, or lost),
// refused (with the rule and the reason), or absent.
//
// Restart. Tasks, results, nodes, budget reports and the audit log are in
// the database. A task that was offered or running when the coordinator
// stopped cannot be resumed (capeFM's state machines are in memory and a
// site never releases twice in one attempt): it is marked failed, "the
// coordinator restarted during the task", as capeFM aborts an attempt whose
// aggregator is gone; the nodes' ledgers already hold whatever they
// charged. Queued tasks keep waiting.
package coordinator

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/capenet"
	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/consortium/chain"
	"github.com/dplearn/dplearn/consortium/store"
	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/transport"
)

// Config configures a coordinator.
type Config struct {
	Identity *certs.Party
	// Address to listen on, or Listener.
	Address  string
	Listener net.Listener
	// Nodes and Analysts are the certificate names allowed to connect.
	Nodes, Analysts []string
	// Store is the open database.
	Store *store.Store
	// RoundTimeout bounds each capeFM round (default 30 s).
	RoundTimeout time.Duration
	// JoinWait: a task whose MinSites are online starts after waiting this
	// long (since submission) for the others (default 10 s).
	JoinWait time.Duration
	// AnswerTimeout bounds the wait for the sites' answers to an offer
	// (default 30 s).
	AnswerTimeout time.Duration
	// MaxRunning bounds the tasks offered or running at once (default 16);
	// the others stay queued, in submission order.
	MaxRunning int
	// ReconnectGrace: capenet.ServeOptions (default 2 s).
	ReconnectGrace time.Duration
	// PeerKeepalive sets the hub's keepalive (default transport's).
	KeepaliveTime time.Duration
	// Logf receives the coordinator's log lines.
	Logf func(format string, args ...any)
	// OnListen, if set, is called with the listening address.
	OnListen func(addr string)
}

// SiteStatus is one site's part in a task.
type SiteStatus struct {
	Dataset string `json:"dataset"`
	// State: waiting, offered, accepted, refused, absent, included, lost.
	State  string `json:"state"`
	Rule   string `json:"rule,omitempty"`
	Reason string `json:"reason,omitempty"`
	N      int64  `json:"n,omitempty"`
}

// Result is a task's model.
type Result struct {
	Features  []string  `json:"features"`
	Coef      []float64 `json:"coef"`
	Guarantee string    `json:"guarantee"`
	Attempts  int       `json:"attempts"`
	N         int64     `json:"n"`
	Sites     []string  `json:"sites"`
}

// Task is a task as stored and reported.
type Task struct {
	ID        string                 `json:"id"`
	Analyst   string                 `json:"analyst"`
	Spec      wire.TaskSpec          `json:"spec"`
	Signed    wire.Signed            `json:"signed"`
	State     string                 `json:"state"`
	Error     string                 `json:"error,omitempty"`
	Sites     map[string]*SiteStatus `json:"sites"`
	Submitted time.Time              `json:"submitted"`
	Started   time.Time              `json:"started,omitzero"`
	Ended     time.Time              `json:"ended,omitzero"`
	Result    *Result                `json:"result,omitempty"`
	Log       []string               `json:"log,omitempty"`
}

// Terminal reports whether the task is over.
func (t *Task) Terminal() bool {
	return t.State == "done" || t.State == "failed" || t.State == "cancelled"
}

// NodeInfo is a node as stored and reported.
type NodeInfo struct {
	Name     string         `json:"name"`
	Datasets []wire.Dataset `json:"datasets"`
	Online   bool           `json:"online"`
	LastSeen time.Time      `json:"last_seen,omitzero"`
}

// Budget is a node's last budget report.
type Budget struct {
	Node   string            `json:"node"`
	Report wire.BudgetReport `json:"report"`
}

// Snapshot is the read-only view the status page shows.
type Snapshot struct {
	Time    time.Time  `json:"time"`
	Nodes   []NodeInfo `json:"nodes"`
	Tasks   []Task     `json:"tasks"`
	Budgets []Budget   `json:"budgets"`
}

// Coordinator is a running coordinator.
type Coordinator struct {
	cfg      Config
	st       *store.Store
	verifier *certs.StatementSigner
	hub      transport.Hub
	addr     string

	tasks   map[string]*Task
	order   []string // task IDs in submission order
	nodes   map[string]*NodeInfo
	budgets map[string]Budget
	run     map[string]*running

	ended    chan taskEnd
	events   chan taskEvent
	snapshot atomic.Pointer[Snapshot]
}

type running struct {
	hub     *wire.TaskHub
	cancel  context.CancelFunc
	offered time.Time
}

type taskEnd struct {
	id  string
	res *capefm.RunResult
	err error
}

type taskEvent struct {
	id string
	ev capenet.Event
}

// New loads the state from the store.
func New(cfg Config) (*Coordinator, error) {
	if cfg.Identity == nil || cfg.Store == nil {
		return nil, errors.New("coordinator: need a certificate and a store")
	}
	if cfg.RoundTimeout <= 0 {
		cfg.RoundTimeout = 30 * time.Second
	}
	if cfg.JoinWait <= 0 {
		cfg.JoinWait = 10 * time.Second
	}
	if cfg.AnswerTimeout <= 0 {
		cfg.AnswerTimeout = 30 * time.Second
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = 16
	}
	v, err := certs.NewStatementSigner(cfg.Identity)
	if err != nil {
		return nil, err
	}
	c := &Coordinator{cfg: cfg, st: cfg.Store, verifier: v, tasks: map[string]*Task{}, nodes: map[string]*NodeInfo{},
		budgets: map[string]Budget{}, run: map[string]*running{}, ended: make(chan taskEnd, 16), events: make(chan taskEvent, 1024)}
	raws, err := c.st.Raw("tasks")
	if err != nil {
		return nil, err
	}
	for _, r := range raws {
		var t Task
		if err := json.Unmarshal(r, &t); err != nil {
			return nil, fmt.Errorf("coordinator: stored task: %w", err)
		}
		c.tasks[t.ID] = &t
		c.order = append(c.order, t.ID)
	}
	slices.SortFunc(c.order, func(a, b string) int { return taskNum(a) - taskNum(b) })
	for _, id := range c.order {
		t := c.tasks[id]
		if t.State == "offered" || t.State == "running" {
			t.State, t.Error, t.Ended = "failed", "the coordinator restarted during the task: capeFM cannot resume an attempt (the nodes' ledgers hold what they charged); submit it again", time.Now().UTC()
			c.saveTask(t)
			c.audit("coordinator", "abort", t.ID, t.Error)
		}
	}
	if raws, err = c.st.Raw("nodes"); err != nil {
		return nil, err
	}
	for _, r := range raws {
		var n NodeInfo
		if json.Unmarshal(r, &n) == nil {
			n.Online = false
			c.nodes[n.Name] = &n
		}
	}
	if raws, err = c.st.Raw("budgets"); err != nil {
		return nil, err
	}
	for _, r := range raws {
		var b Budget
		if json.Unmarshal(r, &b) == nil {
			c.budgets[b.Node] = b
		}
	}
	for _, n := range cfg.Nodes {
		if c.nodes[n] == nil {
			c.nodes[n] = &NodeInfo{Name: n}
		}
	}
	c.publish()
	return c, nil
}

func taskNum(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "t"))
	return n
}

// Snapshot returns the latest read-only view (safe from any goroutine).
func (c *Coordinator) Snapshot() *Snapshot { return c.snapshot.Load() }

// Addr returns the listening address once Run listens.
func (c *Coordinator) Addr() string { return c.addr }

func (c *Coordinator) publish() {
	s := &Snapshot{Time: time.Now().UTC()}
	for _, n := range sortedKeys(c.nodes) {
		s.Nodes = append(s.Nodes, *c.nodes[n])
	}
	for _, id := range c.order {
		t := *c.tasks[id]
		t.Sites = maps.Clone(t.Sites)
		s.Tasks = append(s.Tasks, t)
	}
	for _, n := range sortedKeys(c.budgets) {
		s.Budgets = append(s.Budgets, c.budgets[n])
	}
	c.snapshot.Store(s)
}

func (c *Coordinator) saveTask(t *Task) {
	if err := c.st.PutJSON("tasks", t.ID, t); err != nil {
		c.cfg.Logf("STORE WRITE FAILED for task %s: %v", t.ID, err)
	}
}

func (c *Coordinator) audit(actor, action, task, detail string) {
	if _, err := c.st.Audit(chain.Entry{Actor: actor, Action: action, Task: task, Detail: detail}); err != nil {
		c.cfg.Logf("AUDIT WRITE FAILED: %v", err)
	}
}

// Run listens and serves until ctx ends.
func (c *Coordinator) Run(ctx context.Context) error {
	roster := append(slices.Clone(c.cfg.Nodes), c.cfg.Analysts...)
	srv, err := transport.Listen(ctx, transport.ServerConfig{
		HubConfig: transport.HubConfig{Session: wire.Session(), Roster: roster, MaxPayload: wire.MaxPayload, AllowRepeats: true,
			InboxSize: 1024, QueueSize: 256, Resend: 64, Logger: slog.New(slog.DiscardHandler)},
		Address: c.cfg.Address, Listener: c.cfg.Listener, Identity: c.cfg.Identity, KeepaliveTime: c.cfg.KeepaliveTime,
		// Every node and analyst holds one connection; a load test's 50
		// nodes connect at once.
		MaxHandshakes: 64,
	})
	if err != nil {
		return err
	}
	defer srv.Close()
	c.hub = srv
	c.addr = srv.Addr().String()
	c.cfg.Logf("coordinator listening on %s (mutual TLS 1.3) for %d node(s) and %d analyst(s)", c.addr, len(c.cfg.Nodes), len(c.cfg.Analysts))
	if c.cfg.OnListen != nil {
		c.cfg.OnListen(c.addr)
	}
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	defer func() {
		for _, r := range c.run {
			r.cancel()
			r.hub.Close()
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-srv.Done():
			return errors.New("coordinator: the hub closed")
		case env := <-srv.Inbox():
			c.handle(ctx, env)
		case ev := <-srv.Events():
			c.connEvent(ev)
		case e := <-c.ended:
			c.finish(ctx, e)
		case te := <-c.events:
			c.taskLog(te)
			continue
		case <-tick.C:
			c.schedule(ctx)
		}
		c.publish()
	}
}

func (c *Coordinator) isNode(name string) bool { return slices.Contains(c.cfg.Nodes, name) }

func (c *Coordinator) connEvent(ev transport.Event) {
	if n := c.nodes[ev.Party]; n != nil {
		switch ev.Kind {
		case transport.Attached:
			n.LastSeen = ev.Time.UTC()
		case transport.Detached:
			n.Online, n.LastSeen = false, ev.Time.UTC()
			c.st.PutJSON("nodes", n.Name, n)
			c.cfg.Logf("node %s disconnected", n.Name)
		}
	}
	for _, r := range c.run {
		if slices.Contains(r.hub.Roster(), ev.Party) {
			r.hub.Event(ev)
		}
	}
}

func (c *Coordinator) send(ctx context.Context, party, typ string, v any) {
	env, err := wire.Encode(typ, v)
	if err != nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := c.hub.SendTo(sctx, party, env); err != nil {
		c.cfg.Logf("send %s to %s: %v", typ, party, err)
	}
}

func (c *Coordinator) handle(ctx context.Context, env transport.Envelope) {
	from := env.Sender
	switch env.Type {
	case wire.TypeRegister:
		var r wire.Register
		if !c.isNode(from) || wire.Decode(env, &r) != nil {
			return
		}
		n := c.nodes[from]
		n.Datasets, n.Online, n.LastSeen = r.Datasets, true, time.Now().UTC()
		c.st.PutJSON("nodes", from, n)
		names := make([]string, len(r.Datasets))
		for i, d := range r.Datasets {
			names[i] = fmt.Sprintf("%s (N = %d)", d.Name, d.N)
		}
		c.audit(from, "register", "", strings.Join(names, ", "))
		c.cfg.Logf("node %s registered: %s", from, strings.Join(names, ", "))
	case wire.TypeBudget:
		var b wire.BudgetReport
		if !c.isNode(from) || wire.Decode(env, &b) != nil {
			return
		}
		c.budgets[from] = Budget{Node: from, Report: b}
		c.st.PutJSON("budgets", from, c.budgets[from])
	case wire.TypeAnswer:
		var a wire.Answer
		if !c.isNode(from) || wire.Decode(env, &a) != nil {
			return
		}
		t := c.tasks[a.Task]
		if t == nil || t.State != "offered" || t.Sites[from] == nil || t.Sites[from].State != "offered" {
			return
		}
		s := t.Sites[from]
		if a.Accept {
			s.State = "accepted"
			c.audit(from, "accept", t.ID, "")
		} else {
			s.State, s.Rule, s.Reason = "refused", a.Rule, a.Reason
			c.audit(from, "refuse", t.ID, fmt.Sprintf("rule %s: %s", a.Rule, a.Reason))
		}
		c.saveTask(t)
		c.maybeStart(ctx, t)
	case wire.TypeCape:
		var m wire.Cape
		if wire.Decode(env, &m) != nil {
			return
		}
		if r := c.run[m.Task]; r != nil {
			r.hub.Deliver(from, m)
		}
	case wire.TypeRequest:
		var r wire.Request
		if !slices.Contains(c.cfg.Analysts, from) || wire.Decode(env, &r) != nil {
			return
		}
		body, err := c.request(ctx, from, r)
		rep := wire.Reply{ID: r.ID}
		if err != nil {
			rep.Error = err.Error()
		} else if rep.Body, err = json.Marshal(body); err != nil {
			rep.Error = err.Error()
		}
		c.send(ctx, from, wire.TypeReply, rep)
	}
}

// request answers an analyst.
func (c *Coordinator) request(ctx context.Context, analyst string, r wire.Request) (any, error) {
	switch r.Op {
	case "submit":
		if r.Signed == nil {
			return nil, errors.New("submit: no signed task")
		}
		return c.submit(analyst, *r.Signed)
	case "status", "result":
		t := c.tasks[r.Task]
		if t == nil || t.Analyst != analyst {
			return nil, fmt.Errorf("%s: no task %q of analyst %s", r.Op, r.Task, analyst)
		}
		if r.Op == "result" && t.State != "done" {
			return nil, fmt.Errorf("result: task %s is %s, it has no model%s", t.ID, t.State, suffix(t.Error))
		}
		return t, nil
	case "cancel":
		t := c.tasks[r.Task]
		if t == nil || t.Analyst != analyst {
			return nil, fmt.Errorf("cancel: no task %q of analyst %s", r.Task, analyst)
		}
		if t.Terminal() {
			return nil, fmt.Errorf("cancel: task %s is already %s", t.ID, t.State)
		}
		c.end(ctx, t, "cancelled", "cancelled by "+analyst)
		return t, nil
	case "list":
		var out []Task
		for _, id := range c.order {
			if t := c.tasks[id]; t.Analyst == analyst {
				out = append(out, *t)
			}
		}
		return out, nil
	case "budget":
		var out []Budget
		for _, n := range sortedKeys(c.budgets) {
			out = append(out, c.budgets[n])
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown request %q", r.Op)
}

func suffix(s string) string {
	if s == "" {
		return ""
	}
	return ": " + s
}

// submit checks a signed task and queues it.
func (c *Coordinator) submit(analyst string, sg wire.Signed) (*Task, error) {
	if err := c.verifier.Verify(analyst, sg.Cert, sg.Sig, wire.SpecDomain, sg.Spec); err != nil {
		return nil, fmt.Errorf("submit: the task is not signed by %s: %w", analyst, err)
	}
	var spec wire.TaskSpec
	if err := json.Unmarshal(sg.Spec, &spec); err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	if err := c.checkSpec(&spec); err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	num, err := c.st.NextID("task")
	if err != nil {
		return nil, err
	}
	t := &Task{ID: fmt.Sprintf("t%d", num), Analyst: analyst, Spec: spec, Signed: sg, State: "queued", Sites: map[string]*SiteStatus{}, Submitted: time.Now().UTC()}
	for site, ds := range spec.Sites {
		t.Sites[site] = &SiteStatus{Dataset: ds, State: "waiting"}
	}
	c.tasks[t.ID] = t
	c.order = append(c.order, t.ID)
	c.saveTask(t)
	c.audit(analyst, "submit", t.ID, fmt.Sprintf("%s %s over %s, ε = %v, δ = %v per site, min %d sites, deadline %s",
		spec.Mechanism, spec.Model, describeSites(spec.Sites), spec.Epsilon, spec.Delta, spec.MinSites, spec.Deadline.Format(time.RFC3339)))
	c.cfg.Logf("task %s submitted by %s", t.ID, analyst)
	return t, nil
}

func describeSites(m map[string]string) string {
	var parts []string
	for _, s := range sortedKeys(m) {
		parts = append(parts, s+":"+m[s])
	}
	return strings.Join(parts, ", ")
}

func (c *Coordinator) checkSpec(s *wire.TaskSpec) error {
	if len(s.Sites) < 2 {
		return fmt.Errorf("a task needs at least 2 sites, got %d", len(s.Sites))
	}
	for site := range s.Sites {
		if !c.isNode(site) {
			return fmt.Errorf("site %q is not a node of this consortium (%s)", site, strings.Join(c.cfg.Nodes, ", "))
		}
	}
	if s.MinSites == 0 {
		s.MinSites = len(s.Sites)
	}
	if s.MinSites < 2 || s.MinSites > len(s.Sites) {
		return fmt.Errorf("min sites %d: want 2 to %d", s.MinSites, len(s.Sites))
	}
	if !slices.Contains(capefm.Mechanisms(), capefm.Mechanism(s.Mechanism)) {
		return fmt.Errorf("mechanism %q: want one of %v", s.Mechanism, capefm.Mechanisms())
	}
	if _, err := regress.ParseKind(s.Model); err != nil {
		return err
	}
	if !(s.Epsilon > 0) || !(s.Delta >= 0 && s.Delta < 1) {
		return fmt.Errorf("need ε > 0 and δ in [0, 1), got %v, %v", s.Epsilon, s.Delta)
	}
	if _, err := schema.Parse(s.Schema); err != nil {
		return err
	}
	if s.Deadline.IsZero() {
		return errors.New("no deadline")
	}
	return nil
}

func (c *Coordinator) online(name string) bool {
	n := c.nodes[name]
	return n != nil && n.Online
}

// schedule starts queued tasks whose sites are there, fails those past
// their deadline, and closes offers whose answers are overdue.
func (c *Coordinator) schedule(ctx context.Context) {
	now := time.Now()
	for _, id := range c.order {
		t := c.tasks[id]
		switch t.State {
		case "queued":
			var on, off []string
			for _, s := range sortedKeys(t.Sites) {
				if c.online(s) {
					on = append(on, s)
				} else {
					off = append(off, s)
				}
			}
			switch {
			case len(c.run) >= c.cfg.MaxRunning && !now.After(t.Spec.Deadline):
				// wait for a slot
			case len(on) == len(t.Sites) || (len(on) >= t.Spec.MinSites && now.Sub(t.Submitted) >= c.cfg.JoinWait):
				c.offer(ctx, t, on, off)
			case now.After(t.Spec.Deadline):
				for _, s := range off {
					t.Sites[s].State = "absent"
				}
				c.end(ctx, t, "failed", fmt.Sprintf("deadline passed with %d of the %d sites needed online (absent: %s)", len(on), t.Spec.MinSites, strings.Join(off, ", ")))
			}
		case "offered":
			if r := c.run[id]; r != nil && now.Sub(r.offered) > c.cfg.AnswerTimeout {
				for _, s := range t.Sites {
					if s.State == "offered" {
						s.State, s.Reason = "absent", "no answer to the offer"
					}
				}
				c.maybeStart(ctx, t)
			}
		}
	}
}

// offer sends the signed task to its online sites.
func (c *Coordinator) offer(ctx context.Context, t *Task, on, off []string) {
	for _, s := range off {
		t.Sites[s].State, t.Sites[s].Reason = "absent", "offline when the task started"
	}
	th := wire.NewTaskHub(t.ID, on, c.hub)
	th.SetRound(uint64(capefm.RoundHello))
	c.run[t.ID] = &running{hub: th, cancel: func() {}, offered: time.Now()}
	t.State, t.Started = "offered", time.Now().UTC()
	for _, s := range on {
		t.Sites[s].State = "offered"
		c.send(ctx, s, wire.TypeOffer, wire.Offer{Task: t.ID, Analyst: t.Analyst, Dataset: t.Sites[s].Dataset, Signed: t.Signed})
	}
	c.saveTask(t)
	c.audit("coordinator", "offer", t.ID, "offered to "+strings.Join(on, ", ")+absentNote(off))
	c.cfg.Logf("task %s offered to %s%s", t.ID, strings.Join(on, ", "), absentNote(off))
}

func absentNote(off []string) string {
	if len(off) == 0 {
		return ""
	}
	return "; absent: " + strings.Join(off, ", ")
}

// maybeStart runs the protocol once every offered site has answered.
func (c *Coordinator) maybeStart(ctx context.Context, t *Task) {
	var accepted []string
	for _, s := range sortedKeys(t.Sites) {
		switch t.Sites[s].State {
		case "offered":
			return
		case "accepted":
			accepted = append(accepted, s)
		}
	}
	r := c.run[t.ID]
	if len(accepted) < t.Spec.MinSites {
		c.end(ctx, t, "failed", fmt.Sprintf("%d site(s) accepted, the task needs %d: %s", len(accepted), t.Spec.MinSites, refusals(t)))
		return
	}
	s, err := schema.Parse(t.Spec.Schema)
	if err != nil {
		c.end(ctx, t, "failed", err.Error())
		return
	}
	fp, _ := schema.Fingerprint(s)
	kind, _ := regress.ParseKind(t.Spec.Model)
	mech := capefm.Mechanism(t.Spec.Mechanism)
	delta, ratio, split := t.Spec.Delta, t.Spec.NoiseRatio, t.Spec.Split
	if mech == capefm.FMLocal {
		delta = 0
	}
	if mech == capefm.CapeFM && ratio == 0 {
		ratio = capefm.DefaultNoiseRatio
	}
	if split == 0 {
		split = 0.5
	}
	roster := make([]capefm.SiteInfo, len(accepted))
	for i, n := range accepted {
		roster[i] = capefm.SiteInfo{Name: n, ID: uint32(i + 1)}
	}
	template := capefm.Params{Mechanism: mech, Kind: kind, Schema: fp, D: len(s.FeatureNames()), Epsilon: t.Spec.Epsilon, Delta: delta,
		Split: split, Sites: roster, Colluders: t.Spec.Colluders, MinSites: t.Spec.MinSites, NoiseRatio: ratio}
	t.State = "running"
	c.saveTask(t)
	c.audit("coordinator", "run", t.ID, "capeFM with "+strings.Join(accepted, ", "))
	c.cfg.Logf("task %s running with %s", t.ID, strings.Join(accepted, ", "))
	rctx, cancel := context.WithCancel(ctx)
	r.cancel()
	r.cancel = cancel
	id := t.ID
	opt := capenet.ServeOptions{RoundTimeout: c.cfg.RoundTimeout, JoinTimeout: c.cfg.RoundTimeout, RedoAfterRelease: t.Spec.RedoAfterRelease,
		ReconnectGrace: c.cfg.ReconnectGrace, KeyVerifier: c.verifier, FinishTimeout: time.Second,
		Events: func(ev capenet.Event) {
			select {
			case c.events <- taskEvent{id, ev}:
			default:
			}
		}}
	go func() {
		res, err := capenet.Serve(rctx, r.hub, template, opt)
		select {
		case c.ended <- taskEnd{id: id, res: res, err: err}:
		case <-ctx.Done():
		}
	}()
}

func refusals(t *Task) string {
	var parts []string
	for _, s := range sortedKeys(t.Sites) {
		st := t.Sites[s]
		switch st.State {
		case "refused":
			parts = append(parts, fmt.Sprintf("%s refused (rule %s: %s)", s, st.Rule, st.Reason))
		case "absent":
			parts = append(parts, fmt.Sprintf("%s absent (%s)", s, st.Reason))
		}
	}
	return strings.Join(parts, "; ")
}

func (c *Coordinator) taskLog(te taskEvent) {
	t := c.tasks[te.id]
	if t == nil {
		return
	}
	if len(t.Log) < 200 {
		t.Log = append(t.Log, te.ev.Message)
	}
	if te.ev.Kind == "lost" || te.ev.Kind == "announce-lost" {
		if s := t.Sites[te.ev.Site]; s != nil {
			s.State, s.Reason = "lost", te.ev.Message
		}
	}
	if te.ev.Kind == "attempt" || te.ev.Kind == "attempt-failed" || te.ev.Kind == "model" || te.ev.Kind == "aborted" {
		c.audit("coordinator", te.ev.Kind, t.ID, te.ev.Message)
	}
}

// finish records the end of a task's protocol.
func (c *Coordinator) finish(ctx context.Context, e taskEnd) {
	t := c.tasks[e.id]
	// drain the task's pending log lines first
	for {
		select {
		case te := <-c.events:
			c.taskLog(te)
			continue
		default:
		}
		break
	}
	if r := c.run[e.id]; r != nil {
		r.hub.Close()
		r.cancel()
		delete(c.run, e.id)
	}
	if t == nil || t.Terminal() {
		return
	}
	if e.err != nil {
		t.State, t.Error = "failed", e.err.Error()
	} else {
		s, _ := schema.Parse(t.Spec.Schema)
		res := &Result{Coef: e.res.Coef, Guarantee: e.res.Privacy.Guarantee(), Attempts: int(e.res.Params.Attempt), N: e.res.Params.N()}
		if s != nil {
			res.Features = s.FeatureNames()
		}
		for _, si := range e.res.Params.Sites {
			res.Sites = append(res.Sites, si.Name)
			if st := t.Sites[si.Name]; st != nil {
				st.State, st.N = "included", si.N
			}
		}
		t.State, t.Result = "done", res
	}
	t.Ended = time.Now().UTC()
	c.saveTask(t)
	c.audit("coordinator", t.State, t.ID, t.Error)
	c.cfg.Logf("task %s %s%s", t.ID, t.State, suffix(t.Error))
}

// end stops a task that has not finished its protocol.
func (c *Coordinator) end(ctx context.Context, t *Task, state, why string) {
	if r := c.run[t.ID]; r != nil {
		r.cancel()
		r.hub.Close()
		delete(c.run, t.ID)
		for _, s := range r.hub.Roster() {
			c.send(ctx, s, wire.TypeCancel, wire.Cancel{Task: t.ID, Reason: why})
		}
	}
	t.State, t.Error, t.Ended = state, why, time.Now().UTC()
	c.saveTask(t)
	c.audit("coordinator", state, t.ID, why)
	c.cfg.Logf("task %s %s: %s", t.ID, state, why)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
