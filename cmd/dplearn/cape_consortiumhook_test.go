package main

import (
	"context"

	"github.com/spf13/pflag"

	"github.com/dplearn/dplearn/capefm"
)

// This file's name sorts before cape_test.go, whose init runs the test
// binary as dplearn: the hook must be installed first (as
// cape_fault_test.go's is).

func init() {
	// --test-stall-before TYPE: the node stops before sending its first
	// capeFM message of TYPE (and says so), so that a test can kill it in
	// the middle of a task at a known point.
	addNodeFaults = func(f *pflag.FlagSet) func(func(string, ...any)) func(context.Context, string, capefm.Message) error {
		stall := f.String("test-stall-before", "", "test only: stall before sending this capeFM message type")
		_ = f.MarkHidden("test-stall-before")
		return func(logf func(string, ...any)) func(context.Context, string, capefm.Message) error {
			if *stall == "" {
				return nil
			}
			return func(ctx context.Context, task string, m capefm.Message) error {
				if m.Type() != *stall {
					return nil
				}
				logf("test: task %s: stalling before %s", task, m.Type())
				<-ctx.Done()
				return ctx.Err()
			}
		}
	}
}
