package node_test

import (
	"log/slog"
	"os"

	"github.com/dplearn/dplearn/consortium/node"
	"github.com/dplearn/dplearn/internal/logx"
)

// A node's own records and, for a DPPP task, its teacher's (logged with
// the task's ID) render as the node command's progress lines.
func ExampleProgressLine() {
	l := slog.New(logx.LineFunc(node.ProgressLine, func(line string) { os.Stdout.WriteString(line + "\n") })).With("node", "site-a")
	l.Info("consortium: task refused", "task", "t5", "analyst", "bob", "rule", "max-epsilon", "reason", "ε = 0.8 per task exceeds 0.5")
	l.With("task", "t6").Info("dpppnet: teacher connected", "party", "teacher2")
	// Output:
	// task t5 from bob: REFUSED by rule max-epsilon: ε = 0.8 per task exceeds 0.5
	// task t6: teacher2 connected
}
