package dpppnet

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/internal/dppptest"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/transport"
)

// fixture is the shared digits deployment (internal/dppptest) with 20
// query rows, built once per test binary.
type fixture struct{ *dppptest.Digits }

var digits dppptest.Cache

func getFixture(t testing.TB) *fixture {
	t.Helper()
	return &fixture{digits.Get(t, 20)}
}

func (f *fixture) config() dppp.Config {
	return dppp.Config{Teachers: f.Names, Classes: 10, Features: 64, Noise: dppp.Binomial, Epsilon: 1, Delta: 1e-5,
		BudgetEpsilon: 100, BudgetDelta: 1e-3, Model: f.Spec}
}

// deployment is one set of teachers with a plaintext record of their shares.
type deployment struct {
	p        *dppp.Params
	teachers []*dppp.Teacher
	mu       sync.Mutex
	shares   map[uint64]map[string][]int64
}

func (f *fixture) deploy(t testing.TB, tweak ...func(i int, tc *dppp.TeacherConfig)) *deployment {
	t.Helper()
	return f.deployConfig(t, f.config(), tweak...)
}

// deployConfig deploys teachers configured with cfg (tweaks aside) and
// parameters calibrated from cfg.
func (f *fixture) deployConfig(t testing.TB, cfg dppp.Config, tweak ...func(i int, tc *dppp.TeacherConfig)) *deployment {
	t.Helper()
	p0, err := dppp.Calibrate(cfg, f.TPK)
	if err != nil {
		t.Fatal(err)
	}
	p, err := p0.NewSession()
	if err != nil {
		t.Fatal(err)
	}
	d := &deployment{p: p, shares: map[uint64]map[string][]int64{}}
	// A per-run PKI for the set signatures (the network tests that sign
	// with the TLS certificates set Signer in a tweak).
	signers, err := dppp.EphemeralSigners(f.Names)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range f.Names {
		m := f.Models[i]
		tc := dppp.TeacherConfig{
			Name: name, Config: cfg, Key: f.Shares[i],
			Predict: func(ctx context.Context, rows [][]float64) ([]int, error) {
				out := make([]int, len(rows))
				for j, r := range rows {
					out[j] = m.Predict(r)
				}
				return out, nil
			},
			Noise:  noise.NewInsecureSeeded(uint64(1000 + i)),
			Signer: signers[name],
			RevealShares: func(batch uint64, v []int64) {
				d.mu.Lock()
				defer d.mu.Unlock()
				if d.shares[batch] == nil {
					d.shares[batch] = map[string][]int64{}
				}
				d.shares[batch][name] = append([]int64(nil), v...)
			},
		}
		for _, tw := range tweak {
			tw(i, &tc)
		}
		if reflect.DeepEqual(tc.Config, cfg) && tc.Key.PublicKey().ID() == p0.Key {
			tc.Calibrated = p0 // one PLD calibration for the ten teachers
		}
		tt, err := dppp.NewTeacher(tc)
		if err != nil {
			t.Fatal(err)
		}
		d.teachers = append(d.teachers, tt)
	}
	return d
}

// checkReference: the decrypted sums and labels equal the plaintext path
// (the same shares summed without encryption, tallied alike).
func (d *deployment) checkReference(t testing.TB, res *dppp.RunResult) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, br := range res.Batches {
		raw := make([]int64, d.p.QPC*d.p.Classes)
		for _, id := range br.Contributors {
			s, ok := d.shares[br.Batch][d.p.TeacherName(id)]
			if !ok {
				t.Fatalf("no share of %d in batch %d", id, br.Batch)
			}
			for j, v := range s {
				raw[j] += v
			}
		}
		_, labels, err := d.p.Tally(raw, len(br.Contributors), len(br.Labels))
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(raw) != fmt.Sprint(br.Raw) || fmt.Sprint(labels) != fmt.Sprint(br.Labels) {
			t.Fatalf("batch %d: decrypted %v labels %v, plaintext path %v labels %v", br.Batch, br.Raw, br.Labels, raw, labels)
		}
	}
}

var errKilled = errors.New("killed by the test")

// run runs the deployment over an in-memory hub; hook(name) gives each
// teacher's AfterSend (nil: none).
func (d *deployment) run(t *testing.T, f *fixture, rows [][]float64, hook func(name string) func(dppp.Message) error, opt ServeOptions) (*dppp.RunResult, error) {
	t.Helper()
	return d.runOn(t, memoryNet, f, rows, hook, opt)
}

// runOn runs the deployment over the network kind nk (the in-memory hub,
// or gRPC with mutual TLS on 127.0.0.1).
func (d *deployment) runOn(t *testing.T, nk netKind, f *fixture, rows [][]float64, hook func(name string) func(dppp.Message) error, opt ServeOptions) (*dppp.RunResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := newNet(t, ctx, nk, HubConfig(d.p))
	wg := startTeachers(t, ctx, n, d.teachers, func(name string, o TeachOptions) TeachOptions {
		if hook != nil {
			o.AfterSend = hook(name)
		}
		return o
	}, nil)
	opt.Logger = testLogger(t)
	if opt.RoundTimeout == 0 {
		opt.RoundTimeout = 10 * time.Second
	}
	res, err := Serve(ctx, n.hub, d.p, f.TPK, rows, opt)
	wg.Wait()
	return res, err
}

