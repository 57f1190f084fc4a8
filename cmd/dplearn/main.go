// Command dplearn fits differentially private regression models, answers
// privacy-accounting questions, reproduces the seed papers' experiments and
// generates threshold Paillier keys. Run `dplearn --help`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := newRootCmd()
	if err := cmd.ExecuteContext(ctx); err != nil {
		if errors.Is(err, context.Canceled) {
			// Say what the interruption left, when the command said
			// more than "context canceled" (an experiment names the
			// checkpoint that --resume continues from).
			if msg := err.Error(); msg != context.Canceled.Error() {
				fmt.Fprintln(os.Stderr, "dplearn: interrupted:", msg)
			} else {
				fmt.Fprintln(os.Stderr, "dplearn: interrupted")
			}
			os.Exit(130)
		}
		fmt.Fprintln(os.Stderr, "dplearn:", err)
		os.Exit(1)
	}
}
