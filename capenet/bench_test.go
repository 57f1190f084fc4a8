package capenet

import (
	"context"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/noise"
	"github.com/dplearn/dplearn/regress"
	"github.com/dplearn/dplearn/suffstat"
	"github.com/dplearn/dplearn/transport"
)

// countingConn counts the bytes a site's socket writes and reads (TLS
// records, HTTP/2 frames and all).
type countingConn struct {
	net.Conn
	up, down *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.up.Add(int64(n))
	return n, err
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.down.Add(int64(n))
	return n, err
}

// BenchmarkFit is one capeFM fit over loopback gRPC with mutual TLS 1.3
// (connect, announce, the seven rounds, outcome) for S = 5, 10, 20 sites
// and D = 20, 100 features (synthetic data, 1000 rows per site, secure
// noise), against the same fit done centrally in one process (gaussian-fm
// on the pooled statistics, the reference capeFM matches up to κ). Reported
// per fit: wall time (ns/op), and per site the bytes its socket sent
// (up-B/site) and received (down-B/site), handshakes included. Run with
// -benchtime=1x (or 3x): go test -run XXX -bench BenchmarkFit -benchtime 3x ./capenet
func BenchmarkFit(b *testing.B) {
	ca, err := certs.NewCA(certs.Options{})
	if err != nil {
		b.Fatal(err)
	}
	aggID, err := ca.IssueParty(DefaultHubName, certs.Options{})
	if err != nil {
		b.Fatal(err)
	}
	for _, d := range []int{20, 100} {
		for _, S := range []int{5, 10, 20} {
			const perSite = 1000
			rows := synthetic(S*perSite, d, uint64(7*d+S))
			k := d + 1
			parts := make([]*suffstat.Moments, S)
			names := make([]string, S)
			ids := make([]*certs.Party, S)
			for i := range S {
				parts[i] = stats(b, rows[i*perSite*k:(i+1)*perSite*k], k)
				names[i] = fmt.Sprintf("site-%d", i+1)
				if ids[i], err = ca.IssueParty(names[i], certs.Options{}); err != nil {
					b.Fatal(err)
				}
			}
			roster := make([]capefm.SiteInfo, S)
			for i, n := range names {
				roster[i] = capefm.SiteInfo{Name: n, ID: uint32(i + 1)}
			}
			template := capefm.Params{Mechanism: capefm.CapeFM, Kind: regress.Linear, Schema: testSchema, D: d,
				Epsilon: 1, Delta: 1e-5, Split: 0.5, Sites: roster, Colluders: -1, MinSites: S}
			b.Run(fmt.Sprintf("D=%d/S=%d/capefm-mtls", d, S), func(b *testing.B) {
				var up, down atomic.Int64
				for range b.N {
					b.StopTimer()
					sites := make([]*capefm.Site, S)
					for i := range S {
						signer, err := certs.NewStatementSigner(ids[i])
						if err != nil {
							b.Fatal(err)
						}
						if sites[i], err = capefm.NewSite(capefm.SiteConfig{Name: names[i], Mechanism: capefm.CapeFM, Kind: regress.Linear,
							Schema: testSchema, Epsilon: 1, Delta: 1e-5, Source: noise.NewSecure(), Ledger: &countLedger{}, Signer: signer},
							regress.Data{Stats: parts[i]}); err != nil {
							b.Fatal(err)
						}
					}
					b.StartTimer()
					benchFit(b, aggID, ids, sites, template, &up, &down)
				}
				b.ReportMetric(float64(up.Load())/float64(b.N*S), "up-B/site")
				b.ReportMetric(float64(down.Load())/float64(b.N*S), "down-B/site")
			})
			b.Run(fmt.Sprintf("D=%d/S=%d/central-gaussian-fm", d, S), func(b *testing.B) {
				pooled := stats(b, rows, k)
				est, err := regress.New("gaussian-fm")
				if err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for range b.N {
					if _, err := est.Fit(context.Background(), regress.Data{Stats: pooled},
						regress.Config{Kind: regress.Linear, Epsilon: 1, Delta: 1e-5, Lambda: -1, Source: noise.NewSecure()}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// benchFit runs one fit: hub on 127.0.0.1, every site dialling with mutual
// TLS through a byte-counting dialer.
func benchFit(b *testing.B, aggID *certs.Party, ids []*certs.Party, sites []*capefm.Site, template capefm.Params, up, down *atomic.Int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	names := make([]string, len(sites))
	for i, s := range sites {
		names[i] = s.Name()
	}
	cfg := HubConfig(names, template.D)
	cfg.Logger = quiet
	srv, err := transport.Listen(ctx, transport.ServerConfig{HubConfig: cfg, Address: "127.0.0.1:0", Identity: aggID})
	if err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	dial := func(ctx context.Context, addr string) (net.Conn, error) {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, up: up, down: down}, nil
	}
	var wg sync.WaitGroup
	errs := make([]error, len(sites))
	for i, s := range sites {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := transport.Dial(ctx, transport.ClientConfig{Address: srv.Addr().String(), Server: DefaultHubName, Identity: ids[i],
				Session: Session(), Logger: quiet, Dialer: dial})
			if err != nil {
				errs[i] = err
				return
			}
			defer conn.Close()
			_, errs[i] = Join(ctx, conn, s, JoinOptions{})
		}()
	}
	if _, err := Serve(ctx, srv, template, ServeOptions{RoundTimeout: time.Minute}); err != nil {
		b.Fatal(err)
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			b.Fatalf("site-%d: %v", i+1, err)
		}
	}
}
