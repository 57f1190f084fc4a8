package coordinator

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
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
	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/dpppnet"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/paillier"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/schema"
	"github.com/dplearn/dplearn/transport"
)

// Machine is the coordinator's state machine: the nodes, the tasks and
// their lifecycle, the budget reports, the store and the audit log. It has
// no network code and no goroutines: the driver (Coordinator.Run) feeds it
// the consortium hub's messages and connection events, a clock tick, and
// each task protocol's log and end, one at a time, and carries out the
// Effects it returns (send a message, open a task's hub, start or stop a
// task's capeFM protocol). Tests can drive it directly.
type Machine struct {
	cfg      Config
	log      *slog.Logger
	st       *store.Store
	verifier *certs.StatementSigner

	tasks map[string]*Task
	// dpppParams: the running DPPP tasks' parameters (not stored: a
	// restart fails running tasks).
	dpppParams map[string]dpppMeta
	order      []string // task IDs in submission order
	nodes      map[string]*NodeInfo
	budgets    map[string]Budget

	out      []Effect
	snapshot atomic.Pointer[Snapshot]
}

// Effect is one thing the driver must do. Exactly one field is set.
type Effect struct {
	// Send: a control message to a node or an analyst.
	Send *Send
	// Open: create the task's hub (wire.TaskHub) for its roster, so that
	// the sites' first capeFM messages are kept until the protocol starts.
	Open *Open
	// Start: run the task's capeFM protocol (capenet.Serve) on its hub.
	Start *Start
	// Stop: stop the task's protocol and close its hub.
	Stop string
}

// Send is a control message.
type Send struct {
	To, Type string
	Msg      any
}

// Open opens a task's hub.
type Open struct {
	Task   string
	Roster []string
}

// Start starts a task's protocol.
type Start struct {
	Task     string
	Template capefm.Params
	Redo     bool
	// DPPP, if set, is a DPPP query task to run instead (Template unused).
	DPPP *DPPPRun
}

// DPPPRun is a DPPP query task's run: the parameters offered to the
// teachers (a fresh session), the deployment's key, the analyst's rows.
type DPPPRun struct {
	Params *dppp.Params
	Key    *paillier.ThresholdPublicKey
	Rows   [][]float64
	// Teachers are the sites that accepted: the task's hub is narrowed to
	// them (a refusing site gets nothing of the run).
	Teachers []string
}

type taskEnd struct {
	id   string
	res  *capefm.RunResult
	dppp *dppp.RunResult
	err  error
}

type taskEvent struct {
	id string
	ev capenet.Event
}

func (m *Machine) send(to, typ string, v any) {
	m.out = append(m.out, Effect{Send: &Send{To: to, Type: typ, Msg: v}})
}

func (m *Machine) drain() []Effect {
	out := m.out
	m.out = nil
	m.publish()
	return out
}

// Snapshot returns the latest read-only view (safe from any goroutine).
func (m *Machine) Snapshot() *Snapshot { return m.snapshot.Load() }

// Message handles an envelope from a node or an analyst (not the capeFM
// messages of a task, which the driver routes to the task's hub).
func (m *Machine) Message(env transport.Envelope) []Effect {
	m.handle(env)
	return m.drain()
}

// Connection handles a party's connection event.
func (m *Machine) Connection(ev transport.Event) []Effect {
	if n := m.nodes[ev.Party]; n != nil {
		switch ev.Kind {
		case transport.Attached:
			n.LastSeen = ev.Time.UTC()
			// A node that re-attaches without re-registering (the transport
			// reconnected by itself) is online again with its datasets.
			if ev.Returning && n.Datasets != nil {
				n.Online = true
			}
		case transport.Detached:
			n.Online, n.LastSeen = false, ev.Time.UTC()
			m.st.PutJSON("nodes", n.Name, n)
			m.log.Info(msgDisconnected, "node", n.Name)
		}
	}
	return m.drain()
}

// Tick runs the scheduler at time now.
func (m *Machine) Tick(now time.Time) []Effect {
	m.schedule(now)
	return m.drain()
}

// active counts the tasks offered or running.
func (m *Machine) active() int {
	n := 0
	for _, t := range m.tasks {
		if t.State == "offered" || t.State == "running" {
			n++
		}
	}
	return n
}

