package main

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestCapeJoinAggregatorKilled: the aggregator process ('cape serve') is
// killed with SIGKILL while every site ('cape join', --idle-timeout 20s as
// in issue 23, --peer-timeout 2s) is waiting on it: before the fit (the
// sites announced themselves and wait for the offer: one site short of
// --min-sites), and in the middle of the fit (at the aggregator's first
// round line). Every site must exit non-zero within the peer timeout plus
// a few seconds, saying the aggregator is gone. On 42fe189 (no
// --peer-timeout; the same run without it) sites waited in Send with no
// deadline.
func TestCapeJoinAggregatorKilled(t *testing.T) {
	const peerTimeout = 2 * time.Second
	bound := peerTimeout + 4*time.Second
	for _, tc := range []struct {
		name  string
		sites int    // sites started (of 5)
		at    string // kill when serve prints this event ("" once all announced)
	}{
		{"waiting for the offer", 4, ""},
		{"mid-fit", 5, "round"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := capeCtx(t)
			n := newCapeNet(t, "cps1988", 5)
			srv, addr := n.serve(ctx, "--min-sites", "5", "--join-timeout", "60s", "--round-timeout", "60s")
			var sites []*proc
			for i := range tc.sites {
				sites = append(sites, n.join(ctx, addr, i, "--idle-timeout", "20s", "--peer-timeout", peerTimeout.String(), "--format", "json"))
			}
			deadline := time.Now().Add(40 * time.Second)
			ready := func() bool {
				if tc.at != "" {
					return srv.event(tc.at, "") != nil
				}
				for _, s := range sites {
					if s.event("announced", "") == nil {
						return false
					}
				}
				return true
			}
			for !ready() {
				if time.Now().After(deadline) {
					t.Fatalf("the fit never reached the point of the kill; serve:\n%s", srv.stderr())
				}
				time.Sleep(5 * time.Millisecond)
			}
			killed := time.Now()
			if err := srv.cmd.Process.Kill(); err != nil { // SIGKILL
				t.Fatal(err)
			}
			exited := make([]time.Duration, len(sites)) // 0: still running after 30 s
			var wg sync.WaitGroup
			for i, s := range sites {
				wg.Add(1)
				go func() {
					defer wg.Done()
					select {
					case <-s.done:
						exited[i] = time.Since(killed)
					case <-time.After(30 * time.Second):
					}
				}()
			}
			wg.Wait()
			var worst time.Duration
			for i, s := range sites {
				took := exited[i]
				if took == 0 {
					t.Errorf("%s still running 30 s after the aggregator was killed:\n%s", n.sites[i], s.stderr())
					continue
				}
				worst = max(worst, took)
				if s.err == nil || took > bound || !strings.Contains(s.stderr(), "is gone: no answer for") {
					t.Errorf("%s: exit %v after %v (bound %v); stderr:\n%s", n.sites[i], s.err, took, bound, s.stderr())
				}
			}
			t.Logf("%d sites exited within %v of the kill; last line of site-1: %s", len(sites), worst.Round(time.Millisecond), lastLine(sites[0].stderr()))
		})
	}
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return fmt.Sprint(s)
}
