package dpppnet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/internal/logx"
	"github.com/dplearn/dplearn/transport"
)

// QueryOptions configures Query.
type QueryOptions struct {
	// Histogram asks for the noisy histograms too.
	Histogram bool
	// Timeout bounds the wait for each answer (default 10 min).
	Timeout time.Duration
	// Logger receives the client's records (nil: none): the parameters,
	// each request's labels counted, the budget; ProgressLine renders
	// them as progress lines.
	Logger *slog.Logger
	// Model, if not zero, is the input fingerprint the client expects
	// (dppp.Config.Model): Query refuses a deployment that answers about
	// another input before it sends any row.
	Model [32]byte
}

// QueryResult is what a client learns: the public parameters, and per row
// a label and, if asked, the noisy histogram (centred by the public noise
// mean).
type QueryResult struct {
	Params *dppp.Params
	Labels []int
	Hist   [][]float64
	// Budget is the aggregator's last word on its budget (spent and
	// remaining), "" if it sent none.
	Budget string
	// Requested is the number of rows asked for; Partial, when the
	// aggregator's budget allowed fewer than Requested (len(Labels) of
	// them, the first ones in order), says so in one line (dppp.PartialText:
	// "labelled 37 of 50 requested: budget allows 37 more"), "" otherwise.
	Requested int
	Partial   string
}

// RefusedError is the aggregator's refusal of a request.
type RefusedError struct{ Text string }

func (e *RefusedError) Error() string {
	return "dpppnet: the aggregator refused the request: " + e.Text
}

// Query runs a client over a connection to the aggregator's hub (the
// client's name must be in ServeOptions.Clients): it waits for the offered
// parameters, checks the rows' width, and sends the rows in requests of at
// most QPC rows (one batch each), each sent again while the aggregator is
// busy with another batch (refused as of another round), and collects the
// answers.
func Query(ctx context.Context, conn transport.Conn, rows [][]float64, opt QueryOptions) (*QueryResult, error) {
	if opt.Timeout <= 0 {
		opt.Timeout = 10 * time.Minute
	}
	log := logx.OrDiscard(opt.Logger)
	recv := func() (transport.Envelope, error) {
		rctx, cancel := context.WithTimeout(ctx, opt.Timeout)
		defer cancel()
		for {
			env, err := conn.Recv(rctx)
			var gap *transport.GapError
			if errors.As(err, &gap) {
				log.Warn(msgGap, "err", gap.Error())
				continue
			}
			return env, err
		}
	}
	res := &QueryResult{}
	for res.Params == nil {
		env, err := recv()
		if err != nil {
			return nil, fmt.Errorf("dpppnet: waiting for the aggregator's parameters: %w", err)
		}
		m, err := dppp.Unmarshal(env.Payload)
		if err != nil {
			continue
		}
		if o, ok := m.(*dppp.Offer); ok {
			res.Params = o.Params.Clone()
		}
	}
	p := res.Params
	cc, aa := p.Trust()
	log.Info(msgParams, "params", fmt.Sprintf("%x", p.Hash()), "teachers", p.N(), "threshold", p.Threshold, "colluders", cc, "absent", aa, "honest", p.Honest, "noise", p.Noise.String(), "epsilon", p.Epsilon, "delta", p.Delta, "qpc", p.QPC)
	if opt.Model != ([32]byte{}) && opt.Model != p.Model {
		return res, fmt.Errorf("dpppnet: the aggregator serves another input (fingerprint %x…, this client's %x…): another spec, image size or class list", p.Model[:6], opt.Model[:6])
	}
	if err := CheckRows(rows, p.Features); err != nil {
		return res, err
	}
	res.Requested = len(rows)
	partial := func() {
		res.Partial = dppp.PartialText(len(res.Labels), len(rows))
		log.Info(msgPartial, "text", res.Partial)
	}
	id := uint64(0)
	for start := 0; start < len(rows) && res.Partial == ""; start += p.QPC {
		end := min(start+p.QPC, len(rows))
		id++
		req := &dppp.Request{Session: p.Session, ID: id, Rows: rows[start:end], Histogram: opt.Histogram}
		b, err := req.MarshalBinary()
		if err != nil {
			return res, err
		}
		for {
			err := conn.Send(ctx, transport.Envelope{Round: 0, Type: req.Type(), Payload: b})
			if r, ok := transport.RefusalReason(err); ok && r == transport.ReasonWrongRound {
				select {
				case <-time.After(100 * time.Millisecond):
					continue
				case <-ctx.Done():
					return res, ctx.Err()
				}
			}
			if err != nil {
				return res, fmt.Errorf("dpppnet: sending request %d: %w", id, err)
			}
			break
		}
		for {
			env, err := recv()
			if err != nil {
				return res, fmt.Errorf("dpppnet: waiting for the answer to request %d: %w", id, err)
			}
			if env.Type == TypeBudget {
				res.Budget = quote(string(env.Payload))
				continue
			}
			if env.Type == TypeRefused || env.Type == TypeDone {
				text := quote(string(env.Payload))
				if len(res.Labels) > 0 && strings.Contains(text, dppp.ErrBudget.Error()) {
					// The budget ran out exactly at a request boundary.
					partial()
					break
				}
				return res, &RefusedError{Text: text}
			}
			m, err := dppp.Unmarshal(env.Payload)
			if err != nil {
				continue
			}
			a, ok := m.(*dppp.Answer)
			if !ok || a.ID != id || a.Session != p.Session {
				continue
			}
			if len(a.Labels) == 0 || len(a.Labels) > end-start || (opt.Histogram && len(a.Hist) != len(a.Labels)) {
				return res, fmt.Errorf("dpppnet: answer %d has %d labels and %d histograms for %d rows", id, len(a.Labels), len(a.Hist), end-start)
			}
			for _, l := range a.Labels {
				res.Labels = append(res.Labels, int(l))
			}
			res.Hist = append(res.Hist, a.Hist...)
			log.Info(msgLabels, "request", id, "labels", len(a.Labels))
			if len(a.Labels) < end-start { // the budget allowed the first ones only
				partial()
			}
			break
		}
	}
	// The aggregator's budget line follows its last answer.
	bctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	for res.Budget == "" {
		env, err := conn.Recv(bctx)
		if err != nil {
			break
		}
		if env.Type == TypeBudget {
			res.Budget = quote(string(env.Payload))
		}
	}
	if res.Budget != "" {
		log.Info(msgBudget, "text", res.Budget)
	}
	return res, nil
}