// NewMachine loads the state from the store; cfg is the coordinator's
// (defaults applied by New).
func NewMachine(cfg Config) (*Machine, error) {
	v, err := certs.NewStatementSigner(cfg.Identity)
	if err != nil {
		return nil, err
	}
	m := &Machine{cfg: cfg, log: logx.OrDiscard(cfg.Logger), st: cfg.Store, verifier: v, tasks: map[string]*Task{}, dpppParams: map[string]dpppMeta{}, nodes: map[string]*NodeInfo{}, budgets: map[string]Budget{}}
	raws, err := m.st.Raw("tasks")
	if err != nil {
		return nil, err
	}
	for _, r := range raws {
		var t Task
		if err := json.Unmarshal(r, &t); err != nil {
			return nil, fmt.Errorf("coordinator: stored task: %w", err)
		}
		m.tasks[t.ID] = &t
		m.order = append(m.order, t.ID)
	}
	slices.SortFunc(m.order, func(a, b string) int { return taskNum(a) - taskNum(b) })
	for _, id := range m.order {
		t := m.tasks[id]
		if t.State == "offered" || t.State == "running" {
			t.State, t.Error, t.Ended = "failed", "the coordinator restarted during the task: capeFM cannot resume an attempt (the nodes' ledgers hold what they charged); submit it again", time.Now().UTC()
			m.saveTask(t)
			m.audit("coordinator", "abort", t.ID, t.Error)
		}
	}
	if raws, err = m.st.Raw("nodes"); err != nil {
		return nil, err
	}
	for _, r := range raws {
		var n NodeInfo
		if json.Unmarshal(r, &n) == nil {
			n.Online = false
			m.nodes[n.Name] = &n
		}
	}
	if raws, err = m.st.Raw("budgets"); err != nil {
		return nil, err
	}
	for _, r := range raws {
		var b Budget
		if json.Unmarshal(r, &b) == nil {
			m.budgets[b.Node] = b
		}
	}
	for _, n := range cfg.Nodes {
		if m.nodes[n] == nil {
			m.nodes[n] = &NodeInfo{Name: n}
		}
	}
	m.publish()
	return m, nil
}

func taskNum(id string) int {
	n, _ := strconv.Atoi(strings.TrimPrefix(id, "t"))
	return n
}

func (m *Machine) publish() {
	s := &Snapshot{Time: time.Now().UTC()}
	for _, n := range sortedKeys(m.nodes) {
		s.Nodes = append(s.Nodes, *m.nodes[n])
	}
	for _, id := range m.order {
		t := *m.tasks[id]
		t.Sites = maps.Clone(t.Sites)
		s.Tasks = append(s.Tasks, t)
	}
	for _, n := range sortedKeys(m.budgets) {
		s.Budgets = append(s.Budgets, m.budgets[n])
	}
	m.snapshot.Store(s)
}

func (m *Machine) saveTask(t *Task) {
	if err := m.st.PutJSON("tasks", t.ID, t); err != nil {
		m.log.Error(msgStoreFailed, "task", t.ID, logx.Err(err))
	}
}

func (m *Machine) audit(actor, action, task, detail string) {
	if _, err := m.st.Audit(chain.Entry{Actor: actor, Action: action, Task: task, Detail: detail}); err != nil {
		m.log.Error(msgAuditFailed, logx.Err(err))
	}
}

func (m *Machine) isNode(name string) bool { return slices.Contains(m.cfg.Nodes, name) }

