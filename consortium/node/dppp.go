package node

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"time"

	"github.com/dplearn/dplearn/classify"
	"github.com/dplearn/dplearn/consortium/policy"
	"github.com/dplearn/dplearn/consortium/wire"
	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/dpppnet"
	"github.com/dplearn/dplearn/paillier"
	"github.com/dplearn/dplearn/paillier/keyfile"
	"github.com/dplearn/dplearn/transport"
)

// Model is a DPPP teacher's dataset: its trained model (from `dplearn dppp
// train`, on a table spec), its threshold Paillier key share (SECRET) and
// the deployment's public settings file (wire.Deployment, the same at the
// coordinator and at every teacher). Name is the deployment's name: the
// dataset an analyst's DPPP task names and the site's policy lists.
type Model struct {
	Name       string
	Path       string
	KeyShare   string
	Deployment string
}

// model is a loaded Model: the teacher's own calibration of the
// deployment (dppp.Calibrate of its settings, its model's input and its
// key), which every offer is checked against by dppp.Teacher.Accept.
type model struct {
	Model
	file   *classify.ModelFile
	key    *paillier.KeyShare
	config dppp.Config
	params *dppp.Params // session aside
	fp     [32]byte
}

// loadModel reads a teacher's model, key share and deployment.
func loadModel(name string, m Model) (*model, error) {
	mf, err := classify.Load(m.Path)
	if err != nil {
		return nil, fmt.Errorf("node: model %q: %w", m.Name, err)
	}
	if mf.Input == nil {
		return nil, fmt.Errorf("node: model %q (%s): a consortium teacher's model must record its table spec (train it with --schema)", m.Name, m.Path)
	}
	key, err := keyfile.LoadKeyShare(m.KeyShare)
	if err != nil {
		return nil, fmt.Errorf("node: model %q: %w", m.Name, err)
	}
	d, err := wire.LoadDeployment(m.Deployment)
	if err != nil {
		return nil, fmt.Errorf("node: model %q: %w", m.Name, err)
	}
	if !containsName(d.Teachers, name) {
		return nil, fmt.Errorf("node: model %q: %s is not on the deployment's roster %v", m.Name, name, d.Teachers)
	}
	fp := sha256.Sum256([]byte(mf.Input.Fingerprint())) // as `dplearn dppp teach` (specFingerprint)
	cfg, err := d.Config(len(mf.ClassNames), mf.Features, fp)
	if err != nil {
		return nil, fmt.Errorf("node: model %q: %w", m.Name, err)
	}
	p, err := dppp.Calibrate(cfg, key.PublicKey())
	if err != nil {
		return nil, fmt.Errorf("node: model %q: %w", m.Name, err)
	}
	return &model{Model: m, file: mf, key: key, config: cfg, params: p, fp: fp}, nil
}

func containsName(list []string, name string) bool {
	for _, s := range list {
		if s == name {
			return true
		}
	}
	return false
}

// decideDPPP applies the policy and the ledgers to a DPPP query task whose
// signature and replay checks passed, and builds the teacher. The task is
// one run of the deployment at this site: it is charged to the analyst's
// and the deployment's ledgers as ONE entry each (labelled by the task and
// its spec digest), raised before each batch's vote leaves to the run's
// PLD-composed total of all the queries answered so far
// (dppp.Params.RunCharge, through dppp.RunLedger over taskLedger.Raise),
// exactly as `dplearn dppp teach --ledger` charges its ledger file. The
// policy and the ledgers are asked about RunCharge(k) of the task's k
// queries before anything is voted.
func (n *Node) decideDPPP(ctx context.Context, conn transport.Conn, o wire.Offer, spec wire.TaskSpec, digest string) (func(), *wire.TaskConn, wire.Answer) {
	if spec.Deployment != o.Dataset {
		return nil, nil, n.refuse(o, o.Analyst, "spec", fmt.Sprintf("the signed task names deployment %q, the offer %q", spec.Deployment, o.Dataset))
	}
	k := len(spec.Rows)
	n.record(o.Analyst, "offer", o.Task, fmt.Sprintf("dppp: %d queries to deployment %s", k, o.Dataset))
	m, ok := n.models[o.Dataset]
	if !ok {
		return nil, nil, n.refuse(o, o.Analyst, "dataset", fmt.Sprintf("this site holds no model of deployment %q", o.Dataset))
	}
	p := m.params
	if k == 0 {
		return nil, nil, n.refuse(o, o.Analyst, "spec", "the task has no query rows")
	}
	if err := dpppnet.CheckRows(spec.Rows, p.Features); err != nil {
		return nil, nil, n.refuse(o, o.Analyst, "spec", err.Error())
	}
	if k > p.MaxQueries {
		return nil, nil, n.refuse(o, o.Analyst, "max-queries", fmt.Sprintf("%d queries; one run of deployment %q answers at most %d (budget ε = %g, δ = %g per run)", k, o.Dataset, p.MaxQueries, p.BudgetEpsilon, p.BudgetDelta))
	}
	req, total, err := dpppRequest(o.Analyst, o.Dataset, k, p)
	if err != nil {
		return nil, nil, n.refuse(o, o.Analyst, "spec", err.Error())
	}
	if r := n.cfg.Policy.Decide(req); r != nil {
		return nil, nil, n.refuse(o, o.Analyst, r.Rule, r.Reason)
	}
	led, err := n.ledgers(ctx, o.Analyst, o.Dataset, o.Task)
	if err != nil {
		return nil, nil, n.refuse(o, o.Analyst, "ledger", err.Error())
	}
	a := n.cfg.Policy.Analysts[o.Analyst]
	led.limitE, led.limitD = a.MaxEpsilon, a.MaxDelta
	label := dpppLabel(o.Task, digest)
	if rule, err := led.checkRaise(label, total.Epsilon, total.Delta, true); err != nil {
		return nil, nil, n.refuse(o, o.Analyst, rule, err.Error())
	}
	pred, err := m.file.Open(ctx)
	if err != nil {
		return nil, nil, n.refuse(o, o.Analyst, "data", err.Error())
	}
	predict := signedOnly(spec.Rows, o.Analyst, pred.PredictBatch)
	t, err := dppp.NewTeacher(dppp.TeacherConfig{Name: n.name, Config: m.config, Key: m.key, Predict: predict,
		Ledger: dppp.NewRunLedger(p, label, led), Calibrated: p, Signer: n.verifier, Noise: n.cfg.Source()})
	if err != nil {
		pred.Close()
		return nil, nil, n.refuse(o, o.Analyst, "spec", err.Error())
	}
	tc := n.admit(o.Task, digest, conn)
	n.record(o.Analyst, "accept", o.Task, fmt.Sprintf("dppp deployment %s, %d queries at ε = %v, δ = %v each, charged as one run of at most %v, spec sha256 %s", o.Dataset, k, p.Epsilon, p.Delta, total, digest))
	n.log.Info(msgAcceptedDPPP, "task", o.Task, "analyst", o.Analyst, "queries", k, "dataset", o.Dataset)
	run := func() {
		defer pred.Close()
		n.teach(ctx, conn, o, t, tc)
	}
	return run, tc, wire.Answer{Task: o.Task, Accept: true}
}

