//go:build unix

package inference

import "syscall"

// processCPU returns the process's user + system CPU seconds, so that the
// benchmarks can report work done rather than wall time on a shared
// machine.
func processCPU() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