func (m *Machine) handle(env transport.Envelope) {
	from := env.Sender
	switch env.Type {
	case wire.TypeRegister:
		var r wire.Register
		if !m.isNode(from) || wire.Decode(env, &r) != nil {
			return
		}
		n := m.nodes[from]
		n.Datasets, n.Online, n.LastSeen = r.Datasets, true, time.Now().UTC()
		m.st.PutJSON("nodes", from, n)
		names := make([]string, len(r.Datasets))
		for i, d := range r.Datasets {
			names[i] = fmt.Sprintf("%s (N = %d)", d.Name, d.N)
		}
		m.audit(from, "register", "", strings.Join(names, ", "))
		m.log.Info(msgRegistered, "node", from, "datasets", strings.Join(names, ", "))
	case wire.TypeBudget:
		var b wire.BudgetReport
		if !m.isNode(from) || wire.Decode(env, &b) != nil {
			return
		}
		m.budgets[from] = Budget{Node: from, Report: b}
		m.st.PutJSON("budgets", from, m.budgets[from])
	case wire.TypeAnswer:
		var a wire.Answer
		if !m.isNode(from) || wire.Decode(env, &a) != nil {
			return
		}
		t := m.tasks[a.Task]
		if t == nil || t.State != "offered" || t.Sites[from] == nil || t.Sites[from].State != "offered" {
			return
		}
		s := t.Sites[from]
		if a.Accept {
			s.State = "accepted"
			m.audit(from, "accept", t.ID, "")
		} else {
			s.State, s.Rule, s.Reason = "refused", a.Rule, a.Reason
			m.audit(from, "refuse", t.ID, fmt.Sprintf("rule %s: %s", a.Rule, a.Reason))
		}
		m.saveTask(t)
		m.maybeStart(t)
	case wire.TypeRequest:
		var r wire.Request
		if !slices.Contains(m.cfg.Analysts, from) || wire.Decode(env, &r) != nil {
			return
		}
		body, err := m.request(from, r)
		m.send(from, wire.TypeReply, reply(r.ID, body, err))
	}
}

// reply is the answer to request id: the error, or body (a *Task, []Task or
// []Budget) as JSON. Its encodings are fixed by TestGoldenReplies.
func reply(id uint64, body any, err error) wire.Reply {
	rep := wire.Reply{ID: id}
	if err != nil {
		rep.Error = err.Error()
	} else if rep.Body, err = json.Marshal(body); err != nil {
		rep.Error = err.Error()
	}
	return rep
}

