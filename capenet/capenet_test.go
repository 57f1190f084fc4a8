package capenet

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/transport"
)

// TestMemoryFit: five sites announce themselves (the template has no N_s),
// fit, get the outcome; every round is logged; every site charged once.
func TestMemoryFit(t *testing.T) {
	f := newSetup(t, 5, 4, 400, nil)
	res, err, errs, log := memoryFit(t, f, ServeOptions{}, nil, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, log.all())
	}
	for i, e := range errs {
		if e != nil {
			t.Errorf("site-%d: %v", i+1, e)
		}
		if f.parties[i].ledger.count() != 1 {
			t.Errorf("site-%d charged %d times", i+1, f.parties[i].ledger.count())
		}
	}
	if len(res.Params.Sites) != 5 || res.Params.N() != 2000 || res.Params.NoiseRatio != capefm.DefaultNoiseRatio {
		t.Errorf("params %+v", res.Params)
	}
	for _, want := range []string{"round 0/7 Hello: 5 of 5 sites agreed", "round 3/7 MaskedInput: 5 of 5 sites sent masked inputs", "round 6/7 Release: 5 of 5 sites sent their releases"} {
		if log.find("round", want) == nil {
			t.Errorf("no log line %q in\n%s", want, log.all())
		}
	}
	if log.find("roster", "N = 2000") == nil || log.find("model", "model published") == nil || log.find("outcome", "model published") == nil {
		t.Errorf("log:\n%s", log.all())
	}
}

// TestMemoryFaults: an impostor (site-2 announcing itself as site-3), a
// schema mismatch and a dropout before the noise is fixed end in a fit of
// the remaining sites; a dropout after it in an abort naming the site.
func TestMemoryFaults(t *testing.T) {
	t.Run("impostor-and-schema", func(t *testing.T) {
		f := newSetup(t, 5, 3, 200, func(i int, c *capefm.SiteConfig) {
			switch i {
			case 1:
				c.Name = "site-3" // its connection is site-2's
			case 3:
				c.Schema = [32]byte{7}
			}
		})
		res, err, errs, log := memoryFit(t, f, ServeOptions{JoinTimeout: 2 * time.Second}, func(i int) string {
			if i == 1 {
				return "site-2"
			}
			return f.parties[i].name
		}, nil)
		if err != nil {
			t.Fatalf("%v\n%s", err, log.all())
		}
		if got := len(res.Params.Sites); got != 3 {
			t.Errorf("%d sites in the fit, want 3", got)
		}
		var oe *OutcomeError
		if !errors.As(errs[1], &oe) || !strings.Contains(oe.Text, `certificate says "site-2"`) {
			t.Errorf("impostor: %v", errs[1])
		}
		if !errors.As(errs[3], &oe) || !strings.Contains(oe.Text, "schema fingerprint") {
			t.Errorf("schema: %v", errs[3])
		}
		if f.parties[1].ledger.count()+f.parties[3].ledger.count() != 0 {
			t.Error("a refused site spent budget")
		}
	})
	for _, tc := range []struct {
		round   capefm.Round
		recover bool
	}{{capefm.RoundShareKeys, true}, {capefm.RoundRelease, false}} {
		t.Run("drop-"+tc.round.String(), func(t *testing.T) {
			f := newSetup(t, 4, 3, 200, nil)
			stop := errors.New("test: site-4 exits")
			res, err, errs, log := memoryFit(t, f, ServeOptions{}, nil, func(i int, _ transport.Conn, o *JoinOptions) {
				if i == 3 {
					o.BeforeSend = func(_ context.Context, m capefm.Message, _ []byte, _ *capefm.Params) error {
						if m.Round() == tc.round {
							return stop
						}
						return nil
					}
				}
			})
			if !errors.Is(errs[3], stop) {
				t.Errorf("site-4: %v", errs[3])
			}
			if tc.recover {
				if err != nil || len(res.Params.Sites) != 3 || res.Params.Attempt != 2 {
					t.Fatalf("want a second attempt with 3 sites: %v\n%s", err, log.all())
				}
				if log.find("round", "site-4 disconnected") == nil {
					t.Errorf("no round line naming site-4:\n%s", log.all())
				}
				return
			}
			var ab *capefm.AbortError
			if !errors.As(err, &ab) || !ab.NoiseFixed || res != nil || !strings.Contains(err.Error(), "site-4") {
				t.Fatalf("want an abort naming site-4, got %v", err)
			}
			var oe *OutcomeError
			if !errors.As(errs[0], &oe) || oe.Releases != 1 {
				t.Errorf("site-1 should be told of the abort after releasing once: %v", errs[0])
			}
		})
	}
}

