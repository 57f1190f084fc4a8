package coordinator_test

import (
	"log/slog"
	"os"

	"github.com/dplearn/dplearn/consortium/coordinator"
	"github.com/dplearn/dplearn/internal/logx"
)

// The coordinator command prints the coordinator's progress records as
// lines (here without the timestamp LineHandler adds); records without a
// template (the transport's, diagnostics) are not progress lines.
func ExampleProgressLine() {
	l := slog.New(logx.LineFunc(coordinator.ProgressLine, func(line string) { os.Stdout.WriteString(line + "\n") }))
	l.Info("consortium: task offered, some nodes absent", "task", "t3", "nodes", "site-a, site-b", "absent", "site-c")
	l.Info("consortium: task ended, with a reason", "task", "t3", "state", "failed", "reason", "site site-c (cohort): lost")
	l.Info("transport: party attached", "party", "site-a")
	// Output:
	// task t3 offered to site-a, site-b; absent: site-c
	// task t3 failed: site site-c (cohort): lost
}