// teach runs the teacher (dpppnet.Teach) for one task over its TaskConn.
func (n *Node) teach(ctx context.Context, conn transport.Conn, o wire.Offer, t *dppp.Teacher, tc *wire.TaskConn) {
	defer func() {
		n.mu.Lock()
		delete(n.tasks, o.Task)
		n.mu.Unlock()
		tc.Close()
		n.reportBudget(ctx, conn)
	}()
	idle := n.cfg.IdleTimeout
	if idle <= 0 {
		idle = 10 * time.Minute
	}
	res, err := dpppnet.Teach(ctx, tc, t, dpppnet.TeachOptions{IdleTimeout: idle, Logger: n.log.With("task", o.Task)})
	votes, partials := 0, 0
	if res != nil {
		votes, partials = res.Votes, res.Partials
	}
	if err != nil {
		n.record(n.name, "outcome", o.Task, fmt.Sprintf("dppp ended with an error: %v (%d queries charged, %d votes, %d partial decryptions)", err, t.Answered(), votes, partials))
		return
	}
	n.record(n.name, "outcome", o.Task, fmt.Sprintf("dppp: %s (%d queries charged, %d votes, %d partial decryptions)", res.Done, t.Answered(), votes, partials))
}

// dpppRequest is the policy request of a DPPP task of k queries of
// deployment p at this site, and the run's total it is asked about: the
// PLD-composed total of k queries, p.RunCharge(k) (ε rounded up by the
// accountant), the most the task's single ledger entry is ever raised to
// (RunCharge grows with k), so max_epsilon and max_delta per task bound
// what the ledgers are charged.
func dpppRequest(analyst, dataset string, k int, p *dppp.Params) (policy.Request, dppp.Guarantee, error) {
	g, err := p.RunCharge(k)
	if err != nil {
		return policy.Request{}, g, fmt.Errorf("node: the total of %d queries: %w", k, err)
	}
	return policy.Request{Analyst: analyst, Dataset: dataset, Mechanism: wire.MechanismDPPP,
		Epsilon: g.Epsilon, Delta: g.Delta, Queries: k, QueryEpsilon: p.Epsilon, QueryDelta: p.Delta}, g, nil
}

// dpppLabel is the label of a DPPP task's one entry in the node's
// ledgers: the task and its signed spec's digest, which the node accepts
// once (replay check, across restarts), so no other run shares it.
func dpppLabel(task, digest string) string {
	return fmt.Sprintf("task %s: dppp run, spec sha256 %s", task, digest)
}

// signedOnly wraps a teacher's predictor so that it labels only rows the
// analyst signed: a batch holding any other row is refused (no vote, so
// nothing charged), so the coordinator, the untrusted aggregator, cannot
// spend the analyst's budget on rows of its own or learn the teachers'
// answers about them.
func signedOnly(signed [][]float64, analyst string, predict dppp.PredictFunc) dppp.PredictFunc {
	set := rowSet(signed)
	return func(ctx context.Context, rows [][]float64) ([]int, error) {
		for i, r := range rows {
			if !set[rowKey(r)] {
				return nil, fmt.Errorf("node: row %d of the batch is not one of the rows analyst %s signed: not voting", i+1, analyst)
			}
		}
		return predict(ctx, rows)
	}
}

// rowKey identifies a row by the bits of its values.
func rowKey(r []float64) string {
	b := make([]byte, 8*len(r))
	for i, x := range r {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	return string(b)
}

func rowSet(rows [][]float64) map[string]bool {
	s := make(map[string]bool, len(rows))
	for _, r := range rows {
		s[rowKey(r)] = true
	}
	return s
}
