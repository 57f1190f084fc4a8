package experiment

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/dplearn/dplearn/internal/syncbuf"
)

// TestProgressLines: for a log file, progress is whole lines with the jobs
// done of all (resumed ones included) and an ETA from the jobs run here;
// a run shorter than one period writes nothing; on a terminal the bar is
// redrawn in place and ends with a newline.
func TestProgressLines(t *testing.T) {
	var done atomic.Int64
	done.Store(4) // resumed
	var w syncbuf.Buffer
	stop := progressBar(&w, "x", 10, &done, 4, true, 5*time.Millisecond)
	done.Add(2)
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(w.String(), "\n") && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	stop()
	line, _, _ := strings.Cut(w.String(), "\n")
	if !strings.HasPrefix(line, "x: 6/10 jobs ") || !strings.Contains(line, " ETA ") || strings.Contains(w.String(), "\r") {
		t.Fatalf("progress line %q, want \"x: 6/10 jobs … ETA …\" and no carriage return", w.String())
	}

	var quiet syncbuf.Buffer
	progressBar(&quiet, "x", 10, &done, 0, true, time.Hour)()
	if quiet.String() != "" {
		t.Fatalf("a run shorter than a period wrote %q", quiet.String())
	}
	var bar syncbuf.Buffer
	progressBar(&bar, "x", 10, &done, 0, false, time.Hour)()
	if s := bar.String(); !strings.HasPrefix(s, "\rx ") || !strings.HasSuffix(s, "\n") || !strings.Contains(s, "6/10 jobs") {
		t.Fatalf("terminal bar %q", s)
	}
}
