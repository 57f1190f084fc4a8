// Package coordinator is the consortium's long-running server: it keeps
// nodes, datasets, analysts' tasks, results, the nodes' budget reports and
// a hash-chained audit log in one bbolt file (package consortium/store),
// takes analysts' requests, and runs each task's capeFM protocol between
// the sites that accept it, relaying its messages over the consortium's
// transport session (package consortium/wire).
//
// State machine and driver. Machine holds every piece of state and the task
// lifecycle, without network code; Coordinator.Run is its one driver: one
// goroutine, one select over the hub's inbox and events, a tick, and each
// task protocol's log and end, carrying out the Effects the machine
// returns. Each running task's protocol is capenet.Serve (capefm's
// aggregator state machine and its driver) over a wire.TaskHub fed by Run;
// it reports back through channels.
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
	"errors"
	"log/slog"
	"net"
	"slices"
	"sync/atomic"
	"time"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/capenet"
	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/consortium/store"
	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/dpppnet"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/paillier"
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
	// Logger receives the coordinator's records (nil: discard), also
	// handed to the transport; ProgressLine renders its progress records
	// as lines. See log.go for what they hold.
	Logger *slog.Logger
	// OnListen, if set, is called with the listening address.
	OnListen func(addr string)
	// Deployments are the DPPP deployments analysts may query, by name:
	// the coordinator is their aggregator (dpppnet.Serve over the task's
	// hub), untrusted by the teachers as any DPPP aggregator is.
	Deployments map[string]Deployment
}

