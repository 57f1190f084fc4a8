//go:build linux

package secagg

import (
	"syscall"
	"time"
)

// threadCPU returns the CPU time consumed by the calling OS thread (the
// benchmark locks its goroutine to one thread), which, unlike wall time,
// does not count the time other processes hold the shared cores.
func threadCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_THREAD, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}

// processCPU returns the CPU time consumed by the whole process (all
// threads), for multi-threaded benchmarks.
func processCPU() (time.Duration, bool) {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0, false
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), true
}
