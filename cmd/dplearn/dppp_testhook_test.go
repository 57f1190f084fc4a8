package main

import (
	"fmt"
	"io"

	"github.com/spf13/pflag"

	"github.com/dplearn/dplearn/dppp"
	"github.com/dplearn/dplearn/noise"
)

// The test binary's `dppp teach` has the hidden test hooks (see
// dppp_testhook.go): --test-noise-seed draws INSECURE seeded noise, so a
// test can recompute every share; --test-exit-after-vote makes the teacher
// leave after voting on a batch. They are set by a package-level variable's
// initialiser, not an init function: every variable is initialised before
// any init runs, and cape_test.go's init re-executes the test binary as
// dplearn (for the child processes of the networked tests) before the init
// functions of later files would run.
var _ = setDPPPTeachHooks()

func setDPPPTeachHooks() bool {
	addDPPPTeachHooks = func(f *pflag.FlagSet) func(io.Writer) dpppTeachHooks {
		exitAfterVote := f.Uint64("test-exit-after-vote", 0, "test hook: exit after voting on this batch")
		noiseSeed := f.Uint64("test-noise-seed", 0, "test hook: INSECURE seeded noise (reproducible shares)")
		_ = f.MarkHidden("test-exit-after-vote")
		_ = f.MarkHidden("test-noise-seed")
		return func(stderr io.Writer) dpppTeachHooks {
			var h dpppTeachHooks
			if *noiseSeed != 0 {
				fmt.Fprintf(stderr, "WARNING: --test-noise-seed: INSECURE reproducible noise, tests only\n")
				h.source = noise.NewInsecureSeeded(*noiseSeed)
			}
			if batch := *exitAfterVote; batch > 0 {
				h.afterSend = func(m dppp.Message) error {
					if v, ok := m.(*dppp.Vote); ok && v.Batch == batch {
						return fmt.Errorf("test hook: exiting after the vote of batch %d", v.Batch)
					}
					return nil
				}
			}
			return h
		}
	}
	return true
}
