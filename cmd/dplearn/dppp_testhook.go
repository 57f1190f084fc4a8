package main

import (
	"io"

	"github.com/spf13/pflag"

	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/noise"
)

// dpppTeachHooks make `dppp teach` reproducible or make it stop early, for
// the networked DPPP tests. The shipped binary has none:
// addDPPPTeachHooks is nil there and only the test binary sets it
// (dppp_testhook_test.go's init, before any command is built), adding the
// hidden flags --test-noise-seed and --test-exit-after-vote; the production
// binary neither shows nor parses them, so it cannot be made to draw
// INSECURE seeded noise (TestNoTestHooksShipped).
type dpppTeachHooks struct {
	// source is INSECURE seeded noise, or nil for crypto/rand.
	source noise.Source
	// afterSend, when non-nil, is dpppnet.TeachOptions.AfterSend.
	afterSend func(dppp.Message) error
}

// addDPPPTeachHooks adds the test flags to `dppp teach` and returns how to
// read them after parsing (warnings go to the writer); nil in the shipped
// binary.
var addDPPPTeachHooks func(*pflag.FlagSet) func(io.Writer) dpppTeachHooks
