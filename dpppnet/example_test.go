package dpppnet_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/dplearn/dplearn/certs"
	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/dpppnet"
	"github.com/dplearn/dplearn/internal/pailliertest"
	"github.com/dplearn/dplearn/transport"
)

// Three teachers label two queries over the in-memory transport (the same
// code runs over gRPC with transport.Listen and transport.Dial). Each
// teacher proves knowledge of its vote and signs the contributor set with
// its certificate; any 2 of the 3 key shares decrypt the noisy vote
// histograms.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// Test keys on published primes: never outside tests.
	tpk, shares, err := pailliertest.ThresholdKey(2048, 3, 2)
	if err != nil {
		panic(err)
	}
	names := []string{"alice", "bob", "carol"}
	cfg := dppp.Config{Teachers: names, Classes: 2, Features: 1, Noise: dppp.Binomial,
		Epsilon: 1, Delta: 1e-5, BudgetEpsilon: 10, BudgetDelta: 1e-3}
	p0, err := dppp.Calibrate(cfg, tpk)
	if err != nil {
		panic(err)
	}
	p, err := p0.NewSession()
	if err != nil {
		panic(err)
	}
	hc := dpppnet.HubConfig(p)
	hc.Name = dpppnet.DefaultHubName
	hc.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	hub, err := transport.NewMemory(hc)
	if err != nil {
		panic(err)
	}
	defer hub.Close()
	ca, err := certs.NewCA(certs.Options{})
	if err != nil {
		panic(err)
	}
	var wg sync.WaitGroup
	for i, name := range names {
		id, err := ca.IssueParty(name, certs.Options{})
		if err != nil {
			panic(err)
		}
		signer, err := certs.NewStatementSigner(id) // signs contributor sets
		if err != nil {
			panic(err)
		}
		t, err := dppp.NewTeacher(dppp.TeacherConfig{Name: name, Config: cfg, Key: shares[i], Signer: signer,
			Predict: func(_ context.Context, rows [][]float64) ([]int, error) {
				labels := make([]int, len(rows))
				for j, r := range rows {
					if r[0] > 0 {
						labels[j] = 1
					}
				}
				return labels, nil
			}})
		if err != nil {
			panic(err)
		}
		conn, err := hub.Dial(ctx, name)
		if err != nil {
			panic(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer conn.Close()
			if _, err := dpppnet.Teach(ctx, conn, t, dpppnet.TeachOptions{}); err != nil {
				panic(err)
			}
		}()
	}
	res, err := dpppnet.Serve(ctx, hub, p, tpk, [][]float64{{-1}, {1}}, dpppnet.ServeOptions{})
	wg.Wait()
	if err != nil {
		panic(err)
	}
	fmt.Printf("%d labels from %d teachers, decrypted by %d of them\n", len(res.Labels), len(res.Batches[0].Contributors), len(res.Batches[0].Decryptors))
	fmt.Println(res.Status)
	// Output:
	// 2 labels from 3 teachers, decrypted by 2 of them
	// aggregator: spent (0.9529, 0.001)-DP after 2 queries [exact privacy-loss distribution of the noisy histogram, composed (pessimistic, grid 1e-3)] of the budget (10, 0.001); 85 of 87 queries remain
}