// Deployment is a DPPP deployment as the coordinator serves it: its
// public settings (the teachers' file) and its threshold public key.
type Deployment struct {
	Settings wire.Deployment
	Key      *paillier.ThresholdPublicKey
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

// Result is a task's model, or a DPPP task's labels.
type Result struct {
	// Labels (DPPP): one class index per query row; ClassNames the
	// teachers' classes; Queries the rows labelled.
	Labels     []int    `json:"labels,omitempty"`
	ClassNames []string `json:"class_names,omitempty"`

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

// Coordinator is a running coordinator: the driver of its Machine over the
// consortium's transport hub.
type Coordinator struct {
	cfg  Config
	m    *Machine
	hub  transport.Hub
	addr atomic.Value // string

	run    map[string]*running
	ended  chan taskEnd
	events chan taskEvent
}

type running struct {
	hub    *wire.TaskHub
	cancel context.CancelFunc
}

// New applies the defaults and loads the state from the store.
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
	if cfg.MaxRunning <= 0 {
		cfg.MaxRunning = 16
	}
	m, err := NewMachine(cfg)
	if err != nil {
		return nil, err
	}
	return &Coordinator{cfg: cfg, m: m, run: map[string]*running{}, ended: make(chan taskEnd, 16), events: make(chan taskEvent, 1024)}, nil
}

// Snapshot returns the latest read-only view (safe from any goroutine).
func (c *Coordinator) Snapshot() *Snapshot { return c.m.Snapshot() }

// Addr returns the listening address once Run listens ("" before).
func (c *Coordinator) Addr() string {
	a, _ := c.addr.Load().(string)
	return a
}

// Run listens and drives the machine until ctx ends: one goroutine, one
// select over the hub's inbox and events, the tasks' protocol logs and
// ends, and a 100 ms tick.
func (c *Coordinator) Run(ctx context.Context) error {
	roster := append(slices.Clone(c.cfg.Nodes), c.cfg.Analysts...)
	srv, err := transport.Listen(ctx, transport.ServerConfig{
		HubConfig: transport.HubConfig{Session: wire.Session(), Roster: roster, MaxPayload: wire.MaxPayload, AllowRepeats: true,
			InboxSize: 1024, QueueSize: 256, Resend: 64, Logger: c.m.log},
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
	addr := srv.Addr().String()
	c.addr.Store(addr)
	c.m.log.Info(msgListening, "address", addr, "nodes", len(c.cfg.Nodes), "analysts", len(c.cfg.Analysts))
	if c.cfg.OnListen != nil {
		c.cfg.OnListen(addr)
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
		var eff []Effect
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-srv.Done():
			return errors.New("coordinator: the hub closed")
		case env := <-srv.Inbox():
			if env.Type == wire.TypeCape {
				var m wire.Cape
				if wire.Decode(env, &m) == nil {
					if r := c.run[m.Task]; r != nil {
						r.hub.Deliver(env.Sender, m)
					}
				}
				continue
			}
			eff = c.m.Message(env)
		case ev := <-srv.Events():
			for _, r := range c.run {
				if slices.Contains(r.hub.Roster(), ev.Party) {
					r.hub.Event(ev)
				}
			}
			eff = c.m.Connection(ev)
		case e := <-c.ended:
			// the task's pending log lines first
			for drained := false; !drained; {
				select {
				case te := <-c.events:
					c.m.ProtocolEvent(te.id, te.ev)
				default:
					drained = true
				}
			}
			c.stop(e.id)
			if e.dppp != nil {
				eff = c.m.DPPPEnd(e.id, e.dppp, e.err)
			} else {
				eff = c.m.ProtocolEnd(e.id, e.res, e.err)
			}
		case te := <-c.events:
			c.m.ProtocolEvent(te.id, te.ev)
			continue
		case now := <-tick.C:
			eff = c.m.Tick(now)
		}
		c.apply(ctx, eff)
	}
}

// apply carries out the machine's effects.
func (c *Coordinator) apply(ctx context.Context, effects []Effect) {
	for _, e := range effects {
		switch {
		case e.Send != nil:
			env, err := wire.Encode(e.Send.Type, e.Send.Msg)
			if err != nil {
				c.m.log.Error(msgEncodeFailed, "type", e.Send.Type, logx.Err(err))
				continue
			}
			sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			if err := c.hub.SendTo(sctx, e.Send.To, env); err != nil {
				c.m.log.Warn(msgSendFailed, "type", e.Send.Type, "party", e.Send.To, logx.Err(err))
			}
			cancel()
		case e.Open != nil:
			th := wire.NewTaskHub(e.Open.Task, e.Open.Roster, c.hub)
			th.SetRound(uint64(capefm.RoundHello))
			c.run[e.Open.Task] = &running{hub: th, cancel: func() {}}
		case e.Start != nil:
			r := c.run[e.Start.Task]
			if r == nil {
				continue
			}
			if e.Start.DPPP != nil {
				c.startDPPP(ctx, e.Start, r)
				continue
			}
			c.start(ctx, e.Start, r)
		case e.Stop != "":
			c.stop(e.Stop)
		}
	}
}

// start runs a task's capeFM protocol in its own goroutine: capenet.Serve
// drives capefm's aggregator state machine over the task's hub and
// reports its log and its end back to Run.
func (c *Coordinator) start(ctx context.Context, s *Start, r *running) {
	rctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	id := s.Task
	verifier, _ := certs.NewStatementSigner(c.cfg.Identity)
	opt := capenet.ServeOptions{RoundTimeout: c.cfg.RoundTimeout, JoinTimeout: c.cfg.RoundTimeout, RedoAfterRelease: s.Redo,
		ReconnectGrace: c.cfg.ReconnectGrace, KeyVerifier: verifier, FinishTimeout: time.Second,
		Events: func(ev capenet.Event) {
			select {
			case c.events <- taskEvent{id, ev}:
			default:
			}
		}}
	hub, template := r.hub, s.Template
	go func() {
		res, err := capenet.Serve(rctx, hub, template, opt)
		select {
		case c.ended <- taskEnd{id: id, res: res, err: err}:
		case <-ctx.Done():
		}
	}()
}

// startDPPP runs a DPPP query task in its own goroutine: the coordinator
// is the deployment's aggregator, dpppnet.Serve (dppp's Driver and
// Aggregator) over the task's hub, labelling the analyst's signed rows.
// The teachers trust it no more than any aggregator: each checks the
// offered parameters against its own, charges its ledgers before voting,
// signs one contributor set per batch and decrypts only a sum every
// contributor signed, every proof checked (dppp.Teacher).
func (c *Coordinator) startDPPP(ctx context.Context, s *Start, r *running) {
	rctx, cancel := context.WithCancel(ctx)
	r.cancel = cancel
	id := s.Task
	aopt := dppp.AggregatorOptions{}
	// Check the teachers' set signatures on arrival too (they check them
	// anyway): a bad one abandons the batch at once.
	aopt.Verifier, _ = certs.NewStatementSigner(c.cfg.Identity)
	opt := dpppnet.ServeOptions{RoundTimeout: c.cfg.RoundTimeout, JoinTimeout: c.cfg.RoundTimeout, FinishTimeout: time.Second, Aggregator: aopt,
		Logger: dpppnet.LineLogger(func(line string) {
			select {
			case c.events <- taskEvent{id, capenet.Event{Time: time.Now(), Kind: "dppp", Message: line}}:
			default:
			}
		})}
	d := s.DPPP
	r.hub.Close()
	r.hub = wire.NewTaskHub(id, d.Teachers, c.hub)
	hub := r.hub
	go func() {
		res, err := dpppnet.Serve(rctx, hub, d.Params, d.Key, d.Rows, opt)
		select {
		case c.ended <- taskEnd{id: id, dppp: res, err: err}:
		case <-ctx.Done():
		}
	}()
}

func (c *Coordinator) stop(id string) {
	if r := c.run[id]; r != nil {
		r.cancel()
		r.hub.Close()
		delete(c.run, id)
	}
}
