package capenet

// Network-level variants of capefm's TestAttackCapeLoneSite and
// TestAttackCapeColludersShrink (issue 22 items 5 and 6): the same attacks
// with every message going through the transport (the in-memory hub, with
// the transport's own checks).

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/transport"
)

// gdpEpsilon returns the smallest ε at which a Gaussian mechanism with
// sensitivity/σ = eta is (ε, delta)-DP: δ(ε) = Φ(η/2 − ε/η) −
// e^ε Φ(−η/2 − ε/η), by bisection (independent of package accounting).
func gdpEpsilon(eta, delta float64) float64 {
	phi := func(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }
	prof := func(e float64) float64 { return phi(eta/2-e/eta) - math.Exp(e)*phi(-eta/2-e/eta) }
	lo, hi := 0.0, 1.0
	for prof(hi) > delta {
		hi *= 2
	}
	for range 200 {
		if mid := (lo + hi) / 2; prof(mid) > delta {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

// coalitionEta returns η for a record at an honest site against the
// aggregator with the colluders, from the implemented noise: the honest
// sites' u_h = ê_h + g_h given Q_H have covariance Σ = τ²(I − 11ᵀ/S_H) +
// τ_g²I, and by Sherman–Morrison [Σ⁻¹]_hh = (1 + τ²/(S_H·τ_g²))/(τ² + τ_g²).
func coalitionEta(S, colluders int, tau, tauG, sens float64) float64 {
	h := float64(S - colluders)
	return sens * math.Sqrt((1+tau*tau/(h*tauG*tauG))/(tau*tau+tauG*tauG))
}

// TestAttackCapeLoneSiteNetwork: a fit of S = 2 and 3 sites (S_C = 0 by
// default) over the transport; every site receives the outcome, reads the
// published model and can remove its own g_s. The noise left is the other
// S − 1 sites' local noise; its true ε at the printed δ must not exceed the
// printed ε.
func TestAttackCapeLoneSiteNetwork(t *testing.T) {
	for _, S := range []int{2, 3} {
		f := newSetup(t, S, 3, 200, nil)
		res, err, errs, log := memoryFit(t, f, ServeOptions{}, nil, nil)
		if err != nil {
			t.Fatalf("%v\n%s", err, log.all())
		}
		for i, e := range errs {
			if e != nil {
				t.Fatalf("site-%d: %v", i+1, e)
			}
		}
		cal := res.Calibration
		sens := slices.Max(cal.SiteSens) + cal.Slack
		eta := sens / (math.Sqrt(float64(S-1)) * cal.TauG)
		eps := gdpEpsilon(eta, res.Privacy.Delta)
		t.Logf("S = %d, S_C = %d: printed (%g, %g); one site that removes its own g_s from the model: ε = %.4f", S, cal.Colluders, res.Privacy.Epsilon, res.Privacy.Delta, eps)
		if eps > res.Privacy.Epsilon*(1+1e-9) {
			t.Errorf("S = %d: a site reading the model sees ε = %.4f for a printed %g", S, eps, res.Privacy.Epsilon)
		}
	}
}

// offerRewriter is a misbehaving aggregator's transport: it turns every
// offer of a redo (attempt ≥ 2) into one assuming no colluders, with τ
// recalibrated for it, as an aggregator would that declared a site dropped
// to run the redo at a smaller S_C against the same colluder.
type offerRewriter struct {
	transport.Hub
	t *testing.T
}

func (h offerRewriter) SendTo(ctx context.Context, party string, env transport.Envelope) error {
	if env.Type == "offer" {
		m, err := capefm.Unmarshal(env.Payload)
		if err != nil {
			h.t.Errorf("rewriter: %v", err)
			return err
		}
		if o := m.(*capefm.Offer); o.Params.Attempt >= 2 && o.Params.Colluders > 0 {
			p := o.Params.Clone()
			p.Colluders = 0
			if err := p.Calibrate(); err != nil {
				h.t.Errorf("rewriter: %v", err)
				return err
			}
			if env.Payload, err = (&capefm.Offer{Params: p}).MarshalBinary(); err != nil {
				h.t.Errorf("rewriter: %v", err)
				return err
			}
		}
	}
	return h.Hub.SendTo(ctx, party, env)
}

// TestAttackCapeColludersShrinkNetwork: four sites over the transport
// (S_C = 1: site-1 colludes with the aggregator); site-4 leaves before the
// noise is fixed. With an honest aggregator the redo of three sites keeps
// S_C = 1 and its printed guarantee holds against the colluder; with an
// aggregator whose offers of the redo assume S_C = 0, every remaining site
// refuses (a *capefm.MismatchError naming "colluders S_C") and never
// answers such an offer.
func TestAttackCapeColludersShrinkNetwork(t *testing.T) {
	const colluders = 1
	for _, malicious := range []bool{false, true} {
		name := "honest-redo"
		var wrap func(transport.Hub) transport.Hub
		if malicious {
			name = "redo-offered-at-S_C-0"
			wrap = func(h transport.Hub) transport.Hub { return offerRewriter{Hub: h, t: t} }
		}
		t.Run(name, func(t *testing.T) {
			f := newSetup(t, 4, 3, 200, nil)
			stop := errors.New("test: site-4 exits")
			var mu sync.Mutex // the sites run concurrently
			var accepted []string
			res, err, errs, log := memoryFitWrapped(t, f, ServeOptions{}, wrap, nil, func(i int, _ transport.Conn, o *JoinOptions) {
				o.BeforeSend = func(_ context.Context, m capefm.Message, _ []byte, cur *capefm.Params) error {
					if i == 3 && m.Round() == capefm.RoundShareKeys {
						return stop
					}
					if _, ok := m.(*capefm.Hello); ok && cur != nil && cur.Colluders < colluders {
						mu.Lock()
						accepted = append(accepted, f.parties[i].name)
						mu.Unlock()
					}
					return nil
				}
			})
			if !errors.Is(errs[3], stop) {
				t.Errorf("site-4: %v", errs[3])
			}
			if len(accepted) > 0 {
				t.Errorf("sites %v accepted a redo assuming fewer than %d colluder(s)", accepted, colluders)
			}
			if malicious {
				for i := range 3 {
					var mis *capefm.MismatchError
					if !errors.As(errs[i], &mis) || mis.Field != "colluders S_C" {
						t.Errorf("site-%d: want a refusal naming colluders S_C, got %v", i+1, errs[i])
					}
				}
				var ref *capefm.RefusedError
				if !errors.As(err, &ref) {
					t.Errorf("aggregator: want the sites' refusal, got %v\n%s", err, log.all())
				}
				return
			}
			if err != nil {
				t.Fatalf("%v\n%s", err, log.all())
			}
			p, cal := res.Params, res.Calibration
			if p.Attempt != 2 || len(p.Sites) != 3 || p.Colluders != colluders {
				t.Fatalf("redo: attempt %d, %d sites, S_C = %d; want attempt 2, 3 sites, S_C = %d", p.Attempt, len(p.Sites), p.Colluders, colluders)
			}
			eta := coalitionEta(3, colluders, p.Tau, cal.TauG, slices.Max(cal.SiteSens)+cal.Slack)
			eps := gdpEpsilon(eta, res.Privacy.Delta)
			t.Logf("redo with 3 sites at S_C = %d: printed (%g, %g); the aggregator with %d colluder: ε = %.4f", p.Colluders, res.Privacy.Epsilon, res.Privacy.Delta, colluders, eps)
			if eps > res.Privacy.Epsilon*(1+1e-9) {
				t.Errorf("against the aggregator with %d colluder ε = %.4f for a printed %g", colluders, eps, res.Privacy.Epsilon)
			}
		})
	}
}