func TestDPPPDigitsInMemory(t *testing.T) {
	f := getFixture(t)
	d := f.deploy(t)
	res, err := d.run(t, f, f.Rows, nil, ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Labels) != len(f.Rows) {
		t.Fatalf("%d labels for %d rows", len(res.Labels), len(f.Rows))
	}
	d.checkReference(t, res)
	t.Log(res.Status)
}

// TestDPPPClient: over gRPC with mutual TLS, the rows come from a client
// party (dpppnet.Query), in two requests; its labels and histograms are the
// plaintext path's, and it receives the aggregator's budget line.
func TestDPPPClient(t *testing.T) {
	if testing.Short() {
		t.Skip("short: a full run over gRPC")
	}
	f := getFixture(t)
	for _, nk := range []netKind{grpcNet} {
		t.Run(nk.String(), func(t *testing.T) {
			d := f.deploy(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			n := newNet(t, ctx, nk, HubConfig(d.p, "client"))
			wg := startTeachers(t, ctx, n, d.teachers, nil, nil)
			rows := make([][]float64, d.p.QPC+3) // two requests: the fixture's rows, repeated
			for i := range rows {
				rows[i] = f.Rows[i%len(f.Rows)]
			}
			cconn, err := n.dial(ctx, "client")
			if err != nil {
				t.Fatal(err)
			}
			var qres *QueryResult
			var qerr error
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer cconn.Close()
				qres, qerr = Query(ctx, cconn, rows, QueryOptions{Histogram: true, Logger: testLogger(t), Model: d.p.Model})
			}()
			res, err := Serve(ctx, n.hub, d.p, f.TPK, nil, ServeOptions{Clients: []string{"client"}, MaxRequests: 2, RoundTimeout: 10 * time.Second, JoinTimeout: 20 * time.Second, Logger: testLogger(t)})
			wg.Wait()
			if err != nil {
				t.Fatal(err, qerr)
			}
			if qerr != nil {
				t.Fatal(qerr)
			}
			d.checkReference(t, res)
			if fmt.Sprint(qres.Labels) != fmt.Sprint(res.Labels) || fmt.Sprint(qres.Hist) != fmt.Sprint(res.Hist) || len(qres.Labels) != len(rows) {
				t.Fatalf("client got %v, aggregator tallied %v", qres.Labels, res.Labels)
			}
			if !strings.Contains(qres.Budget, "queries remain") {
				t.Errorf("the client's budget line: %q", qres.Budget)
			}
		})
	}
}

// TestDPPPClientOtherInput: a client expecting another input (model
// fingerprint) stops before sending any row.
func TestDPPPClientOtherInput(t *testing.T) {
	f := getFixture(t)
	d := f.deploy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := newNet(t, ctx, memoryNet, HubConfig(d.p, "client"))
	conn, err := n.dial(ctx, "client")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	o, err := (&dppp.Offer{Params: *d.p}).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	if err := n.hub.SendTo(ctx, "client", transport.Envelope{Type: "offer", Payload: o}); err != nil {
		t.Fatal(err)
	}
	_, err = Query(ctx, conn, f.Rows[:2], QueryOptions{Model: [32]byte{1}})
	if err == nil || !strings.Contains(err.Error(), "another input") {
		t.Fatalf("err = %v", err)
	}
	select {
	case env := <-n.hub.Inbox():
		t.Fatalf("the client sent a %s", env.Type)
	default:
	}
}

