package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// childProcs are parties of a simulation run as child processes of this
// binary (every party on loopback, as separate processes): started with
// the arguments argsFor(i), their stdout and stderr forwarded line by line
// to one writer, each line prefixed with the party's name.
type childProcs struct {
	names []string
	cmds  []*exec.Cmd
	wg    sync.WaitGroup // the forwarding goroutines
}

// startChildren starts one child per name. The children are killed when
// ctx is done. On error, the children already started are killed.
func startChildren(ctx context.Context, w io.Writer, names []string, argsFor func(i int) []string) (*childProcs, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	c := &childProcs{names: names}
	var mu sync.Mutex // serialises the forwarded lines
	for i, name := range names {
		cmd := exec.CommandContext(ctx, exe, argsFor(i)...)
		cmd.WaitDelay = 5 * time.Second
		out, err := cmd.StderrPipe()
		if err != nil {
			c.kill()
			return nil, err
		}
		cmd.Stdout = cmd.Stderr
		if err := cmd.Start(); err != nil {
			c.kill()
			return nil, fmt.Errorf("starting %s: %w", name, err)
		}
		c.cmds = append(c.cmds, cmd)
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			sc := bufio.NewScanner(out)
			sc.Buffer(make([]byte, 64<<10), 1<<20)
			for sc.Scan() {
				mu.Lock()
				fmt.Fprintf(w, "%s: %s\n", name, sc.Text())
				mu.Unlock()
			}
		}()
	}
	return c, nil
}

func (c *childProcs) kill() {
	for _, cmd := range c.cmds {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	}
}

// wait gives the children up to grace to finish (their output to end),
// then calls stop (which should cancel their context), and returns the
// error of each child that failed, naming it.
func (c *childProcs) wait(grace time.Duration, stop func()) []error {
	done := make(chan struct{})
	go func() { c.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(grace):
		stop()
		<-done
	}
	var failed []error
	for i, cmd := range c.cmds {
		if err := cmd.Wait(); err != nil {
			failed = append(failed, fmt.Errorf("%s: %w", c.names[i], err))
		}
	}
	return failed
}

// lockedWriter serialises writes to w: the parties of a simulation log to
// one stderr from several goroutines.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