// request answers an analyst.
func (m *Machine) request(analyst string, r wire.Request) (any, error) {
	switch r.Op {
	case "submit":
		if r.Signed == nil {
			return nil, errors.New("submit: no signed task")
		}
		return m.submit(analyst, *r.Signed)
	case "status", "result":
		t := m.tasks[r.Task]
		if t == nil || t.Analyst != analyst {
			return nil, fmt.Errorf("%s: no task %q of analyst %s", r.Op, r.Task, analyst)
		}
		if r.Op == "result" && t.State != "done" {
			return nil, fmt.Errorf("result: task %s is %s, it has no model%s", t.ID, t.State, suffix(t.Error))
		}
		return t, nil
	case "cancel":
		t := m.tasks[r.Task]
		if t == nil || t.Analyst != analyst {
			return nil, fmt.Errorf("cancel: no task %q of analyst %s", r.Task, analyst)
		}
		if t.Terminal() {
			return nil, fmt.Errorf("cancel: task %s is already %s", t.ID, t.State)
		}
		m.end(t, "cancelled", "cancelled by "+analyst)
		return t, nil
	case "list":
		var out []Task
		for _, id := range m.order {
			if t := m.tasks[id]; t.Analyst == analyst {
				out = append(out, *t)
			}
		}
		return out, nil
	case "budget":
		var out []Budget
		for _, n := range sortedKeys(m.budgets) {
			out = append(out, m.budgets[n])
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
func (m *Machine) submit(analyst string, sg wire.Signed) (*Task, error) {
	if err := m.verifier.Verify(analyst, sg.Cert, sg.Sig, wire.SpecDomain, sg.Spec); err != nil {
		return nil, fmt.Errorf("submit: the task is not signed by %s: %w", analyst, err)
	}
	var spec wire.TaskSpec
	if err := json.Unmarshal(sg.Spec, &spec); err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	if err := m.checkSpec(&spec); err != nil {
		return nil, fmt.Errorf("submit: %w", err)
	}
	num, err := m.st.NextID("task")
	if err != nil {
		return nil, err
	}
	t := &Task{ID: fmt.Sprintf("t%d", num), Analyst: analyst, Spec: spec, Signed: sg, State: "queued", Sites: map[string]*SiteStatus{}, Submitted: time.Now().UTC()}
	for site, ds := range spec.Sites {
		t.Sites[site] = &SiteStatus{Dataset: ds, State: "waiting"}
	}
	if spec.Kind == wire.KindDPPP {
		for _, site := range m.cfg.Deployments[spec.Deployment].Settings.Teachers {
			t.Sites[site] = &SiteStatus{Dataset: spec.Deployment, State: "waiting"}
		}
		m.audit(analyst, "submit", t.ID, fmt.Sprintf("dppp: %d queries to deployment %s, deadline %s", len(spec.Rows), spec.Deployment, spec.Deadline.Format(time.RFC3339)))
	}
	m.tasks[t.ID] = t
	m.order = append(m.order, t.ID)
	m.saveTask(t)
	if spec.Kind == "" {
		m.audit(analyst, "submit", t.ID, fmt.Sprintf("%s %s over %s, ε = %v, δ = %v per site, min %d sites, deadline %s",
			spec.Mechanism, spec.Model, describeSites(spec.Sites), spec.Epsilon, spec.Delta, spec.MinSites, spec.Deadline.Format(time.RFC3339)))
	}
	m.log.Info(msgSubmitted, "task", t.ID, "analyst", analyst)
	return t, nil
}

func describeSites(m map[string]string) string {
	var parts []string
	for _, s := range sortedKeys(m) {
		parts = append(parts, s+":"+m[s])
	}
	return strings.Join(parts, ", ")
}

func (m *Machine) checkSpec(s *wire.TaskSpec) error {
	switch s.Kind {
	case "":
	case wire.KindDPPP:
		return m.checkDPPP(s)
	default:
		return fmt.Errorf("unknown task kind %q (want %q for a DPPP query task, none for a capeFM fit)", s.Kind, wire.KindDPPP)
	}
	if len(s.Sites) < 2 {
		return fmt.Errorf("a task needs at least 2 sites, got %d", len(s.Sites))
	}
	for site := range s.Sites {
		if !m.isNode(site) {
			return fmt.Errorf("site %q is not a node of this consortium (%s)", site, strings.Join(m.cfg.Nodes, ", "))
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

// checkDPPP checks a DPPP query task: a deployment this coordinator
// serves, rows of one width, all finite, a deadline. Its sites are the
// deployment's teachers; it needs the key's threshold of them online to
// be offered (the protocol then needs the parameters' N − A).
func (m *Machine) checkDPPP(s *wire.TaskSpec) error {
	d, ok := m.cfg.Deployments[s.Deployment]
	if !ok {
		return fmt.Errorf("no DPPP deployment %q at this coordinator (have %v)", s.Deployment, sortedKeys(m.cfg.Deployments))
	}
	if len(s.Sites) > 0 || s.Model != "" || s.Mechanism != "" || s.Epsilon != 0 || s.Delta != 0 || (len(s.Schema) > 0 && string(s.Schema) != "null") {
		return errors.New("a DPPP task names a deployment and rows only: its sites are the deployment's teachers, its per-query ε and δ the deployment's")
	}
	if len(s.Rows) == 0 {
		return errors.New("a DPPP task needs query rows")
	}
	if err := wire.CheckQueryRows(s.Rows); err != nil {
		return err
	}
	for _, t := range d.Settings.Teachers {
		if !m.isNode(t) {
			return fmt.Errorf("deployment %q: teacher %q is not a node of this consortium", s.Deployment, t)
		}
	}
	s.MinSites = max(2, d.Key.Threshold())
	if s.Deadline.IsZero() {
		return errors.New("no deadline")
	}
	return nil
}

func (m *Machine) online(name string) bool {
	n := m.nodes[name]
	return n != nil && n.Online
}

// schedule starts queued tasks whose sites are there, fails those past
// their deadline, and closes offers whose answers are overdue.
func (m *Machine) schedule(now time.Time) {
	for _, id := range m.order {
		t := m.tasks[id]
		switch t.State {
		case "queued":
			var on, off []string
			for _, s := range sortedKeys(t.Sites) {
				if m.online(s) {
					on = append(on, s)
				} else {
					off = append(off, s)
				}
			}
			switch {
			case m.active() >= m.cfg.MaxRunning && !now.After(t.Spec.Deadline):
				// wait for a slot
			case len(on) == len(t.Sites) || (len(on) >= t.Spec.MinSites && now.Sub(t.Submitted) >= m.cfg.JoinWait):
				m.offer(t, on, off)
			case now.After(t.Spec.Deadline):
				for _, s := range off {
					t.Sites[s].State = "absent"
				}
				m.end(t, "failed", fmt.Sprintf("deadline passed with %d of the %d sites needed online (absent: %s)", len(on), t.Spec.MinSites, strings.Join(off, ", ")))
			}
		case "offered":
			if now.Sub(t.Started) > m.cfg.AnswerTimeout {
				for _, s := range t.Sites {
					if s.State == "offered" {
						s.State, s.Reason = "absent", "no answer to the offer"
					}
				}
				m.maybeStart(t)
			}
		}
	}
}

// offer sends the signed task to its online sites.
func (m *Machine) offer(t *Task, on, off []string) {
	for _, s := range off {
		t.Sites[s].State, t.Sites[s].Reason = "absent", "offline when the task started"
	}
	m.out = append(m.out, Effect{Open: &Open{Task: t.ID, Roster: on}})
	t.State, t.Started = "offered", time.Now().UTC()
	for _, s := range on {
		t.Sites[s].State = "offered"
		m.send(s, wire.TypeOffer, wire.Offer{Task: t.ID, Analyst: t.Analyst, Dataset: t.Sites[s].Dataset, Signed: t.Signed})
	}
	m.saveTask(t)
	m.audit("coordinator", "offer", t.ID, "offered to "+strings.Join(on, ", ")+absentNote(off))
	if len(off) == 0 {
		m.log.Info(msgOffered, "task", t.ID, "nodes", strings.Join(on, ", "))
	} else {
		m.log.Info(msgOfferedAbsent, "task", t.ID, "nodes", strings.Join(on, ", "), "absent", strings.Join(off, ", "))
	}
}

func absentNote(off []string) string {
	if len(off) == 0 {
		return ""
	}
	return "; absent: " + strings.Join(off, ", ")
}

// maybeStart runs the protocol once every offered site has answered.
func (m *Machine) maybeStart(t *Task) {
	var accepted []string
	for _, s := range sortedKeys(t.Sites) {
		switch t.Sites[s].State {
		case "offered":
			return
		case "accepted":
			accepted = append(accepted, s)
		}
	}
	if len(accepted) < t.Spec.MinSites {
		m.end(t, "failed", fmt.Sprintf("%d site(s) accepted, the task needs %d: %s", len(accepted), t.Spec.MinSites, refusals(t)))
		return
	}
	if t.Spec.Kind == wire.KindDPPP {
		m.startDPPP(t, accepted)
		return
	}
	s, err := schema.Parse(t.Spec.Schema)
	if err != nil {
		m.end(t, "failed", err.Error())
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
	m.saveTask(t)
	m.audit("coordinator", "run", t.ID, "capeFM with "+strings.Join(accepted, ", "))
	m.log.Info(msgRunning, "task", t.ID, "nodes", strings.Join(accepted, ", "))
	m.out = append(m.out, Effect{Start: &Start{Task: t.ID, Template: template, Redo: t.Spec.RedoAfterRelease}})
}

// startDPPP calibrates the deployment's parameters (the teachers'
// settings file, the model input the accepting teachers registered, the
// key) with a fresh session and starts the run. Every teacher recomputes
// them from its own file, model and key share and refuses any difference.
func (m *Machine) startDPPP(t *Task, accepted []string) {
	d := m.cfg.Deployments[t.Spec.Deployment]
	var reg *wire.Dataset
	for _, s := range accepted {
		for _, ds := range m.nodes[s].Datasets {
			if ds.Name == t.Spec.Deployment && ds.Kind == "model" {
				reg = &ds
				break
			}
		}
		if reg != nil {
			break
		}
	}
	fail := func(err error) { m.end(t, "failed", "dppp: "+err.Error()) }
	if reg == nil {
		fail(fmt.Errorf("no accepting teacher registered a model of deployment %q", t.Spec.Deployment))
		return
	}
	var fp [32]byte
	if b, err := hex.DecodeString(reg.Fingerprint); err != nil || len(b) != 32 {
		fail(fmt.Errorf("model fingerprint %q is not 32 hex bytes", reg.Fingerprint))
		return
	} else {
		copy(fp[:], b)
	}
	cfg, err := d.Settings.Config(reg.Classes, reg.Features, fp)
	if err != nil {
		fail(err)
		return
	}
	p0, err := dppp.Calibrate(cfg, d.Key)
	if err != nil {
		fail(err)
		return
	}
	p, err := p0.NewSession()
	if err != nil {
		fail(err)
		return
	}
	if len(accepted) < p.MinContributors {
		m.end(t, "failed", fmt.Sprintf("%d teacher(s) accepted, deployment %s needs N − A = %d: %s", len(accepted), t.Spec.Deployment, p.MinContributors, refusals(t)))
		return
	}
	if err := dpppnet.CheckRows(t.Spec.Rows, p.Features); err != nil {
		fail(err)
		return
	}
	if len(t.Spec.Rows) > p.MaxQueries {
		fail(fmt.Errorf("%d queries; one run of the deployment answers at most %d", len(t.Spec.Rows), p.MaxQueries))
		return
	}
	t.State = "running"
	m.saveTask(t)
	m.audit("coordinator", "run", t.ID, fmt.Sprintf("dppp %s with %s: %d queries at ε = %v, δ = %v each", t.Spec.Deployment, strings.Join(accepted, ", "), len(t.Spec.Rows), p.Epsilon, p.Delta))
	m.log.Info(msgRunningDPPP, "task", t.ID, "deployment", t.Spec.Deployment, "nodes", strings.Join(accepted, ", "))
	m.out = append(m.out, Effect{Start: &Start{Task: t.ID, DPPP: &DPPPRun{Params: p, Key: d.Key, Rows: t.Spec.Rows, Teachers: accepted}}})
	m.dpppParams[t.ID] = dpppMeta{p: p, classes: reg.ClassNames, accepted: accepted}
}

// dpppMeta is what the machine keeps of a running DPPP task.
type dpppMeta struct {
	p        *dppp.Params
	classes  []string
	accepted []string
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

// ProtocolEvent records an event of a task's protocol (its log).
func (m *Machine) ProtocolEvent(id string, ev capenet.Event) {
	m.taskLog(taskEvent{id, ev})
}

func (m *Machine) taskLog(te taskEvent) {
	t := m.tasks[te.id]
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
		m.audit("coordinator", te.ev.Kind, t.ID, te.ev.Message)
	}
}

// finish records the end of a task's protocol.
// ProtocolEnd records the end of a task's protocol (res or err from
// capenet.Serve).
func (m *Machine) ProtocolEnd(id string, res *capefm.RunResult, perr error) []Effect {
	m.finish(taskEnd{id: id, res: res, err: perr})
	return m.drain()
}

// DPPPEnd records the end of a DPPP task's run (res and err from
// dpppnet.Serve).
func (m *Machine) DPPPEnd(id string, res *dppp.RunResult, err error) []Effect {
	m.finish(taskEnd{id: id, dppp: res, err: err})
	return m.drain()
}

func (m *Machine) finish(e taskEnd) {
	t := m.tasks[e.id]
	if t == nil || t.Terminal() {
		return
	}
	meta, isDPPP := m.dpppParams[e.id]
	delete(m.dpppParams, e.id)
	if e.err != nil {
		t.State, t.Error = "failed", e.err.Error()
	} else if isDPPP && e.dppp == nil {
		t.State, t.Error = "failed", "dppp: the run ended without a result"
	} else if isDPPP {
		res := &Result{Labels: e.dppp.Labels, ClassNames: meta.classes, Sites: meta.accepted}
		// The labels' guarantee for the teachers' data: k answered queries
		// composed by the noise kind's accountant (dppp.Params.Composed).
		if g, err := meta.p.Composed(len(e.dppp.Labels)); err != nil {
			res.Guarantee = err.Error()
		} else {
			res.Guarantee = g.String()
		}
		for _, s := range meta.accepted {
			if st := t.Sites[s]; st != nil && st.State == "accepted" {
				st.State = "included"
			}
		}
		t.State, t.Result = "done", res
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
	m.saveTask(t)
	m.audit("coordinator", t.State, t.ID, t.Error)
	if t.Error == "" {
		m.log.Info(msgEnded, "task", t.ID, "state", t.State)
	} else {
		m.log.Info(msgEndedReason, "task", t.ID, "state", t.State, "reason", t.Error)
	}
}

// end stops a task that has not finished its protocol.
func (m *Machine) end(t *Task, state, why string) {
	delete(m.dpppParams, t.ID)
	if t.State == "offered" || t.State == "running" {
		m.out = append(m.out, Effect{Stop: t.ID})
		for _, s := range sortedKeys(t.Sites) {
			if st := t.Sites[s].State; st == "accepted" || st == "offered" || st == "included" {
				m.send(s, wire.TypeCancel, wire.Cancel{Task: t.ID, Reason: why})
			}
		}
	}
	t.State, t.Error, t.Ended = state, why, time.Now().UTC()
	m.saveTask(t)
	m.audit("coordinator", state, t.ID, why)
	m.log.Info(msgEndedReason, "task", t.ID, "state", state, "reason", why)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