// TestStaleSessionRefused: a message carrying another attempt's session
// (a replay or a straggler) is refused by the hub's gate with a reason the
// sender sees, and the fit goes on.
func TestStaleSessionRefused(t *testing.T) {
	f := newSetup(t, 3, 2, 100, nil)
	var refusal error
	_, err, errs, log := memoryFit(t, f, ServeOptions{}, nil, func(i int, conn transport.Conn, o *JoinOptions) {
		if i != 0 {
			return
		}
		o.BeforeSend = func(ctx context.Context, m capefm.Message, b []byte, _ *capefm.Params) error {
			if m.Round() == capefm.RoundAdvertiseKeys {
				bad := append([]byte(nil), b...)
				bad[5] ^= 0xff // inside the session
				refusal = conn.Send(ctx, transport.Envelope{Round: uint64(m.Round()), Type: m.Type(), Payload: bad})
			}
			return nil
		}
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.all())
	}
	for i, e := range errs {
		if e != nil {
			t.Errorf("site-%d: %v", i+1, e)
		}
	}
	if r, ok := transport.RefusalReason(refusal); !ok || r != transport.ReasonRefusedByProtocol || !strings.Contains(refusal.Error(), "not for the current attempt") {
		t.Errorf("the stale message was not refused: %v", refusal)
	}
	if log.find("refused", "not for the current attempt") == nil {
		t.Errorf("no refusal in the log:\n%s", log.all())
	}
}

// TestTLSFit runs three sites over gRPC with mutual TLS on 127.0.0.1; a
// fourth party with a certificate from another CA is refused at the TLS
// handshake and never reaches the protocol, which runs with the three.
func TestTLSFit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	f := newSetup(t, 4, 3, 300, nil)
	ca := f.ca
	rogue, err := certs.NewCA(certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	aggID, err := ca.IssueParty(DefaultHubName, certs.Options{})
	if err != nil {
		t.Fatal(err)
	}
	log := &eventLog{t: t}
	cfg := HubConfig(f.names(), f.d)
	cfg.Logger = slogOf(log.sink("transport: "))
	srv, err := transport.Listen(ctx, transport.ServerConfig{HubConfig: cfg, Address: "127.0.0.1:0", Identity: aggID})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	f.template.MinSites = 3
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i, p := range f.parties {
		id := p.id
		if i == 3 {
			if id, err = rogue.IssueParty(p.name, certs.Options{}); err != nil {
				t.Fatal(err)
			}
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := transport.Dial(ctx, transport.ClientConfig{Address: srv.Addr().String(), Server: DefaultHubName, Identity: id,
				Session: Session(), Logger: quiet, Attempts: 2, Backoff: 50 * time.Millisecond, MaxPayload: MaxPayload(f.d, 4)})
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Close()
			_, errs[i] = Join(ctx, conn, p.site, JoinOptions{Events: log.sink(p.name + ": ")})
		}()
	}
	res, err := Serve(ctx, srv, f.template, ServeOptions{RoundTimeout: 10 * time.Second, JoinTimeout: 3 * time.Second, Events: log.sink("aggregator: ")})
	wg.Wait()
	if err != nil {
		t.Fatalf("%v\n%s", err, log.all())
	}
	if len(res.Params.Sites) != 3 {
		t.Errorf("sites %v", res.Params.Sites)
	}
	if errs[3] == nil {
		t.Error("the party with a certificate from another CA connected")
	}
	if log.find("transport", "TLS handshake refused") == nil {
		t.Errorf("the refused handshake is not in the aggregator's log:\n%s", log.all())
	}
	if log.find("roster", "starting without site-4") == nil {
		t.Errorf("log:\n%s", log.all())
	}
}
