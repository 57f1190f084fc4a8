package dataset

import (
	"fmt"
	"time"
)

// progress prints rows, MB/s and an ETA (when the size is known) to
// opt.Progress every half second until stop is called, then a final line.
func (p *pipeline) progress(size int64) (stop func()) {
	done := make(chan struct{})
	finished := make(chan struct{})
	start := time.Now()
	line := func(final bool) {
		el := time.Since(start).Seconds()
		b := p.counts.n.Load()
		rate := 0.0
		if el > 0 {
			rate = float64(b) / el / 1e6
		}
		msg := fmt.Sprintf("\rreading %s: %d rows, %.1f MB, %.0f MB/s", p.path, p.rows.Load(), float64(b)/1e6, rate)
		if !final && size > 0 && b > 0 && b < size {
			eta := time.Duration(el * float64(size-b) / float64(b) * float64(time.Second))
			msg += fmt.Sprintf(", ETA %s", eta.Round(time.Second))
		}
		if final {
			msg += fmt.Sprintf(" in %s\n", time.Since(start).Round(time.Millisecond))
		} else {
			msg += "   "
		}
		fmt.Fprint(p.opt.Progress, msg)
	}
	go func() {
		defer close(finished)
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				line(false)
			case <-done:
				line(true)
				return
			}
		}
	}()
	return func() {
		close(done)
		<-finished
	}
}
