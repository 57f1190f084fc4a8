package main

import (
	"context"
	"io"

	"github.com/spf13/pflag"

	"github.com/dplearn/dplearn/capefm"
	"github.com/dplearn/dplearn/certs"
)

// capeJoinFaults makes `cape join` misbehave from its own side, for the
// fault tests. The shipped binary has none: addCapeJoinFaults is nil there
// and only the test binary sets it (cape_fault_test.go's init, before any
// command is built), adding the hidden --test-fault flag. The hooks live in
// test files so that the production binary neither shows nor parses them
// and has no flag that calls os.Exit (TestNoTestHooksShipped).
type capeJoinFaults interface {
	claimName() string    // a name to claim instead of the certificate's, or ""
	signKeysWith() string // a certificate directory to sign the keys with, or ""
	// hook returns the BeforeSend hook that injects the faults, or nil.
	hook(w io.Writer, t faultTarget) func(context.Context, capefm.Message, []byte, *capefm.Params) error
}

// addCapeJoinFaults adds the test flags to `cape join` and returns how to
// read them after parsing; nil in the shipped binary.
var addCapeJoinFaults func(*pflag.FlagSet) func() (capeJoinFaults, error)

// noFaults is the shipped binary's capeJoinFaults.
type noFaults struct{}

func (noFaults) claimName() string    { return "" }
func (noFaults) signKeysWith() string { return "" }
func (noFaults) hook(io.Writer, faultTarget) func(context.Context, capefm.Message, []byte, *capefm.Params) error {
	return nil
}

// faultTarget is where the hook's raw messages go.
type faultTarget struct {
	id                    *certs.Party
	insecure              bool
	name, server, address string
	d                     int
}