// TestDPPPRefusedParameters: a teacher configured with another ε refuses
// the offer, naming the field; the run goes on with the other nine.
func TestDPPPRefusedParameters(t *testing.T) {
	f := getFixture(t)
	d := f.deploy(t, func(i int, tc *dppp.TeacherConfig) {
		if i == 2 {
			tc.Config.Epsilon = 2
		}
	})
	res, err := d.run(t, f, f.Rows[:5], nil, ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.checkReference(t, res)
	if r := fmt.Sprint(res.Refusals["teacher03"]); !strings.Contains(r, "epsilon") {
		t.Fatalf("teacher03's refusal: %q", r)
	}
	if n := len(res.Batches[0].Contributors); n != 9 {
		t.Fatalf("%d contributors, want 9", n)
	}
}

type refusingLedger struct{}

func (refusingLedger) Charge(string, float64, float64) error {
	return errors.New("ledger: over budget")
}

// TestDPPPTeacherLedgerRefuses: two teachers whose ledgers refuse the
// charge do not decrypt; the aggregator asks other contributors.
func TestDPPPTeacherLedgerRefuses(t *testing.T) {
	f := getFixture(t)
	d := f.deploy(t, func(i int, tc *dppp.TeacherConfig) {
		if i < 2 {
			tc.Ledger = refusingLedger{}
		}
	})
	res, err := d.run(t, f, f.Rows[:5], nil, ServeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d.checkReference(t, res)
	for _, name := range []string{"teacher01", "teacher02"} {
		if r := fmt.Sprint(res.Refusals[name]); !strings.Contains(r, "over budget") {
			t.Errorf("%s's refusals: %q", name, r)
		}
	}
	for _, id := range res.Batches[0].Decryptors {
		if id <= 2 {
			t.Errorf("teacher %d decrypted", id)
		}
	}
	if d.teachers[0].Answered() != 0 {
		t.Errorf("teacher01 charged %d", d.teachers[0].Answered())
	}
}

// TestCheckRows: rows of the wrong width or with a NaN or an infinity are
// refused, naming the row and column (from 1).
func TestCheckRows(t *testing.T) {
	for _, c := range []struct {
		name string
		rows [][]float64
		want string
	}{
		{"fine", [][]float64{{1, 2}, {3, 4}}, ""},
		{"short row", [][]float64{{1, 2}, {3}}, "row 2 has 1 features, the deployment takes 2"},
		{"NaN", [][]float64{{1, 2}, {3, math.NaN()}}, "row 2, column 2: NaN"},
		{"infinity", [][]float64{{math.Inf(-1), 2}}, "row 1, column 1: -Inf"},
	} {
		t.Run(c.name, func(t *testing.T) {
			err := CheckRows(c.rows, 2)
			if (c.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), c.want)) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

// TestDPPPClientBadRowRefused: a client that bypasses Query's check and
// sends rows of 63 features to a 64-feature deployment is refused by the
// aggregator, naming the row; nothing reaches the teachers. (NaN and
// ragged rows cannot even be encoded: dppp's Request refuses them.)
func TestDPPPClientBadRowRefused(t *testing.T) {
	f := getFixture(t)
	d := f.deploy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := newNet(t, ctx, memoryNet, HubConfig(d.p, "client"))
	wg := startTeachers(t, ctx, n, d.teachers, nil, nil)
	conn, err := n.dial(ctx, "client")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	req := &dppp.Request{Session: d.p.Session, ID: 1, Rows: [][]float64{f.Rows[1][:63], f.Rows[0][:63]}}
	b, err := req.MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	var refusal string
	wg.Add(1)
	go func() {
		defer wg.Done()
		sent := false
		for {
			env, err := conn.Recv(ctx)
			if err != nil {
				return
			}
			// One request: the aggregator may offer again before its
			// refusal of this one arrives, and a second request after
			// the run's last would be refused for another reason.
			if env.Type == "offer" && !sent {
				sent = true
				if err := conn.Send(ctx, transport.Envelope{Type: req.Type(), Payload: b}); err != nil {
					t.Error(err)
					return
				}
			}
			if env.Type == TypeRefused {
				refusal = string(env.Payload)
				return
			}
		}
	}()
	res, err := Serve(ctx, n.hub, d.p, f.TPK, nil, ServeOptions{Clients: []string{"client"}, MaxRequests: 1, JoinTimeout: 20 * time.Second, Logger: testLogger(t)})
	wg.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(refusal, "row 1 has 63 features, the deployment takes 64") {
		t.Fatalf("refusal %q", refusal)
	}
	if len(res.Batches) != 0 {
		t.Fatalf("%d batches ran", len(res.Batches))
	}
}

// TestDPPPClientPartialAnswer: a client asking for more rows than the
// aggregator's budget allows gets the first rows the budget allows
// labelled (the plaintext path's labels) and one line saying how many;
// the aggregator stops with ErrBudget after answering them.
func TestDPPPClientPartialAnswer(t *testing.T) {
	f := getFixture(t)
	d := f.deploy(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	n := newNet(t, ctx, memoryNet, HubConfig(d.p, "client"))
	wg := startTeachers(t, ctx, n, d.teachers, nil, nil)
	const asked, allowed = 5, 3
	if d.p.QPC < asked {
		t.Skipf("QPC %d < %d: the request would be split", d.p.QPC, asked)
	}
	cconn, err := n.dial(ctx, "client")
	if err != nil {
		t.Fatal(err)
	}
	var qres *QueryResult
	var qerr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer cconn.Close()
		qres, qerr = Query(ctx, cconn, f.Rows[:asked], QueryOptions{Logger: testLogger(t)})
	}()
	res, err := Serve(ctx, n.hub, d.p, f.TPK, nil, ServeOptions{Clients: []string{"client"}, RoundTimeout: 10 * time.Second, JoinTimeout: 20 * time.Second, Logger: testLogger(t),
		Left: func() int { return allowed }})
	wg.Wait()
	if !errors.Is(err, dppp.ErrBudget) {
		t.Fatalf("serve: %v, want ErrBudget after the partial answer", err)
	}
	if qerr != nil {
		t.Fatal(qerr)
	}
	d.checkReference(t, res)
	if len(qres.Labels) != allowed || fmt.Sprint(qres.Labels) != fmt.Sprint(res.Labels) || qres.Requested != asked {
		t.Fatalf("client got %v of %d, aggregator tallied %v", qres.Labels, qres.Requested, res.Labels)
	}
	if want := "labelled 3 of 5 requested: budget allows 3 more"; qres.Partial != want {
		t.Errorf("partial line %q, want %q", qres.Partial, want)
	}
}
